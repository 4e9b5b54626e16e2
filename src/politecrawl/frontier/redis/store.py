"""The shared crawl's state beside its queues, in Redis/Valkey (the ``CrawlStore`` protocol):
the connection and its shards, the seen-set, site states, robots.txt copies, validators and
counters. ``RedisFrontier`` (``frontier.redis.frontier``) runs its queue scripts through this
store's connection; the key layout is in ``frontier.redis``."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import orjson
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from politecrawl.errors import FrontierError
from politecrawl.frontier import RobotsRecord
from politecrawl.frontier.redis.batch import Batcher
from politecrawl.frontier.redis.keys import (
    BODIES,
    DEFAULT_SHARDS,
    LIB,
    SCRIPTS,
    Client,
    Script,
    bloom_positions,
    bloom_sizing,
    connect,
    loads,
    pack_robots,
    prefix,
    shard_index,
    shard_prefix,
    text,
    unpack_robots,
    url_digest,
)
from politecrawl.frontier.redis.known import SEEN_CACHE, KnownSeen
from politecrawl.frontier.redis.marks import (
    GUARD,
    check_calls,
    lost_message,
    lost_parts,
    mark_key,
)
from politecrawl.frontier.sqlitestore import host_from_dict
from politecrawl.polite.politeness import HostState
from politecrawl.urls.canonical import host_of
from politecrawl.urls.seen import SeenMode

log = logging.getLogger("politecrawl.frontier.redis")


class RedisStore:
    """The ``CrawlStore`` protocol's shared backend, and the connection its frontier uses."""

    def __init__(
        self,
        url: str,
        crawl_id: str = "default",
        *,
        seen_mode: SeenMode = "exact",
        expected_urls: int = 1_000_000,
        seen_fp_rate: float = 0.01,
        robots_cache_size: int = 1_000_000,
        clock: Callable[[], float] = time.time,
        shards: int = DEFAULT_SHARDS,
        key_of: Callable[[str], str] | None = host_of,
        seen_cache: int = SEEN_CACHE,
    ) -> None:
        if not 1 <= shards <= 4096:
            raise FrontierError("shards must be 1-4096")
        self.crawl_id = crawl_id
        self._p = prefix(crawl_id)  # the crawl's global keys: conf, counters, scope
        self.url = url
        self.r: Client = None
        self.batch: Batcher = Batcher(None)  # (on the client, once connected)
        self.seen_mode: SeenMode = seen_mode
        self._expected = expected_urls
        self._fp_rate = seen_fp_rate
        self._bloom_m = 0  # bits per shard
        self.bloom_k = 0
        self._want_shards = shards
        self.shards = shards  # what the crawl was started with (read at first use)
        self.sp: list[str] = []
        self._key_of = key_of
        self.dir: dict[str, int] = {}  # politeness key -> shard (immutable once recorded)
        self._robots_cap = robots_cache_size
        self._clock = clock
        self._ready = False
        self._init_lock = asyncio.Lock()
        self._scripts: dict[str, Script] = {}
        self.touch: list[int] = []  # per shard: scripts this worker ran there that may change it
        self.calls = 0
        self.refetched = 0  # URLs found to re-fetch (expired leases) when this store opened
        self._unsaved: dict[int, dict[bytes, str]] = {}  # validators to write: shard -> digest
        # URLs this worker's frontier popped that ``add`` queued and were not fetched since
        # (no validators can be stored for them: ``validators`` answers without a round trip)
        self.new_urls: set[str] = set()
        self.known = KnownSeen(seen_cache)  # URLs known to be in the shared seen-set
        self.cluster = False
        self.epoch = ""  # the crawl's (marks.py), read at first use
        # run before the connection closes (the frontier gives back the leases it holds)
        self.closing: list[Callable[[], Awaitable[None]]] = []

    # -- set-up ---------------------------------------------------------------------------
    async def ensure(self) -> None:
        if self._ready:
            return
        async with self._init_lock:
            if self._ready:
                return
            self.r = r = await connect(self.url)
            self.batch = Batcher(r)
            self.cluster = isinstance(r, aioredis.RedisCluster)
            for name in SCRIPTS:  # (each checks its shard's mark first: marks.py)
                self._scripts[name] = Script(LIB + GUARD + BODIES[name])
            mode = "bloom" if self.seen_mode == "bloom" else "exact"
            m, k = bloom_sizing(self._expected, self._fp_rate)
            try:
                raw = await Script(LIB + BODIES["conf"])(
                    r, self._p, [mode, m, k, self._want_shards, uuid.uuid4().hex]
                )
            except RedisError as exc:
                raise FrontierError(f"cannot use the frontier at {self.url}: {exc}") from exc
            stored, stored_m, stored_k = text(raw[0]), int(raw[1]), int(raw[2])
            if raw[3] is None:  # conf written before crawls were sharded: all in one slot
                raise FrontierError(
                    f"crawl {self.crawl_id!r} at {self.url} was started by an older politecrawl "
                    "(one slot per crawl); finish it with that version or use a new --crawl-id"
                )
            self.shards, self.epoch = int(raw[3]), text(raw[4])
            self.sp = [shard_prefix(self.crawl_id, i) for i in range(self.shards)]
            self.touch = [0] * self.shards
            await self._check_marks(raw[5] is not None)
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
                self._bloom_m, self.bloom_k = max(64, -(-stored_m // self.shards)), stored_k
            try:
                counts = await asyncio.gather(*(r.scard(p + "rf") for p in self.sp))
            except RedisError as exc:
                raise FrontierError(f"cannot use the frontier at {self.url}: {exc}") from exc
            self.refetched = sum(int(c) for c in counts)
            self._ready = True

    async def _check_marks(self, marked: bool) -> None:
        """Every shard marked with the crawl's epoch (the first worker writes the marks, then
        ``conf`` says so), and every mark still there: else the worker does not start. Then
        the batcher checks them after every reconnect, and now and then (marks.py)."""
        calls = check_calls(self._p, self.sp)
        try:
            if not marked:  # a new crawl (or one from before marks): what it has is marked
                await self.gather(
                    "marks",
                    [self.batch.command("SET", mark_key(p), self.epoch, "NX") for p in self.sp],
                )
            replies = await self.gather("marks", [self.batch.command(*c) for c in calls])
            gone = self.judge_marks(replies)
            if gone is not None:
                raise FrontierError(gone)
            if not marked:
                await self.batch.command("HSET", self._p + "conf", "marked", 1)
        except RedisError as exc:
            raise FrontierError(f"cannot use the frontier at {self.url}: {exc}") from exc
        self.batch.check = (list(calls), self.judge_marks)

    def judge_marks(self, replies: Sequence[Any]) -> str | None:
        """What ``check_calls`` replied, judged: the line to stop with, or None (all there)."""
        conf_lost, shards = lost_parts(self.epoch, replies)
        return lost_message(
            self.crawl_id, self.url, self.shards, conf_lost, shards, self._node_of
        )

    def _node_of(self, shard: int | None) -> str | None:
        """The cluster node that serves a shard's slot (None: the crawl's own slot)."""
        if not isinstance(self.r, aioredis.RedisCluster):
            return None
        key = self._p + "conf" if shard is None else mark_key(self.sp[shard])
        node = self.r.nodes_manager.get_node_from_slot(self.r.keyslot(key))
        return str(node.name) if node is not None else None

    def fail(self, what: str, exc: BaseException) -> FrontierError:
        if isinstance(exc, (RedisConnectionError, RedisTimeoutError)):
            return FrontierError(
                f"lost the frontier at {self.url} ({what}: {exc}): this worker stops; its "
                "leases expire and the other workers take its sites back"
            )
        return FrontierError(f"frontier {self.url} failed ({what}): {exc}")

    async def run(self, name: str, shard: int, args: list[Any], *, touch: bool = True) -> Any:
        """One script on one shard; every key it touches shares that shard's hash tag.
        ``touch``: it may change what the shard has ready (the cached peek is dropped).
        It goes with whatever else this worker's turns ask for meanwhile (``Batcher``)."""
        await self.ensure()
        self.calls += 1
        if touch:
            self.touch[shard] += 1
        try:
            return await self.batch.script(self._scripts[name], self.sp[shard], args)
        except RedisError as exc:
            raise self.fail(name, exc) from exc

    async def run_many(
        self, name: str, calls: Sequence[tuple[int, list[Any]]], *, touch: bool = True
    ) -> list[Any]:
        """Script ``name`` on several shards (shard, args), in one round trip (a pipeline,
        split by node on a cluster, with whatever else is asked for meanwhile)."""
        await self.ensure()
        self.calls += len(calls)
        script = self._scripts[name]
        futs = []
        for s, args in calls:
            if touch:
                self.touch[s] += 1
            futs.append(self.batch.script(script, self.sp[s], args))
        return await self.gather(name, futs)

    async def gather(self, what: str, calls: Sequence[Awaitable[Any]]) -> list[Any]:
        try:
            if len(calls) == 1:  # (most pages' links fall in one shard: no gathering future)
                return [await calls[0]]
            return list(await asyncio.gather(*calls))
        except RedisError as exc:
            raise self.fail(what, exc) from exc

    # -- which shard ----------------------------------------------------------------------
    def home(self, name: str) -> int:
        return shard_index(name, self.shards)

    async def place(self, pairs: dict[str, str]) -> None:
        """Record (first writer wins) the shard of each politeness key in ``pairs`` (key ->
        its IP or ""): the IP's shard, so every key of one server shares a slot."""
        todo: dict[int, list[Any]] = {}
        for key, ip in pairs.items():
            if key not in self.dir:
                todo.setdefault(self.home(key), []).extend([key, self.home(ip or key)])
        if not todo:
            return
        if len(self.dir) > 1_000_000:
            self.dir.clear()
        dirs = list(todo)
        got = await self.run_many("dir", [(d, todo[d]) for d in dirs])
        for d, shards in zip(dirs, got, strict=True):
            for key, s in zip(todo[d][::2], shards, strict=True):
                self.dir[key] = int(s)

    async def shards_of(self, keys: Sequence[str]) -> dict[str, int]:
        """The shard of each key: recorded, else (never queued) the key's own hash."""
        out: dict[str, int] = {}
        ask: dict[int, list[str]] = {}
        for key in keys:
            if key in self.dir:
                out[key] = self.dir[key]
            else:
                ask.setdefault(self.home(key), []).append(key)
        if ask:
            await self.ensure()
            dirs = list(ask)
            got = await self.gather(
                "dir", [self.batch.command("HMGET", self.sp[d] + "dir", *ask[d]) for d in dirs]
            )
            for d, shards in zip(dirs, got, strict=True):
                for key, s in zip(ask[d], shards, strict=True):
                    if s is None:
                        out[key] = self.home(key)
                    else:
                        out[key] = self.dir[key] = int(s)
        return out

    async def shard_of_key(self, key: str) -> int:
        await self.ensure()
        return (await self.shards_of([key]))[key]

    async def url_shards(self, urls: Sequence[str]) -> list[int]:
        await self.ensure()
        if self._key_of is None:
            return [self.home(u) for u in urls]
        keys = [self._key_of(u) for u in urls]
        found = await self.shards_of(list(dict.fromkeys(keys)))
        return [found[k] for k in keys]

    # -- the seen-set -----------------------------------------------------------------------
    def seen_args(self, url: str) -> list[Any]:
        if self.seen_mode == "bloom":
            return list(bloom_positions(url, self._bloom_m, self.bloom_k))
        return [url_digest(url)]

    async def _seen_flags(self, urls: Sequence[str], set_: bool) -> list[int]:
        groups: dict[int, list[int]] = {}
        for i, s in enumerate(await self.url_shards(urls)):
            groups.setdefault(s, []).append(i)
        order = list(groups)
        if self.seen_mode == "bloom":
            calls: list[tuple[int, list[Any]]] = []
            for s in order:
                args: list[Any] = [self.bloom_k, "1" if set_ else "0"]
                for i in groups[s]:
                    args.extend(self.seen_args(urls[i]))
                calls.append((s, args))
            got = await self.run_many("bloom", calls)
        else:
            command = "SADD" if set_ else "SMISMEMBER"
            got = await self.gather(
                "seen",
                [
                    self.batch.command(command, self.sp[s] + "seen", *map(url_digest, group))
                    for s in order
                    for group in [[urls[i] for i in groups[s]]]
                ],
            )
        flags = [0] * len(urls)
        for s, res in zip(order, got, strict=True):
            if isinstance(res, list):
                for i, f in zip(groups[s], res, strict=True):
                    flags[i] = int(f)
        return flags

    async def unseen(self, urls: Sequence[str]) -> list[str]:
        """The URLs not in the crawl's seen-set. Those this worker already knows to be in it
        (``KnownSeen``) are not asked about: the set only grows."""
        if not urls:
            return []
        if self._key_of is None:  # keys unknown here (``--politeness-key ip``): add decides
            return list(urls)
        known = self.known
        ask = [u for u in urls if u not in known]
        if not ask:
            return []
        flags = await self._seen_flags(ask, False)
        fresh = set()
        for u, f in zip(ask, flags, strict=True):
            if f:
                known.add(u)
            else:
                fresh.add(u)
        return [u for u in urls if u in fresh]

    async def mark_seen(self, urls: Sequence[str]) -> None:
        if urls:
            await self._seen_flags(urls, True)
            self.known.update(urls)

    # -- site states and robots --------------------------------------------------------------
    async def host(self, key: str) -> HostState:
        shard = await self.shard_of_key(key)
        try:
            data = await self.batch.command("HGET", self.sp[shard] + "hosts", key)
        except RedisError as exc:
            raise self.fail("host", exc) from exc
        return host_of_stored(key, data)

    async def robots(self, origin: str) -> RobotsRecord | None:
        await self.ensure()
        try:
            data = await self.batch.command("HGET", self.sp[self.home(origin)] + "robots", origin)
        except RedisError as exc:
            raise self.fail("robots", exc) from exc
        if data is None:
            return None
        return unpack_robots(origin, data if isinstance(data, bytes) else data.encode())

    async def save_robots(self, record: RobotsRecord) -> None:
        await self.ensure()
        cap = max(1, -(-self._robots_cap // self.shards))
        await self.run(
            "save_robots", self.home(record.origin), [record.origin, pack_robots(record), cap]
        )

    # -- conditional GET ----------------------------------------------------------------------
    async def validators(self, url: str) -> tuple[str | None, str | None, float] | None:
        """ETag, Last-Modified and fetch time of the last stored copy of ``url``."""
        await self.ensure()
        shard, digest = self.home(url), url_digest(url)
        data: bytes | str | None = self._unsaved.get(shard, {}).get(digest)
        try:
            if data is None and url not in self.new_urls:
                data = await self.batch.command("HGET", self.sp[shard] + "pages", digest)
        except RedisError as exc:
            raise self.fail("validators", exc) from exc
        if data is None:
            return None
        etag, modified, fetched_at = loads(data)
        return etag, modified, float(fetched_at)

    async def save_validators(
        self, url: str, etag: str | None, last_modified: str | None, fetched_at: float
    ) -> None:
        """Kept here until ``flush`` (about once a second) writes them, one command per shard:
        not one round trip per page. Lost in a crash: that page's next visit is unconditional."""
        self.new_urls.discard(url)
        value = orjson.dumps([etag, last_modified, fetched_at]).decode()
        self._unsaved.setdefault(self.home(url), {})[url_digest(url)] = value

    # -- bookkeeping --------------------------------------------------------------------------
    async def add_counters(self, delta: dict[str, int]) -> None:
        items = [(k, v) for k, v in delta.items() if v]
        if not items:
            return
        await self.ensure()
        key = self._p + "counters"
        await self.gather("counters", [self.batch.command("HINCRBY", key, k, v) for k, v in items])

    async def counters(self) -> dict[str, int]:
        await self.ensure()
        try:
            raw = await self.r.hgetall(self._p + "counters")
        except RedisError as exc:
            raise self.fail("counters", exc) from exc
        return {text(k): int(v) for k, v in raw.items()}

    async def stats(self) -> dict[str, int]:
        await self.ensure()
        st = await _raw_stats(self.r, self.sp, self.seen_mode == "bloom", self._clock())
        return {
            "queued": st["queued"],
            "hosts_waiting": st["hosts_waiting"],
            "ready": st["ready"],
            "parked": st["parked"],
            "in_flight": st["leases"],  # (every worker's)
            "waiting_for_ip": st["waiting_for_ip"],  # (in hosts_waiting too)
            "seen": st["seen"],
            "seen_bytes": self._bloom_m * self.shards // 8 if self.seen_mode == "bloom" else 0,
        }

    async def queued_counts(self, keys: Sequence[str]) -> dict[str, int]:
        """URLs each key has queued, due now or later (its ``q:`` and ``d:`` sets)."""
        if not keys:
            return {}
        shards = await self.shards_of(keys)
        got = await self.gather(
            "queued_counts",
            [
                self.batch.command("ZCARD", f"{self.sp[shards[k]]}{part}:{k}")
                for k in keys
                for part in ("q", "d")
            ],
        )
        return {k: int(got[2 * i]) + int(got[2 * i + 1]) for i, k in enumerate(keys)}

    async def flush(self) -> None:
        """The validators saved since the last flush; every other call is already applied
        (durability is the server's)."""
        unsaved, self._unsaved = self._unsaved, {}
        if unsaved:
            await self.ensure()
            await self.gather(
                "save_validators",
                [
                    self.batch.command("HSET", self.sp[s] + "pages", *itertools.chain(*m.items()))
                    for s, m in unsaved.items()
                ],
            )

    async def close(self) -> None:
        """What the frontier must do first (give back its leases), then disconnect."""
        try:
            if self.r is not None:
                await self.flush()
            for step in self.closing:
                await step()
        finally:
            if self.r is not None:
                await self.batch.aclose()
                await self.r.aclose()


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
    out = dict.fromkeys(
        ("queued", "hosts_waiting", "ready", "parked", "leases", "seen", "waiting_for_ip"), 0
    )
    for i in range(0, len(res), 8):
        queued, box, ready, due, parked, leases, waiting, seen = res[i : i + 8]
        out["queued"] += int(queued or 0)
        out["hosts_waiting"] += int(box) + int(ready) + int(waiting)
        out["ready"] += int(ready) + int(due)
        out["parked"] += int(parked)
        out["leases"] += int(leases)
        out["waiting_for_ip"] += int(waiting)
        out["seen"] += int(seen or 0)
    return out


async def status(url: str, crawl_id: str = "default") -> dict[str, Any]:
    """What ``politecrawl status --frontier URL`` prints: the shared crawl at a glance."""
    p = prefix(crawl_id)
    r = await connect(url)
    try:
        try:
            conf = {text(a): text(b) for a, b in (await r.hgetall(p + "conf")).items()}
        except (RedisError, OSError) as exc:
            raise FrontierError(f"cannot reach the frontier at {url}: {exc}") from exc
        bloom = conf.get("seen_mode") == "bloom"
        n = int(conf.get("shards", DEFAULT_SHARDS))
        ps = [shard_prefix(crawl_id, i) for i in range(n)]
        st = await _raw_stats(r, ps, bloom, time.time())
        try:
            pipe = r.pipeline(transaction=False)
            for sp in ps:
                pipe.get(mark_key(sp))
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
        marks = res[: 6 * n : 6]
        lost = lost_parts(conf.get("epoch", ""), [conf.get("epoch"), *marks])[1]
        for i in range(0, 6 * n, 6):
            ls, owner_raw, outcome_raw, box, n_meta = res[i + 1 : i + 6]
            leases += [(text(k), float(exp)) for k, exp in ls]
            owners.update({text(k): text(v) for k, v in owner_raw.items()})
            for k, v in outcome_raw.items():
                outcomes[text(k)] = outcomes.get(text(k), 0) + int(v)
            nxt += [float(sc) for _, sc in box]
            n_open += int(n_meta)
        counters = {text(k): int(v) for k, v in res[-1].items()}
        return {
            "crawl_id": crawl_id,
            "exists": bool(conf),
            # shards without the crawl's mark: their data was lost (marks.py); none before
            # the crawl's first worker marked them
            "lost_shards": lost if conf.get("marked") else [],
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


def host_of_stored(key: str, raw: bytes | str | None) -> HostState:
    """A key's state as its shard stores it (none yet: a fresh one)."""
    return HostState(key=key) if raw is None else host_from_dict(key, loads(raw))
