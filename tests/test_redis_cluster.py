"""One crawl over a real 3-node Redis Cluster, as a user runs it: ``politecrawl seed`` and
``politecrawl worker`` processes, each given a different node, judged by the web servers' own
log (tests/logserver.py, in its own process: exact times) and by the nodes' keys.

- the crawl spreads: every node holds part of it (its shards' seen-sets and site states);
- zero politeness violations per host, and per IP when the IP rule is on, whichever worker
  sent the requests; zero duplicate fetches;
- a worker killed with ``kill -9`` mid-crawl: its leases expire (``?lease_ttl=3`` on the
  frontier URL), the other worker takes its sites back, the crawl completes with nothing
  missing, and only what it had in flight may be fetched a second time.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from redis_server import RedisCluster3, redis_cluster  # noqa: F401  (fixture)
from test_polite_servers import (
    CLOCK_S,
    UA,
    group,
    idle_gaps,
    log_server,
    max_in_flight,
    read_log,
    start_gaps,
)

pytestmark = pytest.mark.e2e

CLI = [sys.executable, "-m", "politecrawl"]
VICTIM_UA = "testbot-victim/1.0 (+http://bot.example/info)"  # its requests, in the server log


def seed(tmp: Path, url: str, crawl_id: str, urls: list[str], *resolve: str) -> None:
    (tmp / "seeds.txt").write_text("".join(u + "\n" for u in urls))
    cmd = [*CLI, "seed", str(tmp / "seeds.txt"), "--frontier", url, "--crawl-id", crawl_id]
    p = subprocess.run([*cmd, *resolve], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr


def worker(
    tmp: Path, name: str, url: str, crawl_id: str, *flags: str, cmd: str = "worker"
) -> subprocess.Popen[str]:
    """``politecrawl worker`` (or ``crawl``) on the shared crawl, as a user types it."""
    cmd = [*CLI, cmd, "--frontier", url, "--crawl-id", crawl_id, "--out", str(tmp / name)]
    cmd += ["--user-agent", UA, "--no-progress", "--jitter", "0", "--delay-factor", "0", *flags]
    return subprocess.Popen(cmd, text=True, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)


def finish(p: subprocess.Popen[str]) -> str:
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    return err


def fetched_twice(rows: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    counts = collections.Counter((r["host"], r["path"]) for r in rows)
    return {k: n for k, n in counts.items() if n > 1}


def host_violations(rows: list[dict[str, Any]], delay: float) -> list[str]:
    bad = []
    for host, seq in group(rows, "host").items():
        if max_in_flight(seq) > 1:
            bad.append(f"{host}: two requests at once")
        bad += [f"{host}: gap {g:.3f}" for g in start_gaps(seq) if g < delay - CLOCK_S]
    return bad


def test_two_workers_spread_one_crawl_over_three_nodes(
    redis_cluster: RedisCluster3,  # noqa: F811
    tmp_path: Path,
) -> None:
    """24 sites named on one address, the IP rule off (they stand for 24 servers): the sites'
    shards sit on all three nodes, and the server saw each site politely, nothing twice."""
    crawl_id, delay = f"span-{uuid.uuid4().hex[:8]}", 0.3
    with log_server(tmp_path, "127.0.0.1", latency=0.02) as (port, log):
        hosts = [f"h{i}.many.test" for i in range(24)]
        resolve = ["--resolve", f"*.many.test:{port}:127.0.0.1", "--allow-private-addresses"]
        nodes = [n.url for n in redis_cluster.nodes]
        flags = [*resolve, "--min-delay", str(delay), "--ip-min-delay", "off"]
        # the first worker is a `crawl` given the seeds (`seed` looks up each seed's address
        # for the IP rule, and keys with an address are placed by it: here, one shard)
        (tmp_path / "seeds.txt").write_text("".join(f"http://{h}:{port}/\n" for h in hosts))
        first = worker(tmp_path, "w0", nodes[1] + "?shards=24", crawl_id,
                       "--seeds", str(tmp_path / "seeds.txt"),
                       *flags, cmd="crawl")  # fmt: skip
        deadline = time.monotonic() + 60
        while not read_log(log) and first.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        second = worker(tmp_path, "w1", nodes[2], crawl_id, *flags)
        for w in (first, second):
            finish(w)
        rows = read_log(log)
    assert len(rows) == 24 * 5  # robots.txt, /, /p/1..3 on every site
    assert fetched_twice(rows) == {}
    assert host_violations(rows, delay) == []
    for w in ("w0", "w1"):  # both took part
        assert (tmp_path / w / "log" / "requests.jsonl").read_text().strip()
    # every node holds part of the crawl: URLs were queued (seen-set) and sites crawled there
    assert min(redis_cluster.keys_per_node(f"pc:{{{crawl_id}:*}}:seen")) > 0
    assert min(redis_cluster.keys_per_node(f"pc:{{{crawl_id}:*}}:hosts")) > 0
    p = subprocess.run(
        [*CLI, "status", "--frontier", nodes[2], "--crawl-id", crawl_id, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    st = json.loads(p.stdout)
    assert st["cluster"] and st["shards"] == 24  # as the first worker started it
    assert st["queued"] == 0 and st["urls_open"] == 0
    assert st["outcomes"]["stored"] == 24 * 4


def test_a_worker_killed_mid_crawl_loses_nothing(
    redis_cluster: RedisCluster3,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Sites on two server addresses with the IP rule on; one of two workers is killed with
    SIGKILL once the crawl is under way. The other finishes it: every page fetched, each
    server one request at a time with the IP gap, each site its delay, and only the pages
    the dead worker had in flight fetched again."""
    crawl_id, delay, ip_gap = f"kill-{uuid.uuid4().hex[:8]}", 0.3, 0.05
    with log_server(tmp_path, "127.0.0.1", "127.0.0.2", latency=0.05, pages=5) as (port, log):
        hosts = [f"h{i}.one.test" for i in range(6)] + [f"h{i}.two.test" for i in range(6)]
        resolve = [
            "--resolve", f"*.one.test:{port}:127.0.0.1",
            "--resolve", f"*.two.test:{port}:127.0.0.2",
            "--allow-private-addresses",
        ]  # fmt: skip
        url = redis_cluster.nodes[1].url + "?lease_ttl=3"
        seed(tmp_path, url, crawl_id, [f"http://{h}:{port}/" for h in hosts], *resolve)
        flags = [*resolve, "--min-delay", str(delay), "--ip-min-delay", str(ip_gap)]
        victim = worker(tmp_path, "victim", url, crawl_id, *flags, "--user-agent", VICTIM_UA)

        def victim_rows(n: int) -> None:
            deadline = time.monotonic() + 60
            while sum(r["ua"] == VICTIM_UA for r in read_log(log)) < n:
                assert victim.poll() is None, victim.communicate()[1]
                assert time.monotonic() < deadline
                time.sleep(0.02)

        # the survivor joins a crawl under way (a worker that releases a site tends to take
        # the next one of its IP first: started together, one of two may get little)
        victim_rows(2)
        survivor = worker(tmp_path, "survivor", url, crawl_id, *flags)
        victim_rows(8)
        assert victim.poll() is None, victim.communicate()[1]  # still crawling
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(10)
        killed_at = time.time()
        finish(survivor)
        rows = read_log(log)
    assert victim.returncode == -signal.SIGKILL
    assert sum(r["ua"] == VICTIM_UA for r in rows) >= 8  # it had taken part
    # nothing missing: robots.txt, / and /p/1..5 on every site
    assert {(r["host"], r["path"]) for r in rows} == {
        (h, p) for h in hosts for p in ("/robots.txt", "/", *(f"/p/{i}" for i in range(1, 6)))
    }
    # fetched twice: only what the dead worker had in flight (one request per IP at a time:
    # at most two), each once more, after it died
    twice = fetched_twice(rows)
    assert len(twice) <= 2 and set(twice.values()) <= {2}, twice
    for host, path in twice:
        last = max(r["start"] for r in rows if (r["host"], r["path"]) == (host, path))
        assert last > killed_at - 1.0
    # politeness held throughout, across both workers and the kill
    for ip, seq in group(rows, "ip").items():
        assert max_in_flight(seq) == 1, ip
        assert min(idle_gaps(seq)) >= ip_gap - CLOCK_S, ip
    assert host_violations(rows, delay) == []


def test_a_worker_that_loses_its_frontier_stops_with_one_line(tmp_path: Path) -> None:
    """The Redis server goes away mid-crawl: the worker stops (exit 1) and says so in one
    line, naming what to expect (its leases expire, the other workers take its sites)."""
    from redis_server import RedisServer, server_binary

    binary = server_binary()
    if binary is None:
        import pytest

        pytest.skip("redis-server not installed")
    server = RedisServer(binary)
    server.start()
    try:
        with log_server(tmp_path, "127.0.0.1", latency=0.05, pages=30) as (port, log):
            resolve = ["--resolve", f"*.x.test:{port}:127.0.0.1", "--allow-private-addresses"]
            crawl_id = f"lost-{uuid.uuid4().hex[:8]}"
            seed(tmp_path, server.url, crawl_id, [f"http://h{i}.x.test:{port}/" for i in range(4)],
                 *resolve)  # fmt: skip
            w = worker(tmp_path, "w", server.url, crawl_id, *resolve, "--min-delay", "0.3")
            deadline = time.monotonic() + 60
            while len(read_log(log)) < 6:
                assert time.monotonic() < deadline and w.poll() is None
                time.sleep(0.05)
            server.stop()
            _, err = w.communicate(timeout=60)
    finally:
        server.stop()
    assert w.returncode == 1, err
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and "lost the frontier" in lines[0], err
