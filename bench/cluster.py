"""What a shared (Redis/Valkey) crawl costs, measured here, and the ceiling projected from it.

    python bench/cluster.py [--hosts 100] [--pages 20] [--workers 2] [--rounds 3] [--cluster]
                            [--json F]

1. One worker next to the in-process crawler: the test web (its own process, the lean
   server) crawled by ``politecrawl crawl`` in-process (SQLite) and by one ``crawl
   --frontier`` alone on a fresh shared crawl, alternating, ``--rounds`` times: each one's CPU
   (user + system, its own rusage) per 1,000 pages, and their ratio per round. The median
   round is the headline: the machine is shared and noisy, and alternating puts both under
   the same noise.
2. ``--workers`` processes on one shared frontier (the first a ``crawl --frontier`` given
   the seeds, the others ``worker``): their CPU per 1,000 pages (on 2 cores, two workers,
   Redis and the test web crowd each other), Redis commands and Redis server CPU-seconds
   (``INFO stats``/``INFO cpu``, summed over the nodes) per 1,000 pages.
3. Memory: ``RedisFrontier.add`` of 100,000 URLs (60-70 characters, 1,000 sites) and
   ``mark_seen`` of 200,000 more on a fresh crawl: ``used_memory`` per queued and per seen URL.
4. The projection: pages/s one Redis node (one process: one core) carries at 70 % busy, and
   the nodes, worker cores and memory for 10,000 pages/s and for 1 billion queued URLs.

``--cluster`` runs the frontier on a 3-node Redis Cluster on loopback (``redis-cli --cluster
create``) instead of one server. The test web's names all sit on 127.0.0.1 and stand for many
servers: ``--ip-min-delay off``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import redis
from benchlib import start_testweb

from politecrawl.frontier import UrlEntry
from politecrawl.frontier.redis import RedisFrontier

UA = "politecrawl-bench/1.0 (+http://bot.example/info)"
CLI = [sys.executable, "-m", "politecrawl"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Servers:
    """One redis-server, or three joined into a cluster, in a temp dir; stopped on exit."""

    def __init__(self, cluster: bool) -> None:
        self.dir = tempfile.mkdtemp(prefix="pc-bench-redis-")
        self.ports = []
        while len(self.ports) < (3 if cluster else 1):
            port = free_port()
            if port <= 55535 or not cluster:  # a node's cluster bus listens on port + 10000
                self.ports.append(port)
        self.procs = []
        extra = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"] * cluster
        for port in self.ports:
            d = Path(self.dir) / str(port)
            d.mkdir()
            cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(d)]
            cmd += ["--save", "", "--appendonly", "no", *extra]
            self.procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL))
        for port in self.ports:
            self._wait(port)
        if cluster:
            addrs = [f"127.0.0.1:{p}" for p in self.ports]
            subprocess.run(
                [
                    "redis-cli",
                    "--cluster",
                    "create",
                    *addrs,
                    "--cluster-replicas",
                    "0",
                    "--cluster-yes",
                ],
                stdin=subprocess.DEVNULL,
                check=True,
                stdout=subprocess.DEVNULL,
            )
            for port in self.ports:
                with redis.Redis(port=port) as r:
                    while b"cluster_state:ok" not in r.execute_command("CLUSTER", "INFO"):
                        time.sleep(0.05)

    @staticmethod
    def _wait(port: int) -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with redis.Redis(port=port) as r:
                    r.ping()
                    return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise SystemExit(f"redis-server on {port} did not start")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def totals(self) -> dict[str, float]:
        """Commands, server CPU seconds and used memory, summed over the nodes."""
        out = {"commands": 0.0, "cpu_s": 0.0, "memory": 0.0}
        for port in self.ports:
            with redis.Redis(port=port) as r:
                info = r.info()
                for name, st in r.info("commandstats").items():
                    out[name] = out.get(name, 0.0) + st["calls"]
            out["commands"] += info["total_commands_processed"]
            out["cpu_s"] += info["used_cpu_sys"] + info["used_cpu_user"]
            out["memory"] += info["used_memory"]
        return out

    def stop(self) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


def run_measured(cmd: list[str]) -> tuple[int, float]:
    """Run ``cmd``; (exit status, its own user + system CPU seconds)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd[:4])}... exited {proc.returncode}: {err[-2000:]}")
    return proc.returncode, usage.ru_utime + usage.ru_stime


def pages_of(out: Path) -> int:
    path = out / "pages.jsonl"
    return sum(1 for line in path.open() if line.strip()) if path.exists() else 0


def crawl_flags(port: int, delay: float) -> list[str]:
    return [
        "--user-agent", UA, "--resolve", f"*.test:{port}:127.0.0.1", "--allow-private-addresses",
        "--scope", "any", "--min-delay", str(delay), "--delay-factor", "0", "--jitter", "0",
        "--ip-min-delay", "off", "--no-progress",
    ]  # fmt: skip


def shared_crawl(
    servers: Servers, seeds: Path, flags: list[str], workers: int, root: Path
) -> dict[str, float]:
    """``workers`` processes on one shared crawl; their CPU and pages, the servers' deltas."""
    crawl_id = f"bench-{uuid.uuid4().hex[:8]}"
    shared = ["--frontier", servers.url, "--crawl-id", crawl_id]
    before = servers.totals()
    cmds = [[*CLI, "crawl", "--seeds", str(seeds), "--out", str(root / "w0"), *shared, *flags]]
    cmds += [
        [*CLI, "worker", "--out", str(root / f"w{i}"), *shared, *flags] for i in range(1, workers)
    ]

    async def all_of() -> list[tuple[int, float]]:
        loop = asyncio.get_running_loop()
        first = loop.run_in_executor(None, run_measured, cmds[0])
        await asyncio.sleep(2.0)  # the seeds are in before the other workers look
        rest = [loop.run_in_executor(None, run_measured, c) for c in cmds[1:]]
        return list(await asyncio.gather(first, *rest))

    t0 = time.monotonic()
    results = asyncio.run(all_of())
    wall = time.monotonic() - t0
    after = servers.totals()
    pages = sum(pages_of(root / f"w{i}") for i in range(workers))
    by_command = {
        k.removeprefix("cmdstat_"): (after[k] - before.get(k, 0.0)) / max(1, pages)
        for k in after
        if k.startswith("cmdstat_")
    }
    top = sorted(by_command.items(), key=lambda kv: -kv[1])[:8]
    return {
        "pages": pages,
        "wall_s": wall,
        "commands_per_page_by_name": {k: round(v, 2) for k, v in top},
        # Lua scripts run (a worker pipelines the calls its turns make at once: these are not
        # round trips, which the server cannot count)
        "scripts_per_page": by_command.get("evalsha", 0.0) + by_command.get("eval", 0.0),
        "worker_cpu_s": sum(cpu for _, cpu in results),
        "redis_commands": after["commands"] - before["commands"],
        "redis_cpu_s": after["cpu_s"] - before["cpu_s"],
    }


def one_round(servers: Servers, seeds: Path, flags: list[str], root: Path) -> dict[str, float]:
    """In-process, then one worker alone on a fresh shared crawl: CPU-s per 1,000 pages."""
    got: dict[str, float] = {}
    for name, extra in (
        ("in_process", []),
        ("one_worker", ["--frontier", servers.url, "--crawl-id", f"one-{uuid.uuid4().hex[:8]}"]),
    ):
        out = root / f"{name}-{uuid.uuid4().hex[:6]}"
        _, cpu = run_measured(
            [*CLI, "crawl", "--seeds", str(seeds), "--out", str(out), *flags, *extra]
        )
        got[name] = cpu * 1000 / max(1, pages_of(out))
        shutil.rmtree(out, ignore_errors=True)
    return {**got, "ratio": got["one_worker"] / got["in_process"]}


async def memory(servers: Servers, n_queued: int, n_seen: int) -> dict[str, float]:
    """Bytes of Redis memory per queued URL and per seen-only URL."""
    f = RedisFrontier.open(servers.url, f"mem-{uuid.uuid4().hex[:8]}", heartbeat=False)
    base = servers.totals()["memory"]
    batch = []
    for i in range(n_queued):
        site = f"site{i % 1000:04d}.example.com"
        batch.append(UrlEntry(f"https://{site}/articles/{i:08d}/a-page-title", site))
        if len(batch) == 1000:
            await f.add(batch)
            batch = []
    queued = servers.totals()["memory"]
    urls = [f"https://seen{i % 997}.example.org/path/to/{i:09d}/page.html" for i in range(n_seen)]
    for i in range(0, n_seen, 5000):
        await f.store.mark_seen(urls[i : i + 5000])
    seen = servers.totals()["memory"]
    await f.store.close()
    return {
        "bytes_per_queued_url": (queued - base) / n_queued,
        "bytes_per_seen_url": (seen - queued) / n_seen,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--pages", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3, help="in-process / one worker pairs")
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--cluster", action="store_true", help="a 3-node Redis Cluster")
    ap.add_argument("--queued", type=int, default=100_000)
    ap.add_argument("--seen", type=int, default=200_000)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    if shutil.which("redis-server") is None:
        raise SystemExit("redis-server is not installed")
    root = Path(tempfile.mkdtemp(prefix="pc-bench-cluster-"))
    web, port = start_testweb(a.hosts, a.pages, plain=True, lean=True)
    servers = Servers(a.cluster)
    try:
        seeds = root / "seeds.txt"
        seeds.write_text("".join(f"http://h{i}.test:{port}/\n" for i in range(a.hosts)))
        flags = crawl_flags(port, a.delay)
        rounds = [one_round(servers, seeds, flags, root) for _ in range(max(1, a.rounds))]
        (root / "shared").mkdir()
        shared = shared_crawl(servers, seeds, flags, a.workers, root / "shared")
        mem = asyncio.run(memory(servers, a.queued, a.seen))
    finally:
        servers.stop()
        web.terminate()
        web.wait(10)
    k = 1000 / max(1, shared["pages"])
    res: dict[str, Any] = {
        "setup": {
            "redis": "3-node cluster" if a.cluster else "one server",
            "hosts": a.hosts,
            "pages_per_host": a.pages,
            "workers": a.workers,
        },
        "one_worker_vs_in_process": {
            "rounds": rounds,
            "median_ratio": statistics.median(r["ratio"] for r in rounds),
        },
        "in_process": {
            "cpu_s_per_1000_pages": statistics.median(r["in_process"] for r in rounds),
        },
        "shared": {
            **shared,
            "worker_cpu_s_per_1000_pages": shared["worker_cpu_s"] * k,
            "redis_commands_per_page": shared["redis_commands"] / max(1, shared["pages"]),
            "redis_cpu_s_per_1000_pages": shared["redis_cpu_s"] * k,
        },
        "memory": mem,
    }
    res["shared"]["workers_cpu_vs_in_process"] = (
        res["shared"]["worker_cpu_s_per_1000_pages"] / res["in_process"]["cpu_s_per_1000_pages"]
    )
    # the projection: a Redis node (one process, one core) kept at most 70 % busy; its
    # memory at most 32 GB
    per_page_s = res["shared"]["redis_cpu_s_per_1000_pages"] / 1000
    pages_per_shard = 0.7 / per_page_s if per_page_s > 0 else math.inf
    q_bytes = mem["bytes_per_queued_url"]
    res["projection"] = {
        "pages_per_s_per_redis_node_at_70pct": pages_per_shard,
        "redis_nodes_for_10k_pages_per_s": math.ceil(10_000 / pages_per_shard),
        "worker_cores_for_10k_pages_per_s": math.ceil(
            10 * res["shared"]["worker_cpu_s_per_1000_pages"]
        ),
        "memory_gb_for_1e9_queued": 1e9 * q_bytes / 1e9,
        "memory_gb_for_1e9_seen": 1e9 * mem["bytes_per_seen_url"] / 1e9,
        "redis_nodes_for_1e9_queued_at_32gb": math.ceil(1e9 * q_bytes / 32e9),
    }
    text = json.dumps(res, indent=2, default=float)
    print(text)
    if a.json:
        a.json.write_text(text + "\n")
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
