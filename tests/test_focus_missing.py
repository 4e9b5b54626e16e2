"""Links to nothing teach the focused crawl: a folder whose links lead to missing pages is
taken last (unit), and the real command against a site whose best-worded links are dead
(e2e, judged by what the server was asked).

Django's documentation, as Debian ships it, links Python's as ``/usr/share/doc/python3-doc/
html/library/*.html`` on its own host: every one is a 404, and their anchors name the topic
(``datetime``, ``zoneinfo``). A focused crawl of the `fifth` bed's dates topic asked for nine
of them in its first 33 fetches: a 404 taught it nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import UA
from originweb import focused_crawl
from redis_server import redis_url  # noqa: F401  (fixture)

from politecrawl.content.parse import Link
from politecrawl.focus.copies import COPY_SHARE, CopyFolders
from politecrawl.focus.relevance import Document
from politecrawl.focus.strategy import Focus

H = "http://docs.test"


@pytest.mark.unit
def test_a_folder_of_missing_pages_is_barren_after_three_and_only_if_it_holds_few_pages() -> None:
    folders = CopyFolders()
    assert folders.observe_missing(f"{H}/usr/share/doc/a.html") is None
    assert folders.observe_missing(f"{H}/usr/share/doc/b.html") is None
    assert not folders.covers(f"{H}/usr/share/doc/z.html")  # two links are no folder yet
    assert folders.observe_missing(f"{H}/usr/share/doc/c.html") == f"{H}/usr/"
    assert folders.covers(f"{H}/usr/share/doc/z.html") and folders.covers(f"{H}/usr/x.html")
    assert not folders.covers(f"{H}/ref/x.html") and not folders.covers(f"{H}/x.html")
    assert not folders.covers("http://other.test/usr/x.html")
    # a folder that holds the site (/wiki/) is not barren for its first dead links: more than
    # twice as many as its pages are needed
    folders.observe_own(f"{H}/wiki/Main_Page")
    folders.observe_own(f"{H}/wiki/Steam")
    for i in range(4):
        folders.observe_missing(f"{H}/wiki/Deleted_{i}")
    assert not folders.covers(f"{H}/wiki/Locomotive")
    folders.observe_missing(f"{H}/wiki/Deleted_4")
    assert folders.covers(f"{H}/wiki/Locomotive")  # 5 dead against 2 pages
    for i in range(3):  # pages of its own found later make it a folder of pages again
        folders.observe_own(f"{H}/wiki/Page_{i}")
    assert not folders.covers(f"{H}/wiki/Locomotive")
    # a page at the top of the site is in no folder: it counts for none
    for i in range(4):
        assert folders.observe_missing(f"{H}/gone{i}.html") is None
    assert not folders.covers(f"{H}/x.html")
    # what a crawl learned is saved with it
    again = CopyFolders()
    again.load_state(folders.state_dict())
    assert again.covers(f"{H}/usr/share/x.html") and not again.covers(f"{H}/wiki/x.html")


@pytest.mark.unit
def test_focus_lowers_the_folder_of_missing_pages_at_once() -> None:
    topic = "dates and times, time zones"
    focus = Focus.from_options("focused", topic, None)
    doc = Document(f"{H}/index.html", "Dates", "dates and times, time zones " * 10)
    score = focus.score_page(doc.url, doc)
    dead = [f"{H}/usr/lib/{n}.html" for n in ("datetime", "zoneinfo", "time", "calendar", "os")]
    links = [Link(u, "dates and times", False) for u in dead]
    links.append(Link(f"{H}/guide/dates.html", "dates and times", False))
    first = dict(focus.link_items(doc.url, links, 1, score))
    assert focus.saw_no_page(dead[0]) == focus.saw_no_page(dead[1]) == []  # no folder yet
    lowered = dict(focus.saw_no_page(dead[2]))
    assert set(lowered) == set(dead[3:])  # the folder's queued URLs, at once
    for u in dead[3:]:
        assert lowered[u] < 1.5 * COPY_SHARE * first[u]
    again = dict(focus.rescore())
    assert again[f"{H}/guide/dates.html"] > 10 * again[dead[3]]
    # keyword best-first, which learns nothing, takes the folder last too; bfs has no queue
    # order to change
    keyword = Focus.from_options("keyword", topic, None)
    keyword.link_items(doc.url, links, 1, keyword.score_page(doc.url, doc))
    keyword.saw_no_page(dead[0])
    keyword.saw_no_page(dead[1])
    assert set(dict(keyword.saw_no_page(dead[2]))) == set(dead[3:])
    assert Focus.from_options("bfs", None, None).saw_no_page(dead[0]) == []


# -- the real command --------------------------------------------------------------------------

TOPIC = "dates and times, time zones, formatting dates"
DEAD = tuple(f"d{i}" for i in range(30))  # /usr/share/doc/python/d{i}.html: all 404
GUIDE = tuple(f"g{i}" for i in range(10))  # /guide/g{i}.html: on the topic
OTHER = tuple(f"o{i}" for i in range(30))  # /misc/o{i}.html: off it
BUDGET = 30


def site(path: str) -> str | None:
    if path == "/":
        # the dead links' anchors name the whole topic, the guide's only part of it
        dead = "".join(
            f'<a href="/usr/share/doc/python/{d}.html">dates and times, time zones {d}</a> '
            for d in DEAD
        )
        guide = "".join(f'<a href="/guide/{g}.html">dates guide {g}</a> ' for g in GUIDE)
        misc = "".join(f'<a href="/misc/{o}.html">chapter {o}</a> ' for o in OTHER)
        return f"<html><head><title>manual</title></head><body>{dead}{guide}{misc}</body></html>"
    name = path.rsplit("/", 1)[-1].removesuffix(".html")
    if path.startswith("/guide/") and name in GUIDE:
        words = "Formatting dates and times, time zones and timestamps. " * 5
        return f"<html><head><title>Dates {name}</title></head><body><p>{words}</p></body></html>"
    if path.startswith("/misc/") and name in OTHER:
        return f"<html><head><title>{name}</title></head><body><p>Logs rotate.</p></body></html>"
    return None


@pytest.mark.e2e
@pytest.mark.parametrize("frontier", ["sqlite", "redis"])
async def test_a_focused_crawl_leaves_a_folder_of_dead_links_after_a_few(
    tmp_path: Path, frontier: str, request: pytest.FixtureRequest
) -> None:
    extra: tuple[str, ...] = ()
    if frontier == "redis":  # the shared frontier re-prioritises the folder's URLs too
        url = request.getfixturevalue("redis_url")
        extra = ("--frontier", url, "--crawl-id", f"dead-{tmp_path.name}")
    fetched = await focused_crawl(
        site, TOPIC, BUDGET, tmp_path / "out", UA, min_delay=0.05, extra=extra
    )
    asked = [p for p in fetched if p != "/robots.txt"]
    dead = [p for p in asked if p.startswith("/usr/")]
    guide = {p for p in asked if p.startswith("/guide/")}
    # three dead links make the folder barren; one more may be on its way (before: all 30
    # dead links came first, and the budget ran out before the guide)
    assert len(dead) <= 5, asked
    assert guide == {f"/guide/{g}.html" for g in GUIDE}, asked
