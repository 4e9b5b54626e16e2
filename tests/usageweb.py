"""A local web whose owners state what their pages may be used for: each form on its own host.

One aiohttp server on 127.0.0.1, hosts told apart by the Host header (the crawler reaches them
all with ``--resolve *.usage.test:PORT:127.0.0.1``). Every site has a home page ``/`` linking
to its pages; a page whose use is refused links to ``/after``, which nothing else links to, so
``/after`` being kept shows the refused page's links were followed. ``EXPECT`` says, per URL
path and host, which sources refuse ``ai-train`` (empty: kept).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from types import TracebackType

from aiohttp import web

SUFFIX = "usage.test"


@dataclass
class Page:
    headers: dict[str, str] = field(default_factory=dict)
    head: str = ""  # extra <head> markup (meta elements)
    links: tuple[str, ...] = ()
    refused_by: tuple[str, ...] = ()  # sources refusing ai-train (empty: kept)


@dataclass
class Site:
    robots: str = "User-agent: *\nAllow: /\n"
    tdmrep: str | None = None  # body of /.well-known/tdmrep.json (None: 404)
    pages: dict[str, Page] = field(default_factory=dict)
    site_refused: bool = False  # ai-train refused at /: nothing but the metadata is fetched


def site_of(pages: dict[str, Page], **kw: object) -> Site:
    home = Page(links=tuple(pages))
    return Site(pages={"/": home, **pages, "/after": Page()}, **kw)  # type: ignore[arg-type]


REFUSED = ("/after",)
SITES: dict[str, Site] = {
    # robots.txt Content-Usage on a path (aipref-attach-04 §3), with a malformed line
    "cu-robots": site_of(
        {"/private/a": Page(links=REFUSED, refused_by=("robots:content-usage",)),
         "/public": Page()},
        robots="User-agent: *\nAllow: /\nContent-Usage: /private/ train-ai=n\n"
        "Content-Usage: /public Train-AI=n\n",
    ),
    # robots.txt Content-Signal for the whole site (Cloudflare's managed robots.txt)
    "cs-robots": site_of(
        {"/a": Page()},
        robots="User-agent: *\nContent-Signal: search=yes, ai-input=yes, ai-train=no\nAllow: /\n",
        site_refused=True,
    ),
    # the Content-Usage response header (attach-04 §2)
    "cu-header": site_of(
        {"/a": Page({"Content-Usage": "train-ai=n"}, links=REFUSED,
                    refused_by=("header:content-usage",)),
         "/b": Page({"Content-Usage": "train-ai=y, search=y"})},
    ),
    # tdmrep.json for one directory, and for the whole of another site (TDMRep §6.1)
    "tdm-file": site_of(
        {"/reserved/a": Page(links=REFUSED, refused_by=("tdmrep",)), "/open": Page()},
        tdmrep=json.dumps([{"location": "/reserved/", "tdm-reservation": 1,
                            "tdm-policy": "https://tdm-file.usage.test/policy.json"}]),
    ),
    "tdm-site": site_of({"/a": Page()}, tdmrep='[{"location": "/", "tdm-reservation": 1}]',
                      site_refused=True),
    # the tdm-reservation header, and a meta element superseding it (TDMRep §6.7)
    "tdm-header": site_of(
        {"/a": Page({"tdm-reservation": "1"}, links=REFUSED,
                    refused_by=("header:tdm-reservation",)),
         "/b": Page({"tdm-reservation": "1"}, head='<meta name="tdm-reservation" content="0">')},
    ),
    "tdm-meta": site_of(
        {"/a": Page(head='<meta name="tdm-reservation" content="1">', links=REFUSED,
                    refused_by=("meta:tdm-reservation",))},
    ),
    # noai / noimageai (meta robots, X-Robots-Tag)
    "noai-meta": site_of(
        {"/a": Page(head='<meta name="robots" content="noai, noimageai">', links=REFUSED,
                    refused_by=("meta:robots",)),
         "/images": Page(head='<meta name="robots" content="noimageai">')},
    ),
    "noai-header": site_of(
        {"/a": Page({"X-Robots-Tag": "noai"}, links=REFUSED,
                    refused_by=("header:x-robots-tag",)),
         "/other-bot": Page({"X-Robots-Tag": "otherbot: noai"})},
    ),
    "plain": site_of({"/a": Page()}),
}  # fmt: skip


def url(host: str, path: str, port: int) -> str:
    return f"http://{host}.{SUFFIX}:{port}{path}"


class UsageWeb:
    """``async with UsageWeb() as w``: ``w.log`` holds (host, path) of every request, and
    ``w.times`` when each arrived (monotonic seconds). ``sites``: another web than ``SITES``
    (its hosts under the same suffix)."""

    def __init__(self, sites: dict[str, Site] | None = None) -> None:
        self.sites = SITES if sites is None else sites
        self.port = 0
        self.log: list[tuple[str, str]] = []
        self.times: list[float] = []
        self._runner: web.AppRunner | None = None

    def resolve_arg(self) -> str:
        return f"*.{SUFFIX}:{self.port}:127.0.0.1"

    def seeds(self) -> list[str]:
        return [url(h, "/", self.port) for h in self.sites]

    def all_pages(self) -> set[str]:
        return {url(h, p, self.port) for h, s in self.sites.items() for p in s.pages}

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        host = request.host.split(":")[0].removesuffix("." + SUFFIX)
        self.log.append((host, request.path))
        self.times.append(time.monotonic())
        site = self.sites.get(host)
        if site is None:
            return web.Response(status=404)
        if request.path == "/robots.txt":
            return web.Response(text=site.robots, content_type="text/plain")
        if request.path == "/.well-known/tdmrep.json":
            if site.tdmrep is None:
                return web.Response(status=404)
            return web.Response(text=site.tdmrep, content_type="application/json")
        page = site.pages.get(request.path)
        if page is None:
            return web.Response(status=404)
        links = "".join(f'<a href="{link}">{link}</a> ' for link in page.links)
        body = (f"<!DOCTYPE html><html><head>{page.head}<title>{host}{request.path}</title>"
                f"</head><body><h1>{host} {request.path}</h1><p>{links}</p></body></html>")
        return web.Response(text=body, content_type="text/html", headers=page.headers)

    async def __aenter__(self) -> UsageWeb:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
