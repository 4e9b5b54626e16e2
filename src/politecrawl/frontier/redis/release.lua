-- ARGV: P, key, token, host json, next_allowed, last_start, ip_next, stream cap, '1' if the
-- site waits for nothing but its ordinary turn (politeness.only_its_turn) else '0' ('' when
-- the crawl keeps no budget policy: `clean` and `soon` are left alone), then pairs
-- (url, outcome) of the key's URLs finished this turn (finished first, whoever holds the
-- lease: they were fetched). Returns {1, the time the key of the same IP called from its
-- line was scheduled at (false if none was called)}, or {0, false} if the lease was lost (then
-- nothing is scheduled twice).
local key, na, ls = ARGV[2], tonumber(ARGV[5]), tonumber(ARGV[6])
for i = 10, #ARGV, 2 do finish_url(ARGV[i], ARGV[i + 1], ARGV[8]) end
local owner = redis.call('HGET', P .. 'owner', key)
if owner == ARGV[3] then
  save_host(key, ARGV[4])
  redis.call('ZREM', P .. 'leases', key)
  redis.call('HDEL', P .. 'owner', key)
  local called = free_ip(key, tonumber(ARGV[7]))
  requeue_flight(key)
  local e = earliest(key)
  if e then schedule(key, math.max(na, e)) end
  if ARGV[9] == '1' then
    redis.call('SADD', P .. 'clean', key)
    soon_rank(key)
  elseif ARGV[9] == '0' then
    soon_leave(key)
  end
  return {1, called and fmt(called) or false}
end
local ip = redis.call('HGET', P .. 'ipof', key)
if ip then ip_after(ip, tonumber(ARGV[7])) end  -- a late request still spaces its IP
if not owner then
  local _, stored_ls = host_times(key)
  if ls >= stored_ls then save_host(key, ARGV[4]) end
  if redis.call('ZSCORE', P .. 'ready', key) then
    unready(key)
    redis.call('ZADD', P .. 'box', ARGV[5], key)
  end
  local cur = redis.call('ZSCORE', P .. 'box', key)
  if cur and tonumber(cur) < na then redis.call('ZADD', P .. 'box', ARGV[5], key) end
end
return {0, false}
