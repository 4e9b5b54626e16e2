-- ARGV: P, key, url, json, -priority, not_before, front ('1'|'0').
local key, url = ARGV[2], ARGV[3]
local old = redis.call('HGET', P .. 'meta', url)
if old then  -- a reclaim may have queued it again: keep one copy
  local om = string.sub(old, 1, 16) .. url
  local r = redis.call('ZREM', P .. 'q:' .. key, om) + redis.call('ZREM', P .. 'd:' .. key, om)
  if r > 0 then redis.call('HINCRBY', P .. 'stat', 'queued', -1) end
end
redis.call('SREM', P .. 'f:' .. key, url)
enqueue(url, key, ARGV[4], ARGV[5], ARGV[6], ARGV[7] == '1')
soon_follow(key)
local e = earliest(key)
schedule(key, math.max(host_times(key), e or 0))  -- a no-op while the key is leased
return 1
