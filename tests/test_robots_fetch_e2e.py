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

pytestmark = pytest.mark.e2e


def crawl(out: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable, "-m", "politecrawl", "crawl", "--user-agent", UA, "--out", str(out),
        "--allow-private-addresses", "--scope", "any", "--no-progress", "--jitter", "0",
        *args,
    ]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def requests_log(out: Path) -> list[dict[str, Any]]:
    lines = (out / "log" / "requests.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get("record") != "header"]


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
