"""Options that change what a crawl does, each run through the real command against the
local test web and judged by its effect: the server's access log or the output files (the
option-to-config mapping of every option is tests/test_options.py's job)."""

from __future__ import annotations

import asyncio
import collections
import gzip
import json
import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import UA
from warcio.archiveiterator import ArchiveIterator

from politecrawl.demo.web import TestWeb
from politecrawl.storage.logs import iter_log_records, read_jsonl

pytestmark = pytest.mark.e2e


@dataclass
class Run:
    returncode: int
    stderr: str


async def crawl(web: TestWeb, out: Path, *flags: str) -> Run:
    """The real command; asynchronous, so the in-process test web keeps serving."""
    seeds = out.parent / f"{out.name}-seeds.txt"
    seeds.write_text("\n".join(web.seed_urls()) + "\n")
    args = [
        "-m", "politecrawl", "crawl", "--seeds", str(seeds),
        "--user-agent", UA, "--out", str(out), "--resolve", web.resolve_arg(),
        "--allow-private-addresses", "--scope", "any", "--min-delay", "0.05",
        "--jitter", "0", "--delay-factor", "0", "--no-progress",
        # the test web's names on 127.0.0.1 stand for many servers
        "--ip-min-delay", "off", *flags,
    ]  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        sys.executable, *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    _, err = await asyncio.wait_for(proc.communicate(), 180)
    assert proc.returncode is not None
    return Run(proc.returncode, err.decode())


def pages_by_host(web: TestWeb, since: int = 0) -> collections.Counter[str]:
    return collections.Counter(e.host for e in web.access_log[since:] if e.path != "/robots.txt")


async def test_max_size_cuts_bodies_and_marks_them(tmp_path: Path) -> None:
    async with TestWeb(n_hosts=2, pages_per_host=3, seed=1, rich=True) as web:
        p = await crawl(web, tmp_path / "out", "--max-size", "10000")
    assert p.returncode == 0, p.stderr
    rows = read_jsonl(tmp_path / "out/log/requests.jsonl")
    pages = [r for r in rows if r["outcome"] == "stored"]
    assert pages and all(r.get("truncated") and r["bytes"] <= 10000 for r in pages)
    marked = 0
    for path in (tmp_path / "out/warc").glob("*.warc.gz"):
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                uri = rec.rec_headers.get_header("WARC-Target-URI")
                if rec.rec_type == "response" and not uri.endswith("/robots.txt"):
                    assert rec.rec_headers.get_header("WARC-Truncated") == "length"
                    marked += 1
    assert marked == len(pages)


async def test_max_urls_per_host_caps_each_site(tmp_path: Path) -> None:
    async with TestWeb(n_hosts=3, pages_per_host=8, seed=2, plain=True) as web:
        p = await crawl(web, tmp_path / "capped", "--max-urls-per-host", "3")
        assert p.returncode == 0, p.stderr
        capped = pages_by_host(web)
        mark = len(web.access_log)
        p = await crawl(web, tmp_path / "free")
        assert p.returncode == 0, p.stderr
        free = pages_by_host(web, mark)
    assert max(capped.values()) <= 3 < min(free.values())


async def test_max_urls_per_pattern_stops_a_self_feeding_pattern(tmp_path: Path) -> None:
    # the test web's pages /p/N.html link to one another: a pattern that feeds itself
    async with TestWeb(n_hosts=2, pages_per_host=12, seed=3, plain=True) as web:
        p = await crawl(web, tmp_path / "guarded", "--max-urls-per-pattern", "2")
        assert p.returncode == 0, p.stderr
        guarded = sum(pages_by_host(web).values())
        mark = len(web.access_log)
        p = await crawl(web, tmp_path / "off", "--max-urls-per-pattern", "0")  # 0: the guard off
        assert p.returncode == 0, p.stderr
        off = sum(pages_by_host(web, mark).values())
    traps = list(iter_log_records(tmp_path / "guarded" / "log", "traps"))
    assert {t["pattern"] for t in traps} == {"/p/N.html"}
    assert off == 2 * 12 > guarded
    assert not list(iter_log_records(tmp_path / "off" / "log", "traps"))


async def test_robots_ttl_asks_for_robots_txt_again_when_stale(tmp_path: Path) -> None:
    async with TestWeb(n_hosts=1, pages_per_host=12, seed=4, plain=True) as web:
        p = await crawl(web, tmp_path / "out", "--robots-ttl", "0.2", "--min-delay", "0.1")
    assert p.returncode == 0, p.stderr
    robots = sum(1 for e in web.access_log if e.path == "/robots.txt")
    assert robots >= 3  # 12 pages 0.1 s apart: robots.txt stale several times over


@pytest.mark.parametrize("ttl", ["0", "0.1"])
async def test_robots_ttl_below_the_sites_delay_still_fetches_pages(
    tmp_path: Path, ttl: str
) -> None:
    """A copy is stale by the time the page it was fetched for may go (the delay is past the
    TTL): the crawl asked robots.txt at every turn and never a page, until --max-time."""
    async with TestWeb(n_hosts=1, pages_per_host=6, seed=4, plain=True) as web:
        p = await crawl(web, tmp_path / "out", "--robots-ttl", ttl, "--min-delay", "0.3",
                        "--max-time", "40")  # fmt: skip
    assert p.returncode == 0, p.stderr
    pages = sum(pages_by_host(web).values())
    robots = sum(1 for e in web.access_log if e.path == "/robots.txt")
    assert pages == 6
    assert 2 <= robots <= pages  # asked again when stale, but once per page at most


async def test_bloom_seen_set_sized_by_expected_urls_and_rate(tmp_path: Path) -> None:
    async with TestWeb(n_hosts=3, pages_per_host=6, seed=5, plain=True) as web:
        p = await crawl(web, tmp_path / "small", "--seen", "bloom", "--expected-urls", "1000",
                  "--seen-fp-rate", "0.01")  # fmt: skip
        assert p.returncode == 0, p.stderr
        mark = len(web.access_log)
        p = await crawl(web, tmp_path / "big", "--seen", "bloom", "--expected-urls", "200000",
                  "--seen-fp-rate", "0.0001")  # fmt: skip
        assert p.returncode == 0, p.stderr
        twice = collections.Counter((e.host, e.path) for e in web.access_log[mark:])
    small = (tmp_path / "small" / "seen.bloom").stat().st_size
    big = (tmp_path / "big" / "seen.bloom").stat().st_size
    assert big > 50 * small  # sized by --expected-urls and --seen-fp-rate
    assert max(twice.values()) == 1  # and every page fetched once


async def test_logs_rotate_at_size_and_old_ones_go(tmp_path: Path) -> None:
    out = tmp_path / "out"
    five_days_ago = time.strftime("%Y-%m-%dT%H%M%S", time.gmtime(time.time() - 5 * 86400))
    old = out / "log" / f"requests.{five_days_ago}.jsonl.gz"
    async with TestWeb(n_hosts=2, pages_per_host=6, seed=6, plain=True) as web:
        p = await crawl(web, out, "--max-pages", "2")  # a crawl of days ago, then resumed
        assert p.returncode == 0, p.stderr
        old.write_bytes(gzip.compress(b'{"url": "http://old.test/"}\n'))
        p = await crawl(web, out, "--log-rotate-bytes", "1000", "--log-retention-days", "1")
    assert p.returncode == 0, p.stderr
    assert not old.exists()  # older than --log-retention-days (the default 30 keeps it)
    rotated = list((out / "log").glob("requests.*.jsonl.gz"))
    assert len(rotated) >= 2  # rotated at --log-rotate-bytes
    summary = json.loads((out / "summary.json").read_text())
    assert len(list(iter_log_records(out / "log", "requests"))) == summary["requests"]


async def test_max_wait_reaches_the_crawl_and_must_be_positive(tmp_path: Path) -> None:
    async with TestWeb(n_hosts=2, pages_per_host=3, seed=7, plain=True) as web:
        p = await crawl(web, tmp_path / "ok", "--max-wait", "7")
        assert p.returncode == 0, p.stderr
        bad = await crawl(web, tmp_path / "bad", "--max-wait", "0")
    assert json.loads((tmp_path / "ok" / "config.json").read_text())["max_wait_s"] == 7
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert "--max-wait" in bad.stderr


async def test_the_default_seen_set_is_in_the_store_exact_across_a_resume(tmp_path: Path) -> None:
    """``--seen auto`` keeps the seen-set in state.sqlite (``disk``): a crawl stopped by
    --max-pages and resumed fetches every page once, URLs refused at the gate are filed in the
    store's ``seen`` table, and it fetches what the in-memory set (``--seen exact``) fetches."""
    async with TestWeb(n_hosts=3, pages_per_host=8, seed=9, plain=True) as web:
        out = tmp_path / "disk"
        cap = ("--max-urls-per-host", "5")  # the rest refused at the gate (a trap guard)
        p = await crawl(web, out, *cap, "--max-pages", "6")
        assert p.returncode in (0, 3), p.stderr
        p = await crawl(web, out, *cap)
        assert p.returncode in (0, 3), p.stderr
        disk = collections.Counter(
            (e.host, e.path) for e in web.access_log if e.path != "/robots.txt"
        )
        mark = len(web.access_log)
        p = await crawl(web, tmp_path / "exact", *cap, "--seen", "exact")
        assert p.returncode in (0, 3), p.stderr
        exact = collections.Counter(
            (e.host, e.path) for e in web.access_log[mark:] if e.path != "/robots.txt"
        )
    assert disk and max(disk.values()) == 1  # nothing twice across the resume
    assert set(disk) == set(exact)
    with sqlite3.connect(out / "state.sqlite") as db:
        refused = db.execute("SELECT COUNT(*) FROM seen").fetchone()[0]
    assert refused > 0  # the links past --max-urls-per-host
