"""textdecode: only WHATWG Encoding Standard labels name a charset; the header and meta parsing.

A Python codec name is no charset label: ``unicode_escape`` reads ``C:\\new`` as a newline,
``utf-7`` re-spells markup, ``rot13``/``base64``/``punycode`` are no charsets at all. Such a
declaration is ignored and the detector decides, as a browser would.
"""

from __future__ import annotations

import codecs
import encodings.aliases

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from politecrawl.content.charsets import _LABELS, DETECTABLE, DETECTED_ALIASES, ENCODINGS
from politecrawl.content.charsets import codec as label_codec
from politecrawl.content.decoding import decode_html

pytestmark = pytest.mark.unit

RUSSIAN = "Москва - столица России, крупнейший по численности населения город страны."
WEB_CODECS = {codec for codec, _ in ENCODINGS.values() if codec is not None}

# Python codecs a server might name that no browser knows (the fuzzer's list and a few more)
PYTHON_ONLY = [
    "unicode_escape", "raw_unicode_escape", "unicode-escape", "rot13", "rot_13", "base64",
    "base64_codec", "punycode", "idna", "utf-7", "unicode-1-1-utf-7", "utf-32", "UTF-32LE",
    "hex", "zlib", "bz2", "uu", "quopri", "undefined", "mbcs", "oem", "palmos", "cp65001",
    "utf-8-sig", "utf8mb4", "latin-1", "utf-16-le", "cp437", "cp037", "tactis", "string_escape",
    "mac-roman", "euc_jis_2004", "johab", "x-mac-greek", "utf_8",
]  # fmt: skip


def page(text: str, head: str = "") -> str:
    return f"<html><head>{head}<title>t</title></head><body><p>{text}</p></body></html>"


@pytest.mark.parametrize(
    ("label", "codec"),
    [("utf-8", "utf-8"), ("UTF8", "utf-8"), (" unicode-1-1-utf-8\t", "utf-8"),
     ("x-unicode20utf8", "utf-8"), ("latin1", "cp1252"), ("ISO-8859-1", "cp1252"),
     ("ascii", "cp1252"), ("US-ASCII", "cp1252"), ("iso_8859-1:1987", "cp1252"),
     ("ansi_x3.4-1968", "cp1252"), ("windows-1252", "cp1252"), ("iso-8859-9", "cp1254"),
     ("shift_jis", "cp932"), ("sjis", "cp932"), ("ms_kanji", "cp932"), ("windows-31j", "cp932"),
     ("gb2312", "gb18030"), ("GBK", "gb18030"), ("chinese", "gb18030"), ("gb18030", "gb18030"),
     ("euc-kr", "cp949"), ("ks_c_5601-1987", "cp949"), ("windows-949", "cp949"),
     ("big5", "big5hkscs"), ("big5-hkscs", "big5hkscs"), ("euc-jp", "euc_jp"),
     ("csiso2022jp", "iso2022_jp"), ("koi8-r", "koi8-r"), ("koi", "koi8-r"),
     ("koi8-ru", "koi8-u"), ("866", "cp866"), ("l2", "iso8859-2"), ("csisolatin9", "iso8859-15"),
     ("iso-8859-16", "iso8859-16"), ("iso-8859-8-i", "iso8859-8"), ("logical", "iso8859-8"),
     ("tis-620", "cp874"), ("iso-8859-11", "cp874"), ("x-cp1251", "cp1251"),
     ("mac", "mac-roman"), ("x-mac-ukrainian", "mac-cyrillic"), ("utf-16", "utf-16-le"),
     ("ucs-2", "utf-16-le"), ("unicodefffe", "utf-16-be"), ("utf-16be", "utf-16-be")],
)  # fmt: skip
def test_whatwg_labels_resolve(label: str, codec: str) -> None:
    assert label_codec(label) == codec


@pytest.mark.parametrize(
    ("label", "codec", "text"),
    [("koi8", "koi8-r", RUSSIAN), ("x-sjis", "cp932", "東京は日本の首都であり、世界最大級の都市圏"),
     ("csgb2312", "gb18030", "北京是中华人民共和国的首都，也是全国的政治、文化中心。"),
     ("korean", "cp949", "서울은 대한민국의 수도이며 가장 큰 도시이다."),
     ("greek8", "iso8859-7", "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας."),
     ("csisolatin2", "iso8859-2", "Zażółć gęślą jaźń. Wrocław jest pięknym miastem."),
     ("l1", "cp1252", "He said \u201cit\u2019s fine\u201d \u2014 the café\u2019s menu."),
     ("unicode20utf8", "utf-8", "naïve café ✓")],
)  # fmt: skip
@pytest.mark.parametrize("where", ["header", "meta"])
def test_aliases_decode_pages(label: str, codec: str, text: str, where: str) -> None:
    head = f'<meta charset="{label.upper()}">' if where == "meta" else ""
    header = f"text/html; charset={label}" if where == "header" else "text/html"
    d = decode_html(page(text, head).encode(codec), header)
    assert (d.source, d.charset) == (where, codec)
    assert text in d.text


def test_the_table_is_the_standard() -> None:
    labels = [label for _, ls in ENCODINGS.values() for label in ls.split()]
    assert len(labels) == len(set(labels)) == len(_LABELS) == 228  # the standard's count
    assert all(label == label.lower().strip() for label in labels)
    for name, (codec, _) in ENCODINGS.items():
        assert _LABELS[name] == name  # each encoding's name is one of its labels
        if codec is not None:
            assert codecs.lookup(codec).name == codec  # what Decoded.charset reports
    for name in DETECTABLE:  # every answer the detector may give has a decoder here
        assert label_codec(DETECTED_ALIASES.get(name, name)) is not None, name


def test_unicode_escape_header_is_ignored() -> None:
    body = "<p>C:\\new\\table \\N{SNOWMAN} café</p>".encode()
    d = decode_html(body, "text/html; charset=unicode_escape")
    assert (d.source, d.charset) == ("detected", "utf-8")
    assert "C:\\new\\table \\N{SNOWMAN} café" in d.text


@pytest.mark.parametrize("label", PYTHON_ONLY)
@pytest.mark.parametrize("where", ["header", "meta"])
def test_python_only_codecs_are_no_labels(label: str, where: str) -> None:
    assert label_codec(label) is None
    text = "C:\\new +ADw-script+AD4- naïve café — Grüße"
    head = f'<meta charset="{label}">' if where == "meta" else ""
    header = f"text/html; charset={label}" if where == "header" else None
    d = decode_html(page(text, head).encode("utf-8"), header)
    assert (d.source, d.charset) == ("detected", "utf-8")  # the detector decided
    assert text in d.text


PYTHON_NAMES = sorted(set(encodings.aliases.aliases) | set(encodings.aliases.aliases.values()))
# what fits in a header parameter and a quoted attribute as it is
LABEL_CHARS = st.characters(exclude_characters=";,\"'\\<>", exclude_categories=["Cs"])


@settings(max_examples=300, deadline=None)
@given(
    label=st.one_of(st.sampled_from(PYTHON_NAMES), st.text(LABEL_CHARS, max_size=20)),
    case=st.sampled_from(["lower", "upper", "title"]),
)
def test_only_whatwg_labels_resolve(label: str, case: str) -> None:
    """Any Python codec name or alias, in any case, names a charset only if WHATWG lists it."""
    label = getattr(label, case)()
    codec = label_codec(label)
    if label.isascii() and label.strip("\t\n\f\r ").lower() in _LABELS:
        assert codec in WEB_CODECS or codec is None
    else:
        assert codec is None
    head = f'<meta charset="{label}">'.encode("utf-8", "replace")
    body = b"<html><head>" + head + "</head><body>naïve café".encode()
    d = decode_html(body, f"text/html; charset={label}")
    assert d.charset in WEB_CODECS
    if codec is None:
        assert (d.charset, "naïve café" in d.text) == ("utf-8", True)


@pytest.mark.parametrize(
    "label", ["iso-2022-kr", "csiso2022kr", "hz-gb-2312", "iso-2022-cn", "iso-2022-cn-ext",
              "replacement"],
)  # fmt: skip
def test_replacement_labels_do_not_decode(label: str) -> None:
    """Browsers decode these to one U+FFFD; here they count as no declaration."""
    assert label in _LABELS and label_codec(label) is None
    for text, codec in (("中文网页", "hz"), ("한국어 텍스트", "iso2022_kr")):
        head = f'<meta charset="{label}">'
        for body, header in (
            (page(text).encode(codec), f"text/html; charset={label}"),
            (page(text, head).encode(codec), None),
        ):
            d = decode_html(body, header)
            assert d.charset != codec and d.source in ("default", "detected")
            assert text not in d.text


def test_x_user_defined() -> None:
    """In a meta it means windows-1252 (HTML says so); in a header, no declaration."""
    body = page("caf\u00e9 \u201cok\u201d", '<meta charset="x-user-defined">').encode("cp1252")
    assert (decode_html(body, None).source, decode_html(body, None).charset) == ("meta", "cp1252")
    d = decode_html(page("café").encode("cp1252"), "text/html; charset=x-user-defined")
    assert d.source == "detected"


@pytest.mark.parametrize(
    "header",
    ['text/html; charset="koi8-r"', "text/html;charset=KOI8-R ", "TEXT/HTML; CHARSET=koi8-r",
     'text/html; q="x;charset=utf-8"; charset=koi8-r', "text/html; charset=koi8-r; charset=utf-8",
     'text/html; charset="koi8\\-r"', "charset=koi8-r", "text/html; charset=koi8-r, text/plain"],
)  # fmt: skip
def test_header_charset_parameter(header: str) -> None:
    d = decode_html(page(RUSSIAN).encode("koi8-r"), header)
    assert (d.source, d.charset) == ("header", "koi8-r")


@pytest.mark.parametrize(
    "head",
    ['<!-- <meta charset="utf-8"> --><meta charset="koi8-r">',
     '<!--><meta charset="koi8-r">',  # "<!-->" is a whole comment
     "<div title='<meta charset=\"utf-8\">'><meta charset=koi8-r>",
     '<meta charset="rot13"><meta charset="koi8-r">',  # the first usable one
     '<meta charset="">  <META CHARSET=KOI8-R>',
     '<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">',
     "<meta content='text/html; charset=\"koi8-r\"' http-equiv=content-type>",
     '<meta http-equiv="refresh" content="charset=utf-8"><meta/charset="koi8-r"/>',
     '<?php echo 1 ?><meta charset="koi8-r">'],
)  # fmt: skip
def test_meta_prescan(head: str) -> None:
    d = decode_html(page(RUSSIAN, head).encode("koi8-r"), "text/html")
    assert (d.source, d.charset) == ("meta", "koi8-r")
    assert RUSSIAN in d.text


@pytest.mark.parametrize(
    "head",
    ['<meta content="text/html; charset=koi8-r">',  # no http-equiv pragma
     '<meta name="charset" content="koi8-r">', "<metacharset=koi8-r>",
     '<!-- <meta charset="koi8-r"> -->', '<p data-x="<meta charset=koi8-r>">'],
)  # fmt: skip
def test_not_a_meta_declaration(head: str) -> None:
    d = decode_html(page(RUSSIAN, head).encode("koi8-r"), "text/html")
    assert d.source == "detected"


def test_xml_declaration_at_the_start() -> None:
    body = ('<?xml version="1.0" encoding="KOI8-R"?>' + page(RUSSIAN)).encode("koi8-r")
    assert decode_html(body, None).source == "meta"


def test_utf32_bom_is_a_utf16_bom() -> None:
    """WHATWG sniffs UTF-8 and UTF-16 BOMs only: FF FE 00 00 starts UTF-16LE (then a NUL)."""
    d = decode_html(codecs.BOM_UTF32_LE + page("x").encode("utf-32-le"), "text/html")
    assert (d.source, d.charset) == ("bom", "utf-16-le")


def test_utf16_header_on_an_ascii_readable_page_is_a_lie() -> None:
    text = "Le château de Versailles — résidence royale"
    d = decode_html(page(text).encode("utf-8"), "text/html; charset=utf-16")
    assert (d.source, d.charset) == ("detected", "utf-8") and text in d.text
    d = decode_html(page(text).encode("utf-16-le"), "text/html; charset=utf-16")
    assert (d.source, d.charset) == ("header", "utf-16-le") and text in d.text


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=2000), label=st.sampled_from([*PYTHON_ONLY, "utf-8", "koi8-r"]))
def test_charset_is_always_a_web_encoding(body: bytes, label: str) -> None:
    """Whatever the bytes and labels, the chosen codec is one a browser has (detector too)."""
    d = decode_html(body, f"text/html; charset={label}")
    assert d.charset in WEB_CODECS
