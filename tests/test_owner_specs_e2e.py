"""What owners say, read as the specifications write it, through the real command: each test
crawls a small web of its own (tests/usageweb.py) and is judged by what the server was asked,
``pages.jsonl``, the WARC records and the request log, and what the crawl said on stderr.

* tdmrep.json locations are path patterns (TDMRep §6.1, robots.txt's): ``/*`` and ``*``
  refuse the whole site as ``/`` does, so its pages are not fetched at all;
* ``tdm-reservation`` is "a boolean value" written 1/0 (§5.1): every JSON spelling of it
  (``1``, ``1.0``, ``true``, ``"1"``) is read alike, and the odd ones said;
* ``unavailable_after: DATE`` (Google's robots meta / X-Robots-Tag): past, the page is
  treated as ``noindex``; to come, nothing changes; unreadable, ignored and said;
* robots.txt is UTF-8: a value quoted in a warning reads as written;
* a ``Content-Usage`` line outside any group (aipref-attach §3: a group rule) is said, as
  other unreadable lines are.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from usageweb import Page, Site, UsageWeb, site_of, url
from warcio.archiveiterator import ArchiveIterator

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

UA = "testbot/1.0 (+http://bot.example/info)"
META = "/.well-known/tdmrep.json"


async def crawl(sites: dict[str, Site], out: Path, purpose: str) -> tuple[UsageWeb, str]:
    """The real command over ``sites``; the web (its log) and the crawl's stderr."""
    async with UsageWeb(sites) as web:
        args = [
            "-m", "politecrawl", "crawl", *web.seeds(), "--user-agent", UA, "--out", str(out),
            "--resolve", web.resolve_arg(), "--allow-private-addresses", "--scope", "any",
            "--min-delay", "0.02", "--jitter", "0", "--delay-factor", "0",
            "--ip-min-delay", "off", "--no-progress", "--purpose", purpose,
        ]  # fmt: skip
        proc = await asyncio.create_subprocess_exec(
            sys.executable, *args, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()[-3000:]
    return web, err.decode()


def asked(web: UsageWeb, host: str) -> set[str]:
    return {p for h, p in web.log if h == host}


def kept(out: Path) -> dict[str, str]:
    """pages.jsonl: each URL's ``kept``."""
    return {r["url"]: r["kept"] for r in read_jsonl(out / "pages.jsonl")}


def archived(out: Path) -> set[str]:
    """The URLs of the WARC's response records (robots.txt aside)."""
    found = set()
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                uri = rec.rec_headers.get_header("WARC-Target-URI") or ""
                if rec.rec_type == "response" and not uri.endswith("/robots.txt"):
                    found.add(uri)
    return found


def outcomes(out: Path) -> dict[str, str]:
    return {r["url"]: r["outcome"] for r in read_jsonl(out / "log" / "requests.jsonl")}


async def test_a_tdmrep_location_matching_every_path_refuses_the_whole_site(
    tmp_path: Path,
) -> None:
    def tdm(location: str) -> str:
        return f'[{{"location": "{location}", "tdm-reservation": 1}}]'

    sites = {
        "tdm-slash-star": site_of({"/a": Page()}, tdmrep=tdm("/*")),
        "tdm-star": site_of({"/a": Page()}, tdmrep=tdm("*")),
        # a pattern for one folder refuses that folder only: the rest is fetched and kept
        "tdm-folder": site_of({"/private/a": Page(), "/open": Page()},
                              tdmrep=tdm("/private/*")),
    }  # fmt: skip
    out = tmp_path / "out"
    web, _ = await crawl(sites, out, "ai-train")
    for host in ("tdm-slash-star", "tdm-star"):  # nothing but the metadata was asked
        assert asked(web, host) == {"/robots.txt", META}, host
    assert asked(web, "tdm-folder") == {"/robots.txt", META, "/", "/private/a", "/open"}
    port = web.port
    assert kept(out) == {
        url("tdm-folder", "/", port): "stored",
        url("tdm-folder", "/private/a", port): "reserved",
        url("tdm-folder", "/open", port): "stored",
    }
    assert not any("tdm-slash-star" in u or "tdm-star" in u for u in archived(out))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["reserved_sites"] == 2  # their home pages, never fetched


async def test_every_json_spelling_of_a_reservation_is_read_alike_and_the_odd_ones_said(
    tmp_path: Path,
) -> None:
    def tdm(value: str) -> Site:
        return site_of({"/a": Page()},
                       tdmrep=f'[{{"location": "/", "tdm-reservation": {value}}}]')  # fmt: skip

    sites = {"res-int": tdm("1"), "res-float": tdm("1.0"), "res-true": tdm("true"),
             "res-text": tdm('"1"'), "res-false": tdm("false"), "res-two": tdm("2")}  # fmt: skip
    out = tmp_path / "out"
    web, err = await crawl(sites, out, "ai-train")
    for host in ("res-int", "res-float", "res-true", "res-text"):  # reserved: not fetched
        assert asked(web, host) == {"/robots.txt", META}, host
    # not reserved (false is 0), and a protocol error (2: unset): fetched and kept
    port = web.port
    stored = {u for u, k in kept(out).items() if k == "stored"}
    for host in ("res-false", "res-two"):
        assert asked(web, host) == {"/robots.txt", META, "/", "/a"}, host
        assert {url(host, p, port) for p in ("/", "/a")} <= stored
    assert stored == archived(out)
    # said: the spellings read otherwise than TDMRep writes them, and the one dropped
    for host, spelled in (("res-float", "1.0"), ("res-true", "true"), ("res-text", '"1"'),
                          ("res-false", "false")):  # fmt: skip
        assert f"tdmrep.json of http://{host}.usage.test:{port}: tdm-reservation written " \
               f"{spelled} (TDMRep: 0 or 1): read as" in err, (host, err)  # fmt: skip
    assert f"res-two.usage.test:{port}: 1 malformed rule(s) ignored" in err
    assert f"res-int.usage.test:{port}: tdm-reservation written" not in err



async def test_a_robots_txt_value_is_quoted_in_a_warning_as_the_utf8_it_is(
    tmp_path: Path,
) -> None:
    # a Content-Signal value in UTF-8 that cannot be read: said as written
    robots = "User-agent: *\nContent-Signal: ai-train=ñø\nAllow: /\n"
    out = tmp_path / "out"
    web, err = await crawl({"cs-utf8": site_of({"/a": Page()}, robots=robots)}, out, "ai-train")
    assert (f"robots.txt of http://cs-utf8.usage.test:{web.port}, line 2: content-signal value "
            "'ai-train=ñø' not understood: ignored") in err  # fmt: skip
    assert "Ã" not in err
    assert asked(web, "cs-utf8") == {"/robots.txt", META, "/", "/a"}  # it refuses nothing
    assert set(kept(out).values()) == {"stored"}


async def test_a_content_usage_line_outside_any_group_is_said_and_binds_no_one(
    tmp_path: Path,
) -> None:
    # before any User-agent line: no group's (aipref-attach §3, RFC 9309 §2.2.2)
    robots = "Content-Usage: train-ai=n\n\nUser-agent: *\nAllow: /\n"
    out = tmp_path / "out"
    web, err = await crawl({"cu-stray": site_of({"/a": Page()}, robots=robots)}, out, "ai-train")
    assert (f"robots.txt of http://cu-stray.usage.test:{web.port}, line 1: content-usage "
            "'train-ai=n' outside any group") in err  # fmt: skip
    assert asked(web, "cu-stray") == {"/robots.txt", META, "/", "/a"}
    assert kept(out) == {url("cu-stray", p, web.port): "stored" for p in ("/", "/a")}


async def test_a_page_past_its_unavailable_after_date_is_noindex(tmp_path: Path) -> None:
    xrt = "X-Robots-Tag"
    pages = {
        # past: RFC 822 (its weekday's comma), ours by name in RFC 850, ISO 8601 in the meta
        "/past-rfc822": Page({xrt: "unavailable_after: Fri, 25 Jun 2010 15:00:00 GMT"},
                             links=("/after",)),
        "/past-ours": Page({xrt: "testbot: unavailable_after: Friday, 25-Jun-10 15:00:00 PST"}),
        "/past-meta": Page(head='<meta name="robots" content="unavailable_after: 2001-01-01">'),
        # not past, not ours, not readable: kept
        "/future": Page({xrt: "unavailable_after: 2999-12-31T23:59:59Z"}),
        "/other-bot": Page({xrt: "otherbot: unavailable_after: 2001-01-01"}),
        "/unreadable": Page({xrt: "unavailable_after: when the cows come home"}),
    }  # fmt: skip
    out = tmp_path / "out"
    web, err = await crawl({"dates": site_of(pages)}, out, "search")
    port = web.port
    # every page was fetched (noindex is not nofollow: /after, linked from a past page, too)
    assert asked(web, "dates") == {"/robots.txt", "/", *pages, "/after"}
    stored = {url("dates", p, port) for p in ("/", "/future", "/other-bot", "/unreadable",
                                              "/after")}  # fmt: skip
    assert kept(out) == dict.fromkeys(stored, "stored")  # the past ones not listed
    assert archived(out) == stored
    log = outcomes(out)
    for path in ("/past-rfc822", "/past-ours", "/past-meta"):
        assert log[url("dates", path, port)] == "dropped:noindex", path
    assert (f"http://dates.usage.test:{port}: an unavailable_after date 'when the cows come "
            "home' could not be read") in err  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counters"]["unavailable_after"] == 3
