"""One contract for every frontier backend: the promises of ``politecrawl.frontier``.

Each test runs against SqliteFrontier (a file under tmp_path) and RedisFrontier (a real
redis-server, a fresh crawl id per test; exact and Bloom seen-sets; and a one-node Cluster
that refuses any script touching two hash slots). "Reopen" means a new
object on the same store: the same file, or the same crawl id. Times are fake (``T0``...) and
the Redis heartbeat is off, so leases expire only when a test says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from redis_server import redis_cluster, redis_cluster_url, redis_url  # noqa: F401  (fixtures)

from politecrawl.frontier import (
    SITEMAP,
    CrawlStore,
    Frontier,
    QueueUpkeep,
    RobotsRecord,
    UrlEntry,
)
from politecrawl.frontier import redis as redis_frontier
from politecrawl.frontier.redis import LeaseLost, RedisFrontier, RedisStore, status
from politecrawl.frontier.redis import store as redis_store
from politecrawl.frontier.sqlite import SqliteFrontier
from politecrawl.frontier.sqlitestore import SqliteStore
from politecrawl.polite.politeness import HostState

T0 = 1000.0
Opener = Callable[..., Awaitable[Any]]


@pytest.fixture(params=["sqlite", "sqlite-exact", "redis", "redis-bloom", "redis-cluster"])
async def open_frontier(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Opener]:
    """An opener of frontier objects on ONE store, for every backend."""
    async for opener in _openers(request.param, request, tmp_path, monkeypatch):
        yield opener


@pytest.fixture(params=["redis", "redis-bloom", "redis-cluster"])
async def open_shared(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Opener]:
    """The same for the shared backends only: promises between workers."""
    async for opener in _openers(request.param, request, tmp_path, monkeypatch):
        yield opener


async def _openers(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Opener]:
    """Every object opened is closed at the end."""
    opened: list[Any] = []
    crawl_id = f"t-{uuid.uuid4().hex[:12]}"
    url = ""
    if kind == "redis-cluster":
        # cluster mode + a #!lua header: Redis refuses a script touching two slots
        url = request.getfixturevalue("redis_cluster_url")
        monkeypatch.setattr(redis_store, "LIB", "#!lua\n" + redis_store.LIB)
    elif kind.startswith("redis"):
        url = request.getfixturevalue("redis_url")

    async def opener(**kw: Any) -> Any:
        if kind.startswith("sqlite"):  # the seen-set in the store (default), or in memory
            seen = "exact" if kind == "sqlite-exact" else "disk"
            f: Any = SqliteFrontier.open(tmp_path / "state.sqlite", seen_mode=seen, **kw)
        else:
            kw.setdefault("lease_ttl_s", 60.0)
            kw.setdefault("reclaim_delay_s", 1.0)
            f = RedisFrontier.open(
                url,
                crawl_id,
                heartbeat=False,
                seen_mode="bloom" if kind == "redis-bloom" else "exact",
                expected_urls=10_000,
                **kw,
            )
        opened.append(f)
        return f

    opener.kind = kind  # type: ignore[attr-defined]
    yield opener
    for f in opened:
        with contextlib.suppress(Exception):  # already closed by the test
            await f.store.close()


def e(url: str, key: str = "a.test", prio: float = 0.0, **kw: Any) -> UrlEntry:
    return UrlEntry(f"http://{key}/{url}", key, priority=prio, **kw)


async def drain(f: Frontier, key: str, now: float) -> list[str]:
    """Pop (and finish) everything a leased key has due at ``now``."""
    out = []
    while (entry := await f.pop_url(key, now)) is not None:
        out.append(entry.url.rsplit("/", 1)[1])
        await f.finish(entry.url, "stored")
    return out


def state(key: str, next_allowed: float, last_start: float = 0.0) -> HostState:
    return HostState(key=key, last_start=last_start, next_allowed=next_allowed)


def _methods(protocol: type) -> set[str]:
    return {n for n, v in vars(protocol).items() if not n.startswith("_") and callable(v)}


@pytest.mark.unit
def test_every_backend_has_every_protocol_method() -> None:
    """The turn's protocol stays narrow; the rest of the state is the store's."""
    assert len(_methods(Frontier)) <= 8, sorted(_methods(Frontier))
    assert not _methods(Frontier) & _methods(CrawlStore)
    for cls in (SqliteFrontier, RedisFrontier):
        wanted = _methods(Frontier) | _methods(QueueUpkeep)
        assert {n for n in wanted if not callable(getattr(cls, n, None))} == set(), cls
    for store in (SqliteStore, RedisStore):
        missing = {n for n in _methods(CrawlStore) if not callable(getattr(store, n, None))}
        assert missing == set(), store


async def lease(f: Frontier, now: float) -> str | None:
    """The key ``f`` leases at ``now`` (None: none due)."""
    return (await f.lease(now)).key


async def wake(f: Frontier, now: float) -> float | None:
    """When ``f`` says to ask again, leasing nothing at ``now``."""
    got = await f.lease(now)
    assert got.host is None, got
    return got.wake


# -- the seen-set --------------------------------------------------------------------------


@pytest.mark.e2e
async def test_add_dedupes_and_remembers(open_frontier: Opener) -> None:
    f = await open_frontier()
    assert await f.add([e("1"), e("2"), e("1")]) == [True, True, False]
    assert await f.add([e("2"), e("3")]) == [False, True]
    assert await f.store.unseen(["http://a.test/1", "http://a.test/9"]) == ["http://a.test/9"]
    await f.store.mark_seen(["http://a.test/9"])
    assert await f.store.unseen(["http://a.test/9", "http://b.test/x"]) == ["http://b.test/x"]
    assert await f.add([e("9")]) == [False]
    st = await f.store.stats()
    assert st["queued"] == 3 and st["seen"] == 4
    assert set(st) == {
        "queued",
        "hosts_waiting",
        "ready",
        "parked",
        "in_flight",
        "waiting_for_ip",
        "seen",
        "seen_bytes",
    }


@pytest.mark.e2e
async def test_finished_urls_stay_seen(open_frontier: Opener) -> None:
    f = await open_frontier()
    await f.add([e("1")])
    assert await lease(f, T0) == "a.test"
    assert await drain(f, "a.test", T0) == ["1"]
    await f.release("a.test", state("a.test", T0))
    assert await f.add([e("1")]) == [False]
    assert (await f.store.stats())["queued"] == 0


# -- order -----------------------------------------------------------------------------------


@pytest.mark.e2e
async def test_priority_order_within_a_key(open_frontier: Opener) -> None:
    f = await open_frontier()
    await f.add([e("low", prio=-2), e("high", prio=5), e("mid", prio=0.5), e("rnd", prio=0.25)])
    assert await lease(f, T0) == "a.test"
    assert await drain(f, "a.test", T0) == ["high", "mid", "rnd", "low"]


@pytest.mark.e2e
async def test_fifo_among_equal_priorities(open_frontier: Opener) -> None:
    f = await open_frontier()
    names = [f"u{i}" for i in range(12)]
    for i in range(0, 12, 3):  # in several batches
        await f.add([e(n, prio=1.0) for n in names[i : i + 3]])
    await f.add([e("first", prio=2.0)])
    assert await lease(f, T0) == "a.test"
    assert await drain(f, "a.test", T0) == ["first", *names]


@pytest.mark.e2e
async def test_key_with_the_best_url_is_leased_first(open_frontier: Opener) -> None:
    f = await open_frontier()
    await f.add([e("x", "a.test", prio=1.0), e("y", "b.test", prio=7.0), e("z", "c.test", 3.0)])
    assert [await lease(f, T0) for _ in range(4)] == ["b.test", "c.test", "a.test", None]


@pytest.mark.e2e
async def test_a_key_due_for_max_wait_goes_before_better_ones(open_frontier: Opener) -> None:
    """Priority rules, but a key kept waiting ``max_wait_s`` by better ones is served next."""
    f = await open_frontier(max_wait_s=20.0)  # (leases held here last 60 s)
    await f.add([e("x", "low.test", prio=0.0), e("y", "hi1.test", prio=5.0)])
    assert await lease(f, T0) == "hi1.test"  # low.test ready since T0
    await f.add([e("z", "hi2.test", prio=5.0), e("v", "mid.test", prio=1.0)])
    assert await lease(f, T0 + 19.9) == "hi2.test"
    await f.add([e("w", "hi3.test", prio=5.0)])
    assert await lease(f, T0 + 20) == "low.test"  # due for 20 s
    assert await lease(f, T0 + 21) == "hi3.test"  # mid.test (ready since T0 + 19.9) can wait
    assert await lease(f, T0 + 21) == "mid.test"
    assert await lease(f, T0 + 30) is None


@pytest.mark.e2e
async def test_reprioritize_reorders_queued_urls(open_frontier: Opener) -> None:
    f = await open_frontier()
    await f.add([e("a1", "a.test", 1.0), e("a2", "a.test", 1.0), e("a3", "a.test", 1.0)])
    await f.add([e("b1", "b.test", 2.0), e("c1", "c.test", 0.0)])
    assert await lease(f, T0) == "b.test"  # a and c are now ready, ranked by their best URLs
    rescored = [("http://a.test/a3", "a.test", 5.0), ("http://c.test/c1", "c.test", 9.0)]
    assert await f.reprioritize([*rescored, ("http://z.test/never", "z.test", 1.0)]) == 2
    popped = await f.pop_url("b.test", T0)
    assert popped is not None
    assert await f.reprioritize([(popped.url, "b.test", 99.0)]) == 0  # in flight: not queued
    assert await lease(f, T0) == "c.test"  # raised above a.test's best
    assert await lease(f, T0) == "a.test"
    assert await drain(f, "a.test", T0) == ["a3", "a1", "a2"]
    await f.release("a.test", state("a.test", T0))


@pytest.mark.e2e
async def test_reprioritized_retry_keeps_its_new_priority(open_frontier: Opener) -> None:
    f = await open_frontier()
    await f.add([e("r", prio=1.0), e("x", prio=2.0), e("y", prio=3.0)])
    assert await lease(f, T0) == "a.test"
    r = await f.pop_url("a.test", T0)
    assert r is not None and r.url.endswith("/y")
    r.not_before = T0 + 5
    await f.push_back(r)  # waiting for not_before
    assert await f.reprioritize([(r.url, "a.test", 0.5)]) == 1
    assert await drain(f, "a.test", T0 + 5) == ["x", "r", "y"]


@pytest.mark.e2e
async def test_trim_drops_the_lowest_priorities(open_frontier: Opener) -> None:
    f = await open_frontier()
    await f.add([e("p1", "a.test", 1.0), e("p4", "a.test", 4.0), e("p2", "b.test", 2.0)])
    await f.add([e("p5", "b.test", 5.0), e("p3", "c.test", 3.0), e("p0", "c.test", 0.0)])
    assert await f.trim(10) == 0
    assert await f.trim(3) == 3
    assert (await f.store.stats())["queued"] == 3
    assert await f.trim(3) == 0
    assert await f.add([e("p0", "c.test"), e("p1", "a.test")]) == [False, False]  # finished
    left = []
    while (key := await lease(f, T0)) is not None:
        left += await drain(f, key, T0)
        await f.release(key, state(key, T0 + 1))
    assert sorted(left) == ["p3", "p4", "p5"]


@pytest.mark.e2e
async def test_sitemap_kind_and_metadata_round_trip(open_frontier: Opener) -> None:
    f = await open_frontier()
    await f.add([e("s.xml", prio=1e9, kind=SITEMAP, depth=2, hops=1)])
    assert await lease(f, T0) == "a.test"
    got = await f.pop_url("a.test", T0)
    assert got == UrlEntry("http://a.test/s.xml", "a.test", 2, 1, 0, 0.0, 1e9, SITEMAP)


# -- leases and the penalty box ----------------------------------------------------------------


@pytest.mark.e2e
async def test_leased_key_is_not_leased_again_until_released(open_frontier: Opener) -> None:
    f = await open_frontier()
    await f.add([e("1"), e("2")])
    assert await lease(f, T0) == "a.test"
    await f.add([e("3", prio=9.0)])  # new URLs for a leased key do not free it
    assert await lease(f, T0) is None
    assert await lease(f, T0 + 30) is None  # (within a Redis lease's 60 s)
    assert (await f.store.stats())["in_flight"] == 1
    await f.release("a.test", state("a.test", T0))
    assert await lease(f, T0) == "a.test"
    assert await drain(f, "a.test", T0) == ["3", "1", "2"]


@pytest.mark.e2e
async def test_next_allowed_is_respected(open_frontier: Opener) -> None:
    f = await open_frontier()
    await f.add([e("1"), e("2")])
    got = await f.lease(T0)
    assert got.key == "a.test" and got.host is not None
    assert await f.pop_url("a.test", T0) is not None
    h = got.host  # as the crawler does: the state the lease gave, updated
    h.last_start, h.next_allowed = T0, T0 + 50.25
    await f.release("a.test", h)
    assert await wake(f, T0 + 50.24) == T0 + 50.25
    assert await lease(f, T0 + 50.25) == "a.test"
    assert (await f.store.host("a.test")).next_allowed == T0 + 50.25


@pytest.mark.e2e
async def test_next_wake_none_when_nothing_left(open_frontier: Opener) -> None:
    f = await open_frontier()
    assert await wake(f, T0) is None
    await f.add([e("1")])
    assert await lease(f, T0) == "a.test"
    await drain(f, "a.test", T0)
    await f.release("a.test", state("a.test", T0 + 5))
    assert await wake(f, T0 + 10) is None


@pytest.mark.e2e
async def test_push_back_front_and_back(open_frontier: Opener) -> None:
    f = await open_frontier()
    await f.add([e("1"), e("2"), e("3")])
    assert await lease(f, T0) == "a.test"
    one = await f.pop_url("a.test", T0)
    assert one is not None
    await f.push_back(one, front=True)  # robots.txt first: the same URL comes next
    assert (await f.store.stats())["queued"] == 3
    again = await f.pop_url("a.test", T0)
    assert again is not None and again.url == one.url
    await f.push_back(again)  # to the back of its priority
    assert await drain(f, "a.test", T0) == ["2", "3", "1"]


@pytest.mark.e2e
async def test_retry_waits_for_not_before(open_frontier: Opener) -> None:
    f = await open_frontier()
    await f.add([e("retry"), e("other")])
    assert await lease(f, T0) == "a.test"
    r = await f.pop_url("a.test", T0)
    assert r is not None and r.url.endswith("retry")
    r.attempt, r.not_before = 1, T0 + 30
    await f.push_back(r)
    assert await drain(f, "a.test", T0 + 1) == ["other"]
    assert await f.pop_url("a.test", T0 + 1) is None
    await f.release("a.test", state("a.test", T0 + 2, last_start=T0 + 1))
    assert await wake(f, T0 + 29) == T0 + 30  # max(next_allowed, not_before)
    assert await lease(f, T0 + 30) == "a.test"
    got = await f.pop_url("a.test", T0 + 30)
    assert got is not None and (got.url, got.attempt, got.not_before) == (r.url, 1, T0 + 30)


@pytest.mark.e2e
async def test_many_urls_set_aside_do_not_hide_a_due_one(open_frontier: Opener) -> None:
    # an unreachable origin's URLs wait for its robots.txt (robots.gate), more of them than a
    # backend's in-memory window, all ranked above the key's other origin's URL: it still goes
    f = await open_frontier()
    await f.add([e(f"w{i}", prio=1.0) for i in range(80)] + [e("due")])
    assert await lease(f, T0) == "a.test"
    for _ in range(80):
        w = await f.pop_url("a.test", T0)
        assert w is not None and "/w" in w.url
        w.not_before = T0 + 60
        await f.push_back(w)
    got = await f.pop_url("a.test", T0 + 1)
    assert got is not None and got.url.endswith("/due")
    await f.finish(got.url, "stored")
    assert await f.pop_url("a.test", T0 + 1) is None
    assert len(await drain(f, "a.test", T0 + 60)) == 80


@pytest.mark.e2e
async def test_drop_queued(open_frontier: Opener) -> None:
    f = await open_frontier()
    await f.add([e("1"), e("2"), e("3"), e("x", "b.test")])
    assert await lease(f, T0) == "a.test"
    popped = await f.pop_url("a.test", T0)
    assert popped is not None
    assert await f.drop_queued("a.test", "dropped:robots_unavailable") == 2
    await f.finish(popped.url, "dropped:robots_unavailable")
    await f.release("a.test", state("a.test", T0))
    assert (await f.store.stats())["queued"] == 1
    assert await lease(f, T0) == "b.test"
    assert await lease(f, T0) is None
    assert await f.add([e("2")]) == [False]


@pytest.mark.e2e
async def test_queued_counts_take_the_urls_due_later_too(open_frontier: Opener) -> None:
    """What a lost site left behind: its queued URLs, those set aside for later included,
    not those done; a key never queued has none."""
    f = await open_frontier()
    await f.add([e("1"), e("2"), e("3"), e("x", "b.test")])
    assert await lease(f, T0) == "a.test"
    later = await f.pop_url("a.test", T0)
    done = await f.pop_url("a.test", T0)
    assert later is not None and done is not None
    later.not_before = T0 + 60
    await f.push_back(later)
    await f.finish(done.url, "stored")
    counts = await f.queued_counts(["a.test", "b.test", "c.test"])
    assert counts == {"a.test": 2, "b.test": 1, "c.test": 0}


@pytest.mark.e2e
async def test_finish_is_final(open_frontier: Opener) -> None:
    f = await open_frontier()
    await f.add([e("1"), e("2")])
    assert await lease(f, T0) == "a.test"
    one = await f.pop_url("a.test", T0)
    assert one is not None
    await f.finish(one.url, "stored")
    assert (await f.store.stats())["queued"] == 1
    await f.release("a.test", state("a.test", T0))
    await f.store.close()
    g = await open_frontier()
    assert await lease(g, T0) == "a.test"
    assert await drain(g, "a.test", T0) == ["2"]


# -- robots, hosts, counters, stats -----------------------------------------------------------


@pytest.mark.e2e
async def test_counters_add_and_read(open_frontier: Opener) -> None:
    f = await open_frontier()
    assert await f.store.counters() == {}
    await f.store.add_counters({"requests": 3, "stored": 1, "zero": 0})
    await f.store.add_counters({"requests": 2, "error:http_500": 1})
    assert await f.store.counters() == {"requests": 5, "stored": 1, "error:http_500": 1}


@pytest.mark.e2e
async def test_robots_save_and_load(open_frontier: Opener) -> None:
    f = await open_frontier()
    assert await f.store.robots("http://a.test") is None
    ok = RobotsRecord("http://a.test", T0, 200, b"User-agent: *\nDisallow: /x\n")
    failing = RobotsRecord(
        "http://b.test:8080", T0 + 1, 503, b"\x00busy\n", T0 - 5, b"good\n", failures=3
    )
    await f.store.save_robots(ok)
    await f.store.save_robots(failing)
    assert await f.store.robots("http://a.test") == ok
    assert await f.store.robots("http://b.test:8080") == failing
    newer = RobotsRecord("http://a.test", T0 + 9, 404, b"")
    await f.store.save_robots(newer)
    assert await f.store.robots("http://a.test") == newer
    chain = RobotsRecord("http://a.test", T0 + 9, 404, b"", redirect_to="http://a.test/r", hops=2)
    await f.store.save_robots(chain)
    assert await f.store.robots("http://a.test") == chain


@pytest.mark.e2e
async def test_validators_round_trip(open_frontier: Opener) -> None:
    f = await open_frontier()
    url = "http://a.test/page.html"
    assert await f.store.validators(url) is None
    await f.store.save_validators(url, '"v1"', None, T0)
    await f.store.save_validators("http://a.test/other", None, "Sun, 01 Nov 2026 10:00:00 GMT", T0)
    assert await f.store.validators(url) == ('"v1"', None, T0)
    await f.store.flush()  # (once a second in a crawl): now every worker sees them
    if not open_frontier.kind.startswith(
        "sqlite"
    ):  # (one process per SQLite crawl: the folder's lock)
        other = await open_frontier()
        assert await other.store.validators(url) == ('"v1"', None, T0)
    await f.store.save_validators(url, '"v2"', "Mon, 02 Nov 2026 10:00:00 GMT", T0 + 60.5)
    await f.store.close()
    g = await open_frontier()
    assert await g.store.validators(url) == ('"v2"', "Mon, 02 Nov 2026 10:00:00 GMT", T0 + 60.5)
    assert await g.store.validators("http://a.test/other") == (
        None,
        "Sun, 01 Nov 2026 10:00:00 GMT",
        T0,
    )


@pytest.mark.e2e
async def test_a_url_fetched_and_pushed_back_keeps_its_validators(open_frontier: Opener) -> None:
    """A URL queued by ``add`` was never fetched; once fetched and pushed back (a revisit), its
    validators are found when it is popped again, by whichever worker pops it."""
    f = await open_frontier()
    await f.add([e("1")])
    assert await lease(f, T0) == "a.test"
    got = await f.pop_url("a.test", T0)
    assert got is not None and await f.store.validators(got.url) is None
    await f.begin_request("a.test", state("a.test", T0 + 1, last_start=T0))
    await f.store.save_validators(got.url, '"v1"', None, T0)
    await f.store.flush()
    got.not_before = T0 + 5
    await f.push_back(got)
    await f.release("a.test", state("a.test", T0 + 1, last_start=T0))
    g = f if open_frontier.kind.startswith("sqlite") else await open_frontier()
    assert await lease(g, T0 + 5) == "a.test"
    again = await g.pop_url("a.test", T0 + 5)
    assert again is not None and again.url == got.url
    assert await g.store.validators(again.url) == ('"v1"', None, T0)
    assert await f.store.validators(got.url) == ('"v1"', None, T0)


@pytest.mark.e2e
async def test_host_state_round_trip(open_frontier: Opener) -> None:
    f = await open_frontier()
    fresh = await f.store.host("a.test")
    assert (fresh.key, fresh.last_start, fresh.next_allowed) == ("a.test", 0.0, 0.0)
    await f.add([e("1")])
    assert await lease(f, T0) == "a.test"
    h = await f.store.host("a.test")
    h.last_start, h.next_allowed, h.crawl_delay_s = T0, T0 + 2.5, 2.0
    h.backoff_factor, h.retry_after_until, h.consecutive_failures = 4.0, T0 + 1, 2
    h.response_times_s.extend([0.1, 0.25])
    await f.release("a.test", h)
    await f.store.close()
    g = await open_frontier()
    got = await g.store.host("a.test")
    assert got == h


@pytest.mark.e2e
async def test_begin_request_saves_the_provisional_state_at_once(open_frontier: Opener) -> None:
    f = await open_frontier()
    await f.add([e("1")])
    assert await lease(f, T0) == "a.test"
    assert await f.pop_url("a.test", T0) is not None
    h = await f.store.host("a.test")
    h.last_start, h.next_allowed = T0 + 1, T0 + 16  # as politeness.record_start sets them
    await f.begin_request("a.test", h)
    other = await open_frontier()  # another process on the same store, before any flush
    got = await other.store.host("a.test")
    assert (got.last_start, got.next_allowed) == (T0 + 1, T0 + 16)


@pytest.mark.e2e
async def test_stats(open_frontier: Opener) -> None:
    f = await open_frontier()
    await f.add([e("1"), e("2"), e("3", "b.test")])
    st = await f.store.stats()
    assert (st["queued"], st["hosts_waiting"], st["in_flight"], st["seen"]) == (3, 2, 0, 3)
    key = await lease(f, T0)
    assert key is not None
    assert await f.pop_url(key, T0) is not None
    st = await f.store.stats()
    assert (st["queued"], st["hosts_waiting"], st["in_flight"]) == (2, 1, 1)
    if open_frontier.kind in ("redis-bloom", "sqlite"):  # type: ignore[attr-defined]
        assert st["seen_bytes"] > 0  # the filter; the store's recent URLs in memory
    else:
        assert st["seen_bytes"] == 0


@pytest.mark.e2e
async def test_stats_ready_and_parked_hosts(open_frontier: Opener) -> None:
    """``ready`` and ``parked`` are judged at the wall clock (the live dashboard's)."""
    f = await open_frontier()
    await f.add([e("1", "a.test"), e("2", "a.test"), e("3", "b.test"), e("4", "c.test")])
    st = await f.store.stats()
    assert (st["hosts_waiting"], st["ready"], st["parked"]) == (3, 3, 0)
    key = await lease(f, T0)
    assert key == "a.test"
    assert await f.pop_url(key, T0) is not None
    h = await f.store.host(key)
    wall = time.time()
    h.last_start, h.next_allowed, h.parked_until = wall, wall + 3600, wall + 3600
    await f.release(key, h)
    st = await f.store.stats()
    assert (st["hosts_waiting"], st["ready"], st["parked"], st["in_flight"]) == (3, 2, 1, 0)


@pytest.mark.e2e
async def test_state_survives_close_and_reopen(open_frontier: Opener) -> None:
    f = await open_frontier()
    await f.add([e("1"), e("2"), e("3"), e("x", "b.test", prio=-1)])
    await f.store.add_counters({"requests": 4})
    await f.store.save_robots(RobotsRecord("http://a.test", T0, 200, b"ok"))
    assert await lease(f, T0) == "a.test"
    done = await f.pop_url("a.test", T0)
    assert done is not None
    await f.finish(done.url, "stored")
    in_flight = await f.pop_url("a.test", T0)  # the crawl stops with this one unfinished
    assert in_flight is not None and in_flight.url.endswith("/2")
    await f.store.close()

    g = await open_frontier()
    st = await g.store.stats()
    assert st["queued"] == 3 and st["seen"] == 4
    assert await g.add([e("1"), e("2"), e("x", "b.test")]) == [False, False, False]
    assert await g.store.counters() == {"requests": 4}
    assert await g.store.robots("http://a.test") == RobotsRecord("http://a.test", T0, 200, b"ok")
    later = T0 + 100
    assert await lease(g, later) == "a.test"
    again = await g.pop_url("a.test", later)
    assert again is not None and again.url == in_flight.url and again.refetch
    rest = await g.pop_url("a.test", later)
    assert rest is not None and rest.url.endswith("/3") and not rest.refetch
    assert await lease(g, later) == "b.test"


# -- one server, many names: the IP rule --------------------------------------------------------

IP1, IP2 = "192.0.2.1", "192.0.2.2"


def ip_state(key: str, ip_next: float) -> HostState:
    h = HostState(key=key)
    h.ip_next = ip_next
    return h


@pytest.mark.e2e
async def test_keys_of_one_ip_are_leased_one_at_a_time(open_frontier: Opener) -> None:
    """Two names of one server: never both leased; the IP's next time is kept after release."""
    f = await open_frontier()
    await f.add(
        [
            e("1", "a.test", 3.0, ip=IP1),
            e("2", "a.test", 3.0, ip=IP1),
            e("1", "b.test", 2.0, ip=IP1),
            e("1", "c.test", 1.0, ip=IP2),
        ]
    )
    assert [await lease(f, T0) for _ in range(3)] == ["a.test", "c.test", None]
    assert (await f.store.stats())["hosts_waiting"] == 1  # b.test, in IP1's line
    await drain(f, "a.test", T0)
    await f.release("a.test", ip_state("a.test", T0 + 5.0))
    assert await wake(f, T0 + 4.9) == T0 + 5.0
    assert await lease(f, T0 + 5.0) == "b.test"
    assert await lease(f, T0 + 5.0) is None


@pytest.mark.e2e
async def test_a_key_due_before_its_ips_time_waits_for_it(open_frontier: Opener) -> None:
    f = await open_frontier()
    await f.add([e("1", "a.test", 2.0, ip=IP1), e("2", "a.test", ip=IP1)])
    assert await lease(f, T0) == "a.test"
    assert await f.pop_url("a.test", T0) is not None
    await f.release("a.test", ip_state("a.test", T0 + 3.0))  # the host itself is due at once
    await f.add([e("1", "b.test", 9.0, ip=IP1)])
    assert await lease(f, T0 + 1) is None
    assert await lease(f, T0 + 3.0) == "b.test"  # the better URL, once the IP's time came
    assert await lease(f, T0 + 3.0) is None  # a.test: its IP is held by b.test now
    await drain(f, "b.test", T0 + 3.0)
    await f.release("b.test", ip_state("b.test", T0 + 3.5))
    assert await lease(f, T0 + 3.5) == "a.test"


@pytest.mark.e2e
async def test_keys_waiting_for_an_ip_take_turns_in_order(open_frontier: Opener) -> None:
    f = await open_frontier()
    keys = ["a.test", "b.test", "c.test", "d.test"]
    await f.add([e("1", k, 4.0 - i, ip=IP1) for i, k in enumerate(keys)])
    assert await lease(f, T0) == "a.test"
    assert await lease(f, T0) is None  # b, c, d wait in IP1's line, in that order
    await f.add([e("1", "z.test", 9.0, ip=IP1)])  # due later: joins the line at the back
    assert await lease(f, T0 + 1) is None
    await f.drop_queued("c.test", "dropped:test")  # a key in the line that has nothing left
    order = []
    now, holder = T0 + 1, "a.test"
    while holder is not None:
        await drain(f, holder, now)
        await f.release(holder, ip_state(holder, now + 1.0))
        order.append(holder)
        assert await lease(f, now + 0.5) is None  # the IP's gap holds between any two keys
        now += 1.0
        holder = await lease(f, now)
    assert order == ["a.test", "b.test", "d.test", "z.test"]
    assert await wake(f, now) is None


@pytest.mark.e2e
async def test_a_key_released_goes_behind_the_keys_waiting_for_its_ip(
    open_frontier: Opener,
) -> None:
    """Names that together want more than their server gives share it in turn: a key just
    released, due again before its IP's next time and better ranked, waits behind the keys
    already waiting (before, it won every turn of the IP and they starved)."""
    f = await open_frontier()
    await f.add([e(str(i), "a.test", 9.0, ip=IP1) for i in range(3)])
    await f.add([e(str(i), "b.test", 1.0, ip=IP1) for i in range(3)])
    await f.add([e(str(i), "c.test", 1.0, ip=IP1) for i in range(3)])
    now, holder, order = T0, await lease(f, T0), []
    assert holder == "a.test"
    assert await lease(f, T0) is None  # b, c wait in IP1's line
    for _ in range(6):
        assert holder is not None
        entry = await f.pop_url(holder, now)  # one page per turn
        assert entry is not None
        await f.finish(entry.url, "stored")
        await f.release(holder, ip_state(holder, now + 1.0))  # due again at once, its IP in 1 s
        order.append(holder)
        now += 1.0
        holder = await lease(f, now)
    assert order == ["a.test", "b.test", "c.test"] * 2


@pytest.mark.e2e
async def test_the_ip_of_a_key_survives_reopen(open_frontier: Opener) -> None:
    f = await open_frontier()
    await f.add([e("1", "a.test", 2.0, ip=IP1), e("1", "b.test", 1.0, ip=IP1)])
    await f.store.close()
    g = await open_frontier()
    await g.add([e("2", "b.test", ip="")])  # a later entry without the address
    assert [await lease(g, T0), await lease(g, T0)] == ["a.test", None]


# -- a host that moves to another server: the key follows the address connected to ----------


def hosts_at(where: dict[str, tuple[str, ...] | None]) -> Callable[[str], Any]:
    """A crawl's ``addresses``: each host's addresses now (None: being looked up)."""
    return lambda url: where[url.split("/")[2]]


def three_on_two_ips() -> list[UrlEntry]:
    return [e("1", "a.test", 3.0, ip=IP1), e("1", "b.test", 2.0, ip=IP2), e("1", "c.test", ip=IP1)]


def one_shard(opener: Opener, shards: int | None) -> dict[str, int]:
    """Redis with ``shards=1``: an address's turn-taking in the moved key's own shard."""
    return {"shards": shards} if shards and opener.kind.startswith("redis") else {}  # type: ignore[attr-defined]


@pytest.mark.e2e
@pytest.mark.parametrize("shards", [None, 1])
async def test_a_host_that_moved_is_gated_on_its_new_server(
    open_frontier: Opener, shards: int | None
) -> None:
    """Queued on IP1, its host is on IP2 now (a new DNS answer): leased on IP2, not IP1."""
    f = await open_frontier(**one_shard(open_frontier, shards))
    f.addresses = hosts_at({"a.test": (IP2,), "b.test": (IP2,), "c.test": (IP1,)})
    await f.add(three_on_two_ips())
    assert await lease(f, T0) == "a.test"  # moved to IP2, free
    assert await lease(f, T0) == "c.test"  # IP1: a.test left it
    assert await lease(f, T0) is None  # b.test waits for IP2, a.test's now
    await drain(f, "a.test", T0)
    await f.release("a.test", ip_state("a.test", T0 + 5.0))
    assert await lease(f, T0 + 4.9) is None  # IP2's gap, set by a.test's request
    assert await lease(f, T0 + 5.0) == "b.test"


@pytest.mark.e2e
@pytest.mark.parametrize("shards", [None, 1])
async def test_a_request_that_went_to_another_address_moves_its_key(
    open_frontier: Opener, shards: int | None
) -> None:
    """A host with two addresses, the connection went to the other one: the key holds that
    one until its release (no other key of it is leased meanwhile) and frees the first."""
    f = await open_frontier(**one_shard(open_frontier, shards))
    f.addresses = hosts_at({"a.test": (IP1, IP2), "b.test": (IP2,), "c.test": (IP1,)})
    await f.add(three_on_two_ips())
    assert await lease(f, T0) == "a.test"  # IP1 is still one of its host's: kept
    await f.connected("a.test", IP2)
    assert await lease(f, T0) == "c.test"
    assert await lease(f, T0) is None  # b.test: IP2 is a.test's until its release
    await drain(f, "a.test", T0)
    await f.release("a.test", ip_state("a.test", T0 + 5.0))
    assert await lease(f, T0 + 4.9) is None
    assert await lease(f, T0 + 5.0) == "b.test"
    await drain(f, "b.test", T0 + 5.0)
    await f.release("b.test", ip_state("b.test", T0 + 6.0))
    await f.add([e("2", "a.test", ip=IP1)])  # a later entry's address: not the key's
    assert await lease(f, T0 + 5.5) is None  # a.test stays on IP2 (one of its host's)
    assert await lease(f, T0 + 6.0) == "a.test"


@pytest.mark.e2e
async def test_a_reopened_crawl_asks_where_each_host_is_now(open_frontier: Opener) -> None:
    """The saved map is not trusted at a resume: a due key's host is looked up first (it
    waits for the answer, at most ``LOOKUP_WAIT_S``), and the address it moved to is saved."""
    f = await open_frontier()
    await f.add([e("1", "a.test", 2.0, ip=IP1), e("2", "a.test", 2.0, ip=IP1)])
    await f.add([e("1", "b.test", 1.0, ip=IP2), e("2", "b.test", 1.0, ip=IP2)])
    await f.store.close()
    g = await open_frontier()
    where: dict[str, tuple[str, ...] | None] = {"a.test": None, "b.test": (IP2,)}
    g.addresses = hosts_at(where)
    assert await lease(g, T0) == "b.test"  # a.test waits for its answer
    assert await lease(g, T0 + 0.05) is None
    await drain(g, "b.test", T0 + 0.05)
    await g.release("b.test", ip_state("b.test", T0 + 0.5))
    where["a.test"] = (IP2,)  # the answer: a.test moved to b.test's server
    assert await lease(g, T0 + 0.4) is None  # IP2's gap
    assert await lease(g, T0 + 0.5) == "a.test"
    assert await drain(g, "a.test", T0 + 0.5) == ["1", "2"]  # nothing lost by the waits
    await g.release("a.test", ip_state("a.test", T0 + 1.0))
    await g.store.close()
    h = await open_frontier()  # no addresses given: the map as saved, a.test on IP2
    await h.add([e("3", "a.test", ip=IP1), e("3", "b.test", ip=IP2)])
    assert [await lease(h, T0 + 1.0), await lease(h, T0 + 1.0)] in (
        ["a.test", None],
        ["b.test", None],
    )


@pytest.mark.e2e
async def test_a_dead_workers_hold_on_the_address_its_site_moved_to_expires(
    open_shared: Opener,
) -> None:
    """Redis, 16 shards: IP2's turn-taking lives in another shard than a.test's queue (a
    guest hold there). Its worker dies: the hold expires with the lease, as any, and b.test,
    waiting in IP2's line all along, has the IP's next turn (first come first served)."""
    dead = await open_shared(lease_ttl_s=5.0)
    alive = await open_shared(lease_ttl_s=5.0, reclaim_delay_s=2.0)
    dead.addresses = alive.addresses = hosts_at({"a.test": (IP2,), "b.test": (IP2,)})
    await dead.add([e("1", "a.test", 2.0, ip=IP1), e("1", "b.test", 1.0, ip=IP2)])
    assert dead.store.dir["a.test"] != dead.store.home(IP2)
    assert await lease(dead, T0) == "a.test"  # on IP2, and the worker dies
    assert await lease(alive, T0) is None  # b.test waits for IP2
    assert await lease(alive, T0 + 5.0) is None  # reclaimed: the IP waits the reclaim delay
    assert await lease(alive, T0 + 7.0) == "b.test"
    assert await lease(alive, T0 + 7.0) is None  # a.test waits for IP2
    await drain(alive, "b.test", T0 + 7.0)
    await alive.release("b.test", ip_state("b.test", T0 + 7.5))
    assert await lease(alive, T0 + 8.0) == "a.test"


@pytest.mark.e2e
async def test_a_name_not_answered_waits_only_so_long(open_frontier: Opener) -> None:
    f = await open_frontier()
    f.addresses = hosts_at({"a.test": None})
    await f.add([e("1", "a.test", ip=IP1)])
    assert await lease(f, T0) is None
    woke = await wake(f, T0)
    assert woke is not None and T0 < woke <= T0 + 0.1
    assert await lease(f, T0 + 1.0) is None
    assert await lease(f, T0 + 2.0) == "a.test"  # LOOKUP_WAIT_S: on the address it had


@pytest.mark.e2e
async def test_keys_without_an_ip_are_not_held_back(open_frontier: Opener) -> None:
    f = await open_frontier()
    await f.add([e("1", "a.test", ip=IP1), e("1", "b.test"), e("1", "c.test")])
    assert sorted([await lease(f, T0) for _ in range(3)]) == ["a.test", "b.test", "c.test"]


@pytest.mark.e2e
async def test_an_expired_lease_frees_its_ip(open_shared: Opener) -> None:
    dead = await open_shared(lease_ttl_s=5.0)
    alive = await open_shared(lease_ttl_s=5.0, reclaim_delay_s=2.0)
    await dead.add([e("1", "a.test", 2.0, ip=IP1), e("1", "b.test", 1.0, ip=IP1)])
    assert await lease(dead, T0) == "a.test"  # ...and the worker dies
    assert await lease(alive, T0) is None  # b.test waits for the IP
    assert await lease(alive, T0 + 5.0) is None  # reclaimed: the IP waits the reclaim delay
    assert await wake(alive, T0 + 5.0) == T0 + 7.0
    assert await lease(alive, T0 + 7.0) in ("a.test", "b.test")
    assert await lease(alive, T0 + 7.0) is None


@pytest.mark.e2e
async def test_workers_never_hold_one_ip_twice(open_shared: Opener) -> None:
    workers = [await open_shared(), await open_shared(), await open_shared()]
    keys = [f"k{i}.test" for i in range(6)]
    urls = [
        e(str(n), k, ip=IP1 if i % 2 else IP2)
        for (i, k), n in itertools.product(enumerate(keys), range(3))
    ]
    await workers[0].add(urls)
    holder: dict[str, int] = {}
    overlaps: list[str] = []
    fetched: list[str] = []
    clock = itertools.count()

    async def worker(w: int, f: RedisFrontier) -> None:
        for _ in range(3000):  # bounded
            now = T0 + next(clock) * 1e-3
            got = await f.lease(now)
            key = got.key
            if key is None:
                if got.wake is None:
                    return
                await asyncio.sleep(0.001)
                continue
            ip = IP1 if int(key[1]) % 2 else IP2
            if ip in holder:
                overlaps.append(f"{ip}: worker {w} ({key}) while worker {holder[ip]}")
            holder[ip] = w
            await asyncio.sleep(0.002)
            entry = await f.pop_url(key, now)
            if entry is not None:
                fetched.append(entry.url)
                await f.finish(entry.url, "stored")
            del holder[ip]
            await f.release(key, ip_state(key, now))

    await asyncio.wait_for(
        asyncio.gather(*(worker(i, f) for i, f in enumerate(workers))), timeout=30
    )
    assert overlaps == []
    assert sorted(fetched) == sorted(u.url for u in urls)


# -- Redis only: many workers ------------------------------------------------------------------


@pytest.mark.e2e
async def test_expired_lease_requeues_in_flight_url_as_refetch(open_shared: Opener) -> None:
    dead = await open_shared(lease_ttl_s=5.0)
    alive = await open_shared(lease_ttl_s=5.0, reclaim_delay_s=2.0)
    await dead.add([e("1"), e("2")])
    assert await lease(dead, T0) == "a.test"
    lost = await dead.pop_url("a.test", T0)
    assert lost is not None and lost.url.endswith("/1")
    # the dead worker never finishes, pushes back nor releases
    assert await wake(alive, T0 + 4.9) == T0 + 5.0  # a lease that may expire is worth waiting for
    assert await lease(alive, T0 + 5.0) is None  # reclaimed, but waits its delay first
    assert alive.refetches == 1
    st = await alive.store.stats()
    assert (st["queued"], st["in_flight"], st["hosts_waiting"]) == (2, 0, 1)
    assert await wake(alive, T0 + 5.0) == T0 + 7.0
    assert await lease(alive, T0 + 7.0) == "a.test"
    got = await alive.pop_url("a.test", T0 + 7.0)
    assert got is not None and got.url == lost.url and got.refetch
    # the old holder comes back to life: it can neither pop nor release a second time
    assert await dead.pop_url("a.test", T0 + 7.0) is None
    await dead.release("a.test", state("a.test", T0 + 1))
    assert dead.lost_leases == 1
    assert (await alive.store.stats())["in_flight"] == 1
    assert await lease(dead, T0 + 10) is None  # still alive's (its lease runs to T0 + 12)
    await alive.finish(got.url, "stored")
    assert await drain(alive, "a.test", T0 + 7.0) == ["2"]
    await alive.release("a.test", state("a.test", T0 + 8))
    assert await wake(alive, T0 + 8) is None
    assert (await status(alive.store.url, alive.crawl_id))["outcomes"] == {"stored": 2}


@pytest.mark.e2e
async def test_reclaim_waits_the_last_delay_of_the_host(open_shared: Opener) -> None:
    w1 = await open_shared(lease_ttl_s=5.0)
    w2 = await open_shared(lease_ttl_s=5.0, reclaim_delay_s=0.5)
    await w1.add([e("1"), e("2")])
    assert await lease(w1, T0) == "a.test"
    assert await w1.pop_url("a.test", T0) is not None
    await w1.release("a.test", state("a.test", T0 + 20, last_start=T0))  # a 20 s site
    assert await lease(w1, T0 + 20) == "a.test"
    assert await w1.pop_url("a.test", T0 + 20) is not None  # ...and w1 dies here
    assert await wake(w2, T0 + 25) == T0 + 45  # now + the host's own 20 s, not 0.5 s
    assert await lease(w2, T0 + 45) == "a.test"


@pytest.mark.e2e
async def test_a_finish_held_for_the_release_survives_a_lost_lease(open_shared: Opener) -> None:
    """A shared frontier sends a turn's finishes with its release; if the lease is lost first,
    they go out at once, and the finished URL is not handed out again."""
    w1 = await open_shared(lease_ttl_s=5.0)
    w2 = await open_shared(lease_ttl_s=5.0, reclaim_delay_s=1.0)
    await w1.add([e("1"), e("2")])
    assert await lease(w1, T0) == "a.test"
    one = await w1.pop_url("a.test", T0)
    assert one is not None and one.url.endswith("/1")
    await w1.finish(one.url, "dropped:robots_disallowed")  # held for the release
    assert await wake(w2, T0 + 6) == T0 + 7  # w1's lease expired: reclaimed, a delay to wait
    with pytest.raises(LeaseLost):
        await w1.begin_request("a.test", state("a.test", T0 + 6.5, last_start=T0 + 6))
    assert await lease(w2, T0 + 7) == "a.test"
    assert await drain(w2, "a.test", T0 + 7) == ["2"]
    await w2.release("a.test", state("a.test", T0 + 8))  # (its finish goes with it)
    outcomes = (await status(w2.store.url, w2.crawl_id))["outcomes"]
    assert outcomes == {"dropped:robots_disallowed": 1, "stored": 1}


@pytest.mark.e2e
async def test_renew_keeps_a_slow_turn_leased(open_shared: Opener) -> None:
    w1 = await open_shared(lease_ttl_s=5.0)
    w2 = await open_shared(lease_ttl_s=5.0)
    await w1.add([e("1"), e("2")])
    assert await lease(w1, T0) == "a.test"
    assert await w1.renew("a.test", T0 + 4)
    assert await w1.renew_held(T0 + 8) == []
    assert await lease(w2, T0 + 12) is None
    assert await w1.pop_url("a.test", T0 + 12) is not None  # pop renews too: until T0 + 17
    assert await lease(w2, T0 + 16.9) is None
    assert await lease(w2, T0 + 17) is None  # expired now, reclaimed, waiting its delay
    assert await w1.renew_held(T0 + 17) == ["a.test"]
    assert not await w1.renew("a.test", T0 + 17)


@pytest.mark.e2e
async def test_begin_request_renews_or_refuses(open_shared: Opener) -> None:
    w1 = await open_shared(lease_ttl_s=5.0)
    w2 = await open_shared(lease_ttl_s=5.0, reclaim_delay_s=1.0)
    await w1.add([e("1"), e("2")])
    assert await lease(w1, T0) == "a.test"
    assert await w1.pop_url("a.test", T0) is not None
    await w1.begin_request("a.test", state("a.test", T0 + 4 + 0.5, last_start=T0 + 4))
    assert await lease(w2, T0 + 8.9) is None  # renewed to T0 + 9 by the request's start
    # expired: reclaimed, waiting max(next, now + delay)
    assert await wake(w2, T0 + 9) == T0 + 10
    with pytest.raises(LeaseLost):
        await w1.begin_request("a.test", state("a.test", T0 + 10, last_start=T0 + 9.5))
    assert (await w2.store.host("a.test")).last_start == T0 + 4  # the refused state was not saved
    assert await lease(w2, T0 + 10) == "a.test"


@pytest.mark.e2e
async def test_close_gives_back_held_leases(open_shared: Opener) -> None:
    w1 = await open_shared()
    await w1.add([e("1")])
    assert await lease(w1, T0) == "a.test"
    assert await w1.pop_url("a.test", T0) is not None
    await w1.store.close()
    w2 = await open_shared()
    assert (await w2.store.stats())["in_flight"] == 0
    assert await lease(w2, T0 + 1) == "a.test"  # back after reclaim_delay_s, not a lease TTL
    got = await w2.pop_url("a.test", T0 + 1)
    assert got is not None and got.refetch


@pytest.mark.e2e
async def test_two_workers_never_hold_one_key(open_shared: Opener) -> None:
    workers = [await open_shared(), await open_shared(), await open_shared()]
    keys = [f"k{i}.test" for i in range(6)]
    urls = [e(str(n), k) for k, n in itertools.product(keys, range(8))]
    await workers[0].add(urls)
    holder: dict[str, int] = {}
    overlaps: list[str] = []
    fetched: list[str] = []
    rng = random.Random(7)
    clock = itertools.count()

    def take(w: int, key: str) -> None:
        if key in holder:
            overlaps.append(f"{key}: worker {w} while worker {holder[key]}")
        holder[key] = w

    async def turn(w: int, f: RedisFrontier, key: str) -> None:
        await asyncio.sleep(rng.random() * 0.002)
        now = T0 + next(clock) * 1e-3
        entry = await f.pop_url(key, now)
        if entry is not None:
            fetched.append(entry.url)
            await asyncio.sleep(rng.random() * 0.002)
            await f.finish(entry.url, "stored")
        del holder[key]
        await f.release(key, state(key, now))

    async def worker(w: int, f: RedisFrontier) -> None:
        for _ in range(2000):  # bounded
            now = T0 + next(clock) * 1e-3
            leased: list[str] = []
            got = None
            while len(leased) < 3:
                got = await f.lease(now)
                if got.key is None:
                    break
                take(w, got.key)
                leased.append(got.key)
            if leased:
                await asyncio.gather(*(turn(w, f, k) for k in leased))
            elif got is not None and got.wake is None:
                return
            else:
                await asyncio.sleep(0)

    await asyncio.wait_for(
        asyncio.gather(*(worker(i, f) for i, f in enumerate(workers))), timeout=30
    )
    assert overlaps == []
    assert sorted(fetched) == sorted(u.url for u in urls)  # each exactly once
    assert (await workers[1].store.stats())["queued"] == 0


# -- which backend a crawl gets ------------------------------------------------------------------


@pytest.mark.unit
async def test_make_frontier_picks_the_backend(tmp_path: Path) -> None:
    import dataclasses

    from politecrawl.config import CrawlConfig, FetchConfig
    from politecrawl.frontier.factory import make_frontier

    cfg = CrawlConfig(
        seeds=("http://a.test/",),
        out_dir=tmp_path / "crawl7",
        fetch=FetchConfig(user_agent="testbot/1.0 (+http://bot.example/info)"),
    )
    local = make_frontier(cfg)
    assert isinstance(local, SqliteFrontier)
    await local.store.close()
    shared = make_frontier(dataclasses.replace(cfg, frontier_url="redis://127.0.0.1:1/0"))
    assert isinstance(shared, RedisFrontier)  # not connected until first used
    # no --crawl-id: "default", as for `seed` (not the out folder's name)
    assert shared.crawl_id == "default" and shared.lease_ttl_s >= 2 * cfg.fetch.total_timeout_s
    await shared.store.close()


@pytest.mark.unit
async def test_sqlite_wait_order_stays_small_while_one_key_waits(tmp_path: Path) -> None:
    """Keys leased by priority leave stale entries behind a long-waiting one: kept bounded."""
    f = SqliteFrontier.open(tmp_path / "state.sqlite", max_wait_s=1e9)
    await f.add([e("x", "low.test", prio=0.0)])
    for i in range(5000):
        key = f"k{i}.test"
        await f.add([e("y", key, prio=5.0)])
        assert await lease(f, T0 + i) == key
        assert await drain(f, key, T0 + i) == ["y"]
        await f.release(key, state(key, T0 + i))
    assert len(f._overdue) <= 2 * len(f._ready_since) + 1024
    assert await lease(f, T0 + 5000) == "low.test"
    await f.store.close()


# -- one crawl over a whole Redis Cluster -----------------------------------------------------


@pytest.mark.e2e
async def test_a_crawl_spans_every_node_of_a_cluster(redis_cluster: Any) -> None:  # noqa: F811
    """Named by any node, the crawl finds the cluster, and its shards land on all three nodes:
    each site's queue, lease and spacing in its shard's slot; each IP's sites in one shard."""
    crawl = f"span-{uuid.uuid4().hex[:8]}"
    f = RedisFrontier.open(redis_cluster.nodes[2].url, crawl, heartbeat=False)
    entries = [e(f"p{i}", f"s{h}.test", ip=f"10.0.{h % 7}.1") for h in range(60) for i in range(3)]
    assert all(await f.add(entries))
    assert f.cluster and f.store.shards == redis_frontier.DEFAULT_SHARDS
    per_node = redis_cluster.keys_per_node(f"pc:{{{crawl}:*")
    assert len(per_node) == 3 and min(per_node) > 0, per_node
    # every key of one IP sits in one shard (so the IP's turn-taking stays one atomic script)
    for ip in {x.ip for x in entries}:
        shards = {f.store.dir[x.key] for x in entries if x.ip == ip}
        assert shards == {redis_frontier.shard_index(ip, f.store.shards)}
    # a second worker sees the same crawl through another node
    g = RedisFrontier.open(redis_cluster.nodes[1].url, crawl, heartbeat=False)
    assert (await g.store.stats())["queued"] == 180
    assert await g.store.unseen(["http://s5.test/p1", "http://s5.test/new"]) == [
        "http://s5.test/new"
    ]
    leased = []
    now = T0
    while (key := await lease((f, g)[len(leased) % 2], now)) is not None:
        leased.append(key)
    assert len(leased) == 7  # one per IP at a time
    st = await status(redis_cluster.url, crawl)
    assert st["cluster"] and st["leases_held"] == 7 and st["urls_open"] == 180
    assert st["queued"] == 180 - 7  # each lease took its site's first URL (the turn's first pop)
    await f.store.close()
    await g.store.close()


@pytest.mark.e2e
async def test_a_crawl_of_the_one_slot_layout_is_refused_not_lost(redis_url: str) -> None:  # noqa: F811
    """A crawl started before crawls were sharded (its conf has no shard count): a worker says
    so instead of finding the new layout empty and calling the crawl done."""
    import redis.asyncio as aioredis

    from politecrawl.errors import FrontierError

    crawl = f"old-{uuid.uuid4().hex[:8]}"
    r = aioredis.Redis.from_url(redis_url)
    await r.hset(redis_frontier.prefix(crawl) + "conf", mapping={"seen_mode": "exact",
                 "bloom_m": "0", "bloom_k": "0"})  # fmt: skip
    await r.aclose()
    f = RedisFrontier.open(redis_url, crawl, heartbeat=False)
    with pytest.raises(FrontierError, match="older politecrawl"):
        await lease(f, T0)
    await f.store.close()


# -- the budget policy (--defer-ratio): a poor URL waits while a much better one waits ---------


def answered(key: str, now: float, **fields: Any) -> HostState:
    """A site that answered a request started at ``now``; its next turn is 5 s later."""
    host = HostState(key, last_start=now, next_allowed=now + 5, response_times_s=deque([0.01]))
    for name, value in fields.items():
        setattr(host, name, value)
    return host


async def turn(f: Frontier, key: str, now: float, **fields: Any) -> list[str]:
    """One turn of ``key`` leased at ``now``: every URL due fetched, then released."""
    got = await drain(f, key, now)
    await f.release(key, answered(key, now, **fields))
    return got


@pytest.mark.e2e
@pytest.mark.parametrize("ratio", [0.0, 0.5])
async def test_a_poor_site_waits_while_a_better_one_waits_on_its_delay(
    open_frontier: Opener, ratio: float
) -> None:
    """Every backend keeps the budget policy (the shared frontier across its shards too):
    with ``defer_ratio`` 0.5 a site whose best URL is 0.1 is not asked while a site with a
    0.8 URL waits on its delay; woken by then (no busy loop), and served once nothing better
    is left anywhere. With 0 it is served at once."""
    f = await open_frontier(defer_ratio=ratio)
    await f.add([e("a", "good.test", 0.9), e("b", "good.test", 0.8), e("a", "poor.test", 0.1)])
    assert await lease(f, T0) == "good.test"
    entry = await f.pop_url("good.test", T0)
    assert entry is not None and entry.url.endswith("/a")
    await f.finish(entry.url, "stored")
    await f.release("good.test", answered("good.test", T0))
    if not ratio:
        assert await lease(f, T0 + 1) == "poor.test"
        return
    woken = await wake(f, T0 + 1)
    assert woken is not None and T0 + 1 < woken <= T0 + 5
    assert await lease(f, T0 + 5) == "good.test"
    assert await turn(f, "good.test", T0 + 5) == ["b"]
    assert await lease(f, T0 + 5) == "poor.test"  # nothing better left anywhere


@pytest.mark.e2e
@pytest.mark.parametrize(
    "fields",
    [
        {"consecutive_failures": 1},  # its last request failed (robots.txt out of reach)
        {"backoff_factor": 2.0},  # backing off
        {"parked_until": T0 + 3600, "retry_after_until": T0 + 3600},  # parked
        {"consecutive_refusals": 1},  # it refused
        {"response_times_s": deque()},  # never answered (a name that does not resolve)
    ],
)
async def test_the_budget_policy_ignores_sites_that_fail(
    open_frontier: Opener, fields: dict[str, Any]
) -> None:
    """The better URL is at a site that cannot be asked soon: the poor site is not held back
    for it (a crawl whose best links point at failing hosts keeps its pace); once the
    failing site answers normally again, it counts again."""
    f = await open_frontier(defer_ratio=0.5)
    await f.add([
        e("a", "good.test", 0.9), e("b", "good.test", 0.8),
        e("a", "poor.test", 0.1), e("b", "poor.test", 0.1),
    ])  # fmt: skip
    assert await lease(f, T0) == "good.test"
    entry = await f.pop_url("good.test", T0)
    assert entry is not None
    await f.push_back(entry)  # it failed: to try again later
    await f.release("good.test", answered("good.test", T0, **fields))
    assert await lease(f, T0 + 1) == "poor.test"
    assert await turn(f, "poor.test", T0 + 1) == ["a", "b"]
    await f.add([e("c", "poor.test", 0.1)])
    # good.test's turn comes, and it answers normally: the poor site waits for it again
    assert await lease(f, T0 + 3600) == "good.test"
    assert await f.pop_url("good.test", T0 + 3600) is not None
    await f.release("good.test", answered("good.test", T0 + 3600))
    assert await lease(f, T0 + 3601) is None
    assert await lease(f, T0 + 3605) == "good.test"


@pytest.mark.e2e
async def test_the_budget_policy_holds_between_workers(open_shared: Opener) -> None:
    """Two workers of one shared crawl: a site one worker holds, with a better URL left, is
    the other's reference too; when its queue empties it is no longer."""
    f, g = await open_shared(defer_ratio=0.5), await open_shared(defer_ratio=0.5)
    await f.add([e("a", "good.test", 0.9), e("b", "good.test", 0.8), e("a", "poor.test", 0.1)])
    assert await lease(f, T0) == "good.test"
    assert await turn(f, "good.test", T0) == ["a", "b"]  # its queue emptied meanwhile
    await f.add([e("c", "good.test", 0.7)])
    assert await lease(g, T0 + 1) is None  # good.test, released clean, waits on its delay
    assert await lease(f, T0 + 5) == "good.test"
    assert await turn(f, "good.test", T0 + 5) == ["c"]
    assert await lease(g, T0 + 6) == "poor.test"  # good.test has nothing left
