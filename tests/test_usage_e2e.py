"""The real command against a web whose owners state what their pages may be used for
(tests/usageweb.py: each form on its own host): with ``--purpose ai-train`` no refused page is
kept (pages.jsonl, the WARC read with warcio, items.jsonl) and every other page is; with
``--purpose search`` every page is kept."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from usageweb import SITES, SUFFIX, UsageWeb, url
from warcio.archiveiterator import ArchiveIterator

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

UA = "testbot/1.0 (+http://bot.example/info)"
HANDLER = '''
def headings(page):
    for node in page.css("h1"):
        yield {"heading": node.text()}
'''


DELAY_S = 0.2  # --min-delay of the ai-train crawl: tdmrep.json waits its turn like a page
LOOP_LAG_S = 0.05  # the test web shares the test's event loop: its clock may read late


async def crawl(web: UsageWeb, out: Path, purpose: str, delay_s: float = 0.02) -> str:
    """The real command, with a page handler (items.jsonl); returns its stderr."""
    seeds = out.parent / f"{out.name}-seeds.txt"
    seeds.write_text("\n".join(web.seeds()) + "\n")
    (out.parent / "usagehandlers.py").write_text(HANDLER)
    path = f"{out.parent}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    env = {**os.environ, "PYTHONPATH": path}
    args = [
        "-m", "politecrawl", "crawl", "--seeds", str(seeds), "--user-agent", UA,
        "--out", str(out), "--resolve", web.resolve_arg(), "--allow-private-addresses",
        "--scope", "any", "--min-delay", str(delay_s), "--jitter", "0", "--delay-factor", "0",
        "--ip-min-delay", "off", "--no-progress", "--purpose", purpose,
        "--handler", "usagehandlers:headings",
    ]  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        sys.executable, *args, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    _, err = await asyncio.wait_for(proc.communicate(), 180)
    assert proc.returncode == 0, err.decode()[-3000:]
    return err.decode()


def run(*args: str) -> str:
    """A politecrawl command's standard output (it must succeed)."""
    p = subprocess.run([sys.executable, "-m", "politecrawl", *args], capture_output=True,
                       text=True, timeout=60)  # fmt: skip
    assert p.returncode == 0, p.stderr
    return p.stdout


def reachable(port: int, *, refused_sites: bool) -> dict[str, tuple[str, ...]]:
    """Every page the crawl reaches by links from the home pages, and who refuses ai-train
    on it; ``refused_sites``: leave out the sites refusing ai-train as a whole."""
    out: dict[str, tuple[str, ...]] = {}
    for host, site in SITES.items():
        if refused_sites and site.site_refused:
            continue
        todo = ["/"]
        while todo:
            path = todo.pop()
            if url(host, path, port) in out:
                continue
            page = site.pages[path]
            out[url(host, path, port)] = page.refused_by
            todo += page.links
    return out


def warc_records(out: Path) -> list[tuple[str, str, str]]:
    """(type, target URI, payload) of every record of a page, read with warcio (robots.txt,
    archived as Heritrix does, is not a page: a statement about use does not govern it)."""
    found = []
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                uri = rec.rec_headers.get_header("WARC-Target-URI") or ""
                if uri.endswith("/robots.txt"):
                    continue
                found.append((rec.rec_type, uri, rec.content_stream().read().decode()))
    return found


async def test_ai_train_keeps_no_page_whose_owner_refuses_it(tmp_path: Path) -> None:
    async with UsageWeb() as web:
        err = await crawl(web, tmp_path / "out", "ai-train", DELAY_S)
    out = tmp_path / "out"
    expect = reachable(web.port, refused_sites=True)
    kept = {u for u, by in expect.items() if not by}
    refused = {u: by for u, by in expect.items() if by}
    assert len(refused) == 7 and len(kept) >= 12  # every form is in play

    rows = read_jsonl(out / "pages.jsonl")
    assert {r["url"] for r in rows if r["kept"] == "stored"} == kept
    reserved = {r["url"]: tuple(r["reserved_by"]) for r in rows if r["kept"] == "reserved"}
    assert reserved == refused
    for r in rows:
        if r["kept"] == "reserved":  # why, and nothing of the page
            assert "title" not in r and r["usage"]["allowed"] is False
        else:
            assert r["usage"]["purpose"] == "ai-train" and r["usage"]["allowed"] is True
    # a refused page's links are followed: /after is linked from refused pages only
    assert url("cu-header", "/after", web.port) in kept

    records = warc_records(out)
    responses = {uri for kind, uri, _ in records if kind == "response"}
    assert responses == kept
    meta = {uri: body for kind, uri, body in records if kind == "metadata"}
    assert set(meta) == kept
    b = meta[url("cu-header", "/b", web.port)]
    assert "purpose: ai-train" in b and '"header:content-usage"' in b
    assert all(u not in body for u in refused for _, _, body in records)

    items = read_jsonl(out / "items.jsonl")
    assert {i["url"] for i in items} == kept
    assert all(i["usage"]["purpose"] == "ai-train" for i in items)

    # the whole-site refusals: nothing but robots.txt and tdmrep.json was asked of them
    for host, site in SITES.items():
        asked = {p for h, p in web.log if h == host}
        if site.site_refused:
            assert asked == {"/robots.txt", "/.well-known/tdmrep.json"}, (host, asked)
        else:
            assert "/.well-known/tdmrep.json" in asked  # once per origin
    assert sum(p == "/.well-known/tdmrep.json" for _, p in web.log) == len(SITES)
    # ... under the site's own delay, like robots.txt and the pages: no two requests to a
    # host closer than --min-delay, tdmrep.json included
    for host in SITES:
        starts = [t for (h, _), t in zip(web.log, web.times, strict=True) if h == host]
        gaps = [b - a for a, b in itertools.pairwise(starts)]
        assert min(gaps) >= DELAY_S - LOOP_LAG_S, (host, gaps)

    log = read_jsonl(out / "log" / "requests.jsonl", headers=True)
    assert log[0]["record"] == "header" and log[0]["purpose"] == "ai-train"
    outcomes = {r["url"]: r["outcome"] for r in log[1:]}
    for u, by in refused.items():
        assert outcomes[u] == "reserved:" + "+".join(by)
    config = json.loads((out / "config.json").read_text())
    assert config["purpose"] == "ai-train"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["reserved"] == len(refused)
    assert summary["reserved_sites"] == 2  # the two home pages never fetched
    # the malformed robots.txt line was ignored (/public kept) and said so
    assert f"cu-robots.{SUFFIX}" in err and "Train-AI=n" in err and "ignored" in err
    # a complaint is answered with `politecrawl log`: the purpose and why a page was not kept
    answer = run("log", str(out), "--host", f"cu-header.{SUFFIX}")
    assert "declared purpose: ai-train" in answer
    assert "reserved:header:content-usage" in answer and "not kept" in answer
    stats = run("log-stats", str(out))
    assert "not kept, the owner refusing the purpose (ai-train): 7" in stats


async def test_search_keeps_every_page(tmp_path: Path) -> None:
    async with UsageWeb() as web:
        await crawl(web, tmp_path / "out", "search")
    out = tmp_path / "out"
    every = set(reachable(web.port, refused_sites=False))
    rows = read_jsonl(out / "pages.jsonl")
    assert {r["url"] for r in rows if r["kept"] == "stored"} == every
    assert all(r["kept"] == "stored" and r["usage"]["allowed"] for r in rows)
    responses = {uri for kind, uri, _ in warc_records(out) if kind == "response"}
    assert responses == every
    assert {i["url"] for i in read_jsonl(out / "items.jsonl")} == every
    # tdmrep.json speaks of mining only: a search crawl does not ask for it
    assert not any(p == "/.well-known/tdmrep.json" for _, p in web.log)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["reserved"] == 0 and summary["reserved_sites"] == 0


def test_botpage_states_the_declared_purpose(tmp_path: Path) -> None:
    page = run("botpage", "--user-agent", UA, "--contact", "ops@bot.example",
               "--purpose", "ai-train")  # fmt: skip
    assert "What the pages are used for: ai-train" in page and "training AI models" in page
    assert "Content-Usage" in page and "tdmrep.json" in page and "noai" in page
    toml = tmp_path / "crawl.toml"
    toml.write_text('purpose = "ai-input"\n')
    page = run("botpage", "--user-agent", UA, "--contact", "ops@bot.example",
               "--config", str(toml), "--purpose", "We index recipes.")  # fmt: skip
    assert "What the pages are used for: ai-input" in page and "We index recipes." in page
    assert "What the pages are used for: search" in run(
        "botpage", "--user-agent", UA, "--contact", "ops@bot.example")
