"""Sitemap parsing: formats, tolerance, limits, and hostile input (bombs, entities, XXE)."""

from __future__ import annotations

import gzip
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from politecrawl.content.sitemaps import read as sitemaps
from politecrawl.content.sitemaps.read import MAX_UNCOMPRESSED, parse_sitemap
from politecrawl.content.sitemaps.result import Sitemap, SitemapEntry

pytestmark = pytest.mark.unit

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def urlset(*entries: str, ns: str = f' xmlns="{NS}"') -> bytes:
    body = "".join(f"<url>{e}</url>" for e in entries)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset{ns}>{body}</urlset>'.encode()


def locs(*urls: str) -> bytes:
    return urlset(*(f"<loc>{u}</loc>" for u in urls))


def page_urls(result: Sitemap) -> list[str]:
    return [e.url for e in result.pages]


def epoch(year: int, month: int = 1, day: int = 1, hh: int = 0, mm: int = 0, ss: int = 0) -> float:
    return datetime(year, month, day, hh, mm, ss, tzinfo=UTC).timestamp()


# -- urlset fields -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2005", epoch(2005, 1, 1)),
        ("2005-07", epoch(2005, 7, 1)),
        ("2005-07-16", epoch(2005, 7, 16)),
        ("2005-07-16T19:20Z", epoch(2005, 7, 16, 19, 20)),
        ("2005-07-16T19:20+01:00", epoch(2005, 7, 16, 18, 20)),
        ("2005-07-16T19:20:30+01:00", epoch(2005, 7, 16, 18, 20, 30)),
        ("2005-07-16T19:20:30.45-05:00", epoch(2005, 7, 17, 0, 20, 30) + 0.45),
        ("2005-07-16T19:20:30z", epoch(2005, 7, 16, 19, 20, 30)),
        ("2005-07-16T19:20:30", epoch(2005, 7, 16, 19, 20, 30)),  # no zone: UTC
        ("2005-07-16 19:20:30+0000", epoch(2005, 7, 16, 19, 20, 30)),
        ("  \n2005-07-16\n  ", epoch(2005, 7, 16)),
        ("2005-02-30", None),
        ("2005-13", None),
        ("2005-07-16T25:00Z", None),
        ("yesterday", None),
        ("", None),
        ("20050716", None),
        ("2005-07-16T19:20:30+25:00", None),
    ],
)
def test_lastmod_w3c_forms(text: str, expected: float | None) -> None:
    result = parse_sitemap(urlset(f"<loc>http://a.example/</loc><lastmod>{text}</lastmod>"))
    assert result.error is None
    [entry] = result.pages
    assert entry.lastmod == (pytest.approx(expected) if expected is not None else None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("daily", "daily"),
        ("Weekly", "weekly"),
        (" MONTHLY ", "monthly"),
        ("always", "always"),
        ("hourly", "hourly"),
        ("yearly", "yearly"),
        ("never", "never"),
        ("fortnightly", None),
        ("", None),
    ],
)
def test_changefreq(text: str, expected: str | None) -> None:
    [entry] = parse_sitemap(
        urlset(f"<loc>http://a.example/</loc><changefreq>{text}</changefreq>")
    ).pages
    assert entry.changefreq == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.0", 0.0),
        ("0.5", 0.5),
        (".8", 0.8),
        ("1", 1.0),
        ("1.0", 1.0),
        (" 0.3\n", 0.3),
        ("1.5", None),
        ("-0.1", None),
        ("high", None),
        ("nan", None),
        ("inf", None),
        ("", None),
    ],
)
def test_priority(text: str, expected: float | None) -> None:
    [entry] = parse_sitemap(
        urlset(f"<loc>http://a.example/</loc><priority>{text}</priority>")
    ).pages
    assert entry.priority == expected


def test_full_entry_and_missing_fields() -> None:
    result = parse_sitemap(
        urlset(
            "<loc>http://www.example.com/</loc><lastmod>2005-01-01</lastmod>"
            "<changefreq>monthly</changefreq><priority>0.8</priority>",
            "<loc>http://www.example.com/catalog?item=12&amp;desc=vacation_hawaii</loc>",
        )
    )
    assert result == Sitemap(
        pages=[
            SitemapEntry("http://www.example.com/", epoch(2005, 1, 1), "monthly", 0.8),
            SitemapEntry(
                "http://www.example.com/catalog?item=12&desc=vacation_hawaii", None, None, None
            ),
        ],
        children=[],
        skipped=0,
        error=None,
    )


def test_urls_are_canonicalized() -> None:
    result = parse_sitemap(locs("HTTP://WWW.Example.COM:80/a/./b/../c#frag"))
    assert page_urls(result) == ["http://www.example.com/a/c"]


def test_entry_without_loc_is_ignored_not_counted() -> None:
    result = parse_sitemap(urlset("<lastmod>2005</lastmod>", "<loc>http://a.example/</loc>"))
    assert page_urls(result) == ["http://a.example/"]
    assert result.skipped == 0


def test_first_loc_wins() -> None:
    result = parse_sitemap(urlset("<loc>http://a.example/1</loc><loc>http://a.example/2</loc>"))
    assert page_urls(result) == ["http://a.example/1"]


# -- sitemap index ---------------------------------------------------------------


def test_sitemapindex() -> None:
    body = f"""<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="{NS}">
  <sitemap>
    <loc>http://www.example.com/sitemap1.xml.gz</loc>
    <lastmod>2004-10-01T18:23:17+00:00</lastmod>
  </sitemap>
  <sitemap><loc>http://www.example.com/sitemap2.xml.gz</loc></sitemap>
  <sitemap><loc>not a url</loc></sitemap>
</sitemapindex>""".encode()
    result = parse_sitemap(body)
    assert result.pages == []
    assert result.children == [
        SitemapEntry(
            "http://www.example.com/sitemap1.xml.gz", epoch(2004, 10, 1, 18, 23, 17), None, None
        ),
        SitemapEntry("http://www.example.com/sitemap2.xml.gz", None, None, None),
    ]
    assert result.skipped == 1
    assert result.error is None


# -- gzip ------------------------------------------------------------------------


def test_gzipped_urlset_detected_by_magic_not_name() -> None:
    body = gzip.compress(locs("http://a.example/1", "http://a.example/2"))
    result = parse_sitemap(body, url="http://a.example/sitemap.xml")  # name says plain XML
    assert page_urls(result) == ["http://a.example/1", "http://a.example/2"]
    assert result.error is None


def test_gzipped_sitemapindex() -> None:
    body = gzip.compress(
        b"<sitemapindex><sitemap><loc>http://a.example/s.xml</loc></sitemap></sitemapindex>"
    )
    result = parse_sitemap(body)
    assert [e.url for e in result.children] == ["http://a.example/s.xml"]
    assert result.error is None


def test_gzipped_text_list() -> None:
    result = parse_sitemap(gzip.compress(b"http://a.example/1\nhttp://a.example/2\n"))
    assert page_urls(result) == ["http://a.example/1", "http://a.example/2"]


def test_gzip_multiple_members() -> None:
    data = locs(*(f"http://a.example/{i}" for i in range(100)))
    body = gzip.compress(data[:1000]) + gzip.compress(data[1000:])
    result = parse_sitemap(body)
    assert len(result.pages) == 100
    assert result.error is None


def test_double_gzip() -> None:
    body = gzip.compress(gzip.compress(locs("http://a.example/")))
    result = parse_sitemap(body)
    assert page_urls(result) == ["http://a.example/"]
    assert result.error is None


def test_trailing_garbage_after_gzip_member_is_ignored() -> None:
    result = parse_sitemap(gzip.compress(locs("http://a.example/")) + b"\0\0junk")
    assert page_urls(result) == ["http://a.example/"]
    assert result.error is None


def test_truncated_gzip_keeps_what_inflated() -> None:
    data = locs(*(f"http://a.example/{i}" for i in range(2000)))
    body = gzip.compress(data)
    result = parse_sitemap(body[: len(body) // 2])
    assert result.error == "corrupt gzip"
    assert 0 < len(result.pages) < 2000
    assert page_urls(result) == [f"http://a.example/{i}" for i in range(len(result.pages))]


def test_corrupt_gzip() -> None:
    assert parse_sitemap(b"\x1f\x8b\x08\x00garbage-garbage-garbage").error == "corrupt gzip"
    assert parse_sitemap(b"\x1f\x8b").error == "corrupt gzip"


def _zero_bomb(megabytes: int, prefix: bytes = b"", filler: bytes = b"\0") -> bytes:
    """gzip of ``prefix`` plus ``megabytes`` MiB of ``filler``, built 1 MiB at a time."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [packer.compress(prefix)]
    chunk = filler * ((1 << 20) // len(filler))
    parts.extend(packer.compress(chunk) for _ in range(megabytes))
    parts.append(packer.flush())
    return b"".join(parts)


@pytest.fixture(scope="module")
def zero_bomb() -> bytes:
    return _zero_bomb(200)


def test_gzip_bomb_stops_at_cap(zero_bomb: bytes) -> None:
    assert len(zero_bomb) < 1_000_000  # 200 MiB of zeros
    start = time.process_time()
    result = parse_sitemap(zero_bomb)
    assert time.process_time() - start < 5
    assert result.error == "too large"
    assert result.pages == [] and result.children == []


def test_gzip_bomb_keeps_what_was_parsed() -> None:
    prefix = f'<urlset xmlns="{NS}"><url><loc>http://a.example/kept</loc></url>'.encode()
    bomb = _zero_bomb(60, prefix, filler=b" " * 64)
    start = time.process_time()
    result = parse_sitemap(bomb)
    assert time.process_time() - start < 10
    assert result.error == "too large"
    assert page_urls(result) == ["http://a.example/kept"]


def test_plain_body_over_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sitemaps, "MAX_UNCOMPRESSED", 200)
    body = locs(*(f"http://a.example/{i}" for i in range(50)))
    result = parse_sitemap(body)
    assert result.error == "too large"
    assert 0 < len(result.pages) < 50
    gz = parse_sitemap(gzip.compress(body))
    assert gz.error == "too large"
    assert gz.pages == result.pages


def test_cap_constant() -> None:
    assert MAX_UNCOMPRESSED == 50 * 1024 * 1024
    assert sitemaps.MAX_URLS == 50_000


# -- plain text ------------------------------------------------------------------


def test_text_list() -> None:
    body = (
        b"\xef\xbb\xbfhttp://a.example/1\n"
        b"\n"
        b"   \t\n"
        b"# a comment, not a URL\n"
        b"  https://a.example/2  \r\n"
        b"ftp://a.example/file\n"
        b"http://\n"
        b"http://a.example/3\rhttp://a.example/4\r"
        b"http://a.example/\xe4\xb8\xad\n"  # UTF-8 path
        b"http://a.example/\xff\n"  # not UTF-8: skipped
    )
    result = parse_sitemap(body, content_type="text/plain")
    assert page_urls(result) == [
        "http://a.example/1",
        "https://a.example/2",
        "http://a.example/3",
        "http://a.example/4",
        "http://a.example/%E4%B8%AD",
    ]
    assert result.skipped == 3  # ftp, "http://", undecodable
    assert result.error is None


def test_text_without_urls_is_not_a_sitemap() -> None:
    assert parse_sitemap(b"hello world\nno urls here\n").error == "not a sitemap"
    assert parse_sitemap(b'{"urls": []}').error == "not a sitemap"


def test_content_type_does_not_override_an_xml_body() -> None:
    result = parse_sitemap(locs("http://a.example/"), content_type="text/html; charset=utf-8")
    assert page_urls(result) == ["http://a.example/"]


def test_html_content_type_text_body_is_not_scanned() -> None:
    result = parse_sitemap(b"Error: see http://a.example/ for help", content_type="text/html")
    assert result.error == "not a sitemap"
    assert result.pages == []


# -- namespaces, prefixes, extensions -----------------------------------------------


@pytest.mark.parametrize(
    "ns",
    [
        "",
        f' xmlns="{NS}"',
        ' xmlns="http://www.google.com/schemas/sitemap/0.84"',
        ' xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1" '
        'xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"',
    ],
)
def test_namespace_variants(ns: str) -> None:
    result = parse_sitemap(urlset("<loc>http://a.example/</loc><priority>0.5</priority>", ns=ns))
    assert result.pages == [SitemapEntry("http://a.example/", None, None, 0.5)]


def test_prefixed_sitemap_elements() -> None:
    body = (
        f'<sm:urlset xmlns:sm="{NS}"><sm:url><sm:loc>http://a.example/</sm:loc>'
        "<sm:changefreq>daily</sm:changefreq></sm:url></sm:urlset>"
    ).encode()
    assert parse_sitemap(body).pages == [SitemapEntry("http://a.example/", None, "daily", None)]


def test_undeclared_prefix_is_tolerated() -> None:
    body = b"<urlset><url><loc>http://a.example/</loc><x:y>z</x:y></url></urlset>"
    assert page_urls(parse_sitemap(body)) == ["http://a.example/"]


def test_image_and_news_extensions_are_not_pages() -> None:
    body = urlset(
        "<image:image><image:loc>http://img.example/1.png</image:loc></image:image>"
        "<loc>http://a.example/page</loc>"
        "<news:news><news:publication><news:name>X</news:name></news:publication>"
        "<news:publication_date>2008-12-23</news:publication_date></news:news>"
        '<xhtml:link rel="alternate" hreflang="de" href="http://a.example/de"/>',
        ns=f' xmlns="{NS}" xmlns:image="i" xmlns:news="n" xmlns:xhtml="x"',
    )
    result = parse_sitemap(body)
    assert page_urls(result) == ["http://a.example/page"]
    assert result.skipped == 0


# -- text content forms ----------------------------------------------------------------


def test_cdata_and_escapes_in_loc() -> None:
    result = parse_sitemap(
        locs(
            "<![CDATA[http://a.example/c?x=1&y=2]]>",
            "http://a.example/e?x=1&amp;y=2",
            "http://a.example/n?x=1&#38;y=2&#x26;z=3",
            "  <![CDATA[ http://a.example/mixed ]]>  ",
        )
    )
    assert page_urls(result) == [
        "http://a.example/c?x=1&y=2",
        "http://a.example/e?x=1&y=2",
        "http://a.example/n?x=1&y=2&z=3",
        "http://a.example/mixed",
    ]


def test_whitespace_around_loc() -> None:
    result = parse_sitemap(locs("\n\t  http://a.example/ws  \n", "\r\n http://a.example/crlf\r\n"))
    assert page_urls(result) == ["http://a.example/ws", "http://a.example/crlf"]


def test_comments_are_not_entries() -> None:
    body = (
        b"<urlset><!-- <url><loc>http://a.example/hidden</loc></url> -->"
        b"<url><!-- x --><loc>http://a.example/shown</loc></url><?pi data?></urlset>"
    )
    assert page_urls(parse_sitemap(body)) == ["http://a.example/shown"]


def test_bom_and_leading_whitespace_before_declaration() -> None:
    body = b"\xef\xbb\xbf\n\n  " + locs("http://a.example/")
    result = parse_sitemap(body)
    assert page_urls(result) == ["http://a.example/"]
    assert result.error is None


def test_utf16_document() -> None:
    text = '<?xml version="1.0" encoding="UTF-16"?><urlset><url><loc>http://a.example/\u00e9</loc></url></urlset>'
    result = parse_sitemap(text.encode("utf-16"))
    assert page_urls(result) == ["http://a.example/%C3%A9"]


# -- invalid locations and the limit ---------------------------------------------------


def test_invalid_locations_skipped_and_counted() -> None:
    result = parse_sitemap(
        locs(
            "http://a.example/ok",
            "/relative/path",
            "ftp://a.example/file",
            "javascript:alert(1)",
            "mailto:x@a.example",
            "http://",
            "http://bad host/",
            "",
            "https://a.example:99999/",
            "https://b.example/ok",
        )
    )
    assert page_urls(result) == ["http://a.example/ok", "https://b.example/ok"]
    assert result.skipped == 8
    assert result.error is None


def test_max_urls_limit() -> None:
    body = locs(*(f"http://a.example/{i}" for i in range(10)))
    result = parse_sitemap(body, max_urls=3)
    assert page_urls(result) == ["http://a.example/0", "http://a.example/1", "http://a.example/2"]
    assert result.skipped == 7
    assert result.error == "too many urls"


def test_max_urls_counts_invalid_locations_too() -> None:
    """The limit bounds work: the first max_urls locations are examined, valid or not."""
    body = locs("ftp://x/", "http://a.example/1", "http://a.example/2", "http://a.example/3")
    result = parse_sitemap(body, max_urls=2)
    assert page_urls(result) == ["http://a.example/1"]
    assert result.skipped == 3


def test_max_urls_exactly_reached_is_no_error() -> None:
    result = parse_sitemap(locs("http://a.example/1", "http://a.example/2"), max_urls=2)
    assert len(result.pages) == 2
    assert result.error is None


def test_max_urls_in_text_list_and_index() -> None:
    text = "\n".join(f"http://a.example/{i}" for i in range(10)).encode()
    result = parse_sitemap(text, max_urls=4)
    assert len(result.pages) == 4 and result.skipped == 6 and result.error == "too many urls"
    index = "".join(f"<sitemap><loc>http://a.example/{i}.xml</loc></sitemap>" for i in range(5))
    result = parse_sitemap(f"<sitemapindex>{index}</sitemapindex>".encode(), max_urls=1)
    assert len(result.children) == 1 and result.skipped == 4


def test_over_limit_then_truncated_counts_each_entry_once() -> None:
    body = locs(*(f"http://a.example/{i}" for i in range(10)))
    cut = body[: body.index(b"http://a.example/8")]  # 0-7 complete, 8 cut off
    result = parse_sitemap(cut, max_urls=3)
    assert page_urls(result) == [f"http://a.example/{i}" for i in range(3)]
    assert result.skipped == 5
    assert result.error == "truncated xml"


@pytest.mark.parametrize("bad", [1, 2, 6])
def test_over_limit_with_salvage_counts_each_entry_once(bad: int) -> None:
    urls = [f"http://a.example/{i}" + ("?a&b" if i == bad else "") for i in range(10)]
    result = parse_sitemap(locs(*urls), max_urls=3)
    assert page_urls(result) == urls[:3]
    assert result.skipped == 7
    assert result.error == "malformed xml"


def test_default_limit_is_50k() -> None:
    body = locs(*(f"http://a.example/{i}" for i in range(50_010)))
    start = time.process_time()
    result = parse_sitemap(body)
    elapsed = time.process_time() - start
    assert len(result.pages) == 50_000
    assert result.skipped == 10
    assert result.error == "too many urls"
    assert elapsed < 10  # ~0.3 s measured; generous for loaded CI, catches quadratic walks


# -- malformed and truncated XML --------------------------------------------------------


def test_truncated_xml_keeps_entries_before_the_cut() -> None:
    body = locs(*(f"http://a.example/{i}" for i in range(10)))
    cut = body[: body.index(b"http://a.example/7")]
    result = parse_sitemap(cut)
    assert result.error == "truncated xml"
    assert page_urls(result) == [f"http://a.example/{i}" for i in range(7)]


def test_unescaped_ampersand_keeps_before_and_salvages_after() -> None:
    body = locs("http://a.example/1", "http://a.example/2?a=1&b=2", "http://a.example/3")
    result = parse_sitemap(body)
    assert result.error == "malformed xml"
    assert page_urls(result) == [
        "http://a.example/1",
        "http://a.example/2?a=1&b=2",
        "http://a.example/3",
    ]


def test_salvage_reads_fields_and_ignores_nested_extensions() -> None:
    body = urlset(
        "<loc>http://a.example/1</loc>",
        "<loc>http://a.example/2?a&b</loc><lastmod>2005</lastmod><priority>0.9</priority>",
        "<image:image><image:loc>http://img.example/x.png</image:loc></image:image>"
        "<loc><![CDATA[http://a.example/3?x&y]]></loc><changefreq>daily</changefreq>",
        "<loc>http://a.example/4?q=1&amp;r=2&#38;s=3&nbsp;</loc>",
        ns=' xmlns:image="i"',
    )
    result = parse_sitemap(body)
    assert result.error == "malformed xml"
    assert result.pages == [
        SitemapEntry("http://a.example/1", None, None, None),
        SitemapEntry("http://a.example/2?a&b", epoch(2005, 1, 1), None, 0.9),
        SitemapEntry("http://a.example/3?x&y", None, "daily", None),
        SitemapEntry("http://a.example/4?q=1&r=2&s=3&nbsp;", None, None, None),
    ]


def test_salvage_is_linear_on_hostile_input() -> None:
    for tail in (
        b"<url>" * 300_000,
        b"<url><loc>" * 200_000,
        b"<url>" + b"<loc><![CDATA[" * 200_000 + b"</url>",
        b"<url>" + b"<loc>" * 300_000 + b"</url>",
    ):
        start = time.process_time()
        result = parse_sitemap(b"<urlset>&" + tail)
        assert time.process_time() - start < 3
        assert result.error == "malformed xml"
        assert result.pages == []


def test_garbage_before_root_is_not_a_sitemap() -> None:
    assert parse_sitemap(b"<<<>>>").error == "not a sitemap"
    assert parse_sitemap(b"<?xml version='1.0'?>\n<").error == "not a sitemap"


# -- not sitemaps -------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"<!DOCTYPE html><html><head><title>404</title></head><body><a href='http://a/'>x</a></body></html>",
        b"<html><body><p>unclosed<br></body></html>",
        b'<?xml version="1.0"?><note><to>Tove</to></note>',
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    ],
)
def test_not_a_sitemap(body: bytes) -> None:
    result = parse_sitemap(body, content_type="text/html")
    assert result.error == "not a sitemap"
    assert result.pages == [] and result.children == [] and result.skipped == 0


@pytest.mark.parametrize("body", [b"", b"   \n\t ", gzip.compress(b""), b"\xef\xbb\xbf"])
def test_empty(body: bytes) -> None:
    assert parse_sitemap(body).error == "empty"


def test_empty_urlset_is_fine() -> None:
    assert parse_sitemap(f'<urlset xmlns="{NS}"/>'.encode()) == Sitemap([], [], 0, None)


# -- feeds ---------------------------------------------------------------------------


def test_rss2_feed() -> None:
    body = b"""<?xml version="1.0"?>
<rss version="2.0"><channel>
  <title>Site</title><link>http://a.example/</link>
  <item><title>One</title><link>http://a.example/one</link>
        <pubDate>Sat, 07 Sep 2002 09:42:31 GMT</pubDate></item>
  <item><title>Two</title><link> http://a.example/two </link></item>
  <item><title>No link</title></item>
</channel></rss>"""
    result = parse_sitemap(body)
    assert result.pages == [
        SitemapEntry("http://a.example/one", epoch(2002, 9, 7, 9, 42, 31), None, None),
        SitemapEntry("http://a.example/two", None, None, None),
    ]
    assert result.error is None


def test_rss1_rdf_feed() -> None:
    body = b"""<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
  xmlns="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/">
  <channel rdf:about="http://a.example/"><link>http://a.example/</link></channel>
  <item rdf:about="http://a.example/x"><link>http://a.example/x</link>
    <dc:date>2003-01-02T03:04:05Z</dc:date></item>
</rdf:RDF>"""
    assert parse_sitemap(body).pages == [
        SitemapEntry("http://a.example/x", epoch(2003, 1, 2, 3, 4, 5), None, None)
    ]


def test_atom_feed_links_resolve_against_feed_url() -> None:
    body = b"""<feed xmlns="http://www.w3.org/2005/Atom">
  <link href="http://a.example/"/><link rel="self" href="http://a.example/feed"/>
  <entry><link rel="edit" href="/edit/1"/><link href="/posts/1"/>
         <updated>2003-12-13T18:30:02Z</updated></entry>
  <entry><link rel="alternate" href="http://b.example/2"/>
         <published>2003-12-13T08:29:29-04:00</published></entry>
</feed>"""
    result = parse_sitemap(body, url="http://a.example/feed.atom")
    assert result.pages == [
        SitemapEntry("http://a.example/posts/1", epoch(2003, 12, 13, 18, 30, 2), None, None),
        SitemapEntry("http://b.example/2", epoch(2003, 12, 13, 12, 29, 29), None, None),
    ]
    without_base = parse_sitemap(body)
    assert page_urls(without_base) == ["http://b.example/2"]
    assert without_base.skipped == 1


# -- hostile XML -----------------------------------------------------------------------

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<urlset><url><loc>http://a.example/&lol9;</loc></url></urlset>"""


def test_billion_laughs_is_refused_not_expanded() -> None:
    start = time.process_time()
    result = parse_sitemap(BILLION_LAUGHS)
    assert time.process_time() - start < 1
    assert result == Sitemap([], [], 0, "entities refused")


def test_gzipped_billion_laughs() -> None:
    assert parse_sitemap(gzip.compress(BILLION_LAUGHS)).error == "entities refused"


def test_xxe_never_reads_the_file(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    for doctype in (
        f'<!DOCTYPE urlset [<!ENTITY x SYSTEM "file://{secret}">]>',
        '<!DOCTYPE urlset [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
        f'<!DOCTYPE urlset [<!ENTITY % p SYSTEM "file://{secret}"> %p;]>',
    ):
        body = f"{doctype}<urlset><url><loc>http://a.example/&x;</loc></url></urlset>".encode()
        result = parse_sitemap(body)
        assert result == Sitemap([], [], 0, "entities refused")


def test_external_dtd_subset_is_not_loaded(tmp_path: Path) -> None:
    dtd = tmp_path / "evil.dtd"
    dtd.write_text('<!ENTITY x "http://evil.example/">')
    body = (
        f'<!DOCTYPE urlset SYSTEM "file://{dtd}">'
        "<urlset><url><loc>&x;</loc></url><url><loc>http://a.example/</loc></url></urlset>"
    ).encode()
    result = parse_sitemap(body)
    assert page_urls(result) == ["http://a.example/"]  # &x; stayed unexpanded: empty loc
    assert result.skipped == 1


def test_doctype_without_entities_is_fine() -> None:
    body = b'<!DOCTYPE urlset SYSTEM "sitemap.dtd"><urlset><url><loc>http://a.example/</loc></url></urlset>'
    assert page_urls(parse_sitemap(body)) == ["http://a.example/"]


# -- hostile structure: expat's own memory stays bounded -----------------------------


def _peak_mb(body: bytes, max_urls: int = sitemaps.MAX_URLS) -> tuple[Sitemap, float]:
    tracemalloc.start()
    try:
        result = parse_sitemap(body, max_urls=max_urls)
        return result, tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def _hostile() -> Iterator[tuple[str, bytes]]:
    head = locs("http://a.example/1", "http://a.example/2")[: -len(b"</urlset>")]
    yield "deep", head + b"<a>" * 500_000
    yield "names", head + b"".join(b"<a%d/>" % i for i in range(300_000)) + b"</urlset>"
    yield "attr names", head + b"".join(b"<a b%d=''/>" % i for i in range(200_000))
    yield "attrs", head + b"<a " + b"".join(b"b%d='' " % i for i in range(100)) + b"/>"
    yield "crowded tag", head + b"<a " + b"".join(b"b%d='>' " % i for i in range(300_000)) + b"/>"


@pytest.mark.parametrize(("kind", "body"), list(_hostile()), ids=[k for k, _ in _hostile()])
def test_hostile_structure_is_bounded(kind: str, body: bytes) -> None:
    start = time.process_time()
    result, peak = _peak_mb(body)
    assert time.process_time() - start < 5
    assert peak < 30, f"{kind}: {peak:.0f} MB for {len(body) / 1e6:.1f} MB"
    assert result.error == "too complex"
    assert page_urls(result) == ["http://a.example/1", "http://a.example/2"]


def test_hostile_structure_after_the_limit_and_in_feeds() -> None:
    body = locs("http://a.example/1", "http://a.example/2")[: -len(b"</urlset>")]
    result, peak = _peak_mb(body + b"<a>" * 500_000, max_urls=1)
    assert result.error == "too complex" and len(result.pages) == 1 and peak < 30
    result, peak = _peak_mb(b"<rss><channel>" + b"<a>" * 500_000)
    assert result.error == "too complex" and peak < 30


def test_long_text_and_64_attributes_are_fine() -> None:
    attrs = " ".join(f'a{i}="v>{i}"' for i in range(64))
    long_loc = "http://a.example/" + "x" * 60_000  # under the 64 KiB URL cap
    body = urlset(f"<loc>{long_loc}</loc><ext:e {attrs}/>", ns=' xmlns:ext="e"') + b" " * 2_000_000
    result = parse_sitemap(body)
    assert result.error is None and page_urls(result) == [long_loc]


def test_extension_heavy_sitemap_is_not_too_complex() -> None:
    names = [f"x{i}" for i in range(200)]  # 200 distinct extension elements per entry
    ext = "".join(f"<ext:{n} a='1' b='2'>v</ext:{n}>" for n in names)
    body = urlset(
        *(f"<loc>http://a.example/{i}</loc>{ext}" for i in range(50)), ns=' xmlns:ext="e"'
    )
    result = parse_sitemap(body)
    assert result.error is None and len(result.pages) == 50


# -- never raises ----------------------------------------------------------------------


def _check(result: Sitemap) -> None:
    assert isinstance(result, Sitemap)
    assert result.skipped >= 0
    assert result.error is None or isinstance(result.error, str)
    for entry in (*result.pages, *result.children):
        assert entry.url.startswith(("http://", "https://"))
        assert entry.priority is None or 0.0 <= entry.priority <= 1.0


@settings(max_examples=300, deadline=2000)
@given(st.binary(max_size=4096))
def test_arbitrary_bytes_never_raise(body: bytes) -> None:
    _check(parse_sitemap(body))
    _check(parse_sitemap(b"\x1f\x8b" + body))
    _check(parse_sitemap(gzip.compress(body)))


_FRAGMENTS = st.sampled_from(
    [
        "<url>", "</url>", "<loc>", "</loc>", "<lastmod>", "</lastmod>", "<priority>",
        "</priority>", "<changefreq>", "</changefreq>", "<sitemap>", "</sitemap>",
        "<![CDATA[", "]]>", "&amp;", "&", "&#x26;", "&#0;", "<!--", "-->", "http://a.example/",
        "https://b.example/x?y=1", "ftp://c/", "2005-01-01", "0.5", "daily", " ", "\n",
        "<image:loc>", "</image:loc>", '<!ENTITY a "b">', "<!DOCTYPE urlset [", "]>",
        "<item>", "<link>", "</link>", '<link href="/x"/>', "\x00", "\xe9",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=2000)
@given(
    root=st.sampled_from(["urlset", "sitemapindex", "rss", "feed", "sm:urlset", "html"]),
    parts=st.lists(_FRAGMENTS | st.text(max_size=20), max_size=60),
    max_urls=st.integers(min_value=0, max_value=5),
)
def test_sitemap_shaped_noise_never_raises(root: str, parts: list[str], max_urls: int) -> None:
    body = f"<{root}>{''.join(parts)}</{root}>".encode()
    result = parse_sitemap(body, url="http://a.example/s.xml", max_urls=max_urls)
    _check(result)
    assert len(result.pages) + len(result.children) <= max_urls
    _check(parse_sitemap(body[: len(body) // 2]))


@settings(max_examples=200, deadline=2000)
@given(st.lists(st.text(max_size=40), max_size=40))
def test_text_lists_never_raise(lines: list[str]) -> None:
    body = "\n".join(f"http://{line}" if i % 2 else line for i, line in enumerate(lines))
    _check(parse_sitemap(body.encode("utf-8", "surrogatepass")))
