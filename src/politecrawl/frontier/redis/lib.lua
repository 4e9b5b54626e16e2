-- Shared helpers, prepended to every script. ARGV[1] is the key prefix of one shard
-- (pc:{CRAWL_ID:S}:); KEYS[1], a key under the same hash tag, only routes the call.
local P = ARGV[1]
local function fmt(x) return string.format('%.17g', x) end
local function meta_json(m) return cjson.decode(string.sub(m, 17)) end
local function host_times(key)
  local h = redis.call('HGET', P .. 'hosts', key)
  if not h then return 0, 0 end
  local d = cjson.decode(h)
  return tonumber(d.next_allowed) or 0, tonumber(d.last_start) or 0
end
-- a HostState saved; parked hosts (repeated failures) indexed by until when, for stats
local function save_host(key, js)
  redis.call('HSET', P .. 'hosts', key, js)
  local until_ = tonumber(cjson.decode(js).parked_until) or 0
  if until_ > 0 then redis.call('ZADD', P .. 'parked', fmt(until_), key)
  else redis.call('ZREM', P .. 'parked', key) end
end
-- when the key next has a URL to fetch: 0 if one is queued, else its first not_before
local function earliest(key)
  if redis.call('ZCARD', P .. 'q:' .. key) > 0 then return 0 end
  local d = redis.call('ZRANGE', P .. 'd:' .. key, 0, 0, 'WITHSCORES')
  if #d == 0 then return nil end
  return tonumber(d[2])
end
-- `soon` (the budget policy's reference, ``--defer-ratio``): the keys in `clean` (their last
-- turn ended with nothing wrong, politeness.only_its_turn as the worker judged it at release:
-- they can be asked again now or soon) that have URLs queued, scored by their best URL as
-- `ready` is. `clean` changes at release, reclaim and drop; the score follows the key's queue
-- (soon_follow), and an entry gone stale is mended where it is read (soon_top).
local function soon_rank(key)
  local top = redis.call('ZRANGE', P .. 'q:' .. key, 0, 0, 'WITHSCORES')
  if #top > 0 then redis.call('ZADD', P .. 'soon', top[2], key)
  else redis.call('ZREM', P .. 'soon', key) end
end
local function soon_follow(key)
  if redis.call('SISMEMBER', P .. 'clean', key) == 1 then soon_rank(key) end
end
local function soon_leave(key)
  redis.call('SREM', P .. 'clean', key)
  redis.call('ZREM', P .. 'soon', key)
end
-- the best score in `soon` (false if none), entries whose queue moved since mended on the way
local function soon_top()
  for _ = 1, 100 do
    local t = redis.call('ZRANGE', P .. 'soon', 0, 0, 'WITHSCORES')
    if #t == 0 then return false end
    local q = redis.call('ZRANGE', P .. 'q:' .. t[1], 0, 0, 'WITHSCORES')
    if #q > 0 and tonumber(q[2]) == tonumber(t[2]) then return t[2] end
    soon_rank(t[1])
  end
  return false
end
-- out of the ready set (and its due-since index)
local function unready(key)
  redis.call('ZREM', P .. 'ready', key)
  redis.call('ZREM', P .. 'due', key)
end
-- into the penalty box at `when`, unless leased, ready, waiting for its IP, or due sooner
local function schedule(key, when)
  if redis.call('ZSCORE', P .. 'leases', key) or redis.call('ZSCORE', P .. 'ready', key) then
    return
  end
  if redis.call('SISMEMBER', P .. 'waiting', key) == 1 then return end
  local cur = redis.call('ZSCORE', P .. 'box', key)
  if cur and tonumber(cur) <= when then return end
  redis.call('ZADD', P .. 'box', fmt(when), key)
end
local function enqueue(url, key, js, qscore, nb, front)
  local seq = redis.call('HINCRBY', P .. 'stat', 'seq', 1)
  local tag
  if front then tag = string.format('%016d', 1e15 - seq)
  else tag = string.format('%016d', 1e15 + seq) end
  redis.call('HSET', P .. 'meta', url, tag .. js)
  redis.call('ZADD', P .. 'worst', fmt(-tonumber(qscore)), url)
  if tonumber(nb) > 0 then
    redis.call('ZADD', P .. 'd:' .. key, nb, tag .. url)
  else
    redis.call('ZADD', P .. 'q:' .. key, qscore, tag .. url)
  end
  redis.call('HINCRBY', P .. 'stat', 'queued', 1)
end
-- delayed URLs whose not_before has come join the priority queue
local function promote_delayed(key, now)
  local ms = redis.call('ZRANGEBYSCORE', P .. 'd:' .. key, '-inf', now)
  for _, m in ipairs(ms) do
    redis.call('ZREM', P .. 'd:' .. key, m)
    local meta = redis.call('HGET', P .. 'meta', string.sub(m, 17))
    if meta then
      redis.call('ZADD', P .. 'q:' .. key, fmt(-meta_json(meta).p), m)
    else
      redis.call('HINCRBY', P .. 'stat', 'queued', -1)
      redis.call('ZREM', P .. 'worst', string.sub(m, 17))
    end
  end
end
-- the IP is free and no key has its next turn: the first key in its line that still has
-- URLs is given the turn (`ipcall`) and scheduled at its own time (if that comes before the
-- IP's next time, ip_admits sets it back until then). Returns that time (nil if no key was
-- called): a worker's cache of the shard's next time must not wait past it
local function call_next(ip)
  if redis.call('HEXISTS', P .. 'iphold', ip) == 1 then return end
  if redis.call('HEXISTS', P .. 'ipcall', ip) == 1 then return end
  while true do
    local k = redis.call('ZPOPMIN', P .. 'ipq:' .. ip)[1]
    if not k then k = redis.call('LPOP', P .. 'ipw:' .. ip) end  -- (a line of an older version)
    if not k then return end
    redis.call('SREM', P .. 'waiting', k)
    local e = earliest(k)
    if e then
      redis.call('HSET', P .. 'ipcall', ip, k)
      local at = math.max(host_times(k), e)
      schedule(k, at)
      return at
    end
  end
end
-- a key due cannot use its IP's turn now (no URL left, or none ready yet): if it had the next
-- turn, it passes it on; if the IP is free, the line moves on
local function orphan(key)
  local ip = redis.call('HGET', P .. 'ipof', key)
  if not ip then return end
  if redis.call('HGET', P .. 'ipcall', ip) == key then redis.call('HDEL', P .. 'ipcall', ip) end
  call_next(ip)
end
-- `key` holds `ip` now (its turn, if it had the next one, is used)
local function hold_ip(ip, key)
  redis.call('HSET', P .. 'iphold', ip, key)
  if redis.call('HGET', P .. 'ipcall', ip) == key then redis.call('HDEL', P .. 'ipcall', ip) end
end
-- the IP's next time is at least `nxt` (a time politeness computed: schedule_next's ip_next,
-- reclaim_times'); a late release never sets it back
local function ip_after(ip, nxt)
  local cur = tonumber(redis.call('HGET', P .. 'ipnext', ip) or '0')
  if nxt > cur then redis.call('HSET', P .. 'ipnext', ip, fmt(nxt)) end
end
-- a leased key's turn is over: its IP (where its requests went) is asked again from `nxt` on;
-- if the key held it, it is free and the next key in line is called (call_next's time)
local function free_ip(key, nxt)
  local ip = redis.call('HGET', P .. 'ipof', key)
  if not ip then return end
  ip_after(ip, nxt)
  if redis.call('HGET', P .. 'iphold', ip) ~= key then return end
  redis.call('HDEL', P .. 'iphold', ip)
  return call_next(ip)
end
-- politeness.ip_gate's verdict on `ip` at `now` for `key`: 'take', 'queue' (another key holds
-- it or has its next turn: first come first served) or 'later' (and the IP's next time)
local function ip_verdict(ip, now, key)
  local holder = redis.call('HGET', P .. 'iphold', ip)
  local called = redis.call('HGET', P .. 'ipcall', ip)
  if (holder and holder ~= key) or (called and called ~= key) then return 'queue' end
  local nxt = tonumber(redis.call('HGET', P .. 'ipnext', ip) or '0')
  if nxt > now then return 'later', nxt end
  return 'take'
end
-- `key` waits in its IP's line, by when it was found due
local function wait_ip(ip, key, since)
  if redis.call('SADD', P .. 'waiting', key) == 1 then
    redis.call('ZADD', P .. 'ipq:' .. ip, fmt(since), key)
  end
end
-- a key found due at `now` joins its IP's line at once if another key holds the IP or has its
-- next turn (true): the line is in the order keys became due, not the order the lease tries
-- them in (by rank: a key just released and better ranked would go before keys due earlier)
local function queued_if_busy(key, now)
  local ip = redis.call('HGET', P .. 'ipof', key)
  if not ip or redis.call('SISMEMBER', P .. 'away', key) == 1 then return false end
  if ip_verdict(ip, now, key) ~= 'queue' then return false end
  wait_ip(ip, key, now)
  return true
end
-- may `key` (with URLs queued) be leased now? Else it waits in its IP's line or for its time
-- (the verdict applied atomically where the IP's holder and time are kept). A key whose IP's
-- turn-taking lives in another shard (`away`: its host moved) is gated there by the worker
-- (moves.py).
local function ip_admits(key, now, since)
  local ip = redis.call('HGET', P .. 'ipof', key)
  if not ip or redis.call('SISMEMBER', P .. 'away', key) == 1 then return true end
  local verdict, nxt = ip_verdict(ip, now, key)
  if verdict == 'queue' then
    wait_ip(ip, key, since or now)
    return false
  end
  if verdict == 'later' then  -- the IP's next turn is this key's
    redis.call('HSET', P .. 'ipcall', ip, key)
    schedule(key, nxt)
    return false
  end
  hold_ip(ip, key)
  return true
end
-- URLs popped and never finished or pushed back: queued again in their place, as re-fetches
-- (unless `asked` is false: a lease given back before its request)
local function requeue_flight(key, asked)
  local urls = redis.call('SMEMBERS', P .. 'f:' .. key)
  for _, url in ipairs(urls) do
    local m = redis.call('HGET', P .. 'meta', url)
    if m then
      local p = meta_json(m).p
      redis.call('ZADD', P .. 'q:' .. key, fmt(-p), string.sub(m, 1, 16) .. url)
      redis.call('ZADD', P .. 'worst', fmt(p), url)
      if asked ~= false then redis.call('SADD', P .. 'rf', url) end
      redis.call('HINCRBY', P .. 'stat', 'queued', 1)
    end
  end
  redis.call('DEL', P .. 'f:' .. key)
  return #urls
end
-- a lease given up or expired: the key and its IP wait until the times the worker computed
-- (politeness.reclaim_times: a full delay, since a request may have been in flight). A guest
-- hold (moves.py: '~' and a key of another shard) holds only its IP.
local function reclaim(key, when, ip_when)
  redis.call('ZREM', P .. 'leases', key)
  soon_leave(key)  -- it waits a full delay: no reference meanwhile
  redis.call('HDEL', P .. 'owner', key)
  free_ip(key, ip_when)
  if string.sub(key, 1, 1) == '~' then redis.call('HDEL', P .. 'ipof', key) end
  local n = requeue_flight(key)
  local e = earliest(key)
  if e then schedule(key, math.max(when, e)) end
  return n
end
-- a popped URL done: out of the queue and the meta, its outcome on the stream
local function finish_url(url, outcome, cap)
  local m = redis.call('HGET', P .. 'meta', url)
  if m then
    local key = meta_json(m).k
    local om = string.sub(m, 1, 16) .. url
    redis.call('SREM', P .. 'f:' .. key, url)
    local r = redis.call('ZREM', P .. 'q:' .. key, om) + redis.call('ZREM', P .. 'd:' .. key, om)
    if r > 0 then redis.call('HINCRBY', P .. 'stat', 'queued', -1) end
    redis.call('HDEL', P .. 'meta', url)
    redis.call('ZREM', P .. 'worst', url)
  end
  redis.call('SREM', P .. 'rf', url)
  redis.call('XADD', P .. 'outcomes', 'MAXLEN', '~', cap, '*', 'url', url, 'outcome', outcome)
  redis.call('HINCRBY', P .. 'outcome_counts', outcome, 1)
end
-- a leased key's best URL due by `now`, out of its queue and in flight: {url, meta, whether it
-- is a re-fetch}, or false
local function pop_best(key, now)
  promote_delayed(key, now)
  local top = redis.call('ZRANGE', P .. 'q:' .. key, 0, 0)
  if #top == 0 then return false end
  local m = top[1]
  local url = string.sub(m, 17)
  redis.call('ZREM', P .. 'q:' .. key, m)
  redis.call('ZREM', P .. 'worst', url)
  redis.call('SADD', P .. 'f:' .. key, url)
  redis.call('HINCRBY', P .. 'stat', 'queued', -1)
  soon_follow(key)
  return {url, redis.call('HGET', P .. 'meta', url), redis.call('SISMEMBER', P .. 'rf', url)}
end
