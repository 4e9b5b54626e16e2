"""Memory against queued URLs: the embedded frontier keeps URLs on disk, not in RAM.

    python bench/memory.py [--max 10000000] [--keys 100000]

Queues synthetic URLs spread over ``--keys`` politeness keys into a real SqliteFrontier
(Bloom seen-set sized for ``--max`` at 1 %), printing RSS at each step, and the Bloom
filter's bytes per seen URL. Baseline in the same run: the RSS of the same URLs held in a
plain Python set, measured up to 1 million and extrapolated (what an in-memory frontier
would need). Targets: < 1 GiB RSS at 10 million queued; <= 2 bytes per seen URL.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import shutil
import tempfile
import time
from pathlib import Path

from politecrawl.frontier import UrlEntry
from politecrawl.frontier.sqlite import SqliteFrontier


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def url(i: int, keys: int) -> tuple[str, str]:
    host = f"h{i % keys}.example"
    return f"http://{host}/section/{i // keys % 97}/article-{i}.html?ref=feed", host


async def frontier_run(n: int, keys: int, batch: int, steps: list[int]) -> None:
    d = Path(tempfile.mkdtemp(prefix="pc-mem-"))
    try:
        f = SqliteFrontier.open(
            d / "state.sqlite", seen_mode="bloom", expected_urls=n, seen_fp_rate=0.01
        )
        base = rss_mib()
        print(f"frontier start RSS {base:.0f} MiB")
        t0 = time.perf_counter()
        i = 0
        for target in steps:
            while i < target:
                entries = []
                for j in range(i, min(i + batch, target)):
                    u, h = url(j, keys)
                    entries.append(UrlEntry(u, h, depth=1, priority=-1.0))
                await f.add(entries)
                i += len(entries)
                if i % (batch * 50) == 0:
                    await f.store.flush()
            await f.store.flush()
            gc.collect()
            stats = await f.store.stats()
            print(
                f"queued {stats['queued']:>10,}  RSS {rss_mib():7.0f} MiB  "
                f"(+{rss_mib() - base:.0f})  {i / (time.perf_counter() - t0):,.0f} URLs/s"
            )
        stats = await f.store.stats()
        print(
            f"bloom seen-set: {stats['seen_bytes']:,} bytes for {stats['seen']:,} URLs = "
            f"{stats['seen_bytes'] / stats['seen']:.2f} bytes per seen URL (1% fp)"
        )
        key = (await f.lease(time.time())).key
        got = await f.pop_url(key, time.time()) if key else None
        print(f"lease after {n:,}: key {key} url {got.url if got else None}")
        await f.store.close()
        print(f"state on disk: {(d / 'state.sqlite').stat().st_size / 2**20:.0f} MiB")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def baseline(n: int, keys: int) -> float:
    gc.collect()
    before = rss_mib()
    s = {url(i, keys)[0] for i in range(n)}
    after = rss_mib()
    del s
    return (after - before) * 2**20 / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max", type=int, default=10_000_000)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=2000)
    args = ap.parse_args()
    per_url = baseline(min(args.max, 1_000_000), args.keys)
    print(
        f"baseline: a Python set of the URLs costs {per_url:.0f} bytes/URL -> "
        f"{per_url * args.max / 2**30:.2f} GiB at {args.max:,} (extrapolated)"
    )
    steps = sorted({s for s in (100_000, 1_000_000, 3_000_000, args.max) if s <= args.max})
    asyncio.run(frontier_run(args.max, args.keys, args.batch, steps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
