-- ARGV: P, guest ('~' and a key of another shard whose host moved to an address whose
-- turn-taking lives here: moves.py), the address, the key's lease token, now, the lease's
-- expiry, mode, and for 'free' the address's next time (HostState.ip_next). A guest holds the
-- address as a key of this shard would, through a lease of this shard (renewed with the
-- key's, reclaimed as any if its worker dies: no hold outlives its worker):
--   'lease': holds it if politeness.ip_gate's verdict is take: returns '0'; else the
--            address's next time, or '-1' if another key holds it (the guest cannot wait in
--            the line: its key is scheduled in its own shard, so it asks again);
--   'used':  a request went there already: holds it unless another key does; '0';
--   'free':  the key's turn is over: the address is asked again from its next time on,
--            freed if the guest held it (the next key in line called).
local g, ip, token, now, mode = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[7]
local mine = redis.call('HGET', P .. 'owner', g) == token
if mode == 'free' then
  if mine then
    redis.call('ZREM', P .. 'leases', g)
    redis.call('HDEL', P .. 'owner', g)
    redis.call('HDEL', P .. 'ipof', g)
  end
  ip_after(ip, tonumber(ARGV[8]))
  if mine and redis.call('HGET', P .. 'iphold', ip) == g then
    redis.call('HDEL', P .. 'iphold', ip)
    call_next(ip)
  end
  return '0'
end
local holder = redis.call('HGET', P .. 'iphold', ip)
if holder == g and mine then return '0' end
if holder then return '-1' end
if mode == 'lease' then
  local verdict, nxt = ip_verdict(ip, now, g)
  if verdict == 'queue' then return '-1' end  -- a key of this shard has the next turn
  if verdict == 'later' then return fmt(nxt) end
end
hold_ip(ip, g)
redis.call('HSET', P .. 'ipof', g, ip)
redis.call('ZADD', P .. 'leases', ARGV[6], g)
redis.call('HSET', P .. 'owner', g, token)
return '0'
