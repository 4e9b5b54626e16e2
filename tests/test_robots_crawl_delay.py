"""Crawl-delay as sites write it: every form a number can take is honoured, the slower
reading when in doubt, and a value the crawl does not take as written is a warning.

An outside probe found ``1e9``, ``10,5``, ``7 s``, ``1.5e2`` and ``1e3`` silently dropped: the
site got a request every --min-delay instead of the pace it asked for."""

from __future__ import annotations

import logging
import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from politecrawl.robots.rules import MAX_CRAWL_DELAY_S, RobotsRules

pytestmark = pytest.mark.unit


def delay_of(value: str) -> float | None:
    return RobotsRules.parse(f"User-agent: *\nCrawl-delay: {value}\n").crawl_delay("acmebot")


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("10", 10.0),
        ("0.5", 0.5),
        (".5", 0.5),
        ("5.", 5.0),
        ("+3", 3.0),
        ("1e3", 1000.0),  # exponent forms: a number like any other
        ("1.5e2", 150.0),
        ("1E2", 100.0),
        ("25e-1", 2.5),
        ("10,5", 10.5),  # a decimal comma (most of Europe): 10.5, not 10
        ("0,25", 0.25),
        ("1,500", 1500.0),  # 1.5 or 1500? commas grouping thousands: the slower reading
        ("7 s", 7.0),  # a unit after the number
        ("7s", 7.0),
        ("7 seconds", 7.0),
        ("2 min", 120.0),  # a larger unit multiplies: the slower reading
        ("1 hour", 3600.0),
        ("500ms", 500.0),  # seconds is what Crawl-delay counts; "ms" is not taken faster
        ("10 ; be gentle", 10.0),  # junk after a number: the number
        ("1e9", MAX_CRAWL_DELAY_S),  # huge: honoured as a day, not dropped
        ("99999999999999999999999999", MAX_CRAWL_DELAY_S),
        ("1e999", MAX_CRAWL_DELAY_S),  # overflows a float; still a number, still huge
        ("3 days", MAX_CRAWL_DELAY_S),
        ("-5", None),  # negative, not a number, NaN, infinity: ignored (the floor applies)
        ("-0.5", None),
        ("nan", None),
        ("NaN", None),
        ("inf", None),
        ("infinity", None),
        ("soon", None),
        ("", None),
    ],
)
def test_crawl_delay_forms(value: str, seconds: float | None) -> None:
    assert delay_of(value) == seconds


def test_the_largest_value_of_a_group_wins_in_any_form() -> None:
    rules = RobotsRules.parse("User-agent: *\nCrawl-delay: 1e1\nCrawl-delay: 7 s\nCrawl-delay: x\n")
    assert rules.crawl_delay("acmebot") == 10.0


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("1e9", "is over a day: honoured as 86400 s"),
        ("10,5", "read as 10.5 s (a decimal comma)"),
        ("7 s", "read as 7 s (unit 's')"),
        ("abc", "is not a number: ignored"),
        ("-5", "is negative: ignored"),
        ("nan", "is not a number: ignored"),
    ],
)
def test_a_value_not_taken_as_written_is_a_warning_with_its_line(
    caplog: pytest.LogCaptureFixture, value: str, said: str
) -> None:
    body = f"User-agent: *\nDisallow: /x\nCrawl-delay: {value}\n"
    with caplog.at_level(logging.WARNING, logger="politecrawl"):
        rules = RobotsRules.parse(body, origin="http://a.example")
        rules.crawl_delay("acmebot")
        rules.crawl_delay("acmebot")  # said once, not at every question
    assert [r.getMessage() for r in caplog.records] == [
        f"robots.txt of http://a.example, line 3: Crawl-delay {value!r} {said}"
    ]


def test_plain_values_and_other_bots_groups_say_nothing(caplog: pytest.LogCaptureFixture) -> None:
    body = "User-agent: otherbot\nDisallow: /x\nCrawl-delay: soon\n\nUser-agent: *\n"
    body += "Crawl-delay: 2.5\n"
    with caplog.at_level(logging.WARNING, logger="politecrawl"):
        assert RobotsRules.parse(body).crawl_delay("acmebot") == 2.5
    assert caplog.records == []


@given(st.text(max_size=40))
def test_any_value_is_none_or_a_finite_delay_within_the_cap(value: str) -> None:
    delay = delay_of(value.replace("\n", " ").replace("\r", " ").replace("#", " "))
    assert delay is None or (math.isfinite(delay) and 0 <= delay <= MAX_CRAWL_DELAY_S)


@given(st.floats(min_value=0, max_value=1e300, allow_nan=False), st.sampled_from(["g", "e"]))
@example(1.984375, "g")  # written 1.98438: the test compared it with the unwritten number
def test_every_number_python_prints_is_read_back(number: float, fmt: str) -> None:
    """Whatever way a number is written (exponent or not), it is honoured, capped at a day.
    (What is written: ``g`` and ``e`` keep 6 significant digits, so 1.984375 is 1.98438.)"""
    written = format(number, fmt)
    assert delay_of(written) == pytest.approx(min(float(written), MAX_CRAWL_DELAY_S))
