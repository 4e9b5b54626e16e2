"""Does focused crawling find what the user wants faster, on real pages? Real crawls of the bed.

    python bench/focus.py [--bed tune,second] [--topics a,b] [--fetches 1000] [--delay 0.02]
                          [--save FILE.json] [--frontier redis://HOST:PORT/0]
    python bench/focus.py --report FILE.json [FILE.json ...]   # merge runs: tables, PNG

The bed (bench/docbed.py: Debian's documentation packages, one site per loopback host, a
portal page) is served by a separate process; politecrawl crawls it from the portal with
``bfs``, ``random``, ``keyword`` (best-first by the topic prior, no learning) and ``focused``
(prior + the online-learned prioritiser), everything on (robots, WARC, logs, politeness with
``--delay`` between requests to a site), with the crawler's defaults otherwise and
``--scope any``: links outside the bed are followed and fail, as dead links do on the web
(the bed serves them under ``HOST.invalid``, pinned to a loopback port held closed; every bed
host is pinned to 127.0.0.1, so no lookup leaves the machine). ``--closed`` keeps the scope
to the bed's hosts instead (an allow-list: the figures before issue 30). For each topic and
strategy: harvest (relevant pages / pages fetched, judged by the bed's labels, which the
crawler never sees) after 100, 300 and 1,000 fetches, and CPU per page of the crawling
process. The oracle (greedy by the true labels, following links only; bench/focus_sim.py) is
the ceiling. Held-out topics (other sites, other topics, not tuned on) are reported apart.

Targets (issue 18), averaged over topics: focused at 300 fetches >= 0.6x the oracle and >= 3x
bfs on every topic, above keyword best-first; CPU per page <= +25 % over bfs.
Curves: bench/out/focus.png (matplotlib, if installed) and bench/out/focus.csv.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import docbed
import focus_sim
from benchlib import cpu_s

from politecrawl import CrawlConfig, Crawler, FetchConfig, PolitenessConfig
from politecrawl.storage.logs import read_jsonl

UA = "benchbot/1.0 (+http://bench.example/bot)"
OUT = Path(__file__).with_name("out")
STRATEGIES = ("bfs", "random", "keyword", "focused")
CHECKPOINTS = (100, 300, 1000)
WALL: dict[tuple[str, str], float] = {}  # (topic, strategy) -> seconds the crawl took
COPIES: dict[tuple[str, str], int] = {}  # (topic, strategy) -> fetches of a page's very bytes again
MISSING: dict[tuple[str, str], int] = {}  # (topic, strategy) -> fetches answered 4xx or 5xx


def start_server(bed: str, dead_port: int) -> tuple[subprocess.Popen[str], int]:
    server = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("docbed.py")), "serve", "--bed", bed,
         "--dead-port", str(dead_port)],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert server.stdout is not None
    return server, int(server.stdout.readline().strip().rsplit(":", 1)[1])


def allow_list(bed: str) -> tuple[str, ...]:
    return (f"portal.{docbed.TLD}", *(docbed.site_by_name(n).host for n in docbed.BEDS[bed]))


async def crawl(
    strategy: str,
    topic: docbed.Topic,
    bed: str,
    port: int,
    fetches: int,
    delay: float,
    out: Path,
    defer_ratio: float | None = None,
    dead_port: int = 0,
    closed: bool = False,
    frontier: str | None = None,
) -> tuple[list[str], float]:
    cfg = CrawlConfig(
        seeds=(f"http://portal.{docbed.TLD}:{port}/",),
        out_dir=out,
        fetch=FetchConfig(
            user_agent=UA,
            resolve=(f"*.{docbed.TLD}:{port}:127.0.0.1", f"*.invalid:{dead_port}:127.0.0.1"),
            allow_private_addresses=True,
            retry_base_s=0.5,
        ),
        politeness=PolitenessConfig(
            min_delay_s=delay,
            jitter_s=0.0,
            response_time_factor=1.0,
            ip_min_delay_s=None,  # the bed's names on 127.0.0.1 stand for many servers
        ),
        concurrency=64,
        scope="any",
        allow=allow_list(bed) if closed else (),
        progress=False,
        max_pages=fetches,
        strategy=strategy,  # type: ignore[arg-type]
        topic=topic.query,
        defer_ratio=defer_ratio,
        frontier_url=frontier,  # the shared frontier: a fresh crawl id per run
        crawl_id=f"focus-{out.name}" if frontier else None,
    )
    c0, t0 = cpu_s(), time.perf_counter()
    await Crawler(cfg).run()
    cpu = cpu_s() - c0
    WALL[(topic.name, strategy)] = time.perf_counter() - t0
    order = []
    copies = missing = 0
    for r in read_jsonl(out / "log" / "requests.jsonl"):
        if not r["url"].endswith("/robots.txt") and r["status"] is not None:
            order.append(r["url"])
            copies += str(r.get("outcome") or "").startswith("duplicate")
            missing += r["status"] >= 400
    COPIES[(topic.name, strategy)] = copies
    MISSING[(topic.name, strategy)] = missing
    return order, cpu


def harvest(hits: list[int], n: int) -> float:
    return sum(hits[:n]) / n


def run_bed(
    bed: str,
    wanted: set[str],
    fetches: int,
    delay: float,
    defer_ratio: float | None = None,
    strategies: tuple[str, ...] = STRATEGIES,
    closed: bool = False,
    frontier: str | None = None,
) -> list[tuple[docbed.Topic, dict[str, tuple[list[int], float]]]]:
    topics = [t for t in docbed.topics_for(bed) if not wanted or t.name in wanted]
    graph = focus_sim.load(bed)
    dead = socket.socket()  # bound, never listening: the outside hosts' connections fail
    dead.bind(("127.0.0.1", 0))
    dead_port = dead.getsockname()[1]
    server, port = start_server(bed, dead_port)
    results = []
    try:
        for topic in topics:
            per: dict[str, tuple[list[int], float]] = {}
            for strategy in strategies:
                out = Path(tempfile.mkdtemp(prefix=f"pc-focus-{strategy}-"))
                try:
                    order, cpu = asyncio.run(
                        crawl(
                            strategy, topic, bed, port, fetches, delay, out, defer_ratio,
                            dead_port, closed, frontier,
                        )
                    )  # fmt: skip
                finally:
                    shutil.rmtree(out, ignore_errors=True)
                per[strategy] = ([int(docbed.is_relevant(topic, u)) for u in order], cpu)
            orc = focus_sim.oracle(graph, topic, fetches)
            per["oracle"] = (orc.hits(topic), 0.0)
            results.append((topic, per))
            report_topic(topic, per)
    finally:
        server.terminate()
        server.wait(10)
        dead.close()
    return results


def report_topic(topic: docbed.Topic, per: dict[str, tuple[list[int], float]]) -> None:
    for name, (hits, cpu) in per.items():
        cells = " ".join(f"{harvest(hits, n):6.3f}" for n in CHECKPOINTS)
        cpu_ms = f"{cpu / max(1, len(hits)) * 1000:11.2f}" if name != "oracle" else " " * 11
        wall = WALL.get((topic.name, name))
        took = f"{wall:7.1f}" if wall is not None else " " * 7
        copies = COPIES.get((topic.name, name))
        dup = f"{copies:7d}" if copies is not None else ""
        gone = MISSING.get((topic.name, name))
        dup += f"{gone:8d}" if gone is not None else ""
        print(f"{topic.half:8} {topic.name:18} {name:8} {cells} {cpu_ms} {took} {dup}", flush=True)


Results = list[tuple[docbed.Topic, dict[str, tuple[list[int], float]]]]


def ratio(a: float, b: float) -> float:
    """a / b; inf when b found nothing and a did (printed as "inf")."""
    return a / b if b else (math.inf if a else 1.0)


def summary(label: str, results: Results) -> None:
    if not results:
        return
    n = len(results)

    def mean(strategy: str, at: int) -> float:
        return sum(harvest(per[strategy][0], at) for _, per in results) / n

    print(f"\n{label}: mean harvest over {n} topics")
    for name in (*STRATEGIES, "oracle"):
        cells = " ".join(f"{mean(name, at):6.3f}" for at in CHECKPOINTS)
        print(f"  {name:8} {cells}")
    foc, orc, bfs, kw = (mean(s, 300) for s in ("focused", "oracle", "bfs", "keyword"))
    worst = min(
        (ratio(harvest(per["focused"][0], 300), harvest(per["bfs"][0], 300)), t.name)
        for t, per in results
    )
    cpu = {
        s: sum(per[s][1] for _, per in results) / sum(len(per[s][0]) for _, per in results)
        for s in STRATEGIES
    }
    print(
        f"  at 300: focused/oracle {foc / max(orc, 1e-9):.2f} (target >= 0.6), "
        f"focused/bfs {ratio(foc, bfs):.1f}x (worst topic {worst[1]}: {worst[0]:.1f}x; "
        f"target >= 3x each), focused/keyword {foc / max(kw, 1e-9):.2f}; CPU per page "
        f"focused vs bfs {cpu['focused'] / cpu['bfs'] - 1:+.0%} (target <= +25 %), "
        f"bfs {cpu['bfs'] * 1000:.2f} ms, focused {cpu['focused'] * 1000:.2f} ms"
    )


def plot(results: list[tuple[docbed.Topic, dict[str, tuple[list[int], float]]]]) -> None:
    OUT.mkdir(exist_ok=True)
    names = (*STRATEGIES, "oracle")
    with (OUT / "focus.csv").open("w") as fh:
        fh.write("half,topic,fetches," + ",".join(names) + "\n")
        for t, per in results:
            for i in range(10, max(len(per[s][0]) for s in names) + 1, 10):
                row = ",".join(str(sum(per[s][0][:i])) for s in names)
                fh.write(f"{t.half},{t.name},{i},{row}\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"curves: {OUT / 'focus.csv'} (matplotlib not installed: no PNG)")
        return
    halves = list(dict.fromkeys(t.half for t, _ in results))  # each bed its own panel
    fig, axes = plt.subplots(1, len(halves), figsize=(6 * len(halves), 4.5), squeeze=False)
    for ax, half in zip(axes[0], halves, strict=True):
        chosen = [per for t, per in results if t.half == half]
        n = min(len(per[s][0]) for per in chosen for s in names)
        xs = list(range(10, n + 1, 10))
        for s in names:
            ys = [sum(sum(per[s][0][:x]) for per in chosen) / len(chosen) / x for x in xs]
            ax.plot(xs, ys, label=s, linestyle=":" if s == "oracle" else "-")
        ax.set_xscale("log")
        ax.set_xlabel("pages fetched")
        ax.set_ylabel("harvest (relevant / fetched), mean over topics")
        ax.set_title(f"{half} topics ({len(chosen)}), real documentation bed")
        ax.legend()
    fig.tight_layout()
    fig.savefig(OUT / "focus.png", dpi=100)
    print(f"curves: {OUT / 'focus.png'}, {OUT / 'focus.csv'}")


def save(path: Path, results: Results) -> None:
    """The runs' hits and CPU, to merge several runs (each under a few minutes) later."""
    rows = [
        {"topic": t.name, "per": {k: [hits, cpu] for k, (hits, cpu) in per.items()},
         "wall": {k: WALL.get((t.name, k)) for k in per},
         "copies": {k: COPIES.get((t.name, k)) for k in per},
         "missing": {k: MISSING.get((t.name, k)) for k in per}}
        for t, per in results
    ]  # fmt: skip
    old = json.loads(path.read_text()) if path.exists() else []
    done = {r["topic"] for r in rows}
    path.write_text(json.dumps([r for r in old if r["topic"] not in done] + rows))


def load_saved(paths: list[Path]) -> Results:
    by_name = {t.name: t for t in docbed.TOPICS}
    results: Results = []
    for path in paths:
        for r in json.loads(path.read_text()):
            topic = by_name[r["topic"]]
            per = {k: (list(v[0]), float(v[1])) for k, v in r["per"].items()}
            for k, w in r.get("wall", {}).items():
                if w is not None:
                    WALL[(topic.name, k)] = w
            for k, n in r.get("copies", {}).items():
                if n is not None:
                    COPIES[(topic.name, k)] = n
            for k, n in r.get("missing", {}).items():
                if n is not None:
                    MISSING[(topic.name, k)] = n
            results.append((topic, per))
    return results


def report(results: Results) -> None:
    halves: dict[str, Results] = {}
    for t, per in results:
        report_topic(t, per)
        halves.setdefault(t.half, []).append((t, per))
    for half, res in halves.items():
        sites = sorted({s for t, _ in res for s in t.rules})
        summary(f"{half} ({', '.join(sites)})", res)
    plot(results)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("--bed", default="tune,second")
    ap.add_argument("--topics", default="")
    ap.add_argument("--fetches", type=int, default=1000)
    ap.add_argument("--delay", type=float, default=0.02)
    ap.add_argument("--defer-ratio", type=float, default=None, help="(default: the crawler's)")
    ap.add_argument("--strategies", default=",".join(STRATEGIES), help="a subset: no summary")
    ap.add_argument("--closed", action="store_true", help="scope: the bed's hosts only")
    ap.add_argument("--frontier", help="a shared frontier (redis://...) instead of SQLite")
    ap.add_argument("--save", type=Path, help="add these topics' runs to a JSON file")
    ap.add_argument("--report", type=Path, nargs="+", help="merge saved runs: tables, PNG")
    args = ap.parse_args()
    if args.report:
        report(load_saved(args.report))
        return 0
    beds = args.bed.split(",")
    gone = sorted({p for b in beds for p in docbed.missing(b)})
    if gone:
        print(f"bed incomplete: apt-get install {' '.join(gone)}", file=sys.stderr)
        return 2
    wanted = set(args.topics.split(",")) - {""}
    t0 = time.perf_counter()
    print(f"{'half':8} {'topic':18} {'strategy':8} {'@100':>6} {'@300':>6} {'@1000':>6} "
          f"{'CPU ms/page':>11} {'wall s':>7} {'copies':>7} {'missing':>7}")  # fmt: skip
    all_results = []
    for bed in beds:
        strategies = tuple(args.strategies.split(","))
        res = run_bed(
            bed,
            wanted,
            args.fetches,
            args.delay,
            args.defer_ratio,
            strategies,
            args.closed,
            args.frontier,
        )
        if args.save:
            save(args.save, res)
        if strategies != STRATEGIES:
            continue
        summary(f"{bed} ({', '.join(docbed.BEDS[bed])})", res)
        all_results += res
    if all_results:
        plot(all_results)
    print(f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
