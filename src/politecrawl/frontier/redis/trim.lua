-- ARGV: P, max queued, batch cap, stream cap. Drops the lowest-priority queued URLs beyond
-- the cap (at most batch cap per call). Returns how many.
local queued = tonumber(redis.call('HGET', P .. 'stat', 'queued') or '0')
local excess = math.min(queued - tonumber(ARGV[2]), tonumber(ARGV[3]))
if excess <= 0 then return 0 end
local n = 0
for _, url in ipairs(redis.call('ZRANGE', P .. 'worst', 0, excess - 1)) do
  redis.call('ZREM', P .. 'worst', url)
  local m = redis.call('HGET', P .. 'meta', url)
  if m then
    local key = meta_json(m).k
    local mem = string.sub(m, 1, 16) .. url
    local r = redis.call('ZREM', P .. 'q:' .. key, mem) + redis.call('ZREM', P .. 'd:' .. key, mem)
    if r > 0 then
      redis.call('HDEL', P .. 'meta', url)
      redis.call('SREM', P .. 'rf', url)
      redis.call('XADD', P .. 'outcomes', 'MAXLEN', '~', ARGV[4], '*', 'url', url,
        'outcome', 'dropped:queue_full')
      n = n + 1
    end
  end
end
if n > 0 then
  redis.call('HINCRBY', P .. 'stat', 'queued', -n)
  redis.call('HINCRBY', P .. 'outcome_counts', 'dropped:queue_full', n)
end
return n
