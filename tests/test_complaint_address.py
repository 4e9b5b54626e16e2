"""``politecrawl log OUT --host ADDRESS``: an operator's complaint often names the server by
its IP address (all a firewall or access log shows). The request log records the address
each request connected to, so the requests made to that address under any host name are
the answer, said to be matched by address; IPv6 too. Checked through the real commands (a
crawl, then ``log``, subprocesses) against a small aiohttp site on 127.0.0.1 and ::1 whose
names are pinned by ``--resolve``, judged by the request log and what ``log`` prints."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from test_outputs import FAST, UA, politecrawl, rows

pytestmark = pytest.mark.e2e

LONG = "/catalogue/category/books/travel_2/index.html"  # a path the text table must cut
_PAGE = (
    "<!doctype html><html><head><title>{0}</title></head><body><h1>{0}</h1>"
    "<p>A page about steam locomotives and the lines they ran on.</p>{1}</body></html>"
)


async def _handle(request: web.Request) -> web.Response:
    if request.path == "/robots.txt":
        return web.Response(text="User-agent: *\nDisallow: /private/\n")
    if request.path == "/":
        links = f'<a href="/a">a</a><a href="{LONG}">l</a>'  # (each host's home its own)
        return web.Response(text=_PAGE.format(f"Home of {request.host}", links),
                            content_type="text/html")  # fmt: skip
    if request.path in ("/a", LONG):
        return web.Response(text=_PAGE.format("A", ""), content_type="text/html")
    return web.Response(status=404, text="not found")


@contextlib.contextmanager
def _serving(address: str) -> Iterator[int]:
    """The site on ``address`` from a thread of its own; yields its port."""
    ready, box = threading.Event(), {}

    async def serve() -> None:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", _handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, address, 0)
        await site.start()
        box["port"] = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        box["loop"], box["stop"] = asyncio.get_running_loop(), asyncio.Event()
        ready.set()
        await box["stop"].wait()
        await runner.cleanup()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(30), f"the site on {address} did not start"
    try:
        yield box["port"]
    finally:
        box["loop"].call_soon_threadsafe(box["stop"].set)
        thread.join(30)


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A crawl of three names on two addresses: ``v4.test`` and ``www.v4.test`` on
    127.0.0.1, ``v6.test`` on ::1, every name pinned by ``--resolve``."""
    out = tmp_path_factory.mktemp("address") / "out"
    with _serving("127.0.0.1") as p4, _serving("::1") as p6:
        done = politecrawl(
            "crawl", f"http://v4.test:{p4}/", f"http://www.v4.test:{p4}/",
            f"http://v6.test:{p6}/", "--user-agent", UA, "--out", str(out),
            "--resolve", f"v4.test:{p4}:127.0.0.1", "--resolve", f"www.v4.test:{p4}:127.0.0.1",
            "--resolve", f"v6.test:{p6}:[::1]", *FAST,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


def _logged(out: Path) -> list[dict[str, Any]]:
    return [r for r in rows(out / "log", "requests") if r.get("record") != "header"]


def _log(out: Path, host: str, *more: str) -> Any:
    done = politecrawl("log", str(out), "--host", host, *more)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout) if "--json" in more else done.stdout


@pytest.mark.parametrize(
    ("given", "ip"),
    [("127.0.0.1", "127.0.0.1"), ("::1", "::1"), ("[::1]", "::1"), ("0:0:0:0:0:0:0:1", "::1")],
)
def test_an_address_given_to_host_matches_the_requests_made_to_it(
    crawled: Path, given: str, ip: str
) -> None:
    """Before: "No requests to this host in the logs for this time window" for the address
    every one of these requests went to."""
    logged = _logged(crawled)
    expected = sorted((r["time"], r["url"]) for r in logged if r["ip"] == ip)
    assert len(expected) >= 4  # robots.txt, /, /a and a long path for each name on it
    answer = _log(crawled, given, "--json")
    assert sorted((r["time"], r["url"]) for r in answer["requests"]) == expected
    assert answer["matched_by"] == "address"
    pages = [r for r in answer["requests"] if not r["url"].endswith("/robots.txt")]
    assert pages and all("Disallow: /private/" in r["robots_in_force"]["body"] for r in pages)
    text = _log(crawled, given)
    assert "matched by address" in text and f"{len(expected)} requests from" in text
    assert "No requests" not in text


def test_a_host_name_still_matches_by_name_and_its_subdomains(crawled: Path) -> None:
    answer = _log(crawled, "v4.test", "--json")
    assert answer["matched_by"] == "host"
    urls = {r["url"].split("/")[2].split(":")[0] for r in answer["requests"]}
    assert urls == {"v4.test", "www.v4.test"}
    text = _log(crawled, "v4.test")
    assert "matched by address" not in text and "and its subdomains" in text
    assert "No requests to this address" in _log(crawled, "192.0.2.1")


def test_the_text_table_keeps_each_host_whole(crawled: Path) -> None:
    """Before: a long URL was cut in the middle of the whole URL, ``http://ww…x.html`` and
    ``http://v4…x.html``: which subdomain was asked could not be told. Now its path is cut,
    never its host (two origins here: the table shows each URL's own)."""
    text = _log(crawled, "v4.test")
    port = next(r["url"] for r in _logged(crawled) if "//v4.test:" in r["url"]).split(":")[2]
    port = port.split("/")[0]
    urls = [ln.split()[-1] for ln in text.splitlines() if "…" in ln and " stored " in ln]
    assert len(urls) == 2 and all(u.endswith("dex.html") and "/catalo" in u for u in urls), text
    hosts = {"/".join(u.split("/")[:3]) for u in urls}
    assert hosts == {f"http://v4.test:{port}", f"http://www.v4.test:{port}"}, text
    assert all(len(line) <= 100 for line in text.splitlines()), text
    assert "never their host" in text
