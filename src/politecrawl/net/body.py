"""Reading a response's body piece by piece, raced with its connection: a broken transfer
coding ends the read at once (``read_some``), and a body slower than ``--min-rate`` is cut
(``read_by``). Split from ``fetch``, which reads the whole body with them.

The race asks aiohttp's connection for its ``closed`` future, which aiohttp makes only when
asked (aio-libs/aiohttp#11107: nobody else waits for it). Once asked for, its exception is
ours to retrieve, whenever the connection ends: a body cut at ``--max-size`` over TLS is
dropped with its connection, which then loses its TLS stream with an error
(``APPLICATION_DATA_AFTER_CLOSE_NOTIFY``) long after the read; left unretrieved, asyncio
printed it with a traceback on stderr ("Future exception was never retrieved"), at every
page cut so.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

import aiohttp

from politecrawl.errors import FetchError

__all__ = ["CHUNK", "BrokenTransferCoding", "TooSlow", "read_by", "read_some"]

CHUNK = 64 * 1024


class TooSlow(FetchError):
    """The body came slower than ``min_rate_bytes`` a second (a drip-fed tarpit)."""

    kind = "too_slow"


class BrokenTransferCoding(FetchError):
    """The server's transfer coding is not valid HTTP/1.1 (RFC 9112 section 7.1): e.g. a
    chunk-size line that is not hexadecimal. Ends the fetch at once."""

    kind = "bad_chunking"


async def read_some(resp: aiohttp.ClientResponse) -> bytes:
    """The next piece of the body; raises ``BrokenTransferCoding`` as soon as the connection
    failed to parse the body.

    aiohttp (3.14) notices a bad chunk-size line only on its connection: the error is set
    there, the connection closed, and a reader waiting for the body is never woken, so the
    fetch would hang until its total timeout. The read is raced with the connection's
    ``closed`` future, and the connection's error, if any, ends it. Bytes already buffered
    are taken without the race: no task and no wait for a piece already here.
    """
    content = resp.content
    buffered = content.read_nowait(CHUNK)  # raises the stream's error, if it has one
    if buffered or content.is_eof():  # no wait, so no race: the usual case, and no task
        return buffered
    conn = resp.connection
    proto = conn.protocol if conn is not None else None
    closed = proto.closed if proto is not None else None
    if proto is None or closed is None:
        return await content.read(CHUNK)
    _retrieve_when_done(closed)
    read = asyncio.ensure_future(resp.content.read(CHUNK))
    waiting: set[asyncio.Future[Any]] = {read, closed}
    try:
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if not read.done():
            err = proto.exception()
            if err is not None:
                raise BrokenTransferCoding(f"broken transfer coding: {err}"[:300])
        return await read
    finally:
        if not read.done():
            read.cancel()


async def read_by(resp: aiohttp.ClientResponse, deadline: float, rate: int) -> bytes:
    """The next piece of the body, if it comes before ``deadline`` (loop time): the moment
    the average rate since the body began falls below ``rate``; else ``TooSlow``."""
    try:
        async with asyncio.timeout_at(deadline) as cm:
            return await read_some(resp)
    except TimeoutError:
        if cm.expired():
            raise TooSlow(f"body slower than {rate} bytes/s (--min-rate)") from None
        raise


# the ``closed`` futures whose end is retrieved already (one callback each, however many
# pieces of the body are read); weak: the set forgets a connection when it is gone
_WATCHED: weakref.WeakSet[asyncio.Future[None]] = weakref.WeakSet()


def _retrieve_when_done(closed: asyncio.Future[None]) -> None:
    """``closed``'s exception, if it ends with one, retrieved when it does: the connection's
    error is the read's to report (``_classify_error``), or nobody's when the body was dropped
    on purpose (the size cap, a non-HTML body); never asyncio's, as a lost exception."""
    if closed not in _WATCHED:
        _WATCHED.add(closed)
        closed.add_done_callback(_retrieved)


def _retrieved(fut: asyncio.Future[None]) -> None:
    if not fut.cancelled():
        fut.exception()
