"""The shared frontier's queues and leases in Redis/Valkey (the ``Frontier`` protocol),
spread over the crawl's shards; its connection, seen-set and site states are the
``RedisStore``'s. The key layout and the scripts' contracts are in ``frontier.redis``."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any

from politecrawl.config import MAX_WAIT_S
from politecrawl.errors import FrontierError, LeaseLost
from politecrawl.frontier import Addresses, Lease, Outbox, Refusals, UrlEntry
from politecrawl.frontier.redis.keys import BATCH, entry_from, entry_json, fnum, text
from politecrawl.frontier.redis.moves import Moves
from politecrawl.frontier.redis.store import RedisStore, host_of_stored
from politecrawl.frontier.redis.views import ShardViews, View
from politecrawl.frontier.sqlitestore import host_to_json
from politecrawl.polite import politeness
from politecrawl.polite.politeness import HostState

log = logging.getLogger("politecrawl.frontier.redis")

_FRONTIER_OPTIONS = (
    "lease_ttl_s", "reclaim_delay_s", "outcome_log_size", "heartbeat", "worker_id",
    "max_wait_s", "peek_cache_s", "defer_ratio",
)  # fmt: skip
_DEFER_POLL_S = 0.05  # deferring to a key another worker holds: how soon to look again


class RedisFrontier:
    """The ``Frontier`` protocol's shared backend (see ``frontier.redis``)."""

    def __init__(
        self,
        store: RedisStore,
        *,
        lease_ttl_s: float = 60.0,
        reclaim_delay_s: float = 15.0,
        outcome_log_size: int = 100_000,
        heartbeat: bool = True,
        clock: Callable[[], float] = time.time,
        worker_id: str | None = None,
        max_wait_s: float = MAX_WAIT_S,
        peek_cache_s: float = 0.0,
        defer_ratio: float = 0.0,
    ) -> None:
        if lease_ttl_s <= 0:
            raise FrontierError("lease_ttl_s must be > 0")
        self.store = store
        self.lease_ttl_s = lease_ttl_s
        self.max_wait_s = max_wait_s
        self._reclaim_s = reclaim_delay_s
        self._outcome_cap = outcome_log_size
        self._heartbeat = heartbeat
        self._clock = clock
        self.worker_id = worker_id or f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(3)}"
        self._tokens = itertools.count(1)
        self._flight: dict[str, tuple[int, str]] = {}  # URL popped here -> (shard, key)
        # per held key: (url, outcome) pairs finished this turn, sent with its release (one
        # script instead of one per URL; a crash before it re-fetches them, as mid-turn)
        self._done: dict[str, list[str]] = {}
        self._held: dict[str, tuple[str, int]] = {}  # key -> (lease token, shard)
        self._timers: dict[str, asyncio.TimerHandle] = {}  # held key -> its request's timer
        self._telling: set[asyncio.Future[Any]] = set()  # asking_long.lua calls under way
        self._states: dict[str, HostState] = {}  # held key -> its state, as the turn keeps it
        self._first: dict[str, UrlEntry] = {}  # held key -> its first URL, popped by the lease
        self._taken: list[Lease] = []  # leased by a release (release_take), for the next lease
        self._last_now = 0.0
        self._beat: asyncio.Task[None] | None = None
        self._views = ShardViews(store, peek_cache_s, max_wait_s, defer_ratio)
        self._policy = "1" if defer_ratio else ""  # the lease script's flag (lease.lua)
        self._wake: tuple[float, int, float | None] | None = None  # (at, calls, wake)
        self._reclaimed = 0  # URLs this worker found to re-fetch (expired leases)
        self.moves = Moves(store, lease_ttl_s)  # hosts that moved to another server
        self.lost_leases = 0  # leases this worker held that expired under it
        store.closing.append(self._give_back)

    @classmethod
    def open(cls, url: str, crawl_id: str = "default", **options: Any) -> RedisFrontier:
        """A store for ``url`` and the crawl's queues on it: ``options`` go to whichever
        takes them."""
        mine = {k: v for k, v in options.items() if k in _FRONTIER_OPTIONS}
        store = RedisStore(url, crawl_id, **{k: v for k, v in options.items() if k not in mine})
        return cls(store, **mine)

    @property
    def refetches(self) -> int:
        """URLs found in flight under expired leases, to be fetched again."""
        return self.store.refetched + self._reclaimed

    @property
    def addresses(self) -> Addresses | None:
        """Where a URL's request would connect now: the IP rule follows moving hosts."""
        return self.moves.addresses

    @addresses.setter
    def addresses(self, where: Addresses | None) -> None:
        self.moves.addresses = where

    @property
    def outbox(self) -> Outbox | None:
        """None: a shared frontier is not partitioned over processes (it is shared already)."""
        return None

    @property
    def refusals(self) -> Refusals | None:
        """None: a shared crawl keeps its scope with the crawl (``seed``), not refusals."""
        return None

    @property
    def crawl_id(self) -> str:
        return self.store.crawl_id

    @property
    def cluster(self) -> bool:
        return self.store.cluster

    async def queued_counts(self, keys: Sequence[str]) -> dict[str, int]:
        """URLs each key still has queued (its ``q:`` and ``d:`` sets, one round trip)."""
        return await self.store.queued_counts(keys)

    # -- queueing -----------------------------------------------------------------------------
    async def add(self, entries: Sequence[UrlEntry]) -> list[bool]:
        """Queue entries not seen before (test-and-set in one script per shard); True where
        queued."""
        if not entries:
            return []
        await self.store.ensure()
        await self.store.place({e.key: e.ip for e in entries})
        bloom = self.store.seen_mode == "bloom"
        groups: dict[int, list[int]] = {}
        for i, e in enumerate(entries):
            groups.setdefault(self.store.dir[e.key], []).append(i)
        order = list(groups)
        calls = []
        for s in order:
            idx = groups[s]
            args: list[Any] = ["b" if bloom else "e", self.store.bloom_k if bloom else 1, len(idx)]
            for i in idx:
                e = entries[i]
                args += [
                    e.url,
                    e.key,
                    entry_json(e, new=True),
                    fnum(-e.priority),
                    fnum(e.not_before),
                    e.ip,
                ]
                args += self.store.seen_args(e.url)
            calls.append((s, args))
        out = [False] * len(entries)
        replies = await self.store.run_many("add", calls, touch=False)
        # queued or not, every entry's URL is in the seen-set now (add.lua tests and sets it)
        self.store.known.update(e.url for e in entries)
        for s, flags in zip(order, replies, strict=True):
            *queued, changed = flags
            for i, f in zip(groups[s], queued, strict=True):
                out[i] = bool(int(f))
            if int(changed):  # a key not leased got URLs: the shard's cached peek is old
                self.store.touch[s] += 1
        return out

    async def push_back(self, entry: UrlEntry, *, front: bool = False) -> None:
        """A URL of a leased key to try later (retry, or after robots.txt)."""
        await self.store.ensure()
        held = self._held.get(entry.key)
        if held is None:
            await self.store.place({entry.key: entry.ip})
        shard = held[1] if held is not None else self.store.dir[entry.key]
        self._flight.pop(entry.url, None)
        self.store.new_urls.discard(entry.url)
        await self.store.run(
            "push",
            shard,
            [
                entry.key,
                entry.url,
                entry_json(entry),
                fnum(-entry.priority),
                fnum(entry.not_before),
                "1" if front else "0",
            ],
        )

    async def pop_url(self, key: str, now: float) -> UrlEntry | None:
        """The best URL of a key this worker leased that may be fetched now; renews the lease."""
        held = self._held.get(key)
        if held is None:
            return None
        first = self._first.pop(key, None)
        if first is not None:
            return first  # popped by the lease (due at its time)
        token, shard = held
        self._last_now = max(self._last_now, now)
        args = [key, token, fnum(now), fnum(now + self.lease_ttl_s)]
        res = await self.store.run("pop", shard, args, touch=False)
        if res == -1:
            self._lost(key)
            await self._finish_now(key, shard)
            return None
        if res is None:
            return None
        return self._in_flight(res, shard, key)

    def _in_flight(self, popped: Sequence[Any], shard: int, key: str) -> UrlEntry:
        url, meta, refetch = popped
        entry, new = entry_from(text(url), meta, bool(int(refetch)))
        if len(self._flight) > 100_000:
            self._flight.clear()
            self.store.new_urls.clear()
        self._flight[entry.url] = (shard, key)
        if new:  # never fetched: the store need not ask for its validators
            self.store.new_urls.add(entry.url)
        else:
            self.store.new_urls.discard(entry.url)
        return entry

    async def finish(self, url: str, outcome: str) -> None:
        """Done with a popped URL. While its key is held here, the finish goes with the
        key's release (the turn's last call); else at once."""
        flight = self._flight.pop(url, None)
        self.store.new_urls.discard(url)
        if flight is not None and flight[1] in self._held:
            self._done.setdefault(flight[1], []).extend([url, outcome])
            return
        shard = flight[0] if flight is not None else (await self.store.url_shards([url]))[0]
        await self.store.run("finish", shard, [url, outcome, self._outcome_cap], touch=False)

    async def _finish_now(self, key: str, shard: int) -> None:
        """The key's deferred finishes sent at once (its lease was lost: no release follows)."""
        done = self._done.pop(key, [])
        calls = [
            (shard, [url, outcome, self._outcome_cap])
            for url, outcome in zip(done[::2], done[1::2], strict=True)
        ]
        await self.store.run_many("finish", calls, touch=False)

    async def drop_queued(self, key: str, outcome: str) -> int:
        """Finish every queued URL of a key (the site became excluded or unreachable)."""
        shard = await self.store.shard_of_key(key)
        return int(await self.store.run("drop", shard, [key, outcome, self._outcome_cap]))

    async def reprioritize(self, items: Sequence[tuple[str, str, float]]) -> int:
        """New priorities for queued ``(url, key, priority)`` (URLs in flight keep theirs)."""
        if not items:
            return 0
        await self.store.ensure()
        where = await self.store.shards_of(list(dict.fromkeys(k for _, k, _ in items)))
        groups: dict[int, list[Any]] = {}
        for url, key, prio in items:
            groups.setdefault(where[key], []).extend([url, fnum(-prio), fnum(prio)])
        total = 0
        for s, args in groups.items():
            for i in range(0, len(args), 3 * BATCH):
                total += int(await self.store.run("reprioritize", s, args[i : i + 3 * BATCH]))
        return total

    async def trim(self, max_queued: int) -> int:
        """Drop the lowest-priority queued URLs beyond ``max_queued`` (``--max-queue``), at
        most ``BATCH`` a call (the crawler calls it every second): the shards' lowest are
        merged, and each shard drops its share of the crawl-wide lowest."""
        await self.store.ensure()
        r = self.store.r
        sp = self.store.sp
        queued = await self.store.gather("trim", [r.hget(p + "stat", "queued") for p in sp])
        counts = [int(q or 0) for q in queued]
        excess = min(sum(counts) - max_queued, BATCH)
        if excess <= 0:
            return 0
        worst = await self.store.gather(
            "trim", [r.zrange(p + "worst", 0, excess - 1, withscores=True) for p in self.store.sp]
        )
        low = sorted((float(sc), s) for s, rows in enumerate(worst) for _, sc in rows)[:excess]
        share = [0] * self.store.shards
        for _, s in low:
            share[s] += 1
        calls = [
            self.store.run("trim", s, [counts[s] - n, n, self._outcome_cap])
            for s, n in enumerate(share)
            if n
        ]
        return sum(int(n) for n in await self.store.gather("trim", calls))

    # -- leases -------------------------------------------------------------------------------
    async def lease(self, now: float) -> Lease:
        """The due key holding the best URL, leased to this worker until released or expired.

        Each shard is asked what its best due key is (the script that also reclaims expired
        leases and promotes due keys there: a "peek"), then the best shard is asked to lease
        it (crawl-wide order: the longest-overdue first, then the best URL, then the key).
        With ``peek_cache_s``, a shard's view is reused for that long unless this worker
        changed what the shard may have ready, or its next time has come: what other workers
        did there meanwhile is seen that much later (a lease is always decided by the shard).
        With ``defer_ratio``, a shard whose best key is not worth a request now (``views``,
        ``frontier.not_worth_it``) is not asked; if that held any back, the lease says to ask
        again at the first box time, or in ``_DEFER_POLL_S`` (another worker's key)."""
        while self._taken:  # leased by a release's script (see ``release``)
            ready = self._taken.pop(0)
            # (unless the lease was lost meanwhile, or its host moved to a busy server)
            if ready.key in self._held and await self._on_its_server(ready, now):
                return ready
        await self.store.ensure()
        self._last_now = max(self._last_now, now)
        common = [fnum(now), fnum(now + self.lease_ttl_s)]
        rest = [fnum(self.max_wait_s)]
        views = await self._peek(now, common, rest)
        best = self._views.best(views.values())
        order, deferred = self._views.ranked(views, now, best)
        for s in order:
            token = f"{self.worker_id}/{next(self._tokens)}"
            args = [*common, token, *rest, "take", self._views.floor(best), self._policy]
            taken = await self._lease_script(s, args, now)
            views[s] = self._views.remember(s, taken[3])
            got = self._adopt(s, token, taken)
            if got is not None and await self._on_its_server(got, now):
                return got
            deferred = deferred or self._views.deferred(views[s], now, best)
        times = [v[3] for v in views.values() if v[3] is not None]
        if deferred:  # no busy loop: the better key's next time, or a look again soon
            times = [t for t in times if t > now] + [now + _DEFER_POLL_S]
            return Lease(None, min(times))
        self._wake = (time.monotonic(), self.store.calls, min(times) if times else None)
        return Lease(None, await self._next_wake())

    def _adopt(self, s: int, token: str, taken: Sequence[Any]) -> Lease | None:
        """What a take (lease.lua) on shard ``s`` leased with ``token``, now held here."""
        key_raw, _, host_raw, _, *first = taken
        if key_raw is None:
            return None
        key = text(key_raw)
        self._held[key] = (token, s)
        if first and first[0] is not None:  # the turn's first pop_url, done already
            self._first[key] = self._in_flight(first[0], s, key)
        self.moves.ip[key] = text(first[1]) if len(first) > 1 and first[1] else ""
        self.store.dir[key] = s
        if self._heartbeat and (self._beat is None or self._beat.done()):
            self._beat = asyncio.create_task(self._beat_loop())
        # the site's state as leased: while the lease holds only this worker writes it
        host = host_of_stored(key, host_raw)
        self._states[key] = host  # (as the turn updates it: for a give-back at close)
        return Lease(host)

    async def _on_its_server(self, got: Lease, now: float) -> bool:
        """A key just leased holds the IP its request will go to (``moves``), else it was
        given back."""
        key = got.key or ""
        token, s = self._held[key]
        first = self._first.get(key)
        if await self.moves.check(key, token, s, first.url if first else None, now):
            return True
        self._held.pop(key, None)
        self._states.pop(key, None)
        self.moves.forget(key)
        if first is not None:  # queued again by the script
            self._first.pop(key, None)
            self._flight.pop(first.url, None)
        return False

    async def connected(self, key: str, ip: str) -> None:
        """The held key's request went to ``ip`` (``moves``)."""
        held = self._held.get(key)
        if held is not None:
            await self.moves.connected(key, held[0], held[1], ip, self._clock())

    async def _peek(self, now: float, common: list[str], rest: list[str]) -> dict[int, View]:
        """Every shard's view: reused while fresh (and its next time has not come), else
        asked of the shard."""
        mono = time.monotonic()
        views = {}
        stale = []
        for s in range(self.store.shards):
            v = self._views.fresh(s, mono)
            if v is not None and (v[0] is not None or v[3] is None or v[3] > now):
                views[s] = v
            else:
                stale.append(s)
        args = [*common, "", *rest, "peek", "", self._policy]
        peeks = await self.store.run_many("lease", [(s, args) for s in stale], touch=False)
        for i, s in enumerate(stale):
            if peeks[i][0] == -1:  # expired leases found there: reclaimed, then asked again
                await self._reclaim(s, peeks[i][1], now)
                peeks[i] = await self._lease_script(s, args, now)
        for s, peek in zip(stale, peeks, strict=True):
            views[s] = self._views.remember(s, peek)
        return views

    async def _lease_script(self, shard: int, args: list[Any], now: float) -> Any:
        """The lease script on one shard. Leases it finds expired come back instead (a worker
        died, or was too slow): they are reclaimed at the times ``politeness`` gives, and the
        script runs again (bounded: each pass reclaims up to 100)."""
        for _ in range(1000):
            res = await self.store.run("lease", shard, args, touch=False)
            if res[0] != -1:
                return res
            await self._reclaim(shard, res[1], now)
        raise FrontierError(f"shard {shard}: expired leases keep coming back")

    async def _reclaim(self, shard: int, found: Sequence[Any], now: float) -> None:
        args: list[Any] = [fnum(now)]
        for key_raw, host_raw in zip(found[::2], found[1::2], strict=True):
            key = text(key_raw)
            host = host_of_stored(key, host_raw)
            args += [key, *map(fnum, politeness.reclaim_times(host, now, self._reclaim_s))]
        n = int(await self.store.run("reclaim", shard, args))
        if n:
            self._reclaimed += n
            log.warning("reclaimed expired leases: %d URLs will be re-fetched", n)

    async def begin_request(self, key: str, state: HostState) -> None:
        """Before a request: save the host's provisional state (its ``next_allowed`` already a
        full delay ahead, so a reclaim after a crash mid-request waits it) and renew the lease.
        Raises ``LeaseLost`` if the lease expired: the request must not go out, since another
        worker may hold the key now (the popped URL is already queued again, as a re-fetch)."""
        held = self._held.get(key)
        token, shard = held if held is not None else ("", await self.store.shard_of_key(key))
        js = host_to_json(state)
        args = [key, token, js, fnum(state.last_start + self.lease_ttl_s)]
        ok = await self.store.run("begin", shard, args, touch=False)
        if not int(ok):
            self._lost(key)
            await self._finish_now(key, shard)
            raise LeaseLost(f"lease on {key} expired: request not sent")
        if self._policy and held is not None:
            self._time_answer(key, token, shard)

    def _time_answer(self, key: str, token: str, shard: int) -> None:
        """If the request now going out has had no answer after ``politeness.SLOW_ANSWER_S``,
        the key leaves its shard's ``soon`` set (``asking_long.lua``) until its release judges
        it again: a site that hangs is no reference for the budget policy
        (``politeness.only_its_turn``, which the SQLite frontier reads at each lease; the
        lease script here cannot read a site's live state). Without it, a focused crawl whose
        best site hung waited out the read timeout (tests/test_focus_stall.py)."""
        self._stop_timing(key)
        loop = asyncio.get_running_loop()
        later = politeness.SLOW_ANSWER_S
        self._timers[key] = loop.call_later(later, self._asking_long, key, token, shard)

    def _asking_long(self, key: str, token: str, shard: int) -> None:
        self._timers.pop(key, None)
        task = asyncio.ensure_future(self.store.run("asking_long", shard, [key, token]))
        self._telling.add(task)
        task.add_done_callback(self._told)

    def _told(self, task: asyncio.Future[Any]) -> None:
        self._telling.discard(task)
        if not task.cancelled() and task.exception() is not None:  # the turn's calls say it
            log.debug("could not mark a slow site: %s", task.exception())

    def _stop_timing(self, key: str) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    async def release(self, key: str, state: HostState) -> None:
        """Save the key's politeness state and put it back in the box if URLs remain."""
        held = self._held.pop(key, None)
        self._states.pop(key, None)
        self._first.pop(key, None)
        self._stop_timing(key)
        token, shard = held if held is not None else ("", await self.store.shard_of_key(key))
        await self.moves.free(key, token, state.ip_next)  # (a guest hold: the IP's time set)
        self.moves.forget(key)
        now = self._clock()
        args = [
            key,
            token,
            host_to_json(state),
            fnum(state.next_allowed),
            fnum(state.last_start),
            fnum(state.ip_next),
            self._outcome_cap,
            self._clean(state),  # a reference for the budget policy?
            *self._done.pop(key, ()),
        ]
        floor = self._views.take_after(shard, now) if held is not None else None
        if floor is not None:
            # this shard holds the next key the crawl would lease: leased by the same script,
            # given by the next ``lease`` (one round trip instead of two)
            token = f"{self.worker_id}/{next(self._tokens)}"
            lease_args = [fnum(now), fnum(now + self.lease_ttl_s), token, fnum(self.max_wait_s)]
            lease_args += ["take", floor, self._policy]
            (ok, _), taken = await self.store.run(
                "release_take", shard, [len(args), *args, *lease_args], touch=False
            )  # (the take's view has the shard's next time: a key its release called too)
            if taken[0] == -1:  # expired leases there: the next lease reclaims them
                self.store.touch[shard] += 1
            else:
                self._views.remember(shard, taken[3])
                got = self._adopt(shard, token, taken)
                if got is not None:
                    self._last_now = max(self._last_now, now)
                    self._taken.append(got)
            self._released(ok, held, key)
            return
        ok, called = await self.store.run("release", shard, args, touch=False)
        self._released(ok, held, key)
        # the key itself, or the next key of its IP's line the script called (due at once,
        # whatever this worker's own IP rule said of the IP's time)
        called_at = None if called is None else float(called)
        self._views.released(shard, politeness.released_soonest(state, called_at))

    def _clean(self, state: HostState) -> str:
        """release.lua's flag: whether the site waits for nothing but its ordinary turn (a
        reference for the budget policy), judged on the crawl's own clock; '' without the
        policy (nothing kept for it)."""
        if not self._policy:
            return ""
        now = max(self._last_now, state.last_start)
        return "1" if politeness.only_its_turn(state, now) else "0"

    def _released(self, ok: Any, held: tuple[str, int] | None, key: str) -> None:
        if not int(ok) and held is not None:
            self.lost_leases += 1
            log.warning("lease on %s had expired before its release", key)

    async def renew(self, key: str, now: float) -> bool:
        """Extend this worker's lease on ``key`` to ``now + lease_ttl_s``; False if lost."""
        held = self._held.get(key)
        if held is None:
            return False
        args = [fnum(now + self.lease_ttl_s), key, held[0]]
        lost = await self.store.run("renew", held[1], args, touch=False)
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
            groups.setdefault(s, [fnum(now + self.lease_ttl_s)]).extend([key, token])
        tokens = {key: token for key, (token, _) in self._held.items()}
        for s, pairs in self.moves.renewals(tokens).items():  # guest holds, with their keys
            groups.setdefault(s, [fnum(now + self.lease_ttl_s)]).extend(pairs)
        res = await self.store.run_many("renew", list(groups.items()), touch=False)
        lost = self.moves.lost([text(k) for keys in res for k in keys])
        for key in lost:
            self._lost(key)
        return lost

    def _lost(self, key: str) -> None:
        self.moves.forget(key)
        self._states.pop(key, None)
        self._first.pop(key, None)
        self._stop_timing(key)
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

    async def _next_wake(self) -> float | None:
        """0 if a key is due; else the earliest box time or lease expiry (``views``)."""
        cached, self._wake = self._wake, None
        return await self._views.next_wake(cached)

    async def _give_back(self) -> None:
        """Before the store disconnects: leases still held given back (their URLs queued again
        as re-fetches), the heartbeat stopped."""
        for key in list(self._timers):
            self._stop_timing(key)
        for task in list(self._telling):
            task.cancel()
        beat, self._beat = self._beat, None
        if beat is not None:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat
        if self._held and self.store.r is not None:
            for key, (_, s) in self._held.items():
                await self._finish_now(key, s)
            groups: dict[int, list[Any]] = {}
            for key, (token, s) in self._held.items():
                host = self._states.get(key) or HostState(key=key)
                times = politeness.reclaim_times(host, self._last_now, self._reclaim_s)
                groups.setdefault(s, []).extend([key, token, *map(fnum, times)])
                await self.moves.free(key, token, times[1])
            self._held.clear()
            self._states.clear()
            self._first.clear()
            self._taken.clear()
            await self.store.run_many("give_back", list(groups.items()))
