"""A small local site for the page-processing tests: fixed pages, a log of raw request paths.

Each page is (Content-Type header, body bytes). The log keeps each request's path exactly as
it came on the wire (``request.raw_path``), so a link the crawler encoded wrongly shows up as
what it was sent as, e.g. ``/caf%EF%BF%BD-cr%EF%BF%BDme``. Unknown paths answer 404 and are
logged too.
"""

from __future__ import annotations

from types import TracebackType

from aiohttp import web

Pages = dict[str, tuple[str, bytes]]

UA = "testbot/1.0 (+http://bot.example/info)"


def html(title: str, body: str, head: str = "") -> str:
    return (
        f"<!DOCTYPE html><html><head>{head}<title>{title}</title></head><body>{body}</body></html>"
    )


class PageWeb:
    """``async with PageWeb(pages) as site``: serving on 127.0.0.1, ``site.paths`` in order."""

    def __init__(self, pages: Pages, host: str = "site.test") -> None:
        self.pages = pages
        self.host = host
        self.paths: list[str] = []
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.paths.append(request.raw_path)
        found = self.pages.get(request.raw_path)
        if found is None:
            return web.Response(status=404, text="not found", content_type="text/plain")
        content_type, body = found
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def __aenter__(self) -> PageWeb:
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

    @property
    def root(self) -> str:
        return f"http://{self.host}:{self.port}/"

    def crawl_args(self, seeds_file: str, out: str) -> list[str]:
        """``politecrawl crawl`` arguments reaching this site on loopback only."""
        return [
            "crawl",
            "--seeds", seeds_file,
            "--user-agent", UA,
            "--out", out,
            "--min-delay", "0.05",
            "--jitter", "0",
            "--delay-factor", "0",
            "--resolve", f"{self.host}:{self.port}:127.0.0.1",
            "--allow-private-addresses",
            "--scope", "host",
            "--no-progress",
        ]  # fmt: skip
