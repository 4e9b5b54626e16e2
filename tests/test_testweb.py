"""Tests for the bundled local test web (politecrawl.demo.web)."""

from __future__ import annotations

import asyncio
import gzip
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult
from multidict import CIMultiDict

from politecrawl.demo.accesslog import AccessEntry, load_access_log, politeness_violations
from politecrawl.demo.pages import render_page
from politecrawl.demo.site import NEVER_FETCH, ROBOTS_VARIANTS
from politecrawl.demo.web import TestWeb


class _LocalResolver(AbstractResolver):
    """Resolve every name to 127.0.0.1, like ``--resolve "*.test:PORT:127.0.0.1"``."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(
                hostname=host,
                host="127.0.0.1",
                port=port,
                family=socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
        ]

    async def close(self) -> None:
        return None


@pytest.fixture
async def tw(tmp_path: Path) -> AsyncIterator[TestWeb]:
    async with TestWeb(
        n_hosts=12, pages_per_host=8, access_log_path=str(tmp_path / "access.jsonl")
    ) as web_:
        yield web_


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    conn = aiohttp.TCPConnector(resolver=_LocalResolver())
    async with aiohttp.ClientSession(connector=conn) as s:
        yield s


async def _get(
    s: aiohttp.ClientSession, url: str, **kw: object
) -> tuple[int, CIMultiDict[str], bytes]:
    kw.setdefault("allow_redirects", False)
    async with s.get(url, **kw) as r:  # type: ignore[arg-type]
        return r.status, r.headers.copy(), await r.read()


@pytest.mark.e2e
async def test_pages_served_and_deterministic(tw: TestWeb, session: aiohttp.ClientSession) -> None:
    assert tw.hosts[:3] == ["h0.test", "h1.test", "h2.test"]
    assert tw.resolve_arg() == f"*.test:{tw.port}:127.0.0.1"
    assert tw.url("h3.test", "/p/3.html") == f"http://h3.test:{tw.port}/p/3.html"
    assert tw.seed_urls(2) == [tw.url("h0.test"), tw.url("h1.test")]
    assert len(tw.seed_urls()) == 12
    spec = tw.sites["h0.test"]
    assert spec.pages == ["/"] + [f"/p/{i}.html" for i in range(1, 8)]
    for path in spec.pages:
        status, headers, body = await _get(session, tw.url("h0.test", path))
        assert status == 200
        assert headers["Content-Type"].startswith("text/html")
        assert 1000 <= len(body) <= 4000
        assert b"<title>" in body and b"<a href=" in body
    first = (await _get(session, tw.url("h5.test", "/p/4.html")))[2]
    second = TestWeb(n_hosts=12, pages_per_host=8)
    second.port = tw.port
    assert render_page(second, 5, 4).encode() == first  # same seed, same bytes
    other = TestWeb(n_hosts=12, pages_per_host=8, seed=2)
    other.port = tw.port
    assert render_page(other, 5, 4).encode() != first


@pytest.mark.e2e
async def test_links_and_traps_present(tw: TestWeb, session: aiohttp.ClientSession) -> None:
    bodies = b"".join(
        [(await _get(session, tw.url("h0.test", p)))[2] for p in tw.sites["h0.test"].pages]
    )
    for needle in (
        b'<!-- old navigation: <a href="/hidden-comment.html">',
        b"/hidden-script.html",
        b'<form action="/hidden-form.html"',
        b'rel="nofollow"',
        b"/img/photo.jpg",
        b"/files/doc.pdf",
        b"/bin/data",
        b"/redirect/2",
        b"/redirect/5",
        b"<base href=",
        b"<area ",
        f"http://h0.test:{tw.port}/".encode(),
    ):
        assert needle in bodies, needle
    assert any(f"http://h{j}.test:{tw.port}/".encode() in bodies for j in range(1, 12))
    home1 = (await _get(session, tw.url("h1.test")))[2]
    assert b'<base href="/p/">' in home1
    for path in NEVER_FETCH | {"/only-from-noindex.html", "/only-from-gz.html"}:
        status, _, _ = await _get(session, tw.url("h0.test", path))
        assert status == 200, path


@pytest.mark.e2e
async def test_robots_variants(tw: TestWeb, session: aiohttp.ClientSession) -> None:
    assert ROBOTS_VARIANTS[4] == "500"
    expected_status = {0: 200, 1: 200, 2: 200, 3: 404, 4: 500, 5: 200, 6: 301, 7: 200,
                       8: 200, 9: 200, 10: 503, 11: 200}  # fmt: skip
    for i, code in expected_status.items():
        host = f"h{i}.test"
        spec = tw.sites[host]
        assert spec.robots_status == code
        status, headers, body = await _get(session, tw.url(host, "/robots.txt"))
        assert status == code, host
        if code == 200:
            assert body.startswith((spec.robots or "").encode())
            if ROBOTS_VARIANTS.get(i, "standard") == "standard":  # standard sites list sitemaps
                assert f"Sitemap: {tw.url(host, '/sitemap-index.xml')}" in body.decode()
            assert headers["Content-Type"].startswith(spec.robots_content_type)
        elif code == 301:
            assert headers["Location"] == "/robots-real.txt"
            status, _, body = await _get(session, tw.url(host, "/robots.txt"), allow_redirects=True)
            assert status == 200 and body.decode() == spec.robots
        else:
            assert spec.robots is None
    assert "Crawl-delay: 0.3" in (tw.sites["h1.test"].robots or "")
    assert "User-agent: testbot\nDisallow: /p/2.html" in (tw.sites["h2.test"].robots or "")
    assert tw.sites["h5.test"].robots_content_type == "text/html"
    assert tw.sites["h7.test"].robots == "User-agent: *\nDisallow: /\n"
    assert "Disallow: /p/\nAllow: /p/1.html" in (tw.sites["h8.test"].robots or "")
    _, _, bom = await _get(session, tw.url("h9.test", "/robots.txt"))
    assert bom.startswith(b"\xef\xbb\xbfUser-agent: *")
    assert (
        tw.sites["h0.test"].robots
        == tw.sites["h11.test"].robots
        == ("User-agent: *\nDisallow: /private/\n")
    )
    assert (await _get(session, tw.url("h0.test", "/robots-real.txt")))[0] == 404


@pytest.mark.unit
async def test_small_web_has_only_existing_variants() -> None:
    web_ = TestWeb(n_hosts=3, extra_hosts=2)
    assert web_.hosts == [f"h{i}.test" for i in range(5)]
    assert [web_.sites[h].robots_status for h in web_.hosts] == [200, 200, 200, 404, 500]
    assert len(web_.seed_urls()) == 3


@pytest.mark.e2e
async def test_redirects(tw: TestWeb, session: aiohttp.ClientSession) -> None:
    status, headers, _ = await _get(session, tw.url("h0.test", "/redirect/5"))
    assert (status, headers["Location"]) == (301, "/redirect/4")
    status, headers, _ = await _get(session, tw.url("h0.test", "/redirect/0"))
    assert (status, headers["Location"]) == (302, "/p/1.html")
    async with session.get(tw.url("h0.test", "/redirect/2")) as r:
        assert r.status == 200 and len(r.history) == 3
        assert r.url.path == "/p/1.html"
    status, headers, _ = await _get(session, tw.url("h0.test", "/loop"))
    assert (status, headers["Location"]) == (302, "/loop2")
    status, headers, _ = await _get(session, tw.url("h0.test", "/loop2"))
    assert (status, headers["Location"]) == (302, "/loop")
    status, headers, _ = await _get(session, tw.url("h3.test", "/cross"))
    assert (status, headers["Location"]) == (301, tw.url("h4.test", "/"))


@pytest.mark.e2e
async def test_status_codes(tw: TestWeb, session: aiohttp.ClientSession) -> None:
    for code in (404, 410, 500, 503, 429, 403):
        status, headers, body = await _get(session, tw.url("h0.test", f"/status/{code}"))
        assert status == code and str(code).encode() in body
        assert headers.get("Retry-After") == ("1" if code in (429, 503) else None)
    assert (await _get(session, tw.url("h0.test", "/nope.html")))[0] == 404
    assert (await _get(session, tw.url("h0.test", "/p/99.html")))[0] == 404
    assert (await _get(session, tw.url("h999.test", "/")))[0] == 404
    assert tw.access_log[-1].host == "h999.test" and tw.access_log[-1].status == 404


@pytest.mark.e2e
async def test_content_types_and_headers(tw: TestWeb, session: aiohttp.ClientSession) -> None:
    _, h, body = await _get(session, tw.url("h0.test", "/img/photo.jpg"))
    assert h["Content-Type"] == "image/jpeg" and body.startswith(b"\xff\xd8")
    _, h, body = await _get(session, tw.url("h0.test", "/files/doc.pdf"))
    assert h["Content-Type"] == "application/pdf" and body.startswith(b"%PDF")
    _, h, body = await _get(session, tw.url("h0.test", "/bin/data"))
    assert h["Content-Type"] == "application/octet-stream" and len(body) == 200 * 1024
    _, h, body = await _get(session, tw.url("h0.test", "/xrobots.html"))
    assert h["X-Robots-Tag"] == "noindex, nofollow" and b"/only-from-xrobots.html" in body
    _, _, body = await _get(session, tw.url("h0.test", "/meta-nofollow.html"))
    assert b'content="nofollow"' in body and b"/only-from-meta-nofollow.html" in body
    _, _, body = await _get(session, tw.url("h0.test", "/noindex.html"))
    assert b'content="noindex"' in body
    status, h, _ = await _get(session, tw.url("h0.test", "/"))
    etag = h["ETag"]
    status, _, body = await _get(session, tw.url("h0.test", "/"), headers={"If-None-Match": etag})
    assert status == 304 and body == b""


@pytest.mark.e2e
async def test_abandoned_binary_body(tw: TestWeb, session: aiohttp.ClientSession) -> None:
    async with session.get(tw.url("h0.test", "/bin/data")) as r:
        assert r.status == 200 and r.content_length == 200 * 1024
        r.close()  # abandon after headers
    for _ in range(100):
        if any(e.path == "/bin/data" for e in tw.access_log):
            break
        await asyncio.sleep(0.01)
    entry = next(e for e in tw.access_log if e.path == "/bin/data")
    assert entry.status == 200 and entry.start <= entry.end
    # the server keeps working after the abort
    assert (await _get(session, tw.url("h0.test", "/")))[0] == 200


@pytest.mark.e2e
async def test_gzip(tw: TestWeb, session: aiohttp.ClientSession) -> None:
    async with session.get(tw.url("h0.test", "/gz.html"), headers={"Accept-Encoding": "gzip"},
                           auto_decompress=False) as r:  # fmt: skip
        assert r.headers["Content-Encoding"] == "gzip"
        raw = await r.read()
    plain = gzip.decompress(raw)
    assert b"/only-from-gz.html" in plain
    async with session.get(tw.url("h0.test", "/gz.html")) as r:  # auto-decompressed
        assert await r.read() == plain
    async with session.get(tw.url("h0.test", "/gz.html"),
                           headers={"Accept-Encoding": "identity"}) as r:  # fmt: skip
        assert "Content-Encoding" not in r.headers
        assert await r.read() == plain


@pytest.mark.e2e
async def test_access_log(tw: TestWeb, session: aiohttp.ClientSession) -> None:
    ua = "testbot/1.0 (+http://example.invalid/bot)"
    await _get(session, tw.url("h2.test", "/p/1.html?x=1"), headers={"User-Agent": ua})
    e = tw.access_log[-1]
    assert (e.host, e.path, e.method, e.status, e.user_agent) == (
        "h2.test",
        "/p/1.html?x=1",
        "GET",
        200,
        ua,
    )
    assert e.start <= e.end
    assert e.headers["Host"] == f"h2.test:{tw.port}"
    assert all(x.start <= x.end for x in tw.access_log)
    path = tw.access_log_path
    assert path is not None
    assert load_access_log(path) == tw.access_log
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"host": "h0.te')  # a writer killed mid-line
    assert load_access_log(path) == tw.access_log


@pytest.mark.e2e
async def test_latency() -> None:
    async with TestWeb(n_hosts=2, latency_s=0.1) as web_:
        conn = aiohttp.TCPConnector(resolver=_LocalResolver())
        async with aiohttp.ClientSession(connector=conn) as s:
            await _get(s, web_.url("h0.test"))
        e = web_.access_log[-1]
        assert e.end - e.start >= 0.09


def _entry(host: str, start: float, end: float, path: str = "/") -> AccessEntry:
    return AccessEntry(host, path, "GET", 200, start, end, "ua", {})


@pytest.mark.unit
def test_politeness_violations() -> None:
    ok = [_entry("a.test", t, t + 0.05) for t in (0.0, 0.5, 1.0, 1.5)]
    ok += [_entry("b.test", t, t + 0.05) for t in (0.01, 0.52, 1.03)]  # other hosts interleave
    assert politeness_violations(ok, 0.5) == []
    # a 3 ms clock jitter is tolerated
    assert (
        politeness_violations([_entry("a.test", 0.0, 0.1), _entry("a.test", 0.497, 0.6)], 0.5) == []
    )

    overlap = [_entry("a.test", 0.0, 1.0, "/x"), _entry("a.test", 0.5, 0.6, "/y")]
    problems = politeness_violations(overlap, 0.0)
    assert len(problems) == 1 and problems[0].startswith("concurrent")
    assert "a.test" in problems[0] and "/y" in problems[0]
    # overlap with an earlier, longer request that is not the immediately previous one
    nested = [_entry("a.test", 0.0, 5.0), _entry("a.test", 1.0, 1.1), _entry("a.test", 2.0, 2.1)]
    assert sum(p.startswith("concurrent") for p in politeness_violations(nested, 0.0)) == 2

    short = [_entry("a.test", 0.0, 0.05), _entry("a.test", 0.2, 0.25)]
    problems = politeness_violations(short, 0.3)
    assert len(problems) == 1 and problems[0].startswith("gap")
    # unsorted input is handled
    assert politeness_violations(list(reversed(short)), 0.3) == problems


@pytest.mark.e2e
def test_cli_subprocess(tmp_path: Path) -> None:
    log = tmp_path / "cli.jsonl"
    env = dict(os.environ)
    env.pop("PYTHONUNBUFFERED", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "politecrawl.demo.web", "--hosts", "3", "--port", "0",
         "--access-log", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("serving 3 hosts on 127.0.0.1:"), line
        port = int(line.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(b"GET /robots.txt HTTP/1.1\r\nHost: h1.test\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        assert data.startswith(b"HTTP/1.1 200")
        assert data.endswith(b"Crawl-delay: 0.3\nDisallow: /private/\n")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
        assert proc.returncode == 0, err
        assert "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    entries = load_access_log(str(log))
    assert [(e.host, e.path, e.status) for e in entries] == [("h1.test", "/robots.txt", 200)]


@pytest.mark.e2e
async def test_plain_web_serves_only_normal_pages(tmp_path: Path) -> None:
    """The web for measuring the politeness-bound rate: every request a 200, no backoff."""
    from conftest import crawl_config

    from politecrawl import Crawler
    async with TestWeb(n_hosts=12, pages_per_host=6, seed=2, plain=True) as plain:
        assert {plain.sites[h].robots_status for h in plain.hosts} == {200}
        summary = await Crawler(crawl_config(plain, tmp_path / "out", delay=0.02)).run()
        paths = {(e.host, e.path) for e in plain.access_log}
        expected = {(h, p) for h in plain.hosts for p in ["/robots.txt", *plain.sites[h].pages]}
        assert paths == expected
        assert {e.status for e in plain.access_log} == {200}
        assert summary.pages_fetched == 12 * 6


async def _raw_exchange(port: int, data: bytes) -> bytes:
    """Send ``data`` on one connection; everything the server sends until it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    got = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return got


@pytest.mark.e2e
async def test_the_lean_server_answers_what_the_aiohttp_server_answers() -> None:
    """``--lean`` (benchmarks): the same status, body and validators for every kind of path,
    304 to a conditional GET, gzip when accepted, keep-alive, HEAD, and the same access log;
    a request it cannot read gets a 400 and a close."""
    paths = ["/", "/p/1.html", "/robots.txt", "/gz.html", "/status/503", "/redirect/1",
             "/nope.html", "/p/2.html?x=%20y"]  # fmt: skip
    answers = {}
    for lean in (False, True):
        async with TestWeb(n_hosts=3, pages_per_host=4, lean=lean) as web:
            got = []
            async with aiohttp.ClientSession(auto_decompress=False) as s:
                for path in paths:
                    for host in ("h1.test", "unknown.test"):
                        headers = {"Host": f"{host}:{web.port}", "Accept-Encoding": "gzip"}
                        url = f"http://127.0.0.1:{web.port}{path}"
                        async with s.get(url, headers=headers, allow_redirects=False) as r:
                            body = (await r.read()).replace(str(web.port).encode(), b"PORT")
                            etag = r.headers.get("ETag")
                            got.append((path, host, r.status, body, etag and len(etag),
                                        r.headers.get("Content-Encoding"),
                                        r.headers.get("Location")))  # fmt: skip
                        if etag:
                            headers["If-None-Match"] = etag
                            async with s.get(url, headers=headers) as r:
                                got.append((path, host, r.status, await r.read()))
            answers[lean] = got
            log = [(e.host, e.path, e.method, e.status) for e in web.access_log]
            assert len(log) == len(got)
            assert all(e.user_agent.startswith("Python") for e in web.access_log)
            if lean:
                host = f"Host: h1.test:{web.port}\r\n"
                two = (f"GET /p/1.html HTTP/1.1\r\n{host}\r\nHEAD / HTTP/1.1\r\n{host}"
                       "Connection: close\r\n\r\n").encode()  # fmt: skip
                raw = await _raw_exchange(web.port, two)
                assert raw.count(b"HTTP/1.1 200 OK\r\n") == 2  # one connection, two answers
                assert raw.endswith(b"Connection: close\r\n\r\n")  # the HEAD: no body
                bad = await _raw_exchange(web.port, b"GET / HTTP/1.1\r\nno colon\r\n\r\n")
                assert bad.startswith(b"HTTP/1.1 400 ")
                assert [e.path for e in web.access_log[-2:]] == ["/p/1.html", "/"]
    assert answers[True] == answers[False]
    assert any(a[2] == 304 for a in answers[True])
    assert any(len(a) > 5 and a[5] == "gzip" for a in answers[True])
