"""Decode once, parse once: pages in legacy charsets, lying labels, a BOM before meta robots,
and the page handler / sinks API, through the real command against a local site whose own log
of raw request paths is the judge."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pageweb import UA, Pages, PageWeb, html
from warcio.archiveiterator import ArchiveIterator

from politecrawl import CrawlConfig, Crawler, Document, FetchConfig, Page, PolitenessConfig
from politecrawl.content.page import read_page
from politecrawl.content.parse import encode_query, parse_page
from politecrawl.storage.logs import read_jsonl
from politecrawl.storage.sinks import ItemRecord, PageRecord, Record

RUSSIAN = "Москва - столица России, крупнейший по численности населения город страны."
BOM = b"\xef\xbb\xbf"


def charset_site() -> Pages:
    latin1 = "text/html; charset=ISO-8859-1"
    return {
        "/": ("text/html; charset=utf-8", html("Index", (
            '<a href="/latin1.html">a</a> <a href="/cp1251.html">b</a> '
            '<a href="/liar.html">c</a> <a href="/bom.html">d</a>')).encode()),
        "/latin1.html": (latin1, html("Café crème", (
            '<p>Le café est très bon.</p><a href="/café-crème">suite</a> '
            '<a href="/search?q=café">chercher</a>')).encode("latin-1")),
        "/caf%C3%A9-cr%C3%A8me": ("text/html; charset=utf-8", html("Crème", "fin").encode()),
        "/search?q=caf%E9": (latin1, html("Résultats", "rien").encode("latin-1")),
        "/cp1251.html": ("text/html; charset=windows-1251", html("Статья о погоде", (
            '<p>Сегодня солнечно.</p><a href="/статья">далее</a>')).encode("cp1251")),
        "/%D1%81%D1%82%D0%B0%D1%82%D1%8C%D1%8F": (
            "text/html; charset=windows-1251", html("Статья", "текст").encode("cp1251")),
        "/liar.html": (latin1, html("Новости дня", (
            f'<p>{RUSSIAN}</p><a href="/новости">ещё</a>')).encode("cp1251")),
        "/%D0%BD%D0%BE%D0%B2%D0%BE%D1%81%D1%82%D0%B8": (
            "text/html; charset=utf-8", html("Ещё новости", "да").encode()),
        "/bom.html": ("text/html", BOM + html(
            "Not for you", '<a href="/from-bom">x</a>',
            head='<meta name="robots" content="noindex, nofollow">').encode()),
        "/from-bom": ("text/html", html("Followed", "").encode()),
    }  # fmt: skip


async def run_cli(args: list[str], env: dict[str, str] | None = None) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "politecrawl", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    _, stderr = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, stderr.decode()


def jsonl(path: Path) -> list[dict[str, Any]]:
    return read_jsonl(path)  # with its rotated parts


def path_of(url: str) -> str:
    return "/" + url.split("://", 1)[1].partition("/")[2]


@pytest.mark.e2e
async def test_charsets_links_titles_and_bom_meta_robots_through_the_cli(tmp_path: Path) -> None:
    async with PageWeb(charset_site()) as site:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(site.root + "\n")
        await run_cli(site.crawl_args(str(seeds), str(tmp_path / "out")))
    requested = set(site.paths)
    # links requested as the WHATWG URL rules encode the true characters
    assert "/caf%C3%A9-cr%C3%A8me" in requested
    assert "/%D1%81%D1%82%D0%B0%D1%82%D1%8C%D1%8F" in requested  # /статья
    assert "/%D0%BD%D0%BE%D0%B2%D0%BE%D1%81%D1%82%D0%B8" in requested  # /новости, page mislabelled
    assert "/search?q=caf%E9" in requested  # the query in the page's own encoding
    assert not [p for p in requested if "%EF%BF%BD" in p.upper()]
    assert "/from-bom" not in requested  # nofollow after a byte-order mark
    pages = {path_of(p["url"]): p for p in jsonl(tmp_path / "out" / "pages.jsonl")}
    assert "/bom.html" not in pages  # noindex: not stored
    assert pages["/latin1.html"]["title"] == "Café crème"
    assert pages["/latin1.html"]["charset"] == "cp1252"
    assert pages["/cp1251.html"]["title"] == "Статья о погоде"
    assert pages["/cp1251.html"]["charset"] == "cp1251"
    assert pages["/liar.html"]["title"] == "Новости дня"
    assert pages["/liar.html"]["charset"] == "cp1251"
    assert pages["/liar.html"]["charset_source"] == "detected"
    assert pages["/caf%C3%A9-cr%C3%A8me"]["title"] == "Crème"
    assert pages["/search?q=caf%E9"]["title"] == "Résultats"
    assert all(p["kept"] == "stored" and p["warc_record_id"] for p in pages.values())
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["counters"]["noindex"] == 1


def handler_site() -> Pages:
    def page(title: str, links: list[str], head: str = "") -> tuple[str, bytes]:
        body = f"<h1>{title}</h1>" + "".join(f'<a href="{u}">{u}</a>' for u in links)
        return "text/html; charset=utf-8", html(title, body, head).encode()

    return {
        "/robots.txt": ("text/plain", b"User-agent: *\nDisallow: /private/\n"),
        "/": page("Home", ["/keep/1", "/skip/1", "/keep/2", "/noindex", "/private/keep"]),
        "/keep/1": page("One", ["/skip/2", "/keep/3"]),
        "/keep/2": page("Two", ["/"]),
        "/keep/3": page("Three", []),
        "/skip/1": page("Skip one", []),
        "/skip/2": page("Skip two", []),
        "/noindex": page("Hidden", [], head='<meta name="robots" content="noindex">'),
        "/private/keep": page("Private", []),
    }


HANDLERS = """
def headings(page):
    for h1 in page.css("h1"):
        yield {"h1": h1.text(strip=True), "status": page.status,
               "type": page.headers["content-type"], "charset": page.charset}


def keep_only(page):
    page.follow([link for link in page.links if "/keep/" in link.url])
    page.follow(["/private/keep/x", "http://elsewhere.test/keep/9"])  # the gate still decides
    return [{"title": page.title}]
"""


def warc_responses(out: Path) -> dict[str, str]:
    """WARC-Record-ID of each response record, by target URI."""
    found = {}
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "response":
                    uri = rec.rec_headers.get_header("WARC-Target-URI")
                    found[uri] = rec.rec_headers.get_header("WARC-Record-ID")
    return found


def assert_items_match_stored_pages(out: Path, per_page: int = 1) -> list[dict[str, Any]]:
    items = jsonl(out / "items.jsonl")
    stored = {p["url"]: p for p in jsonl(out / "pages.jsonl") if p["kept"] == "stored"}
    assert sorted(i["url"] for i in items) == sorted(list(stored) * per_page)
    responses = warc_responses(out)
    for item in items:
        assert item["warc_record_id"] == stored[item["url"]]["warc_record_id"]
        assert item["warc_record_id"] == responses[item["url"]]
    return items


@pytest.mark.e2e
async def test_handler_through_the_cli_and_toml_narrowing(tmp_path: Path) -> None:
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "myhandlers.py").write_text(HANDLERS)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "mods"), env.get("PYTHONPATH", "")])
    async with PageWeb(handler_site()) as site:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(site.root + "\n")
        args = site.crawl_args(str(seeds), str(tmp_path / "all"))
        await run_cli([*args, "--handler", "myhandlers:headings"], env)
        all_paths = set(site.paths)
        site.paths.clear()
        (tmp_path / "crawl.toml").write_text('handler = "myhandlers:keep_only"\n')
        args = site.crawl_args(str(seeds), str(tmp_path / "narrow"))
        await run_cli([*args, "--config", str(tmp_path / "crawl.toml")], env)
    # --handler: one item per stored page, with the page's URL and its WARC response record
    items = assert_items_match_stored_pages(tmp_path / "all")
    by_path = {path_of(i["url"]): i for i in items}
    assert "/noindex" not in by_path and "/noindex" in all_paths  # fetched, not stored
    assert by_path["/keep/1"]["h1"] == "One" and by_path["/keep/1"]["status"] == 200
    assert by_path["/"]["type"] == "text/html; charset=utf-8" and by_path["/"]["charset"] == "utf-8"
    assert {"/skip/1", "/skip/2"} <= all_paths
    # handler in TOML narrowing the links: the server saw only the chosen ones, via the gate
    assert site.paths[0] == "/robots.txt"
    assert sorted(site.paths) == sorted(["/robots.txt", "/", "/keep/1", "/keep/2", "/keep/3"])
    assert_items_match_stored_pages(tmp_path / "narrow")


class MemorySink:
    def __init__(self) -> None:
        self.records: list[Record] = []
        self.closed = False

    def write(self, record: Record) -> None:
        self.records.append(record)

    def close(self) -> None:
        self.closed = True


@pytest.mark.e2e
async def test_handler_relevance_callable_and_sink_through_the_api(tmp_path: Path) -> None:
    seen: list[tuple[str, float | None, str]] = []

    def on_page(page: Page) -> Any:
        seen.append((page.url, page.relevance, page.css_first("h1").text()))  # type: ignore[union-attr]
        yield {"heading": page.css_first("h1").text()}  # type: ignore[union-attr]
        yield {"links": len(page.links)}

    def one_is_relevant(doc: Document) -> float:
        return 1.0 if doc.title == "One" else 0.0

    sink = MemorySink()
    async with PageWeb(handler_site()) as site:
        config = CrawlConfig(
            seeds=(site.root,),
            out_dir=tmp_path / "out",
            fetch=FetchConfig(
                user_agent=UA,
                resolve=(f"{site.host}:{site.port}:127.0.0.1",),
                allow_private_addresses=True,
            ),
            politeness=PolitenessConfig(min_delay_s=0.05, jitter_s=0, response_time_factor=0),
            scope="host",
            progress=False,
        )
        summary = await Crawler(
            config, on_page=on_page, relevance=one_is_relevant, sinks=[sink]
        ).run()
    items = assert_items_match_stored_pages(tmp_path / "out", per_page=2)
    assert summary.stored == 6 and summary.counters["items"] == 12
    assert {i["heading"] for i in items if "heading" in i} == {
        "Home", "One", "Two", "Three", "Skip one", "Skip two"}  # fmt: skip
    assert dict((path_of(u), r) for u, r, _ in seen)["/keep/1"] == 1.0
    pages = {path_of(p["url"]): p for p in jsonl(tmp_path / "out" / "pages.jsonl")}
    assert pages["/keep/1"]["relevance"] == 1.0 and pages["/keep/2"]["relevance"] == 0.0
    # the user's sink got each kept page, then its items, and was closed
    assert sink.closed
    kinds = [type(r).__name__ for r in sink.records]
    assert kinds.count("PageRecord") == 6 and kinds.count("ItemRecord") == 12
    first = sink.records[0]
    assert isinstance(first, PageRecord) and first.kept == "stored"
    assert isinstance(sink.records[1], ItemRecord) and sink.records[1].page is first.page


@pytest.mark.unit
def test_bom_then_meta_robots_is_read() -> None:
    meta = '<meta name="robots" content="noindex, nofollow">'
    body = BOM + html("t", '<a href="/x">x</a>', meta).encode()
    page = read_page(body, "http://h.test/", product_token="testbot")
    assert page.directives.noindex and page.directives.nofollow
    assert page.links_to_follow() == [] and page.charset_source == "bom"


@pytest.mark.unit
def test_the_tree_a_handler_sees_is_whole() -> None:
    script = "<script type='application/ld+json'>{\"a\": 1}</script>"
    body = html("t", f"{script}<nav>menu</nav><p>x</p>")
    page = read_page(body.encode(), "http://h.test/", product_token="t", score=True, keep_tree=True)
    assert page.css_first("script") is not None and page.css_first("nav") is not None
    assert page.visible_text == "menu x" and page.document is not None
    assert page.document.text == "x"  # chrome out of the text the nugget function reads


@pytest.mark.unit
def test_follow_resolves_against_base_and_keeps_nofollow() -> None:
    body = html("t", '<a href="a">a</a><a rel="nofollow" href="b">b</a>', '<base href="/d/">')
    page = read_page(body.encode(), "http://h.test/x/y", product_token="t")
    assert [link.url for link in page.links_to_follow()] == ["http://h.test/d/a"]
    page.follow(["b", "c", page.links[0]])
    assert [link.url for link in page.links_to_follow()] == [
        "http://h.test/d/c",
        "http://h.test/d/a",
    ]
    page.follow([])
    assert len(page.links_to_follow()) == 2


@pytest.mark.unit
def test_query_is_encoded_in_the_page_encoding() -> None:
    assert encode_query("/s?q=café#é", "cp1252") == "/s?q=caf%E9#é"
    assert encode_query("/é?q=a", "cp1252") == "/é?q=a"  # paths: UTF-8, in urls.join
    assert encode_query("/s?q=статья", "cp1252") == "/s?q=" + "".join(
        f"%26%23{ord(c)}%3B" for c in "статья"
    )


@pytest.mark.unit
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.sampled_from([None, "text/html; charset=iso-8859-1"]))
def test_read_page_never_raises(body: bytes, content_type: str | None) -> None:
    headers = [("Content-Type", content_type)] if content_type else []
    page = read_page(body, "http://h.test/", headers=headers, product_token="t", score=True)
    assert isinstance(page.text, str) and all(link.url.isascii() for link in page.links)


@pytest.mark.unit
@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30), st.sampled_from(["cp1252", "cp1251", "koi8-r", "cp932"]))
def test_encode_query_gives_ascii_queries(href: str, codec: str) -> None:
    out = encode_query(href, codec)
    end = out.find("#")
    end = len(out) if end < 0 else end
    q = out.find("?", 0, end)
    if q >= 0:
        assert out[q:end].isascii()


def small_page() -> Page:
    return read_page(html("t", "<h1>a</h1>").encode(), "http://h.test/", product_token="t")


@pytest.mark.unit
async def test_handler_forms_and_failures() -> None:
    from politecrawl.handler import run_handler

    async def agen(page: Page) -> Any:
        yield {"a": 1}
        yield {"url": "mine"}  # the item's own url is kept; the page's goes beside it
        yield {"url": "http://h.test/", "e": 5}  # the same as the page's: one key

    async def coro(page: Page) -> list[dict[str, int]]:
        return [{"b": 2}]

    def single(page: Page) -> dict[str, int]:
        return {"c": 3}

    def failing(page: Page) -> Any:
        yield {"d": 4}
        raise RuntimeError("boom")

    def not_dicts(page: Page) -> list[int]:
        return [5]

    page = small_page()
    items, err = await run_handler(agen, page, "<urn:uuid:x>")
    prov = {"warc_record_id": "<urn:uuid:x>", "usage": None}
    assert err is None and items == [
        {"url": "http://h.test/", **prov, "a": 1},
        {"page_url": "http://h.test/", **prov, "url": "mine"},
        {"url": "http://h.test/", **prov, "e": 5},
    ]
    assert (await run_handler(coro, page, None))[0] == [
        {"url": "http://h.test/", "warc_record_id": None, "usage": None, "b": 2}
    ]
    assert (await run_handler(single, page, None))[0][0]["c"] == 3
    assert (await run_handler(lambda p: None, page, None)) == ([], None)
    items, err = await run_handler(failing, page, None)
    assert [i["d"] for i in items] == [4] and err is not None and "boom" in err
    items, err = await run_handler(not_dicts, page, None)
    assert items == [] and err is not None and "dicts" in err


@pytest.mark.unit
def test_a_page_read_in_a_worker_crosses_processes_whole_but_its_tree() -> None:
    """What ``--processes`` sends back (pagework): every field as read but the tree, the
    headers a case-insensitive mapping again."""
    import pickle

    from politecrawl.engine.pagework import do_page_work
    from politecrawl.net.fetch import FetchResult

    body = html(
        "T",
        '<a href="/a" rel="nofollow">A</a><a href="http://other.test/b">B</a>',
        head='<meta name="robots" content="noarchive"><link rel="canonical" href="/c">',
    ).encode()
    res = FetchResult(url="http://x.test/p", started=1.0, status=200, raw_body=body, body=body)
    res.headers = [("Content-Type", "text/html; charset=utf-8"), ("ETag", '"e"')]
    work = do_page_work(res, res.url, "testbot", 2, score=False)
    back = pickle.loads(pickle.dumps(work))
    page, again = work.page, back.page
    for name in Page.__dataclass_fields__:
        if name not in ("tree", "headers"):
            assert getattr(again, name) == getattr(page, name), name
    assert [(link.url, link.anchor, link.nofollow) for link in again.links] == [
        ("http://x.test/a", "A", True),
        ("http://other.test/b", "B", False),
    ]
    assert again.directives.noarchive and again.canonical == "http://x.test/c"
    assert again.headers["etag"] == '"e"' and again.tree is None
    assert back.simhash == work.simhash and back.exchange.data == work.exchange.data
    assert back.exchange.capture == work.exchange.capture


@pytest.mark.unit
def test_an_anchor_keeps_the_spaces_between_its_inline_elements() -> None:
    """A DocBook table of contents: ``26.1. <acronym>SQL</acronym> Dump`` was read as
    ``26.1.SQLDump`` (each text node stripped, the pieces glued), a word no topic has."""
    body = html(
        "T",
        '<a href="/backup-dump.html">26.1. <acronym class="acronym">SQL</acronym>\n Dump</a>'
        '<a href="/p">Using <span class="application">pg_dumpall</span></a>'
        '<a href="/q">  spaced\t out  </a>',
    ).encode()
    page = parse_page(body, "http://x.test/backup.html", "testbot")
    assert [link.anchor for link in page.links] == [
        "26.1. SQL Dump",
        "Using pg_dumpall",
        "spaced out",
    ]
