-- ARGV: P, origin, packed record, cap.
redis.call('HSET', P .. 'robots', ARGV[2], ARGV[3])
local tick = redis.call('HINCRBY', P .. 'stat', 'robots_tick', 1)
redis.call('ZADD', P .. 'robots:t', tick, ARGV[2])
local over = redis.call('ZCARD', P .. 'robots:t') - tonumber(ARGV[4])
if over > 0 then
  local old = redis.call('ZPOPMIN', P .. 'robots:t', over)
  for i = 1, #old, 2 do redis.call('HDEL', P .. 'robots', old[i]) end
end
return 1
