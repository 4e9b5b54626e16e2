"""The shared frontier's client: what a worker's many turns in flight ask of one connection."""

from __future__ import annotations

import asyncio
import uuid

from redis_server import redis_url  # noqa: F401  (fixture)

from politecrawl.frontier.redis import RedisFrontier


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
