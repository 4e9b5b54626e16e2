"""Client CPU seconds per 1000 pages, everything on, against a baseline measured in the same run.

    python bench/throughput.py [--hosts 1000] [--pages 4] [--delay 0.2]

The test web runs in its own process, so this process's CPU time is the crawler's alone.
Baseline: a bare aiohttp fetch loop over the same number of pages at the same concurrency
(no politeness, no robots, no parsing, no storage) — the floor any Python crawler stands on.
The reference figure for Scrapy on this machine (12-13 CPU-s per 1000 pages,
../shared/LIBRARIES.md) is printed for comparison; the target is <= 2.5.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from politecrawl import CrawlConfig, Crawler, FetchConfig, PolitenessConfig

UA = "benchbot/1.0 (+http://bench.example/bot)"
SCRAPY_CPU_PER_1000 = 12.5


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def start_server(hosts: int, pages: int) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "politecrawl.testweb",
            "--hosts",
            str(hosts),
            "--pages",
            str(pages),
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    port = int(line.strip().rsplit(":", 1)[1])
    return proc, port


async def baseline(port: int, hosts: int, n: int, concurrency: int) -> tuple[float, float, int]:
    urls = [f"http://127.0.0.1:{port}/p/{1 + i // hosts % 3}.html" for i in range(n)]
    names = [f"h{i % hosts}.test" for i in range(n)]
    sem = asyncio.Semaphore(concurrency)
    ok = 0

    async def one(session: aiohttp.ClientSession, url: str, host: str) -> None:
        nonlocal ok
        async with sem, session.get(url, headers={"Host": host}) as r:
            await r.read()
            ok += r.status == 200

    t0, c0 = time.perf_counter(), cpu_s()
    async with aiohttp.ClientSession() as s:
        await asyncio.gather(*(one(s, u, h) for u, h in zip(urls, names, strict=True)))
    return time.perf_counter() - t0, cpu_s() - c0, ok


async def politecrawl(
    port: int, hosts: int, delay: float, concurrency: int, out: Path
) -> tuple[float, float, int, int, int]:
    cfg = CrawlConfig(
        seeds=tuple(f"http://h{i}.test:{port}/" for i in range(hosts)),
        out_dir=out,
        fetch=FetchConfig(
            user_agent=UA,
            resolve=(f"*.test:{port}:127.0.0.1",),
            allow_private_addresses=True,
            retry_base_s=0.5,
        ),
        politeness=PolitenessConfig(min_delay_s=delay, jitter_s=0.01),
        concurrency=concurrency,
        scope="any",
        progress=False,
    )
    t0, c0 = time.perf_counter(), cpu_s()
    summary = await Crawler(cfg).run()
    return (
        time.perf_counter() - t0,
        cpu_s() - c0,
        summary.pages_fetched,
        summary.requests,
        summary.stored,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--pages", type=int, default=4)
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=100)
    args = ap.parse_args()
    server, port = start_server(args.hosts, args.pages)
    out = Path(tempfile.mkdtemp(prefix="pc-bench-"))
    try:
        wall, cpu, pages, requests, stored = asyncio.run(
            politecrawl(port, args.hosts, args.delay, args.concurrency, out)
        )
        bwall, bcpu, bok = asyncio.run(baseline(port, args.hosts, pages, args.concurrency))
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(out, ignore_errors=True)
    per_k = cpu / pages * 1000
    base_k = bcpu / max(bok, 1) * 1000
    ideal = args.hosts / args.delay
    print(
        f"hosts {args.hosts}, delay {args.delay}s, concurrency {args.concurrency}, "
        f"cpus {os.cpu_count()}"
    )
    print(
        f"politecrawl : {pages} pages, {requests} requests (robots.txt included) in "
        f"{wall:.1f}s = {pages / wall:.0f} pages/s; {cpu:.2f} CPU-s = "
        f"{per_k:.2f} CPU-s per 1000 pages ({stored} stored HTML pages: "
        f"{cpu / max(stored, 1) * 1000:.2f} CPU-s per 1000 stored)"
    )
    print(
        f"baseline    : bare aiohttp loop, {bok} pages in {bwall:.1f}s; "
        f"{base_k:.2f} CPU-s per 1000 pages"
    )
    print(
        f"ratio       : politecrawl / bare aiohttp = {per_k / base_k:.1f}x; "
        f"Scrapy reference {SCRAPY_CPU_PER_1000} / politecrawl = "
        f"{SCRAPY_CPU_PER_1000 / per_k:.1f}x; target <= 2.5 CPU-s: "
        f"{'met' if per_k <= 2.5 else 'NOT met'}"
    )
    print(
        f"politeness  : ideal rate hosts/delay = {ideal:.0f} req/s; achieved "
        f"{requests / wall:.0f} req/s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
