-- ARGV: P, key, token, now, expiry. Returns -1 (lease lost), nil (nothing due) or
-- {url, meta, refetch}.
local key = ARGV[2]
if redis.call('HGET', P .. 'owner', key) ~= ARGV[3] then return -1 end
redis.call('ZADD', P .. 'leases', 'XX', ARGV[5], key)
promote_delayed(key, ARGV[4])
local top = redis.call('ZRANGE', P .. 'q:' .. key, 0, 0)
if #top == 0 then return false end
local m = top[1]
local url = string.sub(m, 17)
redis.call('ZREM', P .. 'q:' .. key, m)
redis.call('ZREM', P .. 'worst', url)
redis.call('SADD', P .. 'f:' .. key, url)
redis.call('HINCRBY', P .. 'stat', 'queued', -1)
return {url, redis.call('HGET', P .. 'meta', url), redis.call('SISMEMBER', P .. 'rf', url)}
