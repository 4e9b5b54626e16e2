"""A deliberately hostile HTTP/1.x server for tests: raw asyncio TCP on 127.0.0.1.

``aiohttp.web`` cannot send malformed HTTP, so this server writes bytes itself (IPv6 loopback
``::1`` on request, for the address-guard tests). It accepts
any Host header (reach it by IP or through ``--resolve "*.hostile.test:PORT:127.0.0.1"``); the
request path picks the misbehaviour (``BEHAVIOURS`` lists them, ``docs/hostile.md`` says what
politecrawl makes of each). Nothing large is ever held in memory: endless bodies, the 10 GB
sparse body and the decompression bombs are generated while they are sent.

Every connection ends by itself: a handler stops when the client goes away, after
``max_stream_s`` seconds or after ``max_stream_bytes`` bytes, whichever comes first, so a
test whose client forgets to hang up still finishes. ``stop()`` closes whatever is left.

Every request is recorded in ``hits`` (path, Host, User-Agent, headers, bytes sent, how the
handler ended), so tests can prove the client hung up (``ended_by == "client_gone"``) or
that a refused URL never reached the server (no hit, ``connections`` unchanged).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import email.utils
import random
import socket
import struct
import sys
import time
import zlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self

import brotli

__all__ = [
    "BEHAVIOURS",
    "BOMB_INFLATED",
    "HOSTILE_LINKS",
    "INDEX_SKIP",
    "Hit",
    "HostileWeb",
    "bomb_chunks",
    "bomb_length",
    "deep_nesting",
    "host_slug",
    "index_targets",
    "main",
    "many_links",
]

GIB = 1024**3
MIB = 1024**2

_ZEROS = bytes(MIB)
_HTML = "text/html; charset=utf-8"

HOSTILE_LINKS: tuple[str, ...] = (
    "/../../etc/passwd",
    "/..%2F..%2Fetc%2Fpasswd",
    "/%2e%2e/%2e%2e/etc/shadow",
    "..\\..\\windows\\win.ini",
    "/a/../../../../tmp/pwned.html",
    "/x%00y.html",
    "/%0d%0aSet-Cookie:%20x=y",
    "/aux.html",
    "/" + "A" * 300 + ".html",
    "file:///etc/passwd",
    "ftp://127.0.0.1/pub/",
    "data:text/html,<a href=x>x</a>",
    "javascript:alert(1)",
    "mailto:root@localhost",
    "gopher://127.0.0.1:70/",
    "ws://127.0.0.1/socket",
)
"""Links on ``/hostile-links``: path traversal, odd bytes, and schemes never to be fetched."""


@dataclass(slots=True)
class Hit:
    """One request as the server saw it, and how the server's side of it ended."""

    path: str
    target: str
    host: str
    user_agent: str
    headers: dict[str, str]
    start: float
    end: float = 0.0
    sent: int = 0
    ended_by: str = "running"  # done | client_gone | limit | stopped


class _ClientGone(Exception):
    """The client closed or reset the connection."""


class _Limit(Exception):
    """The per-connection time or byte budget ran out."""


@dataclass(slots=True)
class _Conn:
    """The writing side of one connection, with the server's own budget."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    hit: Hit
    web: HostileWeb
    deadline: float = field(default=0.0)

    async def send(self, data: bytes) -> None:
        if self.hit.sent + len(data) > self.web.max_stream_bytes:
            raise _Limit("byte budget")
        if time.monotonic() > self.deadline:
            raise _Limit("time budget")
        if self.writer.transport.is_closing():
            raise _ClientGone()
        self.writer.write(data)
        self.hit.sent += len(data)
        try:
            await self.writer.drain()
        except (ConnectionError, OSError) as exc:
            raise _ClientGone() from exc

    async def sleep(self, seconds: float) -> None:
        """Sleep, but notice a client that hangs up meanwhile."""
        until = time.monotonic() + seconds
        if until > self.deadline:
            raise _Limit("time budget")
        while (left := until - time.monotonic()) > 0:
            try:
                data = await asyncio.wait_for(self.reader.read(1024), left)
            except TimeoutError:
                return
            except (ConnectionError, OSError) as exc:
                raise _ClientGone() from exc
            if not data:
                raise _ClientGone()

    async def head(self, status_line: str, headers: list[tuple[str, str]]) -> None:
        lines = [status_line] + [f"{k}: {v}" for k, v in headers]
        await self.send(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))

    async def reply(
        self,
        status: int,
        reason: str,
        body: bytes,
        ctype: str = _HTML,
        extra: list[tuple[str, str]] | None = None,
    ) -> None:
        headers = [
            ("Content-Type", ctype),
            ("Content-Length", str(len(body))),
            ("Connection", "close"),
            *(extra or []),
        ]
        await self.head(f"HTTP/1.1 {status} {reason}", headers)
        await self.send(body)

    def reset(self) -> None:
        """Abort with a TCP RST (SO_LINGER 0) instead of an orderly FIN."""
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()


_Handler = Callable[[_Conn], Awaitable[None]]


def _page(title: str, body: str) -> bytes:
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title>'
        f"</head>\n<body>\n<h1>{title}</h1>\n{body}\n</body></html>\n"
    ).encode()


_OK_PAGE = _page("ok", '<p>A normal page.</p>\n<a href="/ok-linked">next</a>')


async def _stream(conn: _Conn, total: int | None, chunk: bytes) -> None:
    """Send ``chunk`` repeatedly: ``total`` bytes, or forever when None."""
    sent = 0
    while total is None or sent < total:
        part = chunk if total is None or total - sent >= len(chunk) else chunk[: total - sent]
        await conn.send(part)
        sent += len(part)


# -- the behaviours ----------------------------------------------------------------------


async def _ok(conn: _Conn) -> None:
    await conn.reply(200, "OK", _OK_PAGE)


async def _robots(conn: _Conn) -> None:
    await conn.reply(200, "OK", b"User-agent: *\nAllow: /\n", "text/plain")


async def _slow_headers(conn: _Conn) -> None:
    """Slowloris: the status line, then header bytes one per second, never finishing."""
    await conn.send(b"HTTP/1.1 200 OK\r\n")
    for byte in b"X-Slow: " + b"a" * 100_000:
        await conn.sleep(1.0)
        await conn.send(bytes([byte]))


async def _silent(conn: _Conn) -> None:
    """Reads the request, then says nothing at all (until the client gives up)."""
    while True:
        await conn.sleep(1.0)


async def _headers_then_silence(conn: _Conn) -> None:
    await conn.head("HTTP/1.1 200 OK", [("Content-Type", _HTML), ("Content-Length", "1000")])
    while True:
        await conn.sleep(1.0)


async def _close_immediately(conn: _Conn) -> None:
    """Closes the connection without a byte of response."""


async def _endless_100(conn: _Conn) -> None:
    """Interim ``100 Continue`` responses, forever, quickly: no final response ever comes."""
    while True:
        await conn.send(b"HTTP/1.1 100 Continue\r\n\r\n" * 100)
        await conn.sleep(0.01)


async def _switching_101(conn: _Conn) -> None:
    """``101 Switching Protocols`` nobody asked for, then endless bytes of another protocol."""
    await conn.head(
        "HTTP/1.1 101 Switching Protocols", [("Upgrade", "websocket"), ("Connection", "Upgrade")]
    )
    await _stream(conn, None, b"\x81\x7e" + bytes(60_000))


async def _negative_length(conn: _Conn) -> None:
    await conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: -5\r\n\r\nhi")


async def _status_999(conn: _Conn) -> None:
    await conn.reply(999, "Whatever", _OK_PAGE)


async def _slow_body(conn: _Conn) -> None:
    await conn.head("HTTP/1.1 200 OK", [("Content-Type", _HTML), ("Content-Length", "100000")])
    while True:
        await conn.send(b"x")
        await conn.sleep(1.0)


async def _endless_chunked(conn: _Conn) -> None:
    await conn.head("HTTP/1.1 200 OK", [("Content-Type", _HTML), ("Transfer-Encoding", "chunked")])
    piece = b"<p>" + b"endless " * 2000 + b"</p>\n"
    frame = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    await _stream(conn, None, frame)


async def _endless_close(conn: _Conn) -> None:
    """HTTP/1.1, no Content-Length, no chunking: the body ends at close, which never comes."""
    await conn.head("HTTP/1.1 200 OK", [("Content-Type", _HTML), ("Connection", "close")])
    await _stream(conn, None, b"<p>" + b"forever " * 8000 + b"</p>\n")


async def _sparse_10g(conn: _Conn) -> None:
    await conn.head("HTTP/1.1 200 OK", [("Content-Type", _HTML), ("Content-Length", str(10 * GIB))])
    await _stream(conn, 10 * GIB, bytes(256 * 1024))


async def _big_html(conn: _Conn) -> None:
    size = 50 * 1000 * 1000
    await conn.head("HTTP/1.1 200 OK", [("Content-Type", _HTML), ("Content-Length", str(size))])
    row = b'<p>filler text <a href="/ok">ok</a></p>\n' * 1000
    await _stream(conn, size, row)


async def _octet_50m(conn: _Conn) -> None:
    size = 50 * 1000 * 1000
    await conn.head(
        "HTTP/1.1 200 OK",
        [("Content-Type", "application/octet-stream"), ("Content-Length", str(size))],
    )
    await _stream(conn, size, bytes(range(256)) * 256)


async def _cl_long(conn: _Conn) -> None:
    """Content-Length promises 100000 bytes; 1000 come, then the connection closes."""
    await conn.head("HTTP/1.1 200 OK", [("Content-Type", _HTML), ("Content-Length", "100000")])
    await conn.send(_OK_PAGE + b" " * (1000 - len(_OK_PAGE)))


async def _cl_short(conn: _Conn) -> None:
    """Content-Length says 10; 5000 bytes come (a response-splitting attempt at the end)."""
    await conn.head("HTTP/1.1 200 OK", [("Content-Type", _HTML), ("Content-Length", "10")])
    smuggled = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nevil!"
    await conn.send(b"<p>tenbyt>" + b"x" * (5000 - 10 - len(smuggled)) + smuggled)
    await conn.sleep(1.0)


async def _reset_mid_body(conn: _Conn) -> None:
    await conn.head("HTTP/1.1 200 OK", [("Content-Type", _HTML), ("Content-Length", "100000")])
    await conn.send(b"<p>" + b"r" * 9997)
    await asyncio.sleep(0.05)
    conn.reset()


async def _bad_chunk(conn: _Conn) -> None:
    await conn.head("HTTP/1.1 200 OK", [("Content-Type", _HTML), ("Transfer-Encoding", "chunked")])
    await conn.send(b"5\r\nhello\r\nzz-not-hex\r\nbroken\r\n0\r\n\r\n")


async def _http10(conn: _Conn) -> None:
    """HTTP/1.0, no Content-Length: the body is whatever comes before the close."""
    await conn.head("HTTP/1.0 200 OK", [("Content-Type", _HTML)])
    await conn.send(_page("http/1.0", '<a href="/ok">ok</a>'))


async def _bad_status(conn: _Conn) -> None:
    await conn.send(b"HTTP/1.1 2OO Okay\r\nContent-Type: text/html\r\nContent-Length: 2\r\n\r\nhi")


async def _not_http(conn: _Conn) -> None:
    await conn.send(b"SSH-2.0-OpenSSH_9.6\r\n\x00\x01\x02 definitely not HTTP\r\n\r\n")


async def _header_no_colon(conn: _Conn) -> None:
    await conn.send(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Broken header no colon\r\n"
        b"Content-Length: 2\r\n\r\nhi"
    )


async def _huge_header(conn: _Conn) -> None:
    await conn.send(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Huge: "
        + b"h" * (100 * 1024)
        + b"\r\nContent-Length: 2\r\n\r\nhi"
    )


async def _nul_header(conn: _Conn) -> None:
    await conn.send(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Nul: a\x00b\r\n"
        b"Content-Length: 2\r\n\r\nhi"
    )


async def _many_headers(conn: _Conn) -> None:
    """20,000 small headers (about 300 KB of header block)."""
    lines = b"".join(b"X-H%d: v\r\n" % i for i in range(20_000))
    await conn.send(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n" + lines + b"Content-Length: 2\r\n\r\nhi"
    )


async def _conflicting_length(conn: _Conn) -> None:
    await conn.send(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2\r\n"
        b"Content-Length: 20\r\n\r\nhi"
    )


def _gzip(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def _deflate(data: bytes, raw: bool) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS if raw else zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


ENCODED_PAGE = _page("encoded", "<p>compressed " + "words " * 500 + '</p><a href="/ok">ok</a>')
"""The HTML that ``/gzip``, ``/deflate-zlib``, ``/deflate-raw`` and ``/br`` encode."""


def _encoded(encoding: str) -> _Handler:
    body = {
        "gzip": _gzip(ENCODED_PAGE),
        "deflate-zlib": _deflate(ENCODED_PAGE, raw=False),
        "deflate-raw": _deflate(ENCODED_PAGE, raw=True),
        "br": brotli.compress(ENCODED_PAGE),
    }[encoding]
    header = "deflate" if encoding.startswith("deflate") else encoding

    async def handler(conn: _Conn) -> None:
        await conn.reply(200, "OK", body, extra=[("Content-Encoding", header)])

    return handler


def _gf2_times(mat: list[int], vec: int) -> int:
    total, i = 0, 0
    while vec:
        if vec & 1:
            total ^= mat[i]
        vec >>= 1
        i += 1
    return total


def _crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC-32 of A+B from CRC(A), CRC(B) and len(B) (zlib's crc32_combine, which Python lacks)."""
    if len2 <= 0:
        return crc1
    odd = [0xEDB88320] + [1 << n for n in range(31)]
    even = [_gf2_times(odd, odd[n]) for n in range(32)]
    odd = [_gf2_times(even, even[n]) for n in range(32)]
    while True:
        even = [_gf2_times(odd, odd[n]) for n in range(32)]
        if len2 & 1:
            crc1 = _gf2_times(even, crc1)
        len2 >>= 1
        if not len2:
            break
        odd = [_gf2_times(even, even[n]) for n in range(32)]
        if len2 & 1:
            crc1 = _gf2_times(odd, crc1)
        len2 >>= 1
        if not len2:
            break
    return crc1 ^ crc2


def _crc32_zeros(n_mib: int) -> int:
    """CRC-32 of ``n_mib`` MiB of zeros without touching them (square and multiply)."""
    crc, block, size = 0, zlib.crc32(_ZEROS), MIB
    while n_mib:
        if n_mib & 1:
            crc = _crc32_combine(crc, block, size)
        block = _crc32_combine(block, block, size)
        size *= 2
        n_mib >>= 1
    return crc


def _bomb_parts(kind: str) -> tuple[bytes, bytes, bytes]:
    """(head, segment, tail) of a stream inflating to zeros, 1 MiB per segment.

    After a full flush the compressor's output for the next MiB of zeros no longer depends
    on what came before, so one segment repeated N times is a valid stream of N MiB.
    """
    if kind == "gzip":
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        head = c.compress(_ZEROS) + c.flush(zlib.Z_FULL_FLUSH)
        seg = c.compress(_ZEROS) + c.flush(zlib.Z_FULL_FLUSH)
        tail = c.flush(zlib.Z_FINISH)[:-8]  # without the trailer (CRC, size): see bomb_chunks
        return head, seg, tail
    b = brotli.Compressor(quality=5)
    head = b.process(_ZEROS) + b.flush()
    seg = b.process(_ZEROS) + b.flush()
    return head, seg, b.finish()


_BOMB = {kind: _bomb_parts(kind) for kind in ("gzip", "br")}
BOMB_INFLATED = 10 * GIB
"""What ``/gzip-bomb`` and ``/brotli-bomb`` inflate to (zeros)."""


def bomb_length(kind: str, n_mib: int) -> int:
    head, seg, tail = _BOMB[kind]
    return len(head) + (n_mib - 1) * len(seg) + len(tail) + (8 if kind == "gzip" else 0)


def bomb_chunks(kind: str, n_mib: int, batch: int = 64) -> Iterator[bytes]:
    """A complete, valid ``kind`` ("gzip" or "br") stream of ``n_mib`` MiB of zeros, lazily."""
    head, seg, tail = _BOMB[kind]
    yield head
    for i in range(1, n_mib, batch):
        yield seg * min(batch, n_mib - i)
    if kind == "gzip":
        tail += struct.pack("<II", _crc32_zeros(n_mib), (n_mib * MIB) & 0xFFFFFFFF)
    yield tail


def _bomb(kind: str) -> _Handler:
    n = BOMB_INFLATED // MIB

    async def handler(conn: _Conn) -> None:
        await conn.head(
            "HTTP/1.1 200 OK",
            [
                ("Content-Type", _HTML),
                ("Content-Encoding", kind),
                ("Content-Length", str(bomb_length(kind, n))),
            ],
        )
        for chunk in bomb_chunks(kind, n):
            await conn.send(chunk)

    return handler


async def _corrupt_gzip(conn: _Conn) -> None:
    body = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + bytes(random.Random(7).randbytes(2000))
    await conn.reply(200, "OK", body, extra=[("Content-Encoding", "gzip")])


async def _unknown_encoding(conn: _Conn) -> None:
    await conn.reply(200, "OK", b"(\xb5/\xfd garbage", extra=[("Content-Encoding", "zstd-ish")])


async def _binary_html(conn: _Conn) -> None:
    # seeded by the full target: each URL variant its own bytes (distinct pages, not duplicates)
    await conn.reply(200, "OK", random.Random(f"11/{conn.hit.target}").randbytes(256 * 1024))


INVALID_UTF8 = (
    b"<html><head><title>bad \xff\xfe utf-8</title></head><body>\xc3\x28 \xa0\xa1 "
    b'\xe2\x28\xa1 \xf0\x28\x8c\xbc \xed\xa0\x80 <a href="/ok\xff\xfe">x</a>'
    b'<a href="/ok">ok</a></body></html>'
)
"""``/invalid-utf8``: overlong, truncated and surrogate sequences, also inside an href."""


async def _invalid_utf8(conn: _Conn) -> None:
    await conn.reply(200, "OK", INVALID_UTF8)


def deep_nesting(depth: int = 100_000) -> bytes:
    """``depth`` nested ``<div>`` with a link at the bottom."""
    return (
        b"<!DOCTYPE html><html><body>"
        + b"<div>" * depth
        + b'<a href="/ok">deep</a>'
        + b"</div>" * depth
        + b"</body></html>"
    )


async def _deep_nesting(conn: _Conn) -> None:
    await conn.reply(200, "OK", deep_nesting())


def many_links(n: int = 1_000_000) -> bytes:
    """A page with ``n`` distinct links (about 24 bytes each)."""
    rows = b"".join(b'<a href="/l/%d">%d</a>\n' % (i, i) for i in range(n))
    return b"<!DOCTYPE html><html><body>" + rows + b"</body></html>"


async def _million_links(conn: _Conn) -> None:
    await conn.head("HTTP/1.1 200 OK", [("Content-Type", _HTML), ("Connection", "close")])
    await conn.send(b"<!DOCTYPE html><html><body>")
    for start in range(0, 1_000_000, 10_000):
        await conn.send(
            b"".join(b'<a href="/l/%d">%d</a>\n' % (i, i) for i in range(start, start + 10_000))
        )
    await conn.send(b"</body></html>")


async def _hostile_links(conn: _Conn) -> None:
    links = "\n".join(f'<a href="{h}">x</a>' for h in HOSTILE_LINKS)
    await conn.reply(200, "OK", _page("hostile links", links))


async def _redirect_301(conn: _Conn) -> None:
    await conn.reply(301, "Moved Permanently", b"moved", "text/plain", [("Location", "/ok")])


def _redirect_to(location: Callable[[_Conn], str], status: int = 302) -> _Handler:
    async def handler(conn: _Conn) -> None:
        await conn.reply(status, "Found", b"", "text/plain", [("Location", location(conn))])

    return handler


def _endless_redirect(conn: _Conn) -> str:
    n = int(conn.hit.path.rsplit("/", 1)[1] or 0) if conn.hit.path[-1:].isdigit() else 0
    return f"/redirect-endless/{n + 1}"


async def _retry_after_seconds(conn: _Conn) -> None:
    await conn.reply(503, "Service Unavailable", b"busy", "text/plain", [("Retry-After", "120")])


async def _retry_after_date(conn: _Conn) -> None:
    when = email.utils.formatdate(time.time() + 3600, usegmt=True)
    await conn.reply(429, "Too Many Requests", b"slow down", "text/plain", [("Retry-After", when)])


async def _index(conn: _Conn) -> None:
    """Links to every behaviour, each on its own host; ``?skip=slug,slug`` leaves some out."""
    name = conn.hit.host.rsplit(":", 1)[0] if not conn.hit.host.startswith("[") else ""
    suffix = name.partition(".")[2] if "." in name and not name[-1:].isdigit() else ""
    query = conn.hit.target.partition("?")[2]
    skip = {s for part in query.split("&") if part.startswith("skip=") for s in part[5:].split(",")}
    targets = index_targets(suffix or "hostile.test", conn.web.port)
    links = "\n".join(
        f'<a href="{u}">{p}</a>' for p, u in targets.items() if host_slug(p) not in skip
    )
    await conn.reply(200, "OK", _page("hostile index", links))


BEHAVIOURS: dict[str, tuple[_Handler, str]] = {
    "/": (_ok, "a normal small HTML page"),
    "/index": (_index, "links every other behaviour, each on its own host (see index_targets)"),
    "/ok": (_ok, "a normal small HTML page"),
    "/robots.txt": (_robots, "allows everything"),
    "/slow-headers": (_slow_headers, "status line, then one header byte per second, forever"),
    "/silent": (_silent, "reads the request, never answers"),
    "/headers-then-silence": (_headers_then_silence, "headers (Content-Length 1000), then nothing"),
    "/close-immediately": (_close_immediately, "closes the connection without answering"),
    "/endless-100": (_endless_100, "'100 Continue' interim responses, forever"),
    "/switching-101": (_switching_101, "unrequested '101 Switching Protocols', endless bytes"),
    "/negative-length": (_negative_length, "Content-Length: -5"),
    "/status-999": (_status_999, "status code 999"),
    "/slow-body": (_slow_body, "headers (Content-Length 100000), then one body byte per second"),
    "/endless-chunked": (_endless_chunked, "chunked body that never ends"),
    "/endless-close": (_endless_close, "no Content-Length, no chunking, never closes"),
    "/sparse-10g": (_sparse_10g, "Content-Length 10 GiB of zeros (text/html)"),
    "/big-html": (_big_html, "a 50 MB HTML page"),
    "/octet-50m": (_octet_50m, "50 MB application/octet-stream"),
    "/cl-long": (_cl_long, "Content-Length 100000, 1000 bytes sent, then close"),
    "/cl-short": (_cl_short, "Content-Length 10, 5000 bytes sent (a smuggled response inside)"),
    "/reset-mid-body": (_reset_mid_body, "Content-Length 100000, 10000 bytes, then TCP RST"),
    "/bad-chunk": (_bad_chunk, "chunked body with a non-hex chunk size"),
    "/http10": (_http10, "HTTP/1.0 without Content-Length: the body ends at close"),
    "/bad-status": (_bad_status, "status line 'HTTP/1.1 2OO Okay'"),
    "/not-http": (_not_http, "an SSH banner and binary bytes instead of HTTP"),
    "/header-no-colon": (_header_no_colon, "a header line without a colon"),
    "/huge-header": (_huge_header, "one 100 KiB header line"),
    "/nul-header": (_nul_header, "a NUL byte in a header value"),
    "/many-headers": (_many_headers, "20,000 header lines"),
    "/conflicting-length": (_conflicting_length, "two different Content-Length headers"),
    "/gzip": (_encoded("gzip"), "HTML, Content-Encoding gzip"),
    "/deflate-zlib": (_encoded("deflate-zlib"), "HTML, deflate with the zlib wrapper"),
    "/deflate-raw": (_encoded("deflate-raw"), "HTML, deflate without the zlib wrapper"),
    "/br": (_encoded("br"), "HTML, Content-Encoding br"),
    "/gzip-bomb": (_bomb("gzip"), "10.4 MB of gzip inflating to 10 GiB, generated on the fly"),
    "/brotli-bomb": (_bomb("br"), "about 140 KB of brotli inflating to 10 GiB"),
    "/corrupt-gzip": (_corrupt_gzip, "a gzip header followed by random bytes"),
    "/unknown-encoding": (_unknown_encoding, "a Content-Encoding nobody asked for"),
    "/binary-html": (_binary_html, "256 KiB of random bytes served as text/html"),
    "/invalid-utf8": (_invalid_utf8, "text/html; charset=utf-8 with invalid sequences"),
    "/deep-nesting": (_deep_nesting, "100,000 nested <div>"),
    "/million-links": (_million_links, "1,000,000 links (about 24 MB, no Content-Length)"),
    "/hostile-links": (_hostile_links, "links with ../ traversal, odd bytes, non-http schemes"),
    "/redirect-301": (_redirect_301, "301 to /ok"),
    "/loop/a": (_redirect_to(lambda c: "/loop/b"), "302 to /loop/b"),
    "/loop/b": (_redirect_to(lambda c: "/loop/a"), "302 to /loop/a"),
    "/redirect-endless/": (_redirect_to(_endless_redirect), "/redirect-endless/N: 302 to N+1"),
    "/redirect-to-loopback": (
        _redirect_to(lambda c: f"http://127.0.0.1:{c.web.port}/ok"),
        "302 to http://127.0.0.1:PORT/ok",
    ),
    "/redirect-to-mapped": (
        _redirect_to(lambda c: f"http://[::ffff:127.0.0.1]:{c.web.port}/ok"),
        "302 to http://[::ffff:127.0.0.1]:PORT/ok",
    ),
    "/redirect-to-name": (
        _redirect_to(lambda c: f"http://internal.test:{c.web.port}/ok"),
        "302 to http://internal.test:PORT/ok (a name --resolve maps to loopback)",
    ),
    "/retry-after-seconds": (_retry_after_seconds, "503 with Retry-After: 120"),
    "/retry-after-date": (_retry_after_date, "429 with Retry-After as an HTTP date 1 h ahead"),
}
"""Path -> (handler, what it does). A path ending in ``/`` matches as a prefix."""

_PREFIXES = tuple(p for p in BEHAVIOURS if p.endswith("/") and p != "/")

INDEX_SKIP = frozenset({"/", "/robots.txt", "/index", "/million-links"})
"""Behaviours ``/index`` does not link (``/million-links`` would queue 10,000 more URLs)."""


def host_slug(path: str) -> str:
    """The host label ``/index`` gives a behaviour: ``/loop/a`` -> ``loop-a``."""
    return path.strip("/").replace("/", "-").replace(".", "-") or "root"


def index_targets(suffix: str, port: int) -> dict[str, str]:
    """Behaviour path -> the URL ``/index`` links it as, each on its own host under ``suffix``.

    One host per behaviour, so a crawl visits them in parallel (politeness is per host) and
    each host's log tells one behaviour's story.
    """
    out = {}
    for path in BEHAVIOURS:
        if path in INDEX_SKIP:
            continue
        target = path + "0" if path.endswith("/") else path
        out[path] = f"http://{host_slug(path)}.{suffix}:{port}{target}"
    return out


def _lookup(path: str) -> _Handler | None:
    entry = BEHAVIOURS.get(path)
    if entry is None:
        for prefix in _PREFIXES:
            if path.startswith(prefix):
                entry = BEHAVIOURS[prefix]
                break
    return entry[0] if entry else None


class HostileWeb:
    """The hostile server; ``async with HostileWeb() as hw: hw.url("/slow-body")``."""

    __test__ = False

    def __init__(
        self,
        port: int = 0,
        max_stream_s: float = 30.0,
        max_stream_bytes: int = 64 * MIB,
        host: str = "127.0.0.1",
    ) -> None:
        if host not in ("127.0.0.1", "::1"):
            raise ValueError("HostileWeb binds loopback only (127.0.0.1 or ::1)")
        self.host = host
        self.port: int = port
        self.max_stream_s = max_stream_s
        self.max_stream_bytes = max_stream_bytes
        self.hits: list[Hit] = []
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        if self._server is not None:
            raise RuntimeError("HostileWeb already started")
        self._server = await asyncio.start_server(
            self._serve, self.host, self.port, reuse_address=True
        )
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for w in list(self._writers):
            w.transport.abort()
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.wait_closed(), 2.0)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def url(self, path: str, host: str | None = None) -> str:
        """``http://HOST:PORT/path``; HOST defaults to the bound address."""
        if host is None:
            host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{path}"

    def resolve_arg(self, pattern: str = "*.hostile.test") -> str:
        """A ``--resolve`` rule sending ``pattern`` on this port to the bound address."""
        addr = f"[{self.host}]" if ":" in self.host else self.host
        return f"{pattern}:{self.port}:{addr}"

    def hits_for(self, path: str) -> list[Hit]:
        return [h for h in self.hits if h.path == path]

    async def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait until no connection is being served; False if ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        while self._tasks and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return not self._tasks

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        self.connections += 1
        hit: Hit | None = None
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10.0)
            except (
                TimeoutError,
                asyncio.IncompleteReadError,
                asyncio.LimitOverrunError,
                ConnectionError,
            ):
                return
            hit = _parse_request(head)
            self.hits.append(hit)
            handler = _lookup(hit.path)
            conn = _Conn(reader, writer, hit, self, time.monotonic() + self.max_stream_s)
            try:
                if handler is None:
                    await conn.reply(404, "Not Found", b"not found", "text/plain")
                else:
                    await handler(conn)
                hit.ended_by = "done"
            except _ClientGone:
                hit.ended_by = "client_gone"
            except _Limit:
                hit.ended_by = "limit"
        except asyncio.CancelledError:
            if hit is not None:
                hit.ended_by = "stopped"
            raise
        finally:
            if hit is not None:
                hit.end = time.time()
            self._writers.discard(writer)
            self._tasks.discard(task)
            if not writer.transport.is_closing():
                with contextlib.suppress(Exception):
                    if writer.can_write_eof():
                        writer.write_eof()
                writer.close()


def _parse_request(head: bytes) -> Hit:
    text = head.decode("latin-1")
    first, _, rest = text.partition("\r\n")
    parts = first.split(" ")
    target = parts[1] if len(parts) >= 2 else "/"
    headers: dict[str, str] = {}
    for line in rest.split("\r\n"):
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip().lower()] = value.strip()
    path = target.split("?", 1)[0]
    if "://" in path:  # absolute-form request target
        path = "/" + path.split("://", 1)[1].partition("/")[2]
    return Hit(
        path=path,
        target=target,
        host=headers.get("host", ""),
        user_agent=headers.get("user-agent", ""),
        headers=headers,
        start=time.time(),
    )


async def _main_async(port: int) -> None:
    async with HostileWeb(port=port) as hw:
        print(f"hostile web on http://127.0.0.1:{hw.port}/", file=sys.stderr)
        for path, (_, what) in BEHAVIOURS.items():
            print(f"  {path:24} {what}", file=sys.stderr)
        await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> int:
    """``python tests/hostileweb.py [--port N]``: serve until Ctrl-C."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_main_async(args.port))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
