"""What each path of a test-web host answers: robots.txt variants, special paths, replies.

The fixed catalogue of the test web (``ROBOTS_VARIANTS``, the special paths and
``NEVER_FETCH``, the sitemaps, the binary fixtures) and ``build_reply``, which renders the
static reply for a path of a host (normal pages through ``demo.pages``). Replies are
pre-rendered values (``Reply``) with their validators, so the server (``demo.web``) only
picks one and answers conditional requests (``not_modified``). Kept apart from the server
so that what the web contains, the ground truth tests compare against, reads in one place.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Protocol

from politecrawl.demo.pages import PageSource, page, render_page

__all__ = [
    "NEVER_FETCH",
    "NOT_FOUND",
    "ROBOTS_FILES",
    "ROBOTS_VARIANTS",
    "UNKNOWN_HOST",
    "Reply",
    "SiteSource",
    "SiteSpec",
    "build_reply",
    "not_modified",
    "redirect_to",
    "status_reply",
]


@dataclass(frozen=True, slots=True)
class SiteSpec:
    """What one host is, so tests can compute ground truth."""

    host: str
    robots: str | None
    robots_status: int
    robots_content_type: str
    pages: list[str]


class SiteSource(PageSource, Protocol):
    """What ``build_reply`` reads of a test web (``demo.web.TestWeb`` is one)."""

    sites: dict[str, SiteSpec]


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
ROBOTS_FILES: dict[str, tuple[str | None, int, str]] = {
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


@dataclass(frozen=True, slots=True)
class Reply:
    """A pre-rendered response."""

    status: int
    headers: dict[str, str]
    body: bytes
    gz_body: bytes | None = None
    etag: str | None = None


def _html_reply(text: str, extra: dict[str, str] | None = None, status: int = 200) -> Reply:
    """An HTML reply with validators."""
    body = text.encode("utf-8")
    etag = f'"{zlib.crc32(body):08x}-{len(body):x}"'
    headers = {"Content-Type": _HTML, "ETag": etag, "Last-Modified": _LAST_MODIFIED}
    if extra:
        headers.update(extra)
    return Reply(status, headers, body, etag=etag)


def status_reply(code: int) -> Reply:
    """A tiny HTML body for ``/status/{code}``."""
    headers = {"Content-Type": _HTML}
    if code in (429, 503):
        headers["Retry-After"] = "1"
    return Reply(code, headers, f"<html><body><p>status {code}</p></body></html>\n".encode())


def redirect_to(status: int, location: str) -> Reply:
    """A redirect with a tiny body."""
    body = f'<html><body><a href="{location}">moved</a></body></html>\n'.encode()
    return Reply(status, {"Content-Type": _HTML, "Location": location}, body)


NOT_FOUND = Reply(404, {"Content-Type": _HTML}, b"<html><body>not found</body></html>\n")
UNKNOWN_HOST = Reply(404, {"Content-Type": "text/plain"}, b"unknown host\n")


def not_modified(reply: Reply, req_headers: Mapping[str, str]) -> bool:
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


def build_reply(web: SiteSource, idx: int, path: str) -> Reply | None:
    """Render a static path of host ``idx``, or None if it does not exist."""
    host = web.hosts[idx]
    if path == "/":
        return _html_reply(render_page(web, idx, 0))
    if path.startswith("/p/") and path.endswith(".html"):
        num = path[3:-5]
        if num.isdigit() and num == str(int(num)) and 1 <= int(num) < web.pages_per_host:
            return _html_reply(render_page(web, idx, int(num)))
        return None
    if path == "/robots.txt":
        return _robots_reply(web, idx)
    if path == "/robots-real.txt":
        spec = web.sites[host]
        if spec.robots_status != 301 or spec.robots is None:
            return None
        return Reply(200, {"Content-Type": "text/plain; charset=utf-8"},
                      spec.robots.encode("utf-8"))  # fmt: skip
    home = '<p><a href="/">Home</a></p>'
    if path == "/gz.html":
        text = page(
            f"Compressed page of {host}",
            "<p>This page travels gzip-encoded.</p>\n"
            '<p><a href="/only-from-gz.html">Only linked from the gzip page</a></p>\n' + home,
        )
        reply = _html_reply(text)
        gz = gzip.compress(reply.body, mtime=0)
        return Reply(reply.status, reply.headers, reply.body, gz, reply.etag)
    if path == "/cross":
        other = web.hosts[(idx + 1) % len(web.hosts)]
        return redirect_to(301, web.url(other, "/"))
    if path == "/loop":
        return redirect_to(302, "/loop2")
    if path == "/loop2":
        return redirect_to(302, "/loop")
    if path == "/meta-nofollow.html":
        return _html_reply(page(
            "Meta nofollow",
            '<p><a href="/only-from-meta-nofollow.html">Not to be followed</a></p>',
            '<meta name="robots" content="nofollow">\n',
        ))  # fmt: skip
    if path == "/noindex.html":
        return _html_reply(page(
            "Noindex",
            '<p><a href="/only-from-noindex.html">Followable link</a></p>\n' + home,
            '<meta name="robots" content="noindex">\n',
        ))  # fmt: skip
    if path == "/xrobots.html":
        return _html_reply(
            page("X-Robots-Tag", '<p><a href="/only-from-xrobots.html">Not followed</a></p>'),
            {"X-Robots-Tag": "noindex, nofollow"},
        )
    if path == "/sitemap-index.xml":
        loc = web.url(host, "/sitemap-pages.xml.gz")
        xml = (
            '<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns='
            '"http://www.sitemaps.org/schemas/sitemap/0.9">\n'
            f"<sitemap><loc>{loc}</loc></sitemap>\n</sitemapindex>\n"
        )
        return Reply(200, {"Content-Type": "application/xml"}, xml.encode())
    if path == "/sitemap-pages.xml.gz":
        locs = [*web.sites[host].pages, "/orphan.html"]
        xml = (
            '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns='
            '"http://www.sitemaps.org/schemas/sitemap/0.9">\n'
            + "".join(
                f"<url><loc>{web.url(host, p)}</loc><changefreq>daily</changefreq></url>\n"
                for p in locs
            )
            + "</urlset>\n"
        )
        return Reply(
            200, {"Content-Type": "application/x-gzip"}, gzip.compress(xml.encode(), mtime=0)
        )
    if path == "/orphan.html":
        return _html_reply(page("Orphan", f"<p>Only listed in the sitemap of {host}</p>"))
    if path == "/img/photo.jpg":
        return Reply(200, {"Content-Type": "image/jpeg"}, _JPEG)
    if path == "/files/doc.pdf":
        return Reply(200, {"Content-Type": "application/pdf"}, _PDF)
    if path in _SIMPLE_PAGES:
        return _html_reply(page(_SIMPLE_PAGES[path], f"<p>{host}{path}</p>\n{home}"))
    return None


def _robots_reply(web: SiteSource, idx: int) -> Reply:
    spec = web.sites[web.hosts[idx]]
    if spec.robots_status == 301:
        return redirect_to(301, "/robots-real.txt")
    if spec.robots is None:
        return Reply(spec.robots_status, {"Content-Type": "text/plain"},
                      f"error {spec.robots_status}\n".encode())  # fmt: skip
    ctype = f"{spec.robots_content_type}; charset=utf-8"
    body = spec.robots
    if web.plain or ROBOTS_VARIANTS.get(idx, "standard") == "standard":
        body += f"Sitemap: {web.url(spec.host, '/sitemap-index.xml')}\n"
    return Reply(spec.robots_status, {"Content-Type": ctype}, body.encode("utf-8"))


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
