"""A crawl folder that cannot be resumed as it stands is refused, not crawled afresh.

Through the real command against the loopback test web, judged by what the server logged and
what the folder holds: a folder holding an earlier crawl's output whose state is gone (or
empty) is refused with one line and exit 2, nothing fetched and ``summary.json`` untouched;
a ``--processes 2`` crawl whose ``partitions.json`` is gone is not resumed with one process;
and a crawl killed with ``kill -9`` and resumed counts what its logs hold, but for the
requests in flight at each kill (docs/reliability.md, "Counts after a crash").
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from conftest import UA

from politecrawl.demo.web import TestWeb
from politecrawl.storage.logs import iter_log_records

pytestmark = pytest.mark.e2e


async def _start(web: TestWeb, out: Path, *extra: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "politecrawl", "crawl", *web.seed_urls(), "--user-agent", UA,
        "--out", str(out), "--resolve", web.resolve_arg(), "--allow-private-addresses",
        "--scope", "any", "--min-delay", "0.05", "--ip-min-delay", "off", "--retry-base", "0.2",
        "--no-progress",
        *extra,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def _crawl(web: TestWeb, out: Path, *extra: str) -> tuple[int, str, str]:
    proc = await _start(web, out, *extra)
    out_b, err_b = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out_b.decode(), err_b.decode()


@pytest.mark.parametrize("how", ["deleted", "emptied"])
async def test_a_folder_whose_state_is_gone_is_refused_not_crawled_afresh(
    tmp_path: Path, how: str
) -> None:
    out = tmp_path / "out"
    async with TestWeb(n_hosts=4, pages_per_host=8, seed=5, plain=True) as web:
        code, _, err = await _crawl(web, out)
        assert code == 0, err
        summary = (out / "summary.json").read_bytes()
        assert json.loads(summary)["pages_fetched"] > 20
        asked = len(web.access_log)
        for name in ("state.sqlite", "state.sqlite-wal", "state.sqlite-shm"):
            (out / name).unlink(missing_ok=True)
        if how == "emptied":
            (out / "state.sqlite").write_bytes(b"")
        code, stdout, err = await _crawl(web, out)
        assert code == 2, (stdout, err)
        (line,) = err.strip().splitlines()
        why = "missing" if how == "deleted" else "empty"
        assert f"state.sqlite is {why}" in line and "summary.json" in line, line
        assert "new --out" in line, line
        assert stdout == ""  # refused before the pace line
        assert len(web.access_log) == asked  # nothing fetched again
    assert (out / "summary.json").read_bytes() == summary  # the earlier figures kept


async def test_a_two_process_crawl_without_its_partitions_json_keeps_its_process_count(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    async with TestWeb(n_hosts=6, pages_per_host=30, seed=5, plain=True) as web:
        code, _, err = await _crawl(web, out, "--processes", "2", "--max-pages", "40")
        assert code in (0, 3), err
        assert (out / "state@1.sqlite").exists()
        (out / "partitions.json").unlink()
        asked = len(web.access_log)
        code, stdout, err = await _crawl(web, out)  # one process: half the sites' state unseen
        assert code == 2, (stdout, err)
        (line,) = err.strip().splitlines()
        assert "--processes 2" in line and "partitions.json missing" in line, line
        assert len(web.access_log) == asked
        code, _, err = await _crawl(web, out, "--processes", "2")  # as it was made: resumed
        assert code in (0, 3), err
        assert json.loads((out / "partitions.json").read_text()) == {"processes": 2}
        summary = json.loads((out / "summary.json").read_text())
        assert summary["stopped_by"] == "done" and summary["queued_left"] == 0
        fetched = [e.path for e in web.access_log if e.status == 200 and e.path != "/robots.txt"]
        assert len(fetched) > 60  # the whole web, not only the first run's 40 pages


@pytest.mark.parametrize("processes", ["1", "2"])
async def test_the_counts_after_kill_9_and_a_resume_are_the_logs(
    tmp_path: Path, processes: str
) -> None:
    """Killed twice while it crawls, then resumed to the end: ``summary.json``'s requests
    and pages stored are those of the request log, give or take one per URL in flight at a
    kill (each asked again by the resume, logged ``refetch``). They were short by every
    request of the second before each kill: 71 of 1,833 requests, 210 with two processes."""
    out = tmp_path / "out"
    async with TestWeb(n_hosts=30, pages_per_host=60, seed=5, plain=True) as web:
        for seen in (300, 800):
            proc = await _start(web, out, "--processes", processes)
            for _ in range(1200):  # until the server has seen that many requests (bounded)
                await asyncio.sleep(0.01)
                if len(web.access_log) >= seen or proc.returncode is not None:
                    break
            proc.kill()
            await proc.wait()
            assert len(web.access_log) < 1800  # killed mid-crawl, not after it
        code, _, err = await _crawl(web, out, "--processes", processes)
        assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped_by"] == "done" and summary["queued_left"] == 0
    logged = list(iter_log_records(out / "log", "requests"))
    refetched = sum(1 for r in logged if r.get("refetch"))
    stored = sum(1 for r in logged if r["outcome"] == "stored")
    assert len({r["url"] for r in logged if r["outcome"] == "stored"}) == 1800  # none lost
    assert abs(len(logged) - summary["requests"]) <= refetched, (len(logged), refetched)
    assert abs(stored - summary["stored"]) <= refetched, (stored, refetched)
