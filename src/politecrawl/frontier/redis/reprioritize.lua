-- ARGV: P, then per URL: url, -priority, priority. Returns how many queued URLs changed.
-- The JSON's last field is "p" (``_entry_json``), rewritten in place: no re-encoding of floats.
local n, touched = 0, {}
for i = 2, #ARGV, 3 do
  local url, qs, p = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local m = redis.call('HGET', P .. 'meta', url)
  if m then
    local key = meta_json(m).k
    local mem = string.sub(m, 1, 16) .. url
    local inq = redis.call('ZSCORE', P .. 'q:' .. key, mem)
    if inq or redis.call('ZSCORE', P .. 'd:' .. key, mem) then
      local js = string.gsub(string.sub(m, 17), '"p":[^,}]*}$', '"p":' .. p .. '}')
      redis.call('HSET', P .. 'meta', url, string.sub(m, 1, 16) .. js)
      redis.call('ZADD', P .. 'worst', p, url)
      if inq then redis.call('ZADD', P .. 'q:' .. key, qs, mem) end
      touched[key] = true
      n = n + 1
    end
  end
end
for key in pairs(touched) do  -- a waiting key's rank is its best URL's
  soon_follow(key)
  if redis.call('ZSCORE', P .. 'ready', key) then
    local top = redis.call('ZRANGE', P .. 'q:' .. key, 0, 0, 'WITHSCORES')
    if #top > 0 then redis.call('ZADD', P .. 'ready', top[2], key) end
  end
end
return n
