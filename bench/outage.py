"""A short outage of the crawler's own network: coverage and sites parked, against a run
without it, in the same run (issue 28, section 3).

Two crawls of the same test web (``--hosts`` sites of ``--pages`` pages, one server process
on loopback), each by the real command with ``--max-time``:

- **baseline**: the server stays up;
- **outage**: the server process is stopped at ``--at`` seconds (its listening socket closed:
  every connection refused, as when the crawler's own link drops) and started again on the
  same port ``--down`` seconds later.

Printed for each: pages fetched (distinct 200 pages in the server's access log) and their share
of the baseline's, whether the crawl ended ``done``, the sites parked or lost
(``summary.json``), the outages the crawler noticed, and the requests it sent while the
server was down (``log/requests.jsonl``).

    python bench/outage.py                       # 1000 sites x 10 pages, down 15 s at t=20 s
    python bench/outage.py --hosts 300 --max-time 60
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from politecrawl.storage.logs import read_jsonl

UA = "outagebench/1.0 (+http://bot.example/info)"


def serve(hosts: int, pages: int, log: Path, port: int) -> subprocess.Popen[str]:
    """The test web on ``port`` (0: any free one), logging to ``log``."""
    args = ["--hosts", str(hosts), "--pages", str(pages), "--port", str(port), "--plain"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "politecrawl.demo.web", *args, "--access-log", str(log)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    if not proc.stdout.readline():
        proc.kill()
        raise SystemExit("the test web did not start")
    return proc


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def pages_fetched(logs: list[Path]) -> int:
    seen: set[tuple[str, str]] = set()
    for log in logs:
        if not log.exists():
            continue
        for line in log.read_text().splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("status") == 200 and e.get("path") != "/robots.txt":
                seen.add((e["host"], e["path"]))
    return len(seen)


def run(args: argparse.Namespace, work: Path, outage: bool) -> dict[str, Any]:
    name = "outage" if outage else "baseline"
    logs = [work / f"{name}-access-0.jsonl", work / f"{name}-access-1.jsonl"]
    with socket.socket() as sock:  # a free port, to listen on again after the outage
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    web = serve(args.hosts, args.pages, logs[0], port)
    box: dict[str, Any] = {"web": web}
    window: dict[str, float] = {}

    def go_away() -> None:
        time.sleep(args.at)
        window["down"] = time.time()
        stop(box["web"])
        time.sleep(args.down)
        box["web"] = serve(args.hosts, args.pages, logs[1], port)
        window["up"] = time.time()

    seeds = work / "seeds.txt"
    seeds.write_text("".join(f"http://h{i}.test:{port}/\n" for i in range(args.hosts)))
    out = work / name
    cmd = [
        sys.executable, "-m", "politecrawl", "crawl", "--seeds", str(seeds), "--user-agent", UA,
        "--out", str(out), "--resolve", f"*.test:{port}:127.0.0.1", "--allow-private-addresses",
        "--ip-min-delay", "off", "--scope", "any", "--no-progress", "--min-delay",
        str(args.delay), "--retry-base", str(args.delay), "--max-time", str(args.max_time),
    ]  # fmt: skip
    if outage:
        threading.Thread(target=go_away, daemon=True).start()
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    took = time.monotonic() - t0
    time.sleep(0.5)
    stop(box["web"])
    summary = json.loads((out / "summary.json").read_text())
    c = summary["counters"]
    into = 0
    if window:
        for rec in read_jsonl(out / "log" / "requests.jsonl"):
            when = datetime.fromisoformat(rec["time"].replace("Z", "+00:00")).timestamp()
            if window["down"] <= when <= window.get("up", when) and rec.get("error"):
                into += 1
    return {
        "run": name,
        "pages": pages_fetched(logs),
        "seconds": round(took, 1),
        "stopped_by": summary["stopped_by"],
        "exit": p.returncode,
        "parked": c.get("hosts_parked", 0) + c.get("sites_paused", 0),
        "sites_lost": len(summary.get("sites_lost", [])),
        "outages": c.get("outages", 0),
        "outage_s": round(c.get("outage_ms", 0) / 1000, 1),
        "requests_into_outage": into,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--pages", type=int, default=10)
    ap.add_argument("--delay", type=float, default=2.0, help="--min-delay of the crawls")
    ap.add_argument("--at", type=float, default=20.0, help="the server goes away at (s)")
    ap.add_argument("--down", type=float, default=15.0, help="for this long (s)")
    ap.add_argument("--max-time", type=float, default=90.0)
    ap.add_argument("--keep", type=Path, help="keep the crawls' output in this folder")
    args = ap.parse_args()
    total = args.hosts * args.pages
    with tempfile.TemporaryDirectory(prefix="outage-bench-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        rows = [run(args, work, outage=False), run(args, work, outage=True)]
    base = rows[0]["pages"] or 1
    print(
        f"{args.hosts} sites x {args.pages} pages ({total} pages), --min-delay {args.delay}, "
        f"--max-time {args.max_time:g}; outage: server stopped at t={args.at:g} s for "
        f"{args.down:g} s"
    )
    print(
        f"{'run':9} {'pages':>6} {'of base':>8} {'s':>6} {'stopped':>9} {'exit':>4} "
        f"{'parked':>6} {'lost':>5} {'outages':>7} {'paused s':>8} {'sent into':>9}"
    )
    for r in rows:
        print(
            f"{r['run']:9} {r['pages']:6} {r['pages'] / base:8.1%} {r['seconds']:6} "
            f"{r['stopped_by']:>9} {r['exit']:4} {r['parked']:6} {r['sites_lost']:5} "
            f"{r['outages']:7} {r['outage_s']:8} {r['requests_into_outage']:9}"
        )


if __name__ == "__main__":
    main()
