"""What the SQLite frontier keeps in memory: a few URLs per site, and none of the seen-set.

A long crawl sees 3-4 new URLs per request; both the seen-set held as a Python set and the
per-site windows kept whole grew with every URL seen (``bench/soak.py --tracemalloc``).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from politecrawl.frontier import UrlEntry
from politecrawl.frontier.sqlite import SqliteFrontier
from politecrawl.frontier.sqlitestore import StoredSeen
from politecrawl.frontier.window import KEEP_BETWEEN_TURNS, WINDOW
from politecrawl.polite.politeness import HostState

pytestmark = pytest.mark.unit
T0 = 1000.0


def entry(n: int, prio: float, key: str = "a.test") -> UrlEntry:
    return UrlEntry(f"http://{key}/p{n}", key, priority=prio)


async def test_a_sites_window_stays_small_and_its_urls_still_come_best_first(
    tmp_path: Path,
) -> None:
    f = SqliteFrontier.open(tmp_path / "state.sqlite")
    rng = random.Random(7)
    prios = {n: rng.random() for n in range(1000)}
    await f.add([entry(0, prios[0])])
    lease = await f.lease(T0)
    assert lease.key == "a.test"
    first = await f.pop_url("a.test", T0)
    assert first is not None and first.url.endswith("/p0")
    # the site is leased, its window complete (empty) when 999 links arrive, better and worse
    await f.add([entry(n, prios[n]) for n in range(1, 1000)])
    assert len(f._window.get("a.test", [])) <= 2 * WINDOW
    out = []
    for _ in range(10):
        got = await f.pop_url("a.test", T0)
        assert got is not None
        out.append(got.priority)
    assert out == sorted((prios[n] for n in range(1, 1000)), reverse=True)[:10]
    await f.release("a.test", HostState(key="a.test", next_allowed=T0))
    assert len(f._window.get("a.test", [])) <= KEEP_BETWEEN_TURNS
    got_all = list(out)
    now = T0
    while f.queued():
        now += 1
        lease = await f.lease(now)
        assert lease.key == "a.test"
        while (got := await f.pop_url("a.test", now)) is not None:
            got_all.append(got.priority)
            await f.finish(got.url, "stored")
        assert len(f._window.get("a.test", [])) <= 2 * WINDOW
        await f.release("a.test", HostState(key="a.test", next_allowed=now))
    assert sorted(got_all, reverse=True) == got_all  # best first, throughout
    assert len(got_all) == 999
    await f.store.close()


async def test_the_stored_seen_set_is_exact_beyond_its_memory_and_across_a_restart(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.sqlite"
    f = SqliteFrontier.open(path)  # the default: the seen-set in the store
    seen = f.store.seen
    assert isinstance(seen, StoredSeen)
    seen._cap = 10  # memory for ten URLs: the rest must be answered by the store
    urls = [f"http://a.test/q{n}" for n in range(1200)]
    assert await f.store.unseen(urls) == urls
    added = await f.add([UrlEntry(u, "a.test") for u in urls[:600]])
    assert all(added)
    await f.store.mark_seen(urls[600:700])  # refused at the gate: seen, never queued
    assert len(seen._recent) <= 10
    # more than one query's worth (500 a query), none of it in memory
    assert await f.store.unseen(urls) == urls[700:]
    assert urls[5] in seen and urls[650] in seen and urls[900] not in seen
    assert await f.add([UrlEntry(urls[3], "a.test")]) == [False]
    assert (await f.store.stats())["seen"] == 700
    await f.store.close()

    g = SqliteFrontier.open(path)
    assert await g.store.unseen(urls) == urls[700:]  # refused URLs too survive the restart
    assert (await g.store.stats())["seen"] == 700
    await g.store.close()


async def test_the_ready_heap_keeps_no_pile_of_stale_entries(tmp_path: Path) -> None:
    """Each better URL for a site already due pushes it again; the old entries go."""
    f = SqliteFrontier.open(tmp_path / "state.sqlite")
    await f.add([entry(0, 0.0, key=f"s{k}.test") for k in range(50)])
    assert (await f.lease(T0)).key is not None  # the sites are found due: all ready
    for n in range(1, 3001):
        await f.add([entry(n, float(n), key=f"s{n % 50}.test")])
    assert len(f._ready) <= 2 * len(f._ready_prio) + 1024
    order = []
    while (lease := await f.lease(T0)).key is not None:
        order.append(lease.key)
    best = {f"s{n % 50}.test": float(n) for n in range(1, 3001)}
    assert order == sorted(set(order), key=lambda k: -best[k])  # still best first
    await f.store.close()
