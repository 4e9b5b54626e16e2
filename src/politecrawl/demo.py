"""``politecrawl demo``: crawl the bundled local test web and check ourselves against it.

The test web's own access log is the judge: the demo reports how many politeness violations
(two requests to one host at once, or closer than the delay) it saw, which must be zero.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from politecrawl.cli import DEMO_UA
from politecrawl.config import CrawlConfig, FetchConfig, PolitenessConfig
from politecrawl.crawler import Crawler
from politecrawl.testweb import TestWeb, politeness_violations


async def run_demo(out: Path, hosts: int, pages: int, min_delay_s: float) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    async with TestWeb(
        n_hosts=hosts,
        pages_per_host=pages,
        seed=7,
        access_log_path=str(out / "testweb-access.jsonl"),
    ) as web:
        cfg = CrawlConfig(
            seeds=tuple(web.seed_urls(min(hosts, 5))),
            out_dir=out,
            fetch=FetchConfig(
                user_agent=DEMO_UA,
                resolve=(web.resolve_arg(),),
                allow_private_addresses=True,
                retry_base_s=0.5,
            ),
            # the test web is one server: one request at a time, no extra gap
            politeness=PolitenessConfig(
                min_delay_s=min_delay_s, jitter_s=0.05, park_s=2.0, ip_min_delay_s=0.0
            ),
            scope="any",
            exclude_check_s=1.0,
            robots_ttl_s=3600.0,
        )
        summary = (await Crawler(cfg).run()).to_json()
        problems = politeness_violations(web.access_log, min_delay_s)
    print(
        f"test web: {hosts} hosts x {pages} pages on 127.0.0.1:{web.port}; "
        f"server saw {len(web.access_log)} requests, "
        f"{len(problems)} politeness violations"
    )
    for p in problems[:10]:
        print(f"  violation: {p}")
    return summary
