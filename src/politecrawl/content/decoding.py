"""Bytes of an HTML page to text: the right charset, then mojibake repair. Never raises.

Order (WHATWG "determine the character encoding", with two checks against liars):

1. a byte-order mark (UTF-8, UTF-16 LE/BE) wins over everything;
2. the HTTP ``Content-Type`` charset;
3. ``<meta charset>`` / ``<meta http-equiv="Content-Type">`` in the first 4 KiB (the HTML
   prescan; an ``<?xml encoding>`` at the very start counts too);
4. a detector on the rest (chardet 7, see below);
5. otherwise UTF-8 (``source="default"``: empty or pure-ASCII bodies, or no detector answer).

Labels: only those of the WHATWG Encoding Standard count, each mapped to its encoding, then to
the Python codec that decodes it (``iso-8859-1`` and ``ascii`` are windows-1252 so cp1252,
``shift_jis`` cp932, ``gb2312``/``gbk`` gb18030, ``euc-kr`` cp949, ``big5`` big5hkscs). Any other
Python codec name is no label: ``unicode_escape`` would read ``C:\\new`` as a newline, ``utf-7``
would smuggle markup, ``rot13``/``base64``/``punycode`` are not charsets. The labels of the
"replacement" encoding (``iso-2022-kr``, ``hz-gb-2312``...) and ``x-user-defined`` in a header,
which Python cannot decode as a browser would, count as no declaration either, so the detector
decides. Undecodable bytes become U+FFFD.

A declaration is *checked* before it is believed, because servers lie (the text-encodings part
of ../shared/seeds/004): a declared multibyte charset (UTF-8, Shift_JIS, EUC-*, GB18030, Big5)
that fails to decode more than a few stray bytes is skipped; a declared single-byte charset on
a body that is valid UTF-8 with multibyte sequences gives way to UTF-8 (latin-1 text is
practically never valid UTF-8 by chance); a declared UTF-16 needs zero bytes in the first 4 KiB
(markup has them in UTF-16). A windows-1252 label (``iso-8859-1``, ``ascii``, ``latin1``...,
often a server's default rather than a statement) is doubted when its reading does not look
like a Western European language (``_shape``: words of accented letters only, or symbols
inside words); the detector then decides if its own reading looks better, so a Russian page
labelled ISO-8859-1 is read as windows-1251 or KOI8-R. Either way the answer's source is
``"detected"``.

Detector: chardet 7 was measured against charset_normalizer on HTML in fr/de/es/pl/cs/hu/ru/ja
x their legacy encodings and UTF-8 (52 documents): chardet 52/52, charset_normalizer 42/52
(it took iso-8859-2 for iso-8859-10/14, koi8-r for shift_jis_2004, latin-1 for cp1250), as in
../shared/LIBRARIES.md (198/198 vs 179/198); ``decode_html`` without declarations got all 52
right. chardet is slow on small inputs (~0.4 MB/s, 1-2 ms per undeclared legacy-charset
page), so it runs last and reads at most ``_DETECT_MAX_BYTES``; valid UTF-8 never reaches it.
It only chooses among encodings a browser has (``DETECTABLE``: no EBCDIC, no DOS code page
but 866, no UTF-7 or UTF-32...). Its ``prefer_superset`` is not used: it turns iso-8859-2 into
cp1250, which is no superset.

Mojibake (UTF-8 that was decoded as cp1252/latin-1/cp1251 somewhere upstream) is repaired with
ftfy's ``fix_encoding`` steps (never ``fix_text``, which also rewrites clean text), only where a
cheap regex finds a UTF-8 lead byte's cp1252/latin-1/cp1251 spelling followed by a continuation
byte's; ``repaired`` is true only when the text changed. ftfy costs 4-15 us per character it
reads (``fix_encoding`` on a whole 512 KiB mixed page took 7.9 s, on the event loop in focused
crawls), so it reads only the text runs around those hits (tag to tag, or a line) and at most
``_REPAIR_BUDGET`` characters of them per page. Its first plan that re-decodes (encode as X,
decode as UTF-8: ``ftfy.apply_plan``) is tried at codec speed on the whole text, as
``fix_encoding`` itself would (a page garbled throughout), then on each later garbled stretch
and run before ftfy is asked again. Past the budget, runs that plan does not fix stay garbled,
and at most ``_MAX_RUNS`` runs are looked at: about 0.25 s at worst for 512 KiB, 20-90 ms for
real garbled pages.
"""

from __future__ import annotations

import codecs
import functools
import itertools
import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

import chardet
import ftfy
from ftfy.badness import is_bad

from politecrawl.content import charsets
from politecrawl.content.charsets import DETECTABLE, DETECTED_ALIASES, ENCODINGS

__all__ = ["Decoded", "Source", "decode_html", "repair_text"]

Source = Literal["header", "bom", "meta", "detected", "default"]

_META_WINDOW = 4096
_DETECT_MAX_BYTES = 65536
# a declared multibyte charset survives this share of U+FFFD among its non-ASCII output
_STRAY_SHARE = 0.05
# UTF-8 with stray bytes: at least this many real multibyte characters, and at most this many
# stray bytes for each
_UTF8_MIN_GOOD = 4
# ... or, when the page says it is UTF-8, at least one (a short English page with three
# accented letters and a Latin-1 copyright sign was read as windows-1252 for want of a fourth,
# its title garbled and a link asked as "caf%C3%83%C2%A9"; browsers trust the label)
_UTF8_LABELLED_GOOD = 1
_UTF8_STRAYS = 2
_UTF8 = "utf-8"
# ftfy reads at most this many characters per page (4-15 us each: at most ~0.25 s)
_REPAIR_BUDGET = 16_384
# a text run given to ftfy: up to the next tag or line, or about this many characters
_RUN = 4096
# garbled runs looked at per page (~6 us each), and the text a plan is tried on at once
_MAX_RUNS = 8192
_SPAN = 16_384
# a windows-1252 label is doubted when its reading has more non-ASCII than this in its words
_WESTERN = "cp1252"
_WESTERN_SHARE = 0.5
_SHAPE_CHARS = 65536
_SHAPE_WORDS = 2000
_MIN_LETTERS = 3
_WORD_CHAR = r"[^\s<>\"'=/&;,.:!?()\[\]{}]"
_NON_ASCII_WORD = re.compile(f"{_WORD_CHAR}*[^\\x00-\\x7f]{_WORD_CHAR}*")
_MARKUP = re.compile(rb"<[^<>]*>")
_ODD = frozenset(("Po", "No", "Sm", "Sk", "So", "Sc"))


@dataclass(frozen=True, slots=True)
class Decoded:
    """The text of a page and how its charset was decided."""

    text: str
    charset: str  # a Python codec name, e.g. "utf-8", "cp1252", "koi8-r", "cp932"
    source: Source
    repaired: bool  # ftfy's fix_encoding steps changed the text


# -- declarations -------------------------------------------------------------------------------

# a Content-Type parameter; a quoted-string is taken whole, so a "charset=" inside it is no match
_PARAM = re.compile(r';[ \t]*([^\s;=,]+)[ \t]*=[ \t]*("(?:[^"\\]|\\.)*"?|[^;,]*)')
_ESCAPE = re.compile(r"\\(.)")


def _header_label(content_type: str | None) -> str | None:
    """The first ``charset`` parameter of a Content-Type value (lenient: a bare one counts)."""
    if not content_type:
        return None
    for m in _PARAM.finditer(";" + content_type):
        if m[1].lower() == "charset":
            value = m[2]
            if value.startswith('"'):
                return _ESCAPE.sub(r"\1", value[1:].removesuffix('"'))
            return value.strip("\t\n\r ")  # HTTP whitespace
    return None


# the HTML prescan's tokens: a comment, a <meta, another tag up to its ">" (quoted values may
# hold ">" or "<meta"), or <! </ <? up to the next ">"
_TAG = re.compile(
    r"""<(?:(!--)|([mM][eE][tT][aA])[\t\n\f\r /]"""
    r"""|(/?[a-zA-Z][^>"']*(?:(?:"[^"]*"|'[^']*')[^>"']*)*)|[!/?])"""
)
_ATTRIBUTE = re.compile(
    r"""[\t\n\f\r /]*([^\t\n\f\r />][^\t\n\f\r /=>]*)"""
    r"""(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:"([^"]*)"|'([^']*)'|([^\t\n\f\r >]*)))?"""
)
_META = re.compile(r"<meta[\t\n\f\r /]", re.I | re.A)
_CONTENT_CHARSET = re.compile(
    r"""charset[\t\n\f\r ]*=[\t\n\f\r ]*(?:"([^"]*)"|'([^']*)'|([^\t\n\v\f\r ;]+))""", re.I | re.A
)
_XML_DECLARATION = re.compile(
    r"""<\?xml[^>]*?[\t\n\r ]encoding[\t\n\r ]*=[\t\n\r ]*["']([^"'>]*)"""
)


def _attributes(window: str, pos: int) -> tuple[dict[str, str], int]:
    """A tag's attributes from ``pos`` (the first of each name) and the position after it."""
    attrs: dict[str, str] = {}
    while (m := _ATTRIBUTE.match(window, pos)) is not None:
        attrs.setdefault(m[1].lower(), m[2] if m[2] is not None else m[3] or m[4] or "")
        pos = m.end()
    return attrs, pos + 1  # past the ">" (or the end)


def _meta_encoding(attrs: dict[str, str]) -> str | None:
    """What a <meta> declares, as the HTML prescan reads it; None for nothing usable."""
    if "charset" in attrs:
        return charsets.encoding(attrs["charset"])
    if attrs.get("http-equiv", "").lower() != "content-type" or "content" not in attrs:
        return None
    m = _CONTENT_CHARSET.search(attrs["content"])
    return None if m is None else charsets.encoding(m[1] or m[2] or m[3])


def _prescan(head: bytes) -> str | None:
    """The WHATWG encoding declared in the first bytes (HTML's prescan, minus its 1024-byte cap)."""
    window = head.decode("latin-1")  # labels and markup are ASCII
    if (xml := _XML_DECLARATION.match(window)) is not None and (name := charsets.encoding(xml[1])):
        return name
    if _META.search(window) is None:
        return None
    pos = 0
    while (m := _TAG.search(window, pos)) is not None:
        if m[1]:  # a comment ends at the first "-->", which may share the opening's dashes
            end = window.find("-->", m.start() + 2)
            if end < 0:
                return None
            pos = end + 3
        elif m[2]:
            attrs, pos = _attributes(window, m.end())
            if (name := _meta_encoding(attrs)) is not None:
                return name
        elif m[3]:
            pos = m.end() + 1
        else:
            end = window.find(">", m.end())
            if end < 0:
                return None
            pos = end + 1
    return None


def _meta_codec(body: bytes) -> str | None:
    """The Python codec of the <meta> declaration (UTF-16 means UTF-8 there, as in browsers)."""
    name = _prescan(body[:_META_WINDOW])
    if name in ("utf-16be", "utf-16le"):
        return _UTF8  # a meta read as ASCII cannot be in UTF-16
    if name == "x-user-defined":
        name = "windows-1252"
    return None if name is None else ENCODINGS[name][0]


def _bom(body: bytes) -> tuple[str, int] | None:
    """(codec, length) of a byte-order mark: WHATWG knows UTF-8 and UTF-16 ones only."""
    if body.startswith(codecs.BOM_UTF8):
        return _UTF8, 3
    if body.startswith(codecs.BOM_UTF16_BE):
        return "utf-16-be", 2
    if body.startswith(codecs.BOM_UTF16_LE):
        return "utf-16-le", 2
    return None


# -- checks and detection -----------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _is_multibyte(codec: str) -> bool:
    """Whether strict decoding can prove the codec wrong (single-byte tables rarely fail)."""
    try:
        return len("\u4e2d".encode(codec)) > 1  # 中: in every CJK and Unicode codec
    except (UnicodeError, LookupError):
        return False


def _valid_utf8_with_multibyte(body: bytes) -> bool:
    """Valid UTF-8 (a sequence cut at the end is allowed) with at least one non-ASCII char."""
    if body.isascii():
        return False
    try:
        codecs.getincrementaldecoder(_UTF8)().decode(body, final=False)
    except UnicodeDecodeError:
        return False
    return True


def _fits(body: bytes, codec: str) -> bool:
    """Whether the body plausibly is in the declared codec."""
    if codec.startswith("utf-16") and b"\x00" not in body[:_META_WINDOW]:
        return False  # UTF-16 markup has a zero byte beside every ASCII character
    if not _is_multibyte(codec):
        return not (codec != _UTF8 and _valid_utf8_with_multibyte(body))
    try:
        codecs.getincrementaldecoder(codec)().decode(body, final=False)
        return True
    except UnicodeDecodeError:
        pass
    except LookupError:
        return False
    text = body.decode(codec, "replace")
    bad = text.count("\ufffd")
    non_ascii = sum(1 for ch in text if ord(ch) > 127)
    if codec == _UTF8 and _utf8_with_strays(non_ascii - bad, bad, min_good=_UTF8_LABELLED_GOOD):
        return True
    return bad <= _STRAY_SHARE * non_ascii


def _utf8_with_strays(good: int, bad: int, *, min_good: int = _UTF8_MIN_GOOD) -> bool:
    """UTF-8 text with some stray bytes (a Latin-1 footer pasted into a UTF-8 page), as
    browsers read it: real multibyte characters, not far outnumbered by bytes that are not
    UTF-8. Legacy text practically never forms UTF-8 sequences by chance (an accented letter
    is a lead byte, and what follows it is a letter or a space, no continuation byte), so a
    page in windows-1252 or windows-1251 has ``good`` 0 against hundreds of ``bad``. CJK
    encodings do form some (Shift_JIS, EUC-JP, GB18030, Big5, EUC-KR text: 0.08 to 0.23
    of ``bad``), hence at most two stray bytes for each character."""
    return good >= min_good and good * _UTF8_STRAYS >= bad


def _mostly_utf8(body: bytes) -> bool:
    """Undeclared UTF-8 with stray bytes (chardet, given such a page, answered cp866 or
    iso-8859-16 for 1 to 20 stray bytes in a page of accented French)."""
    text = body[:_DETECT_MAX_BYTES].decode(_UTF8, "replace")
    bad = text.count("\ufffd")
    good = sum(1 for ch in text if ord(ch) > 127) - bad
    return _utf8_with_strays(good, bad)


def _detect(body: bytes) -> str | None:
    """chardet's answer as a codec name; None when it has none."""
    if _valid_utf8_with_multibyte(body) or _mostly_utf8(body):
        return _UTF8  # cheaper and surer than any statistical detector
    try:
        found = chardet.detect(
            body, max_bytes=_DETECT_MAX_BYTES, include_encodings=DETECTABLE, compat_names=False
        )
    except Exception:  # a detector bug must not lose the page
        return None
    name = found.get("encoding")
    if not isinstance(name, str):  # binary: chardet says None
        return None
    return charsets.codec(DETECTED_ALIASES.get(name, name))


def _shape(text: str) -> tuple[float, int, bool]:
    """How a reading looks: (share of non-ASCII letters among the letters of the words holding
    any, symbols wedged between two letters, whether most non-ASCII letters are Latin).

    Western European words carry few accented letters ("château", "Straße", "informação":
    1 in 4 to 1 in 10, Icelandic or Finnish about 1 in 3), and never a "¿", "³" or "÷" between
    letters. Cyrillic or Greek bytes read as windows-1252 make words of accented letters only
    ("Ìîñêâà"), and Central European ones put symbols inside words ("Za¿ó³æ"). Fewer than
    ``_MIN_LETTERS`` such letters are no evidence (a lone "€" or "©" says nothing).
    """
    accented = letters = odd = latin = 0
    for m in itertools.islice(_NON_ASCII_WORD.finditer(text, 0, _SHAPE_CHARS), _SHAPE_WORDS):
        word = m[0]
        prev_letter = False
        for i, ch in enumerate(word):
            if ch.isascii():
                prev_letter = ch.isalpha()
                letters += prev_letter
                continue
            cat = unicodedata.category(ch)
            if cat[0] == "L":
                letters += 1
                accented += 1
                latin += ord(ch) < 0x250
                prev_letter = True
                continue
            if prev_letter and cat in _ODD and i + 1 < len(word) and word[i + 1].isalpha():
                odd += 1
            prev_letter = False
    share = accented / letters if accented >= _MIN_LETTERS else 0.0
    return share, odd, latin * 2 >= accented


def _western_label_lies(body: bytes) -> str | None:
    """The codec to read a page labelled windows-1252 (``iso-8859-1``, ``ascii``...) with when
    the label lies (../shared/seeds/004: such labels are often a default, not a statement);
    None to keep the label. The detector is asked only when the label's reading looks wrong
    (``_shape``), and believed only when its own reading looks better."""
    if body.isascii():
        return None
    share, odd, _ = _shape(body[:_DETECT_MAX_BYTES].decode(_WESTERN, "replace"))
    if share <= _WESTERN_SHARE and odd < 2:
        return None  # reads like a Western European language
    # the detector reads the text only: it would believe the page's own <meta charset>
    found = _detect(_MARKUP.sub(b" ", body[:_DETECT_MAX_BYTES]))
    if found is None or found == _WESTERN:
        return None
    try:
        other_share, other_odd, other_latin = _shape(
            body[:_DETECT_MAX_BYTES].decode(found, "replace")
        )
    except LookupError:
        return None
    if not other_latin and share > _WESTERN_SHARE:  # another script read as accented Latin
        return found
    if other_odd < odd and other_share <= _WESTERN_SHARE:  # Central European symbols gone
        return found
    return None


def _choose(body: bytes, header_content_type: str | None) -> tuple[str, Source, int]:
    """(codec, source, bytes of BOM to skip)."""
    bom = _bom(body)
    if bom is not None:
        return bom[0], "bom", bom[1]
    lied = False
    sources: tuple[Source, Source] = ("header", "meta")
    for source in sources:  # the meta scan only when the header does not settle it
        if source == "header":
            codec = charsets.codec(_header_label(header_content_type))
        else:
            codec = _meta_codec(body)
        if codec is None:
            continue
        if _fits(body, codec):
            if codec == _WESTERN and (other := _western_label_lies(body)) is not None:
                return other, "detected", 0
            return codec, source, 0
        lied = True
    if body.isascii() and not lied and b"\x00" not in body:
        return _UTF8, "default", 0
    found = _detect(body)
    if found is not None:
        return _western_unless_detected_better(body, found), "detected", 0
    return _UTF8, "default", 0


_LATIN_ISO = frozenset({"iso8859-1", "iso8859-15"})


def _western_unless_detected_better(body: bytes, found: str) -> str:
    """windows-1252 over a single-byte detector answer in another script when windows-1252
    reads as a Western European language: on a short French page chardet answered
    mac-cyrillic ("Cafй crиme"). A Cyrillic or Greek page read as windows-1252 makes words
    of accented letters only, so keeps its detected charset (``_shape``)."""
    if found == _WESTERN or _is_multibyte(found):
        return found
    if found in _LATIN_ISO and any(0x80 <= b < 0xA0 for b in body[:_DETECT_MAX_BYTES]):
        # bytes that are C1 controls in ISO-8859-1/15, and curly quotes and dashes in
        # windows-1252: no page holds the controls
        return _WESTERN
    try:
        _, _, found_latin = _shape(body[:_DETECT_MAX_BYTES].decode(found, "replace"))
    except LookupError:
        return found
    if found_latin:
        return found
    share, odd, latin = _shape(body[:_DETECT_MAX_BYTES].decode(_WESTERN, "replace"))
    return _WESTERN if latin and share <= _WESTERN_SHARE and odd < 2 else found


# -- mojibake -----------------------------------------------------------------------------------


def _mojibake_pattern() -> re.Pattern[str]:
    """A UTF-8 lead byte then a continuation byte, as cp1252/latin-1 (or cp1251 Р/С) show them."""
    conts: set[str] = set()
    for enc in ("cp1252", "latin-1", "cp1251"):
        conts.update(bytes([b]).decode(enc, "ignore") for b in range(0x80, 0xC0))
    leads = {bytes([b]).decode("latin-1") for b in range(0xC2, 0xF5)}
    leads |= {"Р", "С"}  # 0xD0/0xD1 in cp1251: the lead bytes of UTF-8 Cyrillic
    conts.discard("")
    cls = "".join(re.escape(c) for c in sorted(leads))
    cont = "".join(re.escape(c) for c in sorted(conts))
    return re.compile(f"[{cls}][{cont}]")


_MOJIBAKE = _mojibake_pattern()
# a mojibake run is non-ASCII characters and spaces (a lost U+00A0), so it never spans these
_RUN_END = re.compile(r"[<>\n]")
_ASCII_NOT_SPACE = re.compile(r"[\x00-\x1f\x21-\x7f]")

_Plan = list[tuple[str, str]]


def _run(text: str, i: int, lo: int) -> tuple[int, int]:
    """Bounds of the text run around the hit at ``i`` (not before ``lo``): tag to tag or line."""
    floor = max(lo, i - _RUN)
    start = max(floor, *(text.rfind(c, floor, i) + 1 for c in "<>\n"))
    m = _RUN_END.search(text, i, i + _RUN)
    if m is not None:
        return start, m.start()
    m = _ASCII_NOT_SPACE.search(text, i + _RUN, i + 2 * _RUN)  # a long run: cut outside mojibake
    return start, m.start() if m is not None else min(len(text), i + 2 * _RUN)


def _redecoding(steps: list[ftfy.ExplanationStep] | None) -> _Plan | None:
    """ftfy's plan if it is a re-decode (codec speed, valid wherever it applies strictly)."""
    if not steps or not any(action == "decode" for action, _ in steps):
        return None
    if any(action == "apply" for action, _ in steps):  # decode_inconsistent_utf8: the slow one
        return None
    return [(action, arg) for action, arg in steps]


def _redecode(text: str, plan: _Plan) -> str | None:
    """``plan`` applied strictly to ``text`` (as ftfy's own first step); None if it fails."""
    try:
        fixed = ftfy.apply_plan(text, plan)
    except Exception:  # a character outside the plan's codecs: not garbled that way
        return None
    return None if fixed == text else fixed


def _reuse(run: str, plan: _Plan) -> str | None:
    """``plan`` applied to a garbled run if it leaves the run clean, else None (ftfy decides)."""
    fixed = _redecode(run, plan)
    if fixed is None or (_MOJIBAKE.search(fixed) is not None and is_bad(fixed)):
        return None
    return fixed


def _repair(text: str) -> str:
    """``text`` with its mojibake runs fixed, within ``_REPAIR_BUDGET`` and ``_MAX_RUNS``."""
    out: list[str] = []
    pos = 0
    budget = _REPAIR_BUDGET
    plan: _Plan | None = None
    tried_whole = False
    no_span_before = 0  # where the plan last failed on a whole span
    for _ in range(_MAX_RUNS):
        hit = _MOJIBAKE.search(text, pos)
        if hit is None:
            break
        start, end = _run(text, hit.start(), pos)
        if plan is not None and start >= no_span_before:  # a garbled stretch: one re-decode
            cut = text.find("<", start + _SPAN)
            span_end = len(text) if cut < 0 else cut
            span = _redecode(text[start:span_end], plan)
            if span is not None:
                out += (text[pos:start], span)
                pos = span_end
                continue
            no_span_before = span_end
        run = fixed = text[start:end]
        if (plan is not None or len(run) <= budget) and is_bad(run):  # else ftfy leaves it
            reused = None if plan is None else _reuse(run, plan)
            if reused is not None:
                fixed = reused
            elif len(run) <= budget:
                budget -= len(run)
                try:
                    fixed, steps = ftfy.fix_encoding_and_explain(run)
                except Exception:  # ftfy must not lose the page: this run stays as it is
                    steps = None
                found = _redecoding(steps) if fixed != run else None
                if found is not None:
                    plan = found
                    whole = None if tried_whole else _redecode(text, plan)
                    tried_whole = True
                    if whole is not None:  # the whole page was garbled the same way
                        text, out, pos = whole, [], 0
                        continue
        out += (text[pos:start], fixed)
        pos = end
        if plan is None and budget <= 0:
            break
    out.append(text[pos:])
    return "".join(out)


def decode_html(body: bytes, header_content_type: str | None, *, repair: bool = True) -> Decoded:
    """Decode ``body`` (charset: BOM > header > meta > detector > UTF-8), repair mojibake.

    ``repair=False``: the text exactly as a browser decodes it (``page.read_page`` builds the
    tree and the links from that, and repairs only the texts it reads, with ``repair_text``).
    """
    try:
        codec, source, skip = _choose(body, header_content_type)
    except Exception:  # (chardet, codec lookups) a detector bug must not lose the page: UTF-8
        codec, source, skip = _UTF8, "default", 0
    try:
        text = body[skip:].decode(codec, "replace")
    except (LookupError, UnicodeError):
        codec, source = _UTF8, "default"
        text = body.decode(_UTF8, "replace")
    fixed = repair_text(text) if repair else text
    return Decoded(fixed, codec, source, fixed != text)


def repair_text(text: str) -> str:
    """``text`` with its mojibake repaired (module docstring: bounded work); never raises."""
    if text.isascii():
        return text
    try:
        return _repair(text)
    except Exception:  # ftfy must not lose the page
        return text
