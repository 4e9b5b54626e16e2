"""``--recrawl`` added when resuming a finished crawl: its pages come back for revisits, due
per this run's revisit window, as if the crawl had been made with it (through the real
command, against a local server that answers conditional GETs).

From an outside probe: a crawl of one page (with an ETag) run to its end, then the same command
with ``--recrawl --revisit-min 1 --revisit-max 2`` on the same ``--out`` made no request and
printed "crawl finished (done) in 0.0 s" with the first run's totals; the README says a
forgotten flag can be given on a rerun and the crawl continues with it.
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

ETAG = '"v1"'
PAGE = "<html><head><title>Stable</title></head><body>" + "<p>The same text. </p>" * 20


async def _crawl(url: str, out: Path, *extra: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "politecrawl", "crawl", url, "--user-agent", UA,
        "--out", str(out), "--allow-private-addresses", "--min-delay", "0.2", "--jitter", "0",
        "--delay-factor", "0", "--no-progress", *extra,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    stdout, stderr = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode is not None
    return proc.returncode, stdout.decode(), stderr.decode()


async def test_recrawl_added_to_a_finished_crawl_revisits_its_pages(tmp_path: Path) -> None:
    asked: list[tuple[str, str | None]] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        asked.append((request.path, request.headers.get("If-None-Match")))
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if request.headers.get("If-None-Match") == ETAG:
            return web.Response(status=304, headers={"ETag": ETAG})
        return web.Response(text=PAGE, content_type="text/html", headers={"ETag": ETAG})

    out = tmp_path / "out"
    async with serving(handle) as port:
        url = f"http://127.0.0.1:{port}/etag"
        code, _, err = await _crawl(url, out, "--max-time", "20")
        assert code == 0, err
        assert asked == [("/robots.txt", None), ("/etag", None)], asked
        asked.clear()
        code, stdout, err = await _crawl(
            url, out, "--max-time", "6", "--recrawl", "--revisit-min", "1", "--revisit-max", "2"
        )
    assert code == 0, (stdout, err)
    assert "Traceback" not in err, err
    # the page came back, as a conditional GET, within the window (and again, until --max-time)
    revisits = [inm for path, inm in asked if path == "/etag"]
    assert revisits and all(inm == ETAG for inm in revisits), asked
    assert "nothing left to do" not in stdout and "finished (done)" not in stdout, stdout
    said = [line for line in stdout.splitlines() if "--recrawl" in line]
    assert len(said) == 1 and "1 page" in said[0] and "revisit" in said[0], stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped_by"] == "max_time", summary
    rows = [r for r in read_jsonl(out / "log" / "requests.jsonl") if r.get("record") != "header"]
    pages = [r for r in rows if r["url"] == url]
    assert pages[0]["outcome"] == "stored", pages
    assert [r["outcome"] for r in pages[1:]] == ["not_modified"] * len(revisits), pages
    assert all(r.get("revisit") for r in pages[1:]), pages
