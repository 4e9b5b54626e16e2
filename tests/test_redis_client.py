"""The shared frontier's client: what a worker's many turns in flight ask of one connection."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import uuid
from collections.abc import AsyncIterator
from typing import Any

import hiredis
import pytest
import redis.asyncio as aioredis
from hypothesis import given
from hypothesis import strategies as st
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis_server import RedisServer, redis_cluster, redis_cluster_url, redis_url, server_binary  # noqa: F401  (fixtures)

from politecrawl.errors import FrontierError
from politecrawl.frontier import Lease, UrlEntry
from politecrawl.frontier.redis import RedisFrontier, RedisStore, shard_index
from politecrawl.frontier.redis import batch as batch_module
from politecrawl.frontier.redis.known import KnownSeen
from politecrawl.polite.politeness import HostState

T0 = 1000.0


@contextlib.asynccontextmanager
async def _frontier(url: str) -> AsyncIterator[RedisFrontier]:
    """A frontier on a crawl of its own (no heartbeat), closed after the test."""
    f = RedisFrontier.open(url, f"c{uuid.uuid4().hex[:8]}", heartbeat=False)
    try:
        yield f
    finally:
        await f.store.close()


@pytest.mark.e2e
async def test_more_commands_in_flight_than_the_pool_default_all_succeed(
    redis_url: str,  # noqa: F811
) -> None:
    # redis-py 8 fails the 101st command in flight at once ("Too many connections"); a crawl
    # with 64 turns each asking, plus a lease peeking 16 shards, gets there: they must wait
    async with _frontier(redis_url) as f:
        await f.store.ensure()
        pongs = await asyncio.gather(*(f.store.r.ping() for _ in range(600)))
        assert all(pongs)
        assert await f.store.unseen([f"http://h{i}.test/" for i in range(300)])


@pytest.mark.e2e
@pytest.mark.parametrize("where", ["server", "cluster"])
async def test_batched_scripts_survive_a_server_that_forgot_them(
    where: str, request: pytest.FixtureRequest
) -> None:
    # scripts to several shards go in one pipeline; a server restarted or flushed in between
    # answers NOSCRIPT to those calls only, which run again by EVAL (the others ran: once)
    url = request.getfixturevalue("redis_cluster_url" if where == "cluster" else "redis_url")
    async with _frontier(url) as f:
        entries = [UrlEntry(f"http://h{i}.test/", f"h{i}.test") for i in range(40)]
        assert await f.add(entries[:20]) == [True] * 20
        assert len({f.store.dir[e.key] for e in entries[:20]}) > 4  # many shards at once
        await f.store.r.script_flush()
        assert await f.add(entries) == [False] * 20 + [True] * 20
        await f.store.r.script_flush()
        lease = await f.lease(1000.0)  # peeks every shard in one pipeline
        assert lease.key is not None
        assert (await f.store.stats())["queued"] == 39


@pytest.mark.e2e
async def test_a_new_url_is_fetched_without_asking_for_validators(redis_url: str) -> None:  # noqa: F811
    # a URL ``add`` queued passed the seen test: never fetched in this crawl, so no validators
    # can be stored for it and the turn asks the server nothing; pushed back, it asks
    async with _frontier(redis_url) as f:
        await f.add([UrlEntry("http://a.test/1", "a.test")])
        await f.store.ensure()
        reads: list[Any] = []
        command = f.store.batch.command
        f.store.batch.command = lambda *a: (a[0] == "HGET" and reads.append(a)) or command(*a)  # type: ignore[method-assign]
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


def _worker(
    url: str, crawl_id: str, shards: int, now: list[float], cache: float = 60.0
) -> RedisFrontier:
    """A worker as the CLI opens one (shard views reused: ``cache`` s), on a clock the test
    sets."""
    store = RedisStore(url, crawl_id, shards=shards)
    return RedisFrontier(store, heartbeat=False, peek_cache_s=cache, clock=lambda: now[0])


def _keys_of_shard(shard: int, shards: int, n: int) -> list[str]:
    names = (f"k{i}.test" for i in itertools.count())
    return list(itertools.islice((k for k in names if shard_index(k, shards) == shard), n))


@pytest.mark.e2e
@pytest.mark.parametrize("where", ["server", "cluster"])
async def test_a_release_leases_the_next_key_in_the_same_round_trip(
    where: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("redis_cluster_url" if where == "cluster" else "redis_url")
    now, crawl_id = [T0], f"c{uuid.uuid4().hex[:8]}"
    f = _worker(url, crawl_id, 1, now)
    other = _worker(url, crawl_id, 1, now, cache=0.0)  # (sees every change at once)
    try:
        await f.add([UrlEntry("http://a.test/1", "a.test"), UrlEntry("http://b.test/1", "b.test")])
        await f.add([UrlEntry("http://b.test/2", "b.test")])
        assert (await f.lease(T0)).key == "a.test"
        await _turn(f, "a.test", ["1"], T0 + 5)
        calls = f.store.calls
        await f.release("a.test", HostState(key="a.test", next_allowed=T0 + 5))
        assert f.store.calls == calls + 1  # released, and b.test leased, by one script
        assert (await other.lease(T0)).key is None  # b.test is f's, a.test waits until T0 + 5
        got = await f.lease(T0)
        assert got.key == "b.test" and got.host == HostState(key="b.test")
        assert f.store.calls == calls + 1  # no round trip: leased by the release
        await _turn(f, "b.test", ["1"], T0 + 5)
        await f.release("b.test", HostState(key="b.test", next_allowed=T0 + 5))
        assert f.store.calls == calls + 2  # nothing else due in the shard: a plain release
        assert await f.lease(T0) == Lease(None, T0 + 5)
        now[0] = T0 + 5
        assert (await other.lease(T0 + 5)).key == "b.test"  # its last URL, due now
    finally:
        await f.store.close()
        await other.store.close()


async def _turn(f: RedisFrontier, key: str, urls: list[str], t: float) -> None:
    """Pop (and finish) the URL ``f`` leased, as a turn does."""
    for name in urls:
        got = await f.pop_url(key, t)
        assert got is not None and got.url == f"http://{key}/{name}"
        await f.finish(got.url, "stored")


@pytest.mark.e2e
async def test_a_release_leases_only_if_its_shard_holds_the_best_key(redis_url: str) -> None:  # noqa: F811
    now, crawl_id = [T0], f"c{uuid.uuid4().hex[:8]}"
    f = _worker(redis_url, crawl_id, 2, now)
    try:
        x1, x2 = _keys_of_shard(0, 2, 2)
        y1, y2 = _keys_of_shard(1, 2, 2)
        await f.add([UrlEntry(f"http://{k}/1", k) for k in (x1, x2)])
        assert (await f.lease(T0)).key == x1
        await f.add([UrlEntry(f"http://{k}/1", k, priority=5.0) for k in (y1, y2)])
        assert (await f.lease(T0)).key == y1  # the better URL, in the other shard
        await _turn(f, x1, ["1"], T0)
        calls = f.store.calls
        await f.release(x1, HostState(key=x1, next_allowed=T0 + 5))  # x2 ready here, y2 better
        assert f.store.calls == calls + 1
        assert (await f.lease(T0)).key == y2  # asked for: the crawl's best, not x1's shard's
        assert f.store.calls == calls + 2
        await _turn(f, y1, ["1"], T0)
        await f.release(y1, HostState(key=y1, next_allowed=T0 + 5))  # y2 held: x2 is best
        assert (await f.lease(T0)).key == x2
    finally:
        await f.store.close()


@pytest.mark.e2e
@pytest.mark.parametrize("ip_next", [0.0, T0 + 1])
async def test_the_key_a_release_calls_from_its_ips_line_is_not_slept_past(
    ip_next: float,
    redis_url: str,  # noqa: F811
) -> None:
    """Names of one server: the key its line calls when the holder is released goes as soon as
    it and the IP may, not at the released site's own next time. An outside probe (50 names
    on one IP placed by ``seed``, a worker at ``--ip-min-delay off``: no IP time of its own,
    ``ip_next`` 0) saw the worker's cached view wait for that time while the IP was free and
    the called key due: 100 requests/s fell to 6 over two minutes."""
    now, crawl_id = [T0], f"c{uuid.uuid4().hex[:8]}"
    f = _worker(redis_url, crawl_id, 1, now)  # views reused for a minute unless changed here
    try:
        ip = "127.0.0.7"
        await f.add([UrlEntry(f"http://{k}/1", k, ip=ip) for k in ("a.test", "b.test")])
        assert (await f.lease(T0)).key == "a.test"
        assert (await f.lease(T0)).key is None  # b.test: in the IP's line, a.test holds it
        await _turn(f, "a.test", ["1"], T0)
        now[0] = T0 + 0.01
        await f.release("a.test", HostState(key="a.test", next_allowed=T0 + 5, ip_next=ip_next))
        if ip_next:  # the IP's time, as the worker computed it, comes first
            assert await f.lease(T0 + 0.01) == Lease(None, ip_next)
        got = await f.lease(max(ip_next, T0 + 0.01))
        assert got.key == "b.test"  # (before: Lease(None, T0 + 5), the IP free meanwhile)
    finally:
        await f.store.close()


@pytest.mark.e2e
async def test_a_key_leased_by_a_release_is_given_back_at_close(redis_url: str) -> None:  # noqa: F811
    now, crawl_id = [T0], f"c{uuid.uuid4().hex[:8]}"
    f = _worker(redis_url, crawl_id, 1, now)
    other = _worker(redis_url, crawl_id, 1, now)
    try:
        await f.add([UrlEntry("http://a.test/1", "a.test"), UrlEntry("http://b.test/1", "b.test")])
        assert (await f.lease(T0)).key == "a.test"
        await _turn(f, "a.test", ["1"], T0)
        await f.release("a.test", HostState(key="a.test", next_allowed=T0 + 5))
        await f.store.close()  # stops before its next lease: b.test (taken) is given back
        st = await other.store.stats()
        assert (st["in_flight"], st["queued"]) == (0, 1)
        now[0] = T0 + 60
        got = await other.lease(T0 + 60)
        assert got.key == "b.test"
        assert (await other.pop_url("b.test", T0 + 60)) is not None
    finally:
        await other.store.close()


@pytest.mark.e2e
async def test_calls_made_together_share_round_trips_and_keep_their_own_replies(
    redis_url: str,  # noqa: F811
) -> None:
    async with _frontier(redis_url) as f:
        await f.store.ensure()
        batch = f.store.batch
        p = f.store.sp[0]
        await batch.command("SET", p + "word", "x")
        before = batch.batches
        calls = [batch.command("INCRBY", p + f"n{i % 5}", i) for i in range(60)]
        calls.append(batch.command("INCR", p + "word"))  # not a number: its caller's error
        calls += [f.store.run("renew", s, ["2000.0", "nobody.test", "t"]) for s in range(4)]
        got = await asyncio.gather(*calls, return_exceptions=True)
        assert batch.batches - before < 10  # 65 calls, a few round trips
        assert got[:5] == [0, 1, 2, 3, 4] and got[59] == sum(range(4, 60, 5))
        assert isinstance(got[60], ResponseError) and "not an integer" in str(got[60])
        assert [[bytes(k) for k in r] for r in got[61:]] == [[b"nobody.test"]] * 4


@pytest.mark.e2e
async def test_calls_waiting_for_a_cancelled_batch_are_cancelled_not_left_pending(
    redis_url: str,  # noqa: F811
) -> None:
    async with _frontier(redis_url) as f:
        await f.store.ensure()
        batch = f.store.batch
        calls = [batch.command("PING") for _ in range(3)]
        assert batch._task is not None
        batch._task.cancel()  # (as when the loop closes under it)
        got = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 2.0)
        assert all(isinstance(g, asyncio.CancelledError) for g in got)
        assert await batch.command("PING")  # the next call starts a new batch


@pytest.mark.e2e
async def test_a_batch_a_stalled_server_never_answers_fails_and_the_next_reads_its_own_replies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a batch's replies share one deadline (no timer per reply); a server that stops answering
    # (here SIGSTOP) fails every call of the batch, and the replies it sends late must not be
    # read as the next batch's: that one goes on a new connection
    binary = server_binary()
    assert binary is not None, "redis-server is needed (.ci/run installs it)"
    server = RedisServer(binary)
    server.start()
    monkeypatch.setattr(batch_module, "BATCH_DEADLINE_S", 0.5)
    try:
        async with _frontier(server.url) as f:
            await f.store.ensure()
            b, p = f.store.batch, f.store.sp[0]
            assert await b.command("SET", p + "k", "v")
            assert server.proc is not None
            os.kill(server.proc.pid, signal.SIGSTOP)
            try:
                got = await asyncio.gather(
                    b.command("GET", p + "k"), b.command("INCR", p + "n"), return_exceptions=True
                )
                assert all(isinstance(g, RedisTimeoutError) for g in got), got
                with pytest.raises(FrontierError, match="lost the frontier"):
                    await f.store.run("renew", 0, ["2000.0", "nobody.test", "t"])
            finally:
                os.kill(server.proc.pid, signal.SIGCONT)
            assert await b.command("GET", p + "k") == b"v"
            assert await b.command("INCR", p + "n") == 2  # the stalled INCR did run, once
            assert await b.command("PING") is True
    finally:
        server.stop()


@pytest.mark.e2e
@pytest.mark.parametrize("reader", ["hiredis", "read_response"])
async def test_replies_and_error_replies_are_read_in_order_either_way(
    reader: str,
    redis_url: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # straight from hiredis's reader, or (a redis-py without its marker) by read_response
    if reader == "read_response":
        monkeypatch.setattr(batch_module, "NOT_ENOUGH_DATA", None)
    async with _frontier(redis_url) as f:
        await f.store.ensure()
        b, p = f.store.batch, f.store.sp[0]
        big = "x" * 200_000  # a reply longer than one read
        calls = [b.command("SET", p + "big", big), b.command("GET", p + "big")]
        calls += [b.command("HSET", p + "big", "f", "v"), b.command("ECHO", "after")]
        got = await asyncio.gather(*calls, return_exceptions=True)
        assert got[:2] == [True, big.encode()]
        assert isinstance(got[2], ResponseError) and "WRONGTYPE" in str(got[2])
        assert got[3] == b"after"


@pytest.mark.e2e
async def test_batches_share_one_deadline_timer(redis_url: str) -> None:  # noqa: F811
    # the deadline is one timer that outlives the batches (re-armed only when it comes due),
    # not a timer armed and cancelled per batch; the stalled-server test checks it fires
    async with _frontier(redis_url) as f:
        await f.store.ensure()
        b = f.store.batch
        assert await b.command("PING")
        watch = b._watch
        assert watch is not None
        for i in range(50):
            assert await b.command("ECHO", str(i)) == str(i).encode()
        assert b._watch is watch


@pytest.mark.unit
@given(
    st.lists(
        st.one_of(
            st.text(alphabet=st.characters(blacklist_categories=["Cs"])),
            st.binary(),
            st.integers(min_value=-(2**63), max_value=2**63 - 1),
            st.floats(allow_nan=False, allow_infinity=False),
        ),
        max_size=8,
    )
)
def test_the_batches_packer_writes_what_redis_py_writes(args: list[Any]) -> None:
    # batches are packed by hiredis (4x faster); the server must get the very same bytes
    conn = aioredis.Redis().connection_pool.make_connection()
    call = ("EVALSHA", *args)
    assert hiredis.pack_command(call) == b"".join(conn.pack_command(*call))


@pytest.mark.e2e
async def test_a_call_the_cluster_redirects_is_sent_again_to_the_right_node(
    redis_cluster_url: str,  # noqa: F811
) -> None:
    # the batcher routes each call by its own copy of the slot map; a node that does not
    # serve the slot answers MOVED, and the call goes again through the cluster client
    async with _frontier(redis_cluster_url) as f:
        await f.store.ensure()
        b, r = f.store.batch, f.store.r
        keys = [p + "k" for p in f.store.sp]
        node = {k: r.get_node_from_key(k).name for k in keys}
        assert len(set(node.values())) == 3
        moved, other = keys[0], next(k for k in keys if node[k] != node[keys[0]])
        b._slots[moved] = r.keyslot(other)  # as a stale slot map would: to the wrong node
        got = await asyncio.gather(b.command("SET", moved, "v"), b.command("SET", other, "w"))
        assert got == [True, True]
        assert [await r.get(moved), await r.get(other)] == [b"v", b"w"]


@pytest.mark.e2e
async def test_urls_a_worker_knows_are_seen_are_not_asked_again(redis_url: str) -> None:  # noqa: F811
    # the seen-set only grows: a URL the server called seen, or this worker added or marked,
    # is answered here; one it has not heard of (another worker's) is asked
    async with _frontier(redis_url) as f, _frontier(redis_url) as quiet:
        other = RedisFrontier.open(redis_url, f.crawl_id, heartbeat=False)
        try:
            urls = [f"http://h{i}.test/p" for i in range(6)]
            assert await f.add([UrlEntry(u, f"h{i}.test") for i, u in enumerate(urls[:2])])
            await f.store.mark_seen(urls[2:3])
            await other.add([UrlEntry(urls[3], "h3.test")])  # not known to f yet
            sent = f.store.batch.sent
            assert await f.store.unseen(urls[:3]) == []
            assert f.store.batch.sent == sent  # known: nothing asked
            assert await f.store.unseen([urls[4], urls[3], urls[4]]) == [urls[4], urls[4]]
            assert f.store.batch.sent > sent
            sent = f.store.batch.sent
            assert await f.store.unseen(urls[3:5]) == [urls[4]]  # h3's URL is known now
            assert f.store.batch.sent > sent  # urls[4] is asked again: still not seen
            assert await other.store.unseen(urls[:5]) == [urls[4]]  # the server's answer
            assert await quiet.store.unseen(urls[:2]) == urls[:2]  # (another crawl)
        finally:
            await other.store.close()


@pytest.mark.unit
def test_what_a_worker_knows_is_seen_is_bounded() -> None:
    known = KnownSeen(cap=10)
    for i in range(100):
        known.add(f"u{i}")
        assert len(known) <= 10
    assert "u99" in known and "u95" in known
    assert "u0" not in known  # forgotten: only asked about again
    known = KnownSeen(cap=10)
    known.update(f"u{i}" for i in range(5))  # the newer half full: it becomes the older
    assert "u0" in known  # asked for: moved back to the newer half
    known.update(f"v{i}" for i in range(4))  # the newer full again: the older dropped
    assert "u0" in known and "u1" not in known
