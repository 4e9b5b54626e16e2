"""Offline segments: build from earlier crawls, fetch following nothing, host state reused."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import UA

from politecrawl.demo.accesslog import politeness_violations
from politecrawl.demo.web import TestWeb
from politecrawl.storage.logs import read_jsonl
from politecrawl.urls.canonical import join

pytestmark = pytest.mark.e2e


def _host_path(url: str) -> tuple[str, str]:
    rest = url.split("://", 1)[-1]
    hostport, _, path = rest.partition("/")
    return hostport.split(":")[0], "/" + path


async def _cli(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "politecrawl.tools.cli",
        *args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_build_then_fetch_a_segment_with_shared_state(tmp_path: Path) -> None:
    async with TestWeb(n_hosts=4, pages_per_host=8, seed=4) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(web.seed_urls()) + "\n")
        state = tmp_path / "hosts.state"
        common = [
            "--user-agent",
            UA,
            "--resolve",
            web.resolve_arg(),
            "--min-delay",
            "0.1",
            "--allow-private-addresses",
            "--ip-min-delay",
            "0",
            "--no-progress",
            "--retry-base",
            "0.2",
            "--park-time",
            "0.5",
            "--state",
            str(state),
        ]
        rc, _, err = await _cli(
            "crawl",
            "--seeds",
            str(seeds),
            "--out",
            str(tmp_path / "c1"),
            "--max-pages",
            "12",
            "--scope",
            "any",
            *common,
        )
        assert rc == 0, err
        first = len(web.access_log)
        robots_before = sum(e.path == "/robots.txt" for e in web.access_log)

        seg = tmp_path / "next.seg"
        rc, out, err = await _cli("segment", "build", str(tmp_path / "c1"), "--out", str(seg))
        assert rc == 0, err
        urls = [u for u in seg.read_text().splitlines() if u and not u.startswith("#")]
        assert urls and f"{len(urls)} URLs" in out
        assert not any(u.endswith((".jpg", ".pdf")) for u in urls)  # through the gate
        fetched_before = {(e.host, e.path) for e in web.access_log}
        assert not any(
            (u.split("/")[2].split(":")[0], "/" + u.split("/", 3)[3]) in fetched_before
            for u in urls
        )  # minus what was fetched

        rc, _, err = await _cli("fetch", str(seg), "--out", str(tmp_path / "s1"), *common)
        assert rc == 0, err
        later = web.access_log[first:]
        paths = {(e.host, e.path) for e in later if e.path != "/robots.txt"}
        wanted = {(u.split("/")[2].split(":")[0], "/" + u.split("/", 3)[3]) for u in urls}
        # follows nothing: only segment URLs, and targets of their redirects (re-admitted)
        log = read_jsonl(tmp_path / "s1" / "log" / "requests.jsonl")
        targets = {
            _host_path(join(r["url"], r["location"]) or "")
            for r in log
            if r["outcome"] == "redirect"
        }
        assert paths - wanted <= targets
        missing = {p for p in wanted if p[1].startswith("/p/")} - paths
        assert all("testbot" in (web.sites[h].robots or "") for h, _ in missing)  # robots says no
        # robots.txt copies came from --state: sites already known were not asked again
        robots_after = sum(e.path == "/robots.txt" for e in web.access_log)
        assert robots_after == robots_before
        assert politeness_violations(web.access_log, 0.1) == []

        # a damaged links log (a torn line, a record of the wrong shape) still gives the links
        # it holds, and says what it could not give
        links_log = tmp_path / "s1" / "log" / "links.jsonl"
        found = [u for r in read_jsonl(links_log) for u in r["links"]]
        assert found  # the segment's pages link on
        with links_log.open("a") as fh:
            fh.write('{"url": "http://x.test/", "links": "not a list"}\n{"url": "http://x.te')
        seg2 = tmp_path / "then.seg"
        rc, _, err = await _cli("segment", "build", str(tmp_path / "s1"), "--out", str(seg2))
        assert rc == 0, err
        assert "s1/log/links.jsonl: 1 damaged line skipped; 1 record of the wrong shape" in err
        assert "Traceback" not in err
        assert [u for u in seg2.read_text().splitlines() if u and u[0] != "#"]
