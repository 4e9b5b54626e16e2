-- ARGV: P, now, then (key, when, IP's when) triples: leases a lease script found expired,
-- reclaimed if still expired at `now` (another worker may have done it first), each key and
-- its IP waiting until the times given (politeness.reclaim_times). Returns how many URLs in
-- flight went back to their queues, to be fetched again.
local now, n = tonumber(ARGV[2]), 0
for i = 3, #ARGV, 3 do
  local expiry = redis.call('ZSCORE', P .. 'leases', ARGV[i])
  if expiry and tonumber(expiry) <= now then
    n = n + reclaim(ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]))
  end
end
return n
