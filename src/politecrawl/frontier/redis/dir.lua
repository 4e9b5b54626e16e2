-- ARGV: P (a directory shard), then key, proposed shard pairs. The first shard recorded for
-- a key wins, forever: returns each key's shard.
local out = {}
for i = 2, #ARGV, 2 do
  redis.call('HSETNX', P .. 'dir', ARGV[i], ARGV[i + 1])
  out[#out + 1] = redis.call('HGET', P .. 'dir', ARGV[i])
end
return out
