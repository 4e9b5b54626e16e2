"""Hostile servers survived: every misbehaviour of ``tests/hostileweb.py`` ends, with the
real ``Fetcher`` (and the real ``Crawler`` end to end), in bounded time and memory, in an
outcome ``outcome.classify`` maps to Store/Retry/Drop/Redirect, and with the worker alive.

docs/hostile.md is the table of what each case produces; keep the two in step.
"""

from __future__ import annotations

import collections
import dataclasses
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hostileweb import (
    BEHAVIOURS,
    INVALID_UTF8,
    HostileWeb,
    bomb_length,
    deep_nesting,
    host_slug,
    index_targets,
    many_links,
)

from politecrawl import Crawler
from politecrawl.config import CrawlConfig, FetchConfig, PolitenessConfig
from politecrawl.content.parse import parse_page
from politecrawl.engine.outcome import Drop, DropReason, Redirect, Retry, Store, classify
from politecrawl.net.fetch import Fetcher, FetchResult
from politecrawl.storage.logs import read_jsonl

UA = "testbot/1.0 (+http://bot.example/info)"
CAP = 2 * 1024 * 1024
KNOWN_ERRORS = {
    "timeout",
    "protocol",
    "network",
    "connect",
    "dns",
    "address_refused",
    "invalid_url",
    "bad_encoding",
    "bad_chunking",
}


@pytest.fixture
async def hw():
    async with HostileWeb(max_stream_s=15) as w:
        yield w


def fetch_config(**kw: Any) -> FetchConfig:
    base: dict[str, Any] = {
        "user_agent": UA,
        "allow_private_addresses": True,
        "connect_timeout_s": 2.0,
        "read_timeout_s": 2.0,
        "total_timeout_s": 4.0,
    }
    base.update(kw)
    return FetchConfig(**base)


@dataclasses.dataclass
class Run:
    res: FetchResult
    seconds: float
    peak_bytes: int


async def fetch_then_ok(
    hw: HostileWeb, path: str, *, trace: bool = False, html_only: bool = True, **cfg: Any
) -> Run:
    """One hostile fetch, then a normal one with the same Fetcher: the worker must survive."""
    async with Fetcher(fetch_config(**cfg)) as f:
        if trace:
            tracemalloc.start()
        t0 = time.monotonic()
        try:
            res = await f.fetch(hw.url(path), html_only=html_only)
            seconds = time.monotonic() - t0
            peak = tracemalloc.get_traced_memory()[1] if trace else 0
        finally:
            if trace:
                tracemalloc.stop()
        ok = await f.fetch(hw.url("/ok"))
        assert ok.status == 200 and ok.error is None and b"normal page" in ok.body
    assert res.error is None or res.error in KNOWN_ERRORS, res.error
    return Run(res, seconds, peak)


def outcome(res: FetchResult) -> Store | Redirect | Retry | Drop:
    return classify(res, 1, 3, retry_base_s=1.0)


# -- timing attacks: bounded by the timeouts ------------------------------------------------


@pytest.mark.e2e
async def test_slowloris_headers_bounded_by_total_timeout(hw: HostileWeb) -> None:
    # a byte a second never trips the 5 s read timeout: the total timeout has to end it
    run = await fetch_then_ok(hw, "/slow-headers", read_timeout_s=5.0, total_timeout_s=2.0)
    assert run.res.error == "timeout" and run.res.status is None
    assert run.seconds < 2.0 + 5
    assert isinstance(outcome(run.res), Retry) and outcome(run.res).overload


@pytest.mark.e2e
async def test_slow_body_bounded_by_total_timeout(hw: HostileWeb) -> None:
    run = await fetch_then_ok(hw, "/slow-body", read_timeout_s=5.0, total_timeout_s=2.0)
    assert run.res.error == "timeout" and run.res.status == 200
    assert run.res.truncated  # the few bytes held are only the start of the body
    assert run.seconds < 2.0 + 5
    assert isinstance(outcome(run.res), Retry)


@pytest.mark.e2e
@pytest.mark.parametrize("path", ["/silent", "/headers-then-silence"])
async def test_silence_bounded_by_read_timeout(hw: HostileWeb, path: str) -> None:
    # read timeout 1 s, total 20 s: ending well before 20 s shows the read timeout fired
    run = await fetch_then_ok(hw, path, read_timeout_s=1.0, total_timeout_s=20.0)
    assert run.res.error == "timeout"
    assert run.seconds < 1.0 + 5
    assert isinstance(outcome(run.res), Retry)


@pytest.mark.e2e
async def test_endless_interim_100_responses_bounded(hw: HostileWeb) -> None:
    run = await fetch_then_ok(hw, "/endless-100", read_timeout_s=5.0, total_timeout_s=2.0)
    assert run.res.error == "timeout" and run.res.status is None
    assert run.seconds < 2.0 + 5


# -- bodies that never end or are too large: cut at the cap ----------------------------------


@pytest.mark.e2e
@pytest.mark.parametrize(
    "path", ["/endless-chunked", "/endless-close", "/sparse-10g", "/big-html", "/million-links"]
)
async def test_endless_and_huge_bodies_cut_at_cap(hw: HostileWeb, path: str) -> None:
    run = await fetch_then_ok(hw, path, trace=True)
    res = run.res
    assert res.error is None and res.status == 200
    assert res.truncated and len(res.body) == CAP and res.bytes_received == CAP
    assert outcome(res) == Store(truncated=True)
    assert run.seconds < 4.0 + 5
    assert run.peak_bytes < 8 * CAP, run.peak_bytes  # bounded memory, whatever was announced
    # the connection was dropped: the server's side ended because the client went away
    assert await hw.wait_idle(5.0)
    (hit,) = hw.hits_for(path)
    assert hit.ended_by == "client_gone", hit
    assert hit.sent < 64 * 1024 * 1024


# -- lying framing, broken connections -------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.parametrize("path", ["/cl-long", "/reset-mid-body"])
async def test_body_shorter_than_content_length(hw: HostileWeb, path: str) -> None:
    run = await fetch_then_ok(hw, path)
    res = run.res
    assert res.status == 200 and res.error in ("protocol", "network")
    assert res.truncated and 0 < res.bytes_received < 100_000
    assert isinstance(outcome(res), Retry)


@pytest.mark.e2e
async def test_body_longer_than_content_length(hw: HostileWeb) -> None:
    run = await fetch_then_ok(hw, "/cl-short")
    res = run.res
    # the extra bytes (a smuggled second response) are never taken as a response; whether
    # aiohttp sees them together with the head (protocol error) or after the 10-byte body
    # (stored, connection not reused) depends on packet boundaries
    if res.error is None:
        assert res.status == 200 and res.body == b"<p>tenbyt>"
        assert outcome(res) == Store(truncated=False)
    else:
        assert res.error == "protocol" and isinstance(outcome(res), Retry)
    assert b"evil" not in res.body


@pytest.mark.e2e
async def test_close_without_answer_is_one_request(hw: HostileWeb) -> None:
    run = await fetch_then_ok(hw, "/close-immediately")
    assert run.res.error == "network" and isinstance(outcome(run.res), Retry)
    # aiohttp's silent re-send of the GET is off: the server saw exactly one request
    assert len(hw.hits_for("/close-immediately")) == 1


@pytest.mark.e2e
@pytest.mark.parametrize(
    "path",
    [
        "/bad-status",
        "/not-http",
        "/header-no-colon",
        "/huge-header",
        "/nul-header",
        "/many-headers",
        "/conflicting-length",
        "/negative-length",
    ],
)
async def test_malformed_http_is_a_protocol_error(hw: HostileWeb, path: str) -> None:
    run = await fetch_then_ok(hw, path)
    assert run.res.error == "protocol", (run.res.error, run.res.error_detail)
    assert isinstance(outcome(run.res), Retry)
    assert run.seconds < 4.0 + 5


@pytest.mark.e2e
async def test_bad_chunk_size_has_its_own_outcome(hw: HostileWeb) -> None:
    """Sent with the headers here (tests/test_replay.py sends it after them): the same
    outcome either way, at once, never retried."""
    run = await fetch_then_ok(hw, "/bad-chunk")
    assert run.res.error == "bad_chunking", (run.res.error, run.res.error_detail)
    assert outcome(run.res) == Drop(DropReason.BAD_CHUNKING, run.res.error_detail)


@pytest.mark.e2e
async def test_http10_without_length_read_until_close(hw: HostileWeb) -> None:
    run = await fetch_then_ok(hw, "/http10")
    res = run.res
    assert res.error is None and res.status == 200 and res.http_version == "1.0"
    assert res.body.endswith(b"</html>\n") and not res.truncated
    assert outcome(res) == Store(truncated=False)


@pytest.mark.e2e
@pytest.mark.parametrize(("path", "status"), [("/switching-101", 101), ("/status-999", 999)])
async def test_unexpected_status_dropped(hw: HostileWeb, path: str, status: int) -> None:
    run = await fetch_then_ok(hw, path)
    assert run.res.status == status
    assert outcome(run.res) == Drop(DropReason.UNEXPECTED_STATUS, f"http_{status}")


# -- encodings: bombs, corruption --------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["gzip", "br"])
async def test_decompression_bomb_stopped_at_cap(hw: HostileWeb, kind: str) -> None:
    path = "/gzip-bomb" if kind == "gzip" else "/brotli-bomb"
    run = await fetch_then_ok(hw, path, trace=True)
    res = run.res
    assert res.error is None and res.header("content-encoding") == kind
    assert res.truncated and res.body == bytes(CAP)
    assert outcome(res) == Store(truncated=True)
    # decoding while reading: only the first few compressed KiB were needed
    assert res.bytes_received < min(256 * 1024, bomb_length(kind, 10 * 1024))
    assert run.peak_bytes < 8 * CAP, run.peak_bytes
    assert run.seconds < 4.0 + 5


@pytest.mark.e2e
@pytest.mark.parametrize("path", ["/corrupt-gzip", "/unknown-encoding"])
async def test_bad_encoding_dropped(hw: HostileWeb, path: str) -> None:
    run = await fetch_then_ok(hw, path)
    assert run.res.error == "bad_encoding" and run.res.status == 200 and run.res.body == b""
    assert outcome(run.res) == Drop(DropReason.BAD_ENCODING, run.res.error_detail)


# -- content the parser must survive -----------------------------------------------------------


@pytest.mark.e2e
async def test_binary_served_as_html_parsed(hw: HostileWeb) -> None:
    run = await fetch_then_ok(hw, "/binary-html")
    assert outcome(run.res) == Store(truncated=False)
    page = parse_page(run.res.body, run.res.url, "testbot")
    assert all(link.url.startswith("http") for link in page.links)


@pytest.mark.e2e
async def test_invalid_utf8_parsed(hw: HostileWeb) -> None:
    run = await fetch_then_ok(hw, "/invalid-utf8")
    assert run.res.body == INVALID_UTF8
    page = parse_page(run.res.body, run.res.url, "testbot")
    urls = {link.url for link in page.links}
    assert hw.url("/ok") in urls
    assert "bad" in page.title


@pytest.mark.e2e
async def test_million_link_page_as_fetched_is_bounded(hw: HostileWeb) -> None:
    run = await fetch_then_ok(hw, "/million-links")
    t0 = time.monotonic()
    page = parse_page(run.res.body, run.res.url, "testbot")
    seconds = time.monotonic() - t0
    assert len(page.links) == 10_000 and page.links_cut > 50_000
    assert seconds < 20  # ~1.3 s here; see docs/hostile.md (join runs before the cap check)


@pytest.mark.unit
def test_deep_nesting_no_recursion_error() -> None:
    # deep enough to overflow any recursive walk in Python (limit 1000), shallow enough to be fast
    page = parse_page(deep_nesting(5_000), "http://deep.test/", "testbot")
    assert page.depth_cut_at is not None  # cut at depth 256, never walked recursively
    shallow = parse_page(deep_nesting(200), "http://deep.test/", "testbot")
    assert [link.url for link in shallow.links] == ["http://deep.test/ok"]


@pytest.mark.e2e
def test_deep_nesting_100k_parses_in_bounded_time() -> None:
    """The nesting guard cuts the page at depth 256: bounded time, the cut recorded."""
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from politecrawl.content.parse import parse_page\n"
        "from hostileweb import deep_nesting\n"
        "p = parse_page(deep_nesting(100_000), 'http://deep.test/', 'testbot')\n"
        "assert p.depth_cut_at is not None and p.links == []\n"
    )
    try:
        subprocess.run([sys.executable, "-c", code], check=True, timeout=4.0)
    except subprocess.TimeoutExpired:
        pytest.fail("parse_page on 100k nested <div> took more than 4 s")


@pytest.mark.unit
def test_normal_pages_are_never_cut() -> None:
    items = b"".join(b"<li><a href='/i%d'>item</a>" % i for i in range(20_000))
    page = parse_page(
        b"<html><body><ul>" + items + b"</ul></body></html>", "http://a.test/", "testbot"
    )
    assert page.depth_cut_at is None and len(page.links) == 10_000 and page.links_cut == 10_000


@pytest.mark.e2e
@pytest.mark.slow
def test_million_links_whole_page_bounded() -> None:
    t0 = time.monotonic()
    page = parse_page(many_links(), "http://many.test/", "testbot")
    assert len(page.links) == 10_000 and page.links_cut == 990_000
    assert time.monotonic() - t0 < 60


# -- the real crawler against every behaviour at once ------------------------------------------

# what the request log's last record for each behaviour's URL must say (max_attempts=2)
_RETRIED = "dropped:retries_exhausted"
EXPECTED: dict[str, set[str]] = {
    "/ok": {"stored"},
    "/slow-headers": {_RETRIED},
    "/silent": {_RETRIED},
    "/headers-then-silence": {_RETRIED},
    "/close-immediately": {_RETRIED},
    "/endless-100": {_RETRIED},
    "/switching-101": {"dropped:unexpected_status"},
    "/negative-length": {_RETRIED},
    "/status-999": {"dropped:unexpected_status"},
    "/slow-body": {_RETRIED},
    "/endless-chunked": {"stored"},
    "/endless-close": {"stored"},
    "/sparse-10g": {"stored"},
    "/big-html": {"stored"},
    "/octet-50m": {"dropped:not_html"},
    "/cl-long": {_RETRIED},
    "/cl-short": {"stored", _RETRIED},
    "/reset-mid-body": {_RETRIED},
    "/bad-chunk": {"dropped:bad_chunking"},
    "/http10": {"stored"},
    "/bad-status": {_RETRIED},
    "/not-http": {_RETRIED},
    "/header-no-colon": {_RETRIED},
    "/huge-header": {_RETRIED},
    "/nul-header": {_RETRIED},
    "/many-headers": {_RETRIED},
    "/conflicting-length": {_RETRIED},
    "/gzip": {"stored"},
    "/deflate-zlib": {"stored"},
    "/deflate-raw": {"stored"},
    "/br": {"stored"},
    "/gzip-bomb": {"stored"},
    "/brotli-bomb": {"stored"},
    "/corrupt-gzip": {"dropped:bad_encoding"},
    "/unknown-encoding": {"dropped:bad_encoding"},
    "/binary-html": {"stored"},
    "/invalid-utf8": {"stored"},
    "/hostile-links": {"stored"},
    "/redirect-301": {"redirect"},
    "/loop/a": {"redirect"},
    "/loop/b": {"redirect"},
    "/redirect-endless/": {"redirect"},
    "/redirect-to-loopback": {"redirect"},
    "/redirect-to-mapped": {"redirect"},
    "/redirect-to-name": {"redirect"},
    "/retry-after-seconds": {_RETRIED},
    "/retry-after-date": {_RETRIED},
}
TRUNCATED = {
    "/endless-chunked",
    "/endless-close",
    "/sparse-10g",
    "/big-html",
    "/gzip-bomb",
    "/brotli-bomb",
}
# 100k nested <div> block parse_page for over a minute (docs/hostile.md): left out until fixed
CRAWL_SKIP = ("deep-nesting",)


def hostile_crawl_config(
    hw: HostileWeb, out: Path, seed: str, *, allow_private: bool = True, **kw: Any
) -> CrawlConfig:
    fetch = FetchConfig(
        user_agent=UA,
        resolve=(hw.resolve_arg("*.test"),),
        allow_private_addresses=allow_private,
        connect_timeout_s=3.0,
        read_timeout_s=1.0,
        total_timeout_s=2.0,
        max_attempts=2,
        transient_attempts=2,  # timeouts too (by default retried over hours)
        retry_base_s=0.1,
    )
    politeness = PolitenessConfig(
        min_delay_s=0.05,
        jitter_s=0.01,
        response_time_factor=0.0,
        max_retry_after_s=0.3,
        max_backoff_s=1.0,
        park_s=0.5,
        ip_min_delay_s=None,  # the hostile web's names on 127.0.0.1 stand for many servers
    )
    kw.setdefault("max_time_s", 50.0)
    return CrawlConfig(
        seeds=(seed,),
        out_dir=out,
        fetch=fetch,
        politeness=politeness,
        scope="any",
        progress=False,
        **kw,
    )


def _last_by_url(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    last: dict[str, dict[str, Any]] = {}
    for r in records:
        last[r["url"]] = r
    return last


@pytest.mark.e2e
async def test_crawler_survives_every_hostile_behaviour(hw: HostileWeb, tmp_path: Path) -> None:
    assert set(EXPECTED) | {"/", "/index", "/robots.txt", "/million-links", "/deep-nesting"} == set(
        BEHAVIOURS
    )
    out = tmp_path / "out"
    seed = f"http://seed.hostile.test:{hw.port}/index?skip={','.join(CRAWL_SKIP)}"
    t0 = time.monotonic()
    summary = await Crawler(hostile_crawl_config(hw, out, seed)).run()
    assert time.monotonic() - t0 < 45
    assert summary.stopped_by == "done"
    assert "error:internal" not in summary.counters
    assert summary.counters.get("dropped:internal_error", 0) == 0

    log = read_jsonl(out / "log" / "requests.jsonl")
    last = _last_by_url(log)
    targets = index_targets("hostile.test", hw.port)
    for path, url in targets.items():
        if host_slug(path) in CRAWL_SKIP:
            continue
        rec = last.get(url)
        assert rec is not None, f"{path} never requested"
        # pages identical by design (the same body gzip'd, br'd...) are recognised as
        # duplicates of the first: fetched and read whole all the same
        outcome = "stored" if rec["outcome"].startswith("duplicate:") else rec["outcome"]
        assert outcome in EXPECTED[path], (path, rec)
        if path in TRUNCATED:
            assert rec.get("truncated") is True, (path, rec)
            assert rec["bytes"] <= CAP
        if rec.get("error"):
            assert rec["error"] in KNOWN_ERRORS, rec

    # every request the server saw is in the request log (no hidden retries); the log's
    # extra records are attempts that never reached the server (connect-phase failures)
    def key(hostport: str, path: str) -> tuple[str, str]:
        return hostport.rsplit(":", 1)[0].lower(), path

    server = collections.Counter(key(h.host, h.target) for h in hw.hits)
    ours: collections.Counter[tuple[str, str]] = collections.Counter()
    unsent: collections.Counter[tuple[str, str]] = collections.Counter()
    for r in log:
        hostport, _, path = r["url"].split("://", 1)[1].partition("/")
        ours[key(hostport, "/" + path)] += 1
        if r.get("error") == "connect" or "ConnectionTimeoutError" in r.get("error_detail", ""):
            unsent[key(hostport, "/" + path)] += 1
    assert server - ours == collections.Counter()
    assert ours - server <= unsent

    # redirect loops end: the seen-set stops /loop/a <-> /loop/b, the 3-hop cap the endless one
    loop_host = f"{host_slug('/loop/a')}.hostile.test"
    assert [h.path for h in hw.hits if h.host.startswith(loop_host + ":")].count("/loop/a") == 1
    endless = sorted(h.path for h in hw.hits if h.path.startswith("/redirect-endless/"))
    assert endless == [f"/redirect-endless/{i}" for i in range(4)]
    assert summary.counters.get("too_many_redirects", 0) >= 1

    # every server-side handler ended: the crawler hung up on the endless ones
    assert await hw.wait_idle(5.0)
    assert all(h.ended_by in ("done", "client_gone") for h in hw.hits), [
        (h.path, h.ended_by) for h in hw.hits if h.ended_by not in ("done", "client_gone")
    ]
