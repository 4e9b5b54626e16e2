"""Page-level directives: <meta name="robots"> and X-Robots-Tag (Google's documented syntax)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from politecrawl.content.directives import PageDirectives, from_meta, from_x_robots_tag, merge

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
        (["unavailable_after: 25 Jun 2010 15:00:00 PST"], PageDirectives()),
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
