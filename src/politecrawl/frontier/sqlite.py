"""The embedded frontier: queued URLs live in SQLite, a small window per leased key in memory.

Memory grows with the number of politeness keys, not of URLs: per key a pending count and a
best priority; URLs are read into a window (``WINDOW`` at a time, best first) when the key is
leased, and between its turns a key keeps at most ``KEEP_BETWEEN_TURNS`` of them. The rest
of the crawl's state (the seen-set, site states, robots.txt copies,
validators, counters) is the ``SqliteStore`` (``frontier.sqlitestore``), whose connection and
transaction the queues share.

Writes go into one open transaction committed by ``flush`` (about once a second) and by
``begin_request`` before every request (WAL with synchronous=NORMAL makes that a write, not
an fsync; the requests begun in one pass of the event loop share one commit), so what
survives a crash is always a prefix of what happened: a page is marked finished only after
its links were inserted; a URL fetched but not yet recorded as finished comes back marked as
a re-fetch; and the host's provisional next-allowed time was on disk before the request went
out, so a restart cannot ask the site again too soon.
SQLite calls take microseconds and run on the event loop's thread;
only the commit touches the disk.

A URL's state: 0 queued, 1 in flight (a crash there makes it a re-fetch), 2 finished.

One server, many names: each key's IP (``key_ips``) is held by the one key of it that is
leased, and follows its host when it moves (``frontier.servers``).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import sys
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from politecrawl.config import MAX_WAIT_S
from politecrawl.errors import FrontierError
from politecrawl.frontier import Addresses, Lease, Outbox, Refusals, UrlEntry, not_worth_it
from politecrawl.frontier.servers import Servers, SharedIps
from politecrawl.frontier.sqlitestore import SqliteStore
from politecrawl.frontier.window import WINDOW, Window, between_turns, offer
from politecrawl.polite.politeness import HostState, only_its_turn

_COLS = "url, key, depth, hops, attempt, not_before, priority, kind, seq"
_STORE_OPTIONS = ("seen_mode", "expected_urls", "seen_fp_rate", "robots_cache_size", "state_path")
__all__ = ["SharedIps", "SqliteFrontier"]


class SqliteFrontier:
    """The ``Frontier`` protocol's embedded backend (see the module docstring)."""

    def __init__(
        self,
        store: SqliteStore,
        *,
        max_wait_s: float = MAX_WAIT_S,
        defer_ratio: float = 0.0,
        shared_ips: SharedIps | None = None,
    ) -> None:
        self.store = store
        self.max_wait_s = max_wait_s
        self.defer_ratio = defer_ratio  # see lease(): 0 = any ready site is served
        self._db = store.db
        self.seen = store.seen
        self._pending: dict[str, int] = {}
        self._best: dict[str, float] = {}
        self._best_heap: list[tuple[float, str]] = []  # (-best, key), lazy: the best anywhere
        self._deferring = False
        self._window: dict[str, Window] = {}
        self._time_heap: list[tuple[float, str]] = []
        self._scheduled: dict[str, float] = {}
        self._ready: list[tuple[float, int, str]] = []
        self._ready_prio: dict[str, float] = {}
        self._ready_since: dict[str, float] = {}  # key -> when lease() first found it due
        self._overdue: deque[tuple[float, str]] = deque()  # (became due, key), oldest first
        self._leased: set[str] = set()
        # the IP rule (--processes N: over all processes, ``partition.IpTable``, after this one)
        self.servers = Servers(store.db, shared_ips, self._schedule, self._own_times)
        self._ready_seq = itertools.count()
        self._queued = 0
        self._worst_indexed = False  # the index ``trim`` reads (made at its first trim)
        self._commit_due: asyncio.Future[None] | None = None  # the next group commit
        self.group_commits = 0
        self.refetches = 0
        self.refetched: list[str] = []  # their URLs (``storage.uncommitted``)
        store.queue_stats = self._queue_stats
        self._load()

    @property
    def addresses(self) -> Addresses | None:
        """Where a URL's request would connect now: the IP rule follows moving hosts."""
        return self.servers.addresses

    @addresses.setter
    def addresses(self, where: Addresses | None) -> None:
        self.servers.addresses = where

    @property
    def outbox(self) -> Outbox:
        """The store keeps a partition's outgoing links (``engine.partition``)."""
        return self.store

    @property
    def refusals(self) -> Refusals:
        """Refusals an option can lift are kept here (``engine.readmit``)."""
        return self

    def note_refused(self, rows: Sequence[tuple[str, str, int, int, int, float]]) -> None:
        self.store.note_refused(rows)

    def refused_rows(self) -> list[tuple[str, str, int, int, int, float]]:
        return self.store.refused_rows()

    def forget_refused(self, urls: Sequence[str]) -> None:
        self.store.forget_refused(urls)

    @classmethod
    def open(cls, path: Path, **options: Any) -> SqliteFrontier:
        """A store at ``path`` and its queues: ``options`` go to whichever takes them."""
        store = SqliteStore(path, **{k: v for k, v in options.items() if k in _STORE_OPTIONS})
        return cls(store, **{k: v for k, v in options.items() if k not in _STORE_OPTIONS})

    # -- start-up -------------------------------------------------------------------
    def _load(self) -> None:
        db = self._db
        # a crash left these in flight: queue them again, marked as re-fetches
        self.refetched = [url for (url,) in db.execute("SELECT url FROM urls WHERE state=1")]
        self.refetches = db.execute(
            "UPDATE urls SET state=0, outcome='refetch' WHERE state=1"
        ).rowcount
        rows = db.execute(
            "SELECT key, COUNT(*), MAX(priority), MIN(not_before) FROM urls "
            "WHERE state=0 GROUP BY key"
        )
        for key, n, best, not_before in rows:
            self._pending[key] = n
            self._queued += n
            self._set_best(key, best)
            self._schedule(key, max(self.store.host_now(key).next_allowed, not_before))

    # -- queueing ------------------------------------------------------------------------
    async def add(self, entries: Sequence[UrlEntry]) -> list[bool]:
        out = []
        seen = self.seen
        execute = self._db.execute
        for e in entries:
            if e.url in seen:
                out.append(False)
                continue
            seen.add(e.url)
            seq = self.store.next_seq()
            cur = execute(
                "INSERT OR IGNORE INTO urls VALUES (?,?,?,?,?,?,0,NULL,?,?,?)",
                (e.url, e.key, e.depth, e.hops, e.attempt, e.not_before, e.priority, e.kind, seq),
            )
            if cur.rowcount != 1:  # a Bloom false positive's mirror: already in the store
                out.append(False)
                continue
            self.servers.learn(e.key, e.ip)
            self._note_queued(e, seq)
            out.append(True)
        return out

    def _note_queued(self, e: UrlEntry, seq: int) -> None:
        key = e.key
        n = self._pending.get(key, 0)
        self._pending[key] = n + 1
        self._queued += 1
        win = self._window.get(key)
        if win is not None:
            offer(win, n, (-e.priority, seq, e))
        if n == 0 or e.priority > self._best.get(key, e.priority):
            self._set_best(key, e.priority)
        if key in self._leased or key in self.servers.waiting:
            return  # (a waiting key is scheduled when its IP calls it)
        if key in self._scheduled:
            if key in self._ready_prio and e.priority > self._ready_prio[key]:
                self._push_ready(key)
            return
        self._schedule(key, max(self.store.host_now(key).next_allowed, e.not_before))

    async def requeue(self, entries: Sequence[UrlEntry]) -> int:
        """Queue again URLs refused before for a reason an option now lifts, or pages to
        revisit (``readmit``): finished ones go back to the queue, gate refusals (seen, never
        stored) are inserted, whatever the seen-set says, each due at its ``not_before``.
        Returns how many were queued."""
        n = 0
        execute = self._db.execute
        for e in entries:
            seq = self.store.next_seq()
            cur = execute(
                "UPDATE urls SET state=0, attempt=0, outcome=NULL, not_before=?, seq=?, key=? "
                "WHERE url=? AND state=2",
                (e.not_before, seq, e.key, e.url),
            )
            if cur.rowcount != 1:
                cur = execute(
                    "INSERT OR IGNORE INTO urls VALUES (?,?,?,?,?,?,0,NULL,?,?,?)",
                    (e.url, e.key, e.depth, e.hops, 0, e.not_before, e.priority, e.kind, seq),
                )
                if cur.rowcount != 1:
                    continue
            if e.url not in self.seen:
                self.seen.add(e.url)
            self.servers.learn(e.key, e.ip)
            self._note_queued(e, seq)
            n += 1
        return n

    def finished_as(
        self, outcome: str, *, prefix: bool = False
    ) -> list[tuple[str, int, int, int, float]]:
        """``(url, depth, hops, kind, priority)`` of the URLs finished with ``outcome`` (with
        ``prefix``: an outcome starting with it)."""
        args: tuple[str, ...]
        if prefix:  # (a range, not LIKE: the outcome's characters are no pattern)
            where, args = "outcome >= ? AND outcome < ?", (outcome, outcome + "\U0010ffff")
        else:
            where, args = "outcome = ?", (outcome,)
        return list(
            self._db.execute(
                f"SELECT url, depth, hops, kind, priority FROM urls WHERE state=2 AND {where}",
                args,
            )
        )

    async def push_back(self, entry: UrlEntry, *, front: bool = False) -> None:
        """A URL of a leased key to try later (retry, or after robots.txt)."""
        seq = -self.store.next_seq() if front else self.store.next_seq()
        self._db.execute(
            "UPDATE urls SET state=0, attempt=?, not_before=?, seq=? WHERE url=?",
            (entry.attempt, entry.not_before, seq, entry.url),
        )
        key = entry.key
        n = self._pending.get(key, 0)
        self._pending[key] = n + 1
        self._queued += 1
        win = self._window.get(key)
        if win is not None:
            offer(win, n, (-entry.priority, seq, entry))

    async def pop_url(self, key: str, now: float) -> UrlEntry | None:
        """The best URL of a leased key that may be fetched now, marked in flight."""
        if not self._pending.get(key):
            return None
        win = self._window.get(key)
        if not win:
            win = self._window[key] = self._refill(key)
        later: list[tuple[float, int, UrlEntry]] = []
        found = None
        while win:
            item = heapq.heappop(win)
            if item[2].not_before <= now:
                found = item[2]
                break
            later.append(item)
        for item in later:
            heapq.heappush(win, item)
        if found is None and len(win) < self._pending[key]:
            # the window is all URLs set aside for later: one due beyond it still goes now
            found = self._due_beyond(key, now)
            if found is not None:
                self._window.pop(key, None)
        if found is None:
            return None
        self._pending[key] -= 1
        self._queued -= 1
        self._db.execute("UPDATE urls SET state=1 WHERE url=?", (found.url,))
        if not win and self._pending[key]:  # (after the URL left state 0: not read again)
            self._window[key] = self._refill(key)
        elif win:
            self._set_best(key, -win[0][0])  # the key's best is now its next URL's
        return found

    def _due_beyond(self, key: str, now: float) -> UrlEntry | None:
        row = self._db.execute(
            f"SELECT {_COLS}, outcome FROM urls WHERE key=? AND state=0 AND not_before<=? "
            "ORDER BY priority DESC, seq LIMIT 1",
            (key, now),
        ).fetchone()
        if row is None:
            return None
        url, k, depth, hops, attempt, nb, prio, kind, _seq, outcome = row
        return UrlEntry(url, k, depth, hops, attempt, nb, prio, kind, refetch=outcome == "refetch")

    def _refill(self, key: str) -> Window:
        rows = self._db.execute(
            f"SELECT {_COLS}, outcome FROM urls WHERE key=? AND state=0 "
            "ORDER BY priority DESC, seq LIMIT ?",
            (key, WINDOW),
        )
        win = []
        for url, k, depth, hops, attempt, nb, prio, kind, seq, outcome in rows:
            k = sys.intern(k)  # one key string per site, not one per URL read back
            e = UrlEntry(url, k, depth, hops, attempt, nb, prio, kind, refetch=outcome == "refetch")
            win.append((-prio, seq, e))
        heapq.heapify(win)
        if win:
            self._set_best(key, -win[0][0])
        return win

    def _earliest_not_before(self, key: str) -> float:
        win = self._window.get(key)
        if win and len(win) == self._pending.get(key, 0):
            return min(item[2].not_before for item in win)
        row = self._db.execute(
            "SELECT MIN(not_before) FROM urls WHERE key=? AND state=0", (key,)
        ).fetchone()
        return float(row[0] or 0.0)

    async def finish(self, url: str, outcome: str) -> None:
        self._db.execute("UPDATE urls SET state=2, outcome=? WHERE url=?", (outcome, url))

    async def drop_queued(self, key: str, outcome: str) -> int:
        """Finish every queued URL of a key (the site became excluded or unreachable)."""
        n = self._db.execute(
            "UPDATE urls SET state=2, outcome=? WHERE key=? AND state=0", (outcome, key)
        ).rowcount
        self._queued -= self._pending.pop(key, 0)
        self._window.pop(key, None)
        return int(n)

    async def reprioritize(self, items: Sequence[tuple[str, str, float]]) -> int:
        """New priorities for queued ``(url, key, priority)``; the keys' windows reload."""
        changed = 0
        touched: dict[str, float] = {}
        for url, key, prio in items:
            n = self._db.execute(
                "UPDATE urls SET priority=? WHERE url=? AND state=0", (prio, url)
            ).rowcount
            if n:
                changed += 1
                touched[key] = max(prio, touched.get(key, prio))
        for key, best in touched.items():
            self._window.pop(key, None)  # re-read best-first at the next pop
            self._set_best(key, best)
            if key in self._ready_prio:
                self._push_ready(key)
        return changed

    async def trim(self, max_queued: int) -> int:
        """Drop the lowest-priority queued URLs beyond ``max_queued`` (``--max-queue``)."""
        excess = self._queued - max_queued
        if excess <= 0:
            return 0
        if not self._worst_indexed:  # (made once; kept up from then on: sqlitestore._SCHEMA)
            self._db.execute(
                "CREATE INDEX IF NOT EXISTS urls_worst ON urls(priority) WHERE state = 0"
            )
            self._worst_indexed = True
        rows = self._db.execute(
            "SELECT url, key FROM urls WHERE state=0 ORDER BY priority LIMIT ?", (excess,)
        ).fetchall()
        for url, key in rows:
            self._db.execute(
                "UPDATE urls SET state=2, outcome='dropped:queue_full' WHERE url=?", (url,)
            )
            self._pending[key] -= 1
            self._queued -= 1
            self._window.pop(key, None)
        return len(rows)

    # -- the penalty box --------------------------------------------------------------
    def _schedule(self, key: str, when: float) -> None:
        self._scheduled[key] = when
        heapq.heappush(self._time_heap, (when, key))

    def _set_best(self, key: str, prio: float) -> None:
        self._best[key] = prio
        if self.defer_ratio:
            heapq.heappush(self._best_heap, (-prio, key))

    def _best_anywhere(self, now: float) -> float | None:
        """The best queued URL's priority over the keys that can be asked now or soon: ready,
        in flight or waiting for their ordinary turn (``politeness.only_its_turn``). A key
        that fails, backs off or is parked leaves the heap here and comes back when its
        state may have changed: released after a turn, due again, or a new best URL."""
        h = self._best_heap
        while h:
            negp, key = h[0]
            if self._best.get(key) != -negp or not self._pending.get(key):
                heapq.heappop(h)  # stale
            elif not only_its_turn(self.store.host_now(key), now):
                heapq.heappop(h)  # benched (see _rebench)
            else:
                break
        if len(h) > 4 * len(self._best) + 1024:  # stale entries: rebuild
            self._best_heap = h = [(-p, k) for k, p in self._best.items() if self._pending.get(k)]
            heapq.heapify(h)
            return self._best_anywhere(now)
        return -h[0][0] if h else None

    def _rebench(self, key: str) -> None:
        """The key's state may have changed (a turn ended, it is due): compare it again."""
        if self.defer_ratio and self._pending.get(key) and key in self._best:
            heapq.heappush(self._best_heap, (-self._best[key], key))

    def _not_worth_it(self, prio: float, now: float) -> bool:
        """``not_worth_it`` (``--defer-ratio``) against the best key that can be asked now
        or soon (looked up only for a priority the rule applies to)."""
        if not self.defer_ratio or prio < 0:
            return False
        return not_worth_it(prio, self._best_anywhere(now), self.defer_ratio)

    def _push_ready(self, key: str) -> None:
        prio = self._best.get(key, 0.0)
        self._ready_prio[key] = prio
        ready = self._ready
        heapq.heappush(ready, (-prio, next(self._ready_seq), key))
        if len(ready) > 2 * len(self._ready_prio) + 1024:
            # a ready key's better URLs leave stale entries until they reach the top: on a
            # CPU-bound crawl with many sites due they piled up (bench/soak.py --tracemalloc)
            live = self._ready_prio
            self._ready = [item for item in ready if live.get(item[2]) == -item[0]]
            heapq.heapify(self._ready)

    async def lease(self, now: float) -> Lease:
        """The ready key holding the best URL, unless one has waited ``max_wait_s``: then
        the longest-waiting one, so no site starves however good the others' URLs are. A key
        whose IP is held or not yet free is set aside (see the module docstring). None
        leased: the lease says when to ask again."""
        th = self._time_heap
        while th and th[0][0] <= now:
            when, key = heapq.heappop(th)
            if self._scheduled.get(key) == when and key not in self._ready_prio:
                if self.servers.queued_if_busy(key, now):
                    del self._scheduled[key]
                    continue
                self._push_ready(key)
                self._rebench(key)
                self._ready_since[key] = now  # (a key queued long after its `when` waited less)
                self._overdue.append((now, key))
        fifo = self._overdue
        if len(fifo) > 2 * len(self._ready_since) + 1024:  # stale entries behind a waiting head
            since = self._ready_since
            self._overdue = deque(item for item in fifo if since.get(item[1]) == item[0])
        while (cand := self._candidate(now)) is not None:
            if self._take_ready(cand, now):
                return Lease(self.store.host_now(cand))
        return Lease(None, self._next_wake())

    def _candidate(self, now: float) -> str | None:
        """The next ready key to try: one due for ``max_wait_s``, else the best."""
        fifo = self._overdue
        while fifo and self._ready_since.get(fifo[0][1]) != fifo[0][0]:
            fifo.popleft()  # leased since
        if fifo and fifo[0][0] <= now - self.max_wait_s:
            return fifo.popleft()[1]
        ready = self._ready
        self._deferring = False
        while ready:
            negp, _, key = ready[0]
            if self._ready_prio.get(key) != -negp:
                heapq.heappop(ready)
                continue  # stale
            if (self._leased or self._time_heap) and self._not_worth_it(-negp, now):
                # the best ready one is not worth a request now: none is; the better URL's
                # key is in flight or waiting on its delay
                self._deferring = True
                return None
            heapq.heappop(ready)
            return key
        return None

    def ready_since(self) -> dict[str, float]:
        """Keys due and waiting for a lease -> when ``lease`` found each due (for diagnostics
        and bench/load.py: a host's wait starts there, not at its last request)."""
        return dict(self._ready_since)

    def _take_ready(self, key: str, now: float) -> bool:
        """Out of the ready set; True (and leased, its IP held) if the key still has URLs
        queued and the IP its request will go to is free; else it waits in that IP's line or
        for its time (or for its host's address, being looked up)."""
        del self._ready_prio[key]
        del self._scheduled[key]
        due = self._ready_since.pop(key)
        if not self._pending.get(key):
            self.servers.left(key)  # it may have been the one called: call another
            return False
        ip, later = self.servers.server(key, self._next_url(key), now)
        if later:
            self._schedule(key, later)
            return False
        if ip and not self.servers.take(key, ip, now, due):
            return False
        self._leased.add(key)
        return True

    def _next_url(self, key: str) -> str | None:
        """The URL a due key's turn will ask (its best), when the IP rule follows hosts."""
        if self.servers.addresses is None:
            return None
        win = self._window.get(key)
        if win:
            return win[0][2].url
        row = self._db.execute(  # (not read into a window: the key may wait for its IP)
            "SELECT url FROM urls WHERE key=? AND state=0 ORDER BY priority DESC, seq LIMIT 1",
            (key,),
        ).fetchone()
        return str(row[0]) if row else None

    def _own_times(self, key: str) -> tuple[float, float] | None:
        """A key called from its IP's line: its own next time and its first URL's."""
        if not self._pending.get(key):
            return None
        return self.store.host_now(key).next_allowed, self._earliest_not_before(key)

    async def connected(self, key: str, ip: str) -> None:
        self.servers.connected(key, ip)

    def _next_wake(self) -> float | None:
        """0 if a key is due; else the earliest scheduled time (None: nothing queued)."""
        if self._ready_prio and not self._deferring:
            return 0.0
        th = self._time_heap
        while th and self._scheduled.get(th[0][1]) != th[0][0]:
            heapq.heappop(th)
        return th[0][0] if th else None

    async def begin_request(self, key: str, state: HostState) -> None:
        """Persist the host's provisional next time and any in-flight mark; returns once they
        are committed. Group commit: the requests begun in one pass of the event loop share
        one commit (on a CPU-bound crawl, about 60 of them), and each waits for it, so no
        request leaves before its state is on disk. A commit per request was a twentieth of
        the crawler process's CPU with ``--processes``."""
        self.store.save_host(state)
        due = self._commit_due
        if due is None:
            loop = asyncio.get_running_loop()
            due = self._commit_due = loop.create_future()
            loop.call_soon(self._group_commit)
        await asyncio.shield(due)  # one waiter cancelled must not cancel the others' commit

    def _group_commit(self) -> None:
        due, self._commit_due = self._commit_due, None
        if due is None:
            return
        try:
            self.store.commit()
        except FrontierError as exc:
            due.set_exception(exc)
            due.exception()  # retrieved here too: every waiter may have been cancelled
            return
        self.group_commits += 1
        due.set_result(None)

    async def release(self, key: str, state: HostState) -> None:
        self._leased.discard(key)
        self.servers.release(key, state)
        self.store.save_host(state)
        if self._pending.get(key):
            self._schedule(key, max(state.next_allowed, self._earliest_not_before(key)))
            self._rebench(key)
            win = self._window.get(key)
            if win is not None:
                between_turns(win)
        else:
            self._pending.pop(key, None)
            self._window.pop(key, None)
            self._best.pop(key, None)

    # -- what the store reports of the queues ----------------------------------------------
    def _queue_stats(self) -> dict[str, int]:
        now = time.time()
        return {
            "queued": self._queued,
            "hosts_waiting": len(self._scheduled) + len(self.servers.waiting),
            "ready": sum(1 for t in self._scheduled.values() if t <= now),
            "in_flight": len(self._leased),
            "waiting_for_ip": len(self.servers.waiting),  # (in hosts_waiting too)
        }

    def queued(self) -> int:
        return self._queued

    def dropped_sites(self, outcomes: Sequence[str]) -> list[tuple[str, str, int]]:
        """``(key, outcome, URLs)`` of the URLs finished with one of ``outcomes`` (sites given
        up, in this run or an earlier one: ``engine.losses``). One scan, at the crawl's end."""
        marks = ",".join("?" * len(outcomes))
        rows = self._db.execute(
            f"SELECT key, outcome, COUNT(*) FROM urls WHERE state=2 AND outcome IN ({marks}) "
            "GROUP BY key, outcome",
            tuple(outcomes),
        ).fetchall()
        return [(str(k), str(o), int(n)) for k, o, n in rows]

    async def queued_counts(self, keys: Sequence[str]) -> dict[str, int]:
        """URLs each key still has queued (a lost site's URLs left behind: ``engine.losses``)."""
        return {key: self._pending.get(key, 0) for key in keys}
