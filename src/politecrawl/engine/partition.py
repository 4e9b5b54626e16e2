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
- Whether the crawler's own network is down: each partition's outage guard writes a row
  (``OutageBoard``) and counts the others' sites with its own (``outage``).
- When the crawl is over: every process idle and every batch sent received (``finished``),
  read from shared counters under one lock; a stop (Ctrl-C, a limit, a storage error) in one
  process stops all; ``--max-pages`` counts the pages of all.

The supervisor (``supervisor.run_partitioned``, the ``politecrawl crawl`` process) holds the output
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
import pickle
import socket
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from politecrawl.engine import outage
from politecrawl.errors import PolitecrawlError
from politecrawl.polite import politeness
from politecrawl.urls.canonical import politeness_key

if TYPE_CHECKING:
    from politecrawl.engine.admission import Admission
    from politecrawl.frontier import Outbox

_HEAD = 8  # bytes of a frame's length
_READ_LIMIT = 1 << 30
_IP_SLOTS = 1 << 16  # server IPs hashed into this many slots (a collision only waits more)
_IP_POLL_S = 0.05  # a key whose IP another process holds asks again after this
_IP_FIELDS = 6  # per slot: see ``Shared.ips``
_SENT_CACHE = 200_000  # URLs remembered as sent (about 30 MB at the most)
IDLE_POLL_S = 0.05  # nothing queued in a partition: how often it looks whether the crawl is over
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
    # per slot: holding partition + 1 (0: free), holds, free again at (Unix time); then the
    # claim to its next turn: partition + 1 (0: none), its key due since, claim lapses at
    ips: Any
    outage: Any  # per partition: its outage guard's row (``outage.ROW`` numbers)
    relevant: Any  # per partition: its relevant pages, earlier runs' too (``--target-relevant``)

    @classmethod
    def make(cls, ctx: Any, count: int) -> Shared:
        return cls(
            count,
            ctx.Lock(),
            ctx.RawArray(ctypes.c_double, 4 * count + 1),
            ctx.RawArray(ctypes.c_double, _IP_FIELDS * _IP_SLOTS),
            ctx.RawArray(ctypes.c_double, outage.ROW * count),
            ctx.RawArray(ctypes.c_double, count),
        )


class OutageBoard:
    """The outage guards of all partitions (``outage.Board``): an outage is told by the crawl
    as a whole, not by each process from its own few sites. Each writes its own row only, and
    a row read while it is written is at worst a moment old: no lock."""

    def __init__(self, shared: Shared, index: int) -> None:
        self._rows, self._count, self._me = shared.outage, shared.count, index

    def put(self, row: Sequence[float]) -> None:
        base = outage.ROW * self._me
        self._rows[base : base + len(row)] = row

    def others(self) -> list[Sequence[float]]:
        w = outage.ROW
        return [self._rows[w * j : w * (j + 1)] for j in range(self._count) if j != self._me]


class IpTable:
    """One request in flight per server IP over all partitions, and the gap after it. Asked by
    the frontier after its own IP rule (``SqliteFrontier._take_ready``); an IP hashes to a slot,
    and two IPs in one slot only wait for each other."""

    def __init__(self, shared: Shared, index: int) -> None:
        self._lock, self._ips, self._me = shared.lock, shared.ips, float(index + 1)

    def hold(self, ip: str, now: float, since: float | None = None) -> float:
        """0.0: the IP is this process's until ``release``; else when to ask again. ``since``:
        when the asking key first wanted the IP. The turns go first come first served over the
        processes: one turned away lays claim to the next turn unless another process's key
        has waited longer (``politeness.ip_first``); without it, the process that released the
        IP and the one waiting raced at its next time, and names waited for nothing."""
        since = now if since is None else since
        i = _IP_FIELDS * (zlib.crc32(ip.encode()) % _IP_SLOTS)
        ips, me = self._ips, self._me
        with self._lock:
            holder = ips[i]
            mine = holder == me  # (held here for another IP of the slot: no wait)
            free_at = 0.0 if mine else float(ips[i + 2])
            first = politeness.ip_first(ips[i + 3] in (0.0, me), since, ips[i + 4], ips[i + 5], now)
            gate = politeness.ip_gate((bool(holder) and not mine) or not first, free_at, now)
            if gate is politeness.IpGate.TAKE:
                ips[i], ips[i + 1] = me, ips[i + 1] + 1
                if ips[i + 3] == me:
                    ips[i + 3] = 0.0
                return 0.0
            if first:  # the next turn is this process's (its claim renewed at each ask)
                until = politeness.ip_claim_until(free_at, now)
                ips[i + 3], ips[i + 4], ips[i + 5] = me, since, until
            if gate is politeness.IpGate.QUEUE:
                return now + _IP_POLL_S
            return free_at

    def release(self, ip: str, free_at: float) -> None:
        i = _IP_FIELDS * (zlib.crc32(ip.encode()) % _IP_SLOTS)
        ips = self._ips
        with self._lock:
            ips[i + 1] -= 1
            ips[i + 2] = politeness.ip_free_at(ips[i + 2], free_at)
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
        self.outage = OutageBoard(shared, index)
        self._owner_of: dict[str, int] = {}  # authority -> its partition (per-link hot path)
        self._sent: set[str] = set()  # URLs already sent (their owner's gate decides once)
        self._writers: dict[int, asyncio.StreamWriter] = {}
        self._readers: list[asyncio.Task[None]] = []
        self._got: dict[int, int] = {}  # peer -> the last batch received (acked after a save)
        self._acked: dict[int, int] = {}
        self._admitting = 0
        self.admission: Admission | None = None  # this process's gate and store: ``open``
        self.store: Outbox | None = None
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

    async def open(
        self,
        admission: Admission,
        store: Outbox,
        wake: Callable[[], None],
        failed: Callable[[Exception], None],
    ) -> None:
        """Streams to every peer, their readers, and what the last run left unacknowledged.
        ``admission``: the gate links from peers go through; ``store``: where the links sent
        are kept until acknowledged; ``wake``: the crawler's loop (links came); ``failed``:
        its storage error."""
        self.admission, self.store = admission, store
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

    def claim_page(self, mine: int, limit: int | None) -> bool:
        """One more page request of this run, if ``--max-pages`` (``limit``) allows it over
        every partition: counted at once, under the lock, so that the processes together
        never ask more than the limit (each checking the sum now and then overshot it)."""
        sh, i = self._shared, self.index
        with sh.lock:
            total = sum(sh.state[4 * j + 3] for j in range(self.count)) - sh.state[4 * i + 3]
            if limit is not None and total + mine >= limit:
                sh.state[4 * i + 3] = float(mine)
                return False
            sh.state[4 * i + 3] = float(mine + 1)
        return True

    def relevant(self, mine: int) -> int:
        """The crawl's relevant pages (``--target-relevant`` is the crawl's), this
        partition's being ``mine``."""
        sh = self._shared
        with sh.lock:
            sh.relevant[self.index] = float(mine)
            return int(sum(sh.relevant[j] for j in range(self.count)))

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
