"""bench/throughput.py --one-ip: many names on one server address, SQLite against Redis.

    python bench/throughput.py --one-ip --hosts 50 --pages 200 --delay 0.5 [--one-ip-seconds 40]
        [--rounds 2]

The test web's names all sit on 127.0.0.1. ``politecrawl seed`` looks each seed's address up,
so a shared crawl seeded that way holds every site in the one shard of that address, and its
frontier keeps them one request at a time on it, in its line of waiting sites (an outside
probe: 50 names, ``--min-delay 0.5 --ip-min-delay off``, the rate fell from 100 requests/s
to 6 over two minutes while the worker and Redis sat idle). Each round runs, for
``--one-ip-seconds`` each, with the same options (``--ip-min-delay off``):

- ``sqlite``: ``politecrawl crawl`` (the baseline: the politeness bound, hosts / delay);
- ``redis``: ``politecrawl seed`` then one ``politecrawl worker`` on a fresh redis-server.

It prints each one's requests per second (from the test web's log), in the first and the last
third of its time (a rate that falls shows there), and the ratio redis / sqlite per round.
The answers take about a millisecond, so one request at a time on the address is no bound
here: the sites' own delays are (``--ip-min-delay 0`` on SQLite gives the same rate).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import start_testweb

from politecrawl.demo.accesslog import load_access_log

HERE = Path(__file__).resolve().parent
UA = "benchbot/1.0 (+http://bench.example/bot)"


def _options(port: int, delay: float, seconds: float, out: Path) -> list[str]:
    return [
        "--user-agent", UA, "--out", str(out), "--resolve", f"*.test:{port}:127.0.0.1",
        "--allow-private-addresses", "--min-delay", str(delay), "--delay-factor", "1",
        "--jitter", "0", "--ip-min-delay", "off", "--max-time", str(seconds), "--no-progress",
    ]  # fmt: skip


def _crawl(cmd: list[str]) -> tuple[float, float]:
    t0 = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(cmd[:4])} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return t0, time.time()


def rates(access_log: Path, since: float, until: float) -> tuple[float, float, float]:
    """Requests/s the server got in [since, until] from the first request on: overall, in
    the first third, in the last third."""
    starts = sorted(e.start for e in load_access_log(str(access_log)) if since <= e.start <= until)
    if len(starts) < 2:
        return 0.0, 0.0, 0.0
    t0, span = starts[0], until - starts[0]
    third = span / 3
    first = sum(1 for t in starts if t < t0 + third)
    last = sum(1 for t in starts if t >= until - third)
    return len(starts) / span, first / third, last / third


def run(args: argparse.Namespace) -> int:
    """From bench/throughput.py --one-ip."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from redis_server import RedisServer, server_binary

    binary = server_binary()
    if binary is None:
        raise SystemExit("--one-ip needs redis-server (or valkey-server)")
    work = Path(tempfile.mkdtemp(prefix="pc-oneip-"))
    access_log = work / "access.jsonl"
    web, port = start_testweb(args.hosts, args.pages, access_log=access_log, plain=True, lean=True)
    seeds = work / "seeds.txt"
    seeds.write_text("".join(f"http://h{i}.test:{port}/\n" for i in range(args.hosts)))
    cli = [sys.executable, "-m", "politecrawl"]
    secs = args.one_ip_seconds
    got: dict[str, list[tuple[float, float, float]]] = {"sqlite": [], "redis": []}
    try:
        for r in range(args.rounds):
            out = work / f"sqlite-{r}"
            opts = _options(port, args.delay, secs, out)
            window = _crawl([*cli, "crawl", "--seeds", str(seeds), *opts])
            got["sqlite"].append(rates(access_log, *window))
            server = RedisServer(binary)
            server.start()
            try:
                frontier = ["--frontier", server.url, "--crawl-id", f"oneip{r}"]
                subprocess.run(
                    [*cli, "seed", str(seeds), *frontier, "--resolve",
                     f"*.test:{port}:127.0.0.1", "--allow-private-addresses"],
                    check=True, capture_output=True,
                )  # fmt: skip
                out = work / f"redis-{r}"
                opts = _options(port, args.delay, secs, out)
                window = _crawl([*cli, "worker", *frontier, *opts])
                got["redis"].append(rates(access_log, *window))
            finally:
                server.stop()
    finally:
        web.terminate()
        web.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    ideal = args.hosts / args.delay
    print(
        f"one IP: {args.hosts} names on 127.0.0.1, --min-delay {args.delay} --ip-min-delay off, "
        f"{secs:.0f} s each, {args.rounds} rounds; bound hosts/delay = {ideal:.0f} requests/s"
    )
    for name, runs in got.items():
        for r, (all_, first, last) in enumerate(runs):
            print(
                f"  {name:<6} round {r}: {all_:.1f} requests/s ({all_ / ideal:.0%} of the bound); "
                f"first third {first:.1f}/s, last third {last:.1f}/s"
            )
    each = [b[0] / max(a[0], 1e-9) for a, b in zip(got["sqlite"], got["redis"], strict=True)]
    tail = [b[2] / max(a[2], 1e-9) for a, b in zip(got["sqlite"], got["redis"], strict=True)]
    print(
        f"ratio redis / sqlite requests/s: {statistics.median(each):.2f}x median "
        f"({', '.join(f'{x:.2f}' for x in each)}); last third {statistics.median(tail):.2f}x "
        f"({', '.join(f'{x:.2f}' for x in tail)})"
    )
    return 0
