"""The worker pool of ``--processes``: jobs run in another process, their errors come back,
and a worker that dies leaves the crawl running on one process (the job done inline)."""

from __future__ import annotations

import asyncio
import math
import os
import signal

import pytest

from politecrawl.engine.workpool import WorkPool
from politecrawl.errors import ConfigError

pytestmark = pytest.mark.e2e


async def test_jobs_run_in_a_worker_process_and_errors_come_back() -> None:
    pool = WorkPool(2)
    try:
        pids = await asyncio.gather(*(pool.run(os.getpid) for _ in range(20)))
        assert set(pids) != {os.getpid()} and pool.offloaded >= 1
        assert await pool.run(math.factorial, 6) == 720
        with pytest.raises(ValueError, match="negative"):
            await pool.run(math.factorial, -1)
        started = list(pool._pool or ())
    finally:
        pool.close()
    assert started and all(not w.process.is_alive() for w in started)


async def test_a_dead_worker_leaves_the_job_to_the_crawler() -> None:
    pool = WorkPool(2)
    try:
        worker_pid = await pool.run(os.getpid)
        assert worker_pid != os.getpid()
        os.kill(worker_pid, signal.SIGKILL)
        await asyncio.sleep(0.2)
        assert await pool.run(math.factorial, 5) == 120  # done inline
        assert pool.workers == 0 and pool.inline >= 1
        assert await pool.run(os.getpid) == os.getpid()
    finally:
        pool.close()


def test_processes_must_be_positive() -> None:
    with pytest.raises(ConfigError):
        WorkPool(0)


async def test_a_worker_collects_garbage_in_few_large_passes() -> None:
    """A worker runs with ``gctune``'s settings: the import-time objects frozen, the youngest
    generation collected every 50,000 allocations rather than CPython's 700."""
    import gc

    from politecrawl.engine import gctune
    pool = WorkPool(2)
    try:
        assert await pool.run(gc.get_threshold) == (
            gctune.YOUNG_THRESHOLD,
            gctune.MIDDLE_THRESHOLD,
            gctune.OLD_THRESHOLD,
        )
        assert await pool.run(gc.get_freeze_count) > 10_000
    finally:
        pool.close()


def test_tune_freezes_and_raises_the_thresholds() -> None:
    import gc

    from politecrawl.engine import gctune
    before = gc.get_threshold()
    try:
        gctune.tune()
        assert gc.get_threshold()[0] == gctune.YOUNG_THRESHOLD
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
