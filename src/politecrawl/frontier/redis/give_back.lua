-- ARGV: P, now, floor, then key, token pairs: give back leases still held (close).
local now, floor, n = tonumber(ARGV[2]), tonumber(ARGV[3]), 0
for i = 4, #ARGV, 2 do
  if redis.call('HGET', P .. 'owner', ARGV[i]) == ARGV[i + 1] then
    n = n + reclaim(ARGV[i], now, floor)
  end
end
return n
