-- ARGV: P, mode ('e'|'b'), k, n, then per entry: url, key, json, -priority, not_before, ip,
-- and one digest (exact) or k bit positions (bloom). Returns 1/0 per entry, then 1 if a key
-- not leased got a URL (what the shard has ready or in the box may have changed), else 0.
local mode, k, n = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local stride = 6 + k
local out, fresh, i, changed = {}, 0, 5, 0
for e = 1, n do
  local url, key, js, qs, nb = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  local new = false
  if mode == 'e' then
    new = redis.call('SADD', P .. 'seen', ARGV[i + 6]) == 1
  else
    for j = 1, k do
      if redis.call('SETBIT', P .. 'bloom', ARGV[i + 5 + j], 1) == 0 then new = true end
    end
    if new then fresh = fresh + 1 end
  end
  out[e] = 0
  if new and redis.call('HEXISTS', P .. 'meta', url) == 0 then
    if ARGV[i + 5] ~= '' then redis.call('HSETNX', P .. 'ipof', key, ARGV[i + 5]) end
    enqueue(url, key, js, qs, nb, false)
    local na = host_times(key)
    schedule(key, math.max(na, tonumber(nb)))
    if tonumber(nb) <= 0 then
      local r = redis.call('ZSCORE', P .. 'ready', key)
      if r and tonumber(qs) < tonumber(r) then redis.call('ZADD', P .. 'ready', qs, key) end
      soon_follow(key)
    end
    out[e] = 1
    if not redis.call('ZSCORE', P .. 'leases', key) then changed = 1 end
  end
  i = i + stride
end
if fresh > 0 then redis.call('HINCRBY', P .. 'stat', 'seen_n', fresh) end
out[n + 1] = changed
return out
