"""A crawl folder that cannot be resumed as it stands is refused, not crawled afresh.

Through the real command against the loopback test web, judged by what the server logged and
what the folder holds: a folder holding an earlier crawl's output whose state is gone (or
empty) is refused with one line and exit 2, nothing fetched and ``summary.json`` untouched;
a ``--processes 2`` crawl whose ``partitions.json`` is gone is not resumed with one process.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from conftest import UA

from politecrawl.demo.web import TestWeb

pytestmark = pytest.mark.e2e


async def _crawl(web: TestWeb, out: Path, *extra: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "politecrawl", "crawl", *web.seed_urls(), "--user-agent", UA,
        "--out", str(out), "--resolve", web.resolve_arg(), "--allow-private-addresses",
        "--scope", "any", "--min-delay", "0.05", "--ip-min-delay", "off", "--retry-base", "0.2",
        "--no-progress",
        *extra,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
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
