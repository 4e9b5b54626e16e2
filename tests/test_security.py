"""No way in: private targets refused before any connection, only http(s) fetched, output
file names never taken from URLs.

Nothing here sends a packet anywhere but 127.0.0.1 (and ::1 when it can be bound): refused
addresses are never connected to, and the ``connects`` fixture fails any connection attempt
the test does not expect, so "refused" is proved rather than assumed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hostileweb import HOSTILE_LINKS, HostileWeb
from test_hostile import hostile_crawl_config

from politecrawl import Crawler
from politecrawl.config import FetchConfig
from politecrawl.content.parse import parse_page
from politecrawl.engine.outcome import Drop, DropReason, classify
from politecrawl.errors import UrlError
from politecrawl.net.fetch import Fetcher, FetchResult
from politecrawl.net.resolver import GuardedResolver, Refused, is_public_address
from politecrawl.storage.logs import read_jsonl
from politecrawl.urls.canonical import canonicalize, join

UA = "testbot/1.0 (+http://bot.example/info)"


@pytest.fixture
async def hw():
    async with HostileWeb(max_stream_s=15) as w:
        yield w


@pytest.fixture
async def connects(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every connection attempt made on the test's loop; attempts fail instead of connecting."""
    loop = asyncio.get_running_loop()
    seen: list[Any] = []

    async def sock_connect(sock: Any, address: Any) -> None:
        seen.append(address)
        raise OSError(f"test forbids connecting to {address}")

    async def create_connection(*args: Any, **kwargs: Any) -> Any:
        seen.append((args, kwargs))
        raise OSError("test forbids connecting")

    monkeypatch.setattr(loop, "sock_connect", sock_connect)
    monkeypatch.setattr(loop, "create_connection", create_connection)
    return seen


async def fetch_guarded(
    url: str, *, resolve: tuple[str, ...] = (), allow_private: bool = False
) -> tuple[FetchResult, float]:
    cfg = FetchConfig(
        user_agent=UA,
        resolve=resolve,
        allow_private_addresses=allow_private,
        connect_timeout_s=2.0,
        read_timeout_s=2.0,
        total_timeout_s=4.0,
    )
    async with Fetcher(cfg) as f:
        t0 = time.monotonic()
        res = await f.fetch(url)
        return res, time.monotonic() - t0


# -- the guard itself --------------------------------------------------------------------------

PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "2606:4700:4700::1111",
    "::ffff:8.8.8.8",
    "2002:808:808::1",
]
NOT_PUBLIC = [
    "127.0.0.1", "127.255.255.254", "::1", "10.0.0.1", "172.16.0.1", "172.31.255.255",
    "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "::", "224.0.0.1",
    "239.255.255.250", "255.255.255.255", "240.0.0.1", "192.0.2.1", "198.18.0.1", "fe80::1",
    "fe80::1%eth0", "fc00::1", "fd12:3456::1", "ff02::1", "fec0::1", "::ffff:127.0.0.1",
    "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1", "2002:7f00:1::1",
    "2002:a00:1::1", "64:ff9b::7f00:1", "not an address", "",
]  # fmt: skip


@pytest.mark.unit
@pytest.mark.parametrize("addr", PUBLIC)
def test_public_addresses(addr: str) -> None:
    assert is_public_address(addr)


@pytest.mark.unit
@pytest.mark.parametrize("addr", NOT_PUBLIC)
def test_private_addresses(addr: str) -> None:
    assert not is_public_address(addr)


@pytest.mark.unit
def test_resolver_check_refuses_unless_allowed() -> None:
    guarded = GuardedResolver((), allow_private=False)
    for addr in ("127.0.0.1", "10.1.2.3", "::ffff:127.0.0.1", "169.254.169.254"):
        with pytest.raises(Refused):
            guarded.check(addr)
    guarded.check("8.8.8.8")
    GuardedResolver((), allow_private=True).check("127.0.0.1")


@pytest.mark.unit
@pytest.mark.parametrize(
    "addr", ["127.0.0.1", "10.0.0.7", "169.254.169.254", "[::1]", "[::ffff:127.0.0.1]", "[fe80::1]"]
)
async def test_resolver_refuses_names_pinned_to_private(addr: str) -> None:
    guarded = GuardedResolver((f"evil.test:80:{addr}", "*.evil.test:80:" + addr), False)
    for host in ("evil.test", "a.b.evil.test"):
        with pytest.raises(Refused):
            await guarded.resolve(host, 80)
    await guarded.close()


# -- refused by the Fetcher, with no connection attempt ----------------------------------------

NO_SERVER = [
    "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "http://192.168.1.1/",
    "http://172.16.0.1/", "http://100.64.0.1/", "http://0.0.0.0/", "http://224.0.0.1/",
    "http://255.255.255.255/", "http://[fe80::1]/", "http://[fc00::1]/", "http://[ff02::1]/",
    "http://[::]/", "http://[fec0::1]/", "http://[2002:7f00:1::]/",
    # what getaddrinfo would read as 127.0.0.1: checked as literals, never resolved
    "http://2130706433/", "http://127.1/", "http://0x7f.0.0.1/", "http://0177.0.0.1/",
    "http://127.0.0.1./",
]  # fmt: skip


@pytest.mark.unit
@pytest.mark.parametrize("url", NO_SERVER)
async def test_private_literals_refused_instantly(url: str, connects: list[Any]) -> None:
    res, seconds = await fetch_guarded(url)
    assert res.error == "address_refused", (res.error, res.error_detail)
    assert classify(res, 1, 3) == Drop(DropReason.ADDRESS_REFUSED, res.error_detail)
    assert seconds < 1.0
    assert connects == []


@pytest.mark.unit
@pytest.mark.parametrize("addr", ["10.0.0.1", "169.254.169.254", "192.168.0.10", "224.0.0.1"])
async def test_names_pinned_to_private_refused(addr: str, connects: list[Any]) -> None:
    res, seconds = await fetch_guarded(
        "http://intranet.test/", resolve=(f"intranet.test:80:{addr}",)
    )
    assert res.error == "address_refused" and seconds < 1.0
    assert connects == []


@pytest.mark.e2e
async def test_loopback_refused_before_connecting(hw: HostileWeb, connects: list[Any]) -> None:
    port = hw.port
    cases = [
        (hw.url("/ok"), ()),
        (f"http://[::ffff:127.0.0.1]:{port}/ok", ()),
        (f"http://internal.test:{port}/ok", (f"internal.test:{port}:127.0.0.1",)),
        (f"http://a.b.wild.test:{port}/ok", (f"*.wild.test:{port}:127.0.0.1",)),
    ]
    for url, rules in cases:
        res, seconds = await fetch_guarded(url, resolve=rules)
        assert res.error == "address_refused", (url, res.error, res.error_detail)
        assert seconds < 1.0
    assert connects == [] and hw.connections == 0 and hw.hits == []


@pytest.fixture
async def hw6():
    w = HostileWeb(max_stream_s=15, host="::1")
    try:
        await w.start()
    except OSError as exc:
        pytest.skip(f"IPv6 loopback not available: {exc}")
    try:
        yield w
    finally:
        await w.stop()


@pytest.mark.e2e
async def test_ipv6_loopback_refused(hw6: HostileWeb, connects: list[Any]) -> None:
    for url, rules in [
        (hw6.url("/ok"), ()),
        (f"http://six.test:{hw6.port}/ok", (f"six.test:{hw6.port}:[::1]",)),
    ]:
        res, seconds = await fetch_guarded(url, resolve=rules)
        assert res.error == "address_refused", (url, res.error, res.error_detail)
        assert seconds < 1.0
    assert connects == [] and hw6.connections == 0


@pytest.mark.e2e
async def test_ipv6_loopback_reachable_when_allowed(hw6: HostileWeb) -> None:
    # the control: the same URL works once private addresses are allowed
    res, _ = await fetch_guarded(hw6.url("/ok"), allow_private=True)
    assert res.status == 200 and hw6.connections == 1


# -- schemes -----------------------------------------------------------------------------------

NON_HTTP = [
    "file:///etc/passwd",
    "ftp://127.0.0.1/pub/",
    "data:text/html,<a href=x>x</a>",
    "javascript:alert(1)",
    "gopher://127.0.0.1:70/",
    "mailto:root@localhost",
]


@pytest.mark.unit
@pytest.mark.parametrize("url", NON_HTTP)
async def test_non_http_schemes_never_fetched(url: str, connects: list[Any]) -> None:
    res, _ = await fetch_guarded(url, allow_private=True)
    assert res.error == "invalid_url" and res.status is None and res.body == b""
    assert classify(res, 1, 3).reason is DropReason.INVALID_URL  # type: ignore[union-attr]
    assert connects == []


@pytest.mark.unit
@pytest.mark.parametrize("url", NON_HTTP)
def test_non_http_schemes_not_joinable(url: str) -> None:
    assert join("http://site.test/page.html", url) is None
    with pytest.raises(UrlError):
        canonicalize(url)


@pytest.mark.e2e
async def test_links_with_other_schemes_never_extracted(hw: HostileWeb) -> None:
    res, _ = await fetch_guarded(hw.url("/hostile-links"), allow_private=True)
    assert res.status == 200
    page = parse_page(res.body, res.url, "testbot")
    assert page.links
    assert all(link.url.startswith(f"http://127.0.0.1:{hw.port}/") for link in page.links)
    # traversal collapses inside the site: the path cannot climb above "/"
    urls = {link.url for link in page.links}
    assert hw.url("/etc/passwd") in urls
    assert not any("/../" in u or "/./" in u for u in urls)
    schemes = [h.split(":", 1)[0] for h in HOSTILE_LINKS if ":" in h.split("/", 1)[0]]
    assert {"file", "ftp", "data", "javascript", "mailto", "gopher", "ws"} <= set(schemes)


# -- end to end: redirects into the inside are refused when re-admitted ------------------------


@pytest.mark.e2e
async def test_redirect_to_loopback_refused_end_to_end(
    hw: HostileWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "allowed.test" stands for a public site: its (loopback) address is let through by the
    # guard for this one name only; every redirect target must still be refused
    real_resolve = GuardedResolver.resolve

    async def resolve(self: GuardedResolver, host: str, port: int = 0, family: Any = 0) -> Any:
        if host != "allowed.test":
            return await real_resolve(self, host, port, family)
        saved, self._allow_private = self._allow_private, True
        try:
            return await real_resolve(self, host, port, family)
        finally:
            self._allow_private = saved

    monkeypatch.setattr(GuardedResolver, "resolve", resolve)
    out = tmp_path / "out"
    paths = ["/redirect-to-loopback", "/redirect-to-mapped", "/redirect-to-name"]
    cfg = hostile_crawl_config(hw, out, f"http://allowed.test:{hw.port}/", allow_private=False)
    cfg = dataclasses.replace(cfg, seeds=tuple(f"http://allowed.test:{hw.port}{p}" for p in paths))
    summary = await Crawler(cfg).run()
    assert summary.stopped_by == "done"
    # only the "public" site was ever contacted
    assert {h.host for h in hw.hits} == {f"allowed.test:{hw.port}"}
    assert sorted(h.path for h in hw.hits) == sorted(["/robots.txt", *paths])
    log = read_jsonl(out / "log" / "requests.jsonl")
    refused = {r["url"].split("/")[2] for r in log if r.get("error") == "address_refused"}
    assert refused == {
        f"127.0.0.1:{hw.port}",
        f"[::ffff:7f00:1]:{hw.port}",
        f"internal.test:{hw.port}",
    }
    assert summary.counters["error:address_refused"] >= 3


# -- output file names -------------------------------------------------------------------------

_OUTPUT = re.compile(
    r"\.lock|state\.sqlite(-wal|-shm|-journal)?|summary\.json|seeds\.txt|focus\.json|pages\.jsonl|seen\.bloom|"
    r"log/links\.jsonl|log/traps\.jsonl|continuity\.sqlite(-wal|-shm|-journal)?|log/rules\.jsonl|"
    r"log/requests\.jsonl|log/robots\.jsonl|warc/politecrawl-\d{14}-\d+-\d{5}\.(warc\.gz|cdxj)"
)


@pytest.mark.e2e
async def test_output_names_never_from_urls(
    hw: HostileWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    out = tmp_path / "crawl" / "out"
    cfg = hostile_crawl_config(hw, out, f"http://site.hostile.test:{hw.port}/hostile-links")
    summary = await Crawler(cfg).run()
    assert summary.stored >= 1 and summary.stopped_by == "done"
    # the hostile paths were requested (as plain paths on the site), so they were in play
    assert "/etc/passwd" in {h.path for h in hw.hits}
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written
    for p in written:
        assert p.resolve().is_relative_to(out.resolve()), p
        assert _OUTPUT.fullmatch(p.relative_to(out).as_posix()), p
    assert list(cwd.iterdir()) == []
    assert not any(
        p.name in ("passwd", "shadow", "win.ini", "pwned.html") for p in tmp_path.rglob("*")
    )
