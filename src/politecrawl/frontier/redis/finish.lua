-- ARGV: P, url, outcome, stream cap.
local url = ARGV[2]
local m = redis.call('HGET', P .. 'meta', url)
if m then
  local key = meta_json(m).k
  local om = string.sub(m, 1, 16) .. url
  redis.call('SREM', P .. 'f:' .. key, url)
  local r = redis.call('ZREM', P .. 'q:' .. key, om) + redis.call('ZREM', P .. 'd:' .. key, om)
  if r > 0 then redis.call('HINCRBY', P .. 'stat', 'queued', -1) end
  redis.call('HDEL', P .. 'meta', url)
  redis.call('ZREM', P .. 'worst', url)
end
redis.call('SREM', P .. 'rf', url)
redis.call('XADD', P .. 'outcomes', 'MAXLEN', '~', ARGV[4], '*', 'url', url, 'outcome', ARGV[3])
redis.call('HINCRBY', P .. 'outcome_counts', ARGV[3], 1)
return 1
