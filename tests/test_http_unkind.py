"""What real servers send that a kind test web does not, through the real command: a UTF-8
page with a few stray Latin-1 bytes, a Location in raw UTF-8, 408 once, stacked content
codings, a 304 to a request that asked nothing, a bot name with a digit in a page's
directives, another bot's X-Robots-Tag, redirects the gate refuses. Judged by the raw
server's log and the output files."""

from __future__ import annotations

import asyncio
import gzip
import json
import sys
from pathlib import Path

import brotli
import pytest
from warcio.archiveiterator import ArchiveIterator

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

UA = "probe2bot/1.0 (+http://bot.example/info)"  # a product token with a digit in it

_FOOTER = b"<p>copyright \xa9 2024 caf\xe9</p>"  # Latin-1 pasted into a UTF-8 page
_HOME = (
    "<html><head><meta charset=utf-8><title>Café – naïve résumé</title></head><body>"
    "<p>Les élèves étudient à l’école; “quotes” — déjà vu. Größe. 東京</p>"
    '<a href="/café/menu">menu</a> <a href="/uni">uni</a> <a href="/s408">again</a>'
    ' <a href="/stacked">stacked</a> <a href="/unprompted">304</a> <a href="/meta">meta</a>'
    ' <a href="/xrt-other">other</a> <a href="/r1">hops</a> <a href="/away">away</a>'
    ' <a href="/twolines">two</a> <a href="/short">short</a> <a href="/s206">part</a>'
    ' <a href="/smallbomb">bomb</a> <a href="/tegzip">te</a> <a href="/to-private">p</a>'
    "</body></html>"
).encode() + _FOOTER


def _page(title: str, body: str = "") -> bytes:
    return f"<html><head><title>{title}</title></head><body>{body}</body></html>".encode()


class RawServer:
    """Answers from a table, byte for byte; logs each request's path and headers."""

    def __init__(self) -> None:
        self.log: list[tuple[str, dict[str, str]]] = []
        self.asked: dict[str, int] = {}
        self.port = 0

    def answer(self, path: str, headers: dict[str, str]) -> bytes:
        n = self.asked[path] = self.asked.get(path, 0) + 1
        html = b"Content-Type: text/html; charset=utf-8\r\n"
        if path == "/robots.txt":
            return _ok(b"Content-Type: text/plain\r\n", b"User-agent: *\nDisallow: /private/\n")
        if path == "/":
            return _ok(html, _HOME)
        if path == "/uni":  # the Location's bytes are UTF-8, unescaped
            return b"HTTP/1.1 302 Found\r\nLocation: /caf\xc3\xa9/\xe6\x97\xa5\r\n" + _empty()
        if path == "/s408" and n == 1:
            return b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n" + _empty()
        if path == "/stacked":  # gzipped, then brotli'd: listed in that order
            body = brotli.compress(gzip.compress(_page("Stacked codings")))
            return _ok(html + b"Content-Encoding: gzip, br\r\n", body)
        if path == "/unprompted":  # 304 though nothing was asked conditionally
            return b"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n"
        if path == "/meta":
            meta = '<meta name="probe2bot" content="noindex, nofollow">'
            body = f"<html><head>{meta}<title>Meta</title></head><body>"
            body += '<a href="/from-meta">no</a></body></html>'
            return _ok(html, body.encode())
        if path == "/xrt-other":  # another bot's directive, a name with a digit
            body = _page("Other bot", '<a href="/from-other">yes</a>')
            return _ok(html + b"X-Robots-Tag: mj12bot: noindex, nofollow\r\n", body)
        if path.startswith("/r") and path[2:].isdigit():  # /r1 -> /r2 -> ... : 4 hops
            return f"HTTP/1.1 302 Found\r\nLocation: /r{int(path[2:]) + 1}\r\n".encode() + _empty()
        if path == "/twolines":  # gzipped twice, each coding on a header line of its own
            body = gzip.compress(gzip.compress(_page("Two lines", '<a href="/from-two">x</a>')))
            return _ok(html + b"Content-Encoding: gzip\r\nContent-Encoding: gzip\r\n", body)
        if path == "/short":  # three accented letters in UTF-8, and one stray Latin-1 byte
            body = '<title>Our café menu</title><a href="/menu/café">café</a> é'.encode()
            return _ok(html, body + b"<p>\xa9 2024</p>")
        if path == "/s206":  # part of the page, though no Range was asked
            head = b"Content-Range: bytes 0-99/1000\r\n"
            body = _page("Part", "x" * 200)[:100]
            return _ok(html, body).replace(b"200 OK", b"206 Partial Content").replace(
                b"Content-Length", head + b"Content-Length", 1
            )
        if path == "/smallbomb":  # 3 MiB of page in a few KiB of gzip: all of it sent
            body = gzip.compress(_page("Bomb", " " * (3 << 20)))
            return _ok(html + b"Content-Encoding: gzip\r\n", body)
        if path == "/tegzip":  # a transfer coding nobody asked for, besides chunked
            body = gzip.compress(_page("Transfer gzip", '<a href="/from-te">x</a>'))
            chunked = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
            te = b"Transfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n"
            return b"HTTP/1.1 200 OK\r\n" + html + te + chunked
        if path == "/to-private":  # to a page robots.txt disallows
            return b"HTTP/1.1 302 Found\r\nLocation: /private/secret\r\n" + _empty()
        if path == "/away":  # to another host: out of the crawl's scope
            return b"HTTP/1.1 301 Moved\r\nLocation: http://elsewhere.test/\r\n" + _empty()
        return _ok(html, _page(f"page {path}"))

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            line, *rest = head.decode("latin-1").split("\r\n")
            path = line.split(" ")[1]
            headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in rest if h)}
            self.log.append((path, headers))
            writer.write(self.answer(path, headers))
            await writer.drain()
        finally:
            writer.close()


def _empty() -> bytes:
    return b"Content-Length: 0\r\nConnection: close\r\n\r\n"


def _ok(headers: bytes, body: bytes) -> bytes:
    length = f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
    return b"HTTP/1.1 200 OK\r\n" + headers + length + body


async def _crawl(server: RawServer, out: Path, *extra: str) -> tuple[int, str]:
    """The real command on the server's site; (exit code, stdout and stderr)."""
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    server.port = listener.sockets[0].getsockname()[1]
    async with listener:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "politecrawl", "crawl", f"http://127.0.0.1:{server.port}/",
            "--user-agent", UA, "--out", str(out), "--allow-private-addresses",
            "--min-delay", "0.05", "--ip-min-delay", "0", "--retry-base", "0.1", "--no-progress",
            *extra, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        said, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, said.decode() + err.decode()


async def test_what_real_servers_send(tmp_path: Path) -> None:
    server = RawServer()
    out = tmp_path / "out"
    code, said = await _crawl(server, out)
    assert code == 0, said
    asked = [path for path, _ in server.log]
    # the stray bytes did not turn the page into cp866: its link is asked as written
    assert "/caf%C3%A9/menu" in asked
    pages = {r["url"].split(str(server.port), 1)[1]: r for r in read_jsonl(out / "pages.jsonl")}
    assert pages["/"]["title"] == "Café – naïve résumé"
    # the Location's UTF-8 bytes, as a browser reads them
    assert "/caf%C3%A9/%E6%97%A5" in asked
    # 408: asked again, and kept
    assert asked.count("/s408") == 2 and "/s408" in pages
    assert pages["/stacked"]["title"] == "Stacked codings"
    # a 304 to a GET that asked nothing: no page, said as such, no revisit record
    assert "/unprompted" not in pages
    requests = {r["url"].split(str(server.port), 1)[1]: r for r in read_jsonl(
        out / "log" / "requests.jsonl") if r.get("record") != "header"}  # fmt: skip
    assert requests["/unprompted"]["outcome"] == "dropped:unexpected_status"
    # our own name in a meta tag binds us, another bot's X-Robots-Tag does not
    assert "/meta" not in pages and "/from-meta" not in asked
    assert "/xrt-other" in pages and "/from-other" in asked
    # redirects whose targets the gate refused: never asked, and the log says why
    assert [p for p in asked if p[:2] == "/r" and p[2:].isdigit()] == ["/r1", "/r2", "/r3", "/r4"]
    assert requests["/r4"]["redirect_refused"] == "too_many_redirects"
    assert "redirect_refused" not in requests["/r3"]
    assert requests["/away"]["redirect_refused"] == "out_of_scope"
    assert requests["/to-private"]["redirect_refused"] == "robots_disallowed"
    assert not any(p.startswith("/private/") for p in asked)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counters"]["too_many_redirects"] == 1
    # two Content-Encoding lines are one list: both codings undone, its link followed
    assert pages["/twolines"]["title"] == "Two lines" and "/from-two" in asked
    # a short page labelled UTF-8 with one stray byte is read as the label says
    assert (pages["/short"]["title"], pages["/short"]["charset"]) == ("Our café menu", "utf-8")
    assert "/menu/caf%C3%A9" in asked
    # a transfer coding besides chunked is undone too
    assert pages["/tegzip"]["title"] == "Transfer gzip" and "/from-te" in asked
    # a 206 is part of a page: kept, and said to be
    assert "/s206" in pages and requests["/s206"].get("truncated") is True
    # a bomb's text is capped, but the bytes the server sent are all archived: not cut
    assert requests["/smallbomb"].get("truncated") is True
    cut = {}
    for path in (out / "warc").glob("*.warc.gz"):
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "response":
                    uri = rec.rec_headers.get_header("WARC-Target-URI")
                    cut[uri.split(str(server.port), 1)[1]] = rec.rec_headers.get_header(
                        "WARC-Truncated"
                    )
    assert "/smallbomb" in cut and cut["/smallbomb"] is None, cut


class FailingServer(RawServer):
    """Every page a 500 (robots.txt 404: all allowed): the site never answers a page."""

    def answer(self, path: str, headers: dict[str, str]) -> bytes:
        if path == "/robots.txt":
            return b"HTTP/1.1 404 Not Found\r\n" + _empty()
        return b"HTTP/1.1 500 Internal Server Error\r\n" + _empty()


async def test_a_site_whose_every_page_fails_is_named_lost(tmp_path: Path) -> None:
    """Its URL dropped after 3 attempts, and nothing else of it: the site is lost, named in
    the summary with its last error, and the exit code says so (it was 0, the site unnamed)."""
    server = FailingServer()
    out = tmp_path / "out"
    code, said = await _crawl(server, out)
    assert [p for p, _ in server.log].count("/") == 3
    assert code == 3, said
    lost = json.loads((out / "summary.json").read_text())["sites_lost"]
    assert [(x["site"], x["state"], x["urls_left"]) for x in lost] == [("127.0.0.1", "failed", 1)]
    assert "http_500" in lost[0]["reason"]
    assert "127.0.0.1: failed" in said


class BrokenPagesServer(RawServer):
    """60 pages; five of them (/p/10 to /p/14) always break off mid-body (half their
    Content-Length, then the connection closes), as a page whose generator crashes does."""

    def answer(self, path: str, headers: dict[str, str]) -> bytes:
        html = b"Content-Type: text/html; charset=utf-8\r\n"
        if path == "/robots.txt":
            return b"HTTP/1.1 404 Not Found\r\n" + _empty()
        if path == "/":
            links = "".join(f'<a href="/p/{i}">p{i}</a> ' for i in range(60))
            return _ok(html, _page("home", links))
        if path in {f"/p/{i}" for i in range(10, 15)}:
            body = _page(f"broken {path}", "x" * 2000)
            head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            return html.join([head.encode()[:17], head.encode()[17:]]) + body[: len(body) // 2]
        return _ok(html, _page(f"page {path}"))


async def test_pages_that_break_off_do_not_park_a_site_that_answers(tmp_path: Path) -> None:
    """Five broken pages, each answered with its headers and half its body: the server is
    up, the pages are broken. Each is dropped after its retries; the site is not parked
    (before: "failed 5 times in a row (protocol): parked for 3600 s", and 45 of its 55 good
    pages left behind)."""
    server = BrokenPagesServer()
    out = tmp_path / "out"
    code, said = await _crawl(server, out)
    asked = [p for p, _ in server.log]
    assert {f"/p/{i}" for i in range(60)} <= set(asked), sorted(set(asked))
    assert "parked" not in said, said
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counters"].get("hosts_parked", 0) == 0 and summary["sites_lost"] == []
    assert summary["counters"]["stored"] == 1 + 55, summary["counters"]
    assert code == 0, said


class RevisitedServer(RawServer):
    """Pages whose validators a server gets wrong: a Last-Modified that is no date, and an
    ETag that changes with every 304."""

    def answer(self, path: str, headers: dict[str, str]) -> bytes:
        n = self.asked[path] = self.asked.get(path, 0) + 1
        html = b"Content-Type: text/html; charset=utf-8\r\n"
        if path == "/robots.txt":
            return b"HTTP/1.1 404 Not Found\r\n" + _empty()
        if path == "/":
            return _ok(html, _page("home", '<a href="/lm">lm</a> <a href="/etag">etag</a>'))
        if path == "/lm":
            return _ok(html + b"Last-Modified: garbage-date\r\n", _page("lm"))
        if path == "/etag" and n > 1:
            return f'HTTP/1.1 304 Not Modified\r\nETag: "n{n}"\r\n'.encode() + _empty()
        return _ok(html + b'ETag: "n1"\r\n', _page(path))


async def test_revisits_send_only_valid_validators_and_the_latest(tmp_path: Path) -> None:
    """A continuous crawl: the garbled Last-Modified is never sent back as If-Modified-Since
    (it was, on every revisit), and an ETag a 304 brings is the one the next revisit sends
    (the first was sent for ever)."""
    server = RevisitedServer()
    out = tmp_path / "out"
    code, said = await _crawl(
        server, out, "--recrawl", "--revisit-min", "1", "--revisit-max", "2", "--max-time", "12"
    )
    assert code == 0, said
    lm = [h for p, h in server.log if p == "/lm"]
    assert len(lm) >= 2 and all("if-modified-since" not in h for h in lm), lm
    sent = [h.get("if-none-match") for p, h in server.log if p == "/etag"]
    assert len(sent) >= 3, sent
    assert sent[:3] == [None, '"n1"', '"n2"'], sent  # each 304's new ETag adopted
