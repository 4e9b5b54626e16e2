"""Every core: the sites partitioned over N crawler processes (``--processes N``).

Each process is a whole crawler (fetch, page, WARC, logs, frontier) for the sites whose
politeness key hashes to it (``owner``), so a site, its queue, its seen URLs, its robots.txt
and its delay live in exactly one process, and one request per site at a time holds by
construction. What crosses processes:

- Links to another partition's sites. ``Partition.keep_mine`` sends them to their owner in
  one batch per page, over a socket pair per pair of processes; the owner puts them through
  its own gate (``Admission.admit``: seen-set, scope, never-crawl list, traps). Each batch is
  first written to the sender's state (``outbox``, in the same transaction as the page that
  found it), and dropped only once the owner says its own state holds it (an ``ack`` after
  the owner's save), so a ``kill -9`` loses none: a resumed crawl sends what is left again.
- One request in flight per server IP, and the gap after it: ``IpTable``, a table in shared
  memory that the frontier consults before it leases a key (``SqliteFrontier.shared_ips``).
- When the crawl is over: every process idle and every batch sent received (``finished``),
  read from shared counters under one lock; a stop (Ctrl-C, a limit, a storage error) in one
  process stops all; ``--max-pages`` counts the pages of all.

The supervisor (``run_partitioned``, the ``politecrawl crawl`` process) holds the output
folder's lock, spawns the N processes, waits for them and merges their summaries into
``summary.json``. Partition 0 writes the files of a one-process crawl; partition i > 0 the
same names tagged ``@i`` (``state@1.sqlite``, ``log/requests@1.jsonl``, WARC files
``politecrawl@1-*.warc.gz``); ``storage.logs.iter_log_records`` reads a log's partitions
together, so the operator tools read one folder. Why this split and not parsing in a pool:
docs/architecture.md ("Every core"), measured.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import dataclasses
import json
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import socket
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from politecrawl.errors import ConfigError, PolitecrawlError
from politecrawl.urls.canonical import politeness_key

if TYPE_CHECKING:
    from politecrawl.config import CrawlConfig
    from politecrawl.engine.admission import Admission
    from politecrawl.frontier.sqlitestore import SqliteStore

_HEAD = 8  # bytes of a frame's length
_READ_LIMIT = 1 << 30
_IP_SLOTS = 1 << 16  # server IPs hashed into this many slots (a collision only waits more)
_IP_POLL_S = 0.05  # a key whose IP another process holds asks again after this
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_SENT_CACHE = 200_000  # URLs remembered as sent (about 30 MB at the most)
IDLE_POLL_S = 0.05  # nothing queued in a partition: how often it looks whether the crawl is over
_LAYOUT = "partitions.json"  # OUT/partitions.json: how many processes the crawl was made with
STOP_REASONS = (
    "", "interrupted", "max_pages", "max_time", "storage_error", "target_relevant",
    "partition_died",
)  # fmt: skip


def owner(key: str, count: int) -> int:
    """The partition a politeness key belongs to."""
    return zlib.crc32(key.encode()) % count


def tagged(name: str, index: int) -> str:
    """A file's name for partition ``index``: ``state.sqlite`` -> ``state@1.sqlite`` (0: as is)."""
    if index == 0:
        return name
    stem, dot, rest = name.partition(".")
    return f"{stem}@{index}{dot}{rest}"


@dataclasses.dataclass
class Shared:
    """What the processes share: counters for the end of the crawl, the page count, the stop
    flag and the IP table, in shared memory under one lock (made by the supervisor)."""

    count: int
    lock: Any
    # per partition: idle, batches sent, batches received, pages this run; then the stop flag
    state: Any
    ips: Any  # per slot: holding partition + 1 (0: free), holds, free again at (Unix time)

    @classmethod
    def make(cls, ctx: Any, count: int) -> Shared:
        return cls(
            count,
            ctx.Lock(),
            ctx.RawArray(ctypes.c_double, 4 * count + 1),
            ctx.RawArray(ctypes.c_double, 3 * _IP_SLOTS),
        )


class IpTable:
    """One request in flight per server IP over all partitions, and the gap after it. Asked by
    the frontier after its own IP rule (``SqliteFrontier._take_ready``); an IP hashes to a slot,
    and two IPs in one slot only wait for each other."""

    def __init__(self, shared: Shared, index: int) -> None:
        self._lock, self._ips, self._me = shared.lock, shared.ips, float(index + 1)

    def hold(self, ip: str, now: float) -> float:
        """0.0: the IP is this process's until ``release``; else when to ask again."""
        i = 3 * (zlib.crc32(ip.encode()) % _IP_SLOTS)
        ips = self._ips
        with self._lock:
            holder = ips[i]
            if holder and holder != self._me:
                return now + _IP_POLL_S
            if not holder and ips[i + 2] > now:
                return float(ips[i + 2])
            ips[i], ips[i + 1] = self._me, ips[i + 1] + 1
        return 0.0

    def release(self, ip: str, free_at: float) -> None:
        i = 3 * (zlib.crc32(ip.encode()) % _IP_SLOTS)
        ips = self._ips
        with self._lock:
            ips[i + 1] -= 1
            ips[i + 2] = max(ips[i + 2], free_at)
            if ips[i + 1] <= 0:
                ips[i], ips[i + 1] = 0.0, 0.0


class Partition:
    """This process's part of a partitioned crawl (see the module docstring)."""

    def __init__(
        self,
        index: int,
        count: int,
        socks: dict[int, socket.socket],
        shared: Shared,
        key_mode: str,
    ) -> None:
        self.index, self.count = index, count
        self._socks = socks
        self._shared = shared
        self._mode = key_mode
        self.ips = IpTable(shared, index)
        self._owner_of: dict[str, int] = {}  # authority -> its partition (per-link hot path)
        self._sent: set[str] = set()  # URLs already sent (their owner's gate decides once)
        self._writers: dict[int, asyncio.StreamWriter] = {}
        self._readers: list[asyncio.Task[None]] = []
        self._got: dict[int, int] = {}  # peer -> the last batch received (acked after a save)
        self._acked: dict[int, int] = {}
        self._admitting = 0
        self.admission: Admission | None = None
        self.store: SqliteStore | None = None
        self.wake: Callable[[], None] = lambda: None
        self.failed: Callable[[Exception], None] = lambda exc: None  # the crawler's
        self.received = 0  # links received (a counter of the crawl)

    # -- links ----------------------------------------------------------------------------
    def keep_mine(
        self, items: Sequence[tuple[str, float]], depth: int, hops: int, kind: int, src: str | None
    ) -> list[tuple[str, float]]:
        """The items whose sites are this partition's; the others go to their owners."""
        mine: list[tuple[str, float]] = []
        out: dict[int, list[tuple[str, float]]] = {}
        owner_of, me, sent = self._owner_of, self.index, self._sent
        for url, priority in items:
            start = url.find("//") + 2
            end = url.find("/", start)
            authority = url[start:end] if end >= 0 else url[start:]
            who = owner_of.get(authority)
            if who is None:
                key = politeness_key(url, "domain" if self._mode == "domain" else "host")
                who = owner_of[authority] = owner(key, self.count)
            if who == me:
                mine.append((url, priority))
            elif url not in sent:
                sent.add(url)
                out.setdefault(who, []).append((url, priority))
        if len(sent) > _SENT_CACHE:
            sent.clear()  # only a saving of work: the owner's seen-set is the truth
        for peer, batch in out.items():
            self._send(peer, pickle.dumps((depth, hops, kind, src, batch), protocol=5))
        return mine

    def _send(self, peer: int, payload: bytes) -> None:
        assert self.store is not None
        seq = self.store.outbox_add(peer, payload)  # saved with the page that found them
        sh = self._shared
        with sh.lock:  # counted before it can be received
            sh.state[4 * self.index + 1] += 1
        self._frame(peer, ("links", seq, payload))

    def _frame(self, peer: int, message: tuple[Any, ...]) -> None:
        writer = self._writers.get(peer)
        if writer is None or writer.is_closing():
            return  # the peer has finished: a resumed crawl sends the outbox again
        frame = pickle.dumps(message, protocol=5)
        writer.write(len(frame).to_bytes(_HEAD, "little") + frame)

    async def open(self, wake: Callable[[], None], failed: Callable[[Exception], None]) -> None:
        """Streams to every peer, their readers, and what the last run left unacknowledged.
        ``wake``: the crawler's loop (links came); ``failed``: its storage error."""
        self.wake, self.failed = wake, failed
        for peer, sock in self._socks.items():
            reader, writer = await asyncio.open_connection(sock=sock, limit=_READ_LIMIT)
            self._writers[peer] = writer
            self._readers.append(asyncio.create_task(self._read(peer, reader)))
        assert self.store is not None
        sh = self._shared
        for seq, peer, payload in self.store.outbox_rows():
            if peer in self._writers:
                with sh.lock:
                    sh.state[4 * self.index + 1] += 1
                self._frame(peer, ("links", seq, payload))

    async def _read(self, peer: int, reader: asyncio.StreamReader) -> None:
        sh, i = self._shared, self.index
        with contextlib.suppress(asyncio.IncompleteReadError, OSError, asyncio.CancelledError):
            while True:
                size = int.from_bytes(await reader.readexactly(_HEAD), "little")
                message = pickle.loads(await reader.readexactly(size))
                if message[0] == "ack":
                    if self.store is not None:
                        self.store.outbox_drop(peer, message[1])
                    continue
                _, seq, payload = message
                self._admitting += 1
                with sh.lock:  # busy before counted: the end is never seen in between
                    sh.state[4 * i] = 0.0
                    sh.state[4 * i + 2] += 1
                try:
                    depth, hops, kind, src, batch = pickle.loads(payload)
                    self.received += len(batch)
                    assert self.admission is not None
                    await self.admission.admit(
                        batch, depth=depth, hops=hops, kind=kind, source=src, routed=True
                    )
                    self._got[peer] = max(self._got.get(peer, 0), seq)
                except (PolitecrawlError, OSError) as exc:  # the store failed: the crawl stops
                    self.failed(exc)  # (the batch stays in the sender's outbox)
                    return
                finally:
                    self._admitting -= 1
                self.wake()

    def saved(self) -> None:
        """After this process saved its state: the batches received are safe, say so."""
        for peer, seq in self._got.items():
            if self._acked.get(peer) != seq:
                self._acked[peer] = seq
                self._frame(peer, ("ack", seq))

    # -- the crawl as a whole ---------------------------------------------------------------
    def finished(self) -> bool:
        """Called when this process has nothing left: True when no process has anything left
        and no batch is on its way."""
        if self._admitting:
            return False
        sh, n = self._shared, self.count
        with sh.lock:
            sh.state[4 * self.index] = 1.0
            s = sh.state
            idle = all(s[4 * j] for j in range(n))
            sent = sum(s[4 * j + 1] for j in range(n))
            got = sum(s[4 * j + 2] for j in range(n))
        return idle and sent == got

    def pages(self, mine: int, stop: Callable[[str], None] | None = None) -> int:
        """The pages of this run in every partition, this one's being ``mine``; ``stop`` is
        called with the reason if another partition has stopped the crawl."""
        s = self._shared.state
        s[4 * self.index + 3] = float(mine)
        if stop is not None and (why := self.stop_requested()):
            stop(why)
        return int(sum(s[4 * j + 3] for j in range(self.count)))

    def request_stop(self, why: str) -> None:
        code = STOP_REASONS.index(why) if why in STOP_REASONS else 1
        sh = self._shared
        with sh.lock:
            if not sh.state[4 * self.count]:
                sh.state[4 * self.count] = float(code)

    def stop_requested(self) -> str | None:
        code = int(self._shared.state[4 * self.count])
        return STOP_REASONS[code] if code else None

    async def close(self, counters: Counter[str]) -> None:
        counters["links_from_other_processes"] += self.received
        for task in self._readers:
            task.cancel()
        for writer in self._writers.values():
            with contextlib.suppress(Exception):
                writer.close()
        await asyncio.gather(*self._readers, return_exceptions=True)


# -- the supervisor ---------------------------------------------------------------------------
def check_layout(out: Path, processes: int) -> None:
    """A crawl is resumed with the processes it was made with: its sites are spread over
    them by hash, and a different count would hand a site to two processes."""
    layout = out / _LAYOUT
    before = 1
    if layout.exists():
        with contextlib.suppress(ValueError, OSError):
            before = int(json.loads(layout.read_text())["processes"])
    elif not (out / "state.sqlite").exists():
        before = processes  # a new crawl
    if before != processes:
        raise ConfigError(
            f"{out} is a crawl made with --processes {before}: resume it with --processes "
            f"{before} (its sites are spread over that many processes)"
        )
    if processes > 1 and not layout.exists():
        out.mkdir(parents=True, exist_ok=True)
        layout.write_text(json.dumps({"processes": processes}) + "\n")


def run_partitioned(config: CrawlConfig) -> tuple[dict[str, Any], str | None]:
    """The crawl in ``config.processes`` crawler processes; returns the merged summary and the
    first fatal error. Runs in the CLI's process, which holds the output folder's lock."""
    from politecrawl.engine.journal import summary_of, write_summary
    from politecrawl.storage.outlock import OutputLock

    n, out = config.processes, config.out_dir
    if config.politeness.key_mode == "ip":
        raise ConfigError(
            "--politeness-key ip needs every site resolved before it is assigned to a "
            "process: use --processes 1 with it (or the default host key)"
        )
    if config.state_file is not None:
        raise ConfigError("--state is one file for one process: use --processes 1 with it")
    if config.handler:
        from politecrawl.handler import load_handler

        load_handler(config.handler)  # a bad import string: one line here, not N tracebacks
    out.mkdir(parents=True, exist_ok=True)
    lock = OutputLock(out)
    try:
        check_layout(out, n)
        seeds_file = out / "seeds.txt"
        if not seeds_file.exists():
            seeds_file.write_text("".join(f"{u}\n" for u in config.seeds), encoding="utf-8")
        # fork: the partitions start with this process's modules already imported (0.5 s of
        # imports each with spawn, on the crawl's critical path); safe here, where no thread,
        # event loop or database is open yet (only the output folder's lock, which they share)
        ctx: Any = multiprocessing.get_context(
            "fork" if sys.platform.startswith("linux") else "spawn"
        )
        shared = Shared.make(ctx, n)
        ends: dict[int, dict[int, socket.socket]] = {i: {} for i in range(n)}
        for i in range(n):
            for j in range(i + 1, n):
                a, b = socket.socketpair()
                ends[i][j], ends[j][i] = a, b
        child_cfg = dataclasses.replace(config, processes=1, progress=False)
        procs = [
            ctx.Process(
                target=_partition_main,
                args=(child_cfg, i, n, ends[i], shared, os.getpid()),
                name=f"politecrawl-partition-{i}",
            )
            for i in range(n)
        ]
        for i in range(n):  # what a last run left must not pass for this one's
            (out / tagged("summary.json", i)).unlink(missing_ok=True)
        for p in procs:
            p.start()
        for socks in ends.values():
            for sock in socks.values():
                sock.close()
        _wait(procs, shared)
        summaries = []
        for i in range(n):
            path = out / tagged("summary.json", i)
            with contextlib.suppress(OSError, ValueError):
                summaries.append(json.loads(path.read_text()))
        for s in summaries:
            if "error" in s:  # the error a partition stopped on, as the one process says it
                from politecrawl import errors
                kind = getattr(errors, s["error"], errors.PolitecrawlError)
                raise kind(s["message"])
        counters: Counter[str] = Counter()
        for s in summaries:
            counters.update(s.get("counters", {}))
        stops = [s.get("stopped_by", "done") for s in summaries]
        stopped_by = next((s for s in stops if s != "done"), "done")
        fatal = next((s["fatal"] for s in summaries if s.get("fatal")), None)
        if len(summaries) < n:
            if all(p.exitcode in (0, 130) for p in procs):  # a second Ctrl-C: out at once
                stopped_by = "interrupted"
            else:
                stopped_by = "partition_died"
                fatal = fatal or "a crawler process ended without saving its summary"
        summary = summary_of(
            counters,
            seconds=max((float(s.get("seconds", 0.0)) for s in summaries), default=0.0),
            queued_left=sum(int(s.get("queued_left", 0)) for s in summaries),
            stopped_by=stopped_by,
            sites_lost=[x for s in summaries for x in s.get("sites_lost", [])],
        )
        write_summary(out / "summary.json", summary)
        return summary.to_json(), fatal
    finally:
        lock.release()


def _wait(procs: list[Any], shared: Shared) -> None:
    """Until every partition has ended. SIGTERM is passed on; Ctrl-C reaches them all (one
    process group), so this process ignores it from here on (a second Ctrl-C ends them at
    once, and must not cut the summary short here). A partition that dies stops the others
    (they save and end)."""

    def forward(signum: int, _frame: Any) -> None:
        for p in procs:
            if p.is_alive() and p.pid is not None:
                with contextlib.suppress(OSError):
                    os.kill(p.pid, signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    running = {p.sentinel: p for p in procs}
    while running:
        for ended in multiprocessing.connection.wait(list(running)):
            p = running.pop(ended)
            p.join()
            if p.exitcode != 0:
                with shared.lock:
                    if not shared.state[4 * shared.count]:
                        shared.state[4 * shared.count] = float(STOP_REASONS.index("partition_died"))


def _partition_main(
    config: CrawlConfig,
    index: int,
    count: int,
    socks: dict[int, socket.socket],
    shared: Shared,
    parent: int,
) -> None:
    """One partition's life: a crawler of its sites, its summary saved for the supervisor."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # killed with the supervisor
    if os.getppid() != parent:
        return
    from politecrawl.engine import gctune
    from politecrawl.engine.crawler import Crawler

    gctune.tune()
    part = Partition(index, count, socks, shared, config.politeness.key_mode)
    path = config.out_dir / tagged("summary.json", index)
    try:
        crawler = Crawler(config, partition=part)
        summary = asyncio.run(crawler.run())
    except PolitecrawlError as exc:  # a damaged store, say: one line, as with one process
        part.request_stop("partition_died")
        path.write_text(json.dumps({"error": type(exc).__name__, "message": str(exc)}) + "\n")
        return
    data = summary.to_json()
    data["fatal"] = crawler.fatal
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)
