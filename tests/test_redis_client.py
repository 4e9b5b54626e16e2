"""The shared frontier's client: what a worker's many turns in flight ask of one connection."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from redis_server import redis_cluster, redis_cluster_url, redis_url  # noqa: F401  (fixtures)

from politecrawl.frontier import UrlEntry
from politecrawl.frontier.redis import RedisFrontier
from politecrawl.politeness import HostState


async def test_more_commands_in_flight_than_the_pool_default_all_succeed(
    redis_url: str,  # noqa: F811
) -> None:
    # redis-py 8 fails the 101st command in flight at once ("Too many connections"); a crawl
    # with 64 turns each asking, plus a lease peeking 16 shards, gets there: they must wait
    f = RedisFrontier.open(redis_url, f"c{uuid.uuid4().hex[:8]}", heartbeat=False)
    try:
        await f.store.ensure()
        pongs = await asyncio.gather(*(f.store.r.ping() for _ in range(600)))
        assert all(pongs)
        assert await f.store.unseen([f"http://h{i}.test/" for i in range(300)])
    finally:
        await f.store.close()


@pytest.mark.parametrize("where", ["server", "cluster"])
async def test_batched_scripts_survive_a_server_that_forgot_them(
    where: str, request: pytest.FixtureRequest
) -> None:
    # scripts to several shards go in one pipeline; a server restarted or flushed in between
    # answers NOSCRIPT to those calls only, which run again by EVAL (the others ran: once)
    url = request.getfixturevalue("redis_cluster_url" if where == "cluster" else "redis_url")
    f = RedisFrontier.open(url, f"c{uuid.uuid4().hex[:8]}", heartbeat=False)
    try:
        entries = [UrlEntry(f"http://h{i}.test/", f"h{i}.test") for i in range(40)]
        assert await f.add(entries[:20]) == [True] * 20
        assert len({f.store.dir[e.key] for e in entries[:20]}) > 4  # many shards at once
        await f.store.r.script_flush()
        assert await f.add(entries) == [False] * 20 + [True] * 20
        await f.store.r.script_flush()
        lease = await f.lease(1000.0)  # peeks every shard in one pipeline
        assert lease.key is not None
        assert (await f.store.stats())["queued"] == 39
    finally:
        await f.store.close()


async def test_a_new_url_is_fetched_without_asking_for_validators(redis_url: str) -> None:  # noqa: F811
    # a URL ``add`` queued passed the seen test: never fetched in this crawl, so no validators
    # can be stored for it and the turn asks the server nothing; pushed back, it asks
    f = RedisFrontier.open(redis_url, f"c{uuid.uuid4().hex[:8]}", heartbeat=False)
    try:
        await f.add([UrlEntry("http://a.test/1", "a.test")])
        reads: list[Any] = []
        hget = f.store.r.hget
        f.store.r.hget = lambda *a: reads.append(a) or hget(*a)
        lease = await f.lease(1000.0)
        got = await f.pop_url("a.test", 1000.0)
        assert lease.key == "a.test" and got is not None
        assert await f.store.validators(got.url) is None
        assert reads == []
        await f.push_back(got)  # e.g. robots.txt first: the entry is no longer known new
        await f.release("a.test", HostState(key="a.test"))
        assert (await f.lease(1000.0)).key == "a.test"
        again = await f.pop_url("a.test", 1000.0)
        assert again is not None and await f.store.validators(again.url) is None
        assert len(reads) == 1
    finally:
        await f.store.close()
