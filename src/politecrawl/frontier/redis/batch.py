"""Commands a worker's turns ask for at the same time go to the server together.

A worker runs many turns at once, each waiting on its own frontier call. Sent one by one,
every call costs a round trip: a connection taken from the pool, a ``send`` (on loopback the
kernel does the server's receiving there too), a ``recv`` and an event-loop wake-up. The
``Batcher`` keeps one batch on the wire at a time: calls made meanwhile wait in the next
one, which goes as one pipeline (split by node on a cluster) when the first comes back.
Nothing changes for a caller: each gets its own reply or error, and every script is still
one atomic step on one shard (a pipeline is not a transaction: scripts of one batch may
interleave with other workers' calls, as separate calls did).

On a single server the batches go over the batcher's own connection (one batch is on the
wire at a time, so one connection is enough), written at once and read back in order under
one deadline for the whole batch. redis-py's pipeline on a pooled connection costs more than
the round trip it saves on loopback: the pool's condition and lock and its metrics on every
checkout, a timer armed and cancelled around every single reply (its socket timeout), and
its own packing and reply bookkeeping. Measured with ``hiredis`` (one worker, the plain
test web, 5,000 pages, three alternating rounds): about 5 % of a worker's CPU was those
per-reply timers alone. A cluster keeps redis-py's pipeline, which routes each call to its
node.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import hiredis
import redis.asyncio as aioredis
from redis.exceptions import NoScriptError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from politecrawl.frontier.redis.keys import Client, Script

Future = asyncio.Future[Any]

# a batch's replies all come back within this, or the connection counts as lost (redis-py's
# own socket timeout, which this replaces on the batcher's connection, is 5 s per reply)
BATCH_DEADLINE_S = 10.0


class Batcher:
    """Calls on one client, batched while a batch is on the wire (see the module docstring)."""

    def __init__(self, r: Client) -> None:
        self.r = r
        self._own: aioredis.Connection | None = None  # a single server: the batches' own
        if r is not None and not isinstance(r, aioredis.RedisCluster):
            pool = r.connection_pool
            # no per-reply timer: the batch's deadline stands for it (module docstring)
            self._own = pool.connection_class(**{**pool.connection_kwargs, "socket_timeout": None})
        self._next: list[tuple[Script | None, Sequence[Any], Future]] = []
        self._task: asyncio.Task[None] | None = None
        self.batches = 0  # round trips (for benchmarks)
        self.sent = 0  # calls

    def script(self, script: Script, p: str, args: Sequence[Any]) -> asyncio.Future[Any]:
        """``script`` on the shard of prefix ``p``; its reply, in time."""
        return self._add(script, ("EVALSHA", script.sha, 1, p + "box", p, *args))

    def command(self, *args: Any) -> asyncio.Future[Any]:
        """One plain command (its name first), its reply parsed as redis-py parses it."""
        return self._add(None, args)

    def _add(self, script: Script | None, args: Sequence[Any]) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
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
        try:
            if self._own is not None:
                replies = await self._exchange(self._own, [args for _, args, _ in batch])
            elif len(batch) == 1:
                script, args, fut = batch[0]
                replies = [await self._one(script, args)]
            else:
                pipe = self.r.pipeline(transaction=False)
                for _, args, _ in batch:
                    pipe.execute_command(*args)
                replies = list(await pipe.execute(raise_on_error=False))
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
            if isinstance(reply, NoScriptError) and script is not None:
                try:  # the server forgot the script (restarted, flushed): this call by EVAL
                    reply = await self._one(script, args)
                except Exception as exc:  # (the caller's to handle)
                    reply = exc
            if fut.done():  # its caller was cancelled
                continue
            if isinstance(reply, Exception):
                fut.set_exception(reply)
            else:
                fut.set_result(reply)

    async def _exchange(self, conn: aioredis.Connection, calls: list[Sequence[Any]]) -> list[Any]:
        """``calls`` written at once on ``conn`` and their replies read in order (an error
        reply is that call's exception), within ``BATCH_DEADLINE_S``. Any other failure
        leaves the connection closed (redis-py closes it on a failed read or write), so a
        half-read batch never shifts the replies of the next: it reconnects."""
        replies: list[Any] = []
        try:
            async with asyncio.timeout(BATCH_DEADLINE_S):
                # (hiredis packs a call in 3 us, redis-py's own packer in 13: the same bytes)
                packed = b"".join([hiredis.pack_command(tuple(call)) for call in calls])
                await conn.send_packed_command(packed, check_health=False)
                for _ in calls:
                    try:
                        replies.append(await conn.read_response())
                    except ResponseError as exc:
                        replies.append(exc)
        except TimeoutError:
            await conn.disconnect(nowait=True)
            raise RedisTimeoutError(f"no reply within {BATCH_DEADLINE_S:g} s") from None
        callbacks = self.r.response_callbacks
        for i, (args, reply) in enumerate(zip(calls, replies, strict=True)):
            parse = callbacks.get(args[0])
            if parse is not None and not isinstance(reply, Exception):
                replies[i] = parse(reply)
        return replies

    async def aclose(self) -> None:
        if self._own is not None:
            await self._own.disconnect()

    async def _one(self, script: Script | None, args: Sequence[Any]) -> Any:
        if script is None:
            return await self.r.execute_command(*args)
        # ("EVALSHA", sha, 1, p + "box", p, *script_args): the script's own call, which
        # loads it by EVAL where the server lacks it
        return await script(self.r, args[4], args[5:])
