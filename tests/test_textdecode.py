"""textdecode: real encodings, lying headers, BOMs, mojibake, and never raising."""

from __future__ import annotations

import codecs

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from politecrawl.textdecode import decode_html

# (codec used to encode, header label, text): enough text for a detector to have a chance
SAMPLES = [
    ("utf-8", "utf-8", "Le château de Versailles — résidence royale française, été comme hiver."),
    ("latin-1", "iso-8859-1", "Die Straße führt über die Brücke zum Marktplatz. Müller und Söhne "
     "verkaufen dort Gemüse, Käse und Brötchen; größere Geschäfte öffnen früh."),
    ("cp1252", "windows-1252", "He said \u201cit\u2019s fine\u201d \u2014 the café\u2019s menu, "
     "priced in \u20ac, was très bon \u2026 mostly. Où est la forêt? Ça dépend."),
    ("iso-8859-2", "iso-8859-2", "Zażółć gęślą jaźń. Wrocław jest pięknym miastem położonym nad "
     "Odrą. Mieszkańcy często spacerują po rynku, a turyści podziwiają kościoły. Łódź też."),
    ("shift_jis", "shift_jis", "東京は日本の首都であり、世界最大級の都市圏を形成している。"
     "江戸時代には徳川幕府が置かれ、明治以降は政治、経済、文化の中心地として発展してきた。"),
    ("koi8-r", "koi8-r", "Москва - столица России, крупнейший по численности населения город "
     "страны. Город расположен на реке Москве. Здесь много музеев, театров и парков."),
]  # fmt: skip
IDS = [s[0] for s in SAMPLES]


def page(text: str, head: str = "") -> str:
    return f"<html><head>{head}<title>t</title></head><body><p>{text}</p></body></html>"


def same_codec(a: str, b: str) -> bool:
    return codecs.lookup(a).name == codecs.lookup(b).name


@pytest.mark.parametrize(("codec", "label", "text"), SAMPLES, ids=IDS)
def test_header_declared(codec: str, label: str, text: str) -> None:
    d = decode_html(page(text).encode(codec), f"text/html; charset={label}")
    assert d.source == "header"
    assert text in d.text
    assert not d.repaired


@pytest.mark.parametrize(("codec", "label", "text"), SAMPLES, ids=IDS)
def test_meta_declared(codec: str, label: str, text: str) -> None:
    equiv = f'<meta http-equiv="Content-Type" content="text/html; charset={label}">'
    for head in (f'<meta charset="{label}">', equiv):
        d = decode_html(page(text, head).encode(codec), "text/html")
        assert d.source == "meta"
        assert text in d.text


@pytest.mark.parametrize(("codec", "label", "text"), SAMPLES, ids=IDS)
def test_undeclared_is_detected(codec: str, label: str, text: str) -> None:
    d = decode_html(page(text).encode(codec), None)
    assert d.source == "detected"
    assert text in d.text


def test_header_beats_meta() -> None:
    body = page("café", '<meta charset="koi8-r">').encode("utf-8")
    d = decode_html(body, "text/html; charset=utf-8")
    assert (d.source, d.charset, "café" in d.text) == ("header", "utf-8", True)


def test_header_says_latin1_but_body_is_utf8() -> None:
    text = "Москва — столица, café, naïve"
    d = decode_html(page(text).encode("utf-8"), "text/html; charset=iso-8859-1")
    assert d.source == "detected" and d.charset == "utf-8"
    assert text in d.text


def test_header_says_utf8_but_body_is_latin1() -> None:
    text = SAMPLES[1][2]
    d = decode_html(page(text).encode("latin-1"), "text/html; charset=utf-8")
    assert d.source == "detected"
    assert text in d.text


def test_lying_header_falls_back_to_meta() -> None:
    text = SAMPLES[4][2]
    body = page(text, '<meta charset="shift_jis">').encode("shift_jis")
    d = decode_html(body, "text/html; charset=utf-8")
    assert d.source == "meta" and text in d.text


def test_a_stray_byte_does_not_unseat_utf8() -> None:
    text = "Le château de Versailles — résidence royale française " * 5
    body = page(text).encode("utf-8").replace(b"</p>", b"\xff</p>")
    d = decode_html(body, "text/html; charset=utf-8")
    assert d.source == "header" and d.charset == "utf-8"
    assert text in d.text and "\ufffd" in d.text


def test_utf8_cut_inside_a_character_keeps_the_header() -> None:
    body = page("naïve café " * 20).encode("utf-8") + "é".encode()[:1]  # body size cap
    d = decode_html(body, "text/html; charset=utf-8")
    assert d.source == "header"


@pytest.mark.parametrize(
    ("bom", "codec"), [(codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                       (codecs.BOM_UTF16_BE, "utf-16-be")],
)  # fmt: skip
def test_bom_wins_and_is_dropped(bom: bytes, codec: str) -> None:
    text = page("Ünïcödé ✓")
    d = decode_html(bom + text.encode(codec), "text/html; charset=iso-8859-1")
    assert d.source == "bom" and same_codec(d.charset, codec)
    assert d.text == text


def test_unknown_or_unsafe_labels_are_ignored() -> None:
    text = "naïve café"
    for label in ("x-no-such-charset", "utf-7", ""):
        d = decode_html(page(text).encode("utf-8"), f"text/html; charset={label}")
        assert d.source == "detected" and text in d.text


def test_meta_utf16_in_an_ascii_readable_page_means_utf8() -> None:
    d = decode_html(page("café", '<meta charset="utf-16">').encode("utf-8"), None)
    assert d.source == "meta" and d.charset == "utf-8" and "café" in d.text


def test_ascii_and_empty_default_to_utf8() -> None:
    for body in (b"", page("plain").encode()):
        d = decode_html(body, None)
        assert (d.charset, d.source, d.repaired) == ("utf-8", "default", False)


def test_latin1_label_decodes_as_cp1252_like_browsers() -> None:
    d = decode_html(page("\u201cquoted\u201d").encode("cp1252"), "text/html; charset=iso-8859-1")
    assert d.charset == "cp1252" and "\u201cquoted\u201d" in d.text


@pytest.mark.parametrize(
    ("original", "wrong"),
    [("Le château, l\u2019été — très bien", "cp1252"), ("naïve café", "latin-1"),
     ("Москва — столица России", "cp1251")],
)  # fmt: skip
def test_mojibake_is_repaired(original: str, wrong: str) -> None:
    garbled = original.encode("utf-8").decode(wrong)  # what a broken upstream stored
    d = decode_html(page(garbled).encode("utf-8"), "text/html; charset=utf-8")
    assert d.repaired
    assert original in d.text


def test_clean_text_is_not_repaired() -> None:
    for _codec, label, text in SAMPLES:
        d = decode_html(page(text).encode("utf-8"), f"text/html; charset={label}")
        assert not d.repaired
        assert text in d.text


LABELS = st.sampled_from([None, "", "text/html", "text/html; charset=utf-8",
                          "text/html; charset=shift_jis", "text/html; charset=utf-16",
                          "text/html; charset=koi8-r", "text/html; charset=bogus",
                          "text/html; charset=\"", "text/html; charset=utf-7"])  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=3000), header=LABELS)
def test_arbitrary_bytes_never_raise(body: bytes, header: str | None) -> None:
    d = decode_html(body, header)
    assert isinstance(d.text, str)
    assert d.source in ("header", "bom", "meta", "detected", "default")
    codecs.lookup(d.charset)  # a real codec name


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=500))
def test_declared_utf8_round_trips_unless_repaired(text: str) -> None:
    d = decode_html(text.encode("utf-8"), "text/html; charset=utf-8")
    assert d.source == "header"
    if not d.repaired:
        assert d.text == text
