"""The robots gate alone: a real SQLite frontier and robots cache, the rest of the crawl absent."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from politecrawl.engine.losses import Losses
from politecrawl.frontier import UrlEntry
from politecrawl.frontier.sqlite import SqliteFrontier
from politecrawl.polite.usage import Purpose, UsageBook
from politecrawl.robots.cache import RobotsCache
from politecrawl.robots.gate import Held, next_url

pytestmark = pytest.mark.unit

ROBOTS_GIVE_UP = 3
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
    retry = 4.0  # --retry-base
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
        usage=UsageBook(Purpose.SEARCH, "testbot"),
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


async def test_an_unreachable_origin_holds_back_its_own_urls_only(tmp_path: Path) -> None:
    other = "http://a.test:8080"  # same host, same key, another origin (RFC 9309 2.3)
    ctx, frontier = await gate(tmp_path, [ORIGIN + "/a", other + "/b"], now=1.0)
    await ctx.robots.record(ORIGIN, 503, b"", 0.0)
    await ctx.robots.record(other, 200, b"", 0.0)
    host = await frontier.store.host(KEY)
    entry = await next_url(ctx, KEY, host)
    assert isinstance(entry, UrlEntry) and entry.url == other + "/b"  # the other origin goes on
    assert host.next_allowed == 0.0  # the key is not held: politeness alone times it
    # the dead origin's URL waits for the next ask: --retry-base (4 s) after the first failure
    assert (await frontier.store.stats())["queued"] == 1
    assert await frontier.pop_url(KEY, 3.9) is None
    for n in range(2, ROBOTS_GIVE_UP + 1):  # 503: --max-attempts (3) asks
        await ctx.robots.record(ORIGIN, 503, b"", float(n))
    await ctx.robots.rules_for(ORIGIN, float(ROBOTS_GIVE_UP))
    assert await next_url(ctx, KEY, host) == Held(made_request=False)
    assert ctx.counters["robots_unavailable"] == 0  # not due yet: nothing popped, nothing lost
    ctx.clock = lambda: 5.0  # the URL is due (4 s), the third failure still fresh (16 s)
    await ctx.robots.rules_for(ORIGIN, float(ROBOTS_GIVE_UP))
    assert await next_url(ctx, KEY, host) == Held(made_request=False)
    assert ctx.counters["robots_unavailable"] == 1  # given up after the third failure
    await frontier.store.close()


async def test_an_unfetchable_origin_drops_its_own_urls_only(tmp_path: Path) -> None:
    # one key for two hosts (--politeness-key domain or ip): a refused address is the host's
    other = "http://b.a.test"
    ctx, frontier = await gate(tmp_path, [ORIGIN + "/a", other + "/b", ORIGIN + "/c"], now=1.0)
    await ctx.robots.record(other, 200, b"", 0.0)
    ctx.robots.mark_unfetchable(ORIGIN, "address_refused")
    host = await frontier.store.host(KEY)
    entry = await next_url(ctx, KEY, host)
    assert isinstance(entry, UrlEntry) and entry.url == other + "/b"
    assert ctx.counters["address_refused"] == 1
    assert await next_url(ctx, KEY, host) == Held(made_request=False)
    assert ctx.counters["address_refused"] == 2
    assert (await frontier.store.stats())["queued"] == 0
    await frontier.store.close()
