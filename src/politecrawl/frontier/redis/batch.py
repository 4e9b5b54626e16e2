"""Commands a worker's turns ask for at the same time go to the server together.

A worker runs many turns at once, each waiting on its own frontier call. Sent one by one,
every call costs a round trip: a connection taken from the pool, a ``send`` (on loopback the
kernel does the server's receiving there too), a ``recv`` and an event-loop wake-up. The
``Batcher`` keeps one batch on the wire at a time: calls made meanwhile wait in the next
one, which goes as one pipeline (split by node on a cluster) when the first comes back.
Nothing changes for a caller: each gets its own reply or error, and every script is still
one atomic step on one shard (a pipeline is not a transaction: scripts of one batch may
interleave with other workers' calls, as separate calls did).

The batches go over the batcher's own connections, one per server (one batch is on the wire
at a time, so one is enough): each node's calls written at once, then its replies read back
in order (straight from redis-py's hiredis reader), all under one deadline for the whole
batch, kept by one timer that is re-armed only when it comes due (not armed and cancelled
per batch). redis-py's pipeline costs more than the round trip it saves on loopback: the
pool's condition, lock and metrics on every checkout, a timer armed and cancelled around
every single reply (its socket timeout), and its own packing and reply bookkeeping; its
cluster pipeline adds its routing and retry layers. About 5 % of a worker's CPU was the
per-reply timers alone (py-spy, with hiredis).

On a cluster a call goes to the node that serves its key's slot in the client's map. A
node that answers MOVED or ASK (slots moving), TRYAGAIN or CLUSTERDOWN gets that call sent
again by the cluster client itself, which follows the redirect and refreshes its map; a
node that cannot be reached sends the whole batch through redis-py's cluster pipeline, whose
retries ride out a failover (scripts are safe to run again: redis-py's retry did the same).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import hiredis
import redis.asyncio as aioredis
from redis.exceptions import (
    AskError,
    ClusterDownError,
    MovedError,
    NoScriptError,
    ResponseError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from politecrawl.errors import FrontierError
from politecrawl.frontier.redis.keys import Client, Script
from politecrawl.frontier.redis.marks import CHECK_EVERY_S, is_lost_reply

Future = asyncio.Future[Any]

try:  # what redis-py's hiredis reader answers while a reply is incomplete (``_read``)
    from redis._parsers.hiredis import NOT_ENOUGH_DATA
except ImportError:  # (a redis-py without it: replies are read by its read_response)
    NOT_ENOUGH_DATA = None

# a batch's replies all come back within this, or the connection counts as lost (redis-py's
# own socket timeout, which this replaces on the batcher's connection, is 5 s per reply)
BATCH_DEADLINE_S = 10.0
# the waits before a batch is sent again while the server cannot be reached (about 16 s in all)
RECONNECT_WAITS_S = (0.2, 0.5, 1.0, 2.0, 4.0, 8.0)


class ConnectionLost(FrontierError, RedisConnectionError):
    """The server closed the connection or it broke mid-reply. Also redis-py's type, which
    the store maps to ``FrontierError`` and a cluster client fails over on, as for its own."""


class NoReply(FrontierError, RedisTimeoutError):
    """No reply within ``BATCH_DEADLINE_S`` (also redis-py's timeout, for the same reason)."""


class Batcher:
    """Calls on one client, batched while a batch is on the wire (see the module docstring)."""

    def __init__(self, r: Client) -> None:
        self.r = r
        self.cluster = isinstance(r, aioredis.RedisCluster)
        self._conns: dict[str, aioredis.Connection] = {}  # per server (node name): its own
        self._slots: dict[Any, int] = {}  # a cluster's keys: their slots (a crawl has few keys)
        self._next: list[tuple[Script | None, Sequence[Any], Future]] = []
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # the batch deadline: when the batch on the wire was sent, and the one timer
        self._since: float | None = None
        self._watch: asyncio.TimerHandle | None = None
        self._expired = False  # the deadline cancelled the sending task
        self.batches = 0  # round trips (for benchmarks)
        self.sent = 0  # calls
        # set by the store: the calls whose replies say whether every part of the crawl is
        # still there (each shard's mark and the crawl's epoch: marks.py), and what to say
        # when one is not (None: all there). Asked after every reconnect, before anything is
        # sent again (else a node back from a restart without its data had the workers'
        # calls rebuild its shards from nothing and each worker "finish" the crawl, exit 0),
        # when a shard script finds its mark gone, and with a batch every ``CHECK_EVERY_S``.
        self.check: tuple[list[Sequence[Any]], Callable[[list[Any]], str | None]] | None = None
        self._check_at = 0.0  # (loop time) when a batch carries the check next
        self._gone: str | None = None  # the data was gone: every later call hears it

    def script(self, script: Script, p: str, args: Sequence[Any]) -> asyncio.Future[Any]:
        """``script`` on the shard of prefix ``p``; its reply, in time."""
        return self._add(script, ("EVALSHA", script.sha, 1, p + "box", p, *args))

    def command(self, *args: Any) -> asyncio.Future[Any]:
        """One plain command (its name first, then its key), its reply parsed as redis-py
        parses it."""
        return self._add(None, args)

    def _add(self, script: Script | None, args: Sequence[Any]) -> asyncio.Future[Any]:
        loop = self._loop
        if loop is None or loop.is_closed():  # (asking each time costs a getpid() call)
            loop = self._loop = asyncio.get_running_loop()
            self._watch = None  # (a timer of a loop that closed never fires)
        fut: asyncio.Future[Any] = loop.create_future()
        self._next.append((script, args, fut))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._drain())
            self._task.add_done_callback(self._stopped)
        return fut

    async def _drain(self) -> None:
        while self._next:
            batch, self._next = self._next, []
            await self._send(batch)
            # the callers just answered run before the next batch goes: their next calls
            # (a turn's next step) join it
            await asyncio.sleep(0)

    def _stopped(self, task: asyncio.Task[None]) -> None:
        """The sending task ended; if it was cancelled (the loop closes), so are the calls
        still waiting for it, rather than left pending."""
        if task.cancelled() and task is self._task:
            waiting, self._next = self._next, []
            for _, _, fut in waiting:
                fut.cancel()

    async def _send(self, batch: list[tuple[Script | None, Sequence[Any], Future]]) -> None:
        self.batches += 1
        self.sent += len(batch)
        calls = [args for _, args, _ in batch]
        try:
            try:
                replies = await self._exchange_riding_out(calls)
            except (RedisConnectionError, RedisTimeoutError):
                if not self.cluster:
                    raise
                replies = await self._pipeline(calls)  # (module docstring: a failover)
                self._check_at = 0.0  # (another node may serve the slots now: the next batch)
        except BaseException as exc:  # the connection failed: every caller of the batch hears it
            for _, _, fut in batch:
                if fut.done():
                    continue
                if isinstance(exc, Exception):
                    fut.set_exception(exc)
                else:  # this task was cancelled (the loop closes): so are its callers
                    fut.cancel()
            if not isinstance(exc, Exception):
                raise
            return
        for (script, args, fut), reply in zip(batch, replies, strict=True):
            if isinstance(reply, _SEND_AGAIN) and (script is not None or self.cluster):
                try:  # a script the server forgot (restarted, flushed) goes by EVAL; a call
                    # the cluster redirected, by the cluster client (module docstring)
                    reply = await self._one(script, args)
                except Exception as exc:  # (the caller's to handle)
                    reply = exc
            if fut.done():  # its caller was cancelled
                continue
            if isinstance(reply, Exception):
                if is_lost_reply(reply):  # its shard's mark is gone: what else is?
                    reply = FrontierError(await self._lost(str(reply)))
                fut.set_exception(reply)
            else:
                fut.set_result(reply)

    async def _exchange_riding_out(self, calls: list[Sequence[Any]]) -> list[Any]:
        """``_exchange``, sent again on a new connection while the server cannot be reached,
        for up to ``sum(RECONNECT_WAITS_S)`` (a restart: every worker stopped at once on a
        0.5 s one, "lost the frontier", and the crawl with them). A batch whose replies were
        lost may have run: its scripts are safe to run again (module docstring). No reply in
        time (``NoReply``) is not ridden out: a server that hangs is no restart."""
        if self._gone is not None:
            raise FrontierError(self._gone)
        broke = False
        for wait in RECONNECT_WAITS_S:
            try:
                if broke:
                    await self._still_there()
                return await self._exchange_checked(calls)
            except NoReply:
                raise
            except RedisConnectionError:
                broke = True
                await asyncio.sleep(wait)
        if broke:
            await self._still_there()
        return await self._exchange(calls)  # the last try: its failure is the caller's

    async def _exchange_checked(self, calls: list[Sequence[Any]]) -> list[Any]:
        """``_exchange``; every ``CHECK_EVERY_S`` the marks' check goes with it (no round trip
        of its own: the shard scripts check their own mark; this is for the crawl's own slot
        and for shards only read from)."""
        if self.check is None or self._loop_now() < self._check_at:
            return await self._exchange(calls)
        extra, judge = self.check
        replies = await self._exchange([*calls, *extra])
        await self._judge(extra, judge, replies[len(calls) :])
        return replies[: len(calls)]

    async def _judge(
        self,
        calls: Sequence[Sequence[Any]],
        judge: Callable[[list[Any]], str | None],
        replies: list[Any],
    ) -> None:
        """The check's verdict on its ``replies``: raises ``FrontierError`` (and every later
        call hears it) if a part of the crawl is gone."""
        self._check_at = self._loop_now() + CHECK_EVERY_S
        for i, reply in enumerate(replies):
            if isinstance(reply, _SEND_AGAIN) and self.cluster:  # (a stale map: redirected)
                try:
                    replies[i] = await self._one(None, calls[i])
                except Exception as exc:  # (the redirect failed: no verdict now, below)
                    replies[i] = exc
            if isinstance(replies[i], Exception):  # no verdict now (the scripts still guard)
                self._check_at = 0.0
                return
        gone = judge(replies)
        if gone is not None:
            self._gone = gone
            raise FrontierError(gone)

    async def _still_there(self) -> None:
        """After a reconnect: whether every part of the crawl is still there (``check``)."""
        if self.check is not None:
            extra, judge = self.check
            await self._judge(extra, judge, await self._exchange(list(extra)))

    async def _lost(self, reply: str) -> str:
        """A shard script found its shard without its mark: the line to stop with, naming
        every part lost (one check more), else the script's own reply."""
        if self._gone is None:
            try:
                await self._still_there()
            except FrontierError:
                pass
            except Exception:  # (the check itself failed: the script's reply is the news)
                self._gone = f"the crawl's frontier lost part of its data ({reply})"
        return self._gone or f"the crawl's frontier lost part of its data ({reply})"

    def _connection(self, name: str, cls: type[aioredis.Connection], kw: dict[str, Any]) -> Any:
        conn = self._conns.get(name)
        if conn is None:
            # no per-reply timer: the batch's deadline stands for it (module docstring)
            conn = self._conns[name] = cls(**{**kw, "socket_timeout": None})
        return conn

    def _route(self, calls: list[Sequence[Any]]) -> list[tuple[Any, list[int], dict[str, Any]]]:
        """(connection, the calls' indexes, reply parsers) per server the calls go to."""
        if not self.cluster:
            pool = self.r.connection_pool
            conn = self._connection("", pool.connection_class, pool.connection_kwargs)
            return [(conn, list(range(len(calls))), self.r.response_callbacks)]
        groups: dict[str, tuple[Any, list[int], dict[str, Any]]] = {}
        for i, call in enumerate(calls):
            key = call[3] if call[0] == "EVALSHA" else call[1]
            slot = self._slots.get(key)
            if slot is None:
                slot = self._slots[key] = self.r.keyslot(key)
            node = self.r.nodes_manager.get_node_from_slot(slot)
            group = groups.get(node.name)
            if group is None:
                conn = self._connection(node.name, node.connection_class, node.connection_kwargs)
                group = groups[node.name] = (conn, [], node.response_callbacks)
            group[1].append(i)
        return list(groups.values())

    async def _exchange(self, calls: list[Sequence[Any]]) -> list[Any]:
        """``calls`` written at once to each server they go to, then their replies read in
        order (an error reply is that call's exception), within ``BATCH_DEADLINE_S``. Any
        failure closes every connection of the batch, so a half-read batch never shifts the
        replies of the next: it reconnects."""
        groups = self._route(calls)
        replies: list[Any] = [None] * len(calls)
        self._since = self._loop_now()
        if self._watch is None:
            self._watch = asyncio.get_running_loop().call_later(BATCH_DEADLINE_S, self._check)
        try:
            for conn, idx, _ in groups:
                # (hiredis packs a call in 3 us, redis-py's own packer in 13: the same bytes)
                packed = b"".join([hiredis.pack_command(tuple(calls[i])) for i in idx])
                await conn.send_packed_command(packed, check_health=False)
            for conn, idx, _ in groups:
                for i, reply in zip(idx, await _read(conn, len(idx)), strict=True):
                    replies[i] = reply
        except BaseException as exc:  # (a cancel too) mid-reply: the connections are dropped
            for conn, _, _ in groups:
                await conn.disconnect(nowait=True)
            if isinstance(exc, asyncio.CancelledError) and self._expired:
                self._expired = False
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
                raise NoReply(f"no reply within {BATCH_DEADLINE_S:g} s") from None
            raise
        finally:
            self._since = None
        for _, idx, parsers in groups:
            for i in idx:
                parse = parsers.get(calls[i][0])
                if parse is not None and not isinstance(replies[i], Exception):
                    replies[i] = parse(replies[i])
        return replies

    def _loop_now(self) -> float:
        return self._loop.time() if self._loop is not None else asyncio.get_running_loop().time()

    def _check(self) -> None:
        """The batch deadline's one timer (not one per batch): a batch on the wire for
        ``BATCH_DEADLINE_S`` is cancelled (``_exchange`` turns that into a timeout); else the
        timer waits for the rest of the current batch's time, or stops if none is sent."""
        self._watch = None
        since = self._since
        if since is None:
            return
        left = since + BATCH_DEADLINE_S - self._loop_now()
        if left > 0:
            self._watch = asyncio.get_running_loop().call_later(left, self._check)
        elif self._task is not None and not self._task.done():
            self._expired = True
            self._task.cancel()

    async def _pipeline(self, calls: list[Sequence[Any]]) -> list[Any]:
        pipe = self.r.pipeline(transaction=False)
        for args in calls:
            pipe.execute_command(*args)
        return list(await pipe.execute(raise_on_error=False))

    async def aclose(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        conns, self._conns = self._conns, {}
        for conn in conns.values():
            await conn.disconnect()

    async def _one(self, script: Script | None, args: Sequence[Any]) -> Any:
        if script is None:
            return await self.r.execute_command(*args)
        # ("EVALSHA", sha, 1, p + "box", p, *script_args): the script's own call, which
        # loads it by EVAL where the server lacks it
        return await script(self.r, args[4], args[5:])


async def _read(conn: Any, n: int) -> list[Any]:
    """``n`` replies from ``conn``, an error reply as its exception (not raised). Straight
    from redis-py's hiredis reader where the connection has one: its ``read_response`` per
    reply (timeouts, health-check times, error wrapping) cost more than the parsing."""
    parser = getattr(conn, "_parser", None)
    reader = getattr(parser, "_reader", None)
    stream = getattr(parser, "_stream", None)
    if (
        NOT_ENOUGH_DATA is None
        or not isinstance(reader, hiredis.Reader)
        or not isinstance(stream, asyncio.StreamReader)
    ):
        return [await _read_one(conn) for _ in range(n)]
    out: list[Any] = []
    gets = reader.gets
    try:
        while len(out) < n:
            reply = gets()
            if reply is NOT_ENOUGH_DATA:
                data = await stream.read(65536)
                if not data:
                    raise ConnectionLost("Connection closed by server.")
                reader.feed(data)
            elif isinstance(reply, RedisConnectionError):  # (e.g. LOADING: redis-py raises it)
                raise reply
            else:
                out.append(reply)
    except OSError as exc:
        raise ConnectionLost(f"Error while reading from the server: {exc}") from exc
    return out


async def _read_one(conn: Any) -> Any:
    try:
        return await conn.read_response()
    except ResponseError as exc:
        return exc


# error replies after which a call goes again (``Batcher._send``)
_SEND_AGAIN = (NoScriptError, MovedError, AskError, TryAgainError, ClusterDownError)
