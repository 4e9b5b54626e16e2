"""HTTP done right, checked on real responses from the local hostile server.

Retry-After in both forms through ``outcome.classify``; gzip, deflate (zlib-wrapped and raw)
and br decoded; non-HTML abandoned after the headers; the User-Agent sent; redirects never
followed; the bounded decoder (``decompress``) on its own.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import time
import zlib
from typing import Any

import aiohttp
import brotli
import pytest
from hostileweb import ENCODED_PAGE, HostileWeb, bomb_chunks
from hypothesis import given, settings
from hypothesis import strategies as st

from politecrawl.config import FetchConfig
from politecrawl.engine.outcome import Drop, DropReason, Redirect, Retry, classify
from politecrawl.net.coding import Decoder, decompress
from politecrawl.net.fetch import Fetcher, FetchResult, _classify_error
from politecrawl.polite.politeness import SLOW_ANSWER_S

UA = "testbot/1.0 (+http://bot.example/info)"


@pytest.fixture
async def hw():
    async with HostileWeb(max_stream_s=15) as w:
        yield w


async def fetch(url: str, *, html_only: bool = True, **kw: Any) -> FetchResult:
    cfg: dict[str, Any] = {
        "user_agent": UA,
        "allow_private_addresses": True,
        "connect_timeout_s": 2.0,
        "read_timeout_s": 2.0,
        "total_timeout_s": 4.0,
    }
    cfg.update(kw)
    async with Fetcher(FetchConfig(**cfg)) as f:
        return await f.fetch(url, html_only=html_only)


# -- Retry-After ---------------------------------------------------------------------------


@pytest.mark.e2e
async def test_retry_after_seconds(hw: HostileWeb) -> None:
    res = await fetch(hw.url("/retry-after-seconds"))
    assert res.status == 503 and res.header("retry-after") == "120"
    out = classify(res, 1, 3)
    assert out == Retry(120.0, overload=True, error_class="http_503")
    # capped by the configured maximum
    assert classify(res, 1, 3, max_retry_after_s=30.0) == Retry(30.0, True, "http_503")


@pytest.mark.e2e
async def test_retry_after_http_date(hw: HostileWeb) -> None:
    res = await fetch(hw.url("/retry-after-date"))
    assert res.status == 429
    out = classify(res, 1, 3)
    assert isinstance(out, Retry) and out.overload and out.error_class == "http_429"
    assert 3500 < out.after_s <= 3600


@pytest.mark.e2e
async def test_overload_on_last_attempt_dropped(hw: HostileWeb) -> None:
    res = await fetch(hw.url("/retry-after-seconds"))
    assert classify(res, 3, 3) == Drop(DropReason.RETRIES_EXHAUSTED, "http_503")


# -- encodings -------------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("path", "encoding"),
    [("/gzip", "gzip"), ("/deflate-zlib", "deflate"), ("/deflate-raw", "deflate"), ("/br", "br")],
)
async def test_encodings_decoded(hw: HostileWeb, path: str, encoding: str) -> None:
    res = await fetch(hw.url(path))
    assert res.error is None and res.header("content-encoding") == encoding
    assert res.body == ENCODED_PAGE and len(res.raw_body) < len(ENCODED_PAGE)
    assert not res.truncated


@pytest.mark.e2e
async def test_accept_encoding_and_user_agent_sent(hw: HostileWeb) -> None:
    res = await fetch(hw.url("/ok"))
    (hit,) = hw.hits_for("/ok")
    assert hit.user_agent == UA
    assert hit.headers["accept-encoding"] == "gzip, deflate, br"
    assert ("User-Agent", UA) in res.request_headers


# -- what is not fetched ---------------------------------------------------------------------


@pytest.mark.e2e
async def test_non_html_abandoned_after_headers(hw: HostileWeb) -> None:
    t0 = time.monotonic()
    res = await fetch(hw.url("/octet-50m"))
    assert time.monotonic() - t0 < 5
    assert res.status == 200 and res.abandoned and res.error is None
    assert res.bytes_received < 64 * 1024  # of 50 MB announced
    assert classify(res, 1, 3) == Drop(DropReason.NOT_HTML, "application/octet-stream")
    assert await hw.wait_idle(5.0)
    assert hw.hits_for("/octet-50m")[0].ended_by == "client_gone"


@pytest.mark.e2e
async def test_non_html_read_when_asked(hw: HostileWeb) -> None:
    res = await fetch(hw.url("/robots.txt"), html_only=False)
    assert not res.abandoned and res.body == b"User-agent: *\nAllow: /\n"


@pytest.mark.e2e
async def test_redirect_not_followed(hw: HostileWeb) -> None:
    res = await fetch(hw.url("/redirect-301"))
    assert res.status == 301 and res.header("location") == "/ok"
    assert classify(res, 1, 3) == Redirect("/ok", permanent=True)
    assert [h.path for h in hw.hits] == ["/redirect-301"]


@pytest.mark.e2e
async def test_connection_refused_is_connect_error() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = await fetch(f"http://127.0.0.1:{port}/")
    assert res.error == "connect" and res.status is None
    assert isinstance(classify(res, 1, 3), Retry)


@pytest.mark.e2e
async def test_a_request_that_waits_is_counted_slow_and_cut_ends_it() -> None:
    """A server that takes the connection and never answers: after ``SLOW_ANSWER_S`` the request
    counts as slow (the crawler's loop leases another site instead of waiting), and ``cut``
    ends it at once, as the crawl's stop does."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)  # never accepted: the kernel takes the connection, nobody answers
        port = s.getsockname()[1]
        cfg = FetchConfig(user_agent=UA, allow_private_addresses=True)
        async with Fetcher(cfg) as fetcher:
            task = asyncio.ensure_future(fetcher.fetch(f"http://127.0.0.1:{port}/"))
            await asyncio.sleep(0.2)
            assert fetcher.slow() == 0  # in flight, not yet slow
            deadline = time.monotonic() + 10 * SLOW_ANSWER_S
            while fetcher.slow() == 0 and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert fetcher.slow() == 1 and not task.done()
            fetcher.cut()
            res = await asyncio.wait_for(task, 10)
            assert res.error == "cut" and res.status is None
            assert fetcher.slow() == 0


# -- error mapping ---------------------------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize(("exc", "kind"), [
    (TimeoutError(), "timeout"),
    (aiohttp.SocketTimeoutError("read"), "timeout"),
    (aiohttp.ConnectionTimeoutError("connect"), "timeout"),
    (aiohttp.ServerDisconnectedError(), "network"),
    (aiohttp.ClientOSError(104, "reset"), "network"),
    (ConnectionResetError(), "network"),
    (aiohttp.ClientPayloadError("incomplete"), "protocol"),
    (aiohttp.InvalidURL("x"), "invalid_url"),
    (aiohttp.NonHttpUrlClientError("file:///x"), "invalid_url"),
])  # fmt: skip
def test_classify_error(exc: BaseException, kind: str) -> None:
    assert _classify_error(exc)[0] == kind


# -- the bounded decoder ---------------------------------------------------------------------


def _encode(data: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return gzip.compress(data)
    if encoding == "deflate":
        return zlib.compress(data)
    if encoding == "deflate-raw":
        c = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        return c.compress(data) + c.flush()
    if encoding == "br":
        return bytes(brotli.compress(data))
    return data


ENCODINGS = ["identity", "gzip", "deflate", "deflate-raw", "br"]


@pytest.mark.unit
@settings(max_examples=60, deadline=None)
@given(
    data=st.binary(max_size=3000),
    cap=st.integers(1, 4000),
    encoding=st.sampled_from(ENCODINGS),
    cuts=st.lists(st.integers(0, 4000), max_size=5),
)
def test_decoder_equals_plain_cut(data: bytes, cap: int, encoding: str, cuts: list[int]) -> None:
    raw = _encode(data, encoding)
    header = "deflate" if encoding == "deflate-raw" else encoding
    assert decompress(raw, header, cap) == (data[:cap], len(data) > cap)
    # fed in arbitrary pieces, as it is while streaming, it says the same
    dec = Decoder(header, cap)
    prev = 0
    for cut in [*sorted(c % (len(raw) + 1) for c in cuts), len(raw)]:
        dec.feed(raw[prev:cut])
        prev = cut
    assert dec.body() == data[:cap]
    assert dec.overflow == (len(data) > cap)


@pytest.mark.unit
def test_decompress_bomb_bounded() -> None:
    raw = b"".join(bomb_chunks("gzip", 256))  # 256 KiB of gzip for 256 MiB of zeros
    body, truncated = decompress(raw, "gzip", 1 << 20)
    assert body == bytes(1 << 20) and truncated
    raw = b"".join(bomb_chunks("br", 256))
    body, truncated = decompress(raw, "br", 1 << 20)
    assert body == bytes(1 << 20) and truncated


@pytest.mark.unit
def test_decompress_multi_member_gzip() -> None:
    raw = gzip.compress(b"hello ") + gzip.compress(b"world")
    assert decompress(raw, "gzip", 100) == (b"hello world", False)


@pytest.mark.unit
def test_decompress_incomplete_stream_is_truncated() -> None:
    raw = gzip.compress(ENCODED_PAGE)
    body, truncated = decompress(raw[: len(raw) // 2], "gzip", 1 << 20)
    assert truncated and ENCODED_PAGE.startswith(body)


@pytest.mark.unit
def test_decompress_trailing_garbage_ignored() -> None:
    assert decompress(gzip.compress(b"abc") + b"junk!", "gzip", 100) == (b"abc", False)


@pytest.mark.unit
@pytest.mark.parametrize(("raw", "encoding"), [
    (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage-garbage", "gzip"),
    (b"not deflate at all, not even raw", "deflate"),
    (b"\xff\xff\xff\xff brotli? no", "br"),
    (b"x", "zstd"),
    (b"x", "gzip, zstd"),
    (b"x", "gzip, gzip, gzip, gzip"),
])  # fmt: skip
def test_decompress_corrupt_or_unsupported(raw: bytes, encoding: str) -> None:
    with pytest.raises(ValueError):
        decompress(raw, encoding, 1000)


@pytest.mark.unit
def test_decompress_stacked_codings_in_the_order_applied() -> None:
    """RFC 9110 8.4: ``gzip, br`` was gzipped, then brotli'd; undone br first. Each layer
    stops at the cap: a bomb wrapped twice costs the cap, not its size."""
    body = b"<html>" + b"stacked " * 500 + b"</html>"
    assert decompress(brotli.compress(gzip.compress(body)), "gzip, br", 10**6) == (body, False)
    assert decompress(gzip.compress(zlib.compress(body)), "deflate, gzip", 10**6) == (body, False)
    assert decompress(gzip.compress(gzip.compress(body)), "gzip, gzip", 10**6) == (body, False)
    assert decompress(gzip.compress(body), "gzip, identity", 10**6) == (body, False)
    bomb = gzip.compress(gzip.compress(bytes(50_000_000)))
    out, truncated = decompress(bomb, "gzip, gzip", 100_000)
    assert len(out) == 100_000 and truncated
    out, truncated = decompress(gzip.compress(gzip.compress(body))[:-30], "gzip, gzip", 10**6)
    assert truncated  # a stream cut short at either layer


@pytest.mark.unit
def test_decompress_identity_and_empty() -> None:
    assert decompress(b"abcdef", "", 4) == (b"abcd", True)
    assert decompress(b"abcd", "identity", 4) == (b"abcd", False)
    assert decompress(b"", "gzip", 4) == (b"", False)  # e.g. a 304 or HEAD with the header


@pytest.mark.unit
async def test_failed_lookups_are_cached() -> None:
    """A fake at the c-ares seam (``NameCache._ares``): a real failing lookup would need a DNS
    server (tests/test_dns_e2e.py has one, in a network namespace)."""
    from politecrawl.net.dns import NameCache, NameNotResolved, _Entry
    from politecrawl.net.resolver import GuardedResolver

    now = [0.0]
    names = NameCache(negative_ttl_s=300.0, clock=lambda: now[0])
    r = GuardedResolver((), allow_private=False, names=names)
    calls = 0

    async def failing(host: str) -> _Entry:
        nonlocal calls
        calls += 1
        end = now[0] + names.negative_ttl_s
        return _Entry((), NameNotResolved(-2, f"{host}: Domain name not found"), end, end)

    names._ares = failing  # type: ignore[method-assign]
    for _ in range(5):
        with pytest.raises(OSError):
            await r.resolve("no-such-host.invalid", 80)
    assert calls == 1
    now[0] = 301.0  # the negative TTL is over: asked again
    with pytest.raises(OSError):
        await r.resolve("no-such-host.invalid", 80)
    assert calls == 2
