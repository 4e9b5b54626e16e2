"""Conformance of politecrawl.robots.rules with RFC 9309 and Google's reference suite.

``GOOGLE_CASES`` holds every ``IsUserAgentAllowed`` assertion of
google/robotstxt ``robots_test.cc`` (145 of them), keyed by the original TEST
name; one pytest function per TEST runs them. ``bench/robots.py`` imports the
same table to score protego, so both parsers are measured on identical data.

Four assertions are deliberately answered differently (``ours=``), each because
the brief and RFC 9309 ask for something Google's matcher leaves to its caller:

* ID_Encoding x3: RFC 9309 §2.2.2 normalises request paths too (non-ASCII is
  percent-encoded, %XX of unreserved characters decoded), so "/foo/bar/ツ"
  matches "/foo/bar/%E3%83%84" and "/foo/bar/baz" matches "%62%61%7A" (the
  RFC's own table). Google expects callers to pre-encode URLs.
* GoogleOnly_AcceptUserAgentUpToFirstSpace x1: our API takes a User-Agent
  string and reduces it to its product token, so "Foo Bar" is FooBot "Foo".

Google's non-URL TESTs (valid agents, line numbers, BOM, sitemaps, path
extraction, pattern escaping) follow, then RFC 9309 examples and our own edges.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from politecrawl.robots.match import Verdict, normalise_pattern, request_path
from politecrawl.robots.rules import RobotsRules, product_token

pytestmark = pytest.mark.unit


@dataclass(frozen=True, slots=True)
class Case:
    """One EXPECT of robots_test.cc; ``ours`` is set only for a documented deviation."""

    robotstxt: str
    agent: str
    url: str
    google: bool
    ours: bool | None = None

    @property
    def expected(self) -> bool:
        return self.google if self.ours is None else self.ours


def _cases(robotstxt: str, agent: str, *expectations: tuple[str, bool]) -> list[Case]:
    return [Case(robotstxt, agent, url, want) for url, want in expectations]


_MAX_LINE = 2083 * 8


def _line_too_long_cases() -> list[Case]:
    allow, disallow, eol = "allow: ", "disallow: ", 1
    out: list[Case] = []
    robots = "user-agent: FooBot\n"
    longline = "/x/"
    longline += "a" * (_MAX_LINE - len(longline) - len(disallow) + eol - len(longline))
    robots += disallow + longline + "/qux\n"
    out += _cases(
        robots,
        "FooBot",
        ("http://foo.bar/fux", True),
        ("http://foo.bar" + longline + "/fux", False),
    )
    robots = "user-agent: FooBot\ndisallow: /\n"
    size = _MAX_LINE - 3 - len(allow) + eol
    longline_a = "/x/" + "a" * (size - 3)
    longline_b = "/x/" + "b" * (size - 3)
    robots += allow + longline_a + "/qux\n" + allow + longline_b + "/qux\n"
    out += _cases(
        robots,
        "FooBot",
        ("http://foo.bar/", False),
        ("http://foo.bar" + longline_a + "/qux", True),
        ("http://foo.bar" + longline_b + "/fux", True),
    )
    return out


_GROUPS = (
    "allow: /foo/bar/\n"
    "\n"
    "user-agent: FooBot\n"
    "disallow: /\n"
    "allow: /x/\n"
    "user-agent: BarBot\n"
    "disallow: /\n"
    "allow: /y/\n"
    "\n"
    "\n"
    "allow: /w/\n"
    "user-agent: BazBot\n"
    "\n"
    "user-agent: FooBot\n"
    "allow: /z/\n"
    "disallow: /\n"
)
_UPPER = "USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n"
_LOWER = "user-agent: FooBot\nallow: /x/\ndisallow: /\n"
_CAMEL = "uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n"
_UA_UPPER = "User-Agent: FOO BAR\nAllow: /x/\nDisallow: /\n"
_UA_LOWER = "User-Agent: foo bar\nAllow: /x/\nDisallow: /\n"
_UA_CAMEL = "User-Agent: FoO bAr\nAllow: /x/\nDisallow: /\n"
_PAGE = "http://foo.bar/x/page.html"
_FOO = "user-agent: FooBot\n"
_FISH = _FOO + "disallow: /\nallow: /fish\n"
_FISH_STAR = _FOO + "disallow: /\nallow: /fish*\n"
_FISH_SLASH = _FOO + "disallow: /\nallow: /fish/\n"
_PHP = _FOO + "disallow: /\nallow: /*.php\n"
_PHP_END = _FOO + "disallow: /\nallow: /*.php$\n"
_FISH_PHP = _FOO + "disallow: /\nallow: /fish*.php\n"
_ENC = "User-agent: FooBot\nDisallow: /\n"

GOOGLE_CASES: dict[str, list[Case]] = {
    "GoogleOnly_SystemTest": [
        Case("", "FooBot", "", True),
        Case(_FOO + "disallow: /\n", "", "", True),
        Case(_FOO + "disallow: /\n", "FooBot", "", False),
        Case("", "", "", True),
    ],
    "ID_LineSyntax_Line": [
        Case(_FOO + "disallow: /\n", "FooBot", "http://foo.bar/x/y", False),
        Case("foo: FooBot\nbar: /\n", "FooBot", "http://foo.bar/x/y", True),
        Case("user-agent FooBot\ndisallow /\n", "FooBot", "http://foo.bar/x/y", False),
    ],
    "ID_LineSyntax_Groups": [
        Case(_GROUPS, "FooBot", "http://foo.bar/x/b", True),
        Case(_GROUPS, "FooBot", "http://foo.bar/z/d", True),
        Case(_GROUPS, "FooBot", "http://foo.bar/y/c", False),
        Case(_GROUPS, "BarBot", "http://foo.bar/y/c", True),
        Case(_GROUPS, "BarBot", "http://foo.bar/w/a", True),
        Case(_GROUPS, "BarBot", "http://foo.bar/z/d", False),
        Case(_GROUPS, "BazBot", "http://foo.bar/z/d", True),
        Case(_GROUPS, "FooBot", "http://foo.bar/foo/bar/", False),
        Case(_GROUPS, "BarBot", "http://foo.bar/foo/bar/", False),
        Case(_GROUPS, "BazBot", "http://foo.bar/foo/bar/", False),
    ],
    "ID_LineSyntax_Groups_OtherRules": [
        *_cases(
            "User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n",
            "FooBot",
            ("http://foo.bar/", False),
        ),
        *_cases(
            "User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n",
            "BarBot",
            ("http://foo.bar/", False),
        ),
        *_cases(
            "User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n",
            "FooBot",
            ("http://foo.bar/", False),
        ),
        *_cases(
            "User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n",
            "BarBot",
            ("http://foo.bar/", False),
        ),
    ],
    "ID_REPLineNamesCaseInsensitive": [
        Case(_UPPER, "FooBot", "http://foo.bar/x/y", True),
        Case(_LOWER, "FooBot", "http://foo.bar/x/y", True),
        Case(_CAMEL, "FooBot", "http://foo.bar/x/y", True),
        Case(_UPPER, "FooBot", "http://foo.bar/a/b", False),
        Case(_LOWER, "FooBot", "http://foo.bar/a/b", False),
        Case(_CAMEL, "FooBot", "http://foo.bar/a/b", False),
    ],
    "ID_UserAgentValueCaseInsensitive": [
        Case(robots, agent, url, want)
        for agent in ("Foo", "foo")
        for url, want in (("http://foo.bar/x/y", True), ("http://foo.bar/a/b", False))
        for robots in (_UA_UPPER, _UA_LOWER, _UA_CAMEL)
    ],
    "GoogleOnly_AcceptUserAgentUpToFirstSpace": [
        Case(
            "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n",
            "Foo",
            "http://foo.bar/x/y",
            True,
        ),
        # Deviation: "Foo Bar" is a User-Agent string whose product token is "Foo".
        Case(
            "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n",
            "Foo Bar",
            "http://foo.bar/x/y",
            False,
            ours=True,
        ),
    ],
    "ID_GlobalGroups_Secondary": [
        Case("", "FooBot", "http://foo.bar/x/y", True),
        Case(
            "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n",
            "FooBot",
            "http://foo.bar/x/y",
            False,
        ),
        Case(
            "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n",
            "BarBot",
            "http://foo.bar/x/y",
            True,
        ),
        Case(
            "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\n"
            "user-agent: BazBot\ndisallow: /\n",
            "QuxBot",
            "http://foo.bar/x/y",
            True,
        ),
    ],
    "ID_AllowDisallow_Value_CaseSensitive": [
        Case(_FOO + "disallow: /x/\n", "FooBot", "http://foo.bar/x/y", False),
        Case(_FOO + "disallow: /X/\n", "FooBot", "http://foo.bar/x/y", True),
    ],
    "ID_LongestMatch": [
        Case(_FOO + "disallow: /x/page.html\nallow: /x/\n", "FooBot", _PAGE, False),
        Case(_FOO + "allow: /x/page.html\ndisallow: /x/\n", "FooBot", _PAGE, True),
        Case(_FOO + "allow: /x/page.html\ndisallow: /x/\n", "FooBot", "http://foo.bar/x/", False),
        Case(_FOO + "disallow: \nallow: \n", "FooBot", _PAGE, True),
        Case(_FOO + "disallow: /\nallow: /\n", "FooBot", _PAGE, True),
        Case(_FOO + "disallow: /x\nallow: /x/\n", "FooBot", "http://foo.bar/x", False),
        Case(_FOO + "disallow: /x\nallow: /x/\n", "FooBot", "http://foo.bar/x/", True),
        Case(_FOO + "disallow: /x/page.html\nallow: /x/page.html\n", "FooBot", _PAGE, True),
        Case(
            _FOO + "allow: /page\ndisallow: /*.html\n", "FooBot", "http://foo.bar/page.html", False
        ),
        Case(_FOO + "allow: /page\ndisallow: /*.html\n", "FooBot", "http://foo.bar/page", True),
        Case(_FOO + "allow: /x/page.\ndisallow: /*.html\n", "FooBot", _PAGE, True),
        Case(
            _FOO + "allow: /x/page.\ndisallow: /*.html\n",
            "FooBot",
            "http://foo.bar/x/y.html",
            False,
        ),
        Case(
            "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n",
            "FooBot",
            "http://foo.bar/x/page",
            True,
        ),
        Case(
            "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n",
            "FooBot",
            "http://foo.bar/y/page",
            False,
        ),
    ],
    "ID_Encoding": [
        Case(
            _ENC + "Allow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n",
            "FooBot",
            "http://foo.bar/foo/bar?qux=taz&baz=http://foo.bar?tar&par",
            True,
        ),
        Case(_ENC + "Allow: /foo/bar/ツ\n", "FooBot", "http://foo.bar/foo/bar/%E3%83%84", True),
        # Deviation (RFC 9309 §2.2.2): non-ASCII in the request path is percent-encoded.
        Case(
            _ENC + "Allow: /foo/bar/ツ\n", "FooBot", "http://foo.bar/foo/bar/ツ", False, ours=True
        ),
        Case(
            _ENC + "Allow: /foo/bar/%E3%83%84\n", "FooBot", "http://foo.bar/foo/bar/%E3%83%84", True
        ),
        # Deviation (RFC 9309 §2.2.2): same normalisation as above.
        Case(
            _ENC + "Allow: /foo/bar/%E3%83%84\n",
            "FooBot",
            "http://foo.bar/foo/bar/ツ",
            False,
            ours=True,
        ),
        # Deviation (RFC 9309 §2.2.2 table): %62%61%7A is unreserved, so it is "baz".
        Case(
            _ENC + "Allow: /foo/bar/%62%61%7A\n",
            "FooBot",
            "http://foo.bar/foo/bar/baz",
            False,
            ours=True,
        ),
        Case(
            _ENC + "Allow: /foo/bar/%62%61%7A\n", "FooBot", "http://foo.bar/foo/bar/%62%61%7A", True
        ),
    ],
    "ID_SpecialCharacters": [
        *_cases(
            "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n",
            "FooBot",
            ("http://foo.bar/foo/bar/quz", False),
            ("http://foo.bar/foo/quz", True),
            ("http://foo.bar/foo//quz", True),
            ("http://foo.bar/foo/bax/quz", True),
        ),
        *_cases(
            "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n",
            "FooBot",
            ("http://foo.bar/foo/bar", False),
            ("http://foo.bar/foo/bar/qux", True),
            ("http://foo.bar/foo/bar/", True),
            ("http://foo.bar/foo/bar/baz", True),
        ),
        *_cases(
            "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n",
            "FooBot",
            ("http://foo.bar/foo/bar", True),
            ("http://foo.bar/foo/quz", False),
        ),
    ],
    "GoogleOnly_IndexHTMLisDirectory": _cases(
        "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n",
        "foobot",
        ("http://foo.com/allowed-slash/", True),
        ("http://foo.com/allowed-slash/index.htm", False),
        ("http://foo.com/allowed-slash/index.html", True),
        ("http://foo.com/anyother-url", False),
    ),
    "GoogleOnly_LineTooLong": _line_too_long_cases(),
    "GoogleOnly_DocumentationChecks": [
        *_cases(
            _FISH,
            "FooBot",
            ("http://foo.bar/bar", False),
            ("http://foo.bar/fish", True),
            ("http://foo.bar/fish.html", True),
            ("http://foo.bar/fish/salmon.html", True),
            ("http://foo.bar/fishheads", True),
            ("http://foo.bar/fishheads/yummy.html", True),
            ("http://foo.bar/fish.html?id=anything", True),
            ("http://foo.bar/Fish.asp", False),
            ("http://foo.bar/catfish", False),
            ("http://foo.bar/?id=fish", False),
        ),
        *_cases(
            _FISH_STAR,
            "FooBot",
            ("http://foo.bar/bar", False),
            ("http://foo.bar/fish", True),
            ("http://foo.bar/fish.html", True),
            ("http://foo.bar/fish/salmon.html", True),
            ("http://foo.bar/fishheads", True),
            ("http://foo.bar/fishheads/yummy.html", True),
            ("http://foo.bar/fish.html?id=anything", True),
            ("http://foo.bar/Fish.bar", False),
            ("http://foo.bar/catfish", False),
            ("http://foo.bar/?id=fish", False),
        ),
        *_cases(
            _FISH_SLASH,
            "FooBot",
            ("http://foo.bar/bar", False),
            ("http://foo.bar/fish/", True),
            ("http://foo.bar/fish/salmon", True),
            ("http://foo.bar/fish/?salmon", True),
            ("http://foo.bar/fish/salmon.html", True),
            ("http://foo.bar/fish/?id=anything", True),
            ("http://foo.bar/fish", False),
            ("http://foo.bar/fish.html", False),
            ("http://foo.bar/Fish/Salmon.html", False),
        ),
        *_cases(
            _PHP,
            "FooBot",
            ("http://foo.bar/bar", False),
            ("http://foo.bar/filename.php", True),
            ("http://foo.bar/folder/filename.php", True),
            ("http://foo.bar/folder/filename.php?parameters", True),
            ("http://foo.bar//folder/any.php.file.html", True),
            ("http://foo.bar/filename.php/", True),
            ("http://foo.bar/index?f=filename.php/", True),
            ("http://foo.bar/php/", False),
            ("http://foo.bar/index?php", False),
            ("http://foo.bar/windows.PHP", False),
        ),
        *_cases(
            _PHP_END,
            "FooBot",
            ("http://foo.bar/bar", False),
            ("http://foo.bar/filename.php", True),
            ("http://foo.bar/folder/filename.php", True),
            ("http://foo.bar/filename.php?parameters", False),
            ("http://foo.bar/filename.php/", False),
            ("http://foo.bar/filename.php5", False),
            ("http://foo.bar/php/", False),
            ("http://foo.bar/filename?php", False),
            ("http://foo.bar/aaaphpaaa", False),
            ("http://foo.bar//windows.PHP", False),
        ),
        *_cases(
            _FISH_PHP,
            "FooBot",
            ("http://foo.bar/bar", False),
            ("http://foo.bar/fish.php", True),
            ("http://foo.bar/fishheads/catfish.php?parameters", True),
            ("http://foo.bar/Fish.PHP", False),
        ),
        Case(_FOO + "allow: /p\ndisallow: /\n", "FooBot", "http://example.com/page", True),
        Case(
            _FOO + "allow: /folder\ndisallow: /folder\n",
            "FooBot",
            "http://example.com/folder/page",
            True,
        ),
        Case(
            _FOO + "allow: /page\ndisallow: /*.htm\n",
            "FooBot",
            "http://example.com/page.htm",
            False,
        ),
        Case(_FOO + "allow: /$\ndisallow: /\n", "FooBot", "http://example.com/", True),
        Case(_FOO + "allow: /$\ndisallow: /\n", "FooBot", "http://example.com/page.html", False),
    ],
}


def _check(name: str) -> None:
    failures = []
    for case in GOOGLE_CASES[name]:
        got = RobotsRules.parse(case.robotstxt).is_allowed(case.agent, case.url)
        if got != case.expected:
            failures.append((case.robotstxt[:80], case.agent, case.url[:80], case.expected, got))
    assert not failures, failures


def test_google_case_count() -> None:
    """The table holds all 145 IsUserAgentAllowed assertions of robots_test.cc."""
    assert sum(len(v) for v in GOOGLE_CASES.values()) == 145
    assert sum(c.ours is not None for v in GOOGLE_CASES.values() for c in v) == 4


def test_GoogleOnly_SystemTest() -> None:
    _check("GoogleOnly_SystemTest")


def test_ID_LineSyntax_Line() -> None:
    _check("ID_LineSyntax_Line")


def test_ID_LineSyntax_Groups() -> None:
    _check("ID_LineSyntax_Groups")


def test_ID_LineSyntax_Groups_OtherRules() -> None:
    _check("ID_LineSyntax_Groups_OtherRules")


def test_ID_REPLineNamesCaseInsensitive() -> None:
    _check("ID_REPLineNamesCaseInsensitive")


def test_ID_VerifyValidUserAgentsToObey() -> None:
    def valid(agent: str) -> bool:
        return bool(agent) and product_token(agent) == agent

    assert valid("Foobot")
    assert valid("Foobot-Bar")
    assert valid("Foo_Bar")
    assert not valid("")
    assert not valid("ツ")
    assert not valid("Foobot*")
    assert not valid(" Foobot ")
    assert not valid("Foobot/2.1")
    assert not valid("Foobot Bar")
    assert product_token("Foobot/2.1") == "Foobot"
    assert product_token("Foobot Bar") == "Foobot"


def test_ID_UserAgentValueCaseInsensitive() -> None:
    _check("ID_UserAgentValueCaseInsensitive")


def test_GoogleOnly_AcceptUserAgentUpToFirstSpace() -> None:
    _check("GoogleOnly_AcceptUserAgentUpToFirstSpace")


def test_ID_GlobalGroups_Secondary() -> None:
    _check("ID_GlobalGroups_Secondary")


def test_ID_AllowDisallow_Value_CaseSensitive() -> None:
    _check("ID_AllowDisallow_Value_CaseSensitive")


def test_ID_LongestMatch() -> None:
    _check("ID_LongestMatch")


def test_ID_Encoding() -> None:
    _check("ID_Encoding")


def test_ID_SpecialCharacters() -> None:
    _check("ID_SpecialCharacters")


def test_GoogleOnly_IndexHTMLisDirectory() -> None:
    _check("GoogleOnly_IndexHTMLisDirectory")


def test_GoogleOnly_LineTooLong() -> None:
    _check("GoogleOnly_LineTooLong")


def test_GoogleOnly_DocumentationChecks() -> None:
    _check("GoogleOnly_DocumentationChecks")


@pytest.mark.parametrize(
    "body",
    [
        "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /\n",
        "User-Agent: foo\r\nAllow: /some/path\r\nUser-Agent: bar\r\n\r\n\r\nDisallow: /\r\n",
        "User-Agent: foo\rAllow: /some/path\rUser-Agent: bar\r\r\rDisallow: /\r",
        "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /",
        "User-Agent: foo\nAllow: /some/path\r\nUser-Agent: bar\n\r\n\nDisallow: /",
    ],
    ids=["unix", "dos", "mac", "no-final-newline", "mixed"],
)
def test_ID_LinesNumbersAreCountedCorrectly(body: str) -> None:
    rules = RobotsRules.parse(body)
    assert rules.decide("bar", "/x") == Verdict(False, "Disallow: /", 6)
    assert rules.decide("foo", "/some/path/x") == Verdict(True, "Allow: /some/path", 2)


@pytest.mark.parametrize(
    ("prefix", "applies"),
    [
        (b"\xef\xbb\xbf", True),
        (b"\xef\xbb", True),
        (b"\xef", True),
        (b"\xef\x11\xbf", False),  # broken BOM: first line is garbage
    ],
)
def test_ID_UTF8ByteOrderMarkIsSkipped(prefix: bytes, applies: bool) -> None:
    body = prefix + b"User-Agent: foo\nDisallow: /AnyValue\n"
    assert RobotsRules.parse(body).is_allowed("foo", "/AnyValue") is not applies


def test_ID_UTF8ByteOrderMarkIsSkipped_middle_of_file() -> None:
    body = b"User-Agent: foo\n\xef\xbb\xbfDisallow: /AnyValue\n"
    assert RobotsRules.parse(body).is_allowed("foo", "/AnyValue")


def test_ID_NonStandardLineExample_Sitemap() -> None:
    loc = "http://foo.bar/sitemap.xml"
    groups = "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\n"
    assert RobotsRules.parse(groups + f"Sitemap: {loc}\n").sitemaps == [loc]
    assert RobotsRules.parse(f"Sitemap: {loc}\n" + groups).sitemaps == [loc]


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("", "/"),
        ("http://www.example.com", "/"),
        ("http://www.example.com/", "/"),
        ("http://www.example.com/a", "/a"),
        ("http://www.example.com/a/", "/a/"),
        ("http://www.example.com/a/b?c=http://d.e/", "/a/b?c=http://d.e/"),
        ("http://www.example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f"),
        ("example.com", "/"),
        ("example.com/", "/"),
        ("example.com/a", "/a"),
        ("example.com/a/", "/a/"),
        ("example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f"),
        ("a", "/"),
        ("a/", "/"),
        ("/a", "/a"),
        ("a/b", "/b"),
        ("example.com?a", "/?a"),
        ("example.com/a;b#c", "/a;b"),
        ("//a/b/c", "/b/c"),
    ],
)
def test_TestGetPathParamsQuery(url: str, path: str) -> None:
    assert request_path(url) == path


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("http://www.example.com", "http://www.example.com"),
        ("/a/b/c", "/a/b/c"),
        ("á".encode().decode("latin-1"), "%C3%A1"),  # the parser sees bytes as latin-1
        ("%aa", "%AA"),
    ],
)
def test_TestMaybeEscapePattern(raw: str, escaped: str) -> None:
    assert normalise_pattern(raw) == escaped


# --- RFC 9309 examples -------------------------------------------------------

_RFC_SIMPLE = """\
User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
"""


@pytest.mark.parametrize(
    ("agent", "path", "allowed"),
    [
        ("otherbot", "/publications/x.html", True),
        ("otherbot", "/publications/x.gif", True),  # 14 octets beat "*.gif$" (6)
        ("otherbot", "/a/b.gif", False),
        ("otherbot", "/a/b.gif?x", True),
        ("otherbot", "/example/x", False),
        ("otherbot", "/elsewhere", True),
        ("foobot", "/example/page.html", True),
        ("foobot", "/example/allowed.gif", True),
        ("foobot", "/example/other.html", False),
        ("foobot", "/", False),
        ("barbot", "/example/page.html", False),
        ("bazbot", "/example/page.html", False),
        ("barbot", "/example/other.html", True),
        ("bazbot", "/a.gif", True),
        ("quxbot", "/example/page.html", True),
        ("quxbot", "/a.gif", True),
    ],
)
def test_rfc9309_5_1_simple_example(agent: str, path: str, allowed: bool) -> None:
    assert RobotsRules.parse(_RFC_SIMPLE).is_allowed(agent, path) is allowed


def test_rfc9309_5_2_longest_match() -> None:
    rules = RobotsRules.parse(
        "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n"
    )
    verdict = rules.decide("foobot", "http://example.com/example/page/disallowed.gif")
    assert verdict == Verdict(False, "Disallow: /example/page/disallowed.gif", 3)
    assert rules.is_allowed("foobot", "http://example.com/example/page/other.gif")


def test_rfc9309_2_2_1_merge_groups() -> None:
    rules = RobotsRules.parse(
        "user-agent: ExampleBot\ndisallow: /foo\ndisallow: /bar\n\n"
        "user-agent: ExampleBot\ndisallow: /baz\n"
    )
    for path in ("/foo", "/bar", "/baz"):
        assert not rules.is_allowed("ExampleBot", path)
    assert rules.is_allowed("ExampleBot", "/qux")


def test_rfc9309_2_2_1_star_group_when_none_matches() -> None:
    rules = RobotsRules.parse(
        "user-agent: *\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: BazBot\ndisallow: /baz\n"
    )
    assert not rules.is_allowed("ExampleBot", "/foo")
    assert not rules.is_allowed("ExampleBot", "/bar")
    assert rules.is_allowed("ExampleBot", "/baz")
    assert rules.is_allowed("BazBot", "/foo")


def test_rfc9309_2_2_1_user_agent_header_example() -> None:
    ua = "Mozilla/5.0 (compatible; ExampleBot/0.1; https://www.example.com/bot.html)"
    assert product_token(ua) == "Mozilla"  # callers pass their own UA, token first
    rules = RobotsRules.parse("user-agent: ExampleBot\ndisallow: /\n")
    assert not rules.is_allowed("ExampleBot/0.1 (+https://www.example.com/bot.html)", "/x")


@pytest.mark.parametrize(
    ("pattern", "url"),
    [
        ("/foo/bar?baz=quz", "/foo/bar?baz=quz"),
        ("/foo/bar?baz=https%3A%2F%2Ffoo.bar", "/foo/bar?baz=https%3A%2F%2Ffoo.bar"),
        ("/foo/bar/ツ", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%e3%83%84", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%62%61%7A", "/foo/bar/baz"),
        ("/foo/bar/baz", "/foo/bar/%62%61%7a"),
    ],
)
def test_rfc9309_2_2_2_percent_encoding_table(pattern: str, url: str) -> None:
    rules = RobotsRules.parse(f"user-agent: *\ndisallow: {pattern}\n")
    assert not rules.is_allowed("bot", "http://example.com" + url)


def test_rfc9309_2_2_2_reserved_stays_encoded() -> None:
    rules = RobotsRules.parse("user-agent: *\ndisallow: /a%2Fb\n")
    assert not rules.is_allowed("bot", "/a%2fb")
    assert rules.is_allowed("bot", "/a/b")


@pytest.mark.parametrize(
    ("pattern", "url", "allowed"),
    [
        ("/path/file-with-a-%2A.html", "https://www.example.com/path/file-with-a-*.html", False),
        ("/path/file-with-a-%2A.html", "https://www.example.com/path/file-with-a-x.html", True),
        ("/path/foo-%24", "https://www.example.com/path/foo-$", False),
        ("/path/foo-%24", "https://www.example.com/path/foo-", True),
        ("/this/path/exactly$", "https://www.example.com/this/path/exactly", False),
        ("/this/path/exactly$", "https://www.example.com/this/path/exactly/", True),
        ("/this/*/exactly", "https://www.example.com/this/a/b/exactly", False),
        ("/this/*/exactly", "https://www.example.com/this/exactly", True),
    ],
)
def test_rfc9309_2_2_3_special_characters(pattern: str, url: str, allowed: bool) -> None:
    rules = RobotsRules.parse(f"user-agent: *\ndisallow: {pattern} # comment in line\n")
    assert rules.is_allowed("bot", url) is allowed


def test_rfc9309_2_2_2_robots_txt_always_allowed() -> None:
    rules = RobotsRules.parse("user-agent: *\ndisallow: /\n")
    assert rules.is_allowed("bot", "https://example.com/robots.txt")
    assert rules.is_allowed("bot", "/robots.txt?x=1")
    assert not rules.is_allowed("bot", "/robots.txt.bak")
    assert RobotsRules.disallow_all().is_allowed("bot", "/robots.txt")


def test_rfc9309_2_3_1_status_rules() -> None:
    assert RobotsRules.allow_all().decide("bot", "/x") == Verdict(True, None, None)
    assert not RobotsRules.disallow_all().is_allowed("bot", "/x")
    assert RobotsRules.disallow_all().decide("bot", "/x").line is None


def test_rfc9309_2_2_empty_group_at_end_allows() -> None:
    rules = RobotsRules.parse("user-agent: *\ndisallow: /\nuser-agent: quxbot\n")
    assert rules.is_allowed("quxbot", "/anything")
    assert not rules.is_allowed("other", "/anything")


# --- our own edge cases -----------------------------------------------------


def test_bom_bytes_and_str() -> None:
    body = "\ufeffUser-agent: *\nDisallow: /private/\n"
    assert not RobotsRules.parse(body).is_allowed("bot", "/private/x")
    assert not RobotsRules.parse(body.encode()).is_allowed("bot", "/private/x")


def test_cr_only_line_ends() -> None:
    rules = RobotsRules.parse(b"User-agent: *\rDisallow: /a\rAllow: /a/b\r")
    assert rules.decide("bot", "/a/x") == Verdict(False, "Disallow: /a", 2)
    assert rules.decide("bot", "/a/b") == Verdict(True, "Allow: /a/b", 3)


def test_500_kib_cutoff() -> None:
    head = b"User-agent: *\nDisallow: /early\n"
    filler = b"# " + b"x" * 100 + b"\n"
    body = head + filler * (512_000 // len(filler) + 10) + b"Disallow: /late\n"
    rules = RobotsRules.parse(body)
    assert not rules.is_allowed("bot", "/early")
    assert rules.is_allowed("bot", "/late")


def test_500_kib_cutoff_drops_half_line() -> None:
    head = b"User-agent: *\n"
    pad = b"#" * (512_000 - len(head) - len(b"Disallow: /ab"))
    body = head + pad + b"\nDisallow: /abcdef\n"  # cut leaves "Disallow: /a"
    assert RobotsRules.parse(body).is_allowed("bot", "/a")


def test_crawl_delay_fractions_and_garbage() -> None:
    rules = RobotsRules.parse(
        "User-agent: a\nCrawl-delay: 0.5\nDisallow: /x\n"
        "User-agent: b\nDisallow: /x\nCrawl-delay: -3\n"
        "User-agent: c\nDisallow: /x\nCrawl-delay: soon\n"
        "User-agent: d\nDisallow: /x\ncrawl-delay: 2\nCrawl-Delay: 7\n"
        "User-agent: *\nDisallow: /x\nCrawl-delay: 10\n"
    )
    assert rules.crawl_delay("a/1.0") == 0.5
    assert rules.crawl_delay("b") is None
    assert rules.crawl_delay("c") is None
    assert rules.crawl_delay("d") == 7.0
    assert rules.crawl_delay("zed") == 10.0
    assert RobotsRules.parse("Crawl-delay: 3\nUser-agent: *\n").crawl_delay("x") is None
    # a number too large for a float is still a number: honoured as the longest delay
    assert RobotsRules.parse("User-agent: *\nCrawl-delay: 1e999\n").crawl_delay("x") == 86400


def test_crawl_delay_does_not_end_user_agent_run() -> None:
    rules = RobotsRules.parse("User-agent: FooBot\nCrawl-delay: 10\nUser-agent: *\nDisallow: /\n")
    assert not rules.is_allowed("FooBot", "/")
    assert rules.crawl_delay("FooBot") == 10.0
    assert rules.crawl_delay("BarBot") == 10.0


def test_sitemaps_outside_groups_absolute_only_deduplicated() -> None:
    rules = RobotsRules.parse(
        "Sitemap: https://example.com/a.xml\n"
        "User-agent: *\nSitemap: /relative.xml\nDisallow: /x\n"
        "Sitemap: https://example.com/a.xml\n"
        "site-map: http://example.com/b.xml # comment\n"
        "Sitemap: ftp://example.com/c.xml\n"
        "Sitemap: https://\n"
    )
    assert rules.sitemaps == ["https://example.com/a.xml", "http://example.com/b.xml"]
    assert not rules.is_allowed("bot", "/x")


def test_merged_groups_line_numbers() -> None:
    rules = RobotsRules.parse(
        "User-agent: acmebot\nDisallow: /a\n\nUser-agent: other\nDisallow: /\n\n"
        "User-agent: ACMEBOT\nAllow: /a/b\n"
    )
    assert rules.decide("acmebot/1.0 (+https://x)", "/a/x") == Verdict(False, "Disallow: /a", 2)
    assert rules.decide("AcmeBot", "/a/b/c") == Verdict(True, "Allow: /a/b", 8)
    assert rules.decide("acmebot", "/z") == Verdict(True, None, None)


def test_unknown_line_inside_group() -> None:
    rules = RobotsRules.parse(
        "User-agent: acmebot\nHost: example.com\nfoo bar baz\nNoindex: /x\nDisallow: /a\n"
    )
    assert not rules.is_allowed("acmebot", "/a")


def test_misspellings_google_accepts() -> None:
    for key in ("dissallow", "dissalow", "disalow", "diasllow", "disallaw", "DISALLOW"):
        body = f"useragent: bot\n{key}: /a\nuser agent: bot2\nDisallow /b\n"
        rules = RobotsRules.parse(body)
        assert not rules.is_allowed("bot", "/a"), key
        assert not rules.is_allowed("bot2", "/b"), key


def test_tie_goes_to_allow_and_earliest_line() -> None:
    rules = RobotsRules.parse("User-agent: *\nDisallow: /a\nAllow: /a\nAllow: /a\n")
    assert rules.decide("bot", "/a") == Verdict(True, "Allow: /a", 3)
    rules = RobotsRules.parse("User-agent: *\nDisallow: /*b\nAllow: /a*\n")
    assert rules.decide("bot", "/ab") == Verdict(True, "Allow: /a*", 3)


def test_wildcard_beats_shorter_literal_and_vice_versa() -> None:
    rules = RobotsRules.parse("User-agent: *\nAllow: /\nDisallow: /*.pdf$\nAllow: /docs/public/\n")
    assert not rules.is_allowed("bot", "/x/y.pdf")
    assert rules.is_allowed("bot", "/x/y.pdf?download=1")
    assert rules.is_allowed("bot", "/docs/public/y.pdf")  # 13 octets beat 7
    assert rules.decide("bot", "/docs/public/y.pdf").line == 4


def test_star_agent_with_suffix_is_global_and_star_prefix_is_not() -> None:
    assert not RobotsRules.parse("User-agent: * # all\nDisallow: /\n").is_allowed("x", "/")
    assert RobotsRules.parse("User-agent: *bot\nDisallow: /\n").is_allowed("x", "/")


def test_non_utf8_bytes_never_raise_and_match_bytewise() -> None:
    rules = RobotsRules.parse(b"User-agent: *\nDisallow: /caf\xe9\n")
    assert not rules.is_allowed("bot", "/caf%E9")
    assert rules.is_allowed("bot", "/cafe")


def test_query_included_fragment_excluded() -> None:
    rules = RobotsRules.parse("User-agent: *\nDisallow: /*?sessionid=\nDisallow: /page$\n")
    assert not rules.is_allowed("bot", "https://e.com/a?sessionid=1")
    assert not rules.is_allowed("bot", "https://e.com/page#frag")
    assert rules.is_allowed("bot", "https://e.com/page?x")


def test_pathological_pattern_is_fast() -> None:
    import time

    rules = RobotsRules.parse("User-agent: *\nDisallow: /*a*a*a*a*a*a*a*a*a*a*b\n")
    path = "/" + "a" * 50_000
    start = time.perf_counter()
    assert rules.is_allowed("bot", path)
    assert not rules.is_allowed("bot", path + "b")
    assert time.perf_counter() - start < 0.5


def test_many_user_agent_strings_share_cached_matchers() -> None:
    rules = RobotsRules.parse("User-agent: acmebot\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n")
    for i in range(200):
        other = "bot" + "x" * i + "/1.0"
        assert rules.is_allowed(other, "/a") and not rules.is_allowed(other, "/b")
        assert not rules.is_allowed(f"acmebot/{i}.0", "/a")
    assert len(rules._by_key) == 2  # one per applicable group set: acmebot and '*'
