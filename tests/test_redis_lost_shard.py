"""A node of a 3-node Redis Cluster restarted mid-crawl, through the real ``seed``, ``worker``
and ``status`` commands, judged by the web server's own log (tests/logserver.py), the
commands' exit codes and what they print.

- Without its data (no persistence): the sites whose shards that node served, and every URL
  queued for them, are gone. Before, nothing noticed (the workers' only check after a
  reconnect asked for the crawl's ``conf``, which lives in one slot, on another node): both
  workers went on with the other nodes' sites, said "crawl finished", exit 0, and ``status``
  said nothing. Now each worker stops at once with one line naming the shards lost and their
  node (exit 1), a worker started afterwards refuses to start, and ``status`` says it.
- With its data (append-only file): nothing was lost, and the crawl goes on to its end, every
  page asked.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from redis_server import RedisCluster3, _binary_or_skip, redis_url  # noqa: F401  (fixture)
from test_polite_servers import UA, log_server, read_log

pytestmark = pytest.mark.e2e

CLI = [sys.executable, "-m", "politecrawl"]
IPS = ("127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4")
PAGES = 20  # per site: / and /p/1..20, robots.txt


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=90)


def _placed(cluster: RedisCluster3, crawl_id: str) -> tuple[int, int] | None:
    """(the node to restart: it holds sites' shards but not the crawl's conf, the conf's
    node), or None if no node does."""
    conf = cluster.keys_per_node(f"pc:{{{crawl_id}}}:conf")
    meta = cluster.keys_per_node(f"pc:{{{crawl_id}:*}}:meta")
    victims = [i for i in range(3) if meta[i] and not conf[i]]
    return (victims[0], conf.index(1)) if victims else None


def _crawl_through_a_node_restart(tmp: Path, cluster: RedisCluster3) -> dict[str, Any]:
    """12 sites on 4 addresses seeded into a 12-shard crawl, two workers, and the node
    holding some of the sites (not the crawl's conf) restarted (1 s down) once the crawl is
    under way."""
    with log_server(tmp, *IPS, latency=0.02, pages=PAGES) as (port, log):
        resolve: list[str] = ["--allow-private-addresses"]
        for j, ip in enumerate(IPS):
            resolve += ["--resolve", f"*.ip{j}.test:{port}:{ip}"]
        hosts = [f"h{i}.ip{j}.test" for j in range(len(IPS)) for i in range(3)]
        (tmp / "seeds.txt").write_text("".join(f"http://{h}:{port}/\n" for h in hosts))
        for _ in range(10):  # a crawl id whose sites are not all on the conf's node
            crawl_id = f"node-{uuid.uuid4().hex[:8]}"
            url = cluster.nodes[0].url
            seeded = _run("seed", str(tmp / "seeds.txt"), "--frontier", url + "?shards=12",
                          "--crawl-id", crawl_id, *resolve)  # fmt: skip
            assert seeded.returncode == 0, seeded.stderr
            placed = _placed(cluster, crawl_id)
            if placed is not None:
                break
        assert placed is not None
        victim, conf_node = placed
        flags = [
            "--frontier", cluster.nodes[conf_node].url, "--crawl-id", crawl_id, *resolve,
            "--user-agent", UA, "--no-progress", "--jitter", "0", "--delay-factor", "0",
            "--min-delay", "0.3", "--ip-min-delay", "0.05", "--max-time", "60",
        ]  # fmt: skip
        pipes = {"text": True, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
        workers = [
            subprocess.Popen([*CLI, "worker", *flags, "--out", str(tmp / f"w{i}")], **pipes)
            for i in range(2)
        ]
        deadline = time.monotonic() + 60
        while len(read_log(log)) < 20:
            assert time.monotonic() < deadline
            assert all(w.poll() is None for w in workers), [w.communicate() for w in workers]
            time.sleep(0.05)
        cluster.nodes[victim].restart(1.0)
        restarted_at, asked_before = time.time(), len(read_log(log))
        results = []
        for w in workers:
            out, err = w.communicate(timeout=90)
            results.append((w.returncode, out, err))
        rows = read_log(log)
    return {
        "crawl_id": crawl_id,
        "flags": flags,
        "victim": cluster.nodes[victim].port,
        "results": results,
        "restarted_at": restarted_at,
        "asked_before": asked_before,
        "rows": rows,
        "hosts": hosts,
        "pages": {(h, p) for h in hosts for p in ("/", *(f"/p/{i}" for i in range(1, PAGES + 1)))},
    }


def test_a_node_back_without_its_data_stops_every_worker_naming_what_was_lost(
    tmp_path: Path,
) -> None:
    cluster = RedisCluster3(_binary_or_skip())  # no persistence: a restart empties a node
    cluster.start()
    try:
        run = _crawl_through_a_node_restart(tmp_path, cluster)
        asked = {(r["host"].split(":")[0], r["path"]) for r in run["rows"]}
        assert not run["pages"] <= asked  # the crawl was not over when the node lost its data
        for rc, out, err in run["results"]:
            lines = [x for x in err.strip().splitlines() if x.strip()]
            assert rc == 1 and "crawl finished" not in out, out + err[-3000:]
            last = lines[-1]
            assert f"crawl {run['crawl_id']!r} lost part of its frontier" in last, err[-3000:]
            assert f"127.0.0.1:{run['victim']}" in last and "cannot be known" in last, last
            assert "new --crawl-id" in last, last
        # noticed at the reconnect, before anything was sent again: the workers stopped at
        # once (a request already on its way may still end)
        assert max(r["start"] for r in run["rows"]) < run["restarted_at"] + 3.0
        # a worker started afterwards does not start; status says what was lost
        again = _run("worker", *run["flags"], "--out", str(tmp_path / "w9"))
        assert again.returncode == 1, again.stdout + again.stderr
        assert "lost part of its frontier" in again.stderr, again.stderr
        status = _run("status", *run["flags"][:4])
        assert status.returncode == 1 and "lost their data" in status.stdout, status.stdout
    finally:
        cluster.stop()


def test_a_node_back_with_its_data_loses_nothing_and_the_crawl_goes_on(
    tmp_path: Path,
) -> None:
    cluster = RedisCluster3(_binary_or_skip(), 3, "--appendonly", "yes", "--appendfsync", "always")
    cluster.start()
    try:
        run = _crawl_through_a_node_restart(tmp_path, cluster)
        for rc, out, err in run["results"]:
            assert rc == 0 and "crawl finished (done)" in out, out + err[-3000:]
            assert "lost" not in err, err[-3000:]
        asked = {(r["host"].split(":")[0], r["path"]) for r in run["rows"]}
        assert run["pages"] <= asked, sorted(run["pages"] - asked)[:10]  # every page asked
        assert len(run["rows"]) > run["asked_before"]  # the crawl went on after the restart
    finally:
        cluster.stop()


async def test_a_shard_emptied_under_a_live_connection_stops_the_next_script(
    redis_url: str,  # noqa: F811
) -> None:
    """No reconnect to notice it (a node flushed, or an empty replica promoted): the first
    script on the emptied shard refuses to run (its mark is gone) and the worker hears the
    line naming the lost shard, before anything was written there; so does every later
    call. The other shards' marks are untouched."""
    import redis.asyncio as aioredis

    from politecrawl.errors import FrontierError
    from politecrawl.frontier import UrlEntry
    from politecrawl.frontier.redis import RedisFrontier, RedisStore

    crawl_id = f"flush-{uuid.uuid4().hex[:8]}"
    store = RedisStore(redis_url + "?shards=4", crawl_id, shards=4)
    f = RedisFrontier(store, heartbeat=False)
    try:
        assert await f.add([UrlEntry("http://a.test/1", "a.test")]) == [True]
        shard = await store.shard_of_key("a.test")
        r = aioredis.Redis.from_url(redis_url)
        try:  # the shard's keys gone, as a flushed node's
            keys = [k async for k in r.scan_iter(match=f"pc:{{{crawl_id}:{shard}}}:*")]
            assert any(k.endswith(b":mark") for k in keys)
            await r.delete(*keys)
        finally:
            await r.aclose()
        with pytest.raises(FrontierError, match=f"shard {shard} of 4"):
            await f.add([UrlEntry("http://a.test/2", "a.test")])
        with pytest.raises(FrontierError, match="lost part of its frontier"):
            await f.lease(time.time())
    finally:
        store.closing.clear()
        await store.close()
