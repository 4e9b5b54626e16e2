"""Tests for politecrawl.urls.canonical and urls.filters: normalisation table, RFC 3986
resolution, filters, scope."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from politecrawl.errors import ConfigError, UrlError
from politecrawl.urls.canonical import (
    canonicalize,
    host_of,
    is_subdomain_of,
    join,
    origin_of,
    politeness_key,
    registered_domain,
    robots_url,
)
from politecrawl.urls.filters import (
    DEFAULT_BLOCKED_EXTENSIONS,
    ExtensionFilter,
    Scope,
    TrapLimits,
    parse_allow_file,
    parse_domain_list,
    path_extension,
    trap_reason,
)

pytestmark = pytest.mark.unit

# --------------------------------------------------------------------------- canonicalize

CANONICAL = [
    # scheme and host case, default ports, empty path
    ("HTTP://ExAmple.COM/", "http://example.com/"),
    ("http://example.com", "http://example.com/"),
    ("http://example.com:80/a", "http://example.com/a"),
    ("https://example.com:443/a", "https://example.com/a"),
    ("http://example.com:443/a", "http://example.com:443/a"),
    ("https://example.com:80/a", "https://example.com:80/a"),
    ("http://example.com:080/", "http://example.com/"),
    ("http://example.com:/", "http://example.com/"),
    ("http://h17.test:38211/p/3.html", "http://h17.test:38211/p/3.html"),
    ("http://127.0.0.1:38211/p/3.html", "http://127.0.0.1:38211/p/3.html"),
    # fragment, empty query
    ("http://example.com/a#frag", "http://example.com/a"),
    ("http://example.com/a?#frag", "http://example.com/a"),
    ("http://example.com/a?", "http://example.com/a"),
    ("http://example.com?x=1", "http://example.com/?x=1"),
    # dot segments
    ("http://example.com/a/./b/../c", "http://example.com/a/c"),
    ("http://example.com/../../a", "http://example.com/a"),
    ("http://example.com/a/b/..", "http://example.com/a/"),
    ("http://example.com/a/%2e%2E/b", "http://example.com/b"),
    ("http://example.com/.well-known/x", "http://example.com/.well-known/x"),
    ("http://example.com/a/?q=./../x", "http://example.com/a/?q=./../x"),
    # percent-encoding: decode unreserved, upper-case the rest, encode the illegal
    ("http://example.com/%7euser/%41b%2fc%3a", "http://example.com/~user/Ab%2Fc%3A"),
    ("http://example.com/a%2Fb", "http://example.com/a%2Fb"),
    ("http://example.com/a b/c", "http://example.com/a%20b/c"),
    ("http://example.com/?q=a b", "http://example.com/?q=a%20b"),
    ("http://example.com/?q=a+b&r=%20", "http://example.com/?q=a+b&r=%20"),
    ("http://example.com/caf\u00e9?\u00e9=\u00e9", "http://example.com/caf%C3%A9?%C3%A9=%C3%A9"),
    ("http://example.com/%e4%zz%", "http://example.com/%E4%25zz%25"),
    ("http://example.com/%%41", "http://example.com/%25A"),
    ("http://example.com/a|b[c]{d}", "http://example.com/a%7Cb%5Bc%5D%7Bd%7D"),
    ("http://example.com/?a[]=1&b=<2>", "http://example.com/?a%5B%5D=1&b=%3C2%3E"),
    ("http://example.com/a\x00b", "http://example.com/a%00b"),
    ("http://example.com/!$&'()*+,;=:@", "http://example.com/!$&'()*+,;=:@"),
    # query order kept, separators kept
    ("http://example.com/?b=2&a=1&b=1", "http://example.com/?b=2&a=1&b=1"),
    ("http://example.com/?&", "http://example.com/?&"),
    # session ids
    ("http://example.com/a;jsessionid=ABC123?x=1", "http://example.com/a?x=1"),
    ("http://example.com/a;JSESSIONID=ABC/b", "http://example.com/a/b"),
    ("http://example.com/a;v=1", "http://example.com/a;v=1"),
    ("http://example.com/?PHPSESSID=1&b=2", "http://example.com/?b=2"),
    ("http://example.com/?b=2&phpsessid=1", "http://example.com/?b=2"),
    ("http://example.com/?SID=1", "http://example.com/"),
    ("http://example.com/?sid", "http://example.com/"),
    (
        "http://example.com/?sessionid=1&session_id=2&jsessionid=3&a=1",
        "http://example.com/?a=1",
    ),
    ("http://example.com/?ASPSESSIONIDQQGGQ=xx&cfid=1&CFTOKEN=2&a=1", "http://example.com/?a=1"),
    (
        "http://example.com/?sidebar=1&ssid=2&sid_x=3",
        "http://example.com/?sidebar=1&ssid=2&sid_x=3",
    ),
    ("http://example.com/?%73id=1&a=1", "http://example.com/?a=1"),
    # userinfo, trailing dot
    ("http://user:pw@example.com/", "http://example.com/"),
    ("http://user@example.com:8080/", "http://example.com:8080/"),
    ("http://a@b@example.com/", "http://example.com/"),
    ("http://example.com./a", "http://example.com/a"),
    ("http://EXAMPLE.com.:8080/a", "http://example.com:8080/a"),
    # IDNA
    ("https://b\u00fccher.de/", "https://xn--bcher-kva.de/"),
    ("https://B\u00dcCHER.DE/", "https://xn--bcher-kva.de/"),
    ("https://xn--bcher-kva.de/", "https://xn--bcher-kva.de/"),
    ("http://\uff41\uff42\uff43.com/", "http://abc.com/"),
    ("http://b\u00fccher%2Ede/", "http://xn--bcher-kva.de/"),
    # IP literals
    ("http://[::1]/", "http://[::1]/"),
    ("http://[::1]:8080/", "http://[::1]:8080/"),
    ("https://[0:0:0:0:0:0:0:1]:443/", "https://[::1]/"),
    ("http://[2001:DB8::1]/", "http://[2001:db8::1]/"),
    ("http://10.0.0.1/", "http://10.0.0.1/"),
    # whitespace and backslashes, as browsers treat them
    ("  http://example.com/a \n", "http://example.com/a"),
    ("http://exa\nmple.com/a\tb\r", "http://example.com/ab"),
    ("http:\\\\example.com\\a\\b?c\\d", "http://example.com/a/b?c%5Cd"),
    # underscores exist in real host names
    ("http://my_host.example.com/", "http://my_host.example.com/"),
]


@pytest.mark.parametrize(("url", "expected"), CANONICAL)
def test_canonicalize(url: str, expected: str) -> None:
    assert canonicalize(url) == expected
    assert canonicalize(expected) == expected


BAD = [
    ("ftp://example.com/", "scheme"),
    ("file:///etc/passwd", "scheme"),
    ("data:text/html,hi", "scheme"),
    ("javascript:alert(1)", "scheme"),
    ("mailto:a@example.com", "scheme"),
    ("/relative/path", "relative"),
    ("example.com/path", "relative"),
    ("", "relative"),
    ("http:example.com", "host"),
    ("http:///path", "empty host"),
    ("http://:80/", "empty host"),
    ("http://user@/", "empty host"),
    ("http://example.com:99999/", "port"),
    ("http://example.com:65536/", "port"),
    ("http://example.com:8x/", "port"),
    ("http://example.com:+80/", "port"),
    ("http://example.com:-1/", "port"),
    ("http://example.com:\u0661\u0662/", "port"),
    ("http://example.com:0/", "port"),
    ("http://exa mple.com/", "host"),
    ("http://a<b>.com/", "host"),
    ("http://a..b.com/", "host"),
    ("http://a*b.com/", "host"),
    ("http://" + "x" * 64 + ".com/", "host"),
    ("http://[::1/", "IPv6"),
    ("http://[::1]x/", "authority"),
    ("http://[zz::1]/", "IPv6"),
    ("http://[fe80::1%25eth0]/", "IPv6"),
    ("http://256.1.1.1/", "IPv4"),
    ("http://0x7f.1/", "IPv4"),
    ("http://1.2.3/", "IPv4"),
    ("http://a%00b/", "host"),
]


@pytest.mark.parametrize(("url", "reason"), BAD)
def test_canonicalize_rejects(url: str, reason: str) -> None:
    with pytest.raises(UrlError, match=reason):
        canonicalize(url)


def test_url_error_is_value_error() -> None:
    with pytest.raises(ValueError):
        canonicalize("ftp://x/")


# --------------------------------------------------------------------------- join

RFC_BASE = "http://a/b/c/d;p?q"

# RFC 3986 §5.4.1 normal and §5.4.2 abnormal examples, as canonical URLs (no
# fragment).  "g:h" is not http(s), so None; "http:g" is resolved the
# backward-compatible (browser) way the RFC allows.
RFC_EXAMPLES = [
    ("g:h", None),
    ("g", "http://a/b/c/g"),
    ("./g", "http://a/b/c/g"),
    ("g/", "http://a/b/c/g/"),
    ("/g", "http://a/g"),
    ("//g", "http://g/"),
    ("?y", "http://a/b/c/d;p?y"),
    ("g?y", "http://a/b/c/g?y"),
    ("#s", "http://a/b/c/d;p?q"),
    ("g#s", "http://a/b/c/g"),
    ("g?y#s", "http://a/b/c/g?y"),
    (";x", "http://a/b/c/;x"),
    ("g;x", "http://a/b/c/g;x"),
    ("g;x?y#s", "http://a/b/c/g;x?y"),
    ("", "http://a/b/c/d;p?q"),
    (".", "http://a/b/c/"),
    ("./", "http://a/b/c/"),
    ("..", "http://a/b/"),
    ("../", "http://a/b/"),
    ("../g", "http://a/b/g"),
    ("../..", "http://a/"),
    ("../../", "http://a/"),
    ("../../g", "http://a/g"),
    # abnormal
    ("../../../g", "http://a/g"),
    ("../../../../g", "http://a/g"),
    ("/./g", "http://a/g"),
    ("/../g", "http://a/g"),
    ("g.", "http://a/b/c/g."),
    (".g", "http://a/b/c/.g"),
    ("g..", "http://a/b/c/g.."),
    ("..g", "http://a/b/c/..g"),
    ("./../g", "http://a/b/g"),
    ("./g/.", "http://a/b/c/g/"),
    ("g/./h", "http://a/b/c/g/h"),
    ("g/../h", "http://a/b/c/h"),
    ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
    ("g;x=1/../y", "http://a/b/c/y"),
    ("g?y/./x", "http://a/b/c/g?y/./x"),
    ("g?y/../x", "http://a/b/c/g?y/../x"),
    ("g#s/./x", "http://a/b/c/g"),
    ("g#s/../x", "http://a/b/c/g"),
    ("http:g", "http://a/b/c/g"),
]


@pytest.mark.parametrize(("href", "expected"), RFC_EXAMPLES)
def test_join_rfc3986_examples(href: str, expected: str | None) -> None:
    assert join(RFC_BASE, href) == expected


JOINS = [
    ("http://example.com/dir/page.html", "other.html", "http://example.com/dir/other.html"),
    ("http://example.com/dir/", "  other.html\n", "http://example.com/dir/other.html"),
    ("http://example.com/dir/", "\n\t/a/\nb.html  ", "http://example.com/a/b.html"),
    ("http://example.com/dir/", "a b.html", "http://example.com/dir/a%20b.html"),
    ("https://example.com/x", "//cdn.example.org/a", "https://cdn.example.org/a"),
    ("https://example.com/x", "HTTP://Other.COM:80/", "http://other.com/"),
    ("http://example.com/x", "https:g", None),
    ("http://example.com/x", "javascript:void(0)", None),
    ("http://example.com/x", " JavaScript:void(0)", None),
    ("http://example.com/x", "mailto:a@b.c", None),
    ("http://example.com/x", "tel:+123", None),
    ("http://example.com/x", "data:text/plain,x", None),
    ("http://example.com/x", "ftp://example.com/", None),
    ("http://example.com/x", "http://exa mple.com/", None),
    ("http://example.com/x", "http://example.com:99999/", None),
    ("http://example.com/x", "//", None),
    ("http://example.com/a/b", "\\c\\d", "http://example.com/c/d"),
    ("http://example.com/a/b", "..\\c", "http://example.com/c"),
    ("http://example.com/a/b", "c;jsessionid=1?sid=2&x=1", "http://example.com/a/c?x=1"),
    ("http://example.com/a/b", "%2e%2e/c", "http://example.com/c"),
    ("http://example.com/a/b", "c#frag", "http://example.com/a/c"),
    ("http://example.com/a/b?q=1", "#top", "http://example.com/a/b?q=1"),
    ("http://example.com/a/b?q=1", "?", "http://example.com/a/b"),
    ("http://example.com/a/b", "//user:pw@other.com/x", "http://other.com/x"),
    ("http://h17.test:38211/p/3.html", "4.html", "http://h17.test:38211/p/4.html"),
    ("http://h17.test:38211/p/3.html", "/robots.txt", "http://h17.test:38211/robots.txt"),
    # an encoded base path stays encoded (yarl's join decodes it)
    ("http://example.com/%25zz/x%2Fy/z", "g", "http://example.com/%25zz/x%2Fy/g"),
    # a non-canonical base is canonicalised first
    ("HTTP://Example.COM:80/a/./b", "c", "http://example.com/a/c"),
    # invalid bases give None rather than raising
    ("not a url", "x", None),
    ("ftp://example.com/", "x", None),
]


@pytest.mark.parametrize(("base", "href", "expected"), JOINS)
def test_join(base: str, href: str, expected: str | None) -> None:
    assert join(base, href) == expected


def test_join_tolerates_wrong_types() -> None:
    assert join("http://example.com/", None) is None  # type: ignore[arg-type]
    assert join(None, "/x") is None  # type: ignore[arg-type]


# --------------------------------------------------------------------------- keys


def test_host_origin_robots() -> None:
    assert host_of("http://example.com/a") == "example.com"
    assert host_of("http://h17.test:38211/p") == "h17.test"
    assert host_of("http://[::1]:8080/x") == "[::1]"
    assert host_of("https://example.com") == "example.com"
    assert origin_of("http://h17.test:38211/p/3.html?x") == "http://h17.test:38211"
    assert origin_of("https://example.com/") == "https://example.com"
    assert origin_of("http://[::1]:8/x") == "http://[::1]:8"
    assert robots_url("http://h17.test:38211/p/3.html") == "http://h17.test:38211/robots.txt"
    assert robots_url("https://example.com/a?b") == "https://example.com/robots.txt"


@pytest.mark.parametrize(
    ("host", "domain"),
    [
        ("h17.test", "h17.test"),
        ("a.h17.test", "h17.test"),
        ("a.b.test", "b.test"),
        ("www.example.com", "example.com"),
        ("a.b.example.co.uk", "example.co.uk"),
        ("example.co.uk", "example.co.uk"),
        ("co.uk", "co.uk"),
        ("foo.github.io", "foo.github.io"),
        ("x.xn--bcher-kva.de", "xn--bcher-kva.de"),
        ("localhost", "localhost"),
        ("127.0.0.1", "127.0.0.1"),
        ("[::1]", "[::1]"),
        ("10.1.2.3", "10.1.2.3"),
    ],
)
def test_registered_domain(host: str, domain: str) -> None:
    assert registered_domain(host) == domain


def test_is_subdomain_of() -> None:
    assert is_subdomain_of("example.com", "example.com")
    assert is_subdomain_of("a.b.example.com", "example.com")
    assert not is_subdomain_of("badexample.com", "example.com")
    assert not is_subdomain_of("example.com", "a.example.com")


def test_politeness_key() -> None:
    url = "http://a.h17.test:38211/p"
    assert politeness_key(url, "host") == "a.h17.test"
    assert politeness_key("http://a.h17.test:1/p", "host") == politeness_key(url, "host")
    assert politeness_key(url, "domain") == "h17.test"
    assert politeness_key(url, "ip", "127.0.0.1") == "127.0.0.1"
    assert politeness_key(url, "ip") == "a.h17.test"
    with pytest.raises(ConfigError):
        politeness_key(url, "bogus")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- filters


@pytest.mark.parametrize(
    ("url", "ext"),
    [
        ("http://a/x.JPG?q", ".jpg"),
        ("http://a/x.jpg#f", ".jpg"),
        ("http://a/dir.d/file", ""),
        ("http://a/", ""),
        ("http://a", ""),
        ("http://a/.htaccess", ""),
        ("http://a/archive.tar.gz", ".gz"),
        ("http://a/x.pdf;v=2", ".pdf"),
        ("http://a/x.html?file=y.pdf", ".html"),
        ("http://a.example.com/page", ""),
    ],
)
def test_path_extension(url: str, ext: str) -> None:
    assert path_extension(url) == ext


def test_default_extensions() -> None:
    for ext in (".pdf", ".jpg", ".m4b", ".css", ".epub", ".woff2", ".js", ".xml"):
        assert ext in DEFAULT_BLOCKED_EXTENSIONS
    assert all(e.startswith(".") and e == e.lower() for e in DEFAULT_BLOCKED_EXTENSIONS)
    assert ".html" not in DEFAULT_BLOCKED_EXTENSIONS
    assert ".php" not in DEFAULT_BLOCKED_EXTENSIONS


def test_extension_filter() -> None:
    default = ExtensionFilter()
    assert default.blocks("http://a/img/x.JPG")
    assert default.blocks("http://a/doc.pdf?download=1")
    assert not default.blocks("http://a/page.html")
    assert not default.blocks("http://a/dir/")
    assert not default.blocks("http://a/?f=x.pdf")
    custom = ExtensionFilter(["pdf", ".DOC", " zip ", "", "tar.gz"])
    assert custom.blocks("http://a/x.pdf")
    assert custom.blocks("http://a/x.doc")
    assert custom.blocks("http://a/x.zip")
    assert custom.blocks("http://a/x.TAR.GZ")
    assert not custom.blocks("http://a/x.gz")
    assert not custom.blocks("http://a/x.jpg")
    assert not ExtensionFilter([]).blocks("http://a/x.pdf")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://a/p", None),
        ("http://a/" + "x" * 2100, "url_too_long"),
        ("http://a/" + "/".join(f"d{i}" for i in range(21)), "path_too_deep"),
        ("http://a/" + "/".join(f"d{i}" for i in range(20)), None),
        ("http://a/" + "/".join(f"d{i}" for i in range(20)) + "/", None),
        ("http://a/a/b/a/b/a/b/a", "repeated_segments"),
        ("http://a/a/b/a/b/a/b", None),
        ("http://a/x//////y", "repeated_segments"),
        ("http://a/p?" + "&".join(f"k{i}=1" for i in range(21)), "too_many_params"),
        ("http://a/p?" + "&".join(f"k{i}=1" for i in range(20)), None),
        ("http://a/p?" + "&" * 30 + "a=1", None),
    ],
)
def test_trap_reason(url: str, reason: str | None) -> None:
    assert trap_reason(url, TrapLimits()) == reason


def test_trap_limits_custom() -> None:
    limits = TrapLimits(max_url_length=30, max_path_depth=2, max_segment_repeats=1)
    assert trap_reason("http://a/" + "x" * 40, limits) == "url_too_long"
    assert trap_reason("http://a/x/y/z", limits) == "path_too_deep"
    assert trap_reason("http://a/x/x", limits) == "repeated_segments"
    with pytest.raises(AttributeError):
        limits.max_path_depth = 3  # type: ignore[misc]


# --------------------------------------------------------------------------- scope

SEEDS = ["http://www.h17.test:38211/", "https://b\u00fccher.de/start"]


def test_scope_host() -> None:
    scope = Scope("host", SEEDS)
    assert scope.admits("http://www.h17.test:38211/x")
    assert scope.admits("http://www.h17.test:9999/x")  # ports do not matter to scope
    assert scope.admits("https://xn--bcher-kva.de/a")
    assert not scope.admits("http://a.h17.test/x")
    assert not scope.admits("http://h17.test/x")
    assert not scope.admits("http://other.test/")


def test_scope_domain() -> None:
    scope = Scope("domain", SEEDS)
    assert scope.admits("http://www.h17.test:38211/x")
    assert scope.admits("http://a.b.h17.test/x")
    assert scope.admits("http://h17.test/x")
    assert scope.admits("http://shop.xn--bcher-kva.de/")
    assert not scope.admits("http://h18.test/x")
    assert not scope.admits("http://xh17.test/x")


def test_scope_any() -> None:
    scope = Scope("any", [])
    assert scope.admits("http://anything.example/")
    assert scope.admits("http://[::1]:8080/")


def test_scope_allow_list() -> None:
    scope = Scope("any", SEEDS, allow=["example.com", "re:/blog/", " ", "re:^https://x\\.test/"])
    assert scope.admits("http://example.com/a")
    assert scope.admits("http://sub.example.com/a")
    assert not scope.admits("http://notexample.com/a")
    assert scope.admits("http://other.test/blog/post")
    assert scope.admits("https://x.test/a")
    assert not scope.admits("http://x.test/a")
    assert not scope.admits("http://other.test/shop")
    # the allow-list restricts the mode, never widens it
    narrowed = Scope("domain", SEEDS, allow=["a.h17.test"])
    assert narrowed.admits("http://x.a.h17.test/")
    assert not narrowed.admits("http://b.h17.test/")
    assert not narrowed.admits("http://a.h18.test/")
    only_regex = Scope("host", SEEDS, allow=["re:\\.html$"])
    assert only_regex.admits("http://www.h17.test:38211/p/1.html")
    assert not only_regex.admits("http://www.h17.test:38211/p/1.pdf")
    assert not only_regex.admits("http://other.test/p/1.html")


def test_scope_allow_normalises_domains() -> None:
    scope = Scope("any", [], allow=["Example.COM.", "*.b\u00fccher.de", "http://x.test:8/a"])
    assert scope.admits("http://www.example.com/")
    assert scope.admits("http://xn--bcher-kva.de/")
    assert scope.admits("http://x.test/")


def test_scope_errors() -> None:
    with pytest.raises(ConfigError):
        Scope("everything", [])  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        Scope("any", [], allow=["re:("])
    with pytest.raises(ConfigError):
        Scope("any", [], allow=["bad domain!"])
    with pytest.raises(UrlError):
        Scope("host", ["ftp://x/"])


# --------------------------------------------------------------------------- list files


def test_parse_domain_list() -> None:
    text = "\n".join(
        [
            "# never crawl these",
            "Example.COM",
            "",
            "   ",
            "tracker.test   # inline comment",
            "bad domain.com",
            "http://Foo.Example.org:8080/path?x",
            "b\u00fccher.de",
            "a<b>.com",
            "*.wild.test",
            ".dotted.test",
            "example.com",
            "host.test.",
            "x.test:abc",
            "192.0.2.1",
            "a..b",
        ]
    )
    domains, errors = parse_domain_list(text)
    assert domains == [
        "example.com",
        "tracker.test",
        "foo.example.org",
        "xn--bcher-kva.de",
        "wild.test",
        "dotted.test",
        "host.test",
        "192.0.2.1",
    ]
    assert [n for n, _ in errors] == [6, 9, 14, 16]
    assert "spaces" in errors[0][1]
    assert all(isinstance(m, str) and m for _, m in errors)


def test_parse_domain_list_empty() -> None:
    assert parse_domain_list("") == ([], [])
    assert parse_domain_list("# only\n\n#comments\n") == ([], [])


def test_parse_allow_file() -> None:
    text = "# allow\nExample.COM  # main site\n\nre:/blog/#anchor-ok\nhttps://Sub.Other.test/x\n"
    assert parse_allow_file(text) == ["example.com", "re:/blog/#anchor-ok", "sub.other.test"]
    with pytest.raises(ConfigError, match="line 2"):
        parse_allow_file("ok.test\nre:(\n")
    with pytest.raises(ConfigError, match="line 1"):
        parse_allow_file("two words\n")
    with pytest.raises(ConfigError, match="line 3"):
        parse_allow_file("a.test\n\na<b\n")


# --------------------------------------------------------------------------- properties

_URL_CHARS = st.one_of(
    st.sampled_from(
        [
            *"aZ09-._~!$&'()*+,;=:@/?#%[] \t\n\\\"<>^`{|}",
            *(
                "%2e",
                "%2E",
                "%41",
                "%7e",
                "%zz",
                "%",
                "..",
                "/../",
                "/./",
                ";jsessionid=1",
                "\u00e9",
            ),
        ]
    ),
    st.characters(),
)
_PATHS = st.lists(_URL_CHARS, max_size=20).map("".join)
_QUERIES = st.one_of(
    st.just(""),
    st.lists(
        st.one_of(_URL_CHARS, st.sampled_from(["&", "&sid=1", "PHPSESSID=x&", "&a=b"])),
        max_size=12,
    ).map(lambda cs: "?" + "".join(cs)),
)
_GOOD_HOSTS = st.one_of(
    st.sampled_from(
        [
            "example.com",
            "EXAMPLE.com.",
            "b\u00fccher.de",
            "[::1]",
            "[0:0::1]",
            "127.0.0.1",
            "h17.test",
            "u:p@x.test",
            "%41.test",
            "x_y.test",
            "xn--bcher-kva.de",
        ]
    ),
    st.text(st.characters(categories=["Ll", "Lu", "Nd"]), min_size=1, max_size=10),
)
_HOSTS = st.one_of(
    _GOOD_HOSTS,
    st.sampled_from(["[::1", "a..b", "", "a b", "[zz::1]"]),
    st.text(min_size=0, max_size=12),
)
_GOOD_PORTS = st.one_of(st.just(""), st.just(":"), st.integers(1, 65535).map(lambda p: f":{p}"))
_PORTS = st.one_of(
    _GOOD_PORTS, st.integers(0, 70000).map(lambda p: f":{p}"), st.text(max_size=4).map(":".__add__)
)
_URLISH = st.builds(
    "{}{}{}{}{}".format,
    st.sampled_from(["http://", "HTTPS://", "https://", "ftp://", "http:", "//", "", " http://"]),
    _HOSTS,
    _PORTS,
    _PATHS,
    _QUERIES,
)
# Mostly valid URLs, so that idempotency is exercised on many accepted inputs.
_VALIDISH = st.builds(
    "{}{}{}{}{}".format,
    st.sampled_from(["http://", "HTTPS://", "https://", " \nhttp://", "http:\\\\"]),
    _GOOD_HOSTS,
    _GOOD_PORTS,
    st.one_of(st.just(""), _PATHS.map("/".__add__)),
    _QUERIES,
)
_ANY_URL = st.one_of(_URLISH, _VALIDISH, st.text(max_size=60))

_PROPS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_PROPS
@given(_ANY_URL)
def test_canonicalize_only_raises_url_error(url: str) -> None:
    try:
        result = canonicalize(url)
    except UrlError:
        return
    assert result.startswith(("http://", "https://"))
    assert "#" not in result
    assert result.isascii()


@_PROPS
@given(_VALIDISH)
def test_canonicalize_is_idempotent(url: str) -> None:
    try:
        once = canonicalize(url)
    except UrlError:
        assume(False)
        return
    assert canonicalize(once) == once


@_PROPS
@given(_ANY_URL)
def test_canonicalize_is_idempotent_any_input(url: str) -> None:
    try:
        once = canonicalize(url)
    except UrlError:
        return
    assert canonicalize(once) == once


@_PROPS
@given(st.sampled_from([RFC_BASE, "http://h17.test:38211/p/3.html", "https://[::1]/a/"]), _ANY_URL)
def test_join_never_raises_and_is_canonical(base: str, href: str) -> None:
    result = join(base, href)
    if result is not None:
        assert canonicalize(result) == result


_BASES = st.sampled_from(
    [RFC_BASE, "http://h17.test:38211/p/3.html", "https://[::1]/a/?q", "http://x.test/a/b/c"]
)


@_PROPS
@given(st.lists(st.tuples(_BASES, st.one_of(_ANY_URL, _PATHS.map("/".__add__))), max_size=8))
def test_join_remembered_is_join_worked_out(pairs: list[tuple[str, str]]) -> None:
    """The joins remembered across pages (``urls._JOINED``) give what working them out gives,
    whatever base asked first."""
    from politecrawl.urls import canonical as urls
    for base, href in pairs + [
        (b, h) for b in ("http://other.test:1/z/", RFC_BASE) for _, h in pairs
    ]:
        assert join(base, href) == urls._join(base, href), (base, href)


@_PROPS
@given(st.text(max_size=40), st.text(max_size=40))
def test_join_never_raises_on_garbage(base: str, href: str) -> None:
    result = join(base, href)
    assert result is None or result.startswith(("http://", "https://"))


@_PROPS
@given(_VALIDISH)
def test_keys_of_canonical_urls(url: str) -> None:
    try:
        canon = canonicalize(url)
    except UrlError:
        assume(False)
        return
    host = host_of(canon)
    assert host and canon.startswith(origin_of(canon))
    assert origin_of(canon).endswith(canon.split("/")[2])
    assert robots_url(canon) == origin_of(canon) + "/robots.txt"
    assert is_subdomain_of(host, registered_domain(host))
    assert canonicalize(robots_url(canon)) == robots_url(canon)


def test_huge_urls_refused_before_costly_work() -> None:
    import pytest

    from politecrawl.errors import UrlError
    from politecrawl.urls.canonical import canonicalize, join

    assert join("http://a.example/", "/" + "x" * 70_000) is None
    with pytest.raises(UrlError, match="too long"):
        canonicalize("http://a.example/" + "x" * 70_000)
    with pytest.raises(UrlError, match="host too long"):
        canonicalize("http://" + "a" * 2000 + ".example/")
