"""A small raw HTTP/1.1 server with every case a WARC must replay (tests/test_replay.py).

Written on asyncio streams, not a framework, so that the bytes on the wire are exactly what
each case needs: chunked bodies with and without gzip, a bad chunk-size line, a body shorter
than its Content-Length, a corrupt gzip stream. Pages carry an ETag and answer a matching
``If-None-Match`` with 304, so a recrawl gets 304s. ``log`` holds (path, status, request
headers) for every request, ``live(path)`` what the server sends for a path (status,
headers, raw body as on the wire minus chunking).
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import hashlib
from dataclasses import dataclass, field

import brotli

HOST = "replay.test"


def _html(title: str, body: str, charset: str = "utf-8", links: tuple[str, ...] = ()) -> str:
    anchors = "".join(f'<p><a href="{h}">{h}</a></p>' for h in links)
    return (
        f'<!DOCTYPE html><html><head><meta charset="{charset}"><title>{title}</title></head>'
        f"<body><h1>{title}</h1><p>{body}</p>{anchors}</body></html>"
    )


_PROSE = " ".join(
    f"Paragraph {i}: the archive keeps what the server sent, byte for byte, and replays it."
    for i in range(40)
)


@dataclass(frozen=True, slots=True)
class Case:
    """One path: its status, headers and body; ``mode`` says how the body goes on the wire."""

    path: str
    body: bytes
    ctype: str = "text/html; charset=utf-8"
    status: int = 200
    encoding: str | None = None  # Content-Encoding applied to ``body`` (already encoded)
    mode: str = "length"  # length | chunked | short | bad_chunk
    extra: tuple[tuple[str, str], ...] = ()

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha1(self.path.encode() + self.body).hexdigest()[:16] + '"'


def _cases() -> dict[str, Case]:
    links = (
        "/latin1.html", "/utf16.html", "/chunked.html", "/chunked-gzip.html", "/br.html",
        "/gzip.html", "/dup-a.html", "/dup-b.html", "/near-1.html", "/near-2.html",
        "/short.html", "/corrupt-gzip.html", "/bad-chunk.html", "/moved", "/moved-twice",
    )  # fmt: skip
    dup = _html("Same bytes", _PROSE).encode()
    latin = _html("Caf\u00e9 cr\u00e8me", "D\u00e9j\u00e0 vu " + _PROSE, "iso-8859-1")
    utf16 = "\ufeff" + _html("\u0421\u0442\u0430\u0442\u044c\u044f", _PROSE, "utf-16")
    gz = gzip.compress(_html("Chunked gzip", _PROSE).encode(), mtime=0)
    cases = [
        Case("/", _html("Index", "All the cases.", links=links).encode()),
        Case("/latin1.html", latin.encode("latin-1"), "text/html; charset=iso-8859-1"),
        Case("/utf16.html", utf16.encode("utf-16-le"), "text/html; charset=utf-16"),
        Case("/chunked.html", _html("Chunked", "0a0 " + _PROSE).encode(), mode="chunked"),
        Case("/chunked-gzip.html", gz, encoding="gzip", mode="chunked"),
        Case("/br.html", brotli.compress(_html("Brotli", _PROSE).encode()), encoding="br"),
        Case("/gzip.html", gzip.compress(_html("Gzip", _PROSE).encode(), mtime=0), encoding="gzip"),
        Case("/dup-a.html", dup),
        Case("/dup-b.html", dup),
        Case("/near-1.html", _html("Report", "Sales were 1041 units. " + _PROSE).encode()),
        Case("/near-2.html", _html("Report", "Sales were 2093 units. " + _PROSE).encode()),
        Case("/short.html", _html("Short", _PROSE).encode(), mode="short"),
        Case("/corrupt-gzip.html", b"\x1f\x8b\x08\x00" + b"not gzip at all " * 40, encoding="gzip"),
        Case("/bad-chunk.html", _html("Bad chunk", _PROSE).encode(), mode="bad_chunk"),
        Case("/moved", b"", "text/plain", 301, extra=(("Location", "/latin1.html"),)),
        Case("/moved-twice", b"", "text/plain", 302, extra=(("Location", "/moved"),)),
        Case("/robots.txt", b"User-agent: *\nAllow: /\n", "text/plain"),
    ]
    return {c.path: c for c in cases}


CASES = _cases()


@dataclass
class ReplayWeb:
    """``async with ReplayWeb() as web``: serving on 127.0.0.1:``web.port``."""

    log: list[tuple[str, int, dict[str, str]]] = field(default_factory=list)
    port: int = 0
    _server: asyncio.Server | None = None
    _closing: asyncio.Event = field(default_factory=asyncio.Event)

    async def __aenter__(self) -> ReplayWeb:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._closing.set()  # a connection left hanging (bad chunk) ends now
        self._server.close()
        await self._server.wait_closed()

    def url(self, path: str = "/") -> str:
        return f"http://{HOST}:{self.port}{path}"

    def resolve_arg(self) -> str:
        return f"{HOST}:{self.port}:127.0.0.1"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                hdrs = {k.strip().lower(): v.strip() for k, v in
                        (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}  # fmt: skip
                case = CASES.get(path)
                if case is None:
                    self.log.append((path, 404, hdrs))
                    writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                    await writer.drain()
                    continue
                not_modified = hdrs.get("if-none-match") == case.etag and case.status == 200
                self.log.append((path, 304 if not_modified else case.status, hdrs))
                if not await self._answer(case, not_modified, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _answer(self, case: Case, not_modified: bool, writer: asyncio.StreamWriter) -> bool:
        """Writes the response; False when the connection must end (short or broken body)."""
        reason = {200: "OK", 301: "Moved Permanently", 302: "Found", 304: "Not Modified"}
        status = 304 if not_modified else case.status
        head = [f"HTTP/1.1 {status} {reason[status]}", f"ETag: {case.etag}",
                "Last-Modified: Tue, 03 Nov 2026 10:00:00 GMT"]  # fmt: skip
        if not_modified:
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
            await writer.drain()
            return True
        head.append(f"Content-Type: {case.ctype}")
        head += [f"{k}: {v}" for k, v in case.extra]
        if case.encoding:
            head.append(f"Content-Encoding: {case.encoding}")
        body = case.body
        if case.mode in ("chunked", "bad_chunk"):
            head.append("Transfer-Encoding: chunked")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
            half = len(body) // 2
            writer.write(b"%x\r\n%s\r\n" % (half, body[:half]))
            if case.mode == "bad_chunk":  # after the headers: a size that is not hex, silence
                await writer.drain()
                await asyncio.sleep(0.3)
                writer.write(b"zz-not-a-size\r\n" + body[half:])
                await writer.drain()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._closing.wait(), 30)
                return False
            writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body) - half, body[half:]))
        elif case.mode == "short":  # promises more than it sends, then closes
            head.append(f"Content-Length: {len(body)}")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body[: len(body) // 3])
            await writer.drain()
            return False
        else:
            head.append(f"Content-Length: {len(body)}")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await writer.drain()
        return True
