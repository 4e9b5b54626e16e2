"""A relevant page raises the URLs queued in its section at once: the index (unit), the
learner (unit) and the real command on a reference whose chapter is named by a file-name
prefix, with no topic word in its links (e2e, judged by what the server was asked).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import UA
from originweb import focused_crawl
from redis_server import redis_url  # noqa: F401  (fixture)

from politecrawl.content.parse import Link
from politecrawl.focus.relevance import Document
from politecrawl.focus.siblings import SectionIndex
from politecrawl.focus.strategy import Focus

H = "http://docs.test"
TOPIC = "tls certificates, ssl encryption"


@pytest.mark.unit
def test_section_index_drops_stale_urls_and_leaves_big_sections_alone() -> None:
    index = SectionIndex(max_queued=3)
    for i in range(3):
        index.add("h/ref/cmd", f"{H}/ref/cmd-{i}.html")
    index.add("h/ref/cmd", f"{H}/ref/cmd-0.html")  # queued again after a re-scoring
    assert len(index) == 4
    alive = {f"{H}/ref/cmd-0.html", f"{H}/ref/cmd-2.html"}
    assert index.queued("h/ref/cmd", alive.__contains__) == [f"{H}/ref/cmd-0.html",
                                                              f"{H}/ref/cmd-2.html"]  # fmt: skip
    assert len(index) == 2  # the fetched one and the repeat are gone
    assert index.queued("h/ref/none", alive.__contains__) == []
    for i in range(4):
        index.add("h/forum/view", f"{H}/forum/view?id={i}")
    assert index.queued("h/forum/view", lambda u: True) == []  # too big: left to re-scoring
    index.rebuild([(f"{H}/a/x.html", "h/a/x")])
    assert len(index) == 1 and index.queued("h/a/x", lambda u: True) == [f"{H}/a/x.html"]


@pytest.mark.unit
def test_a_relevant_page_rescores_its_queued_siblings_only() -> None:
    focus = Focus.from_options("focused", TOPIC, None)
    start = Document(f"{H}/index.html", "reference", "commands and notes")
    score = focus.score_page(start.url, start)
    links = [Link(f"{H}/ref/{name}.html", "page", False) for name in
             ("cmd-1", "note-1", "cmd-2", "cmd-3", "note-2")]  # fmt: skip
    before = dict(focus.link_items(start.url, links, 1, score))
    assert before[f"{H}/ref/cmd-2.html"] == pytest.approx(before[f"{H}/ref/note-1.html"])
    page = Document(f"{H}/ref/cmd-1.html", "TLS certificates", "tls certificates ssl " * 30)
    judged = focus.score_page(page.url, page)
    assert judged.relevant
    raised = dict(focus.saw_stored(page.url, None, judged.relevant))
    assert set(raised) == {f"{H}/ref/cmd-2.html", f"{H}/ref/cmd-3.html"}
    assert raised[f"{H}/ref/cmd-2.html"] > 1.5 * before[f"{H}/ref/cmd-2.html"]
    # an irrelevant page, or a duplicate, re-scores nothing
    note = Document(f"{H}/ref/note-1.html", "note", "logs rotate")
    assert focus.saw_stored(note.url, None, focus.score_page(note.url, note).relevant) == []
    assert focus.saw_stored(f"{H}/ref/cmd-9.html", f"{H}/ref/cmd-1.html", True) == []
    # keyword best-first learns nothing, so it has nothing to re-score
    keyword = Focus.from_options("keyword", TOPIC, None)
    keyword.link_items(start.url, links, 1, keyword.score_page(start.url, start))
    assert keyword.saw_stored(page.url, None, True) == []


@pytest.mark.unit
def test_the_section_index_stays_bounded_on_a_long_crawl() -> None:
    focus = Focus("focused", None, max_features=100)
    src = Document(f"{H}/index.html", "start", "text")
    score = focus.score_page(src.url, src)
    for batch in range(50):
        links = [Link(f"{H}/t/{batch}-{i}.html", "x", False) for i in range(100)]
        focus.link_items(src.url, links, 1, score)
        assert len(focus.sections) <= 2 * 100 + 1_000 + 100
    assert len(focus._features) == 100


# -- the real command --------------------------------------------------------------------------

N = 40
BUDGET = 25  # pages: the start page and 24 more of the 80


def reference(path: str) -> str | None:
    """A start page linking one chapter page, then 40 notes, then the chapter's 39 others,
    all by number: only the file-name prefix (``cmd-``) tells the chapter apart."""
    if path == "/":
        order = ["cmd-1"] + [f"note-{i}" for i in range(1, N + 1)]
        order += [f"cmd-{i}" for i in range(2, N + 1)]
        nav = "".join(f'<a href="/ref/{n}.html">page {n[4:] if n[0] == "n" else n[3:]}</a> '
                      for n in order)  # fmt: skip
        return f"<html><head><title>reference</title></head><body><p>{nav}</p></body></html>"
    name = path.removeprefix("/ref/").removesuffix(".html")
    if name.startswith("cmd-") and name[4:].isdigit():
        text = "SSL encryption and TLS certificates: keys, chains, https. " * 5
    elif name.startswith("note-") and name[5:].isdigit():
        text = "Release notes: logging, caching and the configuration files. " * 5
    else:
        return None
    return (
        f"<html><head><title>{name}</title></head><body><h1>{name}</h1><p>{text}</p>"
        '<p><a href="/">back</a></p></body></html>'
    )


@pytest.mark.e2e
async def test_a_focused_crawl_follows_a_relevant_page_into_its_chapter(tmp_path: Path) -> None:
    fetched = await focused_crawl(reference, TOPIC, BUDGET, tmp_path / "out", UA, min_delay=0.05)
    pages = [p for p in fetched if p.startswith("/ref/")]
    chapter = [p for p in pages if p.startswith("/ref/cmd-")]
    # after cmd-1 the chapter comes before the 40 notes queued ahead of it (24 of 24; before,
    # cmd-1 alone: the notes in the order found, and the re-scoring after 20 pages learned
    # from them that the links of the start page are poor)
    assert len(pages) == BUDGET - 1, fetched
    assert len(chapter) >= 15, (len(chapter), fetched)


@pytest.mark.e2e
async def test_the_shared_redis_frontier_takes_the_new_priorities_too(
    tmp_path: Path,
    redis_url: str,  # noqa: F811
) -> None:
    crawl_id = f"siblings-{tmp_path.name}"
    extra = ("--frontier", redis_url, "--crawl-id", crawl_id)
    fetched = await focused_crawl(reference, TOPIC, BUDGET, tmp_path / "out", UA, 0.05, extra)
    chapter = [p for p in fetched if p.startswith("/ref/cmd-")]
    assert len(chapter) >= 15, (len(chapter), fetched)
