-- ARGV: P, key, lease token, the key's address now ('' to keep its IP), '1' if that address's
-- turn-taking lives in another shard (the key is gated there as a guest: moves.py), now,
-- mode, and for 'back' when the key is due again. For a key this worker holds: its IP
-- becomes the address given (the old one, if the key held it, is freed, its next time
-- unchanged: it was not asked), then
--   'lease': the key was just leased; gated on its IP as lease.lua's take gates (returns 1
--            if it holds the IP now, or the IP is away), else given back (0): its popped URL
--            queued again in its place (not a re-fetch: never asked), the key waiting in the
--            IP's line or for its time;
--   'used':  a request went to the address already: the key holds it unless another key
--            does (then both were in flight: found only once connected), until its release;
--   'back':  given back without a request, due again at `when` (0).
-- Returns -1 if the lease was lost (nothing done).
local key, ip, away, now, mode = ARGV[2], ARGV[4], ARGV[5] == '1', tonumber(ARGV[6]), ARGV[7]
if redis.call('HGET', P .. 'owner', key) ~= ARGV[3] then return -1 end
if ip == '' then
  ip = redis.call('HGET', P .. 'ipof', key)
else
  local old = redis.call('HGET', P .. 'ipof', key)
  if old and old ~= ip and redis.call('HGET', P .. 'iphold', old) == key then
    redis.call('HDEL', P .. 'iphold', old)
    call_next(old)
  end
  if old and old ~= ip then orphan(key) end  -- (a next turn there it had is passed on)
  redis.call('HSET', P .. 'ipof', key, ip)
  if away then redis.call('SADD', P .. 'away', key) else redis.call('SREM', P .. 'away', key) end
end
away = redis.call('SISMEMBER', P .. 'away', key) == 1
if mode == 'used' then
  if ip and not away and redis.call('HEXISTS', P .. 'iphold', ip) == 0 then
    hold_ip(ip, key)
  end
  return 1
end
if mode == 'lease' then
  if not ip or away or redis.call('HGET', P .. 'iphold', ip) == key then return 1 end
  if ip_verdict(ip, now, key) == 'take' then
    hold_ip(ip, key)
    return 1
  end
end
if ip and redis.call('HGET', P .. 'iphold', ip) == key then  -- (held by the take: given back)
  redis.call('HDEL', P .. 'iphold', ip)
  call_next(ip)
end
requeue_flight(key, false)
soon_follow(key)
redis.call('ZREM', P .. 'leases', key)
redis.call('HDEL', P .. 'owner', key)
if mode == 'lease' then
  ip_admits(key, now)  -- in the IP's line, or in the box at the IP's time
else
  local e = earliest(key)
  if e then schedule(key, math.max(tonumber(ARGV[8]), e)) else orphan(key) end
end
return 0
