"""Every core: the CPU-heavy work of a page (decode, parse, fingerprints) in worker processes.

``--processes N`` keeps one crawler process, which alone owns the frontier, the gate, the
seen-set, politeness, the logs and the WARC files, and adds ``N - 1`` worker processes that
only compute: bytes in, a picklable result out. So every promise made with one process (one
request per site and per server, the gate, resume after ``kill -9``, the never-crawl list)
holds unchanged with N, by construction: nothing that decides or stores moved.

Why not hosts partitioned over N crawler processes? Then the state, the logs and the WARC
files split N ways (every operator tool would read N folders), a link found by one process
for another's host must cross over durably, and per-IP politeness needs hosts grouped by
address before they are resolved. Measured on the rich test web, the page work that moves is
about 60 % of a crawl's CPU (bench/throughput.py --profile): enough for two cores.

Work stealing: a page goes to a worker when one is free (at most two queued per worker, so
none idles while the crawler is busy); otherwise the crawler's own process does it inline,
as with one process. The workers start with the ``spawn`` method (never ``fork`` from a
process with threads and an event loop), as the crawler's own children: on Linux each asks
the kernel to kill it when the crawler dies (``PR_SET_PDEATHSIG``), so a ``kill -9`` of the
crawler leaves no worker behind holding its terminal or pipes.
"""

from __future__ import annotations

import asyncio
import ctypes
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import ParamSpec, TypeVar

from politecrawl.errors import ConfigError

P = ParamSpec("P")
T = TypeVar("T")

_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_QUEUED_PER_WORKER = 64


def default_processes() -> int:
    """The machine's usable cores."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class WorkPool:
    """``await pool.run(fn, *args)``: in a worker process when one is free, else inline."""

    def __init__(self, processes: int) -> None:
        if processes < 1:
            raise ConfigError("processes must be >= 1")
        self.workers = processes - 1
        self._executor: ProcessPoolExecutor | None = None
        self._queued = 0
        self.offloaded = 0
        self.inline = 0

    def _start(self) -> ProcessPoolExecutor:
        if self._executor is None:
            ctx = multiprocessing.get_context("spawn")
            self._executor = ProcessPoolExecutor(
                self.workers, mp_context=ctx, initializer=_worker_init, initargs=(os.getpid(),)
            )
        return self._executor

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        if self.workers and self._queued < self.workers * _QUEUED_PER_WORKER:
            executor = self._start()
            self._queued += 1
            try:
                loop = asyncio.get_running_loop()
                result: T = await loop.run_in_executor(executor, _call, fn, args, kwargs)
                self.offloaded += 1
                return result
            except BrokenProcessPool:
                # a worker died (killed, out of memory): carry on with one process, inline
                self.workers = 0
                self._executor = None
            finally:
                self._queued -= 1
        self.inline += 1
        return fn(*args, **kwargs)

    def close(self) -> None:
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)


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


def _call(fn: Callable[..., T], args: tuple[object, ...], kwargs: dict[str, object]) -> T:
    return fn(*args, **kwargs)
