"""Client CPU seconds per 1000 pages, everything on, against a baseline measured in the same run.

    python bench/throughput.py [--hosts 1000] [--pages 4] [--delay 0.2]
    python bench/throughput.py --plain --hosts 200 --pages 20 --delay 2 --no-scrapy
    python bench/throughput.py --rich --hosts 400 --pages 10 --delay 0.5 --no-redis \
        --processes 1,2 --topic "steam locomotives" --profile
    python bench/throughput.py --rich --hosts 2000 --pages 5 --delay 0.5 --no-redis \
        --no-scrapy --processes 1,2 --rounds 5 --ceiling
    python bench/throughput.py --dns-latency-ms 100 --hosts 2000 --pages 5 --dns-seconds 30
    python bench/throughput.py --one-ip --hosts 50 --pages 200 --delay 0.5 --rounds 2

``--plain`` serves normal pages only (no error pages whose 429/503 double a site's delay by
design), so politeness is the only bound: the rate is then judged against the ideal
hosts / delay, and the test server's access log gives each site's request gaps.

``--rich`` serves an all-HTML web of realistic pages (30-100 links, 30-38 KB of markup each).
politecrawl runs as the real ``politecrawl crawl`` command in a child process (``--processes``
lists the process counts to run); its CPU and peak RSS come from that child's rusage (with
``--processes N``, the CPU of all its crawler processes, and the peak RSS of the largest).
``--rounds N`` runs the politecrawl variants N times, alternating (1, 2, 1, 2, ...), so that
each pair shares the machine's noise (it is shared and noisy: the same crawl's CPU per page
varies by a fifth from one minute to the next); each variant's median round is printed, and
the ratio of processes is given per round, with the median. The ratio is also given once the
crawl is under way (the server's log, page requests between their 10th and 90th percentile):
the start (imports, the first round of robots.txt, one per site) is the same serial work for
any number of processes, and weighs more the shorter the crawl.
``--ceiling`` measures, each round, what two processes can give on this machine at all: a
pure Python CPU loop in one process and in two (the cores' own gain: on a shared 2-vCPU
machine it is well under 2x), and two independent crawls of half the sites each, against one
crawl of all of them (nothing shared, nothing coordinated: the most any split of the crawl
over two processes can give while the test web shares the cores); the ``--processes 2``
ratio is then given as a share of that.
``--profile`` adds a run under py-spy and prints the CPU by stage (bench/stages.py).
The test web runs in its own process, so the crawler's CPU is its own; it is the lean server
(``testweblean``), since it shares the machine's cores with the crawler (its CPU per request
is printed with each run).
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
import multiprocessing
import multiprocessing.pool
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import aiohttp
from benchlib import cpu_s, start_testweb

from politecrawl import CrawlConfig, Crawler, FetchConfig, PolitenessConfig
from politecrawl.demo.accesslog import load_access_log

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


def cli_crawl(
    port: int,
    hosts: int,
    delay: float,
    concurrency: int,
    out: Path,
    *,
    extra: tuple[str, ...] = (),
    profile: Path | None = None,
) -> tuple[float, float, int, int, int, float]:
    """The real ``politecrawl crawl`` command in a child process, as a user runs it; its CPU
    and peak RSS from the child's own rusage (``wait4``). With ``profile``, py-spy samples it
    (``--format raw``; see bench/stages.py). Returns wall, CPU-s, pages fetched, requests,
    stored, peak RSS in MiB."""
    t0 = time.perf_counter()
    proc = start_crawl(port, range(hosts), delay, concurrency, out, extra=extra, profile=profile)
    return end_crawl(proc, out, t0)


def start_crawl(
    port: int,
    host_ids: Iterable[int],
    delay: float,
    concurrency: int,
    out: Path,
    *,
    extra: tuple[str, ...] = (),
    profile: Path | None = None,
) -> subprocess.Popen[str]:
    """``politecrawl crawl`` seeded with the home pages of ``host_ids``, started."""
    seeds = out.parent / f"{out.name}-seeds.txt"
    seeds.write_text("".join(f"http://h{i}.test:{port}/\n" for i in host_ids))
    cmd = [
        sys.executable, "-m", "politecrawl", "crawl", "--seeds", str(seeds),
        "--user-agent", UA, "--out", str(out), "--resolve", f"*.test:{port}:127.0.0.1",
        "--allow-private-addresses", "--scope", "any", "--min-delay", str(delay),
        "--jitter", "0.01", "--delay-factor", "1", "--retry-base", "0.5", "--park-time", "1",
        "--concurrency", str(concurrency), "--no-progress", *extra,
        # the test web's names all sit on 127.0.0.1 and stand for many servers
        "--ip-min-delay", "off",
    ]  # fmt: skip
    if profile is not None:
        cmd = ["py-spy", "record", "--format", "raw", "--subprocesses", "-r", "200",
               "-o", str(profile), "--", *cmd]  # fmt: skip
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def end_crawl(
    proc: subprocess.Popen[str], out: Path, t0: float
) -> tuple[float, float, int, int, int, float]:
    """Wait for a crawl ``start_crawl`` began at ``t0``: what ``cli_crawl`` returns."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        err = proc.stderr.read() if proc.stderr else ""
        raise SystemExit(f"politecrawl crawl failed ({proc.returncode}): {err[-2000:]}")
    summary = json.loads((out / "summary.json").read_text())
    # with --processes, the workers are the crawler's children, reaped by it: in its rusage
    return (
        wall,
        usage.ru_utime + usage.ru_stime,
        int(summary["pages_fetched"]),
        int(summary["requests"]),
        int(summary["stored"]),
        usage.ru_maxrss / 1024,
    )


def split_ceiling(
    port: int, hosts: int, delay: float, concurrency: int, work: Path, r: int
) -> float:
    """What any split of the work over two processes can give on this machine, with the
    test web sharing its cores: two independent crawls of half the sites each (nothing
    shared, nothing to coordinate) against one crawl of all of them, all with ``--scope
    host`` so that neither half strays into the other's sites. Returns the pages/s ratio."""
    scoped = ("--scope", "host")
    out = work / f"ceiling-one-{r}"
    one = cli_crawl(port, hosts, delay, concurrency, out, extra=scoped)
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    outs = [work / f"ceiling-half{k}-{r}" for k in (0, 1)]
    procs = [
        start_crawl(port, range(k, hosts, 2), delay, concurrency, outs[k], extra=scoped)
        for k in (0, 1)
    ]
    halves = [end_crawl(proc, o, t0) for proc, o in zip(procs, outs, strict=True)]
    for o in outs:
        shutil.rmtree(o, ignore_errors=True)
    both = sum(h[2] for h in halves) / max(h[0] for h in halves)
    return both / (one[2] / one[0])


def _spin(n: int) -> float:
    t0, s = time.perf_counter(), 0
    for i in range(n):
        s += i * i % 7
    return time.perf_counter() - t0


def core_scaling(pool: multiprocessing.pool.Pool, n: int = 12_000_000) -> float:
    """The machine's own two-core gain: a pure Python CPU loop (about a second), in one
    process and then in two at once; the throughput ratio. A crawl cannot scale better."""
    one = _spin(n)
    two = pool.map(_spin, [n, n])
    return 2 * one / max(two)


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a running process (here: the test web's)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def median_run(
    got: list[tuple[float, float, int, int, int, float]],
) -> tuple[float, float, int, int, int, float]:
    """The round whose pages/s is the median (the lower middle one of an even count)."""
    ranked = sorted(got, key=lambda run: run[2] / run[0])
    return ranked[(len(ranked) - 1) // 2]


def steady_rate(access_log: Path, since: float, until: float) -> float:
    """Pages per second once the crawl is under way, from the server's log: page requests
    (not robots.txt) between the 10th and the 90th percentile of their start times, so the
    start-up (imports, the first round of robots.txt fetches) and the tail are left out."""
    starts = sorted(
        e.start
        for e in load_access_log(str(access_log))
        if since <= e.start <= until and not e.path.endswith("/robots.txt")
    )
    lo, hi = starts[len(starts) // 10], starts[len(starts) * 9 // 10]
    return (len(starts) * 8 // 10) / max(hi - lo, 1e-9)


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


def scrapy(
    port: int, hosts: int, delay: float, concurrency: int
) -> tuple[float, float, int, float]:
    """Run Scrapy in a child process; its CPU time and peak RSS (MiB) from the child's rusage.
    Its pages are its responses but robots.txt: politecrawl's ``pages_fetched`` counts the
    same way (robots.txt requests are in ``requests``, not in pages), so CPU per page is
    compared like for like."""
    script = Path(__file__).with_name("scrapy_crawl.py")
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, str(script), str(port), str(hosts), str(delay), str(concurrency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    stats = json.loads(out.strip().splitlines()[-1])
    pages = int(stats["responses"]) - int(stats.get("robots", 0))
    return wall, usage.ru_utime + usage.ru_stime, pages, usage.ru_maxrss / 1024


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
        cli = [sys.executable, "-m", "politecrawl"]
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
    ap.add_argument(
        "--rich",
        action="store_true",
        help="an all-HTML web of realistic pages (30-100 links, 30-38 KB each); implies --plain",
    )
    ap.add_argument(
        "--processes",
        default="1",
        help="comma-separated --processes values to run politecrawl with (e.g. 1,2)",
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run the politecrawl variants this many times, alternating; medians reported",
    )
    ap.add_argument("--topic", default=None, help="also run politecrawl with --topic TOPIC")
    ap.add_argument(
        "--ceiling",
        action="store_true",
        help="each round, also measure what two processes can give on this machine: a pure "
        "CPU loop in 1 and 2 processes, and two independent crawls of half the sites each",
    )
    ap.add_argument(
        "--profile",
        action="store_true",
        help="one more run under py-spy: the CPU by stage (bench/stages.py)",
    )
    ap.add_argument(
        "--dns-latency-ms",
        type=float,
        default=None,
        help="names looked up at a DNS server of the bench's own answering after this many ms, "
        "in a network namespace: politecrawl instant and at N ms, Scrapy at N ms (dnslatency.py)",
    )
    ap.add_argument("--dns-seconds", type=float, default=30.0, help="each crawler's time there")
    ap.add_argument(
        "--one-ip",
        action="store_true",
        help="the names all on one address: SQLite against a Redis crawl placed by `seed` "
        "(requests/s, and their ratio per round; bench/oneip.py)",
    )
    ap.add_argument("--one-ip-seconds", type=float, default=40.0, help="each crawl's time there")
    args = ap.parse_args()
    args.plain = args.plain or args.rich
    if args.one_ip:
        from oneip import run as one_ip

        return one_ip(args)
    if args.dns_latency_ms is not None:
        from dnslatency import run

        return run(args)
    work = Path(tempfile.mkdtemp(prefix="pc-bench-"))
    access_log = work / "access.jsonl"
    # the lean server: the test web shares the 2 cores with the crawler it measures
    server, port = start_testweb(
        args.hosts, args.pages, access_log=access_log, plain=args.plain, rich=args.rich, lean=True
    )
    server_cpu: dict[str, float] = {}
    windows: dict[str, tuple[float, float]] = {}
    runs: dict[str, tuple[float, float, int, int, int, float]] = {}
    stages = None
    variants: list[tuple[str, tuple[str, ...]]] = []
    for n in (int(x) for x in args.processes.split(",")):
        extra = () if n == 1 else ("--processes", str(n))
        variants.append((f"politecrawl x{n}", extra))
    if args.topic:
        variants.append(("pc --topic", ("--topic", args.topic)))
    rounds: dict[str, list[tuple[float, float, int, int, int, float]]] = {}
    round_windows: dict[str, list[tuple[float, float]]] = {}
    cores: list[float] = []
    splits: list[float] = []
    spinners = multiprocessing.Pool(2) if args.ceiling else None
    try:
        for r in range(args.rounds):
            for name, extra in variants:  # alternating: every variant under the same noise
                w0, s0 = time.time(), process_cpu_s(server.pid)
                out = work / f"{name.replace(' ', '_')}-{r}"
                got = cli_crawl(port, args.hosts, args.delay, args.concurrency, out, extra=extra)
                shutil.rmtree(out, ignore_errors=True)
                rounds.setdefault(name, []).append(got)
                round_windows.setdefault(name, []).append((w0, time.time()))
                server_cpu[name] = server_cpu.get(name, 0.0) + process_cpu_s(server.pid) - s0
            if spinners is not None:
                cores.append(core_scaling(spinners))
                splits.append(
                    split_ceiling(port, args.hosts, args.delay, args.concurrency, work, r)
                )
        for name, got_runs in rounds.items():
            runs[name] = median_run(got_runs)
            windows[name] = round_windows[name][got_runs.index(runs[name])]
        pages = runs[variants[0][0]][2]
        _, bcpu, bok = asyncio.run(baseline(port, args.hosts, pages, args.concurrency))
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
        if args.profile:
            from stages import breakdown

            raw = work / "profile.txt"
            got = cli_crawl(
                port, args.hosts, args.delay, args.concurrency, work / "profiled",
                extra=variants[0][1], profile=raw,
            )  # fmt: skip
            stages = (breakdown(raw), got[1])
        server.terminate()
        server.wait(10)
        use = {
            name: politeness_use(access_log, since, until, args.delay)
            for name, (since, until) in windows.items()
        }
        steady = {
            name: [steady_rate(access_log, *window) for window in got]
            for name, got in round_windows.items()
        }
    finally:
        if spinners is not None:
            spinners.terminate()
        if server.poll() is None:
            server.terminate()
            server.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    ideal = args.hosts / args.delay
    web = "rich all-HTML" if args.rich else "plain" if args.plain else "mixed"
    print(
        f"{web} test web: hosts {args.hosts} x pages {args.pages}, delay {args.delay}s, "
        f"concurrency {args.concurrency}, cpus {os.cpu_count()}"
    )
    base_k = bcpu / max(bok, 1) * 1000
    print(f"baseline     : bare aiohttp loop, {bok} pages; {base_k:.2f} CPU-s per 1000 pages")
    first_k = None
    for name, (wall, cpu, pages, requests, stored, rss) in runs.items():
        per_k = cpu / max(pages, 1) * 1000
        first_k = per_k if first_k is None else first_k
        all_requests = sum(run[3] for run in rounds[name])  # the server's CPU is every round's
        web_k = server_cpu[name] / max(all_requests, 1) * 1000
        print(
            f"{name:<13}: (median of {args.rounds}) {pages} pages ({requests} requests, "
            f"{stored} stored) in {wall:.1f}s = "
            f"{pages / wall:.0f} pages/s; {per_k:.2f} CPU-s per 1000 pages; peak RSS "
            f"{rss:.0f} MiB; target <= 2.5 CPU-s: {'met' if per_k <= 2.5 else 'NOT met'}; "
            f"the test web took {web_k:.2f} CPU-s per 1000 requests"
        )
    first_name = variants[0][0]
    for name in list(runs)[1:]:
        if name.startswith("politecrawl"):
            each = [
                (b[2] / b[0]) / (a[2] / a[0])
                for a, b in zip(rounds[first_name], rounds[name], strict=True)
            ]
            settled = [b / a for a, b in zip(steady[first_name], steady[name], strict=True)]
            print(
                f"ratio        : {name} / {first_name} pages/s = "
                f"{statistics.median(each):.2f}x median of {len(each)} alternating rounds "
                f"({', '.join(f'{x:.2f}' for x in each)}; target >= 1.7x); after the robots.txt "
                f"round (10th-90th percentile of page requests, server's log): "
                f"{statistics.median(settled):.2f}x ({', '.join(f'{x:.2f}' for x in settled)})"
            )
    if cores:
        x2 = [name for name in runs if name == "politecrawl x2"]
        reach = ""
        if x2:
            mine = statistics.median(
                (b[2] / b[0]) / (a[2] / a[0])
                for a, b in zip(rounds[first_name], rounds[x2[0]], strict=True)
            )
            reach = f"; politecrawl x2 reaches {mine / statistics.median(splits):.0%} of it"
        print(
            f"ceiling      : a pure Python CPU loop in 2 processes = "
            f"{statistics.median(cores):.2f}x 1 (median; {', '.join(f'{x:.2f}' for x in cores)});"
            f" two independent crawls of half the sites each (--scope host, nothing shared) = "
            f"{statistics.median(splits):.2f}x one crawl of all (median; "
            f"{', '.join(f'{x:.2f}' for x in splits)}): the most any split can give{reach}"
        )
    if sc is not None:
        swall, scpu, spages, srss = sc
        s_k = scpu / max(spages, 1) * 1000
        print(
            f"scrapy       : {spages} pages (robots.txt not counted, as for politecrawl) in "
            f"{swall:.1f}s = {spages / swall:.0f} pages/s; "
            f"{s_k:.2f} CPU-s per 1000 pages; peak RSS {srss:.0f} MiB"
        )
        for name, run in runs.items():
            per_k = run[1] / max(run[2], 1) * 1000
            print(
                f"ratio        : Scrapy / {name} CPU per page = {s_k / per_k:.1f}x (target >= 5x);"
                f" pages/s {run[2] / run[0]:.0f} vs Scrapy {spages / swall:.0f}"
            )
    else:
        print(
            f"scrapy       : not run; reference {SCRAPY_CPU_PER_1000} CPU-s per 1000 pages "
            f"(../shared/LIBRARIES.md) / politecrawl = "
            f"{SCRAPY_CPU_PER_1000 / max(first_k or 1.0, 1e-9):.1f}x"
        )
    for n, (rwall, rcpu, rpages) in rw.items():
        print(
            f"redis x{n}     : {rpages} pages in {rwall:.1f}s = {rpages / rwall:.0f} pages/s; "
            f"{rcpu / max(rpages, 1) * 1000:.2f} CPU-s per 1000 pages (all workers)"
        )
    print(
        f"politeness   : ideal rate hosts/delay = {ideal:.0f} req/s"
        + ("" if args.plain else " (error pages double their sites' delays: use --plain)")
    )
    for name, (n_req, span, slot_use, worst) in use.items():
        rate = n_req / max(span, 1e-9)
        print(
            f"  {name:<13}: {n_req} requests, first to last in {span:.1f}s = {rate:.1f} req/s "
            f"= {rate / ideal:.1%} of ideal; per-site slot use {slot_use:.1%} "
            f"(worst site {worst:.1%})"
        )
    if stages is not None:
        from stages import format_breakdown

        counts, cpu = stages
        print(f"CPU by stage ({variants[0][0]}, py-spy samples, {cpu:.1f} CPU-s in all):")
        print(format_breakdown(counts, cpu))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
