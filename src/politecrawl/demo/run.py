"""``politecrawl demo``: crawl the bundled local test web and check ourselves against it.

The test web's own access log is the judge: the demo reports how many politeness violations
(two requests to one host at once, or closer than the delay) it saw, which must be zero.

The test web runs in a process of its own (``python -m politecrawl.demo.web``), so its clock
and event loop are not the crawler's: a server sharing the crawler's loop starts a handler
late when the loop is busy, and then sees a gap shorter than the crawler really left (2
"violations" in 6 runs on a loaded machine, each fine in the crawler's own log).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
from pathlib import Path
from typing import Any

from politecrawl.config import DEMO_UA, CrawlConfig, FetchConfig, PolitenessConfig
from politecrawl.demo.accesslog import load_access_log, politeness_violations
from politecrawl.demo.web import TestWeb
from politecrawl.engine.crawler import Crawler
from politecrawl.errors import PolitecrawlError
from politecrawl.options import write_config

_SEED = 7


async def _start_web(hosts: int, pages: int, log_path: Path) -> tuple[Any, int]:
    """The test web in its own process; (process, port) once it serves."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "politecrawl.demo.web", "--hosts", str(hosts), "--pages",
        str(pages), "--seed", str(_SEED), "--access-log", str(log_path),
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
    except TimeoutError:
        line = b""
    m = re.search(rb"127\.0\.0\.1:(\d+)", line)
    if m is None:
        proc.kill()
        await proc.wait()
        raise PolitecrawlError("the demo's test web did not start")
    return proc, int(m.group(1))


async def run_demo(out: Path, hosts: int, pages: int, min_delay_s: float) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "testweb-access.jsonl"
    proc, port = await _start_web(hosts, pages, log_path)
    try:
        web = TestWeb(n_hosts=hosts, pages_per_host=pages, seed=_SEED, port=port)  # addresses
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
        crawler = Crawler(cfg)
        write_config(cfg)  # as `crawl` does: the settings are part of the output
        summary = (await crawler.run()).to_json()
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        await proc.wait()
    seen = load_access_log(str(log_path))
    problems = politeness_violations(seen, min_delay_s)
    print(
        f"test web: {hosts} hosts x {pages} pages on 127.0.0.1:{port} (its own process); "
        f"server saw {len(seen)} requests, {len(problems)} politeness violations"
    )
    for p in problems[:10]:
        print(f"  violation: {p}")
    return summary
