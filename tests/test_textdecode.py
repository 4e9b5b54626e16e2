"""textdecode: real encodings, lying headers, BOMs, mojibake, and never raising."""

from __future__ import annotations

import codecs

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from politecrawl.content import decoding as textdecode
from politecrawl.content.decoding import decode_html

pytestmark = pytest.mark.unit

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


def test_clean_text_with_lookalike_pairs_is_not_repaired() -> None:
    """Ukrainian "Рі"/"Сі" look like cp1251 mojibake pairs to the cheap regex, not to ftfy."""
    text = "Рівне, Сірий кіт, Сім днів. Київ - столиця України. «Цитата» © 2024 — Â est rare"
    d = decode_html(page(text * 50).encode("utf-8"), "text/html; charset=utf-8")
    assert not d.repaired and text in d.text


# clean paragraphs and their mojibake, for pages of a few hundred KiB
ORIGINALS = [text for _codec, _label, text in SAMPLES] + [
    "Grüße aus Köln, déjà vu, naïve café", "Привет, мир! Съешь же ещё этих булок",
    "Zażółć gęślą jaźń", "Příliš žluťoučký kůň", "€ ‘quotes’ — dash", "emoji 😀 text",
]  # fmt: skip
# as a browser shows UTF-8 read as windows-1252 (0x81 is U+0081): ftfy can undo it all
GARBLED = [t.encode("utf-8").decode("sloppy-windows-1252") for t in ORIGINALS]


def big_page(paragraphs: list[str], size: int = 512 * 1024) -> bytes:
    parts, n, i = [], 0, 0
    while n < size:
        p = f"<p>{paragraphs[i % len(paragraphs)]}</p>\n"
        parts.append(p)
        n, i = n + len(p.encode()), i + 1
    return f"<html><body>{''.join(parts)}</body></html>".encode()


@pytest.fixture
def ftfy_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of every text textdecode asks ftfy to explain (not ftfy's own inner calls)."""
    seen: list[int] = []
    real = textdecode.ftfy.fix_encoding_and_explain
    depth = [0]

    def counting(text: str, *args: object, **kwargs: object) -> object:
        if depth[0] == 0:
            seen.append(len(text))
        depth[0] += 1
        try:
            return real(text, *args, **kwargs)  # type: ignore[arg-type]
        finally:
            depth[0] -= 1

    monkeypatch.setattr(textdecode.ftfy, "fix_encoding_and_explain", counting)
    return seen


def test_consistently_garbled_page_is_redecoded_whole(ftfy_reads: list[int]) -> None:
    """ftfy plans on the first garbled run; the plan re-decodes the whole page at codec speed."""
    d = decode_html(big_page(GARBLED), "text/html; charset=utf-8")
    assert d.repaired and all(t in d.text for t in ORIGINALS)
    assert not any(g in d.text for g in GARBLED if g not in ORIGINALS)
    assert len(ftfy_reads) == 1


def test_garbled_page_with_some_clean_text_is_redecoded_by_stretches(
    ftfy_reads: list[int],
) -> None:
    """One clean word spoils the whole-text re-decode: 16 KiB stretches (or runs) take over."""
    tiny = [f"<b>{g}</b>" for g in GARBLED[-6:]] * 4000  # ~24,000 short runs
    tiny[10] = "<b>déjà vu</b>"
    d = decode_html(f"<html><body>{''.join(tiny)}</body></html>".encode(), None)
    assert d.repaired and d.text.count("déjà vu") == 4000 + 1
    assert not any(g in d.text for g in GARBLED[-6:] if g not in ORIGINALS)
    assert len(ftfy_reads) == 1


def test_mixed_page_is_repaired_everywhere(ftfy_reads: list[int]) -> None:
    """Clean and garbled paragraphs over 512 KiB: the plan fixes each garbled run in turn."""
    d = decode_html(big_page([*ORIGINALS, *GARBLED]), "text/html; charset=utf-8")
    assert d.repaired and all(t in d.text for t in ORIGINALS)
    assert not any(g in d.text for g in GARBLED if g not in ORIGINALS)
    assert sum(ftfy_reads) <= textdecode._REPAIR_BUDGET


def test_mojibake_far_into_a_page_is_repaired() -> None:
    clean = "".join(f"<p>{t}</p>" for t in ORIGINALS) * 400  # > 64 KiB before the mojibake
    body = page(clean + f"<p>{GARBLED[0]}</p>").encode("utf-8")
    assert len(body) > 200_000
    d = decode_html(body, "text/html; charset=utf-8")
    assert d.repaired and d.text.count(ORIGINALS[0]) == 401


def test_ftfy_work_is_bounded_on_hopeless_pages(ftfy_reads: list[int]) -> None:
    """Runs mixing clean text and (double) mojibake need ftfy each: it reads at most the budget."""
    twice = [g.encode("utf-8").decode("sloppy-windows-1252") for g in GARBLED]
    runs = [" ".join(parts) for parts in zip(ORIGINALS, GARBLED, twice, strict=True)]
    d = decode_html(big_page(runs), "text/html; charset=utf-8")
    assert 0 < sum(ftfy_reads) <= textdecode._REPAIR_BUDGET
    assert d.repaired and f"<p>{' '.join([ORIGINALS[0]] * 3)}</p>" in d.text
    assert d.text.index(GARBLED[1]) > textdecode._REPAIR_BUDGET // 2  # left unfixed, late


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
@example(text="\ufeff")
@example(text="\ufeffa page")
def test_declared_utf8_round_trips_unless_repaired(text: str) -> None:
    d = decode_html(text.encode("utf-8"), "text/html; charset=utf-8")
    if text.startswith("\ufeff"):
        # its UTF-8 bytes open with a byte-order mark, which WHATWG reads before the header
        # (the same codec here) and takes off: it is no text of the page
        assert d.source == "bom"
        text = text[1:]
    else:
        assert d.source == "header"
    if not d.repaired:
        assert d.text == text


RUSSIAN = "Москва - столица России, крупнейший по численности населения город страны."


@pytest.mark.parametrize("codec", ["cp1251", "koi8-r"])
@pytest.mark.parametrize("label", ["iso-8859-1", "windows-1252", "us-ascii"])
def test_russian_page_labelled_western_is_read_as_russian(codec: str, label: str) -> None:
    for declare in ("header", "meta"):
        head = f'<meta charset="{label}">' if declare == "meta" else ""
        body = page(RUSSIAN, head).encode(codec)
        d = decode_html(body, f"text/html; charset={label}" if declare == "header" else None)
        assert (d.source, same_codec(d.charset, codec)) == ("detected", True)
        assert RUSSIAN in d.text


def test_short_russian_title_labelled_latin1_is_read_as_russian() -> None:
    d = decode_html(page("Статья").encode("cp1251"), "text/html; charset=iso-8859-1")
    assert d.charset == "cp1251" and "Статья" in d.text


@pytest.mark.parametrize(
    "text",
    ["Café crème", "Prix : 5 €, © 2024 Société", SAMPLES[1][2], SAMPLES[2][2],
     "Þetta er íslenskur texti. Ég bý í Reykjavík og það er kalt á veturna.",
     "Hyvää päivää! Tämä on äänestyspäivä ja säätiedotus lähetetään myöhään."],
)  # fmt: skip
def test_western_pages_keep_their_latin1_label(text: str) -> None:
    d = decode_html(page(text).encode("cp1252"), "text/html; charset=iso-8859-1")
    assert (d.source, d.charset) == ("header", "cp1252") and text in d.text


def test_central_european_page_labelled_latin1_is_read_as_such() -> None:
    text = SAMPLES[3][2]
    d = decode_html(page(text).encode("cp1250"), "text/html; charset=iso-8859-1")
    assert d.source == "detected" and text in d.text


@pytest.mark.unit
@pytest.mark.parametrize("strays", [1, 3, 5])
def test_utf8_with_a_few_stray_latin1_bytes_stays_utf8(strays: int) -> None:
    """A UTF-8 page with a pasted Latin-1 footer: chardet answered cp866 for it, and the
    page's links were asked garbled. Declared or not, it is UTF-8 with U+FFFD."""
    text = "<title>Café – naïve résumé</title><p>Les élèves à l’école, Größe, 東京</p>"
    body = text.encode() + b"<p>\xa9 caf\xe9</p>" * strays
    for header in ("text/html; charset=utf-8", "text/html"):
        got = decode_html(body, header)
        assert got.charset == "utf-8", (header, got.charset)
        assert "Café – naïve résumé" in got.text


@pytest.mark.unit
def test_a_short_french_page_labelled_utf8_is_read_as_windows_1252() -> None:
    body = "<title>Café crème</title><p>Les élèves à l'école, où êtes-vous?</p>".encode("cp1252")
    got = decode_html(body, "text/html; charset=utf-8")
    assert got.charset in ("cp1252", "iso8859-15") and "Café crème" in got.text
    russian = "<title>Новости</title><p>Сегодня в Москве прошла конференция</p>".encode("cp1251")
    assert decode_html(russian, "text/html; charset=utf-8").charset == "cp1251"


@pytest.mark.unit
@pytest.mark.parametrize(
    ("text", "codec"),
    [
        ("東京都の天気予報です。今日は晴れです。日本語のページ。", "shift_jis"),
        ("東京都の天気予報です。今日は晴れです。日本語のページ。", "euc_jp"),
        ("今天天气很好，我们去公园散步吧。中文网页测试内容。", "gb18030"),
        ("안녕하세요 한국어 페이지입니다. 오늘 날씨가 좋습니다.", "cp949"),
    ],
)
def test_cjk_pages_labelled_utf8_are_not_taken_for_utf8_with_strays(text: str, codec: str) -> None:
    """CJK encodings form some UTF-8 sequences by chance (0.08-0.23 per stray byte): the
    stray-byte rule must not take them for UTF-8."""
    body = f"<title>{text}</title><p>{text * 4}</p>".encode(codec)
    for header in ("text/html; charset=utf-8", "text/html"):
        got = decode_html(body, header)
        assert got.charset != "utf-8" and text in got.text, (header, got.charset)


def test_a_short_page_labelled_utf8_with_a_stray_latin1_byte_stays_utf8() -> None:
    """Three accented letters and a Latin-1 copyright sign: read as the label says (the
    stray byte U+FFFD), as browsers do; it was read as windows-1252 ("cafÃ©")."""
    body = (
        "<html><head><title>Our café menu</title></head><body><p>Welcome to our café.</p>"
        '<a href="/menu/café">menu</a>'
    ).encode() + b"<p>\xa9 2024</p></body></html>"
    got = decode_html(body, "text/html; charset=utf-8")
    assert (got.charset, got.source) == ("utf-8", "header")
    assert "Our café menu" in got.text and "/menu/café" in got.text
