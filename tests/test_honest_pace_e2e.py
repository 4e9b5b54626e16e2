"""Two politeness faults an outside probe found, as a site's operator meets them: the real
``politecrawl crawl`` command against a loopback server that logs every request.

* A User-Agent naming another crawler (``Googlebot/2.1``, whose robots.txt groups would then
  apply to us), an HTTP client, a browser without a version, or with an info URL on
  localhost, was accepted and the site was crawled under it. It is refused in one line,
  exit 2, before any request.
* ``Crawl-delay: 1e9`` (and ``10,5``, ``7 s``, ``1e3``) was ignored, so the site got a page
  every --min-delay. It is honoured (a huge value as a day), and the crawl says how it read it.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import UA

pytestmark = pytest.mark.e2e

PAGES = 8


class Site:
    """A site of ``PAGES`` linked pages whose robots.txt is ``robots``; logs (time, path)."""

    def __init__(self, robots: str) -> None:
        self.robots = robots
        self.log: list[tuple[float, str]] = []
        self.port = 0

    def paths(self) -> list[str]:
        return [p for _, p in self.log]


@contextlib.contextmanager
def serve(robots: str) -> Iterator[Site]:
    site = Site(robots)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            site.log.append((time.time(), self.path))
            if self.path == "/robots.txt":
                body, ctype = site.robots.encode(), "text/plain"
            else:
                links = "".join(f'<a href="/p/{i}">{i}</a> ' for i in range(1, PAGES + 1))
                body, ctype = f"<html><body>{links}</body></html>".encode(), "text/html"
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    site.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def crawl(
    site: Site, out: Path, user_agent: str, max_time: str
) -> subprocess.CompletedProcess[str]:
    """``politecrawl crawl`` at a 0.2 s pace, as a user with a fast test site runs it."""
    cmd = [sys.executable, "-m", "politecrawl", "crawl", f"http://127.0.0.1:{site.port}/"]
    cmd += ["--user-agent", user_agent, "--out", str(out), "--allow-private-addresses"]
    cmd += ["--min-delay", "0.2", "--jitter", "0", "--delay-factor", "0", "--ip-min-delay", "off"]
    cmd += ["--max-time", max_time, "--no-progress"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("user_agent", "why"),
    [
        ("Googlebot/2.1 (+http://www.google.com/bot.html)", "names another crawler (Googlebot)"),
        ("Mozilla (+http://x.example/bot)", "pretends to be a browser (Mozilla)"),
        ("curl/8.0 (+http://x.example/)", "names an HTTP client (curl)"),
        ("probebot/1.0 (+http://localhost)", "info URL no site operator can open"),
    ],
)
def test_an_impersonating_or_unreachable_user_agent_is_refused_before_any_request(
    tmp_path: Path, user_agent: str, why: str
) -> None:
    with serve("User-agent: *\nAllow: /\n") as site:
        p = crawl(site, tmp_path / "out", user_agent, "3")
        assert site.paths() == []  # not even robots.txt
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and why in lines[0], p.stderr


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("1e9", "is over a day: honoured as 86400 s"),
        ("1e3", None),  # a number as any language writes it: nothing to say
        ("10,5", "read as 10.5 s (a decimal comma)"),
        ("7 s", "read as 7 s (unit 's')"),
    ],
)
def test_a_crawl_delay_in_any_form_slows_the_crawl(
    tmp_path: Path, value: str, said: str | None
) -> None:
    """Before: each value was dropped and pages came every 0.2 s (all ten URLs in 4 s). Now the
    site's pace holds: robots.txt and at most one page in 4 s, and the crawl says how it
    read a line that is not plainly a number."""
    with serve(f"User-agent: *\nCrawl-delay: {value}\n") as site:
        p = crawl(site, tmp_path / "out", UA, "4")
        paths = site.paths()
    assert p.returncode == 0, p.stderr
    assert paths[0] == "/robots.txt"
    assert len(paths) <= 2, paths
    if said is not None:
        assert f"line 2: Crawl-delay {value!r} {said}" in p.stderr, p.stderr
