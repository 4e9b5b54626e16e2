"""Near-duplicates are different pages: stored in full, links followed, never merged by rules.

The real command crawls a small site of reports that differ only in their numbers (each also
links to a page of its own) and articles reachable under a tracking parameter with the very
same bytes. Judged by the server's log and the output files: every report and every page a
report links to is fetched and stored in full (a response record of its own), the reports
are marked as near-duplicates in ``pages.jsonl``, and the rule learned drops only the
parameter that never changed a byte.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from aiohttp import web
from conftest import UA
from warcio.archiveiterator import ArchiveIterator

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

_PROSE = " ".join(
    f"Section {w}: the quarterly figures follow the usual layout." for w in "abcdefgh"
)
_N = 12


def _page(title: str, body: str, links: list[str]) -> web.Response:
    anchors = "".join(f'<a href="{h}">{h}</a> ' for h in links)
    html = f"<html><head><title>{title}</title></head><body><p>{body}</p>{anchors}</body></html>"
    return web.Response(text=html, content_type="text/html")


async def _serve(log: list[str]) -> web.AppRunner:
    async def handle(req: web.Request) -> web.StreamResponse:
        log.append(req.path_qs)
        if req.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if req.path == "/":
            links = [f"/report?id={i}" for i in range(_N)]
            links += [f"/article/{i}?utm_source=feed{i}" for i in range(6)]
            links += [f"/article/{i}" for i in range(6)]
            return _page("Index", "All reports.", links)
        if req.path == "/report":
            i = int(req.query["id"])
            return _page("Report", f"Sales were {1000 + 37 * i} units. {_PROSE}", [f"/only/{i}"])
        if req.path.startswith("/article/"):
            return _page("Article", f"An article. {_PROSE}", [])
        if req.path.startswith("/only/"):
            return _page("Only", f"Reached from one report only: {req.path}. {_PROSE}", [])
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner


async def test_near_duplicates_kept_whole_and_never_merged(tmp_path: Path) -> None:
    log: list[str] = []
    runner = await _serve(log)
    port = runner.addresses[0][1]
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"http://reports.test:{port}/\n")
    out = tmp_path / "out"
    cmd = [
        sys.executable, "-m", "politecrawl", "crawl", "--seeds", str(seeds),
        "--out", str(out), "--user-agent", UA, "--resolve", f"reports.test:{port}:127.0.0.1",
        "--allow-private-addresses", "--min-delay", "0", "--delay-factor", "0",
        "--jitter", "0", "--no-progress", "--max-time", "60",
    ]  # fmt: skip
    try:
        proc = await asyncio.create_subprocess_exec(*cmd, stdout=subprocess.PIPE)
        stdout, _ = await asyncio.wait_for(proc.communicate(), 120)
    finally:
        await runner.cleanup()
    assert proc.returncode == 0, stdout.decode()
    # the server saw every report and every page only a report links to
    assert {f"/report?id={i}" for i in range(_N)} <= set(log), sorted(log)
    assert {f"/only/{i}" for i in range(_N)} <= set(log), sorted(log)
    pages = read_jsonl(out / "pages.jsonl")
    reports = [p for p in pages if "/report?" in p["url"]]
    assert len(reports) == _N and not any(p["duplicate_of"] for p in reports)
    assert sum(bool(p["near_duplicate_of"]) for p in reports) == _N - 1
    responses = set()
    for path in (out / "warc").glob("*.warc.gz"):
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "response":
                    responses.add(rec.rec_headers.get_header("WARC-Target-URI"))
    assert all(p["url"] in responses for p in reports)  # stored in full, not as revisits
    rules = read_jsonl(out / "log" / "rules.jsonl")
    assert all(r["param"] != "id" for r in rules), rules
    # byte-identical pairs still teach: the tracking parameter is dropped
    assert any(r["param"] == "utm_source" for r in rules), rules
