"""Page-level directives: <meta name="robots"> and X-Robots-Tag (Google's documented syntax)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from politecrawl.content.directives import (
    PageDirectives,
    from_meta,
    from_x_robots_tag,
    merge,
    read_date,
)

pytestmark = pytest.mark.unit

BOT = "acmebot"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("noindex", PageDirectives(noindex=True)),
        ("nofollow", PageDirectives(nofollow=True)),
        ("noindex, nofollow", PageDirectives(noindex=True, nofollow=True)),
        ("NOINDEX,NOFOLLOW", PageDirectives(noindex=True, nofollow=True)),
        ("noindex nofollow", PageDirectives(noindex=True, nofollow=True)),
        ("none", PageDirectives(noindex=True, nofollow=True)),
        ("None", PageDirectives(noindex=True, nofollow=True)),
        ("noarchive", PageDirectives(noarchive=True)),
        ("all", PageDirectives()),
        ("index, follow", PageDirectives()),
        ("nosnippet, max-snippet:20", PageDirectives()),
        ("", PageDirectives()),
        (" , ,noindex,, ", PageDirectives(noindex=True)),
    ],
)
def test_meta_robots_values(content: str, expected: PageDirectives) -> None:
    assert from_meta([("robots", content)], BOT) == expected


def test_meta_name_is_case_insensitive_and_scoped() -> None:
    assert from_meta([("ROBOTS", "noindex")], BOT).noindex
    assert from_meta([("AcmeBot", "nofollow")], BOT).nofollow
    assert from_meta([("googlebot", "noindex")], BOT) == PageDirectives()
    assert from_meta([("description", "noindex")], BOT) == PageDirectives()


def test_meta_several_tags_accumulate() -> None:
    got = from_meta([("robots", "noindex"), ("acmebot", "noarchive"), ("x", "nofollow")], BOT)
    assert got == PageDirectives(noindex=True, noarchive=True)


def test_meta_full_user_agent_as_token() -> None:
    assert from_meta([("acmebot", "noindex")], "acmebot/1.0 (+https://x)").noindex


def test_meta_empty_token_only_reads_robots() -> None:
    assert from_meta([("", "noindex")], "") == PageDirectives()
    assert from_meta([("robots", "noindex")], "").noindex


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["noindex"], PageDirectives(noindex=True)),
        (["noindex, nofollow"], PageDirectives(noindex=True, nofollow=True)),
        (["noindex", "nofollow"], PageDirectives(noindex=True, nofollow=True)),
        (["none"], PageDirectives(noindex=True, nofollow=True)),
        (["noarchive"], PageDirectives(noarchive=True)),
        (["googlebot: noindex"], PageDirectives()),
        (["googlebot: noindex, nofollow"], PageDirectives()),
        (["acmebot: noindex"], PageDirectives(noindex=True)),
        (["AcmeBot: noindex, nofollow"], PageDirectives(noindex=True, nofollow=True)),
        (["noarchive, googlebot: noindex"], PageDirectives(noarchive=True)),
        (["googlebot: noindex, acmebot: nofollow"], PageDirectives(nofollow=True)),
        (["googlebot: noindex", "nofollow"], PageDirectives(nofollow=True)),
        (["unavailable_after: 25 Jun 2010 15:00:00 PST"], PageDirectives(True, expired=True)),
        (["unavailable_after: Sunday, 01-Sep-2030 08:00:00 GMT"], PageDirectives()),
        (["max-snippet: 20, noindex"], PageDirectives(noindex=True)),
        (["max-image-preview: large"], PageDirectives()),
        (["all"], PageDirectives()),
        ([], PageDirectives()),
        ([""], PageDirectives()),
    ],
)
def test_x_robots_tag(values: list[str], expected: PageDirectives) -> None:
    assert from_x_robots_tag(values, BOT) == expected


def test_merge() -> None:
    a = PageDirectives(noindex=True)
    b = PageDirectives(nofollow=True)
    c = PageDirectives(noarchive=True)
    assert merge(a, b, c) == PageDirectives(True, True, True)
    assert merge(a) == a
    assert merge() == PageDirectives()
    assert merge(PageDirectives(), PageDirectives()) == PageDirectives()


def test_frozen() -> None:
    d = PageDirectives()
    with pytest.raises(AttributeError):
        d.noindex = True  # type: ignore[misc]


@given(st.lists(st.tuples(st.text(), st.text()), max_size=5), st.text(max_size=20))
def test_meta_never_raises(pairs: list[tuple[str, str]], token: str) -> None:
    assert isinstance(from_meta(pairs, token), PageDirectives)


@given(st.lists(st.text(), max_size=5), st.text(max_size=20))
def test_x_robots_tag_never_raises(values: list[str], token: str) -> None:
    assert isinstance(from_x_robots_tag(values, token), PageDirectives)


def test_bot_names_with_digits_and_dots_are_scopes() -> None:
    """A bot whose name has a digit is bound by its own name, as its robots.txt group binds
    it; another such bot's header (``mj12bot:``, ``bing.bot:``) does not bind us."""
    ours = "probe2bot/1.0 (+http://x.example/bot)"
    assert from_meta([("probe2bot", "noindex, nofollow")], ours) == PageDirectives(True, True)
    assert from_x_robots_tag(["mj12bot: noindex, nofollow"], ours) == PageDirectives()
    assert from_x_robots_tag(["bing.bot: noindex"], ours) == PageDirectives()
    assert from_x_robots_tag(["probe2bot: noarchive"], ours) == PageDirectives(noarchive=True)
    assert from_x_robots_tag(["noindex; nofollow"], ours) == PageDirectives(True, True)
    assert from_meta([("description", "noindex")], ours) == PageDirectives()


# -- unavailable_after (Google: "do not show this page in search results after the specified
# date/time", RFC 822, RFC 850, ISO 8601; "ignored if no valid date/time is specified")

NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z
PAST = PageDirectives(noindex=True, expired=True)


@pytest.mark.parametrize(
    ("text", "when"),
    [
        ("25 Jun 2010 15:00:00 PST", 1277506800.0),  # Google's own example
        ("Fri, 25 Jun 2010 15:00:00 GMT", 1277478000.0),  # RFC 822 / 1123
        ("Friday, 25-Jun-10 15:00:00 GMT", 1277478000.0),  # RFC 850
        ("Fri Jun 25 15:00:00 2010", 1277478000.0),  # asctime
        ("25-Aug-2007 15:00:00 EST", 1188072000.0),  # Google's 2007 announcement
        ("2010-06-25T15:00:00Z", 1277478000.0),  # ISO 8601
        ("2010-06-25T17:00:00+02:00", 1277478000.0),
        ("2010-06-25 15:00:00", 1277478000.0),  # no zone: UTC
        ("2010-06-25", 1277510400.0),  # a day alone: the whole of it
        ("20100625", 1277510400.0),
        ("25 Jun 2010", 1277510400.0),
    ],
)
def test_dates_in_the_widely_used_formats(text: str, when: float) -> None:
    assert read_date(text) == when


@pytest.mark.parametrize("text", ["", "someday", "2010-13-45", "32 Jun 2010 15:00:00", "1e9"])
def test_an_unreadable_date_is_none(text: str) -> None:
    assert read_date(text) is None


def test_unavailable_after_past_is_noindex_to_come_is_nothing() -> None:
    def x(*values: str) -> PageDirectives:
        return from_x_robots_tag(list(values), BOT, now=NOW)

    def meta(content: str, name: str = "robots") -> PageDirectives:
        return from_meta([(name, content)], BOT, now=NOW)

    assert x("unavailable_after: 2001-01-01") == PAST
    assert x("unavailable_after: 2999-01-01") == PageDirectives()
    assert x("Unavailable_After: Fri, 25 Jun 2010 15:00:00 GMT, nofollow") == PageDirectives(
        True, True, expired=True)  # fmt: skip
    assert x("acmebot: unavailable_after: 25 Jun 2010 15:00:00 PST") == PAST
    assert x("googlebot: unavailable_after: 2001-01-01") == PageDirectives()
    assert x("googlebot: noindex", "unavailable_after: 2001-01-01") == PAST
    assert x("noarchive, unavailable_after: 2001-01-01") == PageDirectives(
        True, noarchive=True, expired=True)  # fmt: skip
    assert x("unavailable_after: someday") == PageDirectives(bad_date="someday")
    assert meta("unavailable_after: 2001-01-01") == PAST
    assert meta("noarchive, unavailable_after: Fri, 25 Jun 2010 15:00:00 GMT; nofollow") == (
        PageDirectives(True, True, True, expired=True))  # fmt: skip
    assert meta("unavailable_after: 2023-11-14") == PageDirectives()  # that day is not over
    assert meta("unavailable_after: 2023-11-13") == PAST
    assert meta("unavailable_after: 2001-01-01", name="acmebot") == PAST
    assert meta("unavailable_after: 2001-01-01", name="googlebot") == PageDirectives()
    assert meta("unavailable_after:") == PageDirectives(bad_date="(none)")
    assert merge(PAST, PageDirectives(nofollow=True)) == PageDirectives(True, True, expired=True)


@given(st.text(max_size=40), st.sampled_from(["", "acmebot: ", "otherbot: ", "noindex, "]))
def test_any_date_is_read_without_raising(date: str, before: str) -> None:
    text = f"{before}unavailable_after: {date}"
    for got in (from_x_robots_tag([text], BOT, now=NOW), from_meta([("robots", text)], BOT, NOW)):
        assert got.noindex or not got.expired  # past is always noindex
        if read_date(date) is None and not before and "," not in date and ";" not in date:
            assert not got.expired and got.bad_date  # ignored, and said
