"""The trap guard alone (urls/traps.py): calendars and budgets, on link graphs made here."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest

from politecrawl.urls.traps import DATE_STRIKES, UrlSpaces, date_of

pytestmark = pytest.mark.unit

TODAY = dt.date(2026, 11, 28)
NOW = dt.datetime(2026, 11, 28, 12, tzinfo=dt.UTC).timestamp()
H = "http://h.test"


def spaces(max_urls: int = 100) -> tuple[UrlSpaces, list[tuple[str, str, str, str]]]:
    named: list[tuple[str, str, str, str]] = []
    guard = UrlSpaces(max_urls, lambda *a: named.append(a), clock=lambda: NOW)
    return guard, named


@pytest.mark.parametrize(
    ("url", "date"),
    [
        (H + "/cal/2024/05/17", dt.date(2024, 5, 17)),
        (H + "/cal/2024-05", dt.date(2024, 5, 1)),
        (H + "/events/20240517.html", dt.date(2024, 5, 17)),
        (H + "/cal?date=2024-05-17", dt.date(2024, 5, 17)),
        (H + "/cal?year=2024&month=5", dt.date(2024, 5, 1)),
        (H + "/t/2031", None),  # a year alone is a number
        (H + "/t/2031/3", None),  # a bare month is a page number
        (H + "/p/29991231.html", None),  # a year far ahead is an id
        (H + "/cal/2024-02-30", None),
        (H + "/whatsnew/3.11.html", None),
    ],
)
def test_date_of(url: str, date: dt.date | None) -> None:
    want = None if date is None else date.toordinal()
    assert date_of(url, today=TODAY.toordinal()) == want


def _crawl_calendar(guard: UrlSpaces, pages: int) -> int:
    """Breadth-first over a calendar whose days link previous/next day and next month;
    returns the pages 'fetched' before nothing more was admitted."""

    def day_url(d: dt.date) -> str:
        return f"{H}/cal/{d:%Y/%m/%d}"

    queue = [TODAY]
    seen = {TODAY}
    guard.admitted(day_url(TODAY), H + "/")
    fetched = 0
    while queue and fetched < pages:
        d = queue.pop(0)
        fetched += 1
        nxt_month = dt.date(d.year + d.month // 12, d.month % 12 + 1, min(d.day, 28))
        for t in (d - dt.timedelta(days=1), d + dt.timedelta(days=1), nxt_month):
            u = day_url(t)
            if t in seen or guard.full(u):
                continue
            seen.add(t)
            guard.admitted(u, day_url(d))
            queue.append(t)
    return fetched


def test_an_endless_calendar_is_named_within_a_few_hundred_pages() -> None:
    guard, named = spaces(max_urls=100_000)  # the budget out of the way: the calendar rule
    fetched = _crawl_calendar(guard, 5000)
    assert [(h, p, why) for h, p, _, why in named] == [("h.test", "/cal/N/N/N", "calendar")]
    assert fetched < 600


def test_a_blog_archive_walked_back_from_its_latest_post_is_not_named() -> None:
    guard, named = spaces(max_urls=100_000)  # the calendar rule alone
    guard.admitted(f"{H}/2026/11/20/latest", H + "/")  # the home page links the latest post
    day = dt.date(2026, 11, 20)
    while day.year > 2006:  # each post links the one before; each month the month before
        prev = day - dt.timedelta(days=9)
        guard.admitted(f"{H}/{prev:%Y/%m/%d}/post", f"{H}/{day:%Y/%m/%d}/post")
        guard.admitted(f"{H}/{prev:%Y/%m}/", f"{H}/{day:%Y/%m}/")
        day = prev
    assert named == []


def test_walks_count_beyond_the_latest_date_linked_in_from_outside() -> None:
    guard, named = spaces(max_urls=100_000)
    guard.admitted(f"{H}/events/2029-06-01", H + "/events/")  # announced years ahead
    day = dt.date(2029, 6, 1)
    for _ in range(200):  # walking the announced year: not a trap
        guard.admitted(f"{H}/events/{day + dt.timedelta(days=1)}", f"{H}/events/{day}")
        day += dt.timedelta(days=1)
    assert named == []
    for _ in range(400):
        guard.admitted(f"{H}/events/{day + dt.timedelta(days=1)}", f"{H}/events/{day}")
        day += dt.timedelta(days=1)
    assert [why for *_, why in named] == ["calendar"]


def test_a_forum_feeding_its_reply_pages_is_not_named() -> None:
    guard, named = spaces(max_urls=100)
    for t in range(1, 2001):  # each thread linked from a listing page: the family's links in
        guard.admitted(f"{H}/t/{t}", f"{H}/forum/page/{t // 20 + 1}")
        for r in (2, 3, 4):
            guard.admitted(f"{H}/t/{t}/page/{r}", f"{H}/t/{t}")
    assert named == []  # 6,000 reply pages: the budget is 100 x (1 + 2000 // 10)


def test_a_space_entered_once_that_feeds_itself_is_named_at_its_budget() -> None:
    guard, named = spaces(max_urls=10)
    for i in range(10):
        guard.admitted(f"{H}/p/{1000 + i}.html", f"http://other{i}.test/")  # 10 links in
    for i in range(1, 20):
        guard.admitted(f"{H}/p/{i}.html", f"{H}/p/{i - 1}.html")
    assert named == []  # 19 self-fed: the budget is 10 x (1 + 10 // 10) = 20
    guard.admitted(f"{H}/p/20.html", f"{H}/p/19.html")
    assert [(p, why) for _, p, _, why in named] == [("/p/N.html", "budget")]
    assert guard.full(f"{H}/p/77.html")


def test_strikes_before_naming() -> None:
    guard, named = spaces()
    far = TODAY + dt.timedelta(days=400)
    for i in range(DATE_STRIKES - 1):
        a, b = far + dt.timedelta(days=i), far + dt.timedelta(days=i + 1)
        guard.admitted(f"{H}/cal/{b:%Y-%m-%d}", f"{H}/cal/{a:%Y-%m-%d}")
    assert named == []
    a = far + dt.timedelta(days=50)
    guard.admitted(f"{H}/cal/{a + dt.timedelta(days=1):%Y-%m-%d}", f"{H}/cal/{a:%Y-%m-%d}")
    assert [why for *_, why in named] == ["calendar"]


# -- the budget's evidence: what the pattern's own fetched pages were ----------------------
def _chain(guard: UrlSpaces, pages: int, text: Callable[[int], str | None], *,
           url: Callable[[int], str] = lambda n: f"{H}/c/{n}", dup: bool = False) -> int:
    """A chain whose page n links page n+1 and is then 'fetched'; returns the pages fetched."""
    guard.admitted(url(1), H + "/")
    for n in range(1, pages):
        guard.page(url(n), text(n), duplicate=dup and n > 1)
        if guard.full(url(n + 1)):
            return n
        guard.admitted(url(n + 1), url(n))
    return pages  # fmt: skip


def _story(n: int) -> str:
    words = ("cat", "dog", "moon", "tea", "rain", "boat", "owl", "fox")
    return f"Strip {n}: " + " ".join(words[(n * 2654435761 >> (3 * k)) % 8] for k in range(20))


_CHROME = " ".join(f"Department {d}: shoes, coats, hats and bags." for d in "ABCDEFGHIJKL")


def test_a_chain_of_real_pages_keeps_its_budget_growing() -> None:
    guard, named = spaces(max_urls=50)
    assert _chain(guard, 2000, _story) == 2000  # a webcomic: 40 budgets, each earned
    assert named == []


@pytest.mark.parametrize(
    ("what", "text", "dup", "url"),
    [
        ("the same page but its number", lambda n: f"Results page {n}. " + _CHROME, False, None),
        ("duplicates", _story, True, None),
        ("no text", lambda n: f"page {n}", False, None),
        ("errors", lambda n: None, False, None),
        ("a growing URL", _story, False, lambda n: f"{H}/q?x={'a' * n}"),
    ],
)  # fmt: skip
def test_a_chain_of_pages_that_are_not_real_is_named_at_its_budget(
    what: str, text: Callable[[int], str | None], dup: bool, url: Callable[[int], str] | None
) -> None:
    guard, named = spaces(max_urls=50)
    fetched = _chain(guard, 2000, text, dup=dup, **({"url": url} if url else {}))
    assert fetched <= 60, what
    assert [why for *_, why in named] == ["budget"], what


def test_a_few_bad_pages_among_real_ones_do_not_name_a_pattern() -> None:
    guard, named = spaces(max_urls=50)
    assert _chain(guard, 1000, lambda n: None if n % 20 == 0 else _story(n)) == 1000
    assert named == []


def test_patterns_named_in_an_earlier_run_are_named_again_and_odd_records_passed_over() -> None:
    named: list[tuple[str, ...]] = []
    spaces = UrlSpaces(20, lambda *a: named.append(a))
    records = [
        {"host": "shop.test", "pattern": "/s?page=*", "why": "budget"},
        {"host": "shop.test", "pattern": 7, "why": "budget"},  # not of the shape: passed over
        {"pattern": "/x/N"},
        {"host": "shop.test", "pattern": "/s?page=*", "why": "budget"},  # (twice: once)
    ]
    assert spaces.remember(records) == [("shop.test", "/s?page=*", "budget")]
    assert spaces.full("http://shop.test/s?page=5") and not spaces.full("http://shop.test/p/5")
    assert named == []  # unsaid: the earlier run said it
    assert UrlSpaces(None).remember(records) == []  # no budget rule: nothing to keep
