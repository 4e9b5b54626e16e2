"""The shared frontier: many workers on many machines crawl as one, politeness still global.

``RedisFrontier`` keeps every promise of ``frontier.Frontier`` (checked by the same contract
suite as ``SqliteFrontier``) in one Redis (>= 6.2) or Valkey server, so any number of worker
processes can share one crawl: a politeness key is leased to one worker at a time across all
of them, and no key is handed out before the ``next_allowed`` time its last turn gave it.
Only plain commands and Lua ``EVAL``/``EVALSHA`` are used (no Redis Functions, no modules),
so Redis and Valkey both work. Every multi-step change is one Lua script, hence atomic.

Keys (``P`` = ``pc:{CRAWL_ID}:``)
    ``P box``      zset  politeness key -> when it may be leased (the penalty box)
    ``P ready``    zset  due key -> -(priority of its best URL); ``lease`` takes the lowest
    ``P due``      zset  the same keys -> when ``lease`` found each due (``max_wait_s``)
    ``P leases``   zset  leased key -> lease expiry;  ``P owner`` hash key -> lease token
    ``P q:KEY``    zset  the key's queued URLs: score -priority, member TAG+URL
    ``P d:KEY``    zset  the key's URLs waiting for ``not_before`` (retries): score not_before
    ``P f:KEY``    set   the key's URLs in flight (popped, neither finished nor pushed back)
    ``P meta``     hash  queued/in-flight URL -> TAG + JSON (key, depth, hops, attempt,
                         not_before, priority, kind)
    ``P rf``       set   URLs to be handed out marked ``refetch`` (their lease expired)
    ``P worst``    zset  queued URL -> priority: ``trim`` drops from its low end
    ``P seen``     set   8-byte blake2b digests (exact mode), or ``P bloom`` a bitmap
    ``P hosts``    hash  key -> HostState JSON (``sqlite.host_to_json``, the same format)
    ``P parked``   zset  parked key -> parked until (so ``stats`` counts them without a scan)
    ``P ipof``     hash  key -> the IP its host resolves to (set by the first ``add`` naming it)
    ``P iphold``   hash  IP -> the one key of it leased now;  ``P ipnext`` hash IP -> when it
                         may be asked again (the largest ``HostState.ip_next`` released)
    ``P ipw:IP``   list  keys found due while the IP was held, first come first served;
    ``P waiting``  set   every key in such a line (scheduled only when its IP calls it)
    ``P robots``   hash  origin -> packed RobotsRecord;  ``P robots:t`` zset origin -> write tick
    ``P pages``    hash  digest of a stored page's URL -> [ETag, Last-Modified, fetched at]
                         (conditional GET; a digest collision only costs a full 200)
    ``P counters`` hash  shared counters (HINCRBY);  ``P stat`` hash queued / seen_n / seq
    ``P outcomes`` stream of finished URLs (MAXLEN ~ ``outcome_log_size``);
    ``P outcome_counts`` hash outcome -> count;  ``P conf`` hash seen mode and Bloom sizing

Redis Cluster: the ``{CRAWL_ID}`` hash tag puts every key of one crawl in one slot, so each
script may touch any of them (the per-key queues are computed inside the scripts, all in that
slot; ``KEYS[1]`` routes the call). The contract suite proves it on a cluster-mode server with
the scripts marked ``#!lua``, under which Redis refuses any access to a second slot (the
shipped scripts carry no such header, so Redis 6.2 still runs them). The price, accepted: one
crawl lives on one shard (other crawls spread over the others). Splitting per politeness key
(``{CRAWL_ID:KEY}``) would let a crawl span shards, but ``lease`` chooses among all keys and
must update the box, the ready set and the chosen key's queue in one step, which a script can
only do inside one slot. (The client here is a single-node one: a Cluster deployment needs
``redis.asyncio.RedisCluster`` in ``__init__``; nothing else changes.)

Queue order. Within a key: highest priority first, FIFO among equals. The score is exactly
``-priority`` (any float: random priorities included, no precision lost to packing) and the
member starts with a 16-digit TAG: ties between equal scores are ordered by member, so the tag
is the FIFO sequence: ``10**15 + seq`` for a normal push, ``10**15 - seq`` for ``push_back(...,
front=True)`` (the newest front push first, as in sqlite). URLs whose ``not_before`` is set
wait in ``d:KEY`` and move to ``q:KEY`` once due (at ``pop_url`` or ``lease``).
Between keys: ``lease(now)`` moves every key due by ``now`` from the box into ``ready``,
scored by its best URL, and takes the one holding the highest-priority URL (ties: key name),
unless the longest-waiting ready key has been due for ``max_wait_s``: then that one.

One server, many names. ``lease`` takes a key only if its IP is not held by another leased
key and its IP's next time has come: a key due while its IP is held joins the IP's line, a
key due before the IP's time goes back to the box at that time. Releasing (or reclaiming)
the key that held the IP schedules the first key of the line; O(1) per key, no scan.

Leases. ``lease`` is one script: reclaim expired leases (below), promote due keys, take the
best ready key, record it in ``leases`` with expiry ``now + lease_ttl_s`` and a token unique
to this lease. ``pop_url`` and ``release`` act only if the token still holds (a worker whose
lease expired gets ``None`` from ``pop_url`` and its ``release`` cannot schedule the key a
second time: it only pushes the key's box time later if its late request needs that, and
writes its HostState only if nobody leased the key since). Leases are renewed by every
``pop_url`` and ``begin_request`` (each request follows both; ``begin_request`` also saves the
provisional HostState, and raises ``LeaseLost`` instead of letting a request out under a lease
that expired), by ``renew``, and by a heartbeat task every
``lease_ttl_s / 3`` while the worker holds any lease (``heartbeat=False`` turns it off), so
only a dead or frozen worker's leases expire.

Expiry. Each ``lease`` call first reclaims expired leases: the key's in-flight URLs go back to
its queue in their old place, marked refetch, and the key goes back to the box at
``max(last next_allowed, now + delay)``, delay being the last saved HostState's
``next_allowed - last_start`` (or ``reclaim_delay_s`` if it has none): the dead worker may
have started a request just before dying, and ``begin_request`` saved that request's start
and provisional next time before it went out. ``close`` gives back the leases still held the
same way. ``release`` re-queues any URL popped but neither finished nor pushed back.

Seen-set. Exact: a SET of 8-byte blake2b digests rather than URLs (64 bytes per URL measured on
Redis 7, whatever the URL's length); the chance of any collision among n URLs is about n^2 /
2^65 (1e-7 at 2 million, 3e-4 at 100 million), and a collision only makes a new URL look seen
(skipped), never fetched twice. Bloom: a bitmap of m bits (at most 2^32) with k positions per
URL computed here by double hashing one blake2b digest, tested and set by a script (SETBIT
returns the old bit); the first worker's sizing is stored in ``P conf`` and later workers adopt
it. ``meta`` (queued and in-flight URLs) stays the exact check, as sqlite's primary key does.
``unseen``, ``mark_seen`` and ``add`` are one round trip per call (per page).

Memory stays bounded by the work left: a queued URL costs about 540 bytes (measured, 50-char
URLs: the URL is stored three times, as ``meta`` field, queue member and ``worst`` member;
keying them by digest is the next saving if queues grow to tens of millions), freed when the
URL is finished; finished
URLs leave only their seen-set entry, one ``outcome_counts`` increment and a stream entry that
``XADD MAXLEN ~`` trims. robots.txt copies are capped at ``robots_cache_size`` origins,
evicting the least recently written (an origin in use is written again at least every robots
TTL).

Durability is Redis's: ``flush`` has nothing to do. ``appendonly yes`` with ``appendfsync
everysec`` loses about the last second, like sqlite's commit cadence, and since every change
is one atomic script what survives is a prefix of what happened.

Clocks: ``now`` comes from each worker (``time.time()``), so machines must be NTP-synced;
a skew of s seconds can shorten a site's delay by s.

Command line (wired by the crawler/CLI, see ``factory.make_frontier``):
``crawl --frontier redis://...`` runs one worker on that shared frontier (``--out`` keeps
the worker's own logs and WARCs); ``worker --frontier URL`` the same without seeds;
``seed --frontier URL FILE`` passes seeds through a Crawler's admission gate (scope,
never-crawl list, extension filter...) into the shared queue; ``status --frontier URL``
prints ``await status(url, crawl_id)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import logging
import math
import os
import re
import secrets
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from politecrawl.config import MAX_WAIT_S
from politecrawl.errors import FrontierError, LeaseLost
from politecrawl.frontier import RobotsRecord, UrlEntry
from politecrawl.frontier.sqlite import host_from_json, host_to_json
from politecrawl.politeness import HostState
from politecrawl.seen import SeenMode

log = logging.getLogger("politecrawl.frontier.redis")

_CRAWL_ID = re.compile(r"[A-Za-z0-9._:-]{1,100}")
_MAX_BLOOM_BITS = 2**32  # a Redis string holds at most 512 MiB
_REAP_BATCH = 100  # expired leases reclaimed per lease() call
_PROMOTE_BATCH = 1000  # due keys moved from the box to the ready set per lease() call
_BATCH = 10_000  # URLs per reprioritize/trim script: one script blocks the server meanwhile

# Shared helpers, prepended to every script. ARGV[1] is the key prefix; KEYS[1] (a key under
# the same hash tag) only routes the call. Scores computed here are written with %.17g, which
# round-trips a double exactly (Lua's tostring keeps 14 digits: a lease 50 us early).
_LIB = r"""
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
-- the IP is free: the first key in its line that still has URLs is scheduled
local function call_next(ip)
  while true do
    local k = redis.call('LPOP', P .. 'ipw:' .. ip)
    if not k then return end
    redis.call('SREM', P .. 'waiting', k)
    local e = earliest(k)
    if e then
      local nxt = tonumber(redis.call('HGET', P .. 'ipnext', ip) or '0')
      schedule(k, math.max(host_times(k), e, nxt))
      return
    end
  end
end
-- a key left the schedule with no URL at all: if its IP is free, the line moves on
local function orphan(key)
  local ip = redis.call('HGET', P .. 'ipof', key)
  if ip and redis.call('HEXISTS', P .. 'iphold', ip) == 0 then call_next(ip) end
end
-- the IP's next time is at least `nxt`
local function ip_after(ip, nxt)
  local cur = tonumber(redis.call('HGET', P .. 'ipnext', ip) or '0')
  if nxt > cur then redis.call('HSET', P .. 'ipnext', ip, fmt(nxt)) end
end
-- a leased key gives its IP back: asked again from `nxt` on, the next key in line called
local function free_ip(key, nxt)
  local ip = redis.call('HGET', P .. 'ipof', key)
  if not ip or redis.call('HGET', P .. 'iphold', ip) ~= key then return end
  redis.call('HDEL', P .. 'iphold', ip)
  ip_after(ip, nxt)
  call_next(ip)
end
-- may `key` (with URLs queued) be leased now? Else it waits in its IP's line or for its time
local function ip_admits(key, now)
  local ip = redis.call('HGET', P .. 'ipof', key)
  if not ip then return true end
  if redis.call('HEXISTS', P .. 'iphold', ip) == 1 then
    redis.call('RPUSH', P .. 'ipw:' .. ip, key)
    redis.call('SADD', P .. 'waiting', key)
    return false
  end
  local nxt = tonumber(redis.call('HGET', P .. 'ipnext', ip) or '0')
  if nxt > now then
    schedule(key, nxt)
    return false
  end
  redis.call('HSET', P .. 'iphold', ip, key)
  return true
end
-- URLs popped and never finished or pushed back: queued again in their place, as re-fetches
local function requeue_flight(key)
  local urls = redis.call('SMEMBERS', P .. 'f:' .. key)
  for _, url in ipairs(urls) do
    local m = redis.call('HGET', P .. 'meta', url)
    if m then
      local p = meta_json(m).p
      redis.call('ZADD', P .. 'q:' .. key, fmt(-p), string.sub(m, 1, 16) .. url)
      redis.call('ZADD', P .. 'worst', fmt(p), url)
      redis.call('SADD', P .. 'rf', url)
      redis.call('HINCRBY', P .. 'stat', 'queued', 1)
    end
  end
  redis.call('DEL', P .. 'f:' .. key)
  return #urls
end
-- a lease given up or expired: the key waits its politeness delay from `now`
local function reclaim(key, now, floor)
  redis.call('ZREM', P .. 'leases', key)
  redis.call('HDEL', P .. 'owner', key)
  free_ip(key, now + floor)  -- the dead worker may have had a request in flight
  local n = requeue_flight(key)
  local e = earliest(key)
  if e then
    local na, ls = host_times(key)
    local delay = floor
    if ls > 0 and na - ls > delay then delay = na - ls end
    schedule(key, math.max(na, now + delay, e))
  end
  return n
end
"""

# ARGV: P, mode ('e'|'b'), k, n, then per entry: url, key, json, -priority, not_before, ip,
# and one digest (exact) or k bit positions (bloom). Returns 1/0 per entry.
_ADD = r"""
local mode, k, n = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local stride = 6 + k
local out, fresh, i = {}, 0, 5
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
    end
    out[e] = 1
  end
  i = i + stride
end
if fresh > 0 then redis.call('HINCRBY', P .. 'stat', 'seen_n', fresh) end
return out
"""

# Bloom only. ARGV: P, k, set ('1' test-and-set | '0' test), then k positions per URL.
# Returns 1 per URL already (probably) seen.
_BLOOM = r"""
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
"""

# ARGV: P, now, expiry, token, reclaim floor, max wait. Returns {key or nil, URLs reclaimed}.
_LEASE = r"""
local now, floor = tonumber(ARGV[2]), tonumber(ARGV[5])
local reclaimed = 0
local expired = redis.call('ZRANGEBYSCORE', P .. 'leases', '-inf', ARGV[2], 'LIMIT', 0, REAP)
for _, key in ipairs(expired) do reclaimed = reclaimed + reclaim(key, now, floor) end
local due = redis.call('ZRANGEBYSCORE', P .. 'box', '-inf', ARGV[2], 'LIMIT', 0, PROMOTE)
for _, key in ipairs(due) do
  redis.call('ZREM', P .. 'box', key)
  promote_delayed(key, ARGV[2])
  local top = redis.call('ZRANGE', P .. 'q:' .. key, 0, 0, 'WITHSCORES')
  if #top > 0 then
    redis.call('ZADD', P .. 'ready', top[2], key)
    redis.call('ZADD', P .. 'due', ARGV[2], key)  -- found due now (queued late: waited less)
  else
    local e = earliest(key)
    if e then schedule(key, math.max(host_times(key), e)) else orphan(key) end
  end
end
while true do
  local key
  local oldest = redis.call('ZRANGE', P .. 'due', 0, 0, 'WITHSCORES')
  if #oldest > 0 and tonumber(oldest[2]) <= now - tonumber(ARGV[6]) then
    key = oldest[1]
  else
    local top = redis.call('ZRANGE', P .. 'ready', 0, 0)
    if #top == 0 then return {false, reclaimed} end
    key = top[1]
  end
  unready(key)
  if redis.call('ZCARD', P .. 'q:' .. key) > 0 then
    if ip_admits(key, now) then
      redis.call('ZADD', P .. 'leases', ARGV[3], key)
      redis.call('HSET', P .. 'owner', key, ARGV[4])
      return {key, reclaimed}
    end
  else
    local e = earliest(key)
    if e then schedule(key, math.max(host_times(key), e)) else orphan(key) end
  end
end
""".replace("REAP", str(_REAP_BATCH)).replace("PROMOTE", str(_PROMOTE_BATCH))

# ARGV: P, key, token, now, expiry. Returns -1 (lease lost), nil (nothing due) or
# {url, meta, refetch}.
_POP = r"""
local key = ARGV[2]
if redis.call('HGET', P .. 'owner', key) ~= ARGV[3] then return -1 end
redis.call('ZADD', P .. 'leases', 'XX', ARGV[5], key)
promote_delayed(key, ARGV[4])
local top = redis.call('ZRANGE', P .. 'q:' .. key, 0, 0)
if #top == 0 then return false end
local m = top[1]
local url = string.sub(m, 17)
redis.call('ZREM', P .. 'q:' .. key, m)
redis.call('ZREM', P .. 'worst', url)
redis.call('SADD', P .. 'f:' .. key, url)
redis.call('HINCRBY', P .. 'stat', 'queued', -1)
return {url, redis.call('HGET', P .. 'meta', url), redis.call('SISMEMBER', P .. 'rf', url)}
"""

# ARGV: P, key, url, json, -priority, not_before, front ('1'|'0').
_PUSH = r"""
local key, url = ARGV[2], ARGV[3]
local old = redis.call('HGET', P .. 'meta', url)
if old then  -- a reclaim may have queued it again: keep one copy
  local om = string.sub(old, 1, 16) .. url
  local r = redis.call('ZREM', P .. 'q:' .. key, om) + redis.call('ZREM', P .. 'd:' .. key, om)
  if r > 0 then redis.call('HINCRBY', P .. 'stat', 'queued', -1) end
end
redis.call('SREM', P .. 'f:' .. key, url)
enqueue(url, key, ARGV[4], ARGV[5], ARGV[6], ARGV[7] == '1')
local e = earliest(key)
schedule(key, math.max(host_times(key), e or 0))  -- a no-op while the key is leased
return 1
"""

# ARGV: P, key, token, host json, next_allowed, last_start, ip_next. Returns 1, or 0 if the
# lease was lost (then nothing is scheduled twice).
_RELEASE = r"""
local key, na, ls = ARGV[2], tonumber(ARGV[5]), tonumber(ARGV[6])
local owner = redis.call('HGET', P .. 'owner', key)
if owner == ARGV[3] then
  save_host(key, ARGV[4])
  redis.call('ZREM', P .. 'leases', key)
  redis.call('HDEL', P .. 'owner', key)
  free_ip(key, tonumber(ARGV[7]))
  requeue_flight(key)
  local e = earliest(key)
  if e then schedule(key, math.max(na, e)) end
  return 1
end
local ip = redis.call('HGET', P .. 'ipof', key)
if ip then ip_after(ip, tonumber(ARGV[7])) end  -- a late request still spaces its IP
if not owner then
  local _, stored_ls = host_times(key)
  if ls >= stored_ls then save_host(key, ARGV[4]) end
  if redis.call('ZSCORE', P .. 'ready', key) then
    unready(key)
    redis.call('ZADD', P .. 'box', ARGV[5], key)
  end
  local cur = redis.call('ZSCORE', P .. 'box', key)
  if cur and tonumber(cur) < na then redis.call('ZADD', P .. 'box', ARGV[5], key) end
end
return 0
"""

# ARGV: P, key, token, host json, expiry. 1 if the lease holds (state saved, lease renewed).
_BEGIN = r"""
if redis.call('HGET', P .. 'owner', ARGV[2]) ~= ARGV[3] then return 0 end
save_host(ARGV[2], ARGV[4])
redis.call('ZADD', P .. 'leases', 'XX', ARGV[5], ARGV[2])
return 1
"""

# ARGV: P, expiry, then key, token pairs. Returns the keys whose lease was lost.
_RENEW = r"""
local lost = {}
for i = 3, #ARGV, 2 do
  if redis.call('HGET', P .. 'owner', ARGV[i]) == ARGV[i + 1] then
    redis.call('ZADD', P .. 'leases', 'XX', ARGV[2], ARGV[i])
  else
    lost[#lost + 1] = ARGV[i]
  end
end
return lost
"""

# ARGV: P, now, floor, then key, token pairs: give back leases still held (close).
_GIVE_BACK = r"""
local now, floor, n = tonumber(ARGV[2]), tonumber(ARGV[3]), 0
for i = 4, #ARGV, 2 do
  if redis.call('HGET', P .. 'owner', ARGV[i]) == ARGV[i + 1] then
    n = n + reclaim(ARGV[i], now, floor)
  end
end
return n
"""

# ARGV: P, url, outcome, stream cap.
_FINISH = r"""
local url = ARGV[2]
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
redis.call('XADD', P .. 'outcomes', 'MAXLEN', '~', ARGV[4], '*', 'url', url, 'outcome', ARGV[3])
redis.call('HINCRBY', P .. 'outcome_counts', ARGV[3], 1)
return 1
"""

# ARGV: P, then per URL: url, -priority, priority. Returns how many queued URLs changed.
# The JSON's last field is "p" (``_entry_json``), rewritten in place: no re-encoding of floats.
_REPRIORITIZE = r"""
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
  if redis.call('ZSCORE', P .. 'ready', key) then
    local top = redis.call('ZRANGE', P .. 'q:' .. key, 0, 0, 'WITHSCORES')
    if #top > 0 then redis.call('ZADD', P .. 'ready', top[2], key) end
  end
end
return n
"""

# ARGV: P, max queued, batch cap, stream cap. Drops the lowest-priority queued URLs beyond
# the cap (at most batch cap per call). Returns how many.
_TRIM = r"""
local queued = tonumber(redis.call('HGET', P .. 'stat', 'queued') or '0')
local excess = math.min(queued - tonumber(ARGV[2]), tonumber(ARGV[3]))
if excess <= 0 then return 0 end
local n = 0
for _, url in ipairs(redis.call('ZRANGE', P .. 'worst', 0, excess - 1)) do
  redis.call('ZREM', P .. 'worst', url)
  local m = redis.call('HGET', P .. 'meta', url)
  if m then
    local key = meta_json(m).k
    local mem = string.sub(m, 1, 16) .. url
    local r = redis.call('ZREM', P .. 'q:' .. key, mem) + redis.call('ZREM', P .. 'd:' .. key, mem)
    if r > 0 then
      redis.call('HDEL', P .. 'meta', url)
      redis.call('SREM', P .. 'rf', url)
      redis.call('XADD', P .. 'outcomes', 'MAXLEN', '~', ARGV[4], '*', 'url', url,
        'outcome', 'dropped:queue_full')
      n = n + 1
    end
  end
end
if n > 0 then
  redis.call('HINCRBY', P .. 'stat', 'queued', -n)
  redis.call('HINCRBY', P .. 'outcome_counts', 'dropped:queue_full', n)
end
return n
"""

# ARGV: P, key, outcome, stream cap. Returns how many queued URLs were finished.
_DROP = r"""
local key, n = ARGV[2], 0
for _, z in ipairs({'q:', 'd:'}) do
  for _, m in ipairs(redis.call('ZRANGE', P .. z .. key, 0, -1)) do
    local url = string.sub(m, 17)
    redis.call('HDEL', P .. 'meta', url)
    redis.call('ZREM', P .. 'worst', url)
    redis.call('SREM', P .. 'rf', url)
    redis.call('XADD', P .. 'outcomes', 'MAXLEN', '~', ARGV[4], '*', 'url', url,
      'outcome', ARGV[3])
    n = n + 1
  end
  redis.call('DEL', P .. z .. key)
end
if n > 0 then
  redis.call('HINCRBY', P .. 'stat', 'queued', -n)
  redis.call('HINCRBY', P .. 'outcome_counts', ARGV[3], n)
end
redis.call('ZREM', P .. 'box', key)
unready(key)
if not redis.call('ZSCORE', P .. 'leases', key) then orphan(key) end
return n
"""

# ARGV: P, seen mode, bloom bits, bloom hashes. The first worker's choice wins; returns it.
_CONF = r"""
if redis.call('HSETNX', P .. 'conf', 'seen_mode', ARGV[2]) == 1 then
  redis.call('HSET', P .. 'conf', 'bloom_m', ARGV[3], 'bloom_k', ARGV[4])
end
return redis.call('HMGET', P .. 'conf', 'seen_mode', 'bloom_m', 'bloom_k')
"""

# ARGV: P, origin, packed record, cap.
_SAVE_ROBOTS = r"""
redis.call('HSET', P .. 'robots', ARGV[2], ARGV[3])
local tick = redis.call('HINCRBY', P .. 'stat', 'robots_tick', 1)
redis.call('ZADD', P .. 'robots:t', tick, ARGV[2])
local over = redis.call('ZCARD', P .. 'robots:t') - tonumber(ARGV[4])
if over > 0 then
  local old = redis.call('ZPOPMIN', P .. 'robots:t', over)
  for i = 1, #old, 2 do redis.call('HDEL', P .. 'robots', old[i]) end
end
return 1
"""


def prefix(crawl_id: str) -> str:
    """The key prefix of one crawl: its hash tag keeps it in one Cluster slot."""
    if not _CRAWL_ID.fullmatch(crawl_id):
        raise FrontierError(
            f"crawl id must be 1-100 characters of A-Z a-z 0-9 . _ : -, got {crawl_id!r}"
        )
    return f"pc:{{{crawl_id}}}:"


def bloom_sizing(expected: int, fp_rate: float) -> tuple[int, int]:
    """Bits and hash count of a Bloom filter for ``expected`` items at ``fp_rate``."""
    n = max(1, expected)
    m = math.ceil(-n * math.log(fp_rate) / math.log(2) ** 2)
    m = max(64, min(m, _MAX_BLOOM_BITS))
    k = max(1, round(m / n * math.log(2)))
    return m, k


def bloom_positions(url: str, m: int, k: int) -> list[int]:
    """k bit positions by double hashing (Kirsch-Mitzenmacher) of one 16-byte digest."""
    d = hashlib.blake2b(url.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    h1 = int.from_bytes(d[:8], "little")
    h2 = int.from_bytes(d[8:], "little") | 1
    return [(h1 + i * h2) % m for i in range(k)]


def url_digest(url: str) -> bytes:
    """What the exact seen-set stores for a URL (see the module docstring for the odds)."""
    return hashlib.blake2b(url.encode("utf-8", "surrogatepass"), digest_size=8).digest()


def _entry_json(e: UrlEntry) -> str:
    return json.dumps(
        {
            "k": e.key,
            "d": e.depth,
            "h": e.hops,
            "a": e.attempt,
            "n": float(e.not_before),
            "t": e.kind,
            "p": float(e.priority),  # last: _REPRIORITIZE rewrites it in place
        },
        separators=(",", ":"),
    )


def _entry_from(url: str, meta: bytes, refetch: bool) -> UrlEntry:
    d = json.loads(meta[16:])
    return UrlEntry(url, d["k"], d["d"], d["h"], d["a"], d["n"], d["p"], d["t"], refetch=refetch)


def _pack_robots(r: RobotsRecord) -> bytes:
    head = {
        "fetched_at": r.fetched_at,
        "status": r.status,
        "failing_since": r.failing_since,
        "body": len(r.body),
        "good": -1 if r.good_body is None else len(r.good_body),
        "failures": r.failures,
        "redirect_to": r.redirect_to,
        "hops": r.hops,
    }
    return json.dumps(head).encode() + b"\n" + r.body + (r.good_body or b"")


def _unpack_robots(origin: str, data: bytes) -> RobotsRecord:
    head_raw, _, rest = data.partition(b"\n")
    head = json.loads(head_raw)
    n = head["body"]
    good = None if head["good"] < 0 else rest[n : n + head["good"]]
    return RobotsRecord(
        origin,
        head["fetched_at"],
        head["status"],
        rest[:n],
        head["failing_since"],
        good,
        head.get("failures", 0),
        head.get("redirect_to", ""),
        head.get("hops", 0),
    )


def _f(x: float) -> str:
    """A float as Redis reads it back exactly."""
    return repr(float(x))


def _s(v: bytes | str) -> str:
    return v.decode() if isinstance(v, bytes) else v


class RedisFrontier:
    """The ``Frontier`` protocol's shared backend (see the module docstring)."""

    def __init__(
        self,
        url: str,
        crawl_id: str = "default",
        *,
        lease_ttl_s: float = 60.0,
        seen_mode: SeenMode = "exact",
        expected_urls: int = 1_000_000,
        seen_fp_rate: float = 0.01,
        robots_cache_size: int = 1_000_000,
        reclaim_delay_s: float = 15.0,
        outcome_log_size: int = 100_000,
        heartbeat: bool = True,
        clock: Callable[[], float] = time.time,
        worker_id: str | None = None,
        max_wait_s: float = MAX_WAIT_S,
    ) -> None:
        if lease_ttl_s <= 0:
            raise FrontierError("lease_ttl_s must be > 0")
        self.crawl_id = crawl_id
        self._p = prefix(crawl_id)
        self._url = url
        self._r: aioredis.Redis = aioredis.Redis.from_url(url)
        self.lease_ttl_s = lease_ttl_s
        self.max_wait_s = max_wait_s
        self.seen_mode: SeenMode = seen_mode
        self._expected = expected_urls
        self._fp_rate = seen_fp_rate
        self._bloom_m = 0
        self._bloom_k = 0
        self._robots_cap = robots_cache_size
        self._reclaim_s = reclaim_delay_s
        self._outcome_cap = outcome_log_size
        self._heartbeat = heartbeat
        self._clock = clock
        self.worker_id = worker_id or f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(3)}"
        self._tokens = itertools.count(1)
        self._held: dict[str, str] = {}  # key -> lease token
        self._last_now = 0.0
        self._beat: asyncio.Task[None] | None = None
        self._ready = False
        self._init_lock = asyncio.Lock()
        self._scripts: dict[str, AsyncScript] = {}
        self.refetches = 0  # URLs this worker found to re-fetch (expired leases)
        self.lost_leases = 0  # leases this worker held that expired under it

    # -- set-up ---------------------------------------------------------------------------
    async def _ensure(self) -> None:
        if self._ready:
            return
        async with self._init_lock:
            if self._ready:
                return
            r = self._r
            for name, body in (
                ("add", _ADD),
                ("bloom", _BLOOM),
                ("lease", _LEASE),
                ("pop", _POP),
                ("push", _PUSH),
                ("begin", _BEGIN),
                ("release", _RELEASE),
                ("renew", _RENEW),
                ("give_back", _GIVE_BACK),
                ("finish", _FINISH),
                ("drop", _DROP),
                ("reprioritize", _REPRIORITIZE),
                ("trim", _TRIM),
                ("save_robots", _SAVE_ROBOTS),
            ):
                self._scripts[name] = r.register_script(_LIB + body)
            mode = "bloom" if self.seen_mode == "bloom" else "exact"
            m, k = bloom_sizing(self._expected, self._fp_rate)
            conf = r.register_script(_LIB + _CONF)
            try:
                raw = await conf(keys=[self._p + "box"], args=[self._p, mode, m, k])
                self.refetches = int(await r.scard(self._p + "rf"))
            except RedisError as exc:
                raise FrontierError(f"cannot use the frontier at {self._url}: {exc}") from exc
            stored, stored_m, stored_k = _s(raw[0]), int(raw[1]), int(raw[2])
            if stored != mode or (mode == "bloom" and (stored_m, stored_k) != (m, k)):
                log.warning(
                    "crawl %s keeps the seen-set it was started with (%s, %d bits); "
                    "this worker asked for %s",
                    self.crawl_id,
                    stored,
                    stored_m,
                    mode,
                )
            self.seen_mode = "bloom" if stored == "bloom" else "exact"
            self._bloom_m, self._bloom_k = (stored_m, stored_k) if stored == "bloom" else (0, 0)
            self._ready = True

    async def _run(self, name: str, args: list[Any]) -> Any:
        """One script; every key it touches shares ``KEYS[1]``'s hash tag."""
        await self._ensure()
        try:
            return await self._scripts[name](keys=[self._p + "box"], args=[self._p, *args])
        except RedisError as exc:
            raise FrontierError(f"frontier {self._url} failed ({name}): {exc}") from exc

    # -- the seen-set and queueing ------------------------------------------------------------
    def _seen_args(self, url: str) -> list[Any]:
        if self.seen_mode == "bloom":
            return list(bloom_positions(url, self._bloom_m, self._bloom_k))
        return [url_digest(url)]

    async def unseen(self, urls: Sequence[str]) -> list[str]:
        if not urls:
            return []
        await self._ensure()
        if self.seen_mode == "bloom":
            args: list[Any] = [self._bloom_k, "0"]
            for u in urls:
                args.extend(self._seen_args(u))
            flags = await self._run("bloom", args)
        else:
            try:
                flags = await self._r.smismember(self._p + "seen", [url_digest(u) for u in urls])
            except RedisError as exc:
                raise FrontierError(f"frontier {self._url} failed (unseen): {exc}") from exc
        return [u for u, f in zip(urls, flags, strict=True) if not int(f)]

    async def mark_seen(self, urls: Sequence[str]) -> None:
        if not urls:
            return
        await self._ensure()
        if self.seen_mode == "bloom":
            args: list[Any] = [self._bloom_k, "1"]
            for u in urls:
                args.extend(self._seen_args(u))
            await self._run("bloom", args)
            return
        try:
            await self._r.sadd(self._p + "seen", *[url_digest(u) for u in urls])
        except RedisError as exc:
            raise FrontierError(f"frontier {self._url} failed (mark_seen): {exc}") from exc

    async def add(self, entries: Sequence[UrlEntry]) -> list[bool]:
        """Queue entries not seen before (test-and-set in one script); True where queued."""
        if not entries:
            return []
        await self._ensure()
        bloom = self.seen_mode == "bloom"
        args: list[Any] = ["b" if bloom else "e", self._bloom_k if bloom else 1, len(entries)]
        for e in entries:
            args += [e.url, e.key, _entry_json(e), _f(-e.priority), _f(e.not_before), e.ip]
            args += self._seen_args(e.url)
        flags = await self._run("add", args)
        return [bool(int(f)) for f in flags]

    async def push_back(self, entry: UrlEntry, *, front: bool = False) -> None:
        """A URL of a leased key to try later (retry, or after robots.txt)."""
        await self._run(
            "push",
            [
                entry.key,
                entry.url,
                _entry_json(entry),
                _f(-entry.priority),
                _f(entry.not_before),
                "1" if front else "0",
            ],
        )

    async def pop_url(self, key: str, now: float) -> UrlEntry | None:
        """The best URL of a key this worker leased that may be fetched now; renews the lease."""
        token = self._held.get(key)
        if token is None:
            return None
        self._last_now = max(self._last_now, now)
        res = await self._run("pop", [key, token, _f(now), _f(now + self.lease_ttl_s)])
        if res == -1:
            self._lost(key)
            return None
        if res is None:
            return None
        url, meta, refetch = res
        return _entry_from(_s(url), meta, bool(int(refetch)))

    async def finish(self, url: str, outcome: str) -> None:
        await self._run("finish", [url, outcome, self._outcome_cap])

    async def drop_queued(self, key: str, outcome: str) -> int:
        """Finish every queued URL of a key (the site became excluded or unreachable)."""
        return int(await self._run("drop", [key, outcome, self._outcome_cap]))

    async def reprioritize(self, items: Sequence[tuple[str, str, float]]) -> int:
        """New priorities for queued ``(url, key, priority)`` (URLs in flight keep theirs)."""
        total = 0
        for i in range(0, len(items), _BATCH):
            args: list[Any] = []
            for url, _key, prio in items[i : i + _BATCH]:
                args += [url, _f(-prio), _f(prio)]
            total += int(await self._run("reprioritize", args))
        return total

    async def trim(self, max_queued: int) -> int:
        """Drop the lowest-priority queued URLs beyond ``max_queued`` (``--max-queue``), at
        most ``_BATCH`` a call (the crawler calls it every second)."""
        return int(await self._run("trim", [max_queued, _BATCH, self._outcome_cap]))

    # -- leases -------------------------------------------------------------------------------
    async def lease(self, now: float) -> str | None:
        """The due key holding the best URL, leased to this worker until released or expired."""
        self._last_now = max(self._last_now, now)
        token = f"{self.worker_id}/{next(self._tokens)}"
        key_raw, reclaimed = await self._run(
            "lease",
            [_f(now), _f(now + self.lease_ttl_s), token, _f(self._reclaim_s), _f(self.max_wait_s)],
        )
        if reclaimed:
            self.refetches += int(reclaimed)
            log.warning("reclaimed expired leases: %d URLs will be re-fetched", reclaimed)
        if key_raw is None:
            return None
        key = _s(key_raw)
        self._held[key] = token
        if self._heartbeat and (self._beat is None or self._beat.done()):
            self._beat = asyncio.create_task(self._beat_loop())
        return key

    async def begin_request(self, key: str, state: HostState) -> None:
        """Before a request: save the host's provisional state (its ``next_allowed`` already a
        full delay ahead, so a reclaim after a crash mid-request waits it) and renew the lease.
        Raises ``LeaseLost`` if the lease expired: the request must not go out, since another
        worker may hold the key now (the popped URL is already queued again, as a re-fetch)."""
        token = self._held.get(key)
        ok = await self._run(
            "begin",
            [key, token or "", host_to_json(state), _f(state.last_start + self.lease_ttl_s)],
        )
        if not int(ok):
            self._lost(key)
            raise LeaseLost(f"lease on {key} expired: request not sent")

    async def release(self, key: str, state: HostState) -> None:
        """Save the key's politeness state and put it back in the box if URLs remain."""
        token = self._held.pop(key, None)
        ok = await self._run(
            "release",
            [
                key,
                token or "",
                host_to_json(state),
                _f(state.next_allowed),
                _f(state.last_start),
                _f(state.ip_next),
            ],
        )
        if not int(ok) and token is not None:
            self.lost_leases += 1
            log.warning("lease on %s had expired before its release", key)

    async def renew(self, key: str, now: float) -> bool:
        """Extend this worker's lease on ``key`` to ``now + lease_ttl_s``; False if lost."""
        token = self._held.get(key)
        if token is None:
            return False
        lost = await self._run("renew", [_f(now + self.lease_ttl_s), key, token])
        if lost:
            self._lost(key)
            return False
        return True

    async def renew_held(self, now: float) -> list[str]:
        """Extend every lease this worker holds; returns the keys it had lost."""
        if not self._held:
            return []
        args: list[Any] = [_f(now + self.lease_ttl_s)]
        for key, token in self._held.items():
            args += [key, token]
        lost = [_s(k) for k in await self._run("renew", args)]
        for key in lost:
            self._lost(key)
        return lost

    def _lost(self, key: str) -> None:
        if self._held.pop(key, None) is not None:
            self.lost_leases += 1
            log.warning("lease on %s expired while held: another worker may have it now", key)

    async def _beat_loop(self) -> None:
        """While leases are held, renew them every third of their lifetime."""
        while self._held:
            await asyncio.sleep(self.lease_ttl_s / 3)
            try:
                await self.renew_held(self._clock())
            except FrontierError as exc:
                log.warning("cannot renew leases: %s", exc)

    async def next_wake(self) -> float | None:
        """0 if a key is due; else the earliest box time or lease expiry (a lease held
        anywhere may bring URLs back), or None when the crawl has nothing left anywhere."""
        await self._ensure()
        p = self._p
        try:
            pipe = self._r.pipeline(transaction=False)
            pipe.zcard(p + "ready")
            pipe.zrange(p + "box", 0, 0, withscores=True)
            pipe.zrange(p + "leases", 0, 0, withscores=True)
            n_ready, box, leases = await pipe.execute()
        except RedisError as exc:
            raise FrontierError(f"frontier {self._url} failed (next_wake): {exc}") from exc
        if n_ready:
            return 0.0
        times = [float(s) for _, s in (*box, *leases)]
        return min(times) if times else None

    # -- host state and robots -----------------------------------------------------------------
    async def host(self, key: str) -> HostState:
        await self._ensure()
        try:
            data = await self._r.hget(self._p + "hosts", key)
        except RedisError as exc:
            raise FrontierError(f"frontier {self._url} failed (host): {exc}") from exc
        return HostState(key=key) if data is None else host_from_json(key, _s(data))

    async def robots(self, origin: str) -> RobotsRecord | None:
        await self._ensure()
        try:
            data = await self._r.hget(self._p + "robots", origin)
        except RedisError as exc:
            raise FrontierError(f"frontier {self._url} failed (robots): {exc}") from exc
        if data is None:
            return None
        return _unpack_robots(origin, data if isinstance(data, bytes) else data.encode())

    async def save_robots(self, record: RobotsRecord) -> None:
        await self._run("save_robots", [record.origin, _pack_robots(record), self._robots_cap])

    # -- conditional GET ----------------------------------------------------------------------
    async def validators(self, url: str) -> tuple[str | None, str | None, float] | None:
        """ETag, Last-Modified and fetch time of the last stored copy of ``url``."""
        await self._ensure()
        try:
            data = await self._r.hget(self._p + "pages", url_digest(url))
        except RedisError as exc:
            raise FrontierError(f"frontier {self._url} failed (validators): {exc}") from exc
        if data is None:
            return None
        etag, modified, fetched_at = json.loads(data)
        return etag, modified, float(fetched_at)

    async def save_validators(
        self, url: str, etag: str | None, last_modified: str | None, fetched_at: float
    ) -> None:
        await self._ensure()
        value = json.dumps([etag, last_modified, fetched_at])
        try:
            await self._r.hset(self._p + "pages", url_digest(url), value)
        except RedisError as exc:
            raise FrontierError(f"frontier {self._url} failed (save_validators): {exc}") from exc

    # -- bookkeeping --------------------------------------------------------------------------
    async def add_counters(self, delta: dict[str, int]) -> None:
        items = [(k, v) for k, v in delta.items() if v]
        if not items:
            return
        await self._ensure()
        try:
            pipe = self._r.pipeline(transaction=False)
            for k, v in items:
                pipe.hincrby(self._p + "counters", k, v)
            await pipe.execute()
        except RedisError as exc:
            raise FrontierError(f"frontier {self._url} failed (counters): {exc}") from exc

    async def counters(self) -> dict[str, int]:
        await self._ensure()
        try:
            raw = await self._r.hgetall(self._p + "counters")
        except RedisError as exc:
            raise FrontierError(f"frontier {self._url} failed (counters): {exc}") from exc
        return {_s(k): int(v) for k, v in raw.items()}

    async def stats(self) -> dict[str, int]:
        await self._ensure()
        st = await _raw_stats(self._r, self._p, self.seen_mode == "bloom", self._clock())
        return {
            "queued": st["queued"],
            "hosts_waiting": st["hosts_waiting"],
            "ready": st["ready"],
            "parked": st["parked"],
            "in_flight": st["leases"],
            "seen": st["seen"],
            "seen_bytes": self._bloom_m // 8 if self.seen_mode == "bloom" else 0,
        }

    async def flush(self) -> None:
        """Nothing to do: every call is already applied (durability is the server's)."""

    async def close(self) -> None:
        """Give back leases still held (their URLs re-queued as re-fetches) and disconnect."""
        beat, self._beat = self._beat, None
        if beat is not None:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat
        try:
            if self._held and self._ready:
                args: list[Any] = [_f(self._last_now), _f(self._reclaim_s)]
                for key, token in self._held.items():
                    args += [key, token]
                self._held.clear()
                await self._run("give_back", args)
        finally:
            await self._r.aclose()


async def _raw_stats(r: aioredis.Redis, p: str, bloom: bool, now: float) -> dict[str, int]:
    try:
        pipe = r.pipeline(transaction=False)
        pipe.hget(p + "stat", "queued")
        pipe.zcard(p + "box")
        pipe.zcard(p + "ready")
        pipe.zcount(p + "box", "-inf", now)
        pipe.zcount(p + "parked", f"({now!r}", "+inf")
        pipe.zcard(p + "leases")
        pipe.scard(p + "waiting")
        if bloom:
            pipe.hget(p + "stat", "seen_n")
        else:
            pipe.scard(p + "seen")
        queued, box, ready, due, parked, leases, waiting, seen = await pipe.execute()
    except RedisError as exc:
        raise FrontierError(f"frontier failed (stats): {exc}") from exc
    return {
        "queued": int(queued or 0),
        "hosts_waiting": int(box) + int(ready) + int(waiting),
        "ready": int(ready) + int(due),
        "parked": int(parked),
        "leases": int(leases),
        "seen": int(seen or 0),
    }


async def status(url: str, crawl_id: str = "default") -> dict[str, Any]:
    """What ``politecrawl status --frontier URL`` prints: the shared crawl at a glance."""
    p = prefix(crawl_id)
    r: aioredis.Redis = aioredis.Redis.from_url(url)
    try:
        try:
            conf = {_s(a): _s(b) for a, b in (await r.hgetall(p + "conf")).items()}
        except (RedisError, OSError) as exc:
            raise FrontierError(f"cannot reach the frontier at {url}: {exc}") from exc
        bloom = conf.get("seen_mode") == "bloom"
        st = await _raw_stats(r, p, bloom, time.time())
        try:
            pipe = r.pipeline(transaction=False)
            pipe.zrange(p + "leases", 0, -1, withscores=True)
            pipe.hgetall(p + "owner")
            pipe.hgetall(p + "counters")
            pipe.hgetall(p + "outcome_counts")
            pipe.zrange(p + "box", 0, 0, withscores=True)
            pipe.hlen(p + "meta")
            leases, owner_raw, counter_raw, outcome_raw, nxt, n_open = await pipe.execute()
        except RedisError as exc:
            raise FrontierError(f"frontier {url} failed (status): {exc}") from exc
        owners = {_s(k): _s(v) for k, v in owner_raw.items()}
        counters = {_s(k): int(v) for k, v in counter_raw.items()}
        outcomes = {_s(k): int(v) for k, v in outcome_raw.items()}
        return {
            "crawl_id": crawl_id,
            "exists": bool(conf),
            "seen_mode": conf.get("seen_mode", "exact"),
            "queued": st["queued"],
            "urls_open": int(n_open),  # queued + in flight: not finished yet
            "hosts_waiting": st["hosts_waiting"],
            "hosts_ready": st["ready"],
            "hosts_parked": st["parked"],
            "next_due": float(nxt[0][1]) if nxt else None,
            "leases_held": st["leases"],
            "leases": [
                {
                    "key": _s(k),
                    "worker": owners.get(_s(k), "").rpartition("/")[0],
                    "expires_at": float(exp),
                }
                for k, exp in leases
            ],
            "seen": st["seen"],
            "counters": dict(sorted(counters.items())),
            "outcomes": dict(sorted(outcomes.items())),
        }
    finally:
        await r.aclose()


__all__ = [
    "LeaseLost",
    "RedisFrontier",
    "bloom_positions",
    "bloom_sizing",
    "prefix",
    "status",
    "url_digest",
]
