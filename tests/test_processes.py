"""``--processes 2``: the sites are partitioned over two crawler processes, and the crawl is
exactly as polite, as complete and as resumable as with one. The real command against the
test web, judged by the server's access log and the output files."""

from __future__ import annotations

import asyncio
import collections
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from conftest import LOOP_LAG_S, UA
from warcio.archiveiterator import ArchiveIterator

from politecrawl.demo.accesslog import politeness_violations
from politecrawl.demo.web import TestWeb
from politecrawl.storage.logs import iter_log_records, read_jsonl

pytestmark = pytest.mark.e2e

DELAY = 0.1


async def _start(cfg: Path, out: Path, *extra: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "politecrawl", "crawl", "--config", str(cfg),
        "--out", str(out), "--no-progress", "--processes", "2", *extra,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


def _config(tmp_path: Path, web: TestWeb) -> Path:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("\n".join(web.seed_urls()) + "\n")
    cfg = tmp_path / "crawl.toml"
    cfg.write_text(
        f'seeds = "{seeds}"\nuser-agent = "{UA}"\nmin-delay = {DELAY}\njitter = 0\n'
        f'resolve = ["{web.resolve_arg()}"]\nallow-private-addresses = true\n'
        # the test web's names on 127.0.0.1 stand for many servers: per-host politeness only
        'scope = "any"\nretry-base = 0.2\nip-min-delay = "off"\n'
    )
    return cfg


def _pages(web: TestWeb) -> set[tuple[str, str]]:
    return {(host, page) for host, site in web.sites.items() for page in site.pages}


def _warc_responses(out: Path) -> list[str]:
    urls = []
    for path in (out / "warc").glob("*.warc.gz"):
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh, check_digests=True):
                uri = rec.rec_headers.get_header("WARC-Target-URI")
                if rec.rec_type == "response" and not uri.endswith("/robots.txt"):
                    urls.append(uri)  # (each robots.txt answer is archived too)
    return urls


def _each_site_in_one_process(out: Path, web: TestWeb) -> None:
    """Both processes made requests, and each site's requests all came from one of them."""
    logs = sorted((out / "log").glob("requests*.jsonl"))
    assert [p.name for p in logs] == ["requests.jsonl", "requests@1.jsonl"]
    sites = [{r["key"] for r in read_jsonl(p)} for p in logs]
    assert sites[0] and sites[1] and not sites[0] & sites[1]
    assert sites[0] | sites[1] <= set(web.hosts)


async def test_two_processes_polite_complete_once(tmp_path: Path) -> None:
    async with TestWeb(n_hosts=8, pages_per_host=10, seed=7, plain=True) as web:
        out = tmp_path / "out"
        proc = await _start(_config(tmp_path, web), out)
        _, err = await asyncio.wait_for(proc.communicate(), 180)
        assert proc.returncode == 0, err.decode()
    summary = json.loads((out / "summary.json").read_text())
    _each_site_in_one_process(out, web)
    assert summary["counters"]["links_from_other_processes"] > 0  # links crossed over
    seen = collections.Counter((e.host, e.path) for e in web.access_log)
    assert {k for k in seen if k[1] != "/robots.txt"} == _pages(web)  # every page
    assert max(seen.values()) == 1  # and each once
    assert politeness_violations(web.access_log, DELAY, tolerance_s=LOOP_LAG_S) == []
    # the archive holds each page once, in records a standard tool reads and checks
    stored = sorted(_warc_responses(out))
    assert len(stored) == len(set(stored)) == summary["stored"] == len(_pages(web))
    rows = list(iter_log_records(out, "pages"))  # pages.jsonl and pages@1.jsonl, by time
    assert sorted(r["url"] for r in rows) == stored
    assert all(r["title"] for r in rows)


async def test_two_processes_resume_after_kill_minus_nine(tmp_path: Path) -> None:
    async with TestWeb(n_hosts=6, pages_per_host=12, seed=8, plain=True) as web:
        cfg = _config(tmp_path, web)
        out = tmp_path / "out"
        kills = 0
        for wait_s in (0.9, 1.3, 1.1):
            proc = await _start(cfg, out)
            await asyncio.sleep(wait_s)
            if proc.returncode is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            await asyncio.wait_for(proc.wait(), 30)
        proc = await _start(cfg, out)
        _, err = await asyncio.wait_for(proc.communicate(), 180)
        assert proc.returncode == 0, err.decode()
    assert kills >= 2
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped_by"] == "done" and summary["queued_left"] == 0
    fetched = collections.Counter((e.host, e.path) for e in web.access_log)
    assert {k for k in fetched if k[1] != "/robots.txt"} == _pages(web)  # nothing lost
    # a page fetched twice was in flight at a kill: at most one per site per kill
    extra = sum(n - 1 for (h, p), n in fetched.items() if n > 1 and p != "/robots.txt")
    assert extra <= kills * len(web.hosts)
    assert not list((out / "warc").glob("*.open"))
    assert set(_warc_responses(out)) >= {web.url(h, p) for h, p in _pages(web)}
    assert politeness_violations(web.access_log, DELAY, tolerance_s=LOOP_LAG_S) == []


async def test_two_processes_keep_the_one_gate_and_the_never_crawl_list(tmp_path: Path) -> None:
    """The mixed test web (robots.txt variants, nofollow in meta, X-Robots-Tag and rel, a
    PDF and a JPEG, redirects past the hop cap) with pages read in the worker: none of the
    paths a correct crawler never asks for is asked for, and a host on the never-crawl list,
    added while the crawl runs, gets no request after the next check of the file."""
    from politecrawl.demo.site import NEVER_FETCH

    async with TestWeb(n_hosts=8, pages_per_host=6, seed=9) as web:
        never = tmp_path / "never.txt"
        never.write_text("h5.test\n")
        cfg = _config(tmp_path, web)
        out = tmp_path / "out"
        proc = await _start(cfg, out, "--exclude-file", str(never), "--exclude-check", "0.2")
        for _ in range(200):  # h6 is listed once its crawl is under way (bounded: 20 s)
            if sum(e.host == "h6.test" for e in web.access_log) >= 2:
                break
            await asyncio.sleep(0.1)
        never.write_text("h5.test\nh6.test\n")
        added_at = time.time()
        _, err = await asyncio.wait_for(proc.communicate(), 180)
        assert proc.returncode == 3, err.decode()  # h4 lost: its robots.txt answers 500
    lost = json.loads((out / "summary.json").read_text())["sites_lost"]
    assert [x["site"] for x in lost] == ["h4.test"]
    _each_site_in_one_process(out, web)
    asked = [(e.host, e.path, e.start) for e in web.access_log]
    assert not [a for a in asked if a[1] in NEVER_FETCH]
    assert not [a for a in asked if a[0] == "h5.test"]  # listed from the start: never asked
    # a second for the check (every 0.2 s) and a request already under way; the crawl went
    # on past that, and h6 was being crawled before it was listed
    assert not [a for a in asked if a[0] == "h6.test" and a[2] > added_at + 1.0]
    assert any(a[2] > added_at + 1.0 for a in asked)
    assert any(a[0] == "h6.test" for a in asked)
    assert politeness_violations(web.access_log, DELAY, tolerance_s=LOOP_LAG_S) == []


async def test_a_crawl_resumes_only_with_the_processes_it_was_made_with(tmp_path: Path) -> None:
    """Sites are spread over the processes by hash: resuming with another count would give a
    site to two processes, so the command refuses in one line (exit 2), either way round."""
    async with TestWeb(n_hosts=4, pages_per_host=3, seed=10, plain=True) as web:
        cfg = _config(tmp_path, web)
        for made, resumed in (("2", "1"), ("1", "2")):
            out = tmp_path / f"out-{made}"
            first = await _start(cfg, out, "--processes", made, "--max-pages", "2")
            _, err = await asyncio.wait_for(first.communicate(), 120)
            assert first.returncode == 0, err.decode()
            again = await _start(cfg, out, "--processes", resumed)
            _, err = await asyncio.wait_for(again.communicate(), 120)
            lines = err.decode().strip().splitlines()
            assert again.returncode == 2 and len(lines) == 1, lines
            assert f"--processes {made}" in lines[0]


async def test_sigterm_to_the_command_and_ctrl_c_to_its_group_stop_every_process(
    tmp_path: Path,
) -> None:
    """SIGTERM to the command is passed on to its crawler processes, which save and end (exit
    130, ``stopped_by`` interrupted, resumable); Ctrl-C twice (the terminal signals the
    whole process group) ends it at once, also with 130."""
    async with TestWeb(n_hosts=6, pages_per_host=40, seed=11, plain=True) as web:
        cfg = _config(tmp_path, web)
        for how, out in (("term", tmp_path / "out-term"), ("int2", tmp_path / "out-int")):
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "politecrawl", "crawl", "--config", str(cfg),
                "--out", str(out), "--no-progress", "--processes", "2",
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )  # fmt: skip
            for _ in range(200):  # under way (bounded: 20 s)
                if len(web.access_log) > 20:
                    break
                await asyncio.sleep(0.1)
            if how == "term":
                proc.send_signal(signal.SIGTERM)
            else:
                os.killpg(proc.pid, signal.SIGINT)
                await asyncio.sleep(0.05)
                os.killpg(proc.pid, signal.SIGINT)
            _, err = await asyncio.wait_for(proc.communicate(), 60)
            assert proc.returncode == 130, (how, err.decode())
            if how == "term":
                summary = json.loads((out / "summary.json").read_text())
                assert summary["stopped_by"] == "interrupted" and summary["queued_left"] > 0
            web.access_log.clear()


def _limit_files(soft: int, hard: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def test_many_processes_under_a_low_descriptor_limit(tmp_path: Path) -> None:
    """Every two processes share a channel: 24 need 552 descriptors in the supervisor, over
    a soft limit of 200 (the command raises it, as far as the hard limit lets it); 64 need
    more than a hard limit of 300 allows, said in one line before anything is written."""
    async with TestWeb(n_hosts=6, pages_per_host=3, seed=11, plain=True) as web:
        cfg = _config(tmp_path, web)
        out = tmp_path / "out"
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "politecrawl", "crawl", "--config", str(cfg),
            "--out", str(out), "--no-progress", "--processes", "24",
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
            preexec_fn=lambda: _limit_files(200, 4096),
        )  # fmt: skip
        _, err = await asyncio.wait_for(proc.communicate(), 240)
        assert proc.returncode == 0, err.decode()[-3000:]
        seen = collections.Counter((e.host, e.path) for e in web.access_log)
        assert {k for k in seen if k[1] != "/robots.txt"} == _pages(web)
        assert max(seen.values()) == 1
        refused = tmp_path / "refused"
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "politecrawl", "crawl", "--config", str(cfg),
            "--out", str(refused), "--no-progress", "--processes", "64",
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
            preexec_fn=lambda: _limit_files(300, 300),
        )  # fmt: skip
        _, err = await asyncio.wait_for(proc.communicate(), 60)
        lines = err.decode().strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, lines
        assert "--processes 64 needs about 4,544 open files" in lines[0]
        assert not refused.exists()
