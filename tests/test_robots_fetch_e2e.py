"""How robots.txt (and tdmrep.json) is fetched, through the real command, judged by what the
server logged: redirects to other hosts under those hosts' politeness and the never-crawl
list, each origin's Crawl-delay kept, Retry-After honoured, 500 KiB read whatever
``--max-size`` says."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import UA
from robotsweb import Reply, RobotsWeb, page

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e


def crawl(out: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable, "-m", "politecrawl", "crawl", "--user-agent", UA, "--out", str(out),
        "--allow-private-addresses", "--scope", "any", "--no-progress", "--jitter", "0",
        *args,
    ]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def requests_log(out: Path) -> list[dict[str, Any]]:
    return read_jsonl(out / "log" / "requests.jsonl")  # with its rotated parts, no header


def summary(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return data


def test_a_robots_txt_is_read_to_500_kib_whatever_max_size_says(tmp_path: Path) -> None:
    """A 601 KB robots.txt with its Disallow at about 450 KiB, crawled with --max-size
    100000: the rule is read (RFC 9309 2.5), the disallowed page is not fetched."""
    pad = b"".join(b"# %06d padding padding padding padding padding padding\n" % i
                   for i in range(11_000))  # fmt: skip
    cut = pad.index(b"\n", 450 * 1024) + 1
    head, tail = pad[:cut], pad[cut:]
    robots = b"User-agent: *\n" + head + b"Disallow: /late\n" + tail

    def route(host: str, path: str) -> Reply:
        if path == "/robots.txt":
            return Reply(200, robots)
        return page(["/late", "/ok"]) if path == "/" else page()

    assert len(robots) > 600_000
    with RobotsWeb(route) as web:
        p = crawl(
            tmp_path / "o", f"http://big.test:{web.port}/", *web.resolve("big.test"),
            "--max-size", "100000", "--min-delay", "0.05", "--ip-min-delay", "off",
            "--max-time", "30",
        )  # fmt: skip
        paths = [h.path for h in web.hits("big.test")]
    assert p.returncode == 0, p.stderr
    assert "/ok" in paths and "/late" not in paths, paths


def test_one_origins_crawl_delay_is_not_undone_by_another_origins_robots_txt(
    tmp_path: Path,
) -> None:
    """http://mix.test:A says Crawl-delay 2; http://mix.test:B (same host: one key) has no
    robots.txt (404). Reading B's used to set the key's delay to none, and A's pages came
    0.2 s apart: every gap the server saw after A's robots.txt is ~2 s."""

    def route_a(host: str, path: str) -> Reply:
        if path == "/robots.txt":
            return Reply(200, b"User-agent: *\nCrawl-delay: 2\n")
        links = [f"http://mix.test:{web_b.port}/", "/a1", "/a2", "/a3"]
        return page(links if path == "/" else [])

    def route_b(host: str, path: str) -> Reply:
        if path == "/robots.txt":
            return Reply(404, b"none")
        return page(["/b1"] if path == "/" else [])

    with RobotsWeb(route_a) as web_a, RobotsWeb(route_b) as web_b:
        p = crawl(
            tmp_path / "o", f"http://mix.test:{web_a.port}/",
            *web_a.resolve("mix.test"), *web_b.resolve("mix.test"),
            "--min-delay", "0.2", "--delay-factor", "1", "--ip-min-delay", "off",
            "--max-time", "40",
        )  # fmt: skip
        hits = sorted(web_a.hits() + web_b.hits(), key=lambda h: h.t0)
    assert p.returncode == 0, p.stderr
    assert len(hits) == 8, [(h.path, h.status) for h in hits]  # both sites, every page
    gaps = [b.t0 - a.t1 for a, b in itertools.pairwise(hits)]
    assert min(gaps) > 1.5, gaps


def test_robots_txt_retry_after_is_honoured_and_asks_are_spaced_as_a_pages(
    tmp_path: Path,
) -> None:
    """robots.txt answering 503 with Retry-After 3 (seconds) or an HTTP date 4 s ahead is
    asked again no sooner; one answering 503 alone is asked again --retry-base (2 s), then
    twice that, later (not 4 x --min-delay); each origin is given up after --max-attempts."""
    import email.utils
    import time

    def route(host: str, path: str) -> Reply:
        if path != "/robots.txt":
            return page()
        if host == "secs.test":
            return Reply(503, b"busy", headers=(("Retry-After", "3"),))
        if host == "date.test":
            when = email.utils.formatdate(time.time() + 5, usegmt=True)
            return Reply(503, b"busy", headers=(("Retry-After", when),))
        return Reply(503, b"busy")

    hosts = ("secs.test", "date.test", "plain.test")
    with RobotsWeb(route) as web:
        p = crawl(
            tmp_path / "o", *(f"http://{h}:{web.port}/" for h in hosts),
            *(a for h in hosts for a in web.resolve(h)),
            "--min-delay", "0.2", "--retry-base", "2", "--ip-min-delay", "off",
            "--max-time", "40",
        )  # fmt: skip
        asks = {h: [x.t0 for x in web.hits(h)] for h in hosts}
    assert "nothing could be fetched" in p.stderr, p.stderr  # the three given up, named
    assert all(len(a) == 3 for a in asks.values()), asks  # --max-attempts, no page
    gaps = {h: [b - a for a, b in itertools.pairwise(t)] for h, t in asks.items()}
    assert min(gaps["secs.test"]) > 2.8, gaps
    assert min(gaps["date.test"]) > 3.5, gaps
    assert gaps["plain.test"][0] > 1.8 and gaps["plain.test"][1] > 3.6, gaps
    assert summary(tmp_path / "o")["counters"]["robots_unavailable"] == 3


def test_a_failing_tdmrep_json_is_asked_again_not_read_as_permission(tmp_path: Path) -> None:
    """tdmrep.json answers 503 (Retry-After 2), then 429 (Retry-After 2), then reserves the
    whole site for mining: an ai-train crawl asks again after each Retry-After, and no page
    is fetched (it used to read the 503 as "no reservation" and keep every page)."""
    tdm = iter([Reply(503, b"", headers=(("Retry-After", "2"),)),
                Reply(429, b"", headers=(("Retry-After", "2"),))])  # fmt: skip

    def route(host: str, path: str) -> Reply:
        if path == "/robots.txt":
            return Reply(404, b"none")
        if path == "/.well-known/tdmrep.json":
            rules = b'[{"location": "/", "tdm-reservation": 1}]'
            return next(tdm, Reply(200, rules, ctype="application/json"))
        return page(["/a"])

    with RobotsWeb(route) as web:
        p = crawl(
            tmp_path / "o", f"http://t503.test:{web.port}/", *web.resolve("t503.test"),
            "--purpose", "ai-train", "--min-delay", "0.2", "--ip-min-delay", "off",
            "--max-time", "30",
        )  # fmt: skip
        hits = web.hits("t503.test")
    assert [h.path for h in hits] == ["/robots.txt"] + ["/.well-known/tdmrep.json"] * 3, (
        hits,
        p.stderr,
    )
    asks = [h.t0 for h in hits[1:]]
    assert min(b - a for a, b in itertools.pairwise(asks)) > 1.8, asks


def test_robots_txt_redirects_to_one_host_are_asked_once_and_one_at_a_time(
    tmp_path: Path,
) -> None:
    """Six sites, each on its own address, whose robots.txt redirect to www.test's (on
    another address): they used to put six requests in flight at once on www.test, each
    under its own site's lease. The answer is shared and www.test is asked one at a time."""
    apexes = [f"apex{i}.test" for i in range(1, 7)]

    def route(host: str, path: str) -> Reply:
        if path == "/robots.txt" and host in apexes:
            loc = f"http://www.test:{web.port}/robots.txt"
            return Reply(301, b"", headers=(("Location", loc),))
        if path == "/robots.txt":
            return Reply(200, b"User-agent: *\nDisallow: /private\n", take_s=0.5)
        return page(["/p1", "/private"] if path == "/" else [])

    ips = [f"127.0.0.{i}" for i in range(2, 9)]
    with RobotsWeb(route, ips=ips) as web:
        names = ["www.test", *apexes]
        p = crawl(
            tmp_path / "o", *(f"http://{h}:{web.port}/" for h in names),
            *(a for h, ip in zip(names, ips, strict=True) for a in web.resolve(h, ip)),
            "--min-delay", "1", "--delay-factor", "1", "--ip-min-delay", "1",
            "--max-time", "25",
        )  # fmt: skip
        www_robots = web.hits("www.test", "/robots.txt")
        most = web.in_flight_max("www.test")
        apex_pages = {h: {x.path for x in web.hits(h)} for h in apexes}
    assert p.returncode == 0, p.stderr
    assert most == 1, [(h.path, h.t0, h.t1) for h in web.hits("www.test")]
    assert len(www_robots) <= 2, www_robots  # its own site's ask, and one hop's, shared
    for h, paths in apex_pages.items():  # the rules the redirect led to are obeyed
        assert paths == {"/robots.txt", "/", "/p1"}, (h, paths)


def test_a_robots_txt_redirect_to_a_never_crawl_domain_is_not_followed(tmp_path: Path) -> None:
    """red.test's robots.txt redirects to banned.test, on --exclude-file: nothing is sent to
    banned.test; red.test's robots.txt cannot be read, so none of its pages are fetched
    (dropped as excluded), and the summary names the site lost."""
    exclude = tmp_path / "never.txt"
    exclude.write_text("banned.test\n")

    def route(host: str, path: str) -> Reply:
        if host == "red.test" and path == "/robots.txt":
            loc = f"http://banned.test:{web.port}/robots.txt"
            return Reply(301, b"", headers=(("Location", loc),))
        if path == "/robots.txt":
            return Reply(200, b"User-agent: *\nAllow: /\n")
        return page(["/a"] if path == "/" else [])

    with RobotsWeb(route) as web:
        out = tmp_path / "o"
        p = crawl(
            out, f"http://red.test:{web.port}/", *web.resolve("red.test"),
            *web.resolve("banned.test"), "--exclude-file", str(exclude),
            "--min-delay", "0.2", "--ip-min-delay", "off", "--max-time", "15",
        )  # fmt: skip
        asked = [(h.host, h.path) for h in web.hits()]
    assert asked == [("red.test", "/robots.txt")], asked
    assert "never-crawl" in p.stderr, p.stderr
    s = summary(out)
    assert s["counters"]["excluded"] >= 1, s["counters"]
    assert [x["site"] for x in s["sites_lost"]] == ["red.test"], s["sites_lost"]
