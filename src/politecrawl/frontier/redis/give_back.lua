-- ARGV: P, then (key, token, when, IP's when) quads: give back leases still held (close), each
-- key and its IP waiting until the times given (politeness.reclaim_times).
local n = 0
for i = 2, #ARGV, 4 do
  if redis.call('HGET', P .. 'owner', ARGV[i]) == ARGV[i + 1] then
    n = n + reclaim(ARGV[i], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]))
  end
end
return n
