"""The WHATWG Encoding Standard's labels, and the Python codec that decodes each encoding
as browsers do: the table ``decoding`` reads declarations and detector answers through.

Only these labels count: ``unicode_escape`` would read ``C:\\new`` as a newline, ``utf-7``
would smuggle markup, ``rot13``/``base64``/``punycode`` are not charsets.
"""

from __future__ import annotations

__all__ = ["DETECTABLE", "DETECTED_ALIASES", "ENCODINGS", "codec", "encoding"]


# WHATWG encoding -> (the Python codec that decodes it, None if none does; its labels), from
# https://encoding.spec.whatwg.org/#names-and-labels (228 labels). A table here rather than a
# dependency: webencodings, the one library with it, is not installed here, and decodes with
# the narrow Python namesakes (big5, euc_kr, gbk, shift_jis) where browsers' decoders match
# big5hkscs, cp949, gb18030 and cp932, so this second column would be needed anyway.
ENCODINGS: dict[str, tuple[str | None, str]] = {
    "utf-8": ("utf-8", "unicode-1-1-utf-8 unicode11utf8 unicode20utf8 utf-8 utf8 x-unicode20utf8"),
    "ibm866": ("cp866", "866 cp866 csibm866 ibm866"),
    "iso-8859-2": ("iso8859-2", "csisolatin2 iso-8859-2 iso-ir-101 iso8859-2 iso88592 "
                   "iso_8859-2 iso_8859-2:1987 l2 latin2"),
    "iso-8859-3": ("iso8859-3", "csisolatin3 iso-8859-3 iso-ir-109 iso8859-3 iso88593 "
                   "iso_8859-3 iso_8859-3:1988 l3 latin3"),
    "iso-8859-4": ("iso8859-4", "csisolatin4 iso-8859-4 iso-ir-110 iso8859-4 iso88594 "
                   "iso_8859-4 iso_8859-4:1988 l4 latin4"),
    "iso-8859-5": ("iso8859-5", "csisolatincyrillic cyrillic iso-8859-5 iso-ir-144 iso8859-5 "
                   "iso88595 iso_8859-5 iso_8859-5:1988"),
    "iso-8859-6": ("iso8859-6", "arabic asmo-708 csiso88596e csiso88596i csisolatinarabic "
                   "ecma-114 iso-8859-6 iso-8859-6-e iso-8859-6-i iso-ir-127 iso8859-6 "
                   "iso88596 iso_8859-6 iso_8859-6:1987"),
    "iso-8859-7": ("iso8859-7", "csisolatingreek ecma-118 elot_928 greek greek8 iso-8859-7 "
                   "iso-ir-126 iso8859-7 iso88597 iso_8859-7 iso_8859-7:1987 sun_eu_greek"),
    "iso-8859-8": ("iso8859-8", "csiso88598e csisolatinhebrew hebrew iso-8859-8 iso-8859-8-e "
                   "iso-ir-138 iso8859-8 iso88598 iso_8859-8 iso_8859-8:1988 visual"),
    "iso-8859-8-i": ("iso8859-8", "csiso88598i iso-8859-8-i logical"),
    "iso-8859-10": ("iso8859-10", "csisolatin6 iso-8859-10 iso-ir-157 iso8859-10 iso885910 "
                    "l6 latin6"),
    "iso-8859-13": ("iso8859-13", "iso-8859-13 iso8859-13 iso885913"),
    "iso-8859-14": ("iso8859-14", "iso-8859-14 iso8859-14 iso885914"),
    "iso-8859-15": ("iso8859-15", "csisolatin9 iso-8859-15 iso8859-15 iso885915 iso_8859-15 l9"),
    "iso-8859-16": ("iso8859-16", "iso-8859-16"),
    "koi8-r": ("koi8-r", "cskoi8r koi koi8 koi8-r koi8_r"),
    "koi8-u": ("koi8-u", "koi8-ru koi8-u"),
    "macintosh": ("mac-roman", "csmacintosh mac macintosh x-mac-roman"),
    "windows-874": ("cp874", "dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874"),
    "windows-1250": ("cp1250", "cp1250 windows-1250 x-cp1250"),
    "windows-1251": ("cp1251", "cp1251 windows-1251 x-cp1251"),
    "windows-1252": ("cp1252", "ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 "
                     "iso-ir-100 iso8859-1 iso88591 iso_8859-1 iso_8859-1:1987 l1 latin1 "
                     "us-ascii windows-1252 x-cp1252"),
    "windows-1253": ("cp1253", "cp1253 windows-1253 x-cp1253"),
    "windows-1254": ("cp1254", "cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 "
                     "iso_8859-9 iso_8859-9:1989 l5 latin5 windows-1254 x-cp1254"),
    "windows-1255": ("cp1255", "cp1255 windows-1255 x-cp1255"),
    "windows-1256": ("cp1256", "cp1256 windows-1256 x-cp1256"),
    "windows-1257": ("cp1257", "cp1257 windows-1257 x-cp1257"),
    "windows-1258": ("cp1258", "cp1258 windows-1258 x-cp1258"),
    "x-mac-cyrillic": ("mac-cyrillic", "x-mac-cyrillic x-mac-ukrainian"),
    "gbk": ("gb18030", "chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk "
            "iso-ir-58 x-gbk"),  # the standard's GBK decoder is its gb18030 decoder
    "gb18030": ("gb18030", "gb18030"),
    "big5": ("big5hkscs", "big5 big5-hkscs cn-big5 csbig5 x-x-big5"),
    "euc-jp": ("euc_jp", "cseucpkdfmtjapanese euc-jp x-euc-jp"),
    "iso-2022-jp": ("iso2022_jp", "csiso2022jp iso-2022-jp"),
    "shift_jis": ("cp932", "csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j "
                  "x-sjis"),
    "euc-kr": ("cp949", "cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 "
               "ks_c_5601-1989 ksc5601 ksc_5601 windows-949"),
    # browsers decode a whole page in these to one U+FFFD (they were XSS vectors)
    "replacement": (None, "csiso2022kr hz-gb-2312 iso-2022-cn iso-2022-cn-ext iso-2022-kr "
                    "replacement"),
    "utf-16be": ("utf-16-be", "unicodefffe utf-16be"),
    "utf-16le": ("utf-16-le", "csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff utf-16 "
                 "utf-16le"),
    "x-user-defined": (None, "x-user-defined"),  # bytes 0x80-0xFF as U+F780-U+F7FF
}  # fmt: skip

_LABELS: dict[str, str] = {
    label: name for name, (_, labels) in ENCODINGS.items() for label in labels.split()
}

# chardet's names (compat_names=False) of the encodings above that are not WHATWG labels
DETECTED_ALIASES = {
    "utf-16-le": "utf-16le", "utf-16-be": "utf-16be", "iso8859-16": "iso-8859-16",
    "mac-roman": "macintosh", "mac-cyrillic": "x-mac-cyrillic", "cp874": "windows-874",
    "big5hkscs": "big5", "euc_jis_2004": "euc-jp", "iso2022_jp_2": "iso-2022-jp",
    "shift_jis_2004": "shift_jis", "cp932": "shift_jis", "euc_kr": "euc-kr", "cp949": "euc-kr",
}  # fmt: skip
# what chardet may answer: encodings a browser decodes (its other 40-odd are not web charsets)
DETECTABLE = (
    "utf-8", "ascii", "iso8859-1", "cp1250", "cp1251", "cp1252", "cp1253", "cp1254", "cp1255",
    "cp1256", "cp1257", "cp1258", "iso8859-2", "iso8859-3", "iso8859-4", "iso8859-5",
    "iso8859-6", "iso8859-7", "iso8859-8", "iso8859-9", "iso8859-10", "iso8859-13",
    "iso8859-14", "iso8859-15", "koi8-r", "koi8-u", "cp866", "tis-620", "gb18030",
    *DETECTED_ALIASES,
)  # fmt: skip


def encoding(label: str | None) -> str | None:
    """The WHATWG encoding a label names ("get an encoding"), None for no such label."""
    if not label or not label.isascii():  # str.lower would turn the Kelvin sign into "k"
        return None
    return _LABELS.get(label.strip("\t\n\f\r ").lower())


def codec(label: str | None) -> str | None:
    """The Python codec for a WHATWG label; None for any other name, or no Python decoder."""
    name = encoding(label)
    return None if name is None else ENCODINGS[name][0]
