"""Shared fixtures: the real local test web and configs that point the crawler at it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from politecrawl.config import CrawlConfig, FetchConfig, PolitenessConfig
from politecrawl.demo.web import TestWeb

UA = "testbot/1.0 (+http://bot.example/info)"
DELAY = 0.15
# The in-process test web shares the crawler's event loop: a busy loop starts a server handler
# late, which shrinks the next gap as the server sees it; the crawler's own spacing is exact.
LOOP_LAG_S = 0.04


def crawl_config(
    web: TestWeb,
    out: Path,
    *,
    seeds: int | None = None,
    delay: float = DELAY,
    fetch: dict[str, Any] | None = None,
    **kw: Any,
) -> CrawlConfig:
    fetch_kw: dict[str, Any] = {
        "user_agent": UA,
        "resolve": (web.resolve_arg(),),
        "allow_private_addresses": True,
        "retry_base_s": 0.2,
    }
    fetch_kw.update(fetch or {})
    kw.setdefault("scope", "any")
    kw.setdefault("progress", False)
    return CrawlConfig(
        seeds=tuple(web.seed_urls(seeds)),
        out_dir=out,
        fetch=FetchConfig(**fetch_kw),
        politeness=PolitenessConfig(
            min_delay_s=delay,
            jitter_s=0.02,
            response_time_factor=kw.pop("factor", 30.0),
            park_s=0.5,
            ip_min_delay_s=None,  # the test web's names on 127.0.0.1 stand for many servers
        ),
        **kw,
    )


@pytest.fixture
async def web(tmp_path: Path):
    async with TestWeb(
        n_hosts=14, pages_per_host=8, seed=3, access_log_path=str(tmp_path / "access.jsonl")
    ) as w:
        yield w
