"""The shared frontier: many workers on many machines crawl as one, politeness still global.

``RedisFrontier`` keeps every promise of ``frontier.Frontier`` (checked by the same contract
suite as ``SqliteFrontier``, on one server and on a 3-node Redis Cluster) in Redis (>= 6.2)
or Valkey, one server or a Cluster, so any number of worker processes can share one crawl: a
politeness key is leased to one worker at a time across all of them, and no key is handed
out before the ``next_allowed`` time its last turn gave it. Only plain commands and Lua
``EVAL``/``EVALSHA`` are used (no Redis Functions, no modules), so Redis and Valkey both
work. Every multi-step change is one Lua script (the ``.lua`` files beside this module, each
prefixed with ``lib.lua``) on one shard, hence atomic.

Shards. A crawl is split into ``shards`` shards (16 unless the first worker's frontier URL
says ``?shards=N``; fixed when the crawl starts, stored in its ``conf``). Shard S's keys carry
the hash tag ``{CRAWL_ID:S}``, so each shard is one Cluster slot and the shards spread over
every node (use at least 4 shards per node: slots land on nodes by a hash). A shard holds
whole politeness keys: a key's queue, lease, spacing, seen-set entries and site state live
in one shard, so every step of a turn is one script in one slot, as before sharding. Which
shard holds a key is decided once, by the first ``add`` naming it, and recorded in a
directory (``dir``, itself sharded by the key's hash; first writer wins, so every worker
agrees and caches it): the shard of the key's IP address when it has one (the IP rule is
on), else of the key itself. So all the keys of one server IP share a shard, and the per-IP
rule (one request in flight per IP, its gap, its waiting line) stays inside one atomic
script: no cross-slot protocol and no second lock with its own expiry to get wrong when a
worker dies. The price: one IP's sites are one shard's load, at most one request at a time
plus their queued URLs; a hosting IP with 100,000 sites puts them all in one shard.

Keys (``P`` = ``pc:{CRAWL_ID:S}:``, one set per shard S; ``G`` = ``pc:{CRAWL_ID}:``)
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
                         (the URLs of the shard's keys)
    ``P hosts``    hash  key -> HostState JSON (``sqlite.host_to_json``, the same format)
    ``P parked``   zset  parked key -> parked until (so ``stats`` counts them without a scan)
    ``P ipof``     hash  key -> the IP its host resolves to (set by the first ``add`` naming it)
    ``P iphold``   hash  IP -> the one key of it leased now;  ``P ipnext`` hash IP -> when it
                         may be asked again (the largest ``HostState.ip_next`` released)
    ``P ipw:IP``   list  keys found due while the IP was held, first come first served;
    ``P waiting``  set   every key in such a line (scheduled only when its IP calls it)
    ``P dir``      hash  politeness key -> its shard (in the shard of hash(key))
    ``P robots``   hash  origin -> packed RobotsRecord;  ``P robots:t`` zset origin -> write
                         tick (in the shard of hash(origin), capped per shard)
    ``P pages``    hash  digest of a stored page's URL -> [ETag, Last-Modified, fetched at]
                         (in the shard of hash(URL); a digest collision only costs a full 200)
    ``P stat``     hash  queued / seen_n / seq;  ``P outcomes`` stream of finished URLs
                         (MAXLEN ~ ``outcome_log_size``); ``P outcome_counts`` hash
    ``G conf``     hash  seen mode, Bloom sizing, shards;  ``G counters`` hash (HINCRBY);
    ``G scope``    string the crawl's scope and seeds (``factory.shared_scope``)

Cluster. ``connect`` asks the named server ``INFO cluster``; in cluster mode it uses
``redis.asyncio.RedisCluster`` (any node may be named: the others are found from it), else a
plain client. Scripts run by ``EVALSHA`` with one key of their shard as ``KEYS[1]`` (the
route) and the shard's prefix as ``ARGV[1]``; every key a script touches shares that hash
tag (the contract suite proves it on a 3-node cluster with the scripts marked ``#!lua``,
under which Redis refuses any access to a second slot; the shipped scripts carry no such
header, so Redis 6.2 still runs them). Reads across shards (``stats``, ``next_wake``,
``status``) are pipelines that the cluster client splits by node.

Choosing a key across shards. ``lease`` first "peeks" at every shard (one script each, run
concurrently: reclaim expired leases, promote due keys, and report the best ready key, its
score, the longest-waiting key's due time and the shard's next time), ranks them by the
crawl-wide rule below, and asks the best shard to lease (``take``: the same script, which
decides again inside the shard; it returns the shard's view after the lease, and the leased
site's state, so ``host`` needs no round trip). Workers (``factory``) reuse a shard's view for
0.05 s (``peek_cache_s``) unless they changed what it may have ready (an ``add`` that gave URLs
to a key not leased, ``push_back``, ``drop_queued``, ``trim``, ``reprioritize``, ``close``; a
``release`` moves the view's next time earlier instead) or its next time has come; ``next_wake``
answers from the views while all are fresh. Other workers' changes are seen up to that much
later, which only delays a pick; a lease is always decided atomically by the shard.

Queue order. Within a key: highest priority first, FIFO among equals. The score is exactly
``-priority`` (any float: random priorities included, no precision lost to packing) and the
member starts with a 16-digit TAG: ties between equal scores are ordered by member, so the tag
is the FIFO sequence: ``10**15 + seq`` for a normal push, ``10**15 - seq`` for ``push_back(...,
front=True)`` (the newest front push first, as in sqlite). URLs whose ``not_before`` is set
wait in ``d:KEY`` and move to ``q:KEY`` once due (at ``pop_url`` or ``lease``).
Between keys: ``lease(now)`` moves every key due by ``now`` from the box into ``ready``,
scored by its best URL, and takes the one holding the highest-priority URL (ties: key name),
unless the longest-waiting ready key has been due for ``max_wait_s``: then that one. Across
shards the same rule ranks the shards' best keys (exact without ``peek_cache_s``).

One server, many names. ``lease`` takes a key only if its IP is not held by another leased
key and its IP's next time has come: a key due while its IP is held joins the IP's line, a
key due before the IP's time goes back to the box at that time. Releasing (or reclaiming)
the key that held the IP schedules the first key of the line; O(1) per key, no scan.

Leases. ``lease`` ends with one script on one shard: reclaim expired leases (below), promote due
keys, take the best ready key, record it in ``leases`` with expiry ``now + lease_ttl_s`` and a
token unique to this lease. ``pop_url`` and ``release`` act only if the token still holds (a
worker whose lease expired gets ``None`` from ``pop_url`` and its ``release`` cannot schedule
the key a second time: it only pushes the key's box time later if its late request needs that,
and writes its HostState only if nobody leased the key since). Leases are renewed by every
``pop_url`` and ``begin_request`` (each request follows both; ``begin_request`` also saves the
provisional HostState, and raises ``LeaseLost`` instead of letting a request out under a lease
that expired), by ``renew``, and by a heartbeat task every ``lease_ttl_s / 3`` while the worker
holds any lease (``heartbeat=False`` turns it off), so only a dead or frozen worker's leases
expire.

Expiry. Each peek or take of a shard first reclaims its expired leases (every shard is peeked at
least every ``peek_cache_s`` by each worker looking for work): the key's in-flight URLs go back
to its queue in their old place, marked refetch, and the key goes back to the box at ``max(last
next_allowed, now + delay)``, delay being the last saved HostState's ``next_allowed -
last_start`` (or ``reclaim_delay_s`` if it has none): the dead worker may have started a request
just before dying, and ``begin_request`` saved that request's start and provisional next time
before it went out. ``close`` gives back the leases still held the same way. ``release`` re-
queues any URL popped but neither finished nor pushed back.

A worker killed at any point (``kill -9``). Every change it made is a whole script on one
shard, so the state is always one that a live worker could leave: a key it leased stays
leased until the expiry, then the next peek of that shard reclaims it as above (its popped
URLs re-queued as re-fetches: nothing lost, and fetched again only if it had them in flight),
and since its IP hold is part of the same shard's state the reclaim frees the IP with the
same delay. A directory entry written by an ``add`` whose queueing script never ran only
fixes where the key will live; the URLs themselves are added again by whoever re-fetches the
page that linked them (the page's URL was in flight, so it comes back). A worker that loses
its connection gets ``FrontierError`` ("lost the frontier ... this worker stops") and stops
with that one line (exit 1); its leases expire the same way.

Seen-set. Exact: a SET of 8-byte blake2b digests rather than URLs (64 bytes per URL measured on
Redis 7, whatever the URL's length); the chance of any collision among n URLs is about n^2 /
2^65 (1e-7 at 2 million, 3e-4 at 100 million), and a collision only makes a new URL look seen
(skipped), never fetched twice. Bloom: a bitmap of m bits (at most 2^32) with k positions per
URL computed here by double hashing one blake2b digest, tested and set by a script (SETBIT
returns the old bit); the first worker's sizing is stored in ``G conf`` and later workers adopt
it, each shard holding m / shards bits. ``meta`` (queued and in-flight URLs) stays the exact
check, as sqlite's primary key does. A URL's entry lives in its key's shard, so ``add`` tests
and sets it in the same script that queues it. ``unseen`` and ``mark_seen`` find a URL's
shard through its politeness key (``key_of``: the factory passes ``urls.politeness_key`` in
the crawl's mode; with ``--politeness-key ip`` the key is not known before resolving, so
``unseen`` lets every URL through to ``add``, which decides). A URL marked seen before its
key had a shard is remembered in the key's own hash shard: if the key is later placed by its
IP elsewhere, that URL may be looked at once more by the gate (which refuses it again).
``unseen``, ``mark_seen`` and ``add`` are one round trip per shard touched (per page).

Memory stays bounded by the work left: a queued URL costs about 690 bytes (measured by
``bench/cluster.py``, 60-70-char URLs: the URL is stored three times, as ``meta`` field, queue
member and ``worst`` member; keying them by digest is the next saving if queues grow to tens of
millions), freed when the URL is finished; finished URLs leave only their seen-set entry, one
``outcome_counts`` increment and a stream entry that ``XADD MAXLEN ~`` trims. robots.txt copies
are capped at ``robots_cache_size`` origins, evicting the least recently written (an origin in
use is written again at least every robots TTL).

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
from collections.abc import Awaitable, Callable, Sequence
from importlib import resources
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from politecrawl.config import MAX_WAIT_S
from politecrawl.errors import FrontierError, LeaseLost
from politecrawl.frontier import RobotsRecord, UrlEntry
from politecrawl.frontier.sqlite import host_from_json, host_to_json
from politecrawl.politeness import HostState
from politecrawl.seen import SeenMode
from politecrawl.urls import host_of

log = logging.getLogger("politecrawl.frontier.redis")

_CRAWL_ID = re.compile(r"[A-Za-z0-9._:-]{1,100}")
_MAX_BLOOM_BITS = 2**32  # a Redis string holds at most 512 MiB
DEFAULT_SHARDS = 16  # a crawl's shards (fixed when it starts): see the module docstring
_BATCH = 10_000  # URLs per reprioritize/trim script: one script blocks the server meanwhile

_NAMES = (
    "add", "bloom", "lease", "pop", "push", "begin", "release", "renew", "give_back", "finish",
    "drop", "reprioritize", "trim", "save_robots", "dir",
)  # fmt: skip


def _lua(name: str) -> str:
    return (resources.files(__package__) / f"{name}.lua").read_text(encoding="utf-8")


# Shared helpers (lib.lua), prepended to every script. ARGV[1] is the key prefix (one shard's);
# KEYS[1] (a key under the same hash tag) only routes the call. Scores computed there are
# written with %.17g, which round-trips a double exactly (Lua's tostring keeps 14 digits).
_LIB = _lua("lib")
_BODIES = {name: _lua(name) for name in (*_NAMES, "conf")}


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


Client = Any  # redis.asyncio.Redis, or redis.asyncio.RedisCluster on a cluster


_OWN_PARAMS = ("shards", "lease_ttl")


def split_url(url: str) -> tuple[str, dict[str, str]]:
    """The server URL and this crawler's own settings in its query (``?shards=64&lease_ttl=20``,
    which the Redis client would refuse)."""
    base, sep, query = url.partition("?")
    if not sep:
        return url, {}
    own: dict[str, str] = {}
    rest = []
    for part in query.split("&"):
        name, _, value = part.partition("=")
        if name in _OWN_PARAMS:
            own[name] = value
        elif part:
            rest.append(part)
    return (base + "?" + "&".join(rest) if rest else base), own


async def connect(url: str) -> Client:
    """A client for ``url``: a ``RedisCluster`` when the named server runs in cluster mode
    (any node will do: the others are found from it), else a plain one."""
    url = split_url(url.replace("valkey://", "redis://", 1))[0]
    r: aioredis.Redis = aioredis.Redis.from_url(url)
    try:
        info = await r.info("cluster")
    except (RedisError, OSError) as exc:
        await r.aclose()
        raise FrontierError(f"cannot reach the frontier at {url}: {exc}") from exc
    if not int(info.get("cluster_enabled", 0) or 0):
        return r
    await r.aclose()
    cluster = aioredis.RedisCluster.from_url(url)
    try:
        await cluster.initialize()
    except (RedisError, OSError) as exc:
        await cluster.aclose()
        raise FrontierError(f"cannot use the cluster at {url}: {exc}") from exc
    return cluster


def shard_index(name: str, n: int) -> int:
    """Which of ``n`` shards a politeness key, IP, origin or URL hashes to."""
    d = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(d, "little") % n


def shard_prefix(crawl_id: str, shard: int) -> str:
    """The key prefix of one shard of a crawl: its own hash tag, hence its own slot."""
    prefix(crawl_id)  # validates the id
    return f"pc:{{{crawl_id}:{shard}}}:"


class _Script:
    """One Lua script, run by EVALSHA (loaded by EVAL on a node that lacks it)."""

    def __init__(self, body: str) -> None:
        self.body = body
        self.sha = hashlib.sha1(body.encode()).hexdigest()

    async def __call__(self, r: Client, p: str, args: Sequence[Any]) -> Any:
        try:
            return await r.evalsha(self.sha, 1, p + "box", p, *args)
        except NoScriptError:
            return await r.eval(self.body, 1, p + "box", p, *args)


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
        shards: int = DEFAULT_SHARDS,
        key_of: Callable[[str], str] | None = host_of,
        peek_cache_s: float = 0.0,
    ) -> None:
        if lease_ttl_s <= 0:
            raise FrontierError("lease_ttl_s must be > 0")
        if not 1 <= shards <= 4096:
            raise FrontierError("shards must be 1-4096")
        self.crawl_id = crawl_id
        self._p = prefix(crawl_id)  # the crawl's global keys: conf, counters, scope
        self._url = url
        self._r: Client = None
        self.lease_ttl_s = lease_ttl_s
        self.max_wait_s = max_wait_s
        self.seen_mode: SeenMode = seen_mode
        self._expected = expected_urls
        self._fp_rate = seen_fp_rate
        self._bloom_m = 0  # bits per shard
        self._bloom_k = 0
        self._want_shards = shards
        self.shards = shards  # what the crawl was started with (read at first use)
        self._sp: list[str] = []
        self._key_of = key_of
        self._dir: dict[str, int] = {}  # politeness key -> shard (immutable once recorded)
        self._flight: dict[str, int] = {}  # URL popped here -> its shard
        self._robots_cap = robots_cache_size
        self._reclaim_s = reclaim_delay_s
        self._outcome_cap = outcome_log_size
        self._heartbeat = heartbeat
        self._clock = clock
        self.worker_id = worker_id or f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(3)}"
        self._tokens = itertools.count(1)
        self._held: dict[str, tuple[str, int]] = {}  # key -> (lease token, shard)
        self._hosts: dict[str, str | None] = {}  # held key -> its HostState JSON
        self._last_now = 0.0
        self._beat: asyncio.Task[None] | None = None
        self._ready = False
        self._init_lock = asyncio.Lock()
        self._scripts: dict[str, _Script] = {}
        self._peek_cache_s = peek_cache_s
        self._peeks: dict[int, tuple[float, int, Any]] = {}  # shard -> (at, touch, view)
        self._touch: list[int] = []  # per shard: scripts this worker ran there
        self._wake: tuple[float, int, float | None] | None = None  # (at, calls, wake)
        self._calls = 0
        self.refetches = 0  # URLs this worker found to re-fetch (expired leases)
        self.lost_leases = 0  # leases this worker held that expired under it
        self.cluster = False

    # -- set-up ---------------------------------------------------------------------------
    async def _ensure(self) -> None:
        if self._ready:
            return
        async with self._init_lock:
            if self._ready:
                return
            self._r = r = await connect(self._url)
            self.cluster = isinstance(r, aioredis.RedisCluster)
            for name in _NAMES:
                self._scripts[name] = _Script(_LIB + _BODIES[name])
            mode = "bloom" if self.seen_mode == "bloom" else "exact"
            m, k = bloom_sizing(self._expected, self._fp_rate)
            try:
                raw = await _Script(_LIB + _BODIES["conf"])(
                    r, self._p, [mode, m, k, self._want_shards]
                )
            except RedisError as exc:
                raise FrontierError(f"cannot use the frontier at {self._url}: {exc}") from exc
            stored, stored_m, stored_k = _s(raw[0]), int(raw[1]), int(raw[2])
            if raw[3] is None:  # conf written before crawls were sharded: all in one slot
                raise FrontierError(
                    f"crawl {self.crawl_id!r} at {self._url} was started by an older politecrawl "
                    "(one slot per crawl); finish it with that version or use a new --crawl-id"
                )
            self.shards = int(raw[3])
            self._sp = [shard_prefix(self.crawl_id, i) for i in range(self.shards)]
            self._touch = [0] * self.shards
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
            if stored == "bloom":
                self._bloom_m, self._bloom_k = max(64, -(-stored_m // self.shards)), stored_k
            try:
                counts = await asyncio.gather(*(r.scard(p + "rf") for p in self._sp))
            except RedisError as exc:
                raise FrontierError(f"cannot use the frontier at {self._url}: {exc}") from exc
            self.refetches = sum(int(c) for c in counts)
            self._ready = True

    def _fail(self, what: str, exc: BaseException) -> FrontierError:
        if isinstance(exc, (RedisConnectionError, RedisTimeoutError)):
            return FrontierError(
                f"lost the frontier at {self._url} ({what}: {exc}): this worker stops; its "
                "leases expire and the other workers take its sites back"
            )
        return FrontierError(f"frontier {self._url} failed ({what}): {exc}")

    async def _run(self, name: str, shard: int, args: list[Any], *, touch: bool = True) -> Any:
        """One script on one shard; every key it touches shares that shard's hash tag.
        ``touch``: it may change what the shard has ready (the cached peek is dropped)."""
        await self._ensure()
        self._calls += 1
        if touch:
            self._touch[shard] += 1
        try:
            return await self._scripts[name](self._r, self._sp[shard], args)
        except RedisError as exc:
            raise self._fail(name, exc) from exc

    async def _gather(self, what: str, calls: Sequence[Awaitable[Any]]) -> list[Any]:
        try:
            return list(await asyncio.gather(*calls))
        except RedisError as exc:
            raise self._fail(what, exc) from exc

    # -- which shard ----------------------------------------------------------------------
    def _home(self, name: str) -> int:
        return shard_index(name, self.shards)

    async def _place(self, pairs: dict[str, str]) -> None:
        """Record (first writer wins) the shard of each politeness key in ``pairs`` (key ->
        its IP or ""): the IP's shard, so every key of one server shares a slot."""
        todo: dict[int, list[Any]] = {}
        for key, ip in pairs.items():
            if key not in self._dir:
                todo.setdefault(self._home(key), []).extend([key, self._home(ip or key)])
        if not todo:
            return
        if len(self._dir) > 1_000_000:
            self._dir.clear()
        dirs = list(todo)
        got = await self._gather("dir", [self._run("dir", d, todo[d]) for d in dirs])
        for d, shards in zip(dirs, got, strict=True):
            for key, s in zip(todo[d][::2], shards, strict=True):
                self._dir[key] = int(s)

    async def _shards_of(self, keys: Sequence[str]) -> dict[str, int]:
        """The shard of each key: recorded, else (never queued) the key's own hash."""
        out: dict[str, int] = {}
        ask: dict[int, list[str]] = {}
        for key in keys:
            held = self._held.get(key)
            if held is not None:
                out[key] = held[1]
            elif key in self._dir:
                out[key] = self._dir[key]
            else:
                ask.setdefault(self._home(key), []).append(key)
        if ask:
            await self._ensure()
            dirs = list(ask)
            got = await self._gather(
                "dir", [self._r.hmget(self._sp[d] + "dir", ask[d]) for d in dirs]
            )
            for d, shards in zip(dirs, got, strict=True):
                for key, s in zip(ask[d], shards, strict=True):
                    if s is None:
                        out[key] = self._home(key)
                    else:
                        out[key] = self._dir[key] = int(s)
        return out

    async def _shard_of_key(self, key: str) -> int:
        await self._ensure()
        return (await self._shards_of([key]))[key]

    async def _url_shards(self, urls: Sequence[str]) -> list[int]:
        await self._ensure()
        if self._key_of is None:
            return [self._home(u) for u in urls]
        keys = [self._key_of(u) for u in urls]
        found = await self._shards_of(list(dict.fromkeys(keys)))
        return [found[k] for k in keys]

    # -- the seen-set and queueing ------------------------------------------------------------
    def _seen_args(self, url: str) -> list[Any]:
        if self.seen_mode == "bloom":
            return list(bloom_positions(url, self._bloom_m, self._bloom_k))
        return [url_digest(url)]

    async def _seen_flags(self, urls: Sequence[str], set_: bool) -> list[int]:
        groups: dict[int, list[int]] = {}
        for i, s in enumerate(await self._url_shards(urls)):
            groups.setdefault(s, []).append(i)
        order = list(groups)
        calls: list[Awaitable[Any]] = []
        for s in order:
            idx = groups[s]
            if self.seen_mode == "bloom":
                args: list[Any] = [self._bloom_k, "1" if set_ else "0"]
                for i in idx:
                    args.extend(self._seen_args(urls[i]))
                calls.append(self._run("bloom", s, args))
            else:
                digests = [url_digest(urls[i]) for i in idx]
                if set_:
                    calls.append(self._r.sadd(self._sp[s] + "seen", *digests))
                else:
                    calls.append(self._r.smismember(self._sp[s] + "seen", digests))
        flags = [0] * len(urls)
        for s, res in zip(order, await self._gather("seen", calls), strict=True):
            if isinstance(res, list):
                for i, f in zip(groups[s], res, strict=True):
                    flags[i] = int(f)
        return flags

    async def unseen(self, urls: Sequence[str]) -> list[str]:
        if not urls:
            return []
        if self._key_of is None:  # keys unknown here (``--politeness-key ip``): add decides
            return list(urls)
        flags = await self._seen_flags(urls, False)
        return [u for u, f in zip(urls, flags, strict=True) if not f]

    async def mark_seen(self, urls: Sequence[str]) -> None:
        if urls:
            await self._seen_flags(urls, True)

    async def add(self, entries: Sequence[UrlEntry]) -> list[bool]:
        """Queue entries not seen before (test-and-set in one script per shard); True where
        queued."""
        if not entries:
            return []
        await self._ensure()
        await self._place({e.key: e.ip for e in entries})
        bloom = self.seen_mode == "bloom"
        groups: dict[int, list[int]] = {}
        for i, e in enumerate(entries):
            groups.setdefault(self._dir[e.key], []).append(i)
        order = list(groups)
        calls = []
        for s in order:
            idx = groups[s]
            args: list[Any] = ["b" if bloom else "e", self._bloom_k if bloom else 1, len(idx)]
            for i in idx:
                e = entries[i]
                args += [e.url, e.key, _entry_json(e), _f(-e.priority), _f(e.not_before), e.ip]
                args += self._seen_args(e.url)
            calls.append(self._run("add", s, args, touch=False))
        out = [False] * len(entries)
        for s, flags in zip(order, await self._gather("add", calls), strict=True):
            *queued, changed = flags
            for i, f in zip(groups[s], queued, strict=True):
                out[i] = bool(int(f))
            if int(changed):  # a key not leased got URLs: the shard's cached peek is old
                self._touch[s] += 1
        return out

    async def push_back(self, entry: UrlEntry, *, front: bool = False) -> None:
        """A URL of a leased key to try later (retry, or after robots.txt)."""
        await self._ensure()
        held = self._held.get(entry.key)
        if held is None:
            await self._place({entry.key: entry.ip})
        shard = held[1] if held is not None else self._dir[entry.key]
        self._flight.pop(entry.url, None)
        await self._run(
            "push",
            shard,
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
        held = self._held.get(key)
        if held is None:
            return None
        token, shard = held
        self._last_now = max(self._last_now, now)
        args = [key, token, _f(now), _f(now + self.lease_ttl_s)]
        res = await self._run("pop", shard, args, touch=False)
        if res == -1:
            self._lost(key)
            return None
        if res is None:
            return None
        url, meta, refetch = res
        entry = _entry_from(_s(url), meta, bool(int(refetch)))
        if len(self._flight) > 100_000:
            self._flight.clear()
        self._flight[entry.url] = shard
        return entry

    async def finish(self, url: str, outcome: str) -> None:
        shard = self._flight.pop(url, None)
        if shard is None:
            shard = (await self._url_shards([url]))[0]
        await self._run("finish", shard, [url, outcome, self._outcome_cap], touch=False)

    async def drop_queued(self, key: str, outcome: str) -> int:
        """Finish every queued URL of a key (the site became excluded or unreachable)."""
        shard = await self._shard_of_key(key)
        return int(await self._run("drop", shard, [key, outcome, self._outcome_cap]))

    async def reprioritize(self, items: Sequence[tuple[str, str, float]]) -> int:
        """New priorities for queued ``(url, key, priority)`` (URLs in flight keep theirs)."""
        if not items:
            return 0
        await self._ensure()
        where = await self._shards_of(list(dict.fromkeys(k for _, k, _ in items)))
        groups: dict[int, list[Any]] = {}
        for url, key, prio in items:
            groups.setdefault(where[key], []).extend([url, _f(-prio), _f(prio)])
        total = 0
        for s, args in groups.items():
            for i in range(0, len(args), 3 * _BATCH):
                total += int(await self._run("reprioritize", s, args[i : i + 3 * _BATCH]))
        return total

    async def trim(self, max_queued: int) -> int:
        """Drop the lowest-priority queued URLs beyond ``max_queued`` (``--max-queue``), at
        most ``_BATCH`` a call (the crawler calls it every second): the shards' lowest are
        merged, and each shard drops its share of the crawl-wide lowest."""
        await self._ensure()
        r = self._r
        queued = await self._gather("trim", [r.hget(p + "stat", "queued") for p in self._sp])
        counts = [int(q or 0) for q in queued]
        excess = min(sum(counts) - max_queued, _BATCH)
        if excess <= 0:
            return 0
        worst = await self._gather(
            "trim", [r.zrange(p + "worst", 0, excess - 1, withscores=True) for p in self._sp]
        )
        low = sorted((float(sc), s) for s, rows in enumerate(worst) for _, sc in rows)[:excess]
        share = [0] * self.shards
        for _, s in low:
            share[s] += 1
        calls = [
            self._run("trim", s, [counts[s] - n, n, self._outcome_cap])
            for s, n in enumerate(share)
            if n
        ]
        return sum(int(n) for n in await self._gather("trim", calls))

    # -- leases -------------------------------------------------------------------------------
    async def lease(self, now: float) -> str | None:
        """The due key holding the best URL, leased to this worker until released or expired.

        Each shard is asked what its best due key is (the script that also reclaims expired
        leases and promotes due keys there: a "peek"), then the best shard is asked to lease
        it (crawl-wide order: the longest-overdue first, then the best URL, then the key).
        With ``peek_cache_s``, a shard's view is reused for that long unless this worker
        changed what the shard may have ready, or its next time has come: what other workers
        did there meanwhile is seen that much later (a lease is always decided by the shard)."""
        await self._ensure()
        self._last_now = max(self._last_now, now)
        common = [_f(now), _f(now + self.lease_ttl_s)]
        rest = [_f(self._reclaim_s), _f(self.max_wait_s)]
        views = await self._views(now, common, rest)
        ranked: list[tuple[int, float, float, str, int]] = []
        for s, (key, score, oldest, _) in views.items():
            if key is not None:
                overdue = oldest is not None and oldest <= now - self.max_wait_s
                first = oldest if overdue and oldest is not None else 0.0
                ranked.append((0 if overdue else 1, first, score, key, s))
        for *_, s in sorted(ranked):
            token = f"{self.worker_id}/{next(self._tokens)}"
            key_raw, n, host_raw, after = await self._run(
                "lease", s, [*common, token, *rest, "take"], touch=False
            )
            views[s] = self._remember(s, after)
            if n:
                self.refetches += int(n)
                log.warning("reclaimed expired leases: %d URLs will be re-fetched", n)
            if key_raw is not None:
                key = _s(key_raw)
                self._held[key] = (token, s)
                # the site's state as leased: while the lease holds only this worker writes it
                self._hosts[key] = None if host_raw is None else _s(host_raw)
                if self._heartbeat and (self._beat is None or self._beat.done()):
                    self._beat = asyncio.create_task(self._beat_loop())
                return key
        times = [v[3] for v in views.values() if v[3] is not None]
        self._wake = (time.monotonic(), self._calls, min(times) if times else None)
        return None

    def _remember(
        self, s: int, peek: Sequence[Any]
    ) -> tuple[str | None, float, float | None, float | None]:
        """A shard's view as a peek (or the end of a take) reported it; cached."""
        _, key, score, oldest, box, leases = peek
        times = [float(t) for t in (box, leases) if t is not None]
        view = (
            None if key is None else _s(key),
            0.0 if score is None else float(score),
            None if oldest is None else float(oldest),
            min(times) if times else None,
        )
        self._peeks[s] = (time.monotonic(), self._touch[s], view)
        return view

    async def _views(
        self, now: float, common: list[str], rest: list[str]
    ) -> dict[int, tuple[str | None, float, float | None, float | None]]:
        """Per shard: (best due key or None, its score, oldest due-since, next time)."""
        mono = time.monotonic()
        views = {}
        stale = []
        for s in range(self.shards):
            c = self._peeks.get(s)
            if (
                c is not None
                and c[1] == self._touch[s]
                and mono - c[0] < self._peek_cache_s
                and (c[2][0] is not None or c[2][3] is None or c[2][3] > now)
            ):
                views[s] = c[2]
            else:
                stale.append(s)
        peeks = await self._gather(
            "lease",
            [self._run("lease", s, [*common, "", *rest, "peek"], touch=False) for s in stale],
        )
        reclaimed = 0
        for s, peek in zip(stale, peeks, strict=True):
            reclaimed += int(peek[0])
            views[s] = self._remember(s, peek)
        if reclaimed:
            self.refetches += reclaimed
            log.warning("reclaimed expired leases: %d URLs will be re-fetched", reclaimed)
        return views

    async def begin_request(self, key: str, state: HostState) -> None:
        """Before a request: save the host's provisional state (its ``next_allowed`` already a
        full delay ahead, so a reclaim after a crash mid-request waits it) and renew the lease.
        Raises ``LeaseLost`` if the lease expired: the request must not go out, since another
        worker may hold the key now (the popped URL is already queued again, as a re-fetch)."""
        held = self._held.get(key)
        token, shard = held if held is not None else ("", await self._shard_of_key(key))
        js = host_to_json(state)
        args = [key, token, js, _f(state.last_start + self.lease_ttl_s)]
        ok = await self._run("begin", shard, args, touch=False)
        if int(ok):
            self._hosts[key] = js
        if not int(ok):
            self._lost(key)
            raise LeaseLost(f"lease on {key} expired: request not sent")

    async def release(self, key: str, state: HostState) -> None:
        """Save the key's politeness state and put it back in the box if URLs remain."""
        held = self._held.pop(key, None)
        token, shard = held if held is not None else ("", await self._shard_of_key(key))
        self._hosts.pop(key, None)
        args = [
            key,
            token,
            host_to_json(state),
            _f(state.next_allowed),
            _f(state.last_start),
            _f(state.ip_next),
        ]
        ok = await self._run("release", shard, args, touch=False)
        cached = self._peeks.get(shard)
        if cached is not None:  # the key (or the next one of its IP) is back in the box
            at, touch, (top, score, oldest, nxt) = cached
            soon = min(state.next_allowed, state.ip_next or state.next_allowed)
            nxt = soon if nxt is None else min(nxt, soon)
            self._peeks[shard] = (at, touch, (top, score, oldest, nxt))
        if not int(ok) and held is not None:
            self.lost_leases += 1
            log.warning("lease on %s had expired before its release", key)

    async def renew(self, key: str, now: float) -> bool:
        """Extend this worker's lease on ``key`` to ``now + lease_ttl_s``; False if lost."""
        held = self._held.get(key)
        if held is None:
            return False
        args = [_f(now + self.lease_ttl_s), key, held[0]]
        lost = await self._run("renew", held[1], args, touch=False)
        if lost:
            self._lost(key)
            return False
        return True

    async def renew_held(self, now: float) -> list[str]:
        """Extend every lease this worker holds; returns the keys it had lost."""
        if not self._held:
            return []
        groups: dict[int, list[Any]] = {}
        for key, (token, s) in self._held.items():
            groups.setdefault(s, [_f(now + self.lease_ttl_s)]).extend([key, token])
        res = await self._gather(
            "renew", [self._run("renew", s, args, touch=False) for s, args in groups.items()]
        )
        lost = [_s(k) for keys in res for k in keys]
        for key in lost:
            self._lost(key)
        return lost

    def _lost(self, key: str) -> None:
        self._hosts.pop(key, None)
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
        anywhere may bring URLs back), or None when the crawl has nothing left anywhere.
        With ``peek_cache_s``, what a ``lease`` that found nothing just saw is reused."""
        await self._ensure()
        cached, self._wake = self._wake, None
        if (
            cached is not None
            and cached[1] == self._calls
            and time.monotonic() - cached[0] < self._peek_cache_s
            and cached[2] is not None  # "nothing left" is always asked of the shards
        ):
            return cached[2]
        mono = time.monotonic()
        views = [self._peeks.get(s) for s in range(self.shards)]
        if self._peek_cache_s > 0 and all(
            c is not None and c[1] == self._touch[s] and mono - c[0] < self._peek_cache_s
            for s, c in enumerate(views)
        ):  # every shard peeked just now: no round trip
            fresh = [c[2] for c in views if c is not None]
            if any(v[0] is not None for v in fresh):
                return 0.0
            soon = [v[3] for v in fresh if v[3] is not None]
            if soon:
                return float(min(soon))
        try:
            pipe = self._r.pipeline(transaction=False)
            for p in self._sp:
                pipe.zcard(p + "ready")
                pipe.zrange(p + "box", 0, 0, withscores=True)
                pipe.zrange(p + "leases", 0, 0, withscores=True)
            res = await pipe.execute()
        except RedisError as exc:
            raise self._fail("next_wake", exc) from exc
        times: list[float] = []
        for i in range(0, len(res), 3):
            n_ready, box, leases = res[i : i + 3]
            if n_ready:
                return 0.0
            times += [float(sc) for _, sc in (*box, *leases)]
        return min(times) if times else None

    # -- host state and robots -----------------------------------------------------------------
    async def host(self, key: str) -> HostState:
        if key in self._held and key in self._hosts:  # as leased, or as this worker saved it
            js = self._hosts[key]
            return HostState(key=key) if js is None else host_from_json(key, js)
        shard = await self._shard_of_key(key)
        try:
            data = await self._r.hget(self._sp[shard] + "hosts", key)
        except RedisError as exc:
            raise self._fail("host", exc) from exc
        return HostState(key=key) if data is None else host_from_json(key, _s(data))

    async def robots(self, origin: str) -> RobotsRecord | None:
        await self._ensure()
        try:
            data = await self._r.hget(self._sp[self._home(origin)] + "robots", origin)
        except RedisError as exc:
            raise self._fail("robots", exc) from exc
        if data is None:
            return None
        return _unpack_robots(origin, data if isinstance(data, bytes) else data.encode())

    async def save_robots(self, record: RobotsRecord) -> None:
        await self._ensure()
        cap = max(1, -(-self._robots_cap // self.shards))
        await self._run(
            "save_robots", self._home(record.origin), [record.origin, _pack_robots(record), cap]
        )

    # -- conditional GET ----------------------------------------------------------------------
    async def validators(self, url: str) -> tuple[str | None, str | None, float] | None:
        """ETag, Last-Modified and fetch time of the last stored copy of ``url``."""
        await self._ensure()
        try:
            data = await self._r.hget(self._sp[self._home(url)] + "pages", url_digest(url))
        except RedisError as exc:
            raise self._fail("validators", exc) from exc
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
            await self._r.hset(self._sp[self._home(url)] + "pages", url_digest(url), value)
        except RedisError as exc:
            raise self._fail("save_validators", exc) from exc

    # -- bookkeeping --------------------------------------------------------------------------
    async def add_counters(self, delta: dict[str, int]) -> None:
        items = [(k, v) for k, v in delta.items() if v]
        if not items:
            return
        await self._ensure()
        await self._gather(
            "counters", [self._r.hincrby(self._p + "counters", k, v) for k, v in items]
        )

    async def counters(self) -> dict[str, int]:
        await self._ensure()
        try:
            raw = await self._r.hgetall(self._p + "counters")
        except RedisError as exc:
            raise self._fail("counters", exc) from exc
        return {_s(k): int(v) for k, v in raw.items()}

    async def stats(self) -> dict[str, int]:
        await self._ensure()
        st = await _raw_stats(self._r, self._sp, self.seen_mode == "bloom", self._clock())
        return {
            "queued": st["queued"],
            "hosts_waiting": st["hosts_waiting"],
            "ready": st["ready"],
            "parked": st["parked"],
            "in_flight": st["leases"],
            "seen": st["seen"],
            "seen_bytes": self._bloom_m * self.shards // 8 if self.seen_mode == "bloom" else 0,
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
        if self._r is None:
            return
        try:
            if self._held and self._ready:
                groups: dict[int, list[Any]] = {}
                for key, (token, s) in self._held.items():
                    groups.setdefault(s, [_f(self._last_now), _f(self._reclaim_s)])
                    groups[s] += [key, token]
                self._held.clear()
                await self._gather(
                    "give_back", [self._run("give_back", s, a) for s, a in groups.items()]
                )
        finally:
            await self._r.aclose()


async def _raw_stats(r: Client, ps: Sequence[str], bloom: bool, now: float) -> dict[str, int]:
    try:
        pipe = r.pipeline(transaction=False)
        for p in ps:
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
        res = await pipe.execute()
    except RedisError as exc:
        raise FrontierError(f"frontier failed (stats): {exc}") from exc
    out = dict.fromkeys(("queued", "hosts_waiting", "ready", "parked", "leases", "seen"), 0)
    for i in range(0, len(res), 8):
        queued, box, ready, due, parked, leases, waiting, seen = res[i : i + 8]
        out["queued"] += int(queued or 0)
        out["hosts_waiting"] += int(box) + int(ready) + int(waiting)
        out["ready"] += int(ready) + int(due)
        out["parked"] += int(parked)
        out["leases"] += int(leases)
        out["seen"] += int(seen or 0)
    return out


async def status(url: str, crawl_id: str = "default") -> dict[str, Any]:
    """What ``politecrawl status --frontier URL`` prints: the shared crawl at a glance."""
    p = prefix(crawl_id)
    r = await connect(url)
    try:
        try:
            conf = {_s(a): _s(b) for a, b in (await r.hgetall(p + "conf")).items()}
        except (RedisError, OSError) as exc:
            raise FrontierError(f"cannot reach the frontier at {url}: {exc}") from exc
        bloom = conf.get("seen_mode") == "bloom"
        n = int(conf.get("shards", DEFAULT_SHARDS))
        ps = [shard_prefix(crawl_id, i) for i in range(n)]
        st = await _raw_stats(r, ps, bloom, time.time())
        try:
            pipe = r.pipeline(transaction=False)
            for sp in ps:
                pipe.zrange(sp + "leases", 0, -1, withscores=True)
                pipe.hgetall(sp + "owner")
                pipe.hgetall(sp + "outcome_counts")
                pipe.zrange(sp + "box", 0, 0, withscores=True)
                pipe.hlen(sp + "meta")
            pipe.hgetall(p + "counters")
            res = await pipe.execute()
        except RedisError as exc:
            raise FrontierError(f"frontier {url} failed (status): {exc}") from exc
        leases: list[tuple[str, float]] = []
        owners: dict[str, str] = {}
        outcomes: dict[str, int] = {}
        nxt: list[float] = []
        n_open = 0
        for i in range(0, 5 * n, 5):
            ls, owner_raw, outcome_raw, box, n_meta = res[i : i + 5]
            leases += [(_s(k), float(exp)) for k, exp in ls]
            owners.update({_s(k): _s(v) for k, v in owner_raw.items()})
            for k, v in outcome_raw.items():
                outcomes[_s(k)] = outcomes.get(_s(k), 0) + int(v)
            nxt += [float(sc) for _, sc in box]
            n_open += int(n_meta)
        counters = {_s(k): int(v) for k, v in res[-1].items()}
        return {
            "crawl_id": crawl_id,
            "exists": bool(conf),
            "seen_mode": conf.get("seen_mode", "exact"),
            "shards": n,
            "cluster": isinstance(r, aioredis.RedisCluster),
            "queued": st["queued"],
            "urls_open": n_open,  # queued + in flight: not finished yet
            "hosts_waiting": st["hosts_waiting"],
            "hosts_ready": st["ready"],
            "hosts_parked": st["parked"],
            "next_due": min(nxt) if nxt else None,
            "leases_held": st["leases"],
            "leases": [
                {"key": k, "worker": owners.get(k, "").rpartition("/")[0], "expires_at": exp}
                for k, exp in sorted(leases, key=lambda kv: kv[1])
            ],
            "seen": st["seen"],
            "counters": dict(sorted(counters.items())),
            "outcomes": dict(sorted(outcomes.items())),
        }
    finally:
        await r.aclose()


__all__ = [
    "DEFAULT_SHARDS",
    "LeaseLost",
    "RedisFrontier",
    "bloom_positions",
    "bloom_sizing",
    "connect",
    "prefix",
    "shard_index",
    "shard_prefix",
    "split_url",
    "status",
    "url_digest",
]
