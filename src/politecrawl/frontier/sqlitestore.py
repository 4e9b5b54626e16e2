"""The crawl's state beside its queues, in SQLite: seen-set, site states, robots.txt copies,
validators for conditional GET, and counters (the ``CrawlStore`` protocol).

One file (``OUT/state.sqlite``) holds it with the queues of ``frontier.sqlite``, which opens
the store and shares its connection: one transaction, committed by ``flush`` (about once a
second) and before every request, so what survives a crash is a prefix of what happened.
Site states and robots.txt copies may live in a ``--state`` file shared across crawls
(attached as ``shared``). The seen-set is ``seen.SeenSet`` (exact, or a Bloom filter saved
beside the file as ``seen.bloom``, with the write sequence number it is current to).
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from politecrawl.errors import FrontierError
from politecrawl.frontier import RobotsRecord
from politecrawl.polite import politeness
from politecrawl.polite.politeness import HostState
from politecrawl.urls.seen import SeenMode, SeenSet

# cache_size: 64 MiB of pages (SQLite's default is 2 MiB). The queue, the seen URLs and their
# indexes are B-trees keyed by URL, host and priority, each link landing at a random page of
# each: past about 100,000 URLs queued the default cache missed on most of them, and the
# time per page grew (bench/frontier_growth.py). Bounded, so memory stays flat. The index of
# the worst queued URLs (``urls_worst``) is made by the first ``trim`` (``--max-queue``), not
# here: kept up on every link queued, it cost a crawl without a cap a quarter of that time.
_SCHEMA = """
PRAGMA journal_mode=WAL;
PRAGMA synchronous=NORMAL;
PRAGMA cache_size=-65536;
CREATE TABLE IF NOT EXISTS urls(
    url TEXT PRIMARY KEY, key TEXT NOT NULL, depth INT NOT NULL, hops INT NOT NULL,
    attempt INT NOT NULL, not_before REAL NOT NULL, state INT NOT NULL, outcome TEXT,
    priority REAL NOT NULL DEFAULT 0, kind INT NOT NULL DEFAULT 0, seq INT NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS urls_queue ON urls(key, priority DESC, seq) WHERE state = 0;
CREATE INDEX IF NOT EXISTS urls_flight ON urls(state) WHERE state = 1;
CREATE TABLE IF NOT EXISTS pages(
    url TEXT PRIMARY KEY, etag TEXT, last_modified TEXT, fetched_at REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS counters(name TEXT PRIMARY KEY, value INT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS outputs(
    name TEXT PRIMARY KEY, size INT NOT NULL, prev INT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS key_ips(key TEXT PRIMARY KEY, ip TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS outbox(seq INTEGER PRIMARY KEY, peer INT NOT NULL, batch BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS seen(url TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS refused(
    url TEXT PRIMARY KEY, reason TEXT NOT NULL, depth INT NOT NULL, hops INT NOT NULL,
    kind INT NOT NULL, priority REAL NOT NULL
) WITHOUT ROWID;
"""

# Host knowledge: in the crawl's own file, or in a --state file shared across crawls/segments.
_HOST_SCHEMA = """
CREATE TABLE IF NOT EXISTS {db}.hosts(key TEXT PRIMARY KEY, data TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS {db}.robots(
    origin TEXT PRIMARY KEY, fetched_at REAL NOT NULL, status INT NOT NULL, body BLOB NOT NULL,
    failing_since REAL NOT NULL DEFAULT 0, good_body BLOB,
    failures INT NOT NULL DEFAULT 0, redirect_to TEXT NOT NULL DEFAULT '',
    hops INT NOT NULL DEFAULT 0
) WITHOUT ROWID;
"""
# columns added since the first release: ALTERed into an older file at open
_ROBOTS_ADDED = (
    "failures INT NOT NULL DEFAULT 0",
    "redirect_to TEXT NOT NULL DEFAULT ''",
    "hops INT NOT NULL DEFAULT 0",
)
_ROBOTS_COLS = (
    "origin, fetched_at, status, body, failing_since, good_body, failures, redirect_to, hops"
)

_SEEN_SAVE_EVERY = 30  # flushes between Bloom filter saves


def host_to_json(h: HostState) -> str:
    """Saved before every request: orjson, a sixth of the json module's time here."""
    return orjson.dumps(
        {
            "last_start": h.last_start,
            "next_allowed": h.next_allowed,
            "rt": list(h.response_times_s),
            "crawl_delay": h.crawl_delay_s,
            "backoff": h.backoff_factor,
            "retry_after_until": h.retry_after_until,
            "failures": h.consecutive_failures,
            "parked_until": h.parked_until,
            "last_end": h.last_end,
            "ip_next": h.ip_next,
            "refusals": h.consecutive_refusals,
            "origin_delays": [[o, d] for o, d in h.origin_delays.items()],
            "origins_ok": list(h.origins_ok),
        }
    ).decode()


def host_from_json(key: str, data: str) -> HostState:
    return host_from_dict(key, json.loads(data))


def host_from_dict(key: str, d: dict[str, Any]) -> HostState:
    """A HostState from its JSON, parsed (``host_to_json``'s fields)."""
    h = HostState(
        key=key,
        last_start=d["last_start"],
        next_allowed=d["next_allowed"],
        crawl_delay_s=d["crawl_delay"],
        backoff_factor=d["backoff"],
        retry_after_until=d["retry_after_until"],
        consecutive_failures=d["failures"],
        parked_until=d.get("parked_until", 0.0),
        last_end=d.get("last_end", 0.0),
        ip_next=d.get("ip_next", 0.0),
        consecutive_refusals=d.get("refusals", 0),
        origin_delays={str(o): float(v) for o, v in d.get("origin_delays") or ()},
        origins_ok=dict.fromkeys(str(o) for o in d.get("origins_ok") or ()),
    )
    h.response_times_s.extend(d["rt"])
    return h


class SqliteStore:
    """The ``CrawlStore`` protocol's embedded backend (see the module docstring)."""

    def __init__(
        self,
        path: Path,
        *,
        seen_mode: SeenMode = "disk",
        expected_urls: int = 1_000_000,
        seen_fp_rate: float = 0.01,
        robots_cache_size: int = 1_000_000,
        state_path: Path | None = None,
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        try:
            self.db = sqlite3.connect(path, isolation_level="DEFERRED")
            self.db.executescript(_SCHEMA)
            db = "main"
            if state_path is not None:  # robots cache and host statistics reused across crawls
                state_path.parent.mkdir(parents=True, exist_ok=True)
                self.db.execute("ATTACH DATABASE ? AS shared", (str(state_path),))
                self.db.execute("PRAGMA shared.journal_mode=WAL")
                db = "shared"
            self.db.executescript(_HOST_SCHEMA.format(db=db))
            have = {r[1] for r in self.db.execute(f"PRAGMA {db}.table_info(robots)")}
            for column in _ROBOTS_ADDED:
                if column.split()[0] not in have:
                    self.db.execute(f"ALTER TABLE {db}.robots ADD COLUMN {column}")
            self.db.commit()
        except sqlite3.DatabaseError as exc:
            raise FrontierError(f"cannot open crawl state {path}: {exc}") from exc
        self._t_hosts = f"{db}.hosts"
        self._t_robots = f"{db}.robots"
        # state.sqlite -> seen.bloom (state@1.sqlite -> seen@1.bloom: ``partition.tagged``)
        self._seen_path = path.with_name(
            path.name.replace("state", "seen", 1).replace(".sqlite", ".bloom")
        )
        self.hosts: dict[str, HostState] = {}
        self._robots: OrderedDict[str, RobotsRecord] = OrderedDict()
        self._robots_cap = robots_cache_size
        self._unsaved_counters: Callable[[], dict[str, int]] | None = None
        self._output_sizes: Callable[[], dict[str, int]] | None = None
        self._flushes = 0
        # what the queues add to ``stats`` (set by the frontier that shares this store)
        self.queue_stats: Callable[[], dict[str, int]] = dict
        for key, data in self.db.execute(f"SELECT key, data FROM {self._t_hosts}"):
            self.hosts[key] = host_from_json(key, data)
        # the write sequence: queue order (FIFO among equals) and the seen-set's version
        top = int(self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM urls").fetchone()[0])
        self._seq = itertools.count(top + 1)
        self.last_seq = top
        self.seen: SeenSet | StoredSeen
        if seen_mode == "disk":
            self.seen = StoredSeen(self.db)
            return
        self.seen = SeenSet(seen_mode, expected_urls, seen_fp_rate)
        if self.seen.load(self._seen_path) != top:  # missing, or older than the store
            self.seen = SeenSet(seen_mode, expected_urls, seen_fp_rate)
            for (u,) in self.db.execute("SELECT url FROM urls"):
                self.seen.add(u)

    def next_seq(self) -> int:
        self.last_seq = next(self._seq)
        return self.last_seq

    def host_now(self, key: str) -> HostState:
        h = self.hosts.get(key)
        if h is None:
            h = self.hosts[key] = HostState(key=key)
        return h

    def parked_now(self, now: float) -> list[tuple[str, float, int]]:
        """``(key, parked until, failures in a row)`` of the sites parked at ``now``."""
        return [
            (k, h.parked_until, h.consecutive_failures)
            for k, h in self.hosts.items()
            if politeness.is_parked(h, now)
        ]

    def save_host(self, state: HostState) -> None:
        self.hosts[state.key] = state
        self.db.execute(
            f"INSERT OR REPLACE INTO {self._t_hosts} VALUES (?,?)",
            (state.key, host_to_json(state)),
        )

    # -- the seen-set -----------------------------------------------------------------
    async def unseen(self, urls: Sequence[str]) -> list[str]:
        return self.seen.unseen(urls)

    async def mark_seen(self, urls: Sequence[str]) -> None:
        """URLs refused at the gate: seen, never queued (the disk seen-set files them)."""
        self.seen.add_refused(urls)

    # -- refusals an option can lift (scope, allow-list, never-crawl list): ``readmit`` --
    def note_refused(self, rows: Sequence[tuple[str, str, int, int, int, float]]) -> None:
        """``(url, reason, depth, hops, kind, priority)`` of URLs the gate refused."""
        self.db.executemany("INSERT OR IGNORE INTO refused VALUES (?,?,?,?,?,?)", rows)

    def refused_rows(self) -> list[tuple[str, str, int, int, int, float]]:
        return list(self.db.execute("SELECT * FROM refused"))

    def forget_refused(self, urls: Sequence[str]) -> None:
        self.db.executemany("DELETE FROM refused WHERE url=?", [(u,) for u in urls])

    # -- site states and robots -----------------------------------------------------------
    async def host(self, key: str) -> HostState:
        return self.host_now(key)

    async def robots(self, origin: str) -> RobotsRecord | None:
        rec = self._robots.get(origin)
        if rec is not None:
            self._robots.move_to_end(origin)
            return rec
        row = self.db.execute(
            f"SELECT {_ROBOTS_COLS} FROM {self._t_robots} WHERE origin=?", (origin,)
        ).fetchone()
        if row is None:
            return None
        good = bytes(row[5]) if row[5] is not None else None
        rec = RobotsRecord(origin, row[1], row[2], bytes(row[3]), row[4], good, *row[6:])
        self._cache_robots(rec)
        return rec

    async def save_robots(self, record: RobotsRecord) -> None:
        self.db.execute(
            f"INSERT OR REPLACE INTO {self._t_robots} ({_ROBOTS_COLS}) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                record.origin,
                record.fetched_at,
                record.status,
                record.body,
                record.failing_since,
                record.good_body,
                record.failures,
                record.redirect_to,
                record.hops,
            ),
        )
        self.commit()  # rare, and a robots.txt must not be asked twice after a crash
        self._cache_robots(record)

    def _cache_robots(self, rec: RobotsRecord) -> None:
        self._robots[rec.origin] = rec
        self._robots.move_to_end(rec.origin)
        while len(self._robots) > self._robots_cap:
            self._robots.popitem(last=False)

    # -- conditional GET ----------------------------------------------------------------
    async def validators(self, url: str) -> tuple[str | None, str | None, float] | None:
        row = self.db.execute(
            "SELECT etag, last_modified, fetched_at FROM pages WHERE url=?", (url,)
        ).fetchone()
        return (row[0], row[1], row[2]) if row is not None else None

    async def save_validators(
        self, url: str, etag: str | None, last_modified: str | None, fetched_at: float
    ) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO pages VALUES (?,?,?,?)", (url, etag, last_modified, fetched_at)
        )

    # -- bookkeeping ------------------------------------------------------------------
    async def add_counters(self, delta: dict[str, int]) -> None:
        self._add_counters(delta)

    def _add_counters(self, delta: dict[str, int]) -> None:
        self.db.executemany(
            "INSERT INTO counters VALUES (?,?) ON CONFLICT(name) DO UPDATE "
            "SET value = value + excluded.value",
            [(k, v) for k, v in delta.items() if v],
        )

    def counters_from(self, unsaved: Callable[[], dict[str, int]]) -> None:
        """Every commit adds ``unsaved()`` to the counters first, in the same transaction:
        the counts on disk are those of the URLs on disk, whenever the process dies."""
        self._unsaved_counters = unsaved

    def sizes_from(self, sizes: Callable[[], dict[str, int]]) -> None:
        """Every commit saves ``sizes()`` (the crawl's data files, by name), keeping the
        previous commit's too: what ``storage.uncommitted`` reads back at a resume."""
        self._output_sizes = sizes

    def output_starts(self) -> dict[str, int]:
        """Each data file's size two commits back: where the rows of uncommitted pages may
        begin (0 for a file saved only once)."""
        return dict(self.db.execute("SELECT name, prev FROM outputs").fetchall())

    async def counters(self) -> dict[str, int]:
        return dict(self.db.execute("SELECT name, value FROM counters").fetchall())

    async def stats(self) -> dict[str, int]:
        now = time.time()
        return {
            **self.queue_stats(),
            "parked": sum(1 for h in self.hosts.values() if politeness.is_parked(h, now)),
            "seen": self.seen.count,
            "seen_bytes": self.seen.bytes_used() if self.seen.mode != "exact" else 0,
        }

    # -- --processes N: links for other processes' sites, kept until their owner has them --
    def outbox_add(self, peer: int, batch: bytes) -> int:
        """Saved with the page that found them (same transaction); returns its number."""
        try:
            cur = self.db.execute("INSERT INTO outbox(peer, batch) VALUES (?,?)", (peer, batch))
        except sqlite3.DatabaseError as exc:
            raise FrontierError(f"cannot save crawl state: {exc}") from exc
        return int(cur.lastrowid or 0)

    def outbox_drop(self, peer: int, upto: int) -> None:
        """The owner ``peer`` has saved every batch up to ``upto``."""
        try:
            self.db.execute("DELETE FROM outbox WHERE peer=? AND seq<=?", (peer, upto))
        except sqlite3.DatabaseError as exc:
            raise FrontierError(f"cannot save crawl state: {exc}") from exc

    def outbox_rows(self) -> list[tuple[int, int, bytes]]:
        """What the last run sent and was not told was saved: sent again on resuming."""
        return list(self.db.execute("SELECT seq, peer, batch FROM outbox ORDER BY seq"))

    def commit(self) -> None:
        try:
            if self._unsaved_counters is not None and (delta := self._unsaved_counters()):
                self._add_counters(delta)
            if self._output_sizes is not None:
                self.db.executemany(
                    "INSERT INTO outputs VALUES (?,?,0) ON CONFLICT(name) DO UPDATE "
                    "SET prev = size, size = excluded.size",
                    list(self._output_sizes().items()),
                )
            self.db.commit()
        except sqlite3.DatabaseError as exc:
            raise FrontierError(f"cannot save crawl state: {exc}") from exc

    async def flush(self) -> None:
        self.commit()
        self._flushes += 1
        if self.seen.mode == "bloom" and self._flushes % _SEEN_SAVE_EVERY == 0:
            self._save_seen()

    def _save_seen(self) -> None:
        self.seen.save(self._seen_path, self.last_seq)

    async def close(self) -> None:
        """Closed even when the last commit fails (disk full): what was committed stands."""
        try:
            await self.flush()
            self._save_seen()
        finally:
            self.db.close()


class StoredSeen:
    """The exact seen-set held in the store itself (``--seen disk``, the default): a URL is
    seen if it is a row of ``urls`` (queued, ever) or of ``seen`` (refused at the gate).

    In memory only the last ``recent`` URLs answered or added, first in first out: links to a
    site's navigation repeat on every page and are answered there. An exact set of the URLs
    in memory held about 140 bytes per URL seen, and a long crawl sees 3-4 new URLs per
    request (``bench/soak.py``); here memory is flat, at the cost of a primary-key lookup for
    a URL not recent (one query per batch of links, ``unseen``).
    """

    mode = "disk"
    _CHUNK = 500  # URLs per query (under SQLite's 999 bound variables of old builds)

    def __init__(self, db: sqlite3.Connection, recent: int = 65_536) -> None:
        self._db = db
        # an OrderedDict, not a dict: a dict's oldest key, after many taken from its front,
        # is found by scanning the holes they left (``next(iter(d))`` grew with the crawl:
        # 16 % of the frontier's time at 300,000 URLs queued, measured with py-spy)
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._cap = recent
        row = db.execute("SELECT (SELECT COUNT(*) FROM urls) + (SELECT COUNT(*) FROM seen)")
        self.count = int(row.fetchone()[0])

    def _remember(self, url: str) -> None:
        recent = self._recent
        recent[url] = None
        if len(recent) > self._cap:
            recent.popitem(last=False)

    def __contains__(self, url: str) -> bool:
        if url in self._recent:
            return True
        if self._db.execute(
            "SELECT 1 FROM urls WHERE url=? UNION ALL SELECT 1 FROM seen WHERE url=?", (url, url)
        ).fetchone():
            self._remember(url)
            return True
        return False

    def add(self, url: str) -> None:
        """A URL about to be queued (its row in ``urls`` follows in the same transaction)."""
        self._remember(url)
        self.count += 1

    def add_refused(self, urls: Sequence[str]) -> None:
        cur = self._db.executemany("INSERT OR IGNORE INTO seen VALUES (?)", ((u,) for u in urls))
        self.count += max(cur.rowcount, 0)
        for u in urls:
            self._remember(u)

    def unseen(self, urls: Sequence[str]) -> list[str]:
        """The URLs of ``urls`` never seen: a query per ``_CHUNK`` for those not recent."""
        recent = self._recent
        ask = [u for u in urls if u not in recent]
        if not ask:
            return []
        known: set[str] = set()
        for i in range(0, len(ask), self._CHUNK):
            part = ask[i : i + self._CHUNK]
            marks = ",".join("?" * len(part))
            known.update(
                r[0]
                for r in self._db.execute(
                    f"SELECT url FROM urls WHERE url IN ({marks}) "
                    f"UNION ALL SELECT url FROM seen WHERE url IN ({marks})",
                    (*part, *part),
                )
            )
        for u in known:
            self._remember(u)
        return [u for u in ask if u not in known]

    def bytes_used(self) -> int:
        """An estimate of the recent URLs' memory (the rest is on disk)."""
        return len(self._recent) * 200  # a URL of ~90 characters and its dict slot

    def save(self, path: Path, tag: int = 0) -> None:
        """Nothing to save: the store is the seen-set."""
