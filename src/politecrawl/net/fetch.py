"""One HTTP request, done carefully: the aiohttp boundary.

Never follows redirects (the crawler re-queues the target through the admission gate), streams
the body with a size cap, abandons non-HTML bodies after the headers, and connects only to
addresses the guard approved (the check happens inside the resolver aiohttp connects with,
so DNS cannot be re-bound between check and connect). aiohttp's exceptions are mapped to
politecrawl's here and nowhere else; the caller always gets a ``FetchResult``.

The address guard is ``resolver`` (``GuardedResolver``) and the bounded Content-Encoding
decoder ``contentcoding``; this module makes the request and reads the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from yarl import URL

from politecrawl.config import FetchConfig
from politecrawl.errors import AddressRefused, FetchError
from politecrawl.net.body import BrokenTransferCoding, TooSlow, read_by, read_some
from politecrawl.net.coding import Decoder
from politecrawl.net.dns import NameCache
from politecrawl.net.resolver import (
    LOOKUP_WAIT,
    GuardedResolver,
    ListedAddress,
    Refused,
    ip_literal,
)
from politecrawl.polite.politeness import SLOW_ANSWER_S

_ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1"
_ACCEPT_ENCODING = "gzip, deflate, br"
_MAX_HEADER_FIELD = 16 * 1024  # one status line / header line; aiohttp's default is 8190
_MAX_HEADERS = 128
_HARD_STOP_GRACE_S = 1.0

log = logging.getLogger("politecrawl.net.fetch")


@dataclass(slots=True)
class FetchResult:
    """What one request produced.

    ``error`` (a kind, see ``_classify_error``) is set when no usable response came; with
    ``status`` also set, the failure came while reading the body (``truncated`` then says
    the part held is only its start) or the body's encoding was bad (``bad_encoding``).
    ``truncated`` without ``error``: the body was longer than ``max_size_bytes`` (raw or
    decoded, or an encoded stream ended early) and was cut. ``abandoned``: a non-HTML 2xx
    whose body was never read. ``raw_body`` is what came off the wire (transfer coding
    removed, content coding kept), ``body`` the decoded bytes.

    ``cut``: why ``raw_body`` is shorter than what the server sent (WARC 1.1 section 5.13,
    WARC-Truncated): ``length`` (over the size cap), ``time`` (a timeout), ``disconnect``
    (the connection broke, or ended before Content-Length), ``protocol`` (a broken transfer
    coding, e.g. a chunk-size line that is not hex); None when it holds the whole body.
    A body that fails to decode is still read whole: ``raw_body`` stays complete and only
    ``body`` is partial (``bad_encoding``).
    """

    url: str
    started: float
    duration_s: float = 0.0
    lookup_s: float = 0.0  # of ``duration_s``, the wait on name lookups (not the server's)
    status: int | None = None
    reason: str = ""
    http_version: str = "1.1"
    headers: list[tuple[str, str]] = field(default_factory=list)
    raw_body: bytes = b""
    body: bytes = b""
    truncated: bool = False
    abandoned: bool = False
    ip: str | None = None
    cut: str | None = None
    error: str | None = None
    error_detail: str = ""
    request_headers: list[tuple[str, str]] = field(default_factory=list)
    # an https request made without checking the certificate (--tls-insecure): the WARC
    # records say so
    tls_unverified: bool = False
    # the failure came while the crawler's own network was down (``engine.outage``): not
    # the site's, so not counted against it
    outage: bool = False

    @property
    def answer_s(self) -> float:
        """How long the server took: the request's time without the name lookups."""
        return max(0.0, self.duration_s - self.lookup_s)

    def header(self, name: str) -> str | None:
        lname = name.lower()
        for k, v in self.headers:
            if k.lower() == lname:
                return v
        return None

    def location(self) -> str | None:
        """The Location header as a browser reads it: its raw bytes as UTF-8 when they are
        (``/café`` sent unescaped), else as they came. Headers are kept as Latin-1 text so the
        WARC holds their very bytes; read as Latin-1, ``/café`` was asked as ``/cafÃ©``."""
        value = self.header("location")
        if value is None or value.isascii():
            return value
        try:
            return value.encode("latin-1").decode("utf-8")
        except UnicodeError:
            return value

    def conditional(self) -> bool:
        """Whether the request asked "only if changed" (a 304 answers nothing else)."""
        names = {k.lower() for k, _ in self.request_headers}
        return bool(names & {"if-none-match", "if-modified-since"})

    def header_all(self, name: str) -> list[str]:
        lname = name.lower()
        return [v for k, v in self.headers if k.lower() == lname]

    @property
    def content_type(self) -> str:
        return (self.header("content-type") or "").split(";", 1)[0].strip().lower()

    @property
    def bytes_received(self) -> int:
        return len(self.raw_body)


# the peer address of the connection a request got, read when the connection is handed out:
# by the time ``session.get`` returns, aiohttp may already have released a connection whose
# body arrived with the headers, and the address can no longer be asked for
_PEER: contextvars.ContextVar[list[str]] = contextvars.ContextVar("politecrawl_peer")


class _PeerConnector(aiohttp.TCPConnector):
    """A TCPConnector that tells the request in progress (``_PEER``) its server's address.
    A connection kept alive to an address its host no longer has (a new DNS answer) is not
    reused: the per-IP rule gated the request on the host's address now."""

    _resolver: GuardedResolver

    async def connect(self, req: Any, traces: Any, timeout: Any) -> Any:
        conn = await super().connect(req, traces, timeout)
        for _ in range(8):  # (each one found is closed: the pool holds a few at most)
            now = self._resolver.current(req.host, req.port or 0)
            peer = conn.transport.get_extra_info("peername") if conn.transport else None
            if not now or not peer or str(peer[0]) in now:
                break
            conn.close()
            conn = await super().connect(req, traces, timeout)
        peer = conn.transport.get_extra_info("peername") if conn.transport else None
        if peer and self._resolver.listed(str(peer[0])):  # listed since it was opened
            conn.close()
            raise ListedAddress(f"address {peer[0]} is on the never-crawl list")
        sink = _PEER.get(None)
        transport = conn.transport
        if transport is not None:
            _close_at_once(transport.get_extra_info("socket"))
        if sink is not None and transport is not None:
            peer = transport.get_extra_info("peername")
            if peer:
                sink.append(str(peer[0]))
        return conn


_LINGER_NONE = struct.pack("ii", 1, 0)


def _close_at_once(sock: Any) -> None:
    """A closed connection takes what it had not sent yet with it (SO_LINGER 0: reset, not
    flushed). A request written while the crawler's own network was down sat in the kernel's
    buffer; the fetch timed out and closed the connection, the request was queued again and
    asked on a new one, and when the network came back the kernel delivered the old copy too:
    the server saw the page asked twice, 0.04 s apart (30 of 30 sites, in a 15 s outage)."""
    if sock is None:
        return
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_NONE)


class InvalidTarget(FetchError):
    """A URL the fetcher never requests (not http or https)."""

    kind = "invalid_url"


class Fetcher:
    """Owns the aiohttp session; ``fetch`` never raises for network trouble.

    Bounds, whatever the server does: the connect, read (no byte for ``read_timeout_s``) and
    total timeouts of ``FetchConfig`` (the total one also enforced around the whole call, so
    nothing inside aiohttp can outlive it); header lines and fields of at most 16 KiB and at
    most 128 headers (``_MAX_HEADER_FIELD``/``_MAX_HEADERS``: beyond is a ``protocol``
    error); a body of at most ``max_size_bytes`` raw and ``max_size_bytes`` decoded, the
    connection dropped as soon as either is exceeded (``truncated``); a body slower than
    ``min_rate_bytes`` a second on average once ``min_rate_time_s`` into it (``too_slow``).

    ``cut``: the crawl stops (``--max-time``): every request in flight ends at once with the
    error ``cut``, and none starts after. ``slow``: how many requests in flight have waited
    ``politeness.SLOW_ANSWER_S`` or longer (the crawler's loop stops counting them against
    ``--concurrency``).
    """

    def __init__(
        self, cfg: FetchConfig, refuse_address: Callable[[str], bool] | None = None
    ) -> None:
        """``refuse_address``: server addresses never to connect to (the never-crawl list's)."""
        self.cfg = cfg
        names = NameCache(
            timeout_s=cfg.dns_timeout_s,
            tries=cfg.dns_tries,
            negative_ttl_s=cfg.dns_negative_ttl_s,
        )
        self.resolver = GuardedResolver(
            cfg.resolve, cfg.allow_private_addresses, names, refuse=refuse_address
        )
        self._budgets: dict[asyncio.Timeout, float] = {}  # each request's, and when it began
        self._cutting = False
        self._session: aiohttp.ClientSession | None = None
        self._timeout = aiohttp.ClientTimeout(
            total=cfg.total_timeout_s,
            connect=cfg.connect_timeout_s,
            sock_read=cfg.read_timeout_s,
        )

    async def __aenter__(self) -> Fetcher:
        connector = _PeerConnector(
            resolver=self.resolver,
            limit=0,
            limit_per_host=0,
            use_dns_cache=False,  # the resolver's own (net/dns.py): each answer for its TTL
            enable_cleanup_closed=True,
            ssl=self.cfg.verify_tls,  # False: --tls-insecure, certificates not checked
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            headers={
                "User-Agent": self.cfg.user_agent,
                "Accept": _ACCEPT,
                "Accept-Encoding": _ACCEPT_ENCODING,
            },
            skip_auto_headers=(),
            timeout=self._timeout,
            trust_env=False,
            max_line_size=_MAX_HEADER_FIELD,
            max_field_size=_MAX_HEADER_FIELD,
            max_headers=_MAX_HEADERS,
        )
        # aiohttp silently sends a GET a second time when the server closes or resets the
        # connection before answering (RFC 9112 9.3.1). That second request would be
        # invisible to the request log and to politeness (two requests in one turn), so it
        # is turned off: the failure is classified and retried by the crawler, logged.
        if hasattr(self._session, "_retry_connection"):
            self._session._retry_connection = False
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()
        await self.resolver.close()

    async def fetch(
        self,
        url: str,
        *,
        html_only: bool = True,
        extra_headers: dict[str, str] | None = None,
        min_cap: int = 0,
    ) -> FetchResult:
        """One GET; non-HTML 2xx bodies are abandoned after the headers when ``html_only``.
        ``min_cap``: the body is read to at least this many bytes whatever ``--max-size``
        says (robots.txt: RFC 9309 2.5's 500 KiB)."""
        assert self._session is not None, "use Fetcher as an async context manager"
        started = time.time()
        t0 = time.perf_counter()
        res = FetchResult(url=url, started=started)
        if self._cutting:
            res.error, res.error_detail = "cut", "the crawl was stopping: not requested"
            return res
        try:
            target = self._check_target(url)
            res.tls_unverified = target.scheme == "https" and not self.cfg.verify_tls
            # aiohttp's total timeout covers the request; this one also covers what it
            # does not (the resolver thread, closing), so no call outlives the budget
            async with asyncio.timeout(self.cfg.total_timeout_s + _HARD_STOP_GRACE_S) as budget:
                self._budgets[budget] = asyncio.get_running_loop().time()
                try:
                    cap = max(self.cfg.max_size_bytes, min_cap)
                    await self._get(target, res, html_only, extra_headers, cap)
                finally:
                    self._budgets.pop(budget, None)
        except FetchError as exc:
            res.error, res.error_detail = exc.kind, str(exc)
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
            res.error, res.error_detail = _classify_error(exc)
        except Exception as exc:  # a server must never be able to crash the worker
            log.warning("unexpected %s fetching %s", type(exc).__name__, url, exc_info=True)
            res.error, res.error_detail = "protocol", f"{type(exc).__name__}: {exc}"[:300]
        if self._cutting and res.error is not None:
            res.error, res.error_detail = "cut", "cut by the crawl's stop (--max-time)"
        res.duration_s = time.perf_counter() - t0
        return res

    def slow(self) -> int:
        """How many requests in flight have waited ``SLOW_ANSWER_S`` or longer for their
        answer."""
        since = asyncio.get_running_loop().time() - SLOW_ANSWER_S
        return sum(1 for began in self._budgets.values() if began <= since)

    def cut(self) -> None:
        """End every request in flight now (error ``cut``), and start none after: the crawl
        stops at its ``--max-time``, whatever a slow server does."""
        self._cutting = True
        now = asyncio.get_running_loop().time()
        for budget in list(self._budgets):
            if not budget.expired():
                budget.reschedule(now)

    async def _get(
        self,
        url: URL,
        res: FetchResult,
        html_only: bool,
        extra_headers: dict[str, str] | None,
        cap: int,
    ) -> None:
        assert self._session is not None
        peers: list[str] = []
        lookups: list[float] = []
        token, waits = _PEER.set(peers), LOOKUP_WAIT.set(lookups)
        try:
            await self._exchange(url, res, html_only, extra_headers, peers, cap)
        finally:
            _PEER.reset(token)
            LOOKUP_WAIT.reset(waits)
            res.lookup_s = sum(lookups)
            if peers and res.ip is None:
                res.ip = peers[-1]

    async def _exchange(
        self,
        url: URL,
        res: FetchResult,
        html_only: bool,
        extra_headers: dict[str, str] | None,
        peers: list[str],
        cap: int,
    ) -> None:
        assert self._session is not None
        async with self._session.get(url, allow_redirects=False, headers=extra_headers) as resp:
            res.status = resp.status
            res.reason = resp.reason or ""
            res.http_version = (
                f"{resp.version.major}.{resp.version.minor}" if resp.version else "1.1"
            )
            res.headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.raw_headers]
            res.request_headers = list(resp.request_info.headers.items())
            res.ip = peers[-1] if peers else None
            if html_only and 200 <= resp.status < 300 and not self._is_html(res):
                res.abandoned = True
                resp.close()  # drop the connection: the body is never read
            else:
                await self._read_body(resp, res, cap)

    def _check_target(self, url: str) -> URL:
        """Only http(s); IP literals checked here because aiohttp skips the resolver for them.
        The parsed URL goes on to aiohttp, which would otherwise parse the string again."""
        u = URL(url)
        if u.scheme not in ("http", "https"):
            raise InvalidTarget(f"scheme {u.scheme[:20]!r} is never fetched")
        addr = ip_literal(u.raw_host or "")  # raw: no IDNA decoding, an address has none
        if addr is None:
            return u
        try:
            self.resolver.check(addr)
        except Refused as exc:
            raise AddressRefused(str(exc)) from None
        return u

    def _is_html(self, res: FetchResult) -> bool:
        ctype = res.content_type
        return not ctype or ctype in self.cfg.html_types

    async def _read_body(self, resp: aiohttp.ClientResponse, res: FetchResult, cap: int) -> None:
        """Stream the body: at most ``cap`` bytes kept raw and ``cap`` decoded.

        Decoding happens while reading, so a decompression bomb is stopped after the first
        ``cap`` decoded bytes, not after ``cap`` compressed ones. Reading stops and the
        connection is dropped as soon as either limit is exceeded. A body whose content coding
        is unknown or corrupt is still read (up to ``cap``) and kept raw: the archive holds
        what the server sent, only the decoded ``body`` stops at the error.
        """
        decoder: Decoder | None
        try:
            # every line of the header: repeated lines are one list (RFC 9110 5.3); a body
            # gzipped twice, said on two lines, was undone once and stored as gzip bytes
            decoder = Decoder(", ".join(_codings(res)), cap)
        except ValueError as exc:
            decoder = None
            res.error, res.error_detail = "bad_encoding", str(exc)
        chunks: list[bytes] = []
        got = 0
        more = False  # the raw body is longer than cap
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        rate, grace = self.cfg.min_rate_bytes, self.cfg.min_rate_time_s
        try:
            while not (more or (decoder is not None and decoder.overflow)):
                chunk = (
                    await read_some(resp)
                    if not rate
                    else await read_by(resp, t0 + max(grace, got / rate), rate)
                )
                if not chunk:
                    break
                if got + len(chunk) > cap:
                    chunk = chunk[: cap - got]
                    more = True
                chunks.append(chunk)
                got += len(chunk)
                if decoder is not None:
                    try:
                        decoder.feed(chunk)
                    except ValueError as exc:  # keep reading the raw bytes; decode no more
                        res.error, res.error_detail = "bad_encoding", str(exc)
                        res.body, decoder = decoder.body(), None
        except BaseException as exc:
            res.truncated = True  # the read failed: what is held is only the start of the body
            res.cut = _cut_reason(exc)
            raise
        finally:
            res.raw_body = b"".join(chunks)
        overflow = decoder is not None and decoder.overflow
        if more or overflow:
            # the raw bytes are whole when only their decoding was capped and the server sent
            # no more (a small gzip bomb): the archive's record is not cut then
            whole = not more and resp.content.at_eof()
            resp.close()  # the rest is never read: the connection is dropped
            if not whole:
                res.cut = "length"
        if decoder is not None:
            res.body = res.raw_body if decoder.kind == "identity" else decoder.body()
        res.truncated = more or overflow or (decoder is not None and not decoder.finished)


def _codings(res: FetchResult) -> list[str]:
    """The codings to undo, in the order applied: the content codings, then any transfer
    coding but chunked (aiohttp undoes that one). The crawler asks for no transfer coding
    (no TE header), but a server sending ``Transfer-Encoding: gzip, chunked`` anyway had its
    gzip bytes stored as the page (RFC 9112 7: a recipient decodes them)."""
    transfer = [c.strip() for t in res.header_all("transfer-encoding") for c in t.split(",")]
    extra = [c for c in transfer if c.lower() not in ("", "chunked", "identity")]
    return [*res.header_all("content-encoding"), *extra]


def _cut_reason(exc: BaseException) -> str:
    """WARC-Truncated's reason for a body read that failed with ``exc``."""
    if isinstance(exc, BrokenTransferCoding):
        return "protocol"
    if isinstance(exc, TooSlow | TimeoutError | asyncio.CancelledError):
        return "time"
    if isinstance(exc, aiohttp.ClientPayloadError):
        cause = exc.__cause__
        if cause is not None and "chunk" in str(cause).lower() and "length" not in str(cause):
            return "protocol"
    return "disconnect"


# getaddrinfo's answers that mean the name does not exist (DNS NXDOMAIN, or no address):
# permanent, unlike EAI_AGAIN (SERVFAIL, a timeout, no server reachable), which is transient
_NO_SUCH_NAME = frozenset(
    getattr(socket, n) for n in ("EAI_NONAME", "EAI_NODATA", "EAI_ADDRFAMILY") if hasattr(socket, n)
)


def _dns_error(host: str, err: object) -> tuple[str, str]:
    """A failed lookup in the crawler's words (aiohttp's says ``ssl:default`` for http too):
    ``no_such_host`` when the name does not exist, ``dns`` when the lookup failed."""
    if isinstance(err, socket.gaierror) and err.errno in _NO_SUCH_NAME:
        return "no_such_host", f"no such host: {host} (DNS says the name does not exist)"
    return "dns", f"DNS lookup of {host} failed: {_why(err, None)}"


def _why(err: object, exc: BaseException | None) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return str(err or exc)


def _classify_error(exc: BaseException) -> tuple[str, str]:
    """Map aiohttp/OS errors to a short kind for the outcome table.

    ``address_refused``: the guard refused every address (``excluded``: the never-crawl
    list names it). ``no_such_host``: the name does
    not exist (NXDOMAIN). ``dns``: the lookup failed (SERVFAIL, timeout: may pass).
    ``tls:certificate``: the server's certificate did not verify; ``tls:handshake``: another
    TLS failure. ``connect``: no TCP connection (refused, unreachable). ``timeout``:
    connect, read or total timeout. ``protocol``: the server's bytes are not valid HTTP/1.x
    (status line, headers, chunking, a body shorter than its Content-Length). ``network``:
    the connection broke (reset, closed before any response). ``invalid_url``: not fetchable.
    """
    detail = f"{type(exc).__name__}: {exc}"[:300]
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return "tls:certificate", detail
    if isinstance(exc, aiohttp.ClientSSLError):
        return "tls:handshake", detail
    if isinstance(exc, aiohttp.ClientConnectorError):
        inner: Any = getattr(exc, "os_error", None)
        if isinstance(inner, ListedAddress):
            return "excluded", str(inner)
        if isinstance(inner, Refused):
            return "address_refused", str(inner)
        if isinstance(exc, aiohttp.ClientConnectorDNSError):
            return _dns_error(exc.host, inner)
        return "connect", f"cannot connect to {exc.host} port {exc.port}: {_why(inner, exc)}"
    if isinstance(exc, ListedAddress):
        return "excluded", str(exc)
    if isinstance(exc, Refused):
        return "address_refused", str(exc)
    if isinstance(exc, TimeoutError):  # includes aiohttp.ServerTimeoutError
        return "timeout", detail
    if isinstance(exc, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError | ValueError):
        return "invalid_url", detail
    if isinstance(exc, aiohttp.ClientResponseError) and "chunk size" in str(exc).lower():
        return "bad_chunking", detail  # the chunk came with the headers (see _read_some)
    if isinstance(exc, aiohttp.ClientResponseError | aiohttp.ClientPayloadError):
        return "protocol", detail
    return "network", detail  # ServerDisconnectedError, ClientOSError, other OSError
