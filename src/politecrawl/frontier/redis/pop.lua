-- ARGV: P, key, token, now, expiry. Returns -1 (lease lost), nil (nothing due) or
-- {url, meta, refetch}.
local key = ARGV[2]
if redis.call('HGET', P .. 'owner', key) ~= ARGV[3] then return -1 end
redis.call('ZADD', P .. 'leases', 'XX', ARGV[5], key)
return pop_best(key, ARGV[4])
