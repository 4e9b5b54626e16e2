-- ARGV: P, key, outcome, stream cap. Returns how many queued URLs were finished.
local key, n = ARGV[2], 0
for _, z in ipairs({'q:', 'd:'}) do
  for _, m in ipairs(redis.call('ZRANGE', P .. z .. key, 0, -1)) do
    local url = string.sub(m, 17)
    redis.call('HDEL', P .. 'meta', url)
    redis.call('ZREM', P .. 'worst', url)
    redis.call('SREM', P .. 'rf', url)
    redis.call('XADD', P .. 'outcomes', 'MAXLEN', '~', ARGV[4], '*', 'url', url,
      'outcome', ARGV[3])
    n = n + 1
  end
  redis.call('DEL', P .. z .. key)
end
if n > 0 then
  redis.call('HINCRBY', P .. 'stat', 'queued', -n)
  redis.call('HINCRBY', P .. 'outcome_counts', ARGV[3], n)
end
redis.call('ZREM', P .. 'box', key)
soon_leave(key)
unready(key)
if not redis.call('ZSCORE', P .. 'leases', key) then orphan(key) end
return n
