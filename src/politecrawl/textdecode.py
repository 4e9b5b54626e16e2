"""Bytes of an HTML page to text: the right charset, then mojibake repair. Never raises.

Order (WHATWG "determine the character encoding", with two checks against liars):

1. a byte-order mark (UTF-8, UTF-16 LE/BE) wins over everything;
2. the HTTP ``Content-Type`` charset;
3. ``<meta charset>`` / ``<meta http-equiv="Content-Type">`` in the first 4 KiB;
4. a detector on the rest (chardet 7, see below);
5. otherwise UTF-8 (``source="default"``: empty or pure-ASCII bodies, or no detector answer).

A declaration is *checked* before it is believed, because servers lie (the text-encodings part
of ../shared/seeds/004): a declared multibyte charset (UTF-8, Shift_JIS, EUC-*, GB18030, Big5)
that fails to decode more than a few stray bytes is skipped; a declared single-byte charset on
a body that is valid UTF-8 with multibyte sequences gives way to UTF-8 (latin-1 text is
practically never valid UTF-8 by chance). Either way the answer's source is ``"detected"``.
Labels map as browsers do (``iso-8859-1`` and ``ascii`` decode as cp1252, ``shift_jis`` as
cp932: w3lib.encoding.resolve_encoding); undecodable bytes become U+FFFD.

Detector: chardet 7 was measured against charset_normalizer on HTML in fr/de/es/pl/cs/hu/ru/ja
x their legacy encodings and UTF-8 (52 documents): chardet 52/52, charset_normalizer 42/52
(it took iso-8859-2 for iso-8859-10/14, koi8-r for shift_jis_2004, latin-1 for cp1250), as in
../shared/LIBRARIES.md (198/198 vs 179/198); ``decode_html`` without declarations got all 52
right. chardet is slow on small inputs (~0.4 MB/s, 1-2 ms per undeclared legacy-charset
page), so it runs last and reads at most ``_DETECT_MAX_BYTES``; valid UTF-8 never reaches it.
Its ``prefer_superset`` is not used: it turns iso-8859-2 into cp1250, which is no superset.

Mojibake (UTF-8 that was decoded as cp1252/latin-1/cp1251 somewhere upstream) is repaired with
``ftfy.fix_encoding`` (never ``fix_text``, which also rewrites clean text). ftfy costs 0.7-1.6
ms per 2 KB of non-ASCII text even when nothing is wrong, so it only runs when a cheap regex
finds a UTF-8 lead byte's cp1252/latin-1/cp1251 spelling followed by a continuation byte's:
a few microseconds per page, and ``repaired`` is true only when ftfy changed something.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import re
from dataclasses import dataclass
from typing import Literal

import chardet
import ftfy
from w3lib.encoding import (
    html_body_declared_encoding,
    http_content_type_encoding,
    read_bom,
    resolve_encoding,
)

__all__ = ["Decoded", "Source", "decode_html"]

Source = Literal["header", "bom", "meta", "detected", "default"]

_META_WINDOW = 4096
_DETECT_MAX_BYTES = 65536
# a declared multibyte charset survives this share of U+FFFD among its non-ASCII output
_STRAY_SHARE = 0.05
_UTF8 = "utf-8"


@dataclass(frozen=True, slots=True)
class Decoded:
    """The text of a page and how its charset was decided."""

    text: str
    charset: str  # a Python codec name, e.g. "utf-8", "cp1252", "koi8-r", "cp932"
    source: Source
    repaired: bool  # ftfy.fix_encoding changed the text


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


def _codec(name: str | None) -> str | None:
    """Browser-style label resolution to a Python codec name; None for unknown or unsafe."""
    if not name:
        return None
    try:
        return resolve_encoding(name)
    except (LookupError, ValueError, TypeError):
        return None


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
    return bad <= _STRAY_SHARE * non_ascii


def _detect(body: bytes) -> str | None:
    """chardet's answer as a codec name; None when it has none."""
    if _valid_utf8_with_multibyte(body):
        return _UTF8  # cheaper and surer than any statistical detector
    try:
        found = chardet.detect(body, max_bytes=_DETECT_MAX_BYTES)
    except Exception:  # a detector bug must not lose the page
        return None
    name = found.get("encoding")
    if not isinstance(name, str):  # binary: chardet says None
        return None
    return _codec(name)


def _choose(body: bytes, header_content_type: str | None) -> tuple[str, Source, int]:
    """(codec, source, bytes of BOM to skip)."""
    bom_enc, bom = read_bom(body)
    if bom_enc is not None and bom is not None:
        codec = _codec(bom_enc)
        if codec is not None:
            return codec, "bom", len(bom)
    declared: list[tuple[str | None, Source]] = []
    with contextlib.suppress(Exception):  # a malformed header is no declaration
        declared.append((_codec(http_content_type_encoding(header_content_type)), "header"))
    try:
        meta = _codec(html_body_declared_encoding(body[:_META_WINDOW]))
    except Exception:
        meta = None
    if meta is not None and meta.startswith(("utf-16", "utf-32")):
        meta = _UTF8  # HTML: a meta that says UTF-16 in an ASCII-readable page means UTF-8
    declared.append((meta, "meta"))
    lied = False
    for codec, source in declared:
        if codec is None:
            continue
        if _fits(body, codec):
            return codec, source, 0
        lied = True
    if body.isascii() and not lied and b"\x00" not in body:
        return _UTF8, "default", 0
    found = _detect(body)
    if found is not None:
        return found, "detected", 0
    return _UTF8, "default", 0


def decode_html(body: bytes, header_content_type: str | None) -> Decoded:
    """Decode ``body`` (charset: BOM > header > meta > detector > UTF-8), repair mojibake."""
    try:
        codec, source, skip = _choose(body, header_content_type)
    except Exception:
        codec, source, skip = _UTF8, "default", 0
    try:
        text = body[skip:].decode(codec, "replace")
    except (LookupError, UnicodeError):
        codec, source = _UTF8, "default"
        text = body.decode(_UTF8, "replace")
    repaired = False
    if not text.isascii() and _MOJIBAKE.search(text) is not None:
        try:
            fixed = ftfy.fix_encoding(text)
        except Exception:
            fixed = text
        if fixed != text:
            text, repaired = fixed, True
    return Decoded(text, codec, source, repaired)
