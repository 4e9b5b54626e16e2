"""A user's relevance function is called on every stored page and steers the crawl."""

from __future__ import annotations

import json
from pathlib import Path

import nuggets
from topicweb import TopicWeb

from politecrawl import CrawlConfig, Crawler, FetchConfig, PolitenessConfig
from politecrawl.errors import ConfigError
from politecrawl.focus import Focus

UA = "testbot/1.0 (+http://bot.example/info)"


async def _crawl(web: TopicWeb, out: Path, strategy: str, fetches: int) -> list[str]:
    cfg = CrawlConfig(
        seeds=tuple(web.seed_urls(20)),
        out_dir=out,
        fetch=FetchConfig(
            user_agent=UA, resolve=(web.resolve_arg(),), allow_private_addresses=True
        ),
        politeness=PolitenessConfig(
            min_delay_s=0.02,
            jitter_s=0.0,
            response_time_factor=0.0,
            ip_min_delay_s=None,  # the test web's names on 127.0.0.1 stand for many servers
        ),
        concurrency=20,
        scope="any",
        progress=False,
        max_pages=fetches,
        strategy=strategy,  # type: ignore[arg-type]
        relevance="nuggets:railway_pages",
    )
    await Crawler(cfg).run()
    lines = (out / "pages.jsonl").read_text().splitlines()
    return [json.loads(x)["url"] for x in lines]


async def test_relevance_callable_is_called_and_steers(tmp_path: Path) -> None:
    async with TopicWeb(n_hosts=600, pages_per_host=8, seed=5) as web:
        relevant = web.relevant
        nuggets.CALLS.clear()
        focused = await _crawl(web, tmp_path / "focused", "focused", 700)
        assert len(nuggets.CALLS) == len(focused) > 0  # called once per stored page
        bfs = await _crawl(web, tmp_path / "bfs", "bfs", 700)
    found_f = sum(u in relevant for u in focused)
    found_b = sum(u in relevant for u in bfs)
    assert found_f >= 2 * max(found_b, 1), (found_f, found_b)
    pages = [json.loads(x) for x in (tmp_path / "focused" / "pages.jsonl").read_text().splitlines()]
    assert all(p["relevance"] is not None and p["charset"] for p in pages)
    assert (tmp_path / "focused" / "focus.json").exists()  # what it learned is kept


def test_focused_needs_a_nugget_and_a_bad_spec_is_one_clear_error() -> None:
    import pytest

    with pytest.raises(ConfigError, match="needs --topic or --relevance"):
        Focus.from_options("focused", None, None)
    with pytest.raises(ConfigError, match="cannot import"):
        Focus.from_options(None, None, "no_such_module_xyz:f")
    assert Focus.from_options(None, "steam trains", None).strategy == "focused"
    assert Focus.from_options(None, None, None).strategy == "bfs"
