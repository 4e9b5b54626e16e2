"""What a sitemap parse yields: the entries, the result, and the error classes ranked.

``SitemapEntry`` and ``Sitemap`` are the values ``sitemaps.parse_sitemap`` returns; the error
classes are ordered so that when several apply the most important is kept. Also here, the
readers that turn an entry's field texts into values (W3C and RFC 822 dates, ``changefreq``,
``priority``), each returning None rather than raising. A module of its own so that the
parser (``sitemapparse``) and the entry point (``sitemaps``) share these without importing
each other.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import mktime_tz, parsedate_tz
from typing import Final

__all__ = [
    "CORRUPT_GZIP",
    "EMPTY",
    "ENTITIES_REFUSED",
    "ERROR_RANK",
    "MALFORMED_XML",
    "NOT_A_SITEMAP",
    "TOO_COMPLEX",
    "TOO_LARGE",
    "TOO_MANY_URLS",
    "TRUNCATED_XML",
    "Sitemap",
    "SitemapEntry",
    "read_changefreq",
    "read_priority",
    "read_rfc822_time",
    "read_w3c_time",
]

# Error classes, most important first: when several apply, the earliest wins
# (a cut-off document is also malformed; "too large" is the reason).
TOO_LARGE: Final = "too large"
CORRUPT_GZIP: Final = "corrupt gzip"
ENTITIES_REFUSED: Final = "entities refused"
TOO_COMPLEX: Final = "too complex"
NOT_A_SITEMAP: Final = "not a sitemap"
EMPTY: Final = "empty"
TRUNCATED_XML: Final = "truncated xml"
MALFORMED_XML: Final = "malformed xml"
TOO_MANY_URLS: Final = "too many urls"
_ERROR_ORDER: Final = (
    TOO_LARGE,
    CORRUPT_GZIP,
    ENTITIES_REFUSED,
    TOO_COMPLEX,
    NOT_A_SITEMAP,
    EMPTY,
    TRUNCATED_XML,
    MALFORMED_XML,
    TOO_MANY_URLS,
)
ERROR_RANK: Final = {error: rank for rank, error in enumerate(_ERROR_ORDER)}


@dataclass(frozen=True, slots=True)
class SitemapEntry:
    """One ``<url>`` (a page) or ``<sitemap>`` (a child sitemap) of a sitemap file."""

    url: str  # canonical (politecrawl.urls.canonical.canonicalize)
    lastmod: float | None  # epoch seconds
    changefreq: str | None  # always|hourly|daily|weekly|monthly|yearly|never
    priority: float | None  # 0.0-1.0


@dataclass(slots=True)
class Sitemap:
    """What one sitemap file yielded; ``error`` classifies what went wrong, if anything.

    Entries found before an error are kept: a partly usable sitemap is still
    worth its URLs.
    """

    pages: list[SitemapEntry]
    children: list[SitemapEntry]
    skipped: int  # invalid / non-http(s) / over-limit locations
    error: str | None


_CHANGEFREQ: Final = {
    f: f for f in ("always", "hourly", "daily", "weekly", "monthly", "yearly", "never")
}
_YEAR_MONTH: Final = re.compile(r"([0-9]{4})(?:-([0-9]{2}))?").fullmatch


def read_w3c_time(text: str | None) -> float | None:
    """Epoch seconds of a W3C datetime (YYYY, YYYY-MM, YYYY-MM-DD, full); UTC if no zone."""
    if text is None:
        return None
    text = text.strip()
    return _w3c_stripped(text) if 4 <= len(text) <= 40 else None


@functools.lru_cache(maxsize=4096)  # sitemaps repeat a few dates; keys are at most 40 chars
def _w3c_stripped(text: str) -> float | None:
    try:
        if len(text) >= 10:
            if text[-1] == "z":  # fromisoformat takes only "Z"
                text = text[:-1] + "Z"
            when = datetime.fromisoformat(text)
        else:
            match = _YEAR_MONTH(text)
            if match is None:
                return None
            when = datetime(int(match[1]), int(match[2] or 1), 1)
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return when.timestamp()
    except (ValueError, OverflowError):
        return None


def read_rfc822_time(text: str | None) -> float | None:
    """Epoch seconds of an RSS ``pubDate`` (RFC 822 date), or None."""
    if text is None:
        return None
    text = text.strip()
    if len(text) > 80:
        return None
    try:
        parsed = parsedate_tz(text)
        return None if parsed is None else float(mktime_tz(parsed))
    except (ValueError, OverflowError, IndexError, TypeError):
        return None


def read_priority(text: str | None) -> float | None:
    if text is None or len(text) > 32:
        return None
    try:
        value = float(text)  # also takes "nan", "1_0": the range check drops those
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


def read_changefreq(text: str | None) -> str | None:
    if text is None or len(text) > 32:
        return None
    return _CHANGEFREQ.get(text.strip().lower())
