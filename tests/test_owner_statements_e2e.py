"""What a page's owner says, through the real command: ``noarchive`` keeps no copy anywhere
(not the WARC, not the text, not a handler's items, not a user's sink) and is not counted
as stored; a statement the crawler cannot read is on record with the page and said once;
a bot name robots.txt reads shorter is said before the crawl starts."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web
from loopbackweb import serving
from warcio.archiveiterator import ArchiveIterator

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

UA = "ownbot/1.0 (+http://bot.example/info)"

_LINKS = ["/na-meta", "/na-header", "/na-ours", "/plain", "/bad-usage", "/bad-tdm"]


def _html(title: str, body: str = "", head: str = "") -> str:
    page = f"<html><head>{head}<title>{title}</title></head>"
    return page + f"<body><p>{title} text.</p>{body}</body></html>"


def _site() -> tuple[Callable[[web.Request], Awaitable[web.Response]], list[str]]:
    asked: list[str] = []
    pages: dict[str, tuple[str, dict[str, str]]] = {
        "/": (_html("Home", "".join(f'<a href="{u}">{u}</a> ' for u in _LINKS)), {}),
        "/na-meta": (
            _html("Meta noarchive", '<a href="/after-na">on</a>',
                  '<meta name="robots" content="noarchive">'),
            {},
        ),
        "/na-header": (_html("Header noarchive"), {"X-Robots-Tag": "noarchive"}),
        "/na-ours": (_html("Our noarchive"), {"X-Robots-Tag": "ownbot: noarchive"}),
        "/plain": (_html("Plain"), {"X-Robots-Tag": "otherbot: noarchive"}),
        "/after-na": (_html("After"), {}),
        "/bad-usage": (_html("Bad usage"), {"Content-Usage": "train-ai=n,"}),
        "/bad-tdm": (_html("Bad tdm"), {"tdm-reservation": "yes please"}),
    }  # fmt: skip

    async def handle(request: web.Request) -> web.Response:
        asked.append(request.path)
        if request.path not in pages:
            return web.Response(status=404)
        body, headers = pages[request.path]
        return web.Response(text=body, content_type="text/html", headers=headers)

    return handle, asked


async def _crawl(tmp_path: Path, *extra: str, ua: str = UA) -> tuple[int, str, str, list[str]]:
    handle, asked = _site()
    async with serving(handle) as port:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "politecrawl", "crawl", f"http://own.test:{port}/",
            "--resolve", f"own.test:{port}:127.0.0.1", "--allow-private-addresses",
            "--user-agent", ua, "--out", str(tmp_path / "out"), "--min-delay", "0.02",
            "--ip-min-delay", "0", "--jitter", "0", "--no-progress", *extra,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=tmp_path,
        )  # fmt: skip
        said, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, said.decode(), err.decode(), asked


def _path(url: str) -> str:
    return "/" + url.split("/", 3)[3]


async def test_noarchive_pages_leave_no_copy_and_are_not_counted_stored(tmp_path: Path) -> None:
    (tmp_path / "grab.py").write_text(
        "def grab(page):\n    yield {'title': page.title, 'head': page.text[:40]}\n"
    )
    code, said, err, asked = await _crawl(
        tmp_path, "--handler", "./grab.py:grab", "--extract", "text"
    )
    assert code == 0, said + err
    out = tmp_path / "out"
    # read, and their links followed: /after-na is linked from a noarchive page only
    assert {"/na-meta", "/na-header", "/na-ours", "/after-na"} <= set(asked)
    copies = {"/", "/plain", "/after-na", "/bad-usage", "/bad-tdm"}
    items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    assert {_path(i["url"]) for i in items} == copies
    content = [json.loads(line) for line in (out / "content.jsonl").read_text().splitlines()]
    assert {_path(c["url"]) for c in content} == copies
    archived = set()
    for warc in (out / "warc").glob("*.warc.gz"):
        with warc.open("rb") as f:
            for rec in ArchiveIterator(f):
                uri = rec.rec_headers.get_header("WARC-Target-URI") or ""
                if rec.rec_type == "response" and "robots.txt" not in uri:
                    archived.add(_path(uri))
    assert archived == copies
    outcomes = {_path(r["url"]): r["outcome"] for r in read_jsonl(out / "log" / "requests.jsonl")
                if "url" in r and not r["url"].endswith("robots.txt")}  # fmt: skip
    assert {p for p, o in outcomes.items() if o == "noarchive"} == {
        "/na-meta", "/na-header", "/na-ours"
    }  # fmt: skip
    assert {p for p, o in outcomes.items() if o == "stored"} == copies
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stored"] == len(copies)
    assert summary["counters"]["noarchive"] == 3
    assert "no copy kept         3 (noarchive: as the pages asked)" in said
    kept = {_path(r["url"]): r["kept"] for r in read_jsonl(out / "pages.jsonl")}
    assert kept["/na-ours"] == "noarchive" and kept["/plain"] == "stored"


async def test_unreadable_statements_are_on_record_with_the_page(tmp_path: Path) -> None:
    code, said, err, _ = await _crawl(tmp_path, "--purpose", "ai-train")
    assert code == 0, said + err
    out = tmp_path / "out"
    rows = {_path(r["url"]): r for r in read_jsonl(out / "pages.jsonl")}
    assert rows["/bad-usage"]["usage"]["unreadable"] == [
        {"source": "header:content-usage", "text": "train-ai=n,"}
    ]
    assert rows["/bad-tdm"]["usage"]["unreadable"] == [
        {"source": "header:tdm-reservation", "text": "yes please"}
    ]
    assert "unreadable" not in rows["/plain"]["usage"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counters"]["usage_unreadable"] == 2
    assert err.count("was not understood") == 2, err  # once a site and kind


async def test_a_bot_name_robots_txt_reads_shorter_is_said(tmp_path: Path) -> None:
    code, said, err, asked = await _crawl(
        tmp_path, "--max-pages", "2", ua="ownbot9/1.0 (+http://bot.example/info)"
    )
    assert code == 0, said + err
    assert "robots.txt reads the bot's name 'ownbot9' as 'ownbot'" in err
    assert err.count("robots.txt reads the bot's name") == 1
    assert asked  # said, not refused: the crawl ran
