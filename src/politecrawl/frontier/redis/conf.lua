-- ARGV: P (the crawl's global prefix), seen mode, bloom bits, bloom hashes, shards, a new
-- epoch (marks.py). The first worker's choice wins; returns it, the crawl's epoch (a crawl
-- started before epochs gets this one) and whether every shard was marked with it.
if redis.call('HSETNX', P .. 'conf', 'seen_mode', ARGV[2]) == 1 then
  redis.call('HSET', P .. 'conf', 'bloom_m', ARGV[3], 'bloom_k', ARGV[4], 'shards', ARGV[5])
end
redis.call('HSETNX', P .. 'conf', 'epoch', ARGV[6])
return redis.call('HMGET', P .. 'conf', 'seen_mode', 'bloom_m', 'bloom_k', 'shards', 'epoch',
                  'marked')
