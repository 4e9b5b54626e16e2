"""One HTTP request, done carefully: the aiohttp boundary.

Never follows redirects (the crawler re-queues the target through the admission gate), streams
the body with a size cap, abandons non-HTML bodies after the headers, and connects only to
addresses the guard approved (the check happens inside the resolver aiohttp connects with,
so DNS cannot be re-bound between check and connect). aiohttp's exceptions are mapped to
politecrawl's here and nowhere else; the caller always gets a ``FetchResult``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import brotli
from aiohttp.abc import AbstractResolver, ResolveResult

from politecrawl.config import FetchConfig, parse_resolve_rule
from politecrawl.errors import AddressRefused, FetchError

_ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1"
_ACCEPT_ENCODING = "gzip, deflate, br"
_CHUNK = 64 * 1024


@dataclass(slots=True)
class FetchResult:
    """What one request produced; ``error`` set when no HTTP response came."""

    url: str
    started: float
    duration_s: float = 0.0
    status: int | None = None
    reason: str = ""
    http_version: str = "1.1"
    headers: list[tuple[str, str]] = field(default_factory=list)
    raw_body: bytes = b""
    body: bytes = b""
    truncated: bool = False
    abandoned: bool = False
    ip: str | None = None
    error: str | None = None
    error_detail: str = ""
    request_headers: list[tuple[str, str]] = field(default_factory=list)

    def header(self, name: str) -> str | None:
        lname = name.lower()
        for k, v in self.headers:
            if k.lower() == lname:
                return v
        return None

    def header_all(self, name: str) -> list[str]:
        lname = name.lower()
        return [v for k, v in self.headers if k.lower() == lname]

    @property
    def content_type(self) -> str:
        return (self.header("content-type") or "").split(";", 1)[0].strip().lower()

    @property
    def bytes_received(self) -> int:
        return len(self.raw_body)


def is_public_address(addr: str) -> bool:
    """False for loopback, private, link-local, multicast, reserved, unspecified addresses.

    IPv4-mapped IPv6 (``::ffff:127.0.0.1``) is judged by the IPv4 address it carries.
    """
    try:
        ip = ipaddress.ip_address(addr.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not (ip.is_multicast or ip.is_reserved or ip.is_link_local)


class _Refused(OSError):
    """Raised inside the resolver so aiohttp wraps it; unwrapped to AddressRefused."""


class GuardedResolver(AbstractResolver):
    """Resolver with curl-style ``--resolve`` overrides and the private-address guard."""

    def __init__(self, rules: tuple[str, ...], allow_private: bool) -> None:
        self._exact: dict[tuple[str, int], str] = {}
        self._wild: list[tuple[str, int, str]] = []
        for rule in rules:
            host, port, addr = parse_resolve_rule(rule)
            if host.startswith("*."):
                self._wild.append((host[1:], port, addr))
            else:
                self._exact[(host, port)] = addr
        self._allow_private = allow_private
        self._inner: AbstractResolver = aiohttp.ThreadedResolver()

    def override(self, host: str, port: int) -> str | None:
        addr = self._exact.get((host, port))
        if addr is None:
            for suffix, p, a in self._wild:
                if p == port and host.endswith(suffix):
                    return a
        return addr

    def check(self, addr: str) -> None:
        if not self._allow_private and not is_public_address(addr):
            raise _Refused(f"address {addr} is private, loopback or reserved")

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addr = self.override(host.lower(), port)
        if addr is not None:
            fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
            results: list[ResolveResult] = [
                {"hostname": host, "host": addr, "port": port, "family": fam,
                 "proto": 0, "flags": socket.AI_NUMERICHOST}
            ]
        else:
            results = await self._inner.resolve(host, port, family)
        allowed = []
        for r in results:
            try:
                self.check(r["host"])
            except _Refused:
                continue
            allowed.append(r)
        if not allowed:
            raise _Refused(f"{host} resolves only to refused addresses "
                           f"({', '.join(r['host'] for r in results)})")
        return allowed

    async def close(self) -> None:
        await self._inner.close()


def decompress(raw: bytes, encoding: str, max_bytes: int) -> tuple[bytes, bool]:
    """Undo Content-Encoding, never producing more than ``max_bytes`` (bomb-proof).

    Returns (body, truncated). Raises ValueError on a corrupt stream.
    """
    enc = encoding.strip().lower()
    if enc in ("", "identity"):
        return raw[:max_bytes], len(raw) > max_bytes
    if enc in ("gzip", "x-gzip", "deflate"):
        wbits = 16 + zlib.MAX_WBITS if enc != "deflate" else zlib.MAX_WBITS
        try:
            d = zlib.decompressobj(wbits)
            out = d.decompress(raw, max_bytes)
        except zlib.error:
            if enc != "deflate":
                raise ValueError("corrupt gzip body") from None
            try:  # servers often send raw deflate without the zlib header
                d = zlib.decompressobj(-zlib.MAX_WBITS)
                out = d.decompress(raw, max_bytes)
            except zlib.error:
                raise ValueError("corrupt deflate body") from None
        return out, bool(d.unconsumed_tail) or len(out) >= max_bytes and not d.eof
    if enc == "br":
        try:
            dec = brotli.Decompressor()
            out = dec.process(raw, output_buffer_limit=max_bytes)
        except brotli.error:
            raise ValueError("corrupt brotli body") from None
        return out[:max_bytes], not dec.is_finished()
    raise ValueError(f"unsupported Content-Encoding {encoding!r}")


class Fetcher:
    """Owns the aiohttp session; ``fetch`` never raises for network trouble."""

    def __init__(self, cfg: FetchConfig) -> None:
        self.cfg = cfg
        self.resolver = GuardedResolver(cfg.resolve, cfg.allow_private_addresses)
        self._session: aiohttp.ClientSession | None = None
        self._timeout = aiohttp.ClientTimeout(
            total=cfg.total_timeout_s, connect=cfg.connect_timeout_s,
            sock_read=cfg.read_timeout_s,
        )

    async def __aenter__(self) -> Fetcher:
        connector = aiohttp.TCPConnector(
            resolver=self.resolver, limit=0, limit_per_host=0, ttl_dns_cache=300,
            enable_cleanup_closed=True,
        )
        self._session = aiohttp.ClientSession(
            connector=connector, auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar(),
            headers={"User-Agent": self.cfg.user_agent, "Accept": _ACCEPT,
                     "Accept-Encoding": _ACCEPT_ENCODING},
            skip_auto_headers=(), timeout=self._timeout,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    async def fetch(self, url: str, *, html_only: bool = True,
                    extra_headers: dict[str, str] | None = None) -> FetchResult:
        """One GET; non-HTML 2xx bodies are abandoned after the headers when ``html_only``."""
        assert self._session is not None, "use Fetcher as an async context manager"
        started = time.time()
        t0 = time.perf_counter()
        res = FetchResult(url=url, started=started)
        try:
            self._check_literal(url)
            async with self._session.get(url, allow_redirects=False,
                                         headers=extra_headers) as resp:
                res.status = resp.status
                res.reason = resp.reason or ""
                res.http_version = f"{resp.version.major}.{resp.version.minor}" if resp.version else "1.1"
                res.headers = [(k.decode("latin-1"), v.decode("latin-1"))
                               for k, v in resp.raw_headers]
                res.request_headers = list(resp.request_info.headers.items())
                peer = resp.connection.transport.get_extra_info("peername") if (
                    resp.connection and resp.connection.transport) else None
                res.ip = str(peer[0]) if peer else None
                if html_only and 200 <= resp.status < 300 and not self._is_html(res):
                    res.abandoned = True
                    resp.close()
                else:
                    await self._read_body(resp, res)
        except FetchError as exc:
            res.error, res.error_detail = exc.kind, str(exc)
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError, ValueError) as exc:
            res.error, res.error_detail = _classify_error(exc)
        res.duration_s = time.perf_counter() - t0
        return res

    def _check_literal(self, url: str) -> None:
        """aiohttp bypasses the resolver for IP literals, so check those here."""
        from yarl import URL

        host = URL(url).host or ""
        try:
            ipaddress.ip_address(host)
        except ValueError:
            return
        try:
            self.resolver.check(host)
        except _Refused as exc:
            raise AddressRefused(str(exc)) from None

    def _is_html(self, res: FetchResult) -> bool:
        ctype = res.content_type
        return not ctype or ctype in self.cfg.html_types

    async def _read_body(self, resp: aiohttp.ClientResponse, res: FetchResult) -> None:
        cap = self.cfg.max_size_bytes
        chunks: list[bytes] = []
        got = 0
        while got < cap:
            chunk = await resp.content.read(min(_CHUNK, cap - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got >= cap and await resp.content.read(1):
            res.truncated = True  # the rest is never read: the connection is dropped
            resp.close()
        res.raw_body = b"".join(chunks)
        encoding = res.header("content-encoding") or ""
        try:
            res.body, trunc = decompress(res.raw_body, encoding, cap)
        except ValueError as exc:
            res.body = b""
            res.error, res.error_detail = "bad_encoding", str(exc)
            return
        res.truncated = res.truncated or trunc


def _classify_error(exc: BaseException) -> tuple[str, str]:
    """Map aiohttp/OS errors to a short kind for the outcome table."""
    detail = f"{type(exc).__name__}: {exc}"[:300]
    if isinstance(exc, aiohttp.ClientConnectorError):
        inner: Any = getattr(exc, "os_error", None)
        if isinstance(inner, _Refused):
            return "address_refused", str(inner)
        if isinstance(exc, aiohttp.ClientConnectorDNSError):
            return "dns", detail
        return "connect", detail
    if isinstance(exc, (asyncio.TimeoutError, aiohttp.ServerTimeoutError)):
        return "timeout", detail
    if isinstance(exc, aiohttp.InvalidURL | ValueError):
        return "invalid_url", detail
    if isinstance(exc, aiohttp.ClientResponseError | aiohttp.ClientPayloadError):
        return "protocol", detail
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientOSError | OSError):
        return "network", detail
    return "network", detail
