"""polite.statements and polite.usage: the parsers on the specifications' own examples, the
resolution table, and malformed lines (hypothesis): a bad line is ignored and logged, the
others still apply."""

from __future__ import annotations

import json
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from multidict import CIMultiDict

from politecrawl.polite import statements as st
from politecrawl.polite.usage import (
    Purpose,
    RobotsUsage,
    TdmFile,
    UsageBook,
    covers_every_path,
    decide,
)
from politecrawl.robots.rules import RobotsRules, UsageLine

pytestmark = pytest.mark.unit

TOKEN = "testbot"
ORIGIN = "https://example.com"

# draft-ietf-aipref-attach-04 §3.4 (Example), verbatim
ATTACH_EXAMPLE = b"""User-Agent: *
Allow: /
Disallow: /never/
Content-Usage: train-ai=n
Content-Usage: /ai-ok/ train-ai=y

User-Agent: ExampleBot
Allow: /
Content-Usage: train-ai=y
"""

# TDMRep §6.1.2 (Examples), the second file
TDMREP_EXAMPLE = b"""[
  {"location": "/directory-a/", "tdm-reservation": 1},
  {"location": "/directory-b/html/", "tdm-reservation": 1,
   "tdm-policy": "https://provider.com/policies/policy.json"},
  {"location": "/directory-b/images/*.jpg", "tdm-reservation": 0}
]"""


def book(purpose: str, token: str = TOKEN) -> UsageBook:
    return UsageBook(Purpose(purpose), token)


def page_usage(
    purpose: str,
    robots: bytes = b"",
    headers: dict[str, str] | None = None,
    metas: list[tuple[str, str]] | None = None,
    path: str = "/p",
) -> list[str]:
    b = book(purpose)
    rules = RobotsRules.parse(robots) if robots else None
    usage = b.for_page(ORIGIN, ORIGIN + path, rules, CIMultiDict(headers or {}), metas or [])
    return usage.sources


def test_vocabulary_examples() -> None:
    # vocab-07 §6: "train-ai=y, search=n"; §6.5.1: a key repeated, last wins, non-tokens unknown
    assert st.vocabulary("train-ai=y, search=n") == {"train-ai": True, "search": False}
    assert st.vocabulary('train-ai=y, train-ai, search=n, search="n"') == {}
    # §6.5.2: parameters are ignored; only those of the selected value apply
    assert st.vocabulary("train-ai;allow=n, train-ai=y") == {"train-ai": True}
    assert st.vocabulary('train-ai;has;parameters="?";') is None  # trailing ";" fails RFC 9651
    assert st.vocabulary("Train-AI=n") is None  # uppercase keys fail to parse: all unknown
    assert st.vocabulary("train-ai=maybe, unknown-label=n") == {"unknown-label": False}


def test_attach_robots_example() -> None:
    # attach-04 §3.4's table: /test train-ai=n, /ai-ok/test train-ai=y, /never/test N/A
    rules = RobotsRules.parse(ATTACH_EXAMPLE)
    b = book("ai-train")
    assert b.for_page(ORIGIN, ORIGIN + "/test", rules, CIMultiDict(), []).refused
    assert not b.for_page(ORIGIN, ORIGIN + "/ai-ok/test", rules, CIMultiDict(), []).refused
    assert not rules.is_allowed(TOKEN, ORIGIN + "/never/test")  # never fetched at all
    eb = book("ai-train", "examplebot")  # the second group: train-ai=y
    assert not eb.for_page(ORIGIN, ORIGIN + "/test", rules, CIMultiDict(), []).refused
    # a site-wide refusal (a rule at /) is found before fetching; /ai-ok/ is not refused
    assert b.site_refusal(ORIGIN, ORIGIN + "/test", rules) is not None
    assert b.site_refusal(ORIGIN, ORIGIN + "/ai-ok/test", rules) is None


def test_robots_rule_split() -> None:
    assert st.robots_rule("/ai-ok/ train-ai=y") == ("/ai-ok/", "train-ai=y")
    assert st.robots_rule("/x\ttrain-ai=n") == ("/x", "train-ai=n")
    assert st.robots_rule("train-ai=n") == (None, "train-ai=n")


def test_equal_paths_combine_most_restrictive() -> None:
    robots = b"User-agent: *\nContent-Usage: /a train-ai=y\nContent-Usage: /a train-ai=n\n"
    assert page_usage("ai-train", robots, path="/a/x") == ["robots:content-usage"]


def test_content_signal_examples() -> None:
    # contentsignals.org / Cloudflare's managed robots.txt
    assert st.content_signal("search=yes, ai-train=no") == {"search": True, "ai-train": False}
    robots = b"User-Agent: *\nContent-Signal: ai-train=no, search=yes, ai-input=yes\nAllow: /\n"
    assert page_usage("ai-train", robots) == ["robots:content-signal"]
    assert page_usage("search", robots) == []
    assert page_usage("ai-input", robots) == []
    assert page_usage("ai-input", b"User-agent: *\nContent-Signal: ai-input=no\n") != []
    assert page_usage("search", b"User-agent: *\nContent-Signal: search=no\n") != []
    assert st.content_signal("ai-train=perhaps") is None
    assert st.content_signal("ai-train no") is None


def test_tdmrep_examples() -> None:
    parsed = st.tdmrep_file(TDMREP_EXAMPLE)
    assert parsed is not None and parsed[1] == 0
    rules, _ = parsed
    assert [r.reserved for r in rules] == [True, True, False]
    assert rules[1].policy == "https://provider.com/policies/policy.json"
    b = book("ai-train")
    b.record_tdmrep(ORIGIN, 200, TDMREP_EXAMPLE)
    sources = [
        b.for_page(ORIGIN, ORIGIN + path, None, CIMultiDict(), []).sources
        for path in ("/directory-a/x.pdf", "/directory-b/html/p.html",
                     "/directory-b/images/x.jpg", "/elsewhere")
    ]  # fmt: skip
    assert sources == [["tdmrep"], ["tdmrep"], [], []]
    # §6.1.2, the first file: the whole site reserved, so it is not fetched for mining
    b.record_tdmrep(ORIGIN, 200, b'[{"location": "/", "tdm-reservation": 1}]')
    assert b.site_refusal(ORIGIN, ORIGIN + "/any", None) is not None
    assert book("search").site_refusal(ORIGIN, ORIGIN + "/any", None) is None
    # not a JSON array, a 404, an entry without location: no file, or that entry skipped
    assert st.tdmrep_file(b'{"location": "/"}') is None
    assert b.record_tdmrep(ORIGIN, 404, b"") == "tdmrep:none"
    assert st.tdmrep_file(b'[{"tdm-reservation": 1}, {"location": "/", "tdm-reservation": 2}]'
                          ) == ([], 2)  # fmt: skip


def tdm_book(location: str, reservation: object = 1) -> UsageBook:
    b = book("ai-train")
    rule = {"location": location, "tdm-reservation": reservation}
    b.record_tdmrep(ORIGIN, 200, json.dumps([rule]).encode())
    return b


def test_a_location_matching_every_path_refuses_the_whole_site() -> None:
    # TDMRep §6.1: a location is a pattern, read as robots.txt's (RFC 9309 §2.2.3)
    for location in ("/", "/*", "*", "/*$", "**", "*/", "*$"):
        assert covers_every_path(location), location
        b = tdm_book(location)
        for path in ("/", "/any/page.html", "/x?q=1"):
            assert b.site_refusal(ORIGIN, ORIGIN + path, None) is not None, (location, path)
    # a pattern for some paths refuses those pages, once fetched, not the site
    for location, path in (("/$", "/"), ("/private/*", "/private/a"), ("*.pdf", "/a.pdf"),
                           ("*/$", "/dir/"), ("/*/x", "/a/x")):  # fmt: skip
        assert not covers_every_path(location), location
        b = tdm_book(location)
        assert b.for_page(ORIGIN, ORIGIN + path, None, CIMultiDict(), []).refused
        assert b.site_refusal(ORIGIN, ORIGIN + path, None) is None, location
    assert not covers_every_path(None) and not covers_every_path("") and not covers_every_path("$")


@given(body=hs.text("/*a", max_size=6), anchored=hs.booleans(),
       path=hs.text("/a*b", max_size=6))  # fmt: skip
def test_covers_every_path_is_what_the_matcher_says(body: str, anchored: bool, path: str) -> None:
    location = body + "$" * anchored
    tdm = TdmFile.of([st.TdmRule(location, True)])
    if covers_every_path(location):
        assert tdm.statement_for(ORIGIN + "/" + path) is not None
    elif body:  # (an empty pattern is no rule) one of two paths is left out
        assert None in (tdm.statement_for(ORIGIN + "/"), tdm.statement_for(ORIGIN + "/zz"))


def test_a_location_is_text_matched_against_the_utf8_path() -> None:
    assert tdm_book("/\u00fcn/*").site_refusal(ORIGIN, ORIGIN + "/%C3%BCn/x", None) is None
    assert tdm_book("/\u00fcn/*").for_page(ORIGIN, ORIGIN + "/%C3%BCn/x", None, CIMultiDict(),
                                           []).refused  # fmt: skip
    euro = tdm_book("/\u20ac/*")  # (outside latin-1: once a crash of the crawl)
    assert euro.for_page(ORIGIN, ORIGIN + "/%E2%82%AC/x", None, CIMultiDict(), []).refused
    assert not euro.for_page(ORIGIN, ORIGIN + "/x", None, CIMultiDict(), []).refused
    assert st.tdmrep_file(b'[{"location": "private/*", "tdm-reservation": 1}]') == ([], 1)


def test_every_json_spelling_of_a_reservation_is_read_alike(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # TDMRep §5.1: "a boolean value", 1 or 0; other values are protocol errors (unset)
    for value, reserved in ((1, True), (1.0, True), (True, True), ("1", True), (" 1 ", True),
                            (0, False), (0.0, False), (False, False), ("0", False)):  # fmt: skip
        assert st.tdm_reservation(value) is reserved, value
    for bad in (2, -1, 0.5, float("nan"), "yes", "true", "1.0", "", None, [1], {"v": 1}):
        assert st.tdm_reservation(bad) is None, bad
    values = ("1", "1.0", "true", '"0"')
    rules = [f'{{"location": "/{i}", "tdm-reservation": {v}}}' for i, v in enumerate(values)]
    body = f"[{', '.join(rules)}]".encode()
    parsed = st.tdmrep_file(body)
    assert parsed is not None and parsed[1] == 0
    assert [(r.reserved, r.spelled) for r in parsed[0]] == [
        (True, None), (True, "1.0"), (True, "true"), (False, '"0"')]
    with caplog.at_level(logging.WARNING, logger="politecrawl"):
        book("ai-train").record_tdmrep(ORIGIN, 200, body)
    assert 'tdm-reservation written 1.0, true, "0" (TDMRep: 0 or 1): read as 1, 1, 0' in caplog.text


def test_tdm_precedence_file_then_header_then_meta() -> None:
    # TDMRep §6.7: the header supersedes the file, the meta element supersedes the header
    b = book("ai-train")
    b.record_tdmrep(ORIGIN, 200, b'[{"location": "/", "tdm-reservation": 0}]')

    def sources(headers: dict[str, str], metas: list[tuple[str, str]]) -> list[str]:
        return b.for_page(ORIGIN, ORIGIN + "/p", None, CIMultiDict(headers), metas).sources

    assert sources({}, []) == []
    assert sources({"tdm-reservation": "1"}, []) == ["header:tdm-reservation"]
    assert sources({"tdm-reservation": "1"}, [("tdm-reservation", "0")]) == []
    assert sources({}, [("tdm-reservation", "1")]) == ["meta:tdm-reservation"]
    assert sources({"tdm-reservation": "yes"}, []) == []  # a protocol error: unset
    # a reservation is text and data mining: not search, not archive
    for purpose in ("search", "archive"):
        assert page_usage(purpose, headers={"tdm-reservation": "1"}) == []
    assert page_usage("ai-input", headers={"tdm-reservation": "1"}) != []


def test_noai_and_noimageai() -> None:
    assert page_usage("ai-train", metas=[("robots", "noai")]) == ["meta:robots"]
    assert page_usage("ai-input", headers={"X-Robots-Tag": "noai"}) == ["header:x-robots-tag"]
    assert page_usage("ai-train", headers={"X-Robots-Tag": "otherbot: noai"}) == []
    assert page_usage("ai-train", headers={"X-Robots-Tag": f"{TOKEN}: noai"}) != []
    assert page_usage("ai-train", metas=[("googlebot", "noai")]) == []
    assert page_usage("search", metas=[("robots", "noai")]) == []
    assert page_usage("ai-train", metas=[("robots", "noimageai")]) == []  # images only


def test_aipref_legacy_labels_and_hierarchy() -> None:
    # drafts -02..-04 nested categories under "bots"/"all": a child without a preference
    # takes its parent's; a child's own preference wins over the parent's
    assert page_usage("archive", headers={"Content-Usage": "bots=n"}) != []
    assert page_usage("ai-train", headers={"Content-Usage": "bots=n, train-ai=y"}) == []
    assert page_usage("ai-train", headers={"Content-Usage": "train-genai=n"}) != []
    assert page_usage("ai-input", headers={"Content-Usage": "ai-use=n"}) != []
    assert page_usage("search", headers={"Content-Usage": "train-ai=n"}) == []
    assert page_usage("search", headers={"Content-Usage": "search=n"}) != []


def test_most_restrictive_wins_across_sources() -> None:
    robots = b"User-agent: *\nContent-Usage: train-ai=y\n"
    got = page_usage("ai-train", robots, headers={"Content-Usage": "train-ai=n"})
    assert got == ["header:content-usage"]
    assert decide(Purpose.AI_TRAIN, []).refused is False


# -- malformed lines ---------------------------------------------------------------------------

GOOD = "Content-Usage: /good/ train-ai=n"
junk = hs.text(hs.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n#"),
               max_size=60)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(key=hs.sampled_from(["Content-Usage", "content-signal", "CONTENT-USAGE"]), value=junk)
def test_a_malformed_line_is_ignored_and_the_others_still_apply(key: str, value: str) -> None:
    robots = f"User-agent: *\nAllow: /\n{key}: {value}\n{GOOD}\n".encode()
    rules = RobotsRules.parse(robots)
    usage = RobotsUsage(rules.usage_lines(TOKEN), ORIGIN)  # never raises
    found = usage.statements_for(ORIGIN + "/good/page")
    assert any(s.where == "/good/" and s.prefs == {"ai-train": False} for s in found)
    for line in usage.bad:  # what was ignored is exactly what does not parse
        _, text = st.robots_rule(line.value)
        parse = st.vocabulary if line.key == "content-usage" else st.content_signal
        assert not text or parse(text) is None


@settings(max_examples=200, deadline=None)
@given(value=junk)
def test_any_header_value_is_read_without_raising(value: str) -> None:
    for name in ("Content-Usage", "tdm-reservation", "X-Robots-Tag"):
        page_usage("ai-train", headers={name: value}, metas=[("tdm-reservation", value)])


@given(body=hs.binary(max_size=200))
def test_any_tdmrep_body_is_read_without_raising(body: bytes) -> None:
    book("ai-train").record_tdmrep(ORIGIN, 200, body)


def test_a_bad_line_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    lines = [UsageLine("content-usage", 3, "/x Train-AI=n"), UsageLine("content-usage", 4, "")]
    with caplog.at_level(logging.WARNING, logger="politecrawl"):
        usage = RobotsUsage(lines, ORIGIN)
    assert [b.line for b in usage.bad] == [3, 4]
    assert "line 3" in caplog.text and "Train-AI=n" in caplog.text and "ignored" in caplog.text


def test_a_warning_quotes_robots_txt_as_the_utf8_it_is(caplog: pytest.LogCaptureFixture) -> None:
    robots = "User-agent: *\nContent-Signal: ai-train=ñø\nContent-Usage: /ünï/ train-ai=n\n"
    rules = RobotsRules.parse(robots.encode())
    with caplog.at_level(logging.WARNING, logger="politecrawl"):
        usage = RobotsUsage(rules.usage_lines(TOKEN), ORIGIN)
    assert "line 2: content-signal value 'ai-train=ñø' not understood" in caplog.text
    assert "Ã" not in caplog.text
    # the path is matched as the UTF-8 bytes it is, and recorded as written
    found = usage.statements_for(ORIGIN + "/%C3%BCn%C3%AF/page")
    assert [(s.where, s.text) for s in found] == [("/ünï/", "train-ai=n")]


def test_a_usage_line_outside_any_group_is_ignored_and_said(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # aipref-attach-04 §3: Content-Usage is a group rule; before any User-agent it is no one's
    robots = b"Content-Usage: train-ai=n\nContent-Signal: ai-train=no\n\nUser-agent: *\nAllow: /\n"
    b = book("ai-train")
    with caplog.at_level(logging.WARNING, logger="politecrawl"):
        got = b.for_page(ORIGIN, ORIGIN + "/p", RobotsRules.parse(robots), CIMultiDict(), [])
    assert got.sources == [] and b.bad_lines == 2
    assert "line 1: content-usage 'train-ai=n' outside any group" in caplog.text
    assert "line 2: content-signal 'ai-train=no' outside any group" in caplog.text
    # in a group, the same lines apply
    grouped = b"User-agent: *\nContent-Usage: train-ai=n\n"
    assert page_usage("ai-train", grouped) == ["robots:content-usage"]
