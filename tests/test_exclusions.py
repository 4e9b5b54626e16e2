"""The never-crawl list: parsed leniently, re-read live, enforced at dequeue."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from conftest import crawl_config

from politecrawl import Crawler
from politecrawl.polite.exclusions import NeverCrawlList


@pytest.mark.unit
def test_subdomains_and_malformed_lines(tmp_path: Path) -> None:
    f = tmp_path / "never.txt"
    f.write_text("# why and when\nexample.com\n\nbad domain here\nlinkfarm.test  # spam\n")
    never = NeverCrawlList(f)
    assert never.excludes("example.com") and never.excludes("a.b.example.com")
    assert not never.excludes("notexample.com")
    assert never.excludes("linkfarm.test")
    assert [n for n, _ in never.errors] == [4]


@pytest.mark.unit
def test_reload_only_when_changed(tmp_path: Path) -> None:
    f = tmp_path / "never.txt"
    f.write_text("a.test\n")
    never = NeverCrawlList(f, check_s=10)
    assert not never.maybe_reload(now=100.0)
    f.write_text("a.test\nb.test\n")
    os.utime(f, ns=(1, 10**18))
    assert not never.maybe_reload(now=105.0)  # before the next check is due
    assert never.maybe_reload(now=111.0)
    assert never.excludes("b.test")


@pytest.mark.e2e
async def test_exclusion_added_mid_crawl_takes_effect(web, tmp_path: Path) -> None:
    f = tmp_path / "never.txt"
    f.write_text("# nothing yet\n")
    victim = web.hosts[0]
    crawler = Crawler(
        crawl_config(
            web,
            tmp_path / "out",
            seeds=1,
            scope="host",
            delay=0.3,
            exclude_file=f,
            exclude_check_s=0.2,
        )
    )
    task = asyncio.create_task(crawler.run())
    for _ in range(200):
        await asyncio.sleep(0.05)
        if sum(e.host == victim for e in web.access_log) >= 4:
            break
    f.write_text(f"# complaint\n{victim}\n")
    added_wall = time.time()
    summary = await asyncio.wait_for(task, 60)
    late = [e for e in web.access_log if e.host == victim and e.start > added_wall + 0.2 + 0.05]
    assert late == []  # nothing requested after the check interval
    assert summary.counters["excluded"] >= 1  # queued URLs dropped at dequeue, counted
    assert summary.stopped_by == "done"
