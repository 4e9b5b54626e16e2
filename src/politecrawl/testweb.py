"""The bundled local test web: many virtual hosts on one 127.0.0.1 port, chosen by Host header.

Used by the test-suite, the benchmarks (1000+ hosts) and ``politecrawl demo``. The crawler
reaches it through ``--resolve "*.test:PORT:127.0.0.1"``, so URLs look like
``http://h17.test:PORT/p/3.html``. Everything is deterministic from ``seed`` (and the port,
which appears in absolute links).

Hosts are ``h0.test`` ... ``h{n_hosts + extra_hosts - 1}.test``; all of them are served, the
first ``n_hosts`` are the seeds (``seed_urls()``), the extra ones are reached only via links.

Normal pages (``SiteSpec.pages``): ``/`` and ``/p/{i}.html`` for ``i`` in 1..pages_per_host-1.
Each page links to the next two pages (wrapping to ``/``), so every page stays reachable
even when robots.txt blocks a single one, plus random same-host links in mixed forms
(relative, ``../``, absolute-path, absolute URL), 1-3 links to other hosts, and a hidden
link in an HTML comment, a ``<script>`` string and a ``<form action>`` (never to be fetched).
The home page of odd-numbered hosts has ``<base href="/p/">``; pages with ``i % 4 == 3`` have
an absolute-URL ``<base href>``; pages with ``i % 5 == 2`` have an ``<area href>`` in a
``<map>`` pointing at ``/only-from-area.html``.

Special links (every host links each of them, from pages 1, 3 and 5, wrapped when a host
has fewer pages; see ``SPECIAL_BUNDLES``):

* ``/redirect/{n}`` -> 301 ``/redirect/{n-1}``; ``/redirect/0`` -> 302 ``/p/1.html``.
  Pages link ``/redirect/2`` and ``/redirect/5`` (over a 3-hop cap).
* ``/loop`` -> 302 ``/loop2`` -> 302 ``/loop``.
* ``/status/{code}``: that code with a tiny HTML body (linked: 403, 404, 410, 429, 500,
  503; 429 and 503 carry ``Retry-After: 1``).
* ``/gz.html``: gzip-encoded when the request accepts gzip; links ``/only-from-gz.html``.
* ``/cross`` -> 301 to the next host's home page.
* ``/private/secret.html``, ``/private/x.html``: disallowed by most robots variants.
* ``/meta-nofollow.html``: ``<meta name="robots" content="nofollow">``, links
  ``/only-from-meta-nofollow.html`` (must not be fetched).
* ``/noindex.html``: ``<meta name="robots" content="noindex">``, links
  ``/only-from-noindex.html`` (may be fetched: noindex is not nofollow).
* ``/xrobots.html``: ``X-Robots-Tag: noindex, nofollow``, links ``/only-from-xrobots.html``
  (must not be fetched).
* ``rel="nofollow"`` link to ``/nofollow-target.html``; ``/img/photo.jpg`` (image/jpeg),
  ``/files/doc.pdf`` (application/pdf); ``/bin/data`` (application/octet-stream, 200 KB
  streamed: to be abandoned after the headers).

All of these exist and answer 200 (so a test sees any wrong fetch in the access log);
``NEVER_FETCH`` lists those a correct crawler never requests. HTML pages carry ``ETag`` and
``Last-Modified`` and answer 304 to matching ``If-None-Match`` / ``If-Modified-Since``.

robots.txt variants by host index (``ROBOTS_VARIANTS``; hosts 0 and > 10 are ``standard``,
only the variants whose index exists are used):

==  ================  ===========================================================
 0  standard          ``User-agent: *`` / ``Disallow: /private/``
 1  crawl-delay       standard + ``Crawl-delay: 0.3``
 2  testbot           ``User-agent: testbot`` disallows ``/p/2.html``; ``*`` allows all
 3  404               robots.txt answers 404 (everything allowed)
 4  500               robots.txt answers 500 (nothing else may be fetched)
 5  text-html         standard body served as ``text/html``
 6  redirect          301 to ``/robots-real.txt`` which serves the standard body
 7  disallow-all      ``Disallow: /`` (only robots.txt may be fetched)
 8  longest-match     ``Disallow: /p/`` then ``Allow: /p/1.html`` (+ ``/private/``)
 9  bom               UTF-8 BOM + standard + ``Crawl-delay: 0.3``
10  503               robots.txt answers 503 (nothing else may be fetched)
==  ================  ===========================================================

``plain=True`` (``--plain``) serves normal pages only: the standard robots.txt on every host,
no special links, no ``<area>`` page — every request is a 200 that costs no backoff, for
measuring how close the crawler comes to the rate its politeness allows.

``latency_s`` sleeps before each response. Unknown hosts and paths answer 404 (and are logged).
Every request is recorded in ``access_log`` (and as a JSON line in ``access_log_path``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import itertools
import json
import random
import signal
import sys
import time
import zlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import IO, Self

from aiohttp import web

from politecrawl.errors import ConfigError

__all__ = [
    "NEVER_FETCH",
    "ROBOTS_VARIANTS",
    "SPECIAL_BUNDLES",
    "AccessEntry",
    "SiteSpec",
    "TestWeb",
    "load_access_log",
    "main",
    "politeness_violations",
]


@dataclass(frozen=True, slots=True)
class AccessEntry:
    """One request as the server saw it."""

    host: str
    path: str
    method: str
    status: int
    start: float
    end: float
    user_agent: str
    headers: dict[str, str]


@dataclass(frozen=True, slots=True)
class SiteSpec:
    """What one host is, so tests can compute ground truth."""

    host: str
    robots: str | None
    robots_status: int
    robots_content_type: str
    pages: list[str]


_STANDARD = "User-agent: *\nDisallow: /private/\n"

ROBOTS_VARIANTS: dict[int, str] = {
    1: "crawl-delay",
    2: "testbot",
    3: "404",
    4: "500",
    5: "text-html",
    6: "redirect",
    7: "disallow-all",
    8: "longest-match",
    9: "bom",
    10: "503",
}
"""Host index -> robots.txt variant name; every other index is ``standard``."""

# variant -> (body or None, status, content type)
_ROBOTS: dict[str, tuple[str | None, int, str]] = {
    "standard": (_STANDARD, 200, "text/plain"),
    "crawl-delay": ("User-agent: *\nCrawl-delay: 0.3\nDisallow: /private/\n", 200, "text/plain"),
    "testbot": (
        "# testbot may not see page 2; everyone else sees everything\n"
        "User-agent: testbot\nDisallow: /p/2.html\n\nUser-agent: *\nDisallow:\n",
        200,
        "text/plain",
    ),
    "404": (None, 404, "text/plain"),
    "500": (None, 500, "text/plain"),
    "text-html": (_STANDARD, 200, "text/html"),
    "redirect": (_STANDARD, 301, "text/plain"),
    "disallow-all": ("User-agent: *\nDisallow: /\n", 200, "text/plain"),
    "longest-match": (
        "User-agent: *\nDisallow: /p/\nAllow: /p/1.html\nDisallow: /private/\n",
        200,
        "text/plain",
    ),
    "bom": ("\ufeff" + _STANDARD + "Crawl-delay: 0.3\n", 200, "text/plain"),
    "503": (None, 503, "text/plain"),
}

SPECIAL_BUNDLES: tuple[tuple[str, ...], ...] = (
    ("/redirect/2", "/gz.html", "/noindex.html", "/img/photo.jpg", "/files/doc.pdf"),
    ("/status/404", "/status/410", "/status/403", "/status/500", "/loop", "/cross",
     "/private/secret.html"),
    ("/status/503", "/status/429", "/redirect/5", "/meta-nofollow.html", "/xrobots.html",
     "/bin/data", "/private/x.html"),
)  # fmt: skip
"""Special links, by bundle; bundle k sits on page ``/p/{2k+1}.html`` (wrapped)."""

NEVER_FETCH: frozenset[str] = frozenset(
    {
        "/nofollow-target.html",
        "/hidden-comment.html",
        "/hidden-script.html",
        "/hidden-form.html",
        "/img/photo.jpg",
        "/files/doc.pdf",
        "/only-from-meta-nofollow.html",
        "/only-from-xrobots.html",
    }
)
"""Paths present on every host that a correct crawler never requests."""

_LAST_MODIFIED = "Mon, 01 Jan 2024 00:00:00 GMT"
_LAST_MODIFIED_TS = 1704067200.0
_HTML = "text/html; charset=utf-8"
_BIN_SIZE = 200 * 1024
_BIN_CHUNK = 16 * 1024
_MAX_REDIRECT = 50

_WORD_TEXT = (
    "garden river harbor lantern meadow orchard pebble quarry ribbon saddle timber valley "
    "willow anchor beacon canyon delta ember falcon glacier hollow island jasmine kettle "
    "ledger marble nectar oasis prairie quill raven summit thicket umber velvet wander "
    "yonder zephyr bridge candle drift echo fable grove heron inlet juniper kiln lagoon "
    "mosaic north ochre pillar quiet ridge spruce tide upland vessel wharf amber basalt "
    "cedar dune estuary fern granite heath ivory jetty kelp lichen mill nook osprey "
    "the a of and to in is was for on with as by at from that this which their our"
)
_WORDS = _WORD_TEXT.split()

_TOPICS = (
    "Gardening", "Rivers", "Lighthouses", "Orchards", "Quarries", "Timber", "Glaciers",
    "Islands", "Harbors", "Meadows", "Canyons", "Falcons", "Lagoons", "Mosaics", "Basalt",
)  # fmt: skip

_JPEG = (
    b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    + bytes(range(256)) * 4
    + b"\xff\xd9"
)
_PDF = (
    b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
    b"2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\n"
    b"trailer << /Root 1 0 R >>\n%%EOF\n"
)
_BIN = bytes((i * 7919 + 13) % 251 for i in range(_BIN_SIZE))


@dataclass(frozen=True, slots=True)
class _Reply:
    """A pre-rendered response."""

    status: int
    headers: dict[str, str]
    body: bytes
    gz_body: bytes | None = None
    etag: str | None = None


def _page(title: str, body: str, head: str = "") -> str:
    """A small complete HTML document."""
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n{head}</head>\n<body>\n<h1>{title}</h1>\n{body}\n"
        "</body>\n</html>\n"
    )


def _html_reply(text: str, extra: dict[str, str] | None = None, status: int = 200) -> _Reply:
    """An HTML reply with validators."""
    body = text.encode("utf-8")
    etag = f'"{zlib.crc32(body):08x}-{len(body):x}"'
    headers = {"Content-Type": _HTML, "ETag": etag, "Last-Modified": _LAST_MODIFIED}
    if extra:
        headers.update(extra)
    return _Reply(status, headers, body, etag=etag)


def _tiny_status(code: int) -> _Reply:
    """A tiny HTML body for ``/status/{code}``."""
    headers = {"Content-Type": _HTML}
    if code in (429, 503):
        headers["Retry-After"] = "1"
    return _Reply(code, headers, f"<html><body><p>status {code}</p></body></html>\n".encode())


def _redirect(status: int, location: str) -> _Reply:
    """A redirect with a tiny body."""
    body = f'<html><body><a href="{location}">moved</a></body></html>\n'.encode()
    return _Reply(status, {"Content-Type": _HTML, "Location": location}, body)


_NOT_FOUND = _Reply(404, {"Content-Type": _HTML}, b"<html><body>not found</body></html>\n")
_UNKNOWN_HOST = _Reply(404, {"Content-Type": "text/plain"}, b"unknown host\n")


def _not_modified(reply: _Reply, req_headers: Mapping[str, str]) -> bool:
    """Whether a conditional request matches ``reply``'s validators."""
    inm = req_headers.get("If-None-Match")
    if inm is not None:
        tags = {t.strip().removeprefix("W/") for t in inm.split(",")}
        return "*" in tags or reply.etag in tags
    ims = req_headers.get("If-Modified-Since")
    if ims is not None:
        try:
            return parsedate_to_datetime(ims).timestamp() >= _LAST_MODIFIED_TS
        except (TypeError, ValueError, IndexError):
            return False
    return False


async def serve_loopback(
    handler: Callable[[web.BaseRequest], Awaitable[web.StreamResponse]], port: int = 0
) -> tuple[web.ServerRunner, int]:
    """Serve ``handler`` on 127.0.0.1 (a free port when 0): every local test web starts so."""
    runner = web.ServerRunner(web.Server(handler, access_log=None), shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=2048, reuse_address=True)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner, int(runner.addresses[0][1])


class TestWeb:
    """Many deterministic virtual hosts served by one aiohttp server on 127.0.0.1."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        n_hosts: int = 20,
        pages_per_host: int = 10,
        seed: int = 1,
        suffix: str = "test",
        access_log_path: str | None = None,
        latency_s: float = 0.0,
        extra_hosts: int = 0,
        port: int = 0,
        plain: bool = False,
        rich: bool = False,
    ) -> None:
        if n_hosts < 1 or pages_per_host < 1 or extra_hosts < 0:
            raise ConfigError("need n_hosts >= 1, pages_per_host >= 1, extra_hosts >= 0")
        self.n_hosts = n_hosts
        self.pages_per_host = pages_per_host
        self.seed = seed
        self.suffix = suffix
        self.access_log_path = access_log_path
        self.latency_s = latency_s
        self.port = port
        self.rich = rich  # realistic pages: 30-100 links, tens of KB of markup (implies plain)
        self.plain = plain or rich
        plain = self.plain
        self.hosts: list[str] = [f"h{i}.{suffix}" for i in range(n_hosts + extra_hosts)]
        self._index: dict[str, int] = {h: i for i, h in enumerate(self.hosts)}
        pages = ["/"] + [f"/p/{i}.html" for i in range(1, pages_per_host)]
        self.sites: dict[str, SiteSpec] = {}
        for i, h in enumerate(self.hosts):
            variant = "standard" if plain else ROBOTS_VARIANTS.get(i, "standard")
            body, status, ctype = _ROBOTS[variant]
            self.sites[h] = SiteSpec(h, body, status, ctype, list(pages))
        self.access_log: list[AccessEntry] = []
        self._cache: dict[tuple[int, str], _Reply] = {}
        self._log_file: IO[str] | None = None
        self._runner: web.ServerRunner | None = None

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Bind 127.0.0.1 (on a free port unless ``port`` was given) and start serving."""
        if self._runner is not None:
            raise RuntimeError("TestWeb already started")
        if self.access_log_path is not None:
            self._log_file = open(self.access_log_path, "w", buffering=1, encoding="utf-8")  # noqa: SIM115
        self._runner, self.port = await serve_loopback(self._handle, self.port)
        self._cache.clear()  # absolute links embed the port
        if self.rich:  # rendered before the first request: a benchmark measures the crawler
            for idx in range(len(self.hosts)):
                for path in self.sites[self.hosts[idx]].pages:
                    self._lookup(idx, path)

    async def stop(self) -> None:
        """Stop serving and close the access log file."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

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

    # -- addresses -------------------------------------------------------------------------

    def url(self, host: str, path: str = "/") -> str:
        """``http://HOST:PORT/path``."""
        if not path.startswith("/"):
            path = "/" + path
        return f"http://{host}:{self.port}{path}"

    def resolve_arg(self) -> str:
        """The curl-style ``--resolve`` override: ``*.SUFFIX:PORT:127.0.0.1``."""
        return f"*.{self.suffix}:{self.port}:127.0.0.1"

    def seed_urls(self, n: int | None = None) -> list[str]:
        """Home pages of the first ``n`` hosts (default: the ``n_hosts`` seed hosts)."""
        count = self.n_hosts if n is None else min(n, len(self.hosts))
        return [self.url(h) for h in self.hosts[:count]]

    # -- request handling ------------------------------------------------------------------

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        start = time.time()
        host = request.headers.get("Host", "").lower().partition(":")[0].rstrip(".")
        status = 0  # stays 0 if no response was made (e.g. cancelled at shutdown)
        try:
            if self.latency_s > 0:
                await asyncio.sleep(self.latency_s)
            idx = self._index.get(host)
            if idx is None:
                reply = _UNKNOWN_HOST
            elif request.path == "/bin/data":
                status = 200
                resp = await self._stream_bin(request)
                return resp
            else:
                reply = self._lookup(idx, request.path)
            body = reply.body
            headers = reply.headers
            if reply.etag is not None and _not_modified(reply, request.headers):
                resp = web.Response(status=304, headers={"ETag": reply.etag})
            else:
                if reply.gz_body is not None:
                    headers = dict(headers)
                    headers["Vary"] = "Accept-Encoding"
                    if "gzip" in request.headers.get("Accept-Encoding", ""):
                        body = reply.gz_body
                        headers["Content-Encoding"] = "gzip"
                resp = web.Response(status=reply.status, headers=headers, body=body)
            status = resp.status
            try:
                await resp.prepare(request)
                await resp.write_eof()
            except ConnectionError:
                pass
            return resp
        finally:
            self._record(request, host, status, start, time.time())

    async def _stream_bin(self, request: web.BaseRequest) -> web.StreamResponse:
        """200 KB of octet-stream, written in chunks so an early client close is noticed."""
        resp = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
        resp.content_length = _BIN_SIZE
        try:
            await resp.prepare(request)
            if request.method != "HEAD":
                view = memoryview(_BIN)
                for off in range(0, _BIN_SIZE, _BIN_CHUNK):
                    await resp.write(view[off : off + _BIN_CHUNK])
            await resp.write_eof()
        except ConnectionError:
            pass
        return resp

    def _record(
        self, request: web.BaseRequest, host: str, status: int, start: float, end: float
    ) -> None:
        headers = dict(request.headers)
        entry = AccessEntry(
            host=host,
            path=request.raw_path,
            method=request.method,
            status=status,
            start=start,
            end=end,
            user_agent=request.headers.get("User-Agent", ""),
            headers=headers,
        )
        self.access_log.append(entry)
        if self._log_file is not None:
            self._log_file.write(_entry_json(entry) + "\n")

    def _lookup(self, idx: int, path: str) -> _Reply:
        """The reply for ``path`` on host ``idx`` (cached when static)."""
        key = (idx, path)
        reply = self._cache.get(key)
        if reply is not None:
            return reply
        if path.startswith("/redirect/"):
            return self._redirect_reply(path)
        if path.startswith("/status/"):
            try:
                code = int(path[8:])
            except ValueError:
                return _NOT_FOUND
            ok = 200 <= code < 300 or 400 <= code < 600
            return _tiny_status(code) if ok else _NOT_FOUND
        made = self._build(idx, path)
        if made is None:
            return _NOT_FOUND
        self._cache[key] = made
        return made

    def _redirect_reply(self, path: str) -> _Reply:
        try:
            n = int(path[10:])
        except ValueError:
            return _NOT_FOUND
        if n < 0 or n > _MAX_REDIRECT or path[10:] != str(n):
            return _NOT_FOUND
        if n == 0:
            return _redirect(302, "/p/1.html" if self.pages_per_host > 1 else "/")
        return _redirect(301, f"/redirect/{n - 1}")

    # -- content ---------------------------------------------------------------------------

    def _build(self, idx: int, path: str) -> _Reply | None:
        """Render a static path of host ``idx``, or None if it does not exist."""
        host = self.hosts[idx]
        if path == "/":
            return _html_reply(self._render(idx, 0))
        if path.startswith("/p/") and path.endswith(".html"):
            num = path[3:-5]
            if num.isdigit() and num == str(int(num)) and 1 <= int(num) < self.pages_per_host:
                return _html_reply(self._render(idx, int(num)))
            return None
        if path == "/robots.txt":
            return self._robots_reply(idx)
        if path == "/robots-real.txt":
            spec = self.sites[host]
            if spec.robots_status != 301 or spec.robots is None:
                return None
            return _Reply(200, {"Content-Type": "text/plain; charset=utf-8"},
                          spec.robots.encode("utf-8"))  # fmt: skip
        home = '<p><a href="/">Home</a></p>'
        if path == "/gz.html":
            text = _page(
                f"Compressed page of {host}",
                "<p>This page travels gzip-encoded.</p>\n"
                '<p><a href="/only-from-gz.html">Only linked from the gzip page</a></p>\n' + home,
            )
            reply = _html_reply(text)
            gz = gzip.compress(reply.body, mtime=0)
            return _Reply(reply.status, reply.headers, reply.body, gz, reply.etag)
        if path == "/cross":
            other = self.hosts[(idx + 1) % len(self.hosts)]
            return _redirect(301, self.url(other, "/"))
        if path == "/loop":
            return _redirect(302, "/loop2")
        if path == "/loop2":
            return _redirect(302, "/loop")
        if path == "/meta-nofollow.html":
            return _html_reply(_page(
                "Meta nofollow",
                '<p><a href="/only-from-meta-nofollow.html">Not to be followed</a></p>',
                '<meta name="robots" content="nofollow">\n',
            ))  # fmt: skip
        if path == "/noindex.html":
            return _html_reply(_page(
                "Noindex",
                '<p><a href="/only-from-noindex.html">Followable link</a></p>\n' + home,
                '<meta name="robots" content="noindex">\n',
            ))  # fmt: skip
        if path == "/xrobots.html":
            return _html_reply(
                _page("X-Robots-Tag", '<p><a href="/only-from-xrobots.html">Not followed</a></p>'),
                {"X-Robots-Tag": "noindex, nofollow"},
            )
        if path == "/sitemap-index.xml":
            loc = self.url(host, "/sitemap-pages.xml.gz")
            xml = (
                '<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns='
                '"http://www.sitemaps.org/schemas/sitemap/0.9">\n'
                f"<sitemap><loc>{loc}</loc></sitemap>\n</sitemapindex>\n"
            )
            return _Reply(200, {"Content-Type": "application/xml"}, xml.encode())
        if path == "/sitemap-pages.xml.gz":
            locs = [*self.sites[host].pages, "/orphan.html"]
            xml = (
                '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns='
                '"http://www.sitemaps.org/schemas/sitemap/0.9">\n'
                + "".join(
                    f"<url><loc>{self.url(host, p)}</loc><changefreq>daily</changefreq></url>\n"
                    for p in locs
                )
                + "</urlset>\n"
            )
            return _Reply(
                200, {"Content-Type": "application/x-gzip"}, gzip.compress(xml.encode(), mtime=0)
            )
        if path == "/orphan.html":
            return _html_reply(_page("Orphan", f"<p>Only listed in the sitemap of {host}</p>"))
        if path == "/img/photo.jpg":
            return _Reply(200, {"Content-Type": "image/jpeg"}, _JPEG)
        if path == "/files/doc.pdf":
            return _Reply(200, {"Content-Type": "application/pdf"}, _PDF)
        if path in _SIMPLE_PAGES:
            return _html_reply(_page(_SIMPLE_PAGES[path], f"<p>{host}{path}</p>\n{home}"))
        return None

    def _robots_reply(self, idx: int) -> _Reply:
        spec = self.sites[self.hosts[idx]]
        if spec.robots_status == 301:
            return _redirect(301, "/robots-real.txt")
        if spec.robots is None:
            return _Reply(spec.robots_status, {"Content-Type": "text/plain"},
                          f"error {spec.robots_status}\n".encode())  # fmt: skip
        ctype = f"{spec.robots_content_type}; charset=utf-8"
        body = spec.robots
        if self.plain or ROBOTS_VARIANTS.get(idx, "standard") == "standard":
            body += f"Sitemap: {self.url(spec.host, '/sitemap-index.xml')}\n"
        return _Reply(spec.robots_status, {"Content-Type": ctype}, body.encode("utf-8"))

    def _page_href(self, idx: int, target: int, style: int, root_dir: bool) -> str:
        """A link to page ``target`` in one of four forms, relative to the effective base."""
        path = "/" if target == 0 else f"/p/{target}.html"
        if style == 0:
            return self.url(self.hosts[idx], path)
        if style == 1:
            return path
        if root_dir:
            return "./" if target == 0 else ("p/" if style == 2 else "./p/") + f"{target}.html"
        if target == 0:
            return "../"
        return f"{target}.html" if style == 2 else f"../p/{target}.html"

    def _render_rich(self, idx: int, num: int) -> str:
        """A page the size and shape of a real one: styles, scripts, a menu, 30-100 links
        (three in five to the same site), a dozen paragraphs; 30-38 KB of markup (about the
        median HTML document of the HTTP Archive's crawls)."""
        rng = random.Random(f"rich/{self.seed}/{idx}/{num}")
        host, n, total = self.hosts[idx], self.pages_per_host, len(self.hosts)
        topic = _TOPICS[(idx * 7 + num + self.seed) % len(_TOPICS)]
        title = f"{topic}, part {num} ({host})"
        links: list[str] = []
        for _ in range(rng.randint(30, 100)):
            if rng.random() < 0.6 or total == 1:
                t = rng.randrange(n)
                links.append("/" if t == 0 else f"/p/{t}.html")
            else:
                j, t = rng.randrange(total), rng.randrange(n)
                links.append(self.url(self.hosts[j], "/" if t == 0 else f"/p/{t}.html"))
        menu = "".join(
            f'<li class="menu-item"><a class="menu-link" href="{href}">'
            f"{_TOPICS[k % len(_TOPICS)]}</a></li>\n"
            for k, href in enumerate(links[: len(links) // 3])
        )
        paras = []
        pending = links[len(links) // 3 :]
        for _ in range(rng.randint(10, 16)):
            words = rng.choices(_WORDS, k=rng.randint(60, 120))
            if pending:
                href = pending.pop()
                k = rng.randrange(len(words))
                words[k] = f'<a href="{href}" title="{words[k]}">{words[k]}</a>'
            paras.append('<p class="body-text">' + " ".join(words) + ".</p>")
        rest = "".join(f'<li><a href="{h}">{_WORDS[i % len(_WORDS)]}</a></li>' for i, h in
                       enumerate(pending))  # fmt: skip
        body = (
            f'<header class="site-header"><nav aria-label="main"><ul class="menu">\n{menu}</ul>'
            f"</nav></header>\n<main><article>\n{''.join(paras)}\n</article>\n"
            f'<aside><h2>Read more</h2><ul class="related">{rest}</ul></aside></main>\n'
            f'<footer class="site-footer"><p>&copy; {host}</p></footer>\n'
            f"<script>{_RICH_JS}</script>"
        )
        return _page(title, body, f"<style>{_RICH_CSS}</style>\n")

    def _render(self, idx: int, num: int) -> str:
        """The HTML of page ``num`` (0 = home) of host ``idx``."""
        if self.rich:
            return self._render_rich(idx, num)
        rng = random.Random(f"{self.seed}/{idx}/{num}")
        host = self.hosts[idx]
        n = self.pages_per_host
        total = len(self.hosts)
        topic = _TOPICS[(idx * 7 + num + self.seed) % len(_TOPICS)]
        title = f"{topic} on {host}" if num == 0 else f"{topic}, part {num} ({host})"

        head = ""
        root_dir = num == 0
        if num == 0 and idx % 2 == 1:
            head = '<base href="/p/">\n'
            root_dir = False
        elif num % 4 == 3:
            head = f'<base href="{self.url(host, "/p/")}">\n'

        links: list[tuple[str, str, str]] = []  # (href, text, extra attributes)
        if n > 1:
            targets = [(num + 1) % n, (num + 2) % n]
            targets += [rng.randrange(n) for _ in range(rng.randint(3, 8))]
            for t in targets:
                href = self._page_href(idx, t, rng.randrange(4), root_dir)
                if rng.random() < 0.1 and href.endswith(".html"):
                    href += "#section-2"
                label = "the home page" if t == 0 else f"{_TOPICS[t % len(_TOPICS)].lower()} {t}"
                links.append((href, label, ""))
        if total > 1:
            for _ in range(rng.randint(1, 3)):
                j = rng.randrange(total - 1)
                j = j + 1 if j >= idx else j
                t = rng.randrange(n) if rng.random() < 0.5 else 0
                tpath = "/" if t == 0 else f"/p/{t}.html"
                links.append((self.url(self.hosts[j], tpath), f"a friend at h{j}", ""))
        for k, bundle in enumerate(() if self.plain else SPECIAL_BUNDLES):
            if num == (2 * k + 1) % n:
                links.extend((p, p.strip("/").replace("/", " "), "") for p in bundle)
                if k == 0:
                    links.append(("/nofollow-target.html", "sponsored", ' rel="nofollow"'))
        rng.shuffle(links)

        paras: list[str] = []
        pending = list(links)
        inline = max(1, len(pending) // 5)  # links per paragraph; the rest go to a list
        for _ in range(rng.randint(3, 4)):
            words = rng.choices(_WORDS, k=rng.randint(25, 50))
            parts: list[str] = []
            for w_i in range(0, len(words), 10):
                sentence = " ".join(words[w_i : w_i + 10])
                parts.append(sentence[:1].upper() + sentence[1:] + ".")
                if pending and w_i // 10 < inline:
                    href, text, attrs = pending.pop()
                    parts.append(f'See <a href="{href}"{attrs}>{text}</a>.')
            paras.append("<p>" + " ".join(parts) + "</p>")
        related = "".join(
            f'<li><a href="{href}"{attrs}>{text}</a></li>\n' for href, text, attrs in pending
        )
        top = "" if head else ' | <a href="#top">Top</a>'  # "#top" would resolve via <base>
        nav = f'<nav><a href="/">Home</a>{top} | <a href="mailto:info@{host}">Contact</a></nav>'
        body = [nav, *paras]
        if related:
            body.append(f'<h2>Related</h2>\n<ul class="related">\n{related}</ul>')
        if num % 5 == 2 and not self.plain:
            body.append(
                '<img src="/img/map.png" usemap="#m" alt="map">\n<map name="m">'
                '<area shape="rect" coords="0,0,10,10" href="/only-from-area.html" alt="area">'
                "</map>"
            )
        body.append(
            '<!-- old navigation: <a href="/hidden-comment.html">archive</a> -->\n'
            '<script>var next = "/hidden-script.html";'
            " document.write('<a href=\"/hidden-script.html\">more</a>');</script>\n"
            '<form action="/hidden-form.html" method="get"><input name="q">'
            '<button type="submit">Search</button></form>'
        )
        body.append(f"<footer><p>&copy; {host}, seed {self.seed}.</p></footer>")
        return _page(title, "\n".join(body), head)


# Static weight of a real page: a stylesheet and a script inline (about 6 KB and 14 KB).
_RICH_CSS = "".join(
    f".c{i} {{ margin: {i % 7}px {i % 5}px; padding: 0 {i % 3}em;"
    f" color: #{i * 2654435761 % 0xFFFFFF:06x}; font: {12 + i % 6}px/1.{i % 9} sans-serif; }}\n"
    for i in range(60)
)
_RICH_JS = "".join(
    f"function f{i}(a, b) {{ var x = a * {i} + b; if (x > {i * 7}) {{ return document"
    f'.querySelectorAll(".c{i}").length + x; }} return window.innerWidth - x; }}\n'
    for i in range(120)
)

_SIMPLE_PAGES: dict[str, str] = {
    "/nofollow-target.html": "Nofollow target",
    "/hidden-comment.html": "Hidden in a comment",
    "/hidden-script.html": "Hidden in a script",
    "/hidden-form.html": "Hidden form target",
    "/private/secret.html": "Secret",
    "/private/x.html": "Private X",
    "/only-from-meta-nofollow.html": "Only from meta nofollow",
    "/only-from-noindex.html": "Only from noindex",
    "/only-from-xrobots.html": "Only from X-Robots-Tag",
    "/only-from-gz.html": "Only from the gzip page",
    "/only-from-area.html": "Only from an area link",
}


def _entry_json(entry: AccessEntry) -> str:
    return json.dumps(
        {
            "host": entry.host,
            "path": entry.path,
            "method": entry.method,
            "status": entry.status,
            "start": entry.start,
            "end": entry.end,
            "user_agent": entry.user_agent,
            "headers": entry.headers,
        },
        separators=(",", ":"),
    )


def load_access_log(path: str) -> list[AccessEntry]:
    """Read a JSON-lines access log; an incomplete last line (writer killed) is skipped."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    entries: list[AccessEntry] = []
    last = len(lines) - 1
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            if i == last:
                break
            raise
        entries.append(
            AccessEntry(
                host=str(d["host"]),
                path=str(d["path"]),
                method=str(d["method"]),
                status=int(d["status"]),
                start=float(d["start"]),
                end=float(d["end"]),
                user_agent=str(d.get("user_agent", "")),
                headers={str(k): str(v) for k, v in d.get("headers", {}).items()},
            )
        )
    return entries


_TOLERANCE_S = 0.005


def politeness_violations(
    entries: list[AccessEntry], min_gap_s: float, tolerance_s: float = _TOLERANCE_S
) -> list[str]:
    """Per host: overlapping requests ("concurrent ...") and too-close starts ("gap ...").

    ``tolerance_s`` absorbs clock granularity; a server sharing the crawler's event loop (the
    in-process tests) needs more, since its handler starts late when the loop is busy.
    """
    by_host: dict[str, list[AccessEntry]] = {}
    for e in entries:
        by_host.setdefault(e.host, []).append(e)
    problems: list[str] = []
    for host in sorted(by_host):
        seq = sorted(by_host[host], key=lambda e: (e.start, e.end))
        busy = seq[0]  # the earlier request that ends last
        for prev, cur in itertools.pairwise(seq):
            if cur.start < busy.end:
                problems.append(
                    f"concurrent {host}: {cur.method} {cur.path} started at {cur.start:.6f} "
                    f"before {busy.method} {busy.path} ended at {busy.end:.6f}"
                )
            gap = cur.start - prev.start
            if gap < min_gap_s - tolerance_s:
                problems.append(
                    f"gap {host}: {cur.method} {cur.path} started {gap:.3f} s after "
                    f"{prev.method} {prev.path} (min {min_gap_s:.3f} s)"
                )
            if cur.end > busy.end:
                busy = cur
    return problems


async def _serve(args: argparse.Namespace) -> None:
    web_ = TestWeb(
        n_hosts=args.hosts,
        pages_per_host=args.pages,
        seed=args.seed,
        suffix=args.suffix,
        access_log_path=args.access_log,
        latency_s=args.latency,
        extra_hosts=args.extra_hosts,
        port=args.port,
        plain=args.plain,
        rich=args.rich,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await web_.start()
    try:
        print(f"serving {len(web_.hosts)} hosts on 127.0.0.1:{web_.port}", flush=True)
        await stop.wait()
    finally:
        await web_.stop()


def main(argv: list[str] | None = None) -> int:
    """``python -m politecrawl.testweb``: serve the test web until SIGINT/SIGTERM."""
    p = argparse.ArgumentParser(
        prog="python -m politecrawl.testweb", description="Serve the politecrawl local test web."
    )
    p.add_argument("--hosts", type=int, default=20, help="number of seed hosts")
    p.add_argument("--pages", type=int, default=10, help="pages per host")
    p.add_argument("--port", type=int, default=0, help="port (0: a free one)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--suffix", default="test", help="host name suffix")
    p.add_argument("--access-log", default=None, help="JSON-lines access log file")
    p.add_argument("--latency", type=float, default=0.0, help="seconds before each response")
    p.add_argument("--extra-hosts", type=int, default=0, help="hosts reached only via links")
    p.add_argument(
        "--plain",
        action="store_true",
        help="normal pages only: standard robots.txt everywhere, no special links or error pages",
    )
    p.add_argument(
        "--rich",
        action="store_true",
        help="realistic pages (implies --plain): 30-100 links and 30-38 KB of markup each",
    )
    args = p.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
