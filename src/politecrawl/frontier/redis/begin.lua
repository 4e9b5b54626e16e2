-- ARGV: P, key, token, host json, expiry. 1 if the lease holds (state saved, lease renewed).
if redis.call('HGET', P .. 'owner', ARGV[2]) ~= ARGV[3] then return 0 end
save_host(ARGV[2], ARGV[4])
redis.call('ZADD', P .. 'leases', 'XX', ARGV[5], ARGV[2])
return 1
