"""The SQLite frontier's time per page as its queue grows, against its own time when small.

    python bench/frontier_growth.py [--pages 12000] [--hosts 2000] [--links 40] [--every 2000]

No HTTP: the real ``SqliteFrontier`` (seen-set on disk, as by default) is driven as a crawl
drives it. Each simulated page pops a URL of a random host, finishes it, and adds 40 links:
28 never seen (random paths on 2,000 hosts) and 12 already seen (as navigation links repeat);
the store commits every 300 pages, as a crawl at 300 pages/s commits each second. So the
queue grows by 28 URLs a page, to about 340,000 at 12,000 pages.

Printed: milliseconds of frontier work per page in each block of ``--every`` pages, with the
URLs queued, and the ratio of the last block to the first (the baseline, measured in the same
run: the frontier with about 56,000 URLs queued). A frontier whose cost stays flat prints a
ratio near 1.

Measured (2 shared vCPUs, a test suite running beside it), ms per page at about 56,000 and
326,000 URLs queued, the code before and after, one run each, back to back:
- before: 0.76 and 2.85 (ratio 3.7);
- after: 0.40 and 1.23 (ratio 3.1): 2.3 times less at 326,000.
What changed: the recent-URL memory of the seen-set is an OrderedDict (its oldest URL was found
by scanning a dict's holes: 16 % of the time at 300,000 URLs queued, by py-spy); SQLite's page
cache is 64 MiB, not 2; the index of the worst queued URLs is made only for ``--max-queue``.
What grows still is SQLite's own: each link lands at a random page of each B-tree (URL, host
and priority), so a commit writes more distinct pages the bigger the queue.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path

from politecrawl.frontier import UrlEntry
from politecrawl.frontier.sqlite import SqliteFrontier


async def run(pages: int, hosts_n: int, links: int, every: int) -> list[tuple[int, float]]:
    rng = random.Random(1)
    hosts = [f"h{i}.example" for i in range(hosts_n)]

    def new_url() -> UrlEntry:
        h = rng.choice(hosts)
        path = f"/section/{rng.randrange(10**9)}/page-{rng.randrange(10**6)}.html"
        return UrlEntry(url=f"https://{h}{path}", key=h, priority=rng.random())

    with tempfile.TemporaryDirectory(prefix="frontier-growth-") as tmp:
        frontier = SqliteFrontier.open(Path(tmp) / "state.sqlite", seen_mode="disk")
        known: list[UrlEntry] = []
        await frontier.add([new_url() for _ in range(hosts_n)])
        fresh = links * 7 // 10
        blocks: list[tuple[int, float]] = []
        spent = 0.0
        for page in range(1, pages + 1):
            found = [new_url() for _ in range(fresh)]
            found += [rng.choice(known) for _ in range(links - fresh)] if known else []
            key = rng.choice(hosts)
            t0 = time.perf_counter()
            entry = await frontier.pop_url(key, time.time())
            if entry is not None:
                await frontier.finish(entry.url, "ok")
            await frontier.add(found)
            if page % 300 == 0:
                frontier.store.commit()
            spent += time.perf_counter() - t0
            known = (known + found[:5])[-5000:]
            if page % every == 0:
                blocks.append((frontier.queued(), 1000 * spent / every))
                spent = 0.0
        await frontier.store.close()
    return blocks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=12000)
    ap.add_argument("--hosts", type=int, default=2000)
    ap.add_argument("--links", type=int, default=40)
    ap.add_argument("--every", type=int, default=2000)
    a = ap.parse_args()
    blocks = asyncio.run(run(a.pages, a.hosts, a.links, a.every))
    for queued, ms in blocks:
        print(f"queued {queued:9,d}  frontier ms/page {ms:6.3f}")
    print(f"ratio, last block / first: {blocks[-1][1] / blocks[0][1]:.2f}")


if __name__ == "__main__":
    main()
