"""How a topic is read: words as the page text's words are read, and a user's phrasing dropped.

``tokens`` is the one tokenizer of topic and page text alike (``KeywordScorer``, the link
prioritiser): compatibility forms folded (NFKC: full-width ``ＦＵＬＬ`` is ``full``), soft hyphens
removed, ``C++``, ``C#`` and ``F#`` read as the words ``cpp``, ``csharp`` and ``fsharp`` (not the
letter ``c`` of every C-API page). ``read_topic`` splits a topic into phrases of keywords:
stop words out, a token without a letter or digit (``🚀``, ``★``) out, a possessive ``'s`` out,
and a question's frame at a phrase's start ("how do I", "should I", "can we", "are there",
"does ... ?", after a leading "and"/"but"). ``described`` is the line a crawl prints.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["described", "fold", "read_topic", "stem", "tokens"]

# ASCII non-alphanumerics and common Unicode punctuation -> space; str.translate + split is
# ~4x faster than re.findall(r"[^\W_]+") here and tokens dominate the scorer's cost
_PUNCTUATION = "\u00a0\u00ab\u00bb\u00b7\u2013\u2014\u2018\u2019\u201c\u201d\u2026\u3001\u3002"
SEPARATORS = {c: " " for c in range(128) if not chr(c).isalnum()} | {
    ord(c): " " for c in _PUNCTUATION
}
# the languages whose names are a letter and a sign, as words (a page's "C++" and a topic's)
_NAMED = {"c++": "cpp", "c#": "csharp", "f#": "fsharp"}
_SHOWN = {v: k for k, v in _NAMED.items()}
_NAMED_RE = re.compile(r"(?<![\w+#])(?:c\+\+|c#|f#)(?![+#])")


def fold(text: str) -> str:
    """NFKC (full-width and other compatibility forms as their plain letters), soft hyphens
    removed; ASCII text as it is. No-break spaces and ellipses are replaced first (what NFKC
    does to them): NFKC is then ~2 µs on a 2 KB page, against ~30 µs with them."""
    if text.isascii():
        return text
    if "\u00ad" in text:
        text = text.replace("\u00ad", "")
    return unicodedata.normalize("NFKC", text.replace("\u00a0", " ").replace("\u2026", "..."))


def named(low: str) -> str:
    """``c++``, ``c#``, ``f#`` in lower-cased text as the words ``cpp``, ``csharp``,
    ``fsharp``; three substring scans (~2 µs on a 2 KB page) when none is there."""
    if "c++" in low or "c#" in low or "f#" in low:
        return _NAMED_RE.sub(lambda m: f" {_NAMED[m.group(0)]} ", low)
    return low


def tokens(text: str) -> list[str]:
    """Lower-cased words: split on whitespace, ASCII punctuation and common Unicode
    punctuation, after ``fold`` and ``named``."""
    return named(fold(text).lower()).translate(SEPARATORS).split()


def stem(word: str) -> str:
    """Plural folding only ("stemming-lite"): railways -> railway, bodies -> body, boxes -> box.

    Cheap and predictable; it only has to agree with itself (topic and page are folded alike).
    """
    n = len(word)
    if n > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if n > 4 and word.endswith(("sses", "xes", "ches", "shes", "zes")):
        return word[:-2]
    if n > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


_STOP_TEXT = (
    "a an and are as at be by for from in into is it its of on or the to with about how what "
    "which who why when where this that these those"
)
STOP = frozenset(_STOP_TEXT.split())
# a topic is written as a user writes it ("How do I set up TLS certificates?", "Should I use
# threads?"): a question's frame at a phrase's start carries nothing a page would say back.
# Only there: elsewhere "i", "can", "us", "may", "will", "do" are as often a topic's own words
# ("I/O", "CAN bus", "US tax law", "to-do lists"). A yes/no question's verb is a frame only
# before a subject ("can I", "are there") or, in a phrase of three words or more, before a
# question mark ("does asyncio support cancellation?", not "CAN bus?"). None of
# bench/docbed.py's 30 topics changes.
_QUESTION_TEXT = "how what which who whom whose why when where"
_VERB_TEXT = (
    "do does did can could should would will shall may might must is are was were am have has had"
)
_SUBJECT_TEXT = "i we you they he she there"
_LEAD_TEXT = "and or but so also then plus"  # "..., and how do I parse ..."
_QUESTION = frozenset(_QUESTION_TEXT.split())
_VERB = frozenset(_VERB_TEXT.split())
_SUBJECT = frozenset(_SUBJECT_TEXT.split())
_FRAME = _VERB | _SUBJECT | frozenset(("it", "to", "a", "an", "the"))
_LEAD = frozenset(_LEAD_TEXT.split())
_ARTICLE = frozenset(("to", "a", "an", "the"))
_TOPIC_STOP = STOP | frozenset(("me", "my", "our", "ours", "your", "yours"))
# phrases are comma-separated; a semicolon, a bar or a new line separates them as well
_PHRASE_SEPARATORS = re.compile(r"[,;|\n]")
# a possessive "'s" (Python's) is no keyword; a contraction's is kept ("what's new" is the
# "s new" of the pages titled "What's New", as bench/docbed.py's release-notes topic reads it)
_POSSESSIVE = re.compile(
    r"\b(?!(?:what|who|where|when|how|why|it|that|there|here|he|she|let)['\u2019])"
    r"([^\W_]+)['\u2019]s\b",
    re.IGNORECASE,
)


def _unframed(words: list[str], asked: bool) -> list[str]:
    """``words`` without a question's frame at their start (after a leading "and", "but")."""
    j = 0
    while j < len(words) and words[j] in _LEAD:
        j += 1
    if j == len(words):
        return words
    first = words[j]
    j += 1
    if first in _QUESTION:  # "how do I", "what are the": the frame's words, as many as there are
        while j < len(words) and words[j] in _FRAME:
            j += 1
        return words[j:]
    if first not in _VERB:
        return words
    if j < len(words) and words[j] in _SUBJECT:  # "should I", "are there": one subject
        j += 1
    elif not (asked and len(words) - j >= 2):  # "does asyncio ... ?", not "CAN bus?"
        return words
    while j < len(words) and words[j] in _ARTICLE:
        j += 1
    return words[j:]


def topic_words(phrase: str) -> tuple[str, ...]:
    """A phrase's keywords, plural-folded: stop words, tokens without a letter or digit, a
    possessive "'s" and a question's frame at its start out."""
    asked = phrase.rstrip().endswith(("?", "\uff1f"))
    words = _unframed(tokens(_POSSESSIVE.sub(r"\1", fold(phrase))), asked)
    return tuple(stem(w) for w in words if w not in _TOPIC_STOP and any(c.isalnum() for c in w))


def read_topic(topic: str) -> list[tuple[str, ...]]:
    """The topic's phrases of keywords (phrases without any left out)."""
    phrases = (topic_words(part) for part in _PHRASE_SEPARATORS.split(topic))
    return [p for p in phrases if p]


def described(phrases: list[tuple[str, ...]]) -> str:
    """``topic read as: "database index", "b tree", "index scan"``: the line a crawl prints
    first, so a topic read wrong is seen at once; a phrase of one letter is named as such."""
    shown = ", ".join('"' + " ".join(_SHOWN.get(w, w) for w in p) + '"' for p in phrases)
    line = f"topic read as: {shown}"
    letters = [p[0] for p in phrases if len(p) == 1 and len(p[0]) == 1]
    if letters:
        line += (
            f" (a phrase of one letter, {', '.join(repr(x) for x in letters)}, is a word of "
            "almost every page: name what it stands for)"
        )
    return line
