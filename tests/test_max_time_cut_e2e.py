"""--max-time cutting the only request of a reachable, slow site: a stop by the time limit,
said as what it is, not a site that could not be reached (through the real command).

From an outside probe: robots.txt answered at once, the page sleeping 30 s, ``--max-time 4``:
the crawl exited 1 with "nothing could be fetched: 1 cut", and the request log's line of the
cut request said ``"attempt": 0`` where every other line carries the attempt it was.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from aiohttp import web
from conftest import UA
from loopbackweb import serving

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e


async def test_a_request_cut_at_max_time_is_a_time_stop_not_a_site_unreached(
    tmp_path: Path,
) -> None:
    asked: list[str] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        asked.append(request.path)
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        await asyncio.sleep(30)  # the page: still running when --max-time comes
        return web.Response(text="<p>late</p>", content_type="text/html")

    out = tmp_path / "out"
    async with serving(handle) as port:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "politecrawl", "crawl", f"http://127.0.0.1:{port}/slow",
            "--user-agent", UA, "--out", str(out), "--allow-private-addresses",
            "--min-delay", "0.1", "--jitter", "0", "--delay-factor", "0", "--no-progress",
            "--max-time", "4",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 60)
    err = stderr.decode()
    assert asked == ["/robots.txt", "/slow"], asked
    assert "Traceback" not in err, err
    # the README's exit code for a stop by --max-time, and no claim the site was unreachable
    assert proc.returncode == 0, (stdout.decode(), err)
    assert "nothing could be fetched" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "--max-time" in lines[0] and "still running" in lines[0], err
    assert "resume" in lines[0], err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped_by"] == "max_time" and summary["queued_left"] == 1, summary
    # the cut line carries the attempt it was, as every other line does
    rows = [r for r in read_jsonl(out / "log" / "requests.jsonl") if r.get("record") != "header"]
    cut = [r for r in rows if r["url"].endswith("/slow")]
    assert [(r["outcome"], r["attempt"]) for r in cut] == [("cut", 1)], cut
