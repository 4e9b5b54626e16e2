"""What a robots.txt fetch means over time (RFC 9309 2.3.1, 2.4), with a real SQLite store."""

from __future__ import annotations

from pathlib import Path

import pytest

from politecrawl.frontier.sqlitestore import SqliteStore
from politecrawl.robots.cache import LAST_GOOD_AFTER_S, RobotsCache

pytestmark = pytest.mark.unit

ORIGIN = "http://a.test"
BODY = b"User-agent: *\nDisallow: /private/\n"


def cache(tmp_path: Path) -> RobotsCache:
    return RobotsCache(SqliteStore(tmp_path / "s.sqlite"), ttl_s=86400, retry_s=60)


async def test_fresh_for_ttl_then_refetch(tmp_path: Path) -> None:
    c = cache(tmp_path)
    assert await c.rules_for(ORIGIN, 0.0) is None
    await c.record(ORIGIN, 200, BODY, now=0.0)
    rules = await c.rules_for(ORIGIN, 86399.0)
    assert rules is not None and not rules.is_allowed("bot", "/private/x")
    c.used(ORIGIN)  # a page was asked under it
    assert await c.rules_for(ORIGIN, 86400.0) is None


async def test_a_copy_no_page_was_asked_under_stays_in_force(tmp_path: Path) -> None:
    """Fetched for the site's next page, a copy stays in force until that page is asked,
    however long the site's delay: else, with a delay past the TTL, every turn asks
    robots.txt again and no page ever goes."""
    c = cache(tmp_path)
    await c.record(ORIGIN, 200, BODY, now=0.0)
    assert await c.rules_for(ORIGIN, 5 * 86400.0) is not None
    c.used(ORIGIN)
    assert await c.rules_for(ORIGIN, 5 * 86400.0) is None
    await c.record("http://b.test", 503, b"", now=0.0)  # a failure: only until its retry
    assert await c.rules_for("http://b.test", 60.0) is None


async def test_4xx_allows_all_5xx_disallows_and_backs_off(tmp_path: Path) -> None:
    c = cache(tmp_path)
    await c.record(ORIGIN, 404, b"", now=0.0)
    r = await c.rules_for(ORIGIN, 1.0)
    assert r is not None and r.is_allowed("bot", "/private/x")
    await c.record("http://b.test", 503, b"", now=0.0)
    r = await c.rules_for("http://b.test", 1.0)
    assert r is not None and not r.is_allowed("bot", "/")
    assert await c.rules_for("http://b.test", 60.0) is None  # ask again after the retry interval
    await c.record("http://b.test", 503, b"", now=60.0)
    assert await c.rules_for("http://b.test", 150.0) is not None  # backoff doubled: 120 s
    assert await c.rules_for("http://b.test", 181.0) is None


async def test_unreachable_for_30_days_uses_last_good_copy(tmp_path: Path) -> None:
    c = cache(tmp_path)
    await c.record(ORIGIN, 200, BODY, now=0.0)
    await c.record(ORIGIN, 500, b"", now=100.0)
    r = await c.rules_for(ORIGIN, 101.0)
    assert r is not None and not r.is_allowed("bot", "/public")  # complete disallow at first
    rules = await c.record(ORIGIN, 500, b"", now=100.0 + LAST_GOOD_AFTER_S)
    assert rules.is_allowed("bot", "/public") and not rules.is_allowed("bot", "/private/x")


async def test_persisted_for_a_resumed_crawl(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite")
    await RobotsCache(store, 86400, 60).record(ORIGIN, 200, BODY, now=0.0)
    await store.close()
    again = RobotsCache(SqliteStore(tmp_path / "s.sqlite"), 86400, 60)
    r = await again.rules_for(ORIGIN, 10.0)
    assert r is not None and not r.is_allowed("bot", "/private/")


async def test_failures_and_redirect_chains_are_shared_through_the_store(tmp_path: Path) -> None:
    """Two caches on one store (two workers, or a crawl and its resumption) decide alike."""
    store = SqliteStore(tmp_path / "s.sqlite")
    a, b = RobotsCache(store, 86400, 60), RobotsCache(store, 86400, 60)
    await a.record(ORIGIN, 503, b"", now=0.0)
    assert await b.rules_for(ORIGIN, 1.0) is not None and b.unreachable_count(ORIGIN) == 1
    await b.record(ORIGIN, 503, b"", now=60.0)
    assert await a.rules_for(ORIGIN, 150.0) is not None  # a read the store: 2 failures, 120 s
    assert a.unreachable_count(ORIGIN) == 2 and a.retry_at(ORIGIN) == 180.0
    assert await a.rules_for(ORIGIN, 180.0) is None

    # a redirect chain started by one worker is continued by the other
    await a.record_redirect(ORIGIN, ORIGIN + "/robots-moved.txt", 1, now=180.0)
    assert await b.rules_for(ORIGIN, 181.0) is None
    assert b.pending_redirect(ORIGIN) == (ORIGIN + "/robots-moved.txt", 1)
    assert b.unreachable_count(ORIGIN) == 2  # kept while the chain is under way
    await b.record(ORIGIN, 200, BODY, now=182.0)
    rules = await a.rules_for(ORIGIN, 183.0)
    assert rules is not None and not rules.is_allowed("bot", "/private/x")
    assert a.pending_redirect(ORIGIN) is None and a.unreachable_count(ORIGIN) == 0
    await store.close()


async def test_state_file_from_before_the_new_robots_columns(tmp_path: Path) -> None:
    import sqlite3

    db = sqlite3.connect(tmp_path / "s.sqlite")
    db.execute(
        "CREATE TABLE robots(origin TEXT PRIMARY KEY, fetched_at REAL NOT NULL, status INT NOT "
        "NULL, body BLOB NOT NULL, failing_since REAL NOT NULL DEFAULT 0, good_body BLOB) "
        "WITHOUT ROWID"
    )
    db.execute("INSERT INTO robots VALUES (?,?,?,?,?,?)", (ORIGIN, 5.0, 200, BODY, 0.0, None))
    db.commit()
    db.close()
    c = cache(tmp_path)
    rules = await c.rules_for(ORIGIN, 10.0)
    assert rules is not None and not rules.is_allowed("bot", "/private/x")
    await c.record(ORIGIN, 500, b"", now=86405.0)
    assert c.unreachable_count(ORIGIN) == 1
