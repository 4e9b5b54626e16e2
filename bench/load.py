"""Load: 10,000 local hosts at concurrency 500; the test server's access log is the judge.

    python bench/load.py [--hosts 10000] [--pages 3] [--concurrency 500] [--delay 5]
                         [--max-time 180] [--max-pages N] [--max-wait 30] [--json FILE]

The test web (``python -m politecrawl.demo.web``) runs in its own process and writes every
request it answers to an access log; this process runs ``politecrawl.Crawler`` against it
(``--resolve "*.test:PORT:127.0.0.1"``, scope ``any``, ``min_delay_s=--delay``,
``response_time_factor=1.0``, 10 ms jitter). The crawl stops by itself at ``--max-time``
(default 3 minutes) or ``--max-pages``.

Reported:

* politeness violations (``testweblog.politeness_violations`` on the server's log with the
  configured delay as the minimum gap: overlapping requests to one host, or starts closer
  than the delay); must be 0;
* starvation: for every request of a host, ``actual start - allowed start``, where the allowed
  start is the previous request's start plus the delay the crawler logged for
  it (``delay_s`` in log/requests.jsonl: ``max(Crawl-delay, --delay, mean response time)`` x
  backoff), or the end of a 429/503 plus its Retry-After (1 s on the test web), whichever is
  later. Pairs whose next request is a retry (its URL was not fetchable yet) or follows an
  unreachable robots.txt are left out. "first page" is the pair robots.txt -> first page (the
  seed is queued from the start, so the host had work the moment it became ready); "first
  contact" is crawl start -> robots.txt. Hosts still waiting when the crawl stopped are
  counted with their lateness so far (``censored``), so a starved host cannot hide: from
  its allowed start, or, for a site that had nothing queued until a link to it was found late,
  from when the frontier found it due (``SqliteFrontier.ready_since``). Both
  clocks are shown: the server's (when the handler ran: what the site saw) and the crawler's
  (its stamp just before sending: what the scheduler did). They differ by the time a request
  takes to reach the server's handler, which grows with the crawler's event-loop lag;
* the crawler's CPU seconds, wall seconds and peak RSS, the server's CPU seconds, and the
  event loop's lag (a 50 ms ticker's overshoot).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import itertools
import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchlib import cpu_s, rss_mb, start_testweb, testweb_config

from politecrawl import Crawler
from politecrawl.demo.accesslog import AccessEntry, load_access_log, politeness_violations
from politecrawl.storage.logs import iter_log_records

UA = "loadbot/1.0 (+http://bench.example/bot)"
RETRY_AFTER_S = 1.0  # what the test web's 429 and 503 answers carry


def stop_server(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)  # the test web closes its access log on SIGTERM
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(len(s) * q))]


def _ts(iso: str) -> float:
    return datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


class LagMeter:
    """How late a 50 ms ticker wakes up: the event loop's responsiveness under load."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self.peak_rss = 0.0
        self.loop_cpu_s = 0.0  # CPU time of the event loop's own thread
        self._cpu0 = time.thread_time()
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            t0 = time.perf_counter()
            await asyncio.sleep(0.05)
            self.lags.append(time.perf_counter() - t0 - 0.05)
            if len(self.lags) % 20 == 0:
                self.peak_rss = max(self.peak_rss, rss_mb())

    def __enter__(self) -> LagMeter:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop_cpu_s = time.thread_time() - self._cpu0
        if self._task is not None:
            self._task.cancel()


def join_logs(
    entries: list[AccessEntry], log: list[dict[str, Any]]
) -> tuple[dict[str, list[tuple[AccessEntry, dict[str, Any]]]], int]:
    """Per host, the server's entries paired with the crawler's records, both in start order.

    Hosts where the two counts differ (a request the server never answered) are left out.
    """
    server: dict[str, list[AccessEntry]] = defaultdict(list)
    for e in entries:
        server[e.host].append(e)
    crawler: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in log:
        crawler[rec.get("key") or ""].append(rec)
    pairs: dict[str, list[tuple[AccessEntry, dict[str, Any]]]] = {}
    mismatched = 0
    for host, recs in crawler.items():
        seq = sorted(server.get(host, []), key=lambda e: e.start)
        recs.sort(key=lambda r: _ts(r["time"]))
        if len(seq) != len(recs):
            mismatched += 1
            continue
        pairs[host] = list(zip(seq, recs, strict=True))
    return pairs, mismatched


def explain_violations(
    pairs: dict[str, list[tuple[AccessEntry, dict[str, Any]]]], min_gap: float
) -> dict[str, Any]:
    """Server-side gaps under ``min_gap``, each checked against the crawler's own start times.

    The server stamps a request when its handler runs; when its event loop is busy that is
    later than the moment the request was sent, by a different amount for each request. A gap
    that is short at the server but not at the crawler (whose log has ms resolution) comes
    from that lag; one short at both would be a real politeness bug.
    """
    short = real = 0
    lags: list[float] = []
    worst_gap = float("inf")
    worst = ""
    for host, seq in pairs.items():
        lags.append(seq[0][0].start - _ts(seq[0][1]["time"]))
        for (e0, r0), (e1, r1) in itertools.pairwise(seq):
            lags.append(e1.start - _ts(r1["time"]))
            if e1.start - e0.start >= min_gap - 0.005:
                continue
            short += 1
            crawler_gap = _ts(r1["time"]) - _ts(r0["time"])
            worst_gap = min(worst_gap, crawler_gap)
            if crawler_gap < min_gap - 0.0015:  # 1 ms log resolution, twice, plus float slack
                real += 1
                worst = worst or f"{host}: {e1.path} {crawler_gap:.3f} s after {e0.path}"
    return {
        "short_at_server": short,
        "short_at_crawler_too": real,
        "example": worst,
        "shortest_crawler_gap_s": round(worst_gap, 3) if real else None,
        "server_stamp_lag_p50_ms": round(percentile(lags, 0.5) * 1000, 1),
        "server_stamp_lag_p99_ms": round(percentile(lags, 0.99) * 1000, 1),
        "server_stamp_lag_max_ms": round(max(lags, default=0.0) * 1000, 1),
    }


def starvation(
    pairs: dict[str, list[tuple[AccessEntry, dict[str, Any]]]],
    crawl_start: float,
    crawl_end: float,
    waiting: dict[str, float],
    clock: str = "server",
) -> dict[str, Any]:
    """Lateness of each request against the start its host was allowed (see the docstring).

    ``clock="server"``: request starts as the server stamped them (what the site saw);
    ``"crawler"``: as the crawler stamped them just before sending (what its scheduler did).
    """

    def start(e: AccessEntry, r: dict[str, Any]) -> float:
        return e.start if clock == "server" else _ts(r["time"])

    def end(e: AccessEntry, r: dict[str, Any]) -> float:
        return e.end if clock == "server" else _ts(r["time"]) + float(r["duration_ms"]) / 1000

    later: list[float] = []
    first_page: list[float] = []
    first_contact: list[float] = []
    censored: list[float] = []
    for host, seq in pairs.items():
        first_contact.append(start(*seq[0]) - crawl_start)
        allowed_next: float | None = None
        for k, (prev, rec) in enumerate(seq):
            allowed_next = start(prev, rec) + float(rec.get("delay_s") or 0.0)
            if prev.status in (429, 503):
                allowed_next = max(allowed_next, end(prev, rec) + RETRY_AFTER_S)
            if str(rec.get("outcome", "")).startswith("robots:unreachable"):
                allowed_next = None  # asked again after a robots back-off: not a scheduling gap
            if k + 1 >= len(seq):
                break
            nxt, nrec = seq[k + 1]
            if allowed_next is None or int(nrec.get("attempt") or 1) > 1:
                continue  # a retry waits for its own not-before time
            late = start(nxt, nrec) - allowed_next
            later.append(late)
            if rec["url"].endswith("/robots.txt") and not nrec["url"].endswith("/robots.txt"):
                first_page.append(late)
        if host in waiting and allowed_next is not None:
            # still had fetchable work when the crawl stopped: late by at least this much
            ready = max(allowed_next, waiting[host])
            if ready < crawl_end:
                censored.append(crawl_end - ready)
    never = [crawl_end - crawl_start for h in waiting if h not in pairs]

    def stats(xs: list[float]) -> dict[str, float]:
        return {
            "n": len(xs),
            "p50_s": round(percentile(xs, 0.5), 3),
            "p99_s": round(percentile(xs, 0.99), 3),
            "max_s": round(max(xs), 3) if xs else float("nan"),
            "min_s": round(min(xs), 3) if xs else float("nan"),
        }

    return {
        "all_requests": stats(later),
        "first_page": stats(first_page),
        "first_contact": stats(first_contact),
        "still_waiting_at_stop": stats(censored),
        "all_including_waiting": stats(later + censored + never),
        "never_contacted": len(never),
    }


def waiting_at_stop(state: Path) -> dict[str, float]:
    """Hosts with queued URLs when the crawl stopped -> when they could be asked next: the
    earliest not-before time, or the host's own next-allowed time if later (a backoff
    after errors, a Retry-After, a parked site are the site's pace, not starvation)."""
    try:
        db = sqlite3.connect(f"file:{state}?mode=ro", uri=True)
        try:
            rows = db.execute(
                "SELECT key, MIN(not_before) FROM urls WHERE state=0 GROUP BY key"
            ).fetchall()
            hosts = dict(db.execute("SELECT key, data FROM hosts").fetchall())
        finally:
            db.close()
    except sqlite3.Error as exc:
        print(f"(could not read the queue left: {exc})")
        return {}
    out = {}
    for key, nb in rows:
        h = json.loads(hosts[key]) if key in hosts else {}
        out[str(key)] = max(float(nb or 0.0), float(h.get("next_allowed", 0.0)))
    return out


async def crawl(args: argparse.Namespace, port: int, out: Path) -> dict[str, Any]:
    cfg = testweb_config(
        port,
        args.hosts,
        UA,
        args.delay,
        out,
        concurrency=args.concurrency,
        max_time_s=args.max_time,
        max_pages=args.max_pages,
        max_wait_s=args.max_wait,
    )
    crawler = Crawler(cfg)
    c0, t0 = cpu_s(), time.time()
    with LagMeter() as lag:
        summary = await crawler.run()
    return {
        "summary": summary,
        "ready_since": getattr(crawler.frontier, "ready_since", dict)(),
        "cpu_s": cpu_s() - c0,
        "start": t0,
        "end": time.time(),
        "lags": lag.lags,
        "loop_cpu_s": lag.loop_cpu_s,
        "peak_rss_sampled_mb": lag.peak_rss,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=10_000)
    ap.add_argument("--pages", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=500)
    ap.add_argument("--delay", type=float, default=5.0, help="per-host delay, s (5)")
    ap.add_argument("--max-time", type=float, default=180.0, help="stop after this many s")
    ap.add_argument("--max-pages", type=int, default=None)
    ap.add_argument(
        "--max-wait",
        type=float,
        default=30.0,
        help="crawler's --max-wait: a host due this long goes first (30; the crawler's default "
        "300 s would not act within a 3-minute run)",
    )
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    ap.add_argument("--keep", type=Path, help="keep the crawl output and access log here")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="pc-load-"))
    access = tmp / "access.jsonl"
    server, port = start_testweb(args.hosts, args.pages, access_log=access)
    try:
        r = asyncio.run(crawl(args, port, tmp / "out"))
    finally:
        stop_server(server)
    server_cpu = cpu_s(resource.RUSAGE_CHILDREN)
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    entries = load_access_log(str(access))
    problems = politeness_violations(entries, args.delay)
    log = list(iter_log_records(tmp / "out" / "log", "requests"))
    pairs, mismatched = join_logs(entries, log)
    explained = explain_violations(pairs, args.delay)
    waiting = waiting_at_stop(tmp / "out" / "state.sqlite")
    for host, since in r["ready_since"].items():
        # a URL found late for an idle site: its wait began when the frontier found it due
        if host in waiting:
            waiting[host] = max(waiting[host], since)
    starve = starvation(pairs, r["start"], r["end"], waiting)
    starve_crawler = starvation(pairs, r["start"], r["end"], waiting, clock="crawler")
    s = r["summary"]
    wall = r["end"] - r["start"]
    lags = r["lags"]
    figures: dict[str, Any] = {
        "hosts": args.hosts,
        "pages_per_host": args.pages,
        "concurrency": args.concurrency,
        "delay_s": args.delay,
        "stopped_by": s.stopped_by,
        "requests_seen_by_server": len(entries),
        "requests_logged": s.requests,
        "pages_fetched": s.pages_fetched,
        "hosts_contacted": len({e.host for e in entries}),
        "politeness_violations": len(problems),
        "violations_checked": explained,
        "hosts_skipped_log_mismatch": mismatched,
        "starvation": starve,
        "starvation_crawler_clock": starve_crawler,
        "wall_s": round(wall, 1),
        "crawler_cpu_s": round(r["cpu_s"], 1),
        "server_cpu_s": round(server_cpu, 1),
        "requests_per_s": round(len(entries) / wall, 1),
        "demand_req_per_s": round(args.hosts / args.delay, 1),
        "peak_rss_mb": round(peak_rss, 1),
        "loop_thread_cpu_s": round(r["loop_cpu_s"], 1),
        "loop_lag_p99_ms": round(percentile(lags, 0.99) * 1000, 1),
        "loop_lag_max_ms": round(max(lags, default=0.0) * 1000, 1),
        "errors": s.errors,
    }
    print(
        f"load: {args.hosts} hosts x {args.pages} pages, concurrency {args.concurrency}, "
        f"delay {args.delay} s, cpus {os.cpu_count()}"
    )
    print(
        f"  crawl        stopped by {s.stopped_by} after {wall:.1f} s: {len(entries)} requests "
        f"seen by the server ({figures['requests_per_s']}/s; the hosts would take "
        f"{figures['demand_req_per_s']}/s), {s.pages_fetched} pages, "
        f"{figures['hosts_contacted']} hosts contacted"
    )
    print(
        f"  politeness   {len(problems)} violations in the server's log (min gap {args.delay} s, "
        f"5 ms tolerance); short gaps that are short at the crawler too (must be 0): "
        f"{explained['short_at_crawler_too']} (shortest {explained['shortest_crawler_gap_s']} s)"
        f"; the others come from the server stamping "
        f"requests late (stamp lag p50 {explained['server_stamp_lag_p50_ms']} ms, p99 "
        f"{explained['server_stamp_lag_p99_ms']} ms, max {explained['server_stamp_lag_max_ms']} ms)"
    )
    for p in [*problems[:5], explained["example"]]:
        if p:
            print(f"               {p}")
    for label, table in (("server clock", starve), ("crawler clock", starve_crawler)):
        print(
            f"  starvation   actual start - allowed start, {label} (--max-wait {args.max_wait} s):"
        )
        for name, st in table.items():
            if isinstance(st, dict):
                print(
                    f"               {name:24} n={st['n']:6d}  p50 {st['p50_s']:7.3f} s  "
                    f"p99 {st['p99_s']:7.3f} s  max {st['max_s']:7.3f} s  min {st['min_s']:7.3f} s"
                )
    print(
        f"               never contacted: {starve['never_contacted']} hosts; skipped "
        f"(log/server count mismatch): {mismatched}"
    )
    print(
        f"  resources    crawler {r['cpu_s']:.1f} CPU-s over {wall:.1f} s wall, peak RSS "
        f"{peak_rss:.0f} MB (event loop thread {r['loop_cpu_s']:.1f} CPU-s); server "
        f"{server_cpu:.1f} CPU-s; loop lag p99 "
        f"{figures['loop_lag_p99_ms']} ms, max {figures['loop_lag_max_ms']} ms"
    )
    if s.errors:
        print(f"  errors       {s.errors}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str) + "\n")
    if args.keep:
        shutil.copytree(tmp, args.keep, dirs_exist_ok=True)
    shutil.rmtree(tmp, ignore_errors=True)
    concurrent = [p for p in problems if p.startswith("concurrent")]
    return 1 if explained["short_at_crawler_too"] or concurrent else 0


if __name__ == "__main__":
    raise SystemExit(main())
