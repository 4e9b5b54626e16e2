"""End to end: the real crawler against the real local test web, judged by the server's log."""

from __future__ import annotations

import collections
import dataclasses
import itertools
import json
from pathlib import Path

import pytest
from conftest import DELAY, LOOP_LAG_S, crawl_config
from warcio.archiveiterator import ArchiveIterator

from politecrawl import Crawler
from politecrawl.demo.accesslog import politeness_violations
from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

NEVER_FETCHED = (
    "/hidden-comment.html",
    "/hidden-script.html",
    "/hidden-form.html",
    "/nofollow-target.html",
    "/only-from-meta-nofollow.html",
    "/only-from-xrobots.html",
)


async def test_polite_crawl_end_to_end(web, tmp_path: Path) -> None:
    out = tmp_path / "out"
    summary = await Crawler(crawl_config(web, out, concurrency=8)).run()
    log = web.access_log
    assert summary.stored > 30 and summary.stopped_by == "done"

    # never two requests at once to a host, never closer than the delay
    assert politeness_violations(log, DELAY, LOOP_LAG_S) == []

    by_host = collections.defaultdict(list)
    for e in sorted(log, key=lambda e: e.start):
        by_host[e.host].append(e)
    for host, entries in by_host.items():
        # robots.txt before anything else on the host
        assert entries[0].path == "/robots.txt", host
        site = web.sites[host]
        paths = [e.path for e in entries]
        if site.robots_status in (500, 503):
            assert set(paths) == {"/robots.txt"}, host
        if site.robots is not None and site.robots_status == 200 and "Disallow: /\n" in site.robots:
            assert set(paths) == {"/robots.txt"}, host
        private_disallowed = site.robots is not None and "Disallow: /private/" in site.robots
        for p in paths:
            assert not (private_disallowed and p.startswith("/private/")), (host, p)
            assert not p.endswith((".jpg", ".pdf")), (host, p)
            assert p not in NEVER_FETCHED, (host, p)
        assert all(e.user_agent.startswith("testbot/1.0") for e in entries)

    # the testbot-specific group disallows /p/2.html on its host
    special = [h for h, s in web.sites.items() if s.robots and "testbot" in s.robots.lower()]
    for host in special:
        assert "/p/2.html" not in [e.path for e in by_host[host]]

    # every request the server saw is in the request log, and nothing else is
    req_log = read_jsonl(out / "log" / "requests.jsonl")
    server = collections.Counter((e.host, e.path) for e in log)
    ours = collections.Counter()
    for r in req_log:
        u = r["url"].split("://", 1)[1]
        hostport, _, path = u.partition("/")
        ours[(hostport.split(":")[0], "/" + path)] += 1
    assert ours == server

    # non-HTML abandoned after headers, logged as such
    assert any(r["outcome"] == "dropped:not_html" for r in req_log)
    assert summary.extension_filtered > 0
    assert summary.redirects > 0

    # robots log holds full bodies
    robots_log = read_jsonl(out / "log" / "robots.jsonl")
    assert {r["host"] for r in robots_log} == set(by_host)
    ok = [r for r in robots_log if r["status"] == 200]
    assert any("Disallow" in r["body"] for r in ok)

    # WARC readable by a standard tool; one response record per stored page at least
    kinds = collections.Counter()
    for path in (out / "warc").glob("*.warc.gz"):
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                kinds[rec.rec_type] += 1
    assert kinds["warcinfo"] >= 1
    assert kinds["response"] >= summary.stored
    assert kinds["request"] == kinds["response"]

    saved = json.loads((out / "summary.json").read_text())
    assert saved["stored"] == summary.stored


async def test_resume_fetches_nothing_twice(web, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = await Crawler(crawl_config(web, out, concurrency=6, max_pages=25)).run()
    assert first.stopped_by == "max_pages"
    n_first = len(web.access_log)
    second = await Crawler(crawl_config(web, out, concurrency=6)).run()
    assert second.stopped_by == "done"
    assert len(web.access_log) > n_first
    # retried on purpose: 5xx/429 pages, and robots.txt of sites whose robots.txt fails
    retried = {h for h, s in web.sites.items() if s.robots_status >= 500}
    seen = collections.Counter(
        (e.host, e.path)
        for e in web.access_log
        if not e.path.startswith(("/status/5", "/status/429"))
        and not (e.path == "/robots.txt" and e.host in retried)
    )
    twice = {k: v for k, v in seen.items() if v > 1}
    assert twice == {}
    assert politeness_violations(web.access_log, DELAY, LOOP_LAG_S) == []


async def test_private_addresses_refused_by_default(web, tmp_path: Path) -> None:
    out = tmp_path / "out"
    summary = await Crawler(
        crawl_config(web, out, seeds=2, fetch={"allow_private_addresses": False})
    ).run()
    assert web.access_log == []
    assert summary.counters.get("error:address_refused", 0) >= 1


async def test_never_crawl_list_excludes_domain_and_subdomains(web, tmp_path: Path) -> None:
    excl = tmp_path / "never.txt"
    blocked = web.hosts[1]
    excl.write_text(f"# complaint 2026-11-21\n{blocked}\n")
    out = tmp_path / "out"
    summary = await Crawler(crawl_config(web, out, exclude_file=excl)).run()
    assert blocked not in {e.host for e in web.access_log}
    assert summary.excluded >= 1


async def test_scope_domain_stays_on_seed_domains(web, tmp_path: Path) -> None:
    out = tmp_path / "out"
    await Crawler(crawl_config(web, out, seeds=1, scope="domain")).run()
    assert {e.host for e in web.access_log} == {web.hosts[0]}


async def test_redirects_requeued_through_gate_and_capped_at_three_hops(
    web, tmp_path: Path
) -> None:
    host = web.hosts[0]
    cfg = crawl_config(web, tmp_path / "out", scope="host")
    cfg = dataclasses.replace(cfg, seeds=(web.url(host, "/redirect/6"),))
    summary = await Crawler(cfg).run()
    paths = [e.path for e in sorted(web.access_log, key=lambda e: e.start)]
    assert paths == ["/robots.txt", "/redirect/6", "/redirect/5", "/redirect/4", "/redirect/3"]
    assert summary.counters["too_many_redirects"] == 1
    assert politeness_violations(web.access_log, DELAY, LOOP_LAG_S) == []
    req_log = read_jsonl(tmp_path / "out" / "log" / "requests.jsonl")
    assert [r["outcome"] for r in req_log[1:]] == ["redirect"] * 4


async def test_cross_host_redirect_target_gets_its_own_robots_first(web, tmp_path: Path) -> None:
    cfg = crawl_config(web, tmp_path / "out", scope="any")
    cfg = dataclasses.replace(cfg, seeds=(web.url(web.hosts[0], "/cross"),), max_pages=3)
    await Crawler(cfg).run()
    log = sorted(web.access_log, key=lambda e: e.start)
    other = [e for e in log if e.host != web.hosts[0]]
    assert other and other[0].path == "/robots.txt"


async def test_sitemaps_seed_pages_through_the_gate(web, tmp_path: Path) -> None:
    cfg = dataclasses.replace(
        crawl_config(web, tmp_path / "out", seeds=1, scope="host"), sitemaps=True
    )
    summary = await Crawler(cfg).run()
    paths = [e.path for e in sorted(web.access_log, key=lambda e: e.start)]
    assert paths[0] == "/robots.txt"
    assert "/sitemap-index.xml" in paths and "/sitemap-pages.xml.gz" in paths
    assert "/orphan.html" in paths  # only reachable through the sitemap
    assert summary.counters["sitemap_urls"] >= len(web.sites[web.hosts[0]].pages)
    assert politeness_violations(web.access_log, DELAY, LOOP_LAG_S) == []


async def test_sitemaps_off_by_default(web, tmp_path: Path) -> None:
    await Crawler(crawl_config(web, tmp_path / "out", seeds=1, scope="host")).run()
    assert "/orphan.html" not in {e.path for e in web.access_log}


async def test_refetch_is_a_conditional_get_and_a_304_is_a_revisit(web, tmp_path: Path) -> None:
    import sqlite3

    out = tmp_path / "out"
    host = web.hosts[0]
    await Crawler(crawl_config(web, out, seeds=1, scope="host")).run()
    home = web.url(host, "/")
    db = sqlite3.connect(out / "state.sqlite")
    assert db.execute("SELECT etag FROM pages WHERE url=?", (home,)).fetchone()[0]
    db.execute("UPDATE urls SET state=0 WHERE url=?", (home,))  # due again, as a revisit is
    db.commit()
    db.close()
    before = len(web.access_log)
    summary = await Crawler(crawl_config(web, out, seeds=1, scope="host")).run()
    again = web.access_log[before:]
    assert [e.path for e in again] == ["/"]
    assert again[0].headers.get("If-None-Match") and again[0].status == 304
    assert summary.counters["not_modified"] == 1
    kinds = collections.Counter()
    for path in (out / "warc").glob("*.warc.gz"):
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                kinds[rec.rec_type] += 1
    assert kinds["revisit"] == 1
    assert read_jsonl(out / "log" / "requests.jsonl")[-1]["outcome"] == "not_modified"


async def test_urls_per_host_cap_is_a_recorded_trap_cut(web, tmp_path: Path) -> None:
    cfg = crawl_config(web, tmp_path / "out", seeds=1, scope="host", max_urls_per_host=5)
    summary = await Crawler(cfg).run()
    pages = {e.path for e in web.access_log if e.path != "/robots.txt"}
    assert len(pages) <= 5
    assert summary.counters["trap:host_url_limit"] > 0


async def test_urls_per_host_cap_holds_across_a_resume(web, tmp_path: Path) -> None:
    """The per-host counts are saved with the crawl: a resumed run does not start them at 0."""
    out = tmp_path / "out"
    cfg = crawl_config(web, out, seeds=1, scope="host", max_urls_per_host=6)
    first = await Crawler(dataclasses.replace(cfg, max_pages=2)).run()
    assert first.stopped_by == "max_pages"
    assert not any(k.startswith("host_urls:") for k in first.counters)
    await Crawler(cfg).run()
    pages = [e.path for e in web.access_log if e.path != "/robots.txt"]
    assert len(set(pages)) <= 6, sorted(set(pages))


async def test_politeness_by_ip_treats_many_hosts_on_one_server_as_one(web, tmp_path: Path):
    cfg = crawl_config(web, tmp_path / "out", seeds=4, concurrency=8, max_pages=25)
    cfg = dataclasses.replace(cfg, politeness=dataclasses.replace(cfg.politeness, key_mode="ip"))
    await Crawler(cfg).run()
    log = sorted(web.access_log, key=lambda e: e.start)
    assert len({e.host for e in log}) >= 3
    for a, b in itertools.pairwise(log):  # one server: one request at a time, spaced
        assert b.start >= a.end - 0.001
        assert b.start - a.start >= DELAY - LOOP_LAG_S
