"""A small site for the output tests, served from a thread on 127.0.0.1 (the crawler under
test is a subprocess: it never shares a loop with it), by Host header through ``--resolve``.

``out.test``: a home page linking to ``/a.html``, ``/b.html``, ``/copy-of-b.html`` (the same
bytes as ``/b.html``: a duplicate, kept as a revisit record) and ``/old.html``, which
redirects (301) to ``/new.html``, which links to ``/far.html``. ``slow.test``: one page whose
robots.txt answers after ``SLOW_S``, so a seed there is stored after ``out.test``'s.
``tdm.test``: one page, and a tdmrep.json whose policy URL holds a lone surrogate (a JSON
``\ud800`` escape, which a JSON reader turns into text UTF-8 cannot hold). Every request is
logged as (host, path).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

from aiohttp import web
from newcomerweb import serving

SLOW_S = 1.0
_TEXT = "<p>A page about steam locomotives, the lines they ran on and the people who ran them.</p>"


def _page(title: str, links: tuple[str, ...] = ()) -> bytes:
    a = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    return (
        f"<!doctype html><html><head><title>{title}</title></head>"
        f"<body><h1>{title}</h1>{_TEXT}{a}</body></html>"
    ).encode()


PAGES = {
    "/": _page("Home", ("/a.html", "/b.html", "/copy-of-b.html", "/old.html")),
    "/a.html": _page("Page a"),
    "/b.html": _page("Page b"),
    "/copy-of-b.html": _page("Page b"),  # byte for byte /b.html's
    "/new.html": _page("New", ("/far.html",)),
    "/far.html": _page("Far"),
}
REDIRECTS = {"/old.html": "/new.html"}
TDMREP = b'[{"location": "/", "tdm-reservation": 0, "tdm-policy": "https://tdm.test/p\\ud800"}]'


class OutputSite:
    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []
        self.port = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        host = request.host.split(":")[0]
        self.log.append((host, request.path))
        if host == "tdm.test" and request.path == "/.well-known/tdmrep.json":
            return web.Response(body=TDMREP, content_type="application/json")
        if request.path == "/robots.txt":
            if host == "slow.test":
                await asyncio.sleep(SLOW_S)
            return web.Response(text="User-agent: *\nAllow: /\n")
        if host in ("slow.test", "tdm.test"):
            if request.path == "/":
                return web.Response(body=_page(f"{host} home"), content_type="text/html")
        elif request.path in REDIRECTS:
            raise web.HTTPMovedPermanently(REDIRECTS[request.path])
        elif request.path in PAGES:
            return web.Response(body=PAGES[request.path], content_type="text/html")
        return web.Response(status=404, text="not found")

    def requests(self, host: str = "out.test") -> list[str]:
        return [p for h, p in self.log if h == host]

    def url(self, path: str = "/", host: str = "out.test") -> str:
        return f"http://{host}:{self.port}{path}"

    @property
    def resolve(self) -> str:
        return f"*.test:{self.port}:127.0.0.1"


@contextlib.contextmanager
def output_site() -> Iterator[OutputSite]:
    with serving(OutputSite()) as site:
        yield site
