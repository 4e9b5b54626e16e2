"""Sites that end and a site that doesn't, on loopback, each logging what it was asked.

- ``forum``: listing pages ``/forum/page/N``, threads ``/t/N`` and their reply pages
  ``/t/N/page/N`` (2,025 pages at the issue's size). Each thread also links the same host on
  another port (``dead_port``, where nothing listens): an old address of the forum.
- ``calendar``: ``/cal/Y/M/D``, each day linking the previous and next day and the same day
  of the next month, without end.
- ``numbered``: ``/p/N.html``, each page linking the next two and a few others of the site.
- ``webcomic``: strips ``/c/N``, each linking only the first, previous, next and last and home:
  a chain of thousands of real pages, each its own text.
- ``empty_listing``: ``/s?page=N`` without end, every page the same empty listing but for its
  number; ``session_ids``: one home page under ever new ``/s/SID/home``. Traps.

``SiteServer`` serves one of them (``pages(path) -> html | None``) over http, or https with a
``tlsweb.LocalCA`` context, and keeps ``requests`` (host header, path) in order;
``focused_crawl`` runs the real command on one such site with a topic.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import ssl
import sys
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from aiohttp import web

Site = Callable[[str], str | None]


def _page(title: str, links: list[str]) -> str:
    items = "".join(f'<li><a href="{u}">{u}</a></li>' for u in links)
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title></head>"
        f"<body><h1>{title}</h1><p>Text of {title}.</p><ul>{items}</ul></body></html>"
    )


def forum(
    listings: int = 25, per_listing: int = 20, replies: int = 3, dead_origin: str | None = None
) -> tuple[Site, set[str]]:
    """The forum and the set of its paths (ground truth); threads link ``dead_origin``."""
    threads = listings * per_listing
    paths = {f"/forum/page/{n}" for n in range(1, listings + 1)}
    paths |= {f"/t/{t}" for t in range(1, threads + 1)}
    paths |= {f"/t/{t}/page/{r}" for t in range(1, threads + 1) for r in range(2, replies + 2)}

    def thread_links(t: int) -> list[str]:
        out = [f"/t/{t}"] + [f"/t/{t}/page/{r}" for r in range(2, replies + 2)]
        out.append(f"/forum/page/{(t - 1) // per_listing + 1}")
        if dead_origin is not None:
            out.append(f"{dead_origin}/t/{t}")
        return out

    def site(path: str) -> str | None:
        if path not in paths:
            return None
        parts = path.split("/")
        if parts[1] == "forum":
            n = int(parts[3])
            links = [f"/forum/page/{k}" for k in (n - 1, n + 1) if 1 <= k <= listings]
            first = (n - 1) * per_listing + 1
            links += [f"/t/{t}" for t in range(first, first + per_listing)]
            return _page(f"Forum page {n}", links)
        return _page(f"Thread {parts[2]} {path}", thread_links(int(parts[2])))

    return site, paths


def calendar(start: dt.date | None = None) -> Site:
    """An endless calendar: days before and after, and next months, all answer."""
    first = start or dt.datetime.now(dt.UTC).date()

    def site(path: str) -> str | None:
        if path == "/":
            return _page("Calendar", [_day(first)])
        parts = path.strip("/").split("/")
        if len(parts) != 4 or parts[0] != "cal" or not all(p.isdigit() for p in parts[1:]):
            return None
        try:
            day = dt.date(int(parts[1]), int(parts[2]), int(parts[3]))
        except ValueError:
            return None
        month = dt.date(day.year + day.month // 12, day.month % 12 + 1, min(day.day, 28))
        one = dt.timedelta(days=1)
        return _page(f"Events of {day}", [_day(day - one), _day(day + one), _day(month)])

    return site


def _day(d: dt.date) -> str:
    return f"/cal/{d.year}/{d.month:02d}/{d.day:02d}"


def numbered(pages: int = 3000, seed: int = 1) -> tuple[Site, set[str]]:
    """A site of numbered pages, each linking the next two and three others at random."""
    paths = {"/"} | {f"/p/{n}.html" for n in range(1, pages)}

    def site(path: str) -> str | None:
        if path not in paths:
            return None
        n = 0 if path == "/" else int(path[3:-5])
        rng = random.Random(f"{seed}/{n}")
        targets = [(n + 1) % pages, (n + 2) % pages] + [rng.randrange(pages) for _ in range(3)]
        return _page(f"Page {n}", ["/" if t == 0 else f"/p/{t}.html" for t in targets])

    return site, paths


_WORDS = ("cat", "dog", "moon", "tea", "rain", "boat", "owl", "fox", "sun", "snow", "kite",
          "bell", "map", "ink", "lamp", "rope")  # fmt: skip


def webcomic(strips: int = 6000) -> tuple[Site, set[str]]:
    """A webcomic: ``/`` links the first and latest strip; strip N its neighbours, the first,
    the latest and home, and tells its own story (no page is another's but for a number)."""
    paths = {"/"} | {f"/c/{n}" for n in range(1, strips + 1)}

    def site(path: str) -> str | None:
        if path not in paths:
            return None
        if path == "/":
            return _page("Comic", ["/c/1", f"/c/{strips}"])
        n = int(path[3:])
        words = " ".join(_WORDS[(n * 2654435761 >> (3 * k)) % 16] for k in range(10))
        links = [f"/c/{i}" for i in (1, n - 1, n + 1, strips) if 0 < i <= strips] + ["/"]
        return _page(f"Strip {n}", links).replace(
            "</h1>", f"</h1><p>In which the {words} and the {words[::-1]} meet again.</p>"
        )

    return site, paths


def empty_listing() -> Site:
    """Pagination with no last page: past the first, the same empty listing but its number."""

    def site(path: str) -> str | None:
        if not path.startswith("/s?page="):
            return None
        n = int(path.split("=")[1])
        chrome = " ".join(f"Department {d}: shoes, coats, hats and bags." for d in "ABCDEFGHIJKL")
        return (
            f"<!DOCTYPE html><html><head><title>Results</title></head><body><p>{chrome}</p>"
            f'<p>Results page {n}: no products match.</p><a href="/s?page={n + 1}">next</a>'
            "</body></html>"
        )

    return site


def session_ids() -> Site:
    """One home page under ever new session ids: each link carries the next one."""

    def site(path: str) -> str | None:
        if not path.startswith("/s/") or not path.endswith("/home"):
            return None
        sid = int(path.split("/")[2])
        text = _page("Welcome to our shop", [f"/s/{sid * 48271 % 2147483647}/home"])
        return text.replace("</h1>", f"</h1><p>{'Fine goods for every season. ' * 4}</p>")

    return site


class SiteServer:
    """``async with SiteServer(site) as s``: one site on 127.0.0.1 (``ssl_ctx``: https);
    ``redirect_to``: every request answers 301 to that origin, same path (http -> https)."""

    def __init__(
        self,
        site: Site | None,
        *,
        ssl_ctx: ssl.SSLContext | None = None,
        redirect_to: str | None = None,
        robots: str = "User-agent: *\nDisallow:\n",
    ) -> None:
        self.site = site
        self.ssl_ctx = ssl_ctx
        self.redirect_to = redirect_to
        self.robots = robots
        self.requests: list[tuple[str, str]] = []  # (Host header, path) in order
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.headers.get("Host", ""), request.raw_path))
        if self.redirect_to is not None:
            raise web.HTTPMovedPermanently(self.redirect_to + request.raw_path)
        if request.raw_path == "/robots.txt":
            return web.Response(text=self.robots, content_type="text/plain")
        text = self.site(request.raw_path) if self.site is not None else None
        if text is None:
            return web.Response(status=404, text="not found", content_type="text/plain")
        return web.Response(text=text, content_type="text/html")

    def paths(self) -> list[str]:
        """Pages asked (robots.txt aside)."""
        return [p for _, p in self.requests if p != "/robots.txt"]

    async def __aenter__(self) -> SiteServer:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.ssl_ctx)
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


def closed_port() -> int:
    """A loopback port where nothing listens (bound, then closed: refused on connect)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def focused_crawl(
    site: Site,
    topic: str,
    budget: int,
    out: Path,
    user_agent: str,
    min_delay: float = 0.01,
    extra: tuple[str, ...] = (),
) -> list[str]:
    """``politecrawl crawl`` with ``--topic`` on ``site`` served as ``docs.test``, until
    ``budget`` pages; the paths the server was asked, in order (the command must succeed).
    ``extra``: more options (``--frontier redis://...``)."""
    async with SiteServer(site) as server:
        port = server.port
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "politecrawl", "crawl", f"http://docs.test:{port}/",
            "--resolve", f"docs.test:{port}:127.0.0.1", "--user-agent", user_agent,
            "--out", str(out), "--topic", topic, "--max-pages", str(budget),
            "--min-delay", str(min_delay), "--jitter", "0", "--allow-private-addresses",
            "--no-progress", "--ip-min-delay", "off", *extra,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 180)
        fetched = server.paths()
    assert proc.returncode == 0, (stdout + stderr).decode()
    return fetched
