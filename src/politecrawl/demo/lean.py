"""A lean HTTP/1.1 server for the test web on a benchmark (``demo.web --lean``).

The benchmarks run the test web on the same two cores as the crawler it measures, so every
CPU-second the server spends is taken from the crawler; more so with ``--processes 2``,
where the crawler has no idle core to leave it. aiohttp's server cost about 0.19 ms of CPU a
request there. This one answers exactly what ``TestWeb.answer`` gives (the same pages,
304s and gzip bodies) and writes the same access log (``TestWeb.record``), with keep-alive,
on a bare ``asyncio.Protocol``: only what a crawler sends, a GET or HEAD without a body. A
request it cannot read gets a 400 and the connection closed. No latency (``--latency``) and
no streamed ``/bin/data`` (it is sent whole): the tests use the aiohttp server.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from http import HTTPStatus
from typing import Protocol
from urllib.parse import unquote

from multidict import CIMultiDict

__all__ = ["LeanProtocol", "serve_lean"]

_MAX_HEAD = 64 * 1024
_REASONS = {s.value: s.phrase for s in HTTPStatus}
_BAD_REQUEST = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class Web(Protocol):
    """What this server asks of the test web (``TestWeb``): its answers and its access log.
    A protocol, not the class, so that ``demo.web`` imports this module and not the reverse."""

    def answer(
        self, host: str, path: str, req_headers: Mapping[str, str]
    ) -> tuple[int, Mapping[str, str], bytes]: ...

    def record(
        self,
        host: str,
        raw_path: str,
        method: str,
        status: int,
        start: float,
        headers: dict[str, str],
        user_agent: str,
    ) -> None: ...


class LeanProtocol(asyncio.Protocol):
    """One client connection: requests read up to their blank line, answered in order."""

    def __init__(self, web: Web, open_: set[asyncio.Transport]) -> None:
        self.web = web
        self.open = open_
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.open.add(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.transport is not None:
            self.open.discard(self.transport)

    def data_received(self, data: bytes) -> None:
        buf = self.buf + data if self.buf else data
        while (end := buf.find(b"\r\n\r\n")) >= 0:
            head, buf = buf[:end], buf[end + 4 :]
            if not self._answer(head):
                self.buf = b""
                return
        if len(buf) > _MAX_HEAD:
            self._refuse()
            buf = b""
        self.buf = buf

    def _refuse(self) -> None:
        assert self.transport is not None
        self.transport.write(_BAD_REQUEST)
        self.transport.close()

    def _answer(self, head: bytes) -> bool:
        """Answer one request; False when the connection is closed after it."""
        start = time.time()
        assert self.transport is not None
        try:
            request_line, *lines = head.decode("latin-1").split("\r\n")
            method, target, version = request_line.split(" ")
            headers: CIMultiDict[str] = CIMultiDict()
            for line in lines:
                name, colon, value = line.partition(":")
                if not colon or not name or name != name.strip():
                    self._refuse()
                    return False
                headers.add(name, value.strip())
            has_body = int(headers.get("Content-Length", "0")) or "Transfer-Encoding" in headers
        except ValueError:  # a request line not of three parts, a Content-Length not a number
            self._refuse()
            return False
        if has_body:  # a crawler's GET has none
            self._refuse()
            return False
        host = headers.get("Host", "").lower().partition(":")[0].rstrip(".")
        status, reply_headers, body = self.web.answer(host, unquote(target.partition("?")[0]),
                                                      headers)  # fmt: skip
        conn = headers.get("Connection", "").lower()
        keep = conn != "close" if version == "HTTP/1.1" else conn == "keep-alive"
        out = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}\r\n"]
        out.extend(f"{k}: {v}\r\n" for k, v in reply_headers.items())
        out.append(f"Content-Length: {len(body)}\r\n")
        out.append("Server: politecrawl-testweb\r\n\r\n" if keep else "Connection: close\r\n\r\n")
        data = "".join(out).encode("latin-1")
        self.transport.write(data + body if method != "HEAD" else data)
        self.web.record(host, target, method, status, start, dict(headers),
                        headers.get("User-Agent", ""))  # fmt: skip
        if not keep:
            self.transport.close()
        return keep


async def serve_lean(web: Web, port: int) -> tuple[asyncio.Server, set[asyncio.Transport]]:
    """Serve ``web`` on 127.0.0.1 (a free port when 0); the server and its open connections."""
    open_: set[asyncio.Transport] = set()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: LeanProtocol(web, open_), "127.0.0.1", port, backlog=2048, reuse_address=True
    )
    return server, open_
