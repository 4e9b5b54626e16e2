-- ARGV: P, now, expiry, token, max wait, mode ('peek' | 'take'), the floor for a take (the
-- budget policy, ``--defer-ratio``: a ready key whose score is above it, and not above 0, is
-- not worth a request now unless it is overdue; '' for none), and '1' if the crawl keeps the
-- policy (the view then reports `soon`'s best; a crawl without it skips that work).
-- Expired leases first: if there are any, they are returned as {-1, {key, its HostState JSON
-- or false, ...}} (up to 100) and nothing else is done; the worker computes when each may be
-- asked again and reclaims them (reclaim.lua), then asks again. Otherwise both modes move due
-- keys from the box to the ready set; peek returns the shard's view {0, best key, its score,
-- oldest due-since, first box time, first lease expiry, best score in `soon`} (false where
-- absent) without leasing; take returns {key or false, 0, the key's HostState JSON or false,
-- the view after the lease, the key's first URL popped (as pop.lua gives it: one round trip
-- less), and the key's IP (absent if none)}.
local now = tonumber(ARGV[2])
local floor = tonumber(ARGV[7] or '')
local policy = ARGV[8] == '1'
local reclaimed = 0
local expired = redis.call('ZRANGEBYSCORE', P .. 'leases', '-inf', ARGV[2], 'LIMIT', 0, 100)
if #expired > 0 then
  local found = {}
  for _, key in ipairs(expired) do
    found[#found + 1] = key
    found[#found + 1] = redis.call('HGET', P .. 'hosts', key) or false
  end
  return {-1, found}
end
local due = redis.call('ZRANGEBYSCORE', P .. 'box', '-inf', ARGV[2], 'LIMIT', 0, 1000)
for _, key in ipairs(due) do
  redis.call('ZREM', P .. 'box', key)
  promote_delayed(key, ARGV[2])
  local top = redis.call('ZRANGE', P .. 'q:' .. key, 0, 0, 'WITHSCORES')
  if #top > 0 then
    if not queued_if_busy(key, now) then  -- (else in its IP's line, behind keys due before)
      redis.call('ZADD', P .. 'ready', top[2], key)
      redis.call('ZADD', P .. 'due', ARGV[2], key)  -- found due now (queued late: waited less)
    end
  else
    local e = earliest(key)
    if e then schedule(key, math.max(host_times(key), e)) end
    orphan(key)
  end
end
local function view()
  local top = redis.call('ZRANGE', P .. 'ready', 0, 0, 'WITHSCORES')
  local oldest = redis.call('ZRANGE', P .. 'due', 0, 0, 'WITHSCORES')
  local box = redis.call('ZRANGE', P .. 'box', 0, 0, 'WITHSCORES')
  local leases = redis.call('ZRANGE', P .. 'leases', 0, 0, 'WITHSCORES')
  return {reclaimed, top[1] or false, top[2] or false, oldest[2] or false, box[2] or false,
    leases[2] or false, policy and soon_top()}
end
if ARGV[6] == 'peek' then return view() end
while true do
  local key
  local oldest = redis.call('ZRANGE', P .. 'due', 0, 0, 'WITHSCORES')
  if #oldest > 0 and tonumber(oldest[2]) <= now - tonumber(ARGV[5]) then
    key = oldest[1]
  else
    local top = redis.call('ZRANGE', P .. 'ready', 0, 0, 'WITHSCORES')
    if #top == 0 then return {false, reclaimed, false, view()} end
    local score = tonumber(top[2])
    if floor and score > floor and score <= 0 then return {false, reclaimed, false, view()} end
    key = top[1]
  end
  local since = tonumber(redis.call('ZSCORE', P .. 'due', key) or ARGV[2])
  unready(key)
  if redis.call('ZCARD', P .. 'q:' .. key) > 0 then
    if ip_admits(key, now, since) then
      redis.call('ZADD', P .. 'leases', ARGV[3], key)
      redis.call('HSET', P .. 'owner', key, ARGV[4])
      local host = redis.call('HGET', P .. 'hosts', key)
      local ip = redis.call('HGET', P .. 'ipof', key)
      return {key, reclaimed, host, view(), pop_best(key, ARGV[2]), ip}
    end
  else
    local e = earliest(key)
    if e then schedule(key, math.max(host_times(key), e)) end
    orphan(key)
  end
end
