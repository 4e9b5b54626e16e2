"""The CPU-heavy work of a page (decode, parse, fingerprints) in worker processes.

Used where a crawl must stay one process: the API (``Crawler(config)`` with
``processes > 1``, whose page handler and sinks are objects in the caller's process) and a
Redis worker (``politecrawl worker``, already one of many processes on a shared frontier).
``politecrawl crawl --processes N`` partitions the sites over N whole crawler processes
instead (``partition``), which measured better: docs/architecture.md ("Every core").

The crawler process keeps the frontier, the gate, the seen-set, politeness, the logs and the
WARC files, and ``N - 1`` worker processes only compute: bytes in, a picklable result out.
So every promise made with one process holds unchanged with N, by construction.

Work stealing: a page goes to the least busy worker while it has fewer than
``_QUEUED_PER_WORKER`` queued (so none idles while the crawler is busy); otherwise the
crawler's own process does it inline, as with one process.

The transport is the event loop's own: one socket pair per worker, length-prefixed pickles
written and read by the loop (``asyncio`` streams), nothing else. ``ProcessPoolExecutor``
was measured first: its feeder and manager threads, its queues and the hand-offs between
them and the loop took about a quarter of the crawler process's CPU samples on the rich test
web (py-spy), and a crawl of 2,000 sites x 5 rich pages with ``--processes 2`` cost 3.3
CPU-s per 1,000 pages with it against 2.9 with this transport (two runs each, same wall
time within noise). The stream's read limit is above any frame, so a result is read at once
rather than paused and resumed by a loop busy with other turns (that pausing sent most pages
back inline: 35 % to the worker instead of 75 %).

The workers start with the ``spawn`` method (never ``fork`` from a
process with threads and an event loop), as the crawler's own children: on Linux each asks
the kernel to kill it when the crawler dies (``PR_SET_PDEATHSIG``), so a ``kill -9`` of the
crawler leaves no worker behind holding its terminal or pipes.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import itertools
import multiprocessing
import os
import pickle
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from politecrawl.engine import gctune
from politecrawl.errors import ConfigError, PolitecrawlError

P = ParamSpec("P")
T = TypeVar("T")

_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_QUEUED_PER_WORKER = 64
_HEAD = 8  # bytes of a frame's length
_READ_LIMIT = 1 << 30
_SOCKET_BUFFER = 4 << 20


def default_processes() -> int:
    """The machine's usable cores."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class JobFailed(PolitecrawlError):
    """A job's result or exception could not be sent back (not picklable): what it was."""


class WorkerDied(PolitecrawlError):
    """A worker process ended with jobs in hand (killed, out of memory)."""


class WorkPool:
    """``await pool.run(fn, *args)``: in a worker process when one is free, else inline."""

    def __init__(self, processes: int) -> None:
        if processes < 1:
            raise ConfigError("processes must be >= 1")
        self.workers = processes - 1
        self._pool: list[_Worker] | None = None
        self.offloaded = 0
        self.inline = 0

    def start(self) -> None:
        """Start the workers now: they spend about a second importing, which the crawl's first
        requests (robots.txt) cover, instead of holding up its first pages."""
        if self.workers:
            self._start()

    def _start(self) -> list[_Worker]:
        if self._pool is None:
            ctx = multiprocessing.get_context("spawn")
            self._pool = [_Worker(ctx) for _ in range(self.workers)]
        return self._pool

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        if self.workers:
            worker = min(self._start(), key=_Worker.load)
            if worker.load() < _QUEUED_PER_WORKER:
                try:
                    result: T = await worker.call(fn, args, kwargs)
                    self.offloaded += 1
                    return result
                except WorkerDied:
                    # a worker died (killed, out of memory): carry on with one process, inline
                    self.workers = 0
                    self.close()
        self.inline += 1
        return fn(*args, **kwargs)

    def close(self) -> None:
        pool, self._pool = self._pool, None
        for worker in pool or ():
            worker.close()


class _Worker:
    """One worker process and the loop's end of its socket pair."""

    def __init__(self, ctx: Any) -> None:
        mine, theirs = socket.socketpair()
        for sock in (mine, theirs):  # room for a few pages each way (the kernel may cap it)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _SOCKET_BUFFER)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _SOCKET_BUFFER)
        self.process = ctx.Process(target=_serve, args=(theirs, os.getpid()), daemon=True)
        self.process.start()
        theirs.close()
        self._sock = mine
        self._ids = itertools.count()
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._writer: asyncio.StreamWriter | None = None
        self._opening: asyncio.Future[None] | None = None
        self._reading: asyncio.Task[None] | None = None
        self._dead: WorkerDied | None = None

    def load(self) -> int:
        return len(self._pending)

    async def call(self, fn: Callable[..., Any], args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
        if self._dead is not None:
            raise self._dead
        if self._writer is None:  # the first call opens the stream; the others wait for it
            if self._opening is None:
                self._opening = asyncio.ensure_future(self._open())
            await self._opening
        assert self._writer is not None
        job = next(self._ids)
        done = asyncio.get_running_loop().create_future()
        self._pending[job] = done
        frame = pickle.dumps((job, fn, args, kw), protocol=pickle.HIGHEST_PROTOCOL)
        self._writer.write(len(frame).to_bytes(_HEAD, "little") + frame)
        return await done

    async def _open(self) -> None:
        # a limit above any frame: a result is read in one go, not paused and resumed by a
        # loop that is busy with other turns meanwhile
        reader, self._writer = await asyncio.open_connection(sock=self._sock, limit=_READ_LIMIT)
        self._reading = asyncio.create_task(self._read(reader))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                size = int.from_bytes(await reader.readexactly(_HEAD), "little")
                job, ok, value = pickle.loads(await reader.readexactly(size))
                done = self._pending.pop(job, None)
                if done is not None and not done.done():
                    if ok:
                        done.set_result(value)
                    else:
                        done.set_exception(value)
        except (asyncio.IncompleteReadError, OSError) as exc:
            self._dead = WorkerDied(f"worker {self.process.pid} ended: {exc!r}")
            for done in self._pending.values():
                if not done.done():
                    done.set_exception(self._dead)
            self._pending.clear()

    def close(self) -> None:
        """EOF to the worker (it exits), then wait for it briefly; a stuck one is killed."""
        if self._reading is not None:
            self._reading.cancel()
        with contextlib.suppress(OSError):  # at once: the transport's close waits for the loop
            self._sock.shutdown(socket.SHUT_RDWR)
        if self._writer is not None:
            self._writer.close()
        else:
            self._sock.close()
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)


def _serve(sock: socket.socket, crawler_pid: int) -> None:
    """A worker's life: read a job, run it, send back its result or its exception."""
    _worker_init(crawler_pid)
    inbox = sock.makefile("rb")
    while True:
        head = inbox.read(_HEAD)
        if len(head) < _HEAD:
            return  # the crawler closed its end, or died
        job, fn, args, kw = pickle.loads(inbox.read(int.from_bytes(head, "little")))
        try:
            out = (job, True, fn(*args, **kw))
        except Exception as exc:  # the job's failure, whatever it is, is its caller's: sent back
            out = (job, False, exc)
        try:
            frame = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # an unpicklable result or exception: say what it was
            failed = JobFailed(f"{type(exc).__name__}: {exc}")
            frame = pickle.dumps((job, False, failed), protocol=pickle.HIGHEST_PROTOCOL)
        sock.sendall(len(frame).to_bytes(_HEAD, "little") + frame)


def _worker_init(crawler_pid: int) -> None:
    """Ctrl-C reaches the whole process group: the crawler stops gracefully and finishes the
    pages in hand, so its workers must not die of it first. And a worker dies with the
    crawler, however the crawler dies (Linux; elsewhere a worker ends at its next read of a
    closed queue)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != crawler_pid:  # the crawler died before the request took effect
        os._exit(1)
    gctune.tune()
