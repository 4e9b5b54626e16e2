-- Bloom only. ARGV: P, k, set ('1' test-and-set | '0' test), then k positions per URL.
-- Returns 1 per URL already (probably) seen.
local k, set = tonumber(ARGV[2]), ARGV[3] == '1'
local out, fresh = {}, 0
local n = (#ARGV - 3) / k
for e = 1, n do
  local seen = 1
  for j = 1, k do
    local pos = ARGV[3 + (e - 1) * k + j]
    local bit
    if set then bit = redis.call('SETBIT', P .. 'bloom', pos, 1)
    else bit = redis.call('GETBIT', P .. 'bloom', pos) end
    if bit == 0 then seen = 0 end
  end
  out[e] = seen
  if set and seen == 0 then fresh = fresh + 1 end
end
if fresh > 0 then redis.call('HINCRBY', P .. 'stat', 'seen_n', fresh) end
return out
