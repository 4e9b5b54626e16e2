"""The shared frontier's Redis restarted mid-crawl (0.5 s down, its append-only file read
back), through the real ``seed`` and ``worker`` commands: the workers ride it out and finish
the crawl, every page asked once, politely.

Before, both workers stopped at once ("lost the frontier ... this worker stops"), and fresh
workers then waited two minutes for the dead ones' leases to expire (a probe of the product
from outside).
"""

from __future__ import annotations

import asyncio
import collections
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import UA
from redis_server import RedisServer, _binary_or_skip

from politecrawl.demo.accesslog import politeness_violations
from politecrawl.demo.web import TestWeb

pytestmark = pytest.mark.e2e

DELAY = 0.3


async def _cli(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "politecrawl", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 240)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def _two_workers_through_a_restart(
    tmp_path: Path, redis: RedisServer, web: TestWeb, *, after_s: float, max_time: str
) -> tuple[list[tuple[int, str, str]], int]:
    """The web seeded, two workers crawling it, Redis restarted (0.5 s down) ``after_s``
    into their run: each worker's (exit code, stdout, stderr), and the requests the web had
    seen when Redis came back."""
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("\n".join(web.seed_urls()) + "\n")
    pins = ["--resolve", web.resolve_arg(), "--allow-private-addresses"]
    rc, _, err = await _cli("seed", str(seeds), "--frontier", redis.url, *pins)
    assert rc == 0, err
    common = [
        "--frontier", redis.url, "--user-agent", UA, *pins, "--ip-min-delay", "off",
        "--min-delay", str(DELAY), "--jitter", "0", "--no-progress", "--max-time", max_time,
    ]  # fmt: skip
    restarted: list[int] = []

    def restart() -> None:
        time.sleep(after_s)
        redis.restart(0.5)
        restarted.append(len(web.access_log))

    thread = threading.Thread(target=restart, daemon=True)
    thread.start()
    results = await asyncio.gather(
        _cli("worker", "--out", str(tmp_path / "w1"), *common),
        _cli("worker", "--out", str(tmp_path / "w2"), *common),
    )
    thread.join(30)
    assert restarted, "Redis was not restarted"
    return list(results), restarted[0]


async def test_workers_ride_out_a_redis_restart(tmp_path: Path) -> None:
    redis = RedisServer(_binary_or_skip(), "--appendonly", "yes", "--appendfsync", "always")
    redis.start()
    try:
        async with TestWeb(n_hosts=6, pages_per_host=12, seed=3, plain=True) as web:
            results, restarted = await _two_workers_through_a_restart(
                tmp_path, redis, web, after_s=3.0, max_time="150"
            )
        for rc, _, err in results:
            assert rc == 0, err[-3000:]
            assert "lost the frontier" not in err
        asked = collections.Counter((e.host, e.path) for e in web.access_log)
        pages = {(h, p) for h, site in web.sites.items() for p in site.pages}
        assert pages <= set(asked), sorted(pages - set(asked))[:10]  # every page asked
        assert [k for k, n in asked.items() if n > 1 and k[1] != "/robots.txt"] == []
        assert len(web.access_log) > restarted > 0  # the crawl went on after it
        assert politeness_violations(web.access_log, DELAY) == []
    finally:
        redis.stop()


async def test_a_redis_that_comes_back_without_the_crawl_is_said_not_finished(
    tmp_path: Path,
) -> None:
    """The same restart on a server that keeps no data: the crawl's queue and seen-set are
    gone. Before, both workers rebuilt a crawl from nothing, found nothing queued and said
    "crawl finished (done)", exit 0, with most pages never asked. Now each stops with one
    line naming the loss, and ``status`` says the crawl is not there."""
    redis = RedisServer(_binary_or_skip())  # no append-only file, no snapshots
    redis.start()
    try:
        async with TestWeb(n_hosts=4, pages_per_host=40, seed=3, plain=True) as web:
            results, restarted = await _two_workers_through_a_restart(
                tmp_path, redis, web, after_s=2.0, max_time="60"
            )
            pages = sum(len(site.pages) for site in web.sites.values())
        assert restarted < pages  # the crawl was not over when the data went
        for rc, out, err in results:
            assert rc != 0 and "crawl finished (done)" not in out, out + err[-3000:]
            assert "is gone from the frontier" in err and "restarted without persistence" in err
        rc, out, _ = await _cli("status", "--frontier", redis.url)
        assert rc == 1 and "nothing stored" in out, out
    finally:
        redis.stop()
