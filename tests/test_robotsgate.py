"""The robots gate alone: a real SQLite frontier and robots cache, the rest of the crawl absent."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from politecrawl.config import PolitenessConfig
from politecrawl.engine.losses import Losses
from politecrawl.frontier import UrlEntry
from politecrawl.frontier.sqlite import SqliteFrontier
from politecrawl.polite import politeness
from politecrawl.robots.cache import RobotsCache
from politecrawl.robots.gate import ROBOTS_GIVE_UP, Held, next_url

ORIGIN = "http://a.test"
KEY = "a.test"


class _Never:
    def maybe_reload(self, now: float) -> bool:
        return False

    def excludes(self, host: str) -> bool:
        return host == "excluded.test"


async def gate(tmp_path: Path, urls: list[str], now: float) -> tuple[Any, SqliteFrontier]:
    frontier = SqliteFrontier.open(tmp_path / "state.sqlite")
    await frontier.add([UrlEntry(u, KEY) for u in urls])
    retry = politeness.robots_retry_base_s(PolitenessConfig(min_delay_s=1.0))
    ctx = SimpleNamespace(
        clock=lambda: now,
        never=_Never(),
        counters=Counter(),
        frontier=frontier,
        continuity=SimpleNamespace(rewrite=lambda url: url),
        store=frontier.store,
        robots=RobotsCache(frontier.store, 86400.0, retry),
        token="testbot",
        losses=Losses(),
    )
    assert (await frontier.lease(now)).key == KEY
    return ctx, frontier


async def test_rules_decide_and_a_disallowed_url_is_dropped(tmp_path: Path) -> None:
    ctx, frontier = await gate(tmp_path, [ORIGIN + "/private/x", ORIGIN + "/ok"], now=10.0)
    await ctx.robots.record(ORIGIN, 200, b"User-agent: *\nDisallow: /private/\n", 5.0)
    host = await frontier.store.host(KEY)
    entry = await next_url(ctx, KEY, host)
    assert isinstance(entry, UrlEntry) and entry.url == ORIGIN + "/ok"
    assert ctx.counters == Counter({"robots_disallowed": 1})
    await frontier.store.close()


async def test_an_unreachable_robots_txt_holds_the_key_until_its_retry(tmp_path: Path) -> None:
    ctx, frontier = await gate(tmp_path, [ORIGIN + "/a"], now=1.0)
    await ctx.robots.record(ORIGIN, 503, b"", 0.0)
    host = await frontier.store.host(KEY)
    assert await next_url(ctx, KEY, host) == Held(made_request=False)
    # the wait is politeness's: 4 x the 1 s floor after the first failure
    assert host.next_allowed == 0.0 + politeness.robots_retry_s(4.0, 1) == 4.0
    assert (await frontier.store.stats())["queued"] == 1  # the URL waits at the front of its queue
    for n in range(2, ROBOTS_GIVE_UP + 1):
        await ctx.robots.record(ORIGIN, 503, b"", float(n))
    await ctx.robots.rules_for(ORIGIN, float(ROBOTS_GIVE_UP))
    assert await next_url(ctx, KEY, host) == Held(made_request=False)
    assert ctx.counters["robots_unavailable"] == 1  # given up after the third failure
    await frontier.store.close()
