-- ARGV: P, expiry, then key, token pairs. Returns the keys whose lease was lost.
local lost = {}
for i = 3, #ARGV, 2 do
  if redis.call('HGET', P .. 'owner', ARGV[i]) == ARGV[i + 1] then
    redis.call('ZADD', P .. 'leases', 'XX', ARGV[2], ARGV[i])
  else
    lost[#lost + 1] = ARGV[i]
  end
end
return lost
