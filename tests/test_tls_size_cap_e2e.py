"""An https page cut at --max-size: stored truncated, and nothing but the crawl's own lines on
stderr (through the real command, against a local CA).

From an outside probe: a 3 MB page over TLS, ``--max-size 200000``, printed asyncio's
"Future exception was never retrieved ... ClientConnectionError('Connection lost: [SSL:
APPLICATION_DATA_AFTER_CLOSE_NOTIFY] ...')" with a full traceback, 3 times out of 3: the
body reader had asked the connection for its ``closed`` future (aiohttp makes it only when
asked), and the connection dropped at the cap then lost its TLS stream with an error no one
retrieved.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from aiohttp import web
from conftest import UA
from loopbackweb import serving
from tlsweb import LocalCA

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

BIG = ("<!doctype html><html><head><title>Big</title></head><body><p>"
       + ("x" * 100 + " ") * 30000 + "</p></body></html>").encode()  # fmt: skip


async def test_an_https_page_cut_at_max_size_leaves_no_traceback(tmp_path: Path) -> None:
    assert len(BIG) > 3_000_000
    ca = LocalCA(["big.test"])

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        return web.Response(body=BIG, content_type="text/html", charset="utf-8")

    out = tmp_path / "out"
    async with serving(handle, ca.server_context()) as port:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "politecrawl", "crawl", f"https://127.0.0.1:{port}/big",
            "--user-agent", UA, "--out", str(out), "--allow-private-addresses",
            "--min-delay", "0.1", "--jitter", "0", "--max-size", "200000", "--max-time", "20",
            "--no-progress",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=ca.env(tmp_path / "ca.pem"),
        )  # fmt: skip
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 60)
    err = stderr.decode()
    assert proc.returncode == 0, (stdout.decode(), err)
    assert "Traceback" not in err, err
    assert "never retrieved" not in err, err
    rows = [r for r in read_jsonl(out / "log" / "requests.jsonl") if r.get("record") != "header"]
    page = [r for r in rows if r["url"].endswith("/big")]
    assert len(page) == 1, rows
    assert page[0]["outcome"] == "stored" and page[0]["truncated"] is True, page
    assert page[0]["bytes"] == 200_000, page
