"""A listing's link to the next listing (a forum's, an archive's numbered pages) keeps a share
of the best item's priority, whatever the model learns (unit). The real command on a forum of
2,025 numbered pages is ``test_focus_numbered.py``.
"""

from __future__ import annotations

import pytest

from politecrawl.content.parse import Link
from politecrawl.focus.relevance import Document
from politecrawl.focus.strategy import SERIES_KEEP, SERIES_SHARE, Focus

H = "http://forum.test"
TOPIC = "steam locomotive, boiler restoration"


def listing(focus: Focus, n: int) -> dict[str, float]:
    page = Document(f"{H}/forum/page/{n}", f"Threads, page {n}", "Latest threads.")
    score = focus.score_page(page.url, page)
    others = ("Pruning roses in autumn", "Choosing a mortgage", "Sourdough", "Chess", "Wine")
    links = [
        Link(f"{H}/t/{n}1", "Restoring the boiler of a steam locomotive", False),
        *(Link(f"{H}/t/{n}{i}", title, False) for i, title in enumerate(others, 2)),
        Link(f"{H}/forum/page/{n + 1}", "Next page", False),
        Link(f"{H}/about", "About the forum", False),
    ]
    return dict(focus.link_items(page.url, links, 1, score))


@pytest.mark.unit
def test_the_next_listing_keeps_a_share_of_its_best_link() -> None:
    focus = Focus.from_options("focused", TOPIC, None)
    got = listing(focus, 1)
    best = got[f"{H}/t/11"]
    nxt = got[f"{H}/forum/page/2"]
    assert nxt == pytest.approx(SERIES_SHARE * best)
    assert nxt > got[f"{H}/t/12"] and nxt > got[f"{H}/about"]  # ahead of the off-topic threads
    # listings 2-29 fetched: the model learns the "Next page" links as misses, and the floor
    # of the last one queued holds through re-scoring
    for n in range(2, 30):
        got = listing(focus, n)
    floor = got[f"{H}/forum/page/30"]
    assert floor == pytest.approx(SERIES_SHARE * got[f"{H}/t/291"])
    assert focus.model is not None
    learned = focus.model.score(focus._features[f"{H}/forum/page/30"])
    assert learned < floor  # what the model alone gives it now
    assert dict(focus.rescore())[f"{H}/forum/page/30"] == pytest.approx(floor)


@pytest.mark.unit
def test_no_floor_outside_a_series_or_without_other_links() -> None:
    focus = Focus.from_options("focused", TOPIC, None)
    page = Document(f"{H}/guide/intro.html", "Guide", "intro")  # no number: no series
    score = focus.score_page(page.url, page)
    links = [Link(f"{H}/guide/boiler.html", "steam locomotive boiler", False),
             Link(f"{H}/guide/page2.html", "Next page", False)]  # fmt: skip
    plain = dict(focus.link_items(page.url, links, 1, score))
    assert plain[f"{H}/guide/page2.html"] < 0.5 * plain[f"{H}/guide/boiler.html"]
    # release notes link their numbered neighbours and prose pages: no listing, no floor
    notes = Document(f"{H}/releases/4.2.1.html", "Release notes", "fixed bugs")
    links = [Link(f"{H}/releases/4.2.2.html", "next", False),
             *(Link(f"{H}/topics/{w}.html", w, False) for w in ("boiler", "models", "forms",
                                                                  "admin", "cache", "mail"))]
    got = dict(focus.link_items(notes.url, links, 1, focus.score_page(notes.url, notes)))
    assert got[f"{H}/releases/4.2.2.html"] < 0.5 * got[f"{H}/topics/boiler.html"]
    # a page whose only links are its series' pages has nothing to take a share of
    only = Document(f"{H}/archive/3", "Archive 3", "old")
    got = focus.link_items(only.url, [Link(f"{H}/archive/4", "Next", False)], 1,
                           focus.score_page(only.url, only))  # fmt: skip
    assert got[0][1] < 0.2
    # breadth-first keeps its depth order
    bfs = Focus.from_options("bfs", None, None)
    assert bfs.link_items(only.url, [Link(f"{H}/archive/4", "Next", False)], 2,
                          bfs.score_page(only.url, only)) == [(f"{H}/archive/4", -2.0)]  # fmt: skip


@pytest.mark.unit
def test_a_barren_listing_passes_most_of_its_floor_on_and_page_one_may_have_no_number() -> None:
    focus = Focus.from_options("focused", TOPIC, None)
    first = Document(f"{H}/forum/", "Threads", "Latest threads.")  # no number: page one
    items = [Link(f"{H}/t/{i}", "Restoring a steam locomotive" if i == 1 else f"Roses {i}", False)
             for i in range(1, 8)]  # fmt: skip
    got = dict(focus.link_items(first.url, [*items, Link(f"{H}/forum?page=2", "2", False)], 1,
                                focus.score_page(first.url, first)))  # fmt: skip
    floor = got[f"{H}/forum?page=2"]
    assert floor == pytest.approx(SERIES_SHARE * got[f"{H}/t/1"])
    # page two lists nothing on the topic: page three keeps SERIES_KEEP of page two's floor
    second = Document(f"{H}/forum?page=2", "Threads", "Latest threads.")
    barren = [Link(f"{H}/t/{i}", f"Chess openings {i}", False) for i in range(8, 16)]
    got = dict(focus.link_items(second.url, [*barren, Link(f"{H}/forum?page=3", "3", False)], 1,
                                focus.score_page(second.url, second)))  # fmt: skip
    assert got[f"{H}/forum?page=3"] == pytest.approx(SERIES_KEEP * floor)
    assert got[f"{H}/forum?page=3"] > max(got[f"{H}/t/{i}"] for i in range(8, 16))
