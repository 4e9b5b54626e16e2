"""Soak: a long crawl of a 100,000-page local web, with the crawler's memory sampled throughout.

    python bench/soak.py [--minutes 30] [--hosts 10000] [--pages 10] [--delay 10]
                         [--concurrency 500] [--every 10] [--json FILE] [--rich]
                         [--plain] [--tracemalloc N] [--tracemalloc-from S]

The test web (``python -m politecrawl.demo.web``, its own process) serves ``--hosts`` x
``--pages`` pages (plus the special URLs every host links: about 35 URLs a host). This process
crawls it with ``politecrawl.Crawler`` until ``--minutes`` have passed (or the web is done).
Every ``--every`` seconds a task on the crawler's own event loop prints one row: resident
memory (VmRSS from /proc/self/status), the frontier's own figures (``frontier.stats()``: URLs
seen and queued, hosts waiting and in flight), pages and requests so far, and the request rate.
At the end: memory growth against the frontier's growth (bytes of RSS per URL seen and per page
fetched, Python objects per page, by least squares over the samples after the first minute), so
a leak shows as growth the frontier does not explain. Then the curve of memory against
requests (RSS at each tenth of the requests, and bytes per request between them).
``--rich``: the all-HTML web (bench/throughput.py --rich). ``--tracemalloc N``: what holds the
memory, by the profiler: the N allocation sites that grew most between the first sample after
a minute (a third of the run, if shorter) and the end (tracemalloc, 1 frame; it costs CPU
and its own memory, so a run with it gives the holders, a run without it the figures).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from benchlib import cpu_s, rss_mb, start_testweb, testweb_config

from politecrawl import Crawler

UA = "soakbot/1.0 (+http://bench.example/bot)"


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over xs (0 when xs do not vary)."""
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0


HEADER = (
    f"{'t_s':>6} {'rss_mb':>8} {'d_rss':>7} {'seen':>8} {'queued':>8} {'waiting':>7} "
    f"{'flight':>6} {'pages':>8} {'requests':>8} {'req/s':>6} {'cpu_s':>7} {'py_objs':>9}"
)


def curve(rows: list[dict[str, Any]], points: int = 10) -> list[str]:
    """Memory against requests: the sample nearest each tenth of the requests, and the bytes
    of RSS per request from the one before."""
    if not rows or rows[-1]["requests"] == 0:
        return []
    total = rows[-1]["requests"]
    picked: list[dict[str, Any]] = []
    for k in range(1, points + 1):
        row = min(rows, key=lambda r: abs(r["requests"] - total * k / points))
        if not picked or row is not picked[-1]:
            picked.append(row)
    lines = [f"{'requests':>9} {'t_s':>6} {'rss_mb':>8} {'bytes/request since previous':>30}"]
    prev: dict[str, Any] | None = None
    for row in picked:
        per = ""
        if prev is not None and row["requests"] > prev["requests"]:
            d = (row["rss_mb"] - prev["rss_mb"]) * 2**20 / (row["requests"] - prev["requests"])
            per = f"{d:.0f}"
        lines.append(f"{row['requests']:9d} {row['t_s']:6.0f} {row['rss_mb']:8.1f} {per:>30}")
        prev = row
    return lines


_SNAPSHOTS: list[tracemalloc.Snapshot] = []


async def sample(
    crawler: Crawler, every: float, rows: list[dict[str, Any]], baseline_s: float = 60.0
) -> None:
    """A row every ``every`` s; with tracemalloc, its baseline snapshot at ``baseline_s``."""
    t0 = time.monotonic()
    last_req, last_t = 0, t0
    rss0 = rss_mb()
    print(HEADER, flush=True)
    while True:
        await asyncio.sleep(every)
        now = time.monotonic()
        stats = await crawler.frontier.store.stats()
        c = crawler.counters
        row = {
            "t_s": round(now - t0, 1),
            "rss_mb": round(rss_mb(), 1),
            "seen": int(stats.get("seen", 0)),
            "queued": int(stats.get("queued", 0)),
            "waiting": int(stats.get("hosts_waiting", 0)),
            "in_flight": int(stats.get("in_flight", 0)),
            "pages": int(c["pages_fetched"]),
            "requests": int(c["requests"]),
            "cpu_s": round(cpu_s(), 1),
            "py_objects": len(gc.get_objects()),
        }
        rate = (row["requests"] - last_req) / (now - last_t)
        last_req, last_t = row["requests"], now
        rows.append(row)
        if tracemalloc.is_tracing() and not _SNAPSHOTS and row["t_s"] >= baseline_s:
            _SNAPSHOTS.append(tracemalloc.take_snapshot())
            print(f"tracemalloc: baseline at {row['t_s']:.0f} s", flush=True)
        print(
            f"{row['t_s']:6.0f} {row['rss_mb']:8.1f} {row['rss_mb'] - rss0:+7.1f} "
            f"{row['seen']:8d} {row['queued']:8d} {row['waiting']:7d} {row['in_flight']:6d} "
            f"{row['pages']:8d} {row['requests']:8d} {rate:6.0f} {row['cpu_s']:7.1f} "
            f"{row['py_objects']:9d}",
            flush=True,
        )


async def soak(args: argparse.Namespace, port: int, out: Path) -> tuple[Any, list[dict[str, Any]]]:
    cfg = testweb_config(
        port,
        args.hosts,
        UA,
        args.delay,
        out,
        concurrency=args.concurrency,
        max_time_s=args.minutes * 60,
    )
    crawler = Crawler(cfg)
    rows: list[dict[str, Any]] = []
    baseline_s = args.tracemalloc_from
    if baseline_s is None:
        baseline_s = min(60.0, args.minutes * 20)  # a minute in, or a third of a shorter run
    sampler = asyncio.get_running_loop().create_task(sample(crawler, args.every, rows, baseline_s))
    try:
        summary = await crawler.run()
    finally:
        sampler.cancel()
    if tracemalloc.is_tracing() and not _SNAPSHOTS:
        print(f"tracemalloc: no baseline: the run ended before {baseline_s:.0f} s")
    if tracemalloc.is_tracing() and _SNAPSHOTS:
        end = tracemalloc.take_snapshot()
        print(f"tracemalloc: the {args.tracemalloc} sites that grew most after the baseline")
        for stat in end.compare_to(_SNAPSHOTS[0], "lineno")[: args.tracemalloc]:
            print(f"  {stat.size_diff / 2**20:+8.2f} MiB {stat.count_diff:+9d} blocks  "
                  f"(now {stat.size / 2**20:7.2f} MiB)  {stat.traceback[0]}")  # fmt: skip
        print("tracemalloc: the largest holders at the end")
        for stat in end.statistics("lineno")[: args.tracemalloc]:
            print(f"  {stat.size / 2**20:8.2f} MiB {stat.count:9d} blocks  {stat.traceback[0]}")
    return summary, rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--hosts", type=int, default=10_000)
    ap.add_argument("--pages", type=int, default=10)
    ap.add_argument("--delay", type=float, default=10.0, help="per-host delay, s (10)")
    ap.add_argument("--concurrency", type=int, default=500)
    ap.add_argument("--every", type=float, default=10.0, help="seconds between samples (10)")
    ap.add_argument("--json", type=Path, help="also write the samples and figures here")
    ap.add_argument("--rich", action="store_true", help="the all-HTML web (30-100 links a page)")
    ap.add_argument("--plain", action="store_true", help="normal pages only (no error pages)")
    ap.add_argument(
        "--tracemalloc", type=int, default=0, help="profile: the N sites that grew most (0: off)"
    )
    ap.add_argument(
        "--tracemalloc-from",
        type=float,
        default=None,
        help="seconds into the run of the baseline snapshot (default: 60, or a third of a "
        "shorter run); later, once the bounded caches are full, it shows what keeps growing",
    )
    args = ap.parse_args()
    if args.tracemalloc:
        tracemalloc.start(1)
    if args.hosts * args.pages < 100_000:
        print(f"note: {args.hosts * args.pages} pages, under the 100,000 a soak is meant for")

    tmp = Path(tempfile.mkdtemp(prefix="pc-soak-"))
    server, port = start_testweb(
        args.hosts, args.pages, plain=args.plain or args.rich, rich=args.rich
    )
    print(
        f"soak: {args.hosts} hosts x {args.pages} pages, delay {args.delay} s, concurrency "
        f"{args.concurrency}, {args.minutes:g} min, sample every {args.every:g} s, "
        f"cpus {os.cpu_count()}",
        flush=True,
    )
    t0 = time.monotonic()
    try:
        summary, rows = asyncio.run(soak(args, port, tmp / "out"))
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
        wall = time.monotonic() - t0
        disk = sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file())
        shutil.rmtree(tmp, ignore_errors=True)

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    late = [r for r in rows if r["t_s"] >= 60] or rows
    per_url = slope([r["seen"] for r in late], [r["rss_mb"] * 2**20 for r in late])
    per_min = slope([r["t_s"] / 60 for r in late], [r["rss_mb"] for r in late])
    per_page = slope([r["pages"] for r in late], [r["rss_mb"] * 2**20 for r in late])
    objs_per_page = slope([r["pages"] for r in late], [r["py_objects"] for r in late])
    first, last = (late[0], late[-1]) if late else ({}, {})
    figures = {
        "minutes": args.minutes,
        "stopped_by": summary.stopped_by,
        "wall_s": round(wall, 1),
        "pages_fetched": summary.pages_fetched,
        "requests": summary.requests,
        "hosts": summary.hosts,
        "queued_left": summary.queued_left,
        "peak_rss_mb": round(peak, 1),
        "rss_first_mb": first.get("rss_mb"),
        "rss_last_mb": last.get("rss_mb"),
        "seen_first": first.get("seen"),
        "seen_last": last.get("seen"),
        "rss_bytes_per_url_seen": round(per_url, 1),
        "rss_bytes_per_page_fetched": round(per_page, 1),
        "py_objects_per_page_fetched": round(objs_per_page, 2),
        "rss_mb_per_minute": round(per_min, 2),
        "output_bytes_on_disk": disk,
        "errors": summary.errors,
    }
    print(
        f"done: stopped by {summary.stopped_by} after {wall:.0f} s; {summary.pages_fetched} pages, "
        f"{summary.requests} requests, {summary.queued_left} URLs still queued; output on disk "
        f"{disk / 2**20:.0f} MB"
    )
    if late:
        print(
            f"memory: RSS {first['rss_mb']} -> {last['rss_mb']} MB (peak {peak:.0f} MB) while the "
            f"frontier saw {first['seen']} -> {last['seen']} URLs: {per_url:.0f} bytes of RSS per "
            f"URL seen (least squares after the first minute), {per_min:+.2f} MB per minute; "
            f"per page fetched: {per_page:.0f} bytes of RSS, {objs_per_page:.2f} Python objects "
            f"(queued {first['queued']} -> {last['queued']})"
        )
    for line in curve(rows):
        print(line)
    if args.json:
        args.json.write_text(json.dumps({"figures": figures, "samples": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
