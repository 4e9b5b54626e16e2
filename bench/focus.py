"""Does focused crawling find what the user wants faster? A real crawl, three strategies.

    python bench/focus.py [--hosts 10000] [--fetches 10000] [--delay 0.05]

The topical test web (tests/topicweb.py: relevant pages clustered, base rate <= 2 %, ground
truth known) is served by a separate process; politecrawl crawls it with ``bfs``, ``random``
and ``focused`` (the keyword nugget function on the topic + the online-learned prioritiser),
with everything on (robots, WARC, logs, politeness). For each: relevant pages found after 1k,
5k and 10k fetches, the best 1k-fetch window's harvest rate against the base rate, and CPU
per page. The harvest-rate curves go to bench/out/focus.png (matplotlib, if installed) and
bench/out/focus.csv. Targets: focused >= 10x bfs at 5k; best 1k window >= 40x the base rate;
learning <= 25 % more CPU per page than bfs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import cpu_s

from politecrawl import CrawlConfig, Crawler, FetchConfig, PolitenessConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test webs
from topicweb import TopicWeb

TOPIC = "steam locomotive, steam railway, heritage railway"
UA = "benchbot/1.0 (+http://bench.example/bot)"
OUT = Path(__file__).with_name("out")


async def crawl(
    strategy: str, port: int, seeds: list[str], fetches: int, delay: float, out: Path
) -> tuple[list[str], float, float]:
    cfg = CrawlConfig(
        seeds=tuple(seeds),
        out_dir=out,
        fetch=FetchConfig(
            user_agent=UA,
            resolve=(f"*.topic:{port}:127.0.0.1",),
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
        concurrency=100,
        scope="any",
        progress=False,
        max_pages=fetches,
        strategy=strategy,  # type: ignore[arg-type]
        topic=TOPIC,
    )
    t0, c0 = time.perf_counter(), cpu_s()
    await Crawler(cfg).run()
    wall, cpu = time.perf_counter() - t0, cpu_s() - c0
    order = []
    with (out / "log" / "requests.jsonl").open() as fh:
        for line in fh:
            r = json.loads(line)
            if not r["url"].endswith("/robots.txt"):
                order.append(r["url"])
    return order, wall, cpu


def best_window(hits: list[int], width: int = 1000) -> float:
    if len(hits) < width:
        return sum(hits) / max(len(hits), 1)
    run = sum(hits[:width])
    best = run
    for i in range(width, len(hits)):
        run += hits[i] - hits[i - width]
        best = max(best, run)
    return best / width


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=10_000)
    ap.add_argument("--pages", type=int, default=10)
    ap.add_argument("--fetches", type=int, default=10_000)
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--seeds", type=int, default=100)
    args = ap.parse_args()
    web = TopicWeb(n_hosts=args.hosts, pages_per_host=args.pages, seed=1)
    base = web.base_rate()
    server = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).resolve().parents[1] / "tests" / "topicweb.py"),
            "--hosts",
            str(args.hosts),
            "--pages",
            str(args.pages),
            "--seed",
            "1",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    web.port = int(server.stdout.readline().strip().rsplit(":", 1)[1])
    port = web.port
    relevant = web.relevant
    seeds = web.seed_urls(args.seeds)
    results = {}
    try:
        for strategy in ("bfs", "random", "focused"):
            out = Path(tempfile.mkdtemp(prefix=f"pc-focus-{strategy}-"))
            try:
                order, wall, cpu = asyncio.run(
                    crawl(strategy, port, seeds, args.fetches, args.delay, out)
                )
            finally:
                shutil.rmtree(out, ignore_errors=True)
            hits = [1 if u in relevant else 0 for u in order]
            results[strategy] = (hits, wall, cpu)
    finally:
        server.terminate()
        server.wait(10)
    print(
        f"topical web: {args.hosts} hosts x {args.pages} pages, {len(relevant)} relevant, "
        f"base rate {base:.2%}; {args.seeds} seeds; topic {TOPIC!r}"
    )
    print(
        f"{'strategy':9} {'@1k':>5} {'@5k':>5} {'@10k':>5} {'best 1k':>8} {'x base':>7} "
        f"{'fetches':>8} {'CPU ms/page':>11}"
    )
    for strategy, (hits, _wall, cpu) in results.items():
        at = [sum(hits[:n]) for n in (1000, 5000, 10000)]
        bw = best_window(hits)
        print(
            f"{strategy:9} {at[0]:>5} {at[1]:>5} {at[2]:>5} {bw:>8.1%} {bw / base:>7.1f} "
            f"{len(hits):>8} {cpu / max(len(hits), 1) * 1000:>11.2f}"
        )
    bfs5 = sum(results["bfs"][0][:5000])
    foc5 = sum(results["focused"][0][:5000])
    cpu_b = results["bfs"][2] / max(len(results["bfs"][0]), 1)
    cpu_f = results["focused"][2] / max(len(results["focused"][0]), 1)
    print(
        f"focused / bfs at 5k: {foc5 / max(bfs5, 1):.1f}x (target >= 10x); "
        f"focused CPU per page vs bfs: {cpu_f / cpu_b - 1:+.0%} (target <= +25%)"
    )
    OUT.mkdir(exist_ok=True)
    with (OUT / "focus.csv").open("w") as fh:
        fh.write("fetches," + ",".join(results) + "\n")
        n = max(len(h) for h, _, _ in results.values())
        for i in range(100, n + 1, 100):
            fh.write(f"{i}," + ",".join(str(sum(h[:i])) for h, _, _ in results.values()) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"curves: {OUT / 'focus.csv'} (install matplotlib for the PNG)")
        return 0
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for strategy, (hits, _, _) in results.items():
        xs = list(range(500, len(hits) + 1, 100))
        ax.plot(xs, [sum(hits[x - 500 : x]) / 500 for x in xs], label=strategy)
    ax.axhline(base, color="grey", linestyle=":", label="base rate")
    ax.set_xlabel("fetches")
    ax.set_ylabel("harvest rate (last 500 fetches)")
    ax.set_title("Relevant pages per fetch on the topical test web")
    ax.legend()
    fig.tight_layout()
    fig.savefig(OUT / "focus.png", dpi=100)
    print(f"curves: {OUT / 'focus.png'}, {OUT / 'focus.csv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
