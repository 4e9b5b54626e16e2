"""The embedded frontier: queues and penalty box in memory, everything written through to SQLite.

Writes go into one open transaction committed by ``flush`` (the crawler calls it about once a
second), so a crash loses at most the last second, and what survives is always a prefix of
what happened: a parent page is marked finished only after its links were inserted, so a page
whose links were lost is fetched again rather than forgotten. SQLite calls here take a few
microseconds each and run on the event loop's thread; only the commit touches the disk.

A URL's state: 0 queued, 1 in flight (a crash there makes it a re-fetch), 2 finished.
"""

from __future__ import annotations

import heapq
import json
import sqlite3
from collections import OrderedDict, deque
from pathlib import Path

from politecrawl.errors import FrontierError
from politecrawl.frontier import RobotsRecord, UrlEntry
from politecrawl.politeness import HostState

_SCHEMA = """
PRAGMA journal_mode=WAL;
PRAGMA synchronous=NORMAL;
CREATE TABLE IF NOT EXISTS urls(
    url TEXT PRIMARY KEY, key TEXT NOT NULL, depth INT NOT NULL, hops INT NOT NULL,
    attempt INT NOT NULL, not_before REAL NOT NULL, state INT NOT NULL, outcome TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS urls_state ON urls(state) WHERE state < 2;
CREATE TABLE IF NOT EXISTS hosts(key TEXT PRIMARY KEY, data TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS robots(
    origin TEXT PRIMARY KEY, fetched_at REAL NOT NULL, status INT NOT NULL, body BLOB NOT NULL,
    failing_since REAL NOT NULL DEFAULT 0, good_body BLOB
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS counters(name TEXT PRIMARY KEY, value INT NOT NULL) WITHOUT ROWID;
"""

_QUEUED, _IN_FLIGHT, _FINISHED = 0, 1, 2


def _host_to_json(h: HostState) -> str:
    return json.dumps(
        {
            "last_start": h.last_start,
            "next_allowed": h.next_allowed,
            "rt": list(h.response_times_s),
            "crawl_delay": h.crawl_delay_s,
            "backoff": h.backoff_factor,
            "retry_after_until": h.retry_after_until,
            "failures": h.consecutive_failures,
        }
    )


def _host_from_json(key: str, data: str) -> HostState:
    d = json.loads(data)
    h = HostState(
        key=key,
        last_start=d["last_start"],
        next_allowed=d["next_allowed"],
        crawl_delay_s=d["crawl_delay"],
        backoff_factor=d["backoff"],
        retry_after_until=d["retry_after_until"],
        consecutive_failures=d["failures"],
    )
    h.response_times_s.extend(d["rt"])
    return h


class SqliteFrontier:
    """See the module docstring; the ``Frontier`` protocol's embedded backend."""

    def __init__(self, path: Path, robots_cache_size: int = 1_000_000) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(path, isolation_level="DEFERRED")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise FrontierError(f"cannot open crawl state {path}: {exc}") from exc
        self._queues: dict[str, deque[UrlEntry]] = {}
        self._heap: list[tuple[float, str]] = []
        self._scheduled: dict[str, float] = {}
        self._leased: set[str] = set()
        self._seen: set[str] = set()
        self._hosts: dict[str, HostState] = {}
        self._robots: OrderedDict[str, RobotsRecord] = OrderedDict()
        self._robots_cap = robots_cache_size
        self._queued = 0
        self._load()

    # -- start-up -------------------------------------------------------------------
    def _load(self) -> None:
        for key, data in self._db.execute("SELECT key, data FROM hosts"):
            self._hosts[key] = _host_from_json(key, data)
        self._seen.update(u for (u,) in self._db.execute("SELECT url FROM urls"))
        rows = self._db.execute(
            "SELECT url, key, depth, hops, attempt, not_before, state FROM urls WHERE state < 2"
        )
        for url, key, depth, hops, attempt, not_before, state in rows:
            self._enqueue(
                UrlEntry(url, key, depth, hops, attempt, not_before, refetch=state == _IN_FLIGHT)
            )

    def resumed_refetches(self) -> int:
        return sum(1 for q in self._queues.values() for e in q if e.refetch)

    # -- URLs -------------------------------------------------------------------------
    def is_seen(self, url: str) -> bool:
        return url in self._seen

    def mark_seen(self, url: str) -> None:
        self._seen.add(url)

    def add(self, entry: UrlEntry) -> bool:
        """Queue a URL the admission gate let through; False if it was already seen."""
        if entry.url in self._seen:
            return False
        self._seen.add(entry.url)
        self._db.execute(
            "INSERT OR IGNORE INTO urls VALUES (?,?,?,?,?,?,0,NULL)",
            (entry.url, entry.key, entry.depth, entry.hops, entry.attempt, entry.not_before),
        )
        self._enqueue(entry)
        return True

    def record_dropped(self, url: str, key: str, outcome: str, depth: int = 0) -> None:
        """Remember a URL refused before queueing (e.g. robots), so it is not asked again."""
        self._seen.add(url)
        self._db.execute(
            "INSERT OR IGNORE INTO urls VALUES (?,?,?,0,0,0,2,?)", (url, key, depth, outcome)
        )

    def _enqueue(self, entry: UrlEntry) -> None:
        q = self._queues.get(entry.key)
        if q is None:
            q = self._queues[entry.key] = deque()
        q.append(entry)
        self._queued += 1
        if entry.key not in self._leased and entry.key not in self._scheduled:
            self._schedule(entry.key, self.host(entry.key).next_allowed)

    def push_back(self, entry: UrlEntry, *, front: bool = False) -> None:
        """A URL to try later (retry, or after robots.txt); its key is leased by the caller."""
        self._db.execute(
            "UPDATE urls SET state=0, attempt=?, not_before=? WHERE url=?",
            (entry.attempt, entry.not_before, entry.url),
        )
        q = self._queues.setdefault(entry.key, deque())
        if front:
            q.appendleft(entry)
        else:
            q.append(entry)
        self._queued += 1

    def pop_url(self, key: str, now: float) -> UrlEntry | None:
        """The next URL of a leased key that may be fetched now, marked in flight."""
        q = self._queues.get(key)
        if not q:
            return None
        for _ in range(len(q)):
            entry = q.popleft()
            if entry.not_before <= now:
                self._queued -= 1
                self._db.execute("UPDATE urls SET state=1 WHERE url=?", (entry.url,))
                return entry
            q.append(entry)
        return None

    def earliest_not_before(self, key: str) -> float:
        q = self._queues.get(key)
        return min((e.not_before for e in q), default=0.0) if q else 0.0

    def finish(self, url: str, outcome: str) -> None:
        self._db.execute("UPDATE urls SET state=2, outcome=? WHERE url=?", (outcome, url))

    def drop_queued(self, key: str, outcome: str) -> list[UrlEntry]:
        """Remove every queued URL of a key (the site became excluded or unreachable)."""
        q = self._queues.pop(key, None)
        if not q:
            return []
        self._queued -= len(q)
        for e in q:
            self.finish(e.url, outcome)
        return list(q)

    # -- the penalty box --------------------------------------------------------------
    def _schedule(self, key: str, when: float) -> None:
        self._scheduled[key] = when
        heapq.heappush(self._heap, (when, key))

    def lease(self, now: float) -> str | None:
        """A key whose next-allowed time has come and that has URLs; it is ours until released."""
        heap = self._heap
        while heap and heap[0][0] <= now:
            when, key = heapq.heappop(heap)
            if self._scheduled.get(key) != when:
                continue  # stale entry
            del self._scheduled[key]
            if not self._queues.get(key):
                continue
            self._leased.add(key)
            return key
        return None

    def next_wake(self) -> float | None:
        heap = self._heap
        while heap and self._scheduled.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def release(self, key: str, next_allowed: float) -> None:
        self._leased.discard(key)
        h = self.host(key)
        h.next_allowed = max(h.next_allowed, next_allowed)
        self.save_host(h)
        if self._queues.get(key):
            self._schedule(key, max(h.next_allowed, self.earliest_not_before(key)))
        else:
            self._queues.pop(key, None)

    # -- host state and robots ---------------------------------------------------------
    def host(self, key: str) -> HostState:
        h = self._hosts.get(key)
        if h is None:
            h = self._hosts[key] = HostState(key=key)
        return h

    def save_host(self, state: HostState) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO hosts VALUES (?,?)", (state.key, _host_to_json(state))
        )

    def robots(self, origin: str) -> RobotsRecord | None:
        rec = self._robots.get(origin)
        if rec is not None:
            self._robots.move_to_end(origin)
            return rec
        row = self._db.execute(
            "SELECT fetched_at, status, body, failing_since, good_body FROM robots WHERE origin=?",
            (origin,),
        ).fetchone()
        if row is None:
            return None
        good = bytes(row[4]) if row[4] is not None else None
        rec = RobotsRecord(origin, row[0], row[1], bytes(row[2]), row[3], good)
        self._cache_robots(rec)
        return rec

    def save_robots(self, record: RobotsRecord) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO robots VALUES (?,?,?,?,?,?)",
            (
                record.origin,
                record.fetched_at,
                record.status,
                record.body,
                record.failing_since,
                record.good_body,
            ),
        )
        self._cache_robots(record)

    def _cache_robots(self, rec: RobotsRecord) -> None:
        self._robots[rec.origin] = rec
        self._robots.move_to_end(rec.origin)
        while len(self._robots) > self._robots_cap:
            self._robots.popitem(last=False)

    # -- bookkeeping ------------------------------------------------------------------
    def queued(self) -> int:
        return self._queued

    def hosts_waiting(self) -> int:
        return len(self._scheduled)

    def in_flight(self) -> int:
        return len(self._leased)

    def counters(self) -> dict[str, int]:
        return dict(self._db.execute("SELECT name, value FROM counters").fetchall())

    def save_counters(self, counters: dict[str, int]) -> None:
        self._db.executemany("INSERT OR REPLACE INTO counters VALUES (?,?)", list(counters.items()))

    def flush(self) -> None:
        try:
            self._db.commit()
        except sqlite3.DatabaseError as exc:
            raise FrontierError(f"cannot save crawl state: {exc}") from exc

    def close(self) -> None:
        self.flush()
        self._db.close()
