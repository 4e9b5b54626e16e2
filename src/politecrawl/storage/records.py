"""The shape of each log's records, as ``engine/journal`` and ``storage/sinks`` write them.

The operator tools rely on these types (a ``time`` that parses, a ``duration_ms`` that is a
number); a line that a crash, a disk or a hand turned into another shape (``"time": 1e18``,
``"duration_ms": "fast"``) must be skipped and counted, not crash a tool three calls later.
``storage.logs.iter_log_records(..., shape=REQUESTS)`` applies one of these.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

__all__ = ["LINKS", "PAGES", "REQUESTS", "ROBOTS", "RULES", "TRAPS", "Shape", "time_of"]

Check = Callable[[Any], bool]

# the instants a datetime holds in UTC, as Unix seconds: 0001-01-01 .. 9999-12-31T23:59:59
_EPOCH_MIN, _EPOCH_MAX = -62135596800.0, 253402300799.0


def time_of(value: Any) -> datetime | None:
    """A record's ``time`` (ISO 8601; naive means UTC) as an aware UTC datetime, or None
    when it is not one: every tool reads times through this, so none meets an overflow."""
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value)
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except (ValueError, OverflowError):  # not ISO 8601; or out of range once in UTC
        return None


def _time(v: Any) -> bool:
    return time_of(v) is not None


def _time_or_epoch(v: Any) -> bool:
    """pages.jsonl may carry Unix seconds (the report's documented input)."""
    if isinstance(v, int | float) and not isinstance(v, bool):
        return math.isfinite(v) and _EPOCH_MIN <= v <= _EPOCH_MAX
    return _time(v)


def _text(v: Any) -> bool:
    return isinstance(v, str)


def _flag(v: Any) -> bool:
    return isinstance(v, bool)


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _amount(v: Any) -> bool:
    """Milliseconds, seconds, bytes: finite and not negative (NaN breaks every chart)."""
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def _score(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _status(v: Any) -> bool:
    return _count(v) and v <= 999


def _url(v: Any) -> bool:
    """A string ``urlsplit`` takes, whose host can be read (``http://[::1`` cannot)."""
    if not isinstance(v, str):
        return False
    try:
        urlsplit(v).hostname  # noqa: B018 (the property raises on a bad IPv6 literal)
    except ValueError:
        return False
    return True


def _text_or_count(v: Any) -> bool:
    return _text(v) or _count(v)


@dataclass(frozen=True, slots=True)
class Shape:
    """Fields a record must carry (``required``, not null: what a tool cannot do without)
    and fields it may carry (``optional``: absent, null, or of their kind); other fields are
    not the tools' concern."""

    name: str
    required: Mapping[str, Check]
    optional: Mapping[str, Check] = field(default_factory=dict)
    header: Shape | None = None  # the shape of a run's header line (``"record": "header"``)

    def fits(self, rec: dict[str, Any]) -> bool:
        if self.header is not None and rec.get("record") == "header":
            return self.header.fits(rec)
        for name, check in self.required.items():
            if not check(rec.get(name)):
                return False
        for name, check in self.optional.items():
            value = rec.get(name)
            if value is not None and not check(value):
                return False
        return True


REQUESTS = Shape(
    "request",
    {"time": _time, "url": _url},
    {
        "status": _status,
        "ip": _text,
        "content_type": _text,
        "content_length": _text_or_count,
        "location": _text,
        "duration_ms": _amount,
        "bytes": _amount,
        "outcome": _text,
        "attempt": _count,
        "delay_s": _amount,
        "key": _text,
        "error": _text,
        "error_detail": _text,
        "truncated": _flag,
        "refetch": _flag,
        "revisit": _flag,
        "redirect_refused": _text,
        "lookup_ms": _amount,
    },
    header=Shape("header", {"time": _time}, {"user_agent": _text, "purpose": _text}),
)
ROBOTS = Shape(
    "robots.txt fetch",
    {"time": _time, "host": _text, "origin": _text},
    {
        "url": _url,
        "status": _status,
        "outcome": _text,
        "error": _text,
        "content_type": _text,
        "body": _text,
    },
)
PAGES = Shape(
    "page",
    {"time": _time_or_epoch},
    {"url": _url, "relevance": _score, "relevant": _flag, "kept": _text},
)
TRAPS = Shape("trap", {"host": _text, "pattern": _text}, {"time": _time, "why": _text})
RULES = Shape("learned rule", {"rule": _text}, {"time": _time, "host": _text})


def _urls(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(u, str) for u in v)


LINKS = Shape("links found", {"links": _urls}, {"url": _url})
