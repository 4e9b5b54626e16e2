"""What a crawl writes for its user: items, pages.jsonl, content.jsonl and the WACZ, and the
commands around them, checked through the real ``politecrawl`` command (a subprocess) against
a small site on 127.0.0.1 (``outputweb``), judged by the files it leaves and what the server
saw."""

from __future__ import annotations

import csv
import gzip
import json
import os
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from outputweb import output_site
from test_wacz import WACZ
from warcio.archiveiterator import ArchiveIterator

pytestmark = pytest.mark.e2e

UA = "outbot/1.0 (+http://bot.example/info)"
FAST = ["--min-delay", "0.05", "--jitter", "0", "--delay-factor", "0", "--ip-min-delay", "0",
        "--allow-private-addresses", "--no-progress"]  # fmt: skip
SURROGATE = b"caf\xe9".decode("utf-8", "surrogateescape")  # an undecodable byte, kept


def politecrawl(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "politecrawl", *args],
        capture_output=True, text=True, timeout=120, cwd=cwd,
    )  # fmt: skip


def crawl(site: Any, out: Path, *args: str, seeds: tuple[str, ...] = ("/",)) -> Any:
    urls = [site.url(s) if s.startswith("/") else s for s in seeds]
    done = politecrawl("crawl", *urls, "--user-agent", UA, "--out", str(out),
                       "--resolve", site.resolve, *FAST, *args)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done


def rows(folder: Path, stem: str) -> list[dict[str, Any]]:
    """Every row of a JSON-lines file and its rotated parts (oldest first)."""
    out: list[dict[str, Any]] = []
    for path in [*sorted(folder.glob(f"{stem}.*.jsonl.gz")), folder / f"{stem}.jsonl"]:
        if path.exists():
            opener: Any = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt", encoding="utf-8") as fh:
                out += [json.loads(line) for line in fh]
    return out


def handler(tmp: Path, code: str) -> str:
    (tmp / "h.py").write_text(code, encoding="utf-8")
    return f"{tmp / 'h.py'}:h"


def summary(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return data


STORED = {"/", "/a.html", "/b.html", "/new.html", "/far.html"}  # /copy-of-b.html: a duplicate


def paths(urls: Any) -> set[str]:
    return {"/" + u.split("/", 3)[3] for u in urls}


# -- an item holding text UTF-8 cannot hold ---------------------------------------------------
@pytest.mark.parametrize("fmt", ["jsonl", "csv", "json"])
def test_an_item_with_a_lone_surrogate_is_written_mended_and_the_page_logged(
    tmp_path: Path, fmt: str
) -> None:
    """A lone surrogate (``surrogateescape``'s stand-in for a byte) once made the items file's
    write raise: the page's request-log line and items were lost, an internal error counted,
    a traceback printed. Now the value is written with U+FFFD; an item no file can hold at all
    (a cycle) is left out alone, said, and counted as the handler's error."""
    spec = handler(tmp_path, (
        "def h(page):\n"
        "    yield {'name': b'caf\\xe9'.decode('utf-8', 'surrogateescape'), 'n': 1}\n"
        "    loop = {}\n"
        "    loop['self'] = loop\n"
        "    yield {'name': loop, 'n': 2}\n"
    ))  # fmt: skip
    out = tmp_path / "out"
    items_file = tmp_path / f"items.{fmt}"
    with output_site() as site:
        done = crawl(site, out, "--handler", spec, "--items", str(items_file), "--extract", "text")
        asked = [p for p in site.requests() if p != "/robots.txt"]
    logged = [r for r in rows(out / "log", "requests") if r.get("record") != "header"]
    assert sorted(r["url"] for r in logged if "robots" not in r["url"]) == sorted(
        site.url(p) for p in asked
    )  # every request logged
    if fmt == "csv":
        with items_file.open(newline="", encoding="utf-8") as fh:
            items: list[dict[str, Any]] = list(csv.DictReader(fh))
    elif fmt == "json":
        items = json.loads(items_file.read_text(encoding="utf-8"))
    else:
        items = rows(tmp_path, "items")
    assert paths(i["url"] for i in items) == STORED and len(items) == len(STORED)
    assert all(i["name"] == "caf\ufffd" and str(i["n"]) == "1" for i in items)
    counters = summary(out)["counters"]
    assert counters["items"] == len(STORED)
    assert counters["handler_errors"] == len(STORED)  # each page's cyclic item
    assert "internal" not in summary(out)["errors"]
    assert "Traceback" not in done.stderr
    assert done.stderr.count("left out") == len(STORED), done.stderr
    assert paths(r["url"] for r in rows(out, "pages")) == STORED | {"/copy-of-b.html"}
    assert paths(r["url"] for r in rows(out, "content")) == STORED


def test_a_sites_lone_surrogate_in_its_usage_statements_costs_no_page(tmp_path: Path) -> None:
    """A tdmrep.json whose policy holds a lone surrogate (a JSON ``\\ud800`` escape) put it in
    the page's usage: the WARC metadata record beside the page could not be written and the
    page was lost as an internal error. It is kept; pages.jsonl, the item and the metadata
    record carry U+FFFD in the surrogate's place."""
    spec = handler(tmp_path, "def h(page):\n    yield {'k': 1}\n")
    out = tmp_path / "out"
    with output_site() as site:
        crawl(site, out, "--purpose", "ai-train", "--handler", spec,
              seeds=(site.url("/", "tdm.test"),))  # fmt: skip
    assert "internal" not in summary(out)["errors"]
    [page] = rows(out, "pages")
    assert page["kept"] == "stored"
    assert "https://tdm.test/p\ufffd" in json.dumps(page["usage"], ensure_ascii=False)
    [item] = rows(out, "items")
    assert item["usage"] == page["usage"]
    metadata = []
    for path in (out / "warc").glob("*.warc.gz"):
        with path.open("rb") as fh:
            metadata += [r.content_stream().read() for r in ArchiveIterator(fh)
                         if r.rec_type == "metadata"]  # fmt: skip
    assert len(metadata) == 1 and "https://tdm.test/p\ufffd".encode() in metadata[0]


# -- the crawl's data is not a log -------------------------------------------------------------
def test_items_pages_and_content_outlive_log_retention_and_items_stay_one_file(
    tmp_path: Path,
) -> None:
    """``--log-rotate-bytes`` and ``--log-retention-days`` are for logs: items.jsonl and
    content.jsonl are one file each, pages.jsonl may rotate but no part of it expires. (They
    were rotated and, past the retention, deleted like logs.)"""
    spec = handler(tmp_path, "def h(page):\n    yield {'blob': 'y' * 3000}\n")
    out = tmp_path / "out"
    opts = ["--handler", spec, "--extract", "text", "--log-rotate-bytes", "2000",
            "--log-retention-days", "0.00001"]  # 0.9 s  # fmt: skip
    with output_site() as site:
        crawl(site, out, *opts, "--max-pages", "3")
        time.sleep(2)  # the first run's rotated files are past the retention
        second = time.time()
        crawl(site, out, *opts)
    assert [p.name for p in out.glob("items*")] == ["items.jsonl"]
    assert [p.name for p in out.glob("content*")] == ["content.jsonl"]
    items = rows(out, "items")
    assert sorted(paths(i["url"] for i in items)) == sorted(STORED)  # one line per item, all
    assert sorted(paths(r["url"] for r in rows(out, "content"))) == sorted(STORED)
    pages = rows(out, "pages")
    assert sorted(paths(r["url"] for r in pages)) == sorted(STORED | {"/copy-of-b.html"})
    # the logs still expire: no rotated request log of the first run is left
    stamp = time.strftime("%Y-%m-%dT%H%M%S", time.gmtime(int(second)))
    for part in (out / "log").glob("requests.*.jsonl.gz"):
        assert part.name.split(".")[1][:17] >= stamp, part.name


# -- provenance --------------------------------------------------------------------------------
def test_a_handlers_own_url_and_usage_are_kept_beside_the_pages(tmp_path: Path) -> None:
    """An item's own ``url`` (a Scrapy habit) or ``usage`` replaced the page's provenance, or
    was replaced by it: now the item keeps its own, and the page's goes under ``page_url``,
    ``page_usage``...; an item whose ``url`` is the page's has one key."""
    spec = handler(tmp_path, (
        "def h(page):\n"
        "    yield {'url': 'https://shop.example/item/1', 'usage': 'mine',\n"
        "           'warc_record_id': 'not a record', 'title': page.title}\n"
        "    yield {'url': page.url, 'k': 1}\n"
    ))  # fmt: skip
    out = tmp_path / "out"
    with output_site() as site:
        crawl(site, out, "--handler", spec)
    pages = {r["url"]: r for r in rows(out, "pages")}
    items = rows(out, "items")
    assert len(items) == 2 * len(STORED)
    for own, same in zip(items[::2], items[1::2], strict=True):
        page = pages[own["page_url"]]
        assert own["url"] == "https://shop.example/item/1" and own["usage"] == "mine"
        assert own["warc_record_id"] == "not a record"
        assert own["page_warc_record_id"] == page["warc_record_id"] is not None
        assert own["page_usage"] == page["usage"] and page["usage"]["purpose"] == "search"
        assert same["url"] == page["url"] and "page_url" not in same and same["k"] == 1
        assert same["warc_record_id"] == page["warc_record_id"]
        assert same["usage"] == page["usage"]


# -- pages.jsonl and the WACZ ------------------------------------------------------------------
def _records(out: Path) -> dict[str, dict[str, str | None]]:
    found: dict[str, dict[str, str | None]] = {}
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                h = rec.rec_headers
                found[h.get_header("WARC-Record-ID")] = {
                    "type": rec.rec_type,
                    "url": h.get_header("WARC-Target-URI"),
                    "refers_to": h.get_header("WARC-Refers-To"),
                }
    return found


def test_a_duplicate_row_names_its_revisit_record_and_still_packs_valid(tmp_path: Path) -> None:
    """A duplicate's ``warc_record_id`` named its original's response record, not the revisit
    record written for it; it now names the revisit, and ``original_record_id`` the response
    (the row of a page stored whole has none). The package still validates."""
    out = tmp_path / "out"
    with output_site() as site:
        crawl(site, out)
    records = _records(out)
    pages = {paths([r["url"]]).pop(): r for r in rows(out, "pages")}
    dup, orig = pages["/copy-of-b.html"], pages["/b.html"]
    assert dup["kept"] == "duplicate" and orig["kept"] == "stored"
    revisit = records[dup["warc_record_id"]]
    assert revisit["type"] == "revisit" and revisit["url"] == dup["url"]
    assert revisit["refers_to"] == dup["original_record_id"] == orig["warc_record_id"]
    assert records[orig["warc_record_id"]]["type"] == "response"
    assert orig["original_record_id"] is None
    wacz = tmp_path / "c.wacz"
    packed = politecrawl("wacz", str(out), "--output", str(wacz))
    assert packed.returncode == 0 and packed.stderr == "", packed.stderr
    with zipfile.ZipFile(wacz) as zf:
        listed = [json.loads(x) for x in zf.read("pages/pages.jsonl").splitlines()[1:]]
    assert paths(p["url"] for p in listed) == STORED | {"/copy-of-b.html"}
    if WACZ is not None:  # Webrecorder's validator (py-wacz), where installed
        v = subprocess.run([str(WACZ / "wacz"), "validate", "-f", str(wacz)],
                           capture_output=True, text=True, timeout=300)  # fmt: skip
        assert v.returncode == 0 and "is valid" in v.stdout, v.stdout + v.stderr


def test_the_wacz_opens_on_the_first_seed(tmp_path: Path) -> None:
    """The package's ``mainPageURL`` was the first page stored: here the second seed's, whose
    robots.txt answered first. It is the first seed now, since that seed was stored."""
    out = tmp_path / "out"
    with output_site() as site:
        first = site.url("/", "slow.test")
        crawl(site, out, seeds=(first, "/"))
    stored = [r["url"] for r in rows(out, "pages")]
    assert first in stored and stored[0] != first  # stored, but not first
    wacz = tmp_path / "c.wacz"
    packed = politecrawl("wacz", str(out), "--output", str(wacz))
    assert packed.returncode == 0, packed.stderr
    with zipfile.ZipFile(wacz) as zf:
        package = json.loads(zf.read("datapackage.json"))
        listed = [json.loads(x) for x in zf.read("pages/pages.jsonl").splitlines()[1:]]
    assert package["mainPageURL"] == first
    assert package["mainPageDate"] == next(p["ts"] for p in listed if p["url"] == first)


# -- the commands around a crawl ---------------------------------------------------------------
@pytest.mark.parametrize("processes", ["1", "2"])
def test_metrics_on_a_port_taken_writes_nothing(tmp_path: Path, processes: str) -> None:
    """``--metrics`` on a port in use was refused (exit 2) only after the output folder was
    made (state, logs, lock): the address is tried first now."""
    out = tmp_path / "out"
    with socket.create_server(("127.0.0.1", 0)) as taken, output_site() as site:
        port = taken.getsockname()[1]
        done = politecrawl("crawl", site.url(), "--user-agent", UA, "--out", str(out),
                           "--resolve", site.resolve, *FAST, "--metrics", f"127.0.0.1:{port}",
                           "--processes", processes)  # fmt: skip
        assert site.log == []
    assert done.returncode == 2, done.stderr
    assert "cannot listen" in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert not out.exists(), sorted(os.listdir(out))


def test_robots_refuses_a_malformed_url(tmp_path: Path) -> None:
    """``politecrawl robots FILE 'http://[bad'`` printed ALLOWED and exited 0: a URL that is
    not one is said in one line (exit 2), before any robots.txt is asked."""
    robots = tmp_path / "robots.txt"
    robots.write_text("User-agent: *\nDisallow: /private/\n")
    with output_site() as site:
        for source in (str(robots), site.url()):
            done = politecrawl("robots", source, "--user-agent", UA, "--resolve", site.resolve,
                               "--allow-private-addresses", "/a.html", "http://[bad")  # fmt: skip
            assert done.returncode == 2, done.stdout
            assert done.stdout == "" and "ALLOWED" not in done.stdout
            assert done.stderr.splitlines() == [
                "politecrawl: error: bad URL 'http://[bad': bad IPv6 literal "
                "(give an http(s) URL, or a path starting with /)"
            ]
        assert site.log == []
        good = politecrawl("robots", str(robots), "--user-agent", UA, "/a.html", "/private/x",
                           site.url("/private/y"))  # fmt: skip
    assert good.returncode == 0, good.stderr
    assert [line.split()[0] for line in good.stdout.splitlines()[1:]] == [
        "ALLOWED", "DISALLOWED", "DISALLOWED"
    ]  # fmt: skip


def test_fetch_follows_its_urls_redirects_and_no_link(tmp_path: Path) -> None:
    """``politecrawl fetch`` was documented as following nothing, yet follows the redirects
    of the segment's URLs (as it should: the URL asked for is that page); the help says so
    now. Its pages' links are kept for the next segment, not fetched."""
    helped = politecrawl("fetch", "--help")
    assert helped.returncode == 0
    text = " ".join(helped.stdout.split())
    assert "following nothing" not in text
    assert "redirects are followed (3 hops at most)" in text
    listed = politecrawl("--help")
    assert "following no link (only its URLs' redirects)" in " ".join(listed.stdout.split())
    with output_site() as site:
        seg = tmp_path / "next.seg"
        seg.write_text(site.url("/old.html") + "\n")
        out = tmp_path / "seg1"
        done = politecrawl("fetch", str(seg), "--user-agent", UA, "--out", str(out),
                           "--resolve", site.resolve, *FAST)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert site.requests() == ["/robots.txt", "/old.html", "/new.html"]
    links = rows(out / "log", "links")
    assert [(r["url"], r["links"]) for r in links] == [
        (site.url("/new.html"), [site.url("/far.html")])
    ]
