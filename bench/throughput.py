"""Client CPU seconds per 1000 pages, everything on, against a baseline measured in the same run.

    python bench/throughput.py [--hosts 1000] [--pages 4] [--delay 0.2]
    python bench/throughput.py --plain --hosts 200 --pages 20 --delay 2 --no-scrapy

``--plain`` serves normal pages only (no error pages whose 429/503 double a site's delay by
design), so politeness is the only bound: the rate is then judged against the ideal
hosts / delay, and the test server's access log gives each site's request gaps.

The test web runs in its own process, so this process's CPU time is the crawler's alone.
Baseline: a bare aiohttp fetch loop over the same number of pages at the same concurrency
(no politeness, no robots, no parsing, no storage) — the floor any Python crawler stands on.
The reference figure for Scrapy on this machine (12-13 CPU-s per 1000 pages,
../shared/LIBRARIES.md) is printed for comparison; the target is <= 2.5.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from benchlib import cpu_s, start_testweb

from politecrawl import CrawlConfig, Crawler, FetchConfig, PolitenessConfig
from politecrawl.testweb import load_access_log

UA = "benchbot/1.0 (+http://bench.example/bot)"
SCRAPY_CPU_PER_1000 = 12.5


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
        politeness=PolitenessConfig(
            min_delay_s=delay,
            jitter_s=0.01,
            response_time_factor=1.0,
            park_s=1.0,
            ip_min_delay_s=None,  # the test web's names on 127.0.0.1 stand for many servers
        ),
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


def politeness_use(
    access_log: Path, since: float, until: float, delay: float
) -> tuple[int, float, float, float]:
    """From the server's log: requests in [since, until], their span (first to last start,
    so process start-up is not counted), slot use, and the worst site's.

    Slot use: for every site, the requests it got after its first one, against the number
    its own span allowed at one per ``delay`` (1.0 = every allowed start used). Summed over
    sites, it is the fraction of the politeness budget the crawler spent.
    """
    by_host: dict[str, list[float]] = {}
    for e in load_access_log(str(access_log)):
        if since <= e.start <= until:
            by_host.setdefault(e.host, []).append(e.start)
    used = allowed = 0.0
    worst = 1.0
    for starts in by_host.values():
        if len(starts) < 2:
            continue
        starts.sort()
        span = starts[-1] - starts[0]
        used += len(starts) - 1
        allowed += span / delay
        worst = min(worst, (len(starts) - 1) / max(span / delay, 1e-9))
    every = [t for starts in by_host.values() for t in starts]
    span = max(every) - min(every) if every else 0.0
    return len(every), span, used / max(allowed, 1e-9), worst


def scrapy(port: int, hosts: int, delay: float, concurrency: int) -> tuple[float, float, int]:
    """Run Scrapy in a child process; its CPU time from the child's rusage."""
    script = Path(__file__).with_name("scrapy_crawl.py")
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, str(script), str(port), str(hosts), str(delay), str(concurrency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    out, _ = proc.communicate()
    _, _, usage = (
        os.wait4(proc.pid, 0) if False else (0, 0, resource.getrusage(resource.RUSAGE_CHILDREN))
    )
    wall = time.perf_counter() - t0

    stats = json.loads(out.strip().splitlines()[-1])
    return wall, usage.ru_utime + usage.ru_stime, int(stats["responses"])


def redis_workers(
    port: int, hosts: int, delay: float, concurrency: int, n_workers: int
) -> tuple[float, float, int] | None:
    """The same crawl shared by ``n_workers`` worker processes on one Redis frontier."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from redis_server import RedisServer, server_binary

    binary = server_binary()
    if binary is None:
        return None
    server = RedisServer(binary)
    server.start()
    tmp = Path(tempfile.mkdtemp(prefix="pc-redis-bench-"))
    try:
        seeds = tmp / "seeds.txt"
        seeds.write_text("".join(f"http://h{i}.test:{port}/\n" for i in range(hosts)))
        cli = [sys.executable, "-m", "politecrawl.cli"]
        subprocess.run(
            [*cli, "seed", str(seeds), "--frontier", server.url, "--crawl-id", "bench"],
            check=True,
            capture_output=True,
        )
        t0 = time.perf_counter()
        procs = [
            subprocess.Popen(
                [
                    *cli,
                    "worker",
                    "--frontier",
                    server.url,
                    "--crawl-id",
                    "bench",
                    "--out",
                    str(tmp / f"w{i}"),
                    "--user-agent",
                    UA,
                    "--resolve",
                    f"*.test:{port}:127.0.0.1",
                    "--allow-private-addresses",
                    "--min-delay",
                    str(delay),
                    "--delay-factor",
                    "1",
                    "--jitter",
                    "0.01",
                    "--concurrency",
                    str(concurrency // n_workers),
                    "--retry-base",
                    "0.5",
                    "--park-time",
                    "1",
                    "--no-progress",
                ],
                stdout=subprocess.DEVNULL,
            )
            for i in range(n_workers)
        ]
        cpu = 0.0
        for proc in procs:
            _, status, usage = os.wait4(proc.pid, 0)
            if status != 0:
                raise RuntimeError("a Redis worker failed")
            cpu += usage.ru_utime + usage.ru_stime
        wall = time.perf_counter() - t0
        pages = 0
        for i in range(n_workers):
            pages += json.loads((tmp / f"w{i}" / "summary.json").read_text())["pages_fetched"]
        return wall, cpu, pages
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--pages", type=int, default=4)
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=100)
    ap.add_argument(
        "--no-redis",
        dest="redis",
        action="store_false",
        help="skip the shared-frontier runs (they need redis-server)",
    )
    ap.add_argument(
        "--no-scrapy",
        dest="scrapy",
        action="store_false",
        help="skip the Scrapy comparison (it needs `pip install scrapy`)",
    )
    ap.add_argument(
        "--plain",
        action="store_true",
        help="normal pages only (no 429/503/5xx pages): politeness is then the only bound",
    )
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pc-bench-"))
    access_log = work / "access.jsonl"
    server, port = start_testweb(args.hosts, args.pages, access_log=access_log, plain=args.plain)
    out = work / "out"
    windows: dict[str, tuple[float, float]] = {}
    try:
        w0 = time.time()
        wall, cpu, pages, requests, stored = asyncio.run(
            politecrawl(port, args.hosts, args.delay, args.concurrency, out)
        )
        windows["politecrawl"] = (w0, time.time())
        bwall, bcpu, bok = asyncio.run(baseline(port, args.hosts, pages, args.concurrency))
        rw = {}
        if args.redis:
            for n in (1, 2):
                w0 = time.time()
                got = redis_workers(port, args.hosts, args.delay, args.concurrency, n)
                if got is not None:
                    rw[n] = got
                    windows[f"redis x{n}"] = (w0, time.time())
        sc = None
        if args.scrapy and importlib.util.find_spec("scrapy") is not None:
            w0 = time.time()
            sc = scrapy(port, args.hosts, args.delay, args.concurrency)
            windows["scrapy"] = (w0, time.time())
        server.terminate()
        server.wait(10)
        use = {
            name: politeness_use(access_log, since, until, args.delay)
            for name, (since, until) in windows.items()
        }
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(10)
        shutil.rmtree(work, ignore_errors=True)
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
        f"target <= 2.5 CPU-s: {'met' if per_k <= 2.5 else 'NOT met'}"
    )
    if sc is not None:
        swall, scpu, spages = sc
        s_k = scpu / max(spages, 1) * 1000
        print(
            f"scrapy      : {spages} responses in {swall:.1f}s = {spages / swall:.0f} pages/s; "
            f"{scpu:.2f} CPU-s = {s_k:.2f} CPU-s per 1000 pages"
        )
        print(
            f"ratio       : Scrapy / politecrawl CPU per page = {s_k / per_k:.1f}x "
            f"(target >= 5x); pages/s politecrawl {pages / wall:.0f} vs Scrapy "
            f"{spages / swall:.0f}"
        )
    else:
        print(
            f"scrapy      : not run; reference {SCRAPY_CPU_PER_1000} CPU-s per 1000 pages "
            f"(../shared/LIBRARIES.md) / politecrawl = {SCRAPY_CPU_PER_1000 / per_k:.1f}x"
        )
    for n, (rwall, rcpu, rpages) in rw.items():
        print(
            f"redis x{n}    : {rpages} pages in {rwall:.1f}s = {rpages / rwall:.0f} pages/s; "
            f"{rcpu / max(rpages, 1) * 1000:.2f} CPU-s per 1000 pages (all workers)"
        )
    print(
        f"politeness  : ideal rate hosts/delay = {ideal:.0f} req/s"
        + ("" if args.plain else " (error pages double their sites' delays: use --plain)")
    )
    for name, (n_req, span, slot_use, worst) in use.items():
        rate = n_req / max(span, 1e-9)
        print(
            f"  {name:<11}: {n_req} requests, first to last in {span:.1f}s = {rate:.1f} req/s "
            f"= {rate / ideal:.1%} of ideal; per-site slot use {slot_use:.1%} "
            f"(worst site {worst:.1%})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
