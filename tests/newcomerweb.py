"""A newcomer's own small site, served from a thread on 127.0.0.1 (so the crawler under test,
a subprocess, never shares a loop with it): six pages in a chain, no robots.txt (404, "all
allowed"), one missing page, and a link to another host, ``other.test``, served by the same
server (reached through ``--resolve``), and ``slow.test``, whose every answer is a slow 500.
Every request is logged as (host, path)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from typing import Protocol, TypeVar

from aiohttp import web

PAGES = 6


def page(n: int) -> str:
    links = f'<a href="/p{n + 1}.html">next</a>' if n < PAGES else '<a href="/gone.html">x</a>'
    if n == 1:
        links += ' <a href="http://other.test:{port}/">another site</a>'
    return (
        f"<!doctype html><html><head><title>Page {n}</title></head>"
        f"<body><h1>Page {n}</h1><p>words of page {n} about lanterns</p>{links}</body></html>"
    )


class NewcomerSite:
    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []
        self.port = 0

    async def handle(self, request: web.Request) -> web.Response:
        host = request.host.split(":")[0]
        self.log.append((host, request.path))
        if host == "slow.test":  # robots.txt slow to fail, always: a site to give up on
            await asyncio.sleep(0.2)
            return web.Response(status=500, text="down")
        if host == "other.test" and request.path == "/":
            return web.Response(text="<html><title>Other</title><body>other</body></html>",
                                content_type="text/html")  # fmt: skip
        name = request.path.strip("/") or "p1.html"
        if name.startswith("p") and name.endswith(".html") and name[1:-5].isdigit():
            n = int(name[1:-5])
            if 1 <= n <= PAGES:
                body = page(n).replace("{port}", str(self.port))
                return web.Response(text=body, content_type="text/html")
        return web.Response(status=404, text="not found")

    def requests(self, host: str = "127.0.0.1") -> list[str]:
        return [p for h, p in self.log if h == host]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def resolve(self) -> str:
        return f"*.test:{self.port}:127.0.0.1"


@contextlib.contextmanager
def newcomer_site() -> Iterator[NewcomerSite]:
    with serving(NewcomerSite()) as site:
        yield site


_Site = TypeVar("_Site", bound="_Served")


class _Served(Protocol):
    port: int

    async def handle(self, request: web.Request) -> web.StreamResponse: ...


@contextlib.contextmanager
def serving(site: _Site) -> Iterator[_Site]:
    """``site.handle`` served on 127.0.0.1 from a thread of its own (its port set), for as
    long as the block runs: a test's subprocess crawls it while the test goes on."""
    ready = threading.Event()
    box: dict[str, asyncio.AbstractEventLoop | asyncio.Event] = {}

    async def serve() -> None:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", site.handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        tcp = web.TCPSite(runner, "127.0.0.1", 0)
        await tcp.start()
        site.port = tcp._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        stop = asyncio.Event()
        box["loop"], box["stop"] = asyncio.get_running_loop(), stop
        ready.set()
        await stop.wait()
        await runner.cleanup()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(30), "the site did not start"
    try:
        yield site
    finally:
        loop, stop = box["loop"], box["stop"]
        assert isinstance(loop, asyncio.AbstractEventLoop) and isinstance(stop, asyncio.Event)
        loop.call_soon_threadsafe(stop.set)
        thread.join(30)
