"""Page-level robots directives: ``<meta name="robots">`` and ``X-Robots-Tag``.

robots.txt decides what we may fetch; these decide what we may do with a page we
fetched: ``noindex`` (do not store it as a result), ``nofollow`` (do not queue
its links), ``noarchive`` (do not keep a copy). We follow Google's documented
syntax: values are comma (or space, or semicolon) separated and case-insensitive, ``none``
means ``noindex, nofollow``, ``all``/``index``/``follow`` are no-ops, and
anything else (``nosnippet``, ``max-snippet: 5``) is ignored. A directive scoped to
another crawler ("googlebot: noindex") does not bind us; one scoped to our product token
does.

``unavailable_after: DATE`` (Google: "do not show this page in search results after the
specified date/time", in "a widely adopted format including, but not limited to RFC 822,
RFC 850, and ISO 8601"; "ignored if no valid date/time is specified"): a date past when
the page is read makes it ``noindex`` (``expired``); a date to come changes nothing; a date
that cannot be read is ignored and kept in ``bad_date`` for the crawler to say. A date
without a zone is UTC, a day without a time is the whole of that day. Read only where the
text holds a ``_``: the hot path of other pages is unchanged.
"""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_tz
from typing import Final

__all__ = ["PageDirectives", "from_meta", "from_x_robots_tag", "merge"]

_SPLIT: Final = re.compile(r"[\s,;]+")  # ";" as some sites write it
# a scope is any bot name, digits and dots included ("mj12bot:", "bing.bot:"): read as
# letters only, such a name was no scope, and its directives bound every crawler
_SCOPED: Final = re.compile(r"\s*([A-Za-z0-9_.-]+)\s*:\s*(.*)", re.DOTALL)
# Directives that themselves take a "name: value" form, so a leading "name:" is
# not a user-agent scope.
_VALUED: Final = frozenset(
    {"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"}
)
_TOKEN: Final = re.compile(r"[A-Za-z_-]*")


@dataclass(frozen=True, slots=True)
class PageDirectives:
    """What a page allows us to do with it; the default allows everything."""

    noindex: bool = False
    nofollow: bool = False
    noarchive: bool = False
    expired: bool = False  # an unavailable_after date past (then noindex too)
    bad_date: str = ""  # an unavailable_after date that could not be read (ignored)

    def __reduce__(self) -> tuple[type[PageDirectives], tuple[bool, bool, bool, bool, str]]:
        return PageDirectives, (  # see parse.Link
            self.noindex, self.nofollow, self.noarchive, self.expired, self.bad_date,
        )  # fmt: skip


_NONE: Final = PageDirectives()


def _apply(words: Iterable[str], flags: dict[str, bool]) -> None:
    for word in words:
        w = word.lower()
        if w == "none":
            flags["noindex"] = flags["nofollow"] = True
        elif w in flags:
            flags[w] = True
        # "all", "index", "follow" and unknown words change nothing.


def _token(product_token: str) -> str:
    """Lower-cased product token; tolerates a full User-Agent ("bot/1.0 (+url)")."""
    m = _TOKEN.match(product_token.strip())
    return m.group().lower() if m else ""


def _new_flags() -> dict[str, bool]:
    return {"noindex": False, "nofollow": False, "noarchive": False}


_UNAVAILABLE: Final = re.compile(r"unavailable_after\s*:", re.IGNORECASE)
_DATE_END: Final = re.compile(r"[,;]")
_WEEKDAYS: Final = frozenset(
    w.lower() for w in (*calendar.day_abbr, *calendar.day_name)
)  # "Fri, 25 Jun 2010 ...": the comma is the date's, not a list's
MAX_DATE: Final = 80


def _cut_date(rest: str) -> tuple[str, str]:
    """The date after ``unavailable_after:`` and what follows it in the list: a date ends at
    the next comma or semicolon, unless that comma follows a weekday (RFC 822 / 850)."""
    m = _DATE_END.search(rest)
    if m is None:
        return rest.strip(), ""
    date = rest[: m.start()].strip()
    if m.group() == "," and date.lower() in _WEEKDAYS:
        m2 = _DATE_END.search(rest, m.end())
        end = len(rest) if m2 is None else m2.start()
        return rest[:end].strip(), rest[end:]
    return date, rest[m.start() :]


def read_date(text: str) -> float | None:
    """A date/time as Google reads ``unavailable_after`` (RFC 822/1123, RFC 850, asctime,
    ISO 8601), in epoch seconds; None if it cannot be read. No zone: UTC; a day without a
    time: the end of that day."""
    text = text.strip()
    if not text or len(text) > MAX_DATE:
        return None
    try:
        iso = datetime.fromisoformat(text)
        if iso.tzinfo is None:
            iso = iso.replace(tzinfo=UTC)
        if not any(c in text[8:] for c in "T :"):  # a day alone: all of it
            iso += timedelta(days=1)
        return iso.timestamp()
    except OverflowError:  # the last day there is: never past
        return float("inf")
    except ValueError:
        pass
    try:
        parts, day_only = parsedate_tz(text), False
        if parts is None and ":" not in text:  # "25 Jun 2010": a day alone
            parts, day_only = parsedate_tz(text + " 00:00:00"), True
        if parts is None or not 1 <= parts[1] <= 12 or not 1 <= parts[2] <= 31:
            return None
        when = calendar.timegm((*parts[:6], 0, 0, 0)) - (parts[9] or 0)
    except (ValueError, TypeError, IndexError, OverflowError):
        return None
    return float(when + 86_400 * day_only)


def _unavailable(text: str, dates: list[str], now: float | None) -> tuple[str, bool]:
    """Read each ``unavailable_after: DATE`` of ``text`` (already ours): what is left of the
    text, and whether a date is past; each date that cannot be read goes to ``dates``."""
    expired = False
    m = _UNAVAILABLE.search(text)
    while m is not None:
        date, rest = _cut_date(text[m.end() :])
        when = read_date(date)
        if when is None:
            dates.append(date[:MAX_DATE] or "(none)")
        elif when <= (time.time() if now is None else now):
            expired = True
        text = text[: m.start()] + " " + rest
        m = _UNAVAILABLE.search(text)
    return text, expired


def _directives(flags: dict[str, bool], expired: bool, bad: list[str]) -> PageDirectives:
    """Past its unavailable_after date, a page is noindex (Google: not shown after it)."""
    if expired:
        flags["noindex"] = True
    return PageDirectives(**flags, expired=expired, bad_date=bad[0] if bad else "")


def from_meta(
    name_content_pairs: Iterable[tuple[str, str]], product_token: str, now: float | None = None
) -> PageDirectives:
    """Directives from ``<meta name=... content=...>`` pairs.

    ``name="robots"`` binds every crawler; ``name="<our token>"`` binds us;
    other names (``googlebot``, ``description``...) are ignored. ``now``: what
    ``unavailable_after`` is compared with (the clock's time if None).
    """
    ours = {"robots", _token(product_token)} - {""}
    flags = _new_flags()
    bad: list[str] = []
    expired = False
    for name, content in name_content_pairs:
        # a name is read as robots.txt reads a User-agent line (its leading letters): a bot
        # "probe2bot" is bound by <meta name="probe2bot">, as by its robots.txt group
        if _token(name) in ours:
            if "_" in content:
                content, past = _unavailable(content[:_MAX_VALUE], bad, now)
                expired |= past
            _apply(_SPLIT.split(content), flags)
    return _directives(flags, expired, bad)


_MAX_VALUE = 8192
_MAX_ITEMS = 100


def from_x_robots_tag(
    header_values: Iterable[str], product_token: str, now: float | None = None
) -> PageDirectives:
    """Directives from ``X-Robots-Tag`` header values.

    ``noindex, nofollow`` binds everyone; ``otherbot: noindex, nofollow`` binds
    only otherbot, and the scope lasts until the next ``bot:`` prefix in the
    same header value. ``now``: what ``unavailable_after`` is compared with.
    """
    token = _token(product_token)
    flags = _new_flags()
    bad: list[str] = []
    expired = False
    for value in header_values:
        scope: str | None = None
        items = value[:_MAX_VALUE].split(",")[:_MAX_ITEMS]  # bounded work per header
        for i, item in enumerate(items):
            m = _SCOPED.fullmatch(item)
            if m is not None:
                name = m.group(1).lower()
                if name not in _VALUED:
                    scope = _token(name)  # (as a robots.txt User-agent line is read)
                    item = m.group(2)
            if scope is None or (scope == token and token):
                if "_" in item and _UNAVAILABLE.match(item.lstrip()):
                    # the date's own comma ("Fri, 25 Jun 2010"): the next item is its rest
                    date = item.lstrip()[len("unavailable_after") :].lstrip(" \t:")
                    if date.strip().lower() in _WEEKDAYS and i + 1 < len(items):
                        item = f"{item},{items[i + 1]}"
                        items[i + 1] = ""
                    expired |= _unavailable(item, bad, now)[1]
                    continue
                _apply(_SPLIT.split(item.strip()), flags)
    return _directives(flags, expired, bad)


def merge(*ds: PageDirectives) -> PageDirectives:
    """Combine directives from several sources: any restriction wins."""
    if not ds:
        return _NONE
    return PageDirectives(
        noindex=any(d.noindex for d in ds),
        nofollow=any(d.nofollow for d in ds),
        noarchive=any(d.noarchive for d in ds),
        expired=any(d.expired for d in ds),
        bad_date=next((d.bad_date for d in ds if d.bad_date), ""),
    )
