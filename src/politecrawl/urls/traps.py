"""URL spaces that grow without end: calendars, endless pagination, generated query strings.

A URL's *pattern* is its host and path with every run of digits written ``N`` and every query
value written ``*`` (``/cal/2024/05/17`` and ``/cal/2024/05/18`` share ``/cal/N/N/N``;
``/list?page=7&sid=x`` is ``/list?page=*&sid=*``). A URL with no digits and no query has no
pattern: a site's hand-written pages are never counted here.

What marks a trap is not the page's content (each calendar day may have its own text) but how
its URLs are found: each new one is linked from a page of the same generated family (same
host, same first path segment, itself patterned), so the space feeds itself. A pattern that
has been fed this way ``max_urls`` times is declared a trap: no more of its URLs are queued,
and the crawl names it (``on_trap``: a warning and ``log/traps.jsonl``, which ``log-stats``
reads). URLs of the pattern reached from elsewhere (an index page, a sitemap, a seed) are not
counted, so a site's 300 chapters listed on one index page are all crawled.

This follows the seeds' "URLs with odd query strings, unique session IDs ... will quickly have
you chasing your own tail" (004) and BUbiNG/Heritrix practice: a budget per URL shape rather
than a guess from content. Memory: one counter per patterned family seen, cleared of
singletons past ``_MAX_PATTERNS``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

_DIGITS = re.compile(r"[0-9]+")
_QUERY_VALUE = re.compile(r"=[^&]*")
_MAX_PATTERNS = 500_000

# called once per (host, pattern) that became a trap: host, pattern, an example URL
TrapHook = Callable[[str, str, str], None]


def _split(url: str) -> tuple[str, str] | None:
    """(host, pattern) of a canonical URL, or None when the URL has no variable part."""
    start = url.find("//") + 2
    slash = url.find("/", start)
    if slash < 0:
        return None
    rest = url[slash:]
    path, sep, query = rest.partition("?")
    if not sep and not any(c.isdigit() for c in path):
        return None
    pattern = _DIGITS.sub("N", path)
    if sep:
        pattern += "?" + _QUERY_VALUE.sub("=*", query)
    return url[start:slash], pattern


def _family(pattern: str) -> str:
    """The first path segment of a pattern: day and month pages of a calendar are one family."""
    end = pattern.find("/", 1)
    first = pattern[: end if end > 0 else len(pattern)]
    return first.partition("?")[0]


class UrlSpaces:
    """Counts self-generated URLs per pattern; ``full`` says a pattern is a trap."""

    def __init__(self, max_urls: int | None, on_trap: TrapHook | None = None) -> None:
        self.max_urls = max_urls
        self.on_trap = on_trap
        self._fed: Counter[tuple[str, str]] = Counter()
        self.traps: dict[tuple[str, str], str] = {}  # (host, pattern) -> the URL that filled it
        self._source: str | None = None  # the last source's split, kept: links come in batches
        self._source_split: tuple[str, str] | None = None

    def full(self, url: str) -> bool:
        """Whether ``url`` belongs to a pattern already declared a trap."""
        if self.max_urls is None or not self.traps:
            return False
        split = _split(url)
        return split is not None and split in self.traps

    def admitted(self, url: str, source: str | None) -> None:
        """Count ``url`` if ``source`` (the page linking to it) is of its generated family."""
        if self.max_urls is None or source is None:
            return
        split = _split(url)
        if split is None:
            return
        if source is not self._source:
            self._source, self._source_split = source, _split(source)
        src = self._source_split
        if src is None or src[0] != split[0] or _family(src[1]) != _family(split[1]):
            return
        self._fed[split] = n = self._fed[split] + 1
        if n >= self.max_urls and split not in self.traps:
            self.traps[split] = url
            if self.on_trap is not None:
                self.on_trap(split[0], split[1], url)
        if len(self._fed) > _MAX_PATTERNS:
            for key in [k for k, v in self._fed.items() if v == 1]:
                del self._fed[key]
