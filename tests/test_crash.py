"""SIGKILL at random moments, restart each time: nothing lost, nothing fetched twice unmarked,
files readable, politeness intact (the test server's access log is the judge)."""

from __future__ import annotations

import asyncio
import collections
import json
import random
import signal
import sys
from pathlib import Path

import pytest
from conftest import UA
from warcio.archiveiterator import ArchiveIterator

from politecrawl.demo.accesslog import politeness_violations
from politecrawl.demo.web import TestWeb
from politecrawl.storage.logs import read_jsonl

DELAY = 0.1
KILLS = 20


async def _start(cfg: Path, out: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "politecrawl.tools.cli",
        "crawl",
        "--config",
        str(cfg),
        "--out",
        str(out),
        "--no-progress",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )


@pytest.mark.e2e
async def test_kill_minus_nine_twenty_times(tmp_path: Path) -> None:
    rng = random.Random(20261122)
    async with TestWeb(n_hosts=6, pages_per_host=8, seed=9) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(web.seed_urls()) + "\n")
        handler = tmp_path / "mine.py"
        handler.write_text("def items(page):\n    yield {'title': page.title}\n")
        cfg = tmp_path / "crawl.toml"
        cfg.write_text(
            f'seeds = "{seeds}"\nuser-agent = "{UA}"\nmin-delay = {DELAY}\n'
            f'handler = "{handler}:items"\n'
            f'resolve = ["{web.resolve_arg()}"]\nallow-private-addresses = true\n'
            'scope = "any"\nretry-base = 0.2\nip-min-delay = 0\n'
        )
        out = tmp_path / "out"
        kills = 0
        for _ in range(KILLS):
            proc = await _start(cfg, out)
            await asyncio.sleep(rng.uniform(0.4, 1.6))
            if proc.returncode is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            await asyncio.wait_for(proc.wait(), 30)
        proc = await _start(cfg, out)
        _, err = await asyncio.wait_for(proc.communicate(), 180)
        # 3: a site was lost, h4 (the test web's robots.txt answers 500), whichever run gave up
        assert proc.returncode == 3, err.decode()
        assert kills >= KILLS - 2  # nearly every run died mid-crawl

        summary = json.loads((out / "summary.json").read_text())
        assert summary["stopped_by"] == "done" and summary["queued_left"] == 0
        assert [x["site"] for x in summary["sites_lost"]] == ["h4.test"]

        # the request log has no torn line, and every re-fetch of a URL is marked
        assert (out / "log" / "requests.jsonl").read_bytes().endswith(b"\n")
        log = read_jsonl(out / "log" / "requests.jsonl")  # strict: a torn line would raise
        by_url = collections.defaultdict(list)
        for r in log:
            by_url[r["url"]].append(r)
        for url, rs in by_url.items():
            if len(rs) > 1 and not any(x in url for x in ("/status/5", "/status/429")):
                retried_robots = url.endswith("/robots.txt") and any(
                    r["outcome"] == "robots:unreachable" for r in rs
                )
                assert retried_robots or all(r.get("refetch") for r in rs[1:]), (url, rs)

        # server side: no page fetched twice except those in flight at a kill (at most one per
        # site per kill), and each of those is marked as a re-fetch in our log (checked above)
        retried_hosts = {h for h, s in web.sites.items() if s.robots_status >= 500}
        seen = collections.Counter(
            (e.host, e.path)
            for e in web.access_log
            if not e.path.startswith(("/status/5", "/status/429"))
            and not (e.path == "/robots.txt" and e.host in retried_hosts)
        )
        extra = sum(n - 1 for n in seen.values() if n > 1)
        assert extra <= kills * len(web.hosts)

        # every page of every host that robots allows was reached (nothing lost)
        fetched = {(e.host, e.path) for e in web.access_log}
        for host, site in web.sites.items():
            if site.robots_status >= 500 or (site.robots or "").endswith("Disallow: /\n"):
                continue
            for page in site.pages:
                if site.robots and "testbot" in site.robots and page == "/p/2.html":
                    continue
                if (
                    site.robots
                    and "Disallow: /p/\n" in site.robots
                    and page.startswith("/p/")
                    and page != "/p/1.html"
                ):
                    continue
                assert (host, page) in fetched, (host, page)

        # pages.jsonl and items.jsonl: each page once, though runs died between writing a
        # page's rows and committing it (the resume fetched it again: its old rows dropped)
        pages = read_jsonl(out / "pages.jsonl")
        items = [json.loads(x) for x in (out / "items.jsonl").read_text().splitlines()]
        twice = collections.Counter(r["url"] for r in pages)
        assert [u for u, n in twice.items() if n > 1] == []
        twice = collections.Counter(r["url"] for r in items)
        assert [u for u, n in twice.items() if n > 1] == []
        assert len(pages) >= summary["counters"]["stored"] > 0
        assert {r["url"] for r in items} <= {r["url"] for r in pages}

        # every WARC file reads to the end with a standard tool
        assert not list((out / "warc").glob("*.open"))
        for path in (out / "warc").glob("*.warc.gz"):
            with path.open("rb") as fh:
                assert sum(1 for _ in ArchiveIterator(fh)) >= 1

        # politeness held across 20 restarts
        assert politeness_violations(web.access_log, DELAY) == []


@pytest.mark.unit
async def test_requests_begun_together_share_one_commit_and_each_waits_for_it(
    tmp_path: Path,
) -> None:
    """Group commit (``SqliteFrontier.begin_request``): twenty requests begun in one pass of
    the event loop make one commit, none returns before its site's state is on disk (another
    connection reads it), and one waiter cancelled does not cancel the others' commit."""
    from politecrawl.frontier import UrlEntry
    from politecrawl.frontier.sqlite import SqliteFrontier

    path = tmp_path / "state.sqlite"
    f = SqliteFrontier.open(path)
    keys = [f"h{i}.test" for i in range(20)]
    await f.add([UrlEntry(f"http://{k}/", k) for k in keys])
    states = []
    for k in keys:
        h = await f.store.host(k)
        h.last_start, h.next_allowed = 100.0, 116.0
        states.append(h)
    begun = [asyncio.ensure_future(f.begin_request(h.key, h)) for h in states]
    await asyncio.sleep(0)  # every one is waiting for the commit now
    begun[0].cancel()
    await asyncio.gather(*begun[1:])
    assert begun[0].cancelled()
    assert f.group_commits == 1
    other = SqliteFrontier.open(path)  # another process on the same file, before any flush
    for k in keys:
        got = await other.store.host(k)
        assert (got.last_start, got.next_allowed) == (100.0, 116.0), k
    await other.store.close()
    await f.store.close()


@pytest.mark.unit
async def test_every_commit_of_the_state_carries_the_counts_made_before_it(
    tmp_path: Path,
) -> None:
    """``Counts`` in the store's commits (``counters_from``): a request's group commit saves
    the counts made since the last one, so what another process reads (the state after a
    ``kill -9``) counts every URL it holds as done; a count is saved once, however many
    commits follow."""
    from politecrawl.engine.journal import Counts
    from politecrawl.frontier import UrlEntry
    from politecrawl.frontier.sqlite import SqliteFrontier

    path = tmp_path / "state.sqlite"
    f = SqliteFrontier.open(path)
    counts = Counts()
    counts.update(await f.store.counters())
    counts.mark_saved()
    f.store.counters_from(counts.unsaved)
    await f.add([UrlEntry("http://h0.test/", "h0.test")])
    counts["requests"] += 3
    counts["stored"] += 2
    host = await f.store.host("h0.test")
    await f.begin_request(host.key, host)
    await f.begin_request(host.key, host)  # a second commit adds nothing twice
    other = SqliteFrontier.open(path)
    assert await other.store.counters() == {"requests": 3, "stored": 2}
    counts["requests"] += 1
    assert counts.unsaved() == {"requests": 1}
    assert counts.unsaved() == {}
    await other.store.close()
    await f.store.close()
