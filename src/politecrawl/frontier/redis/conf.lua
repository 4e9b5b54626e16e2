-- ARGV: P (the crawl's global prefix), seen mode, bloom bits, bloom hashes, shards.
-- The first worker's choice wins; returns it.
if redis.call('HSETNX', P .. 'conf', 'seen_mode', ARGV[2]) == 1 then
  redis.call('HSET', P .. 'conf', 'bloom_m', ARGV[3], 'bloom_k', ARGV[4], 'shards', ARGV[5])
end
return redis.call('HMGET', P .. 'conf', 'seen_mode', 'bloom_m', 'bloom_k', 'shards')
