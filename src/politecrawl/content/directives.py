"""Page-level robots directives: ``<meta name="robots">`` and ``X-Robots-Tag``.

robots.txt decides what we may fetch; these decide what we may do with a page we
fetched: ``noindex`` (do not store it as a result), ``nofollow`` (do not queue
its links), ``noarchive`` (do not keep a copy). We follow Google's documented
syntax: values are comma (or space, or semicolon) separated and case-insensitive, ``none``
means ``noindex, nofollow``, ``all``/``index``/``follow`` are no-ops, and
anything else (``nosnippet``, ``unavailable_after: ...``, ``max-snippet: 5``)
is ignored. A directive scoped to another crawler ("googlebot: noindex") does
not bind us; one scoped to our product token does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
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

    def __reduce__(self) -> tuple[type[PageDirectives], tuple[bool, bool, bool]]:
        return PageDirectives, (self.noindex, self.nofollow, self.noarchive)  # see parse.Link


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


def from_meta(name_content_pairs: Iterable[tuple[str, str]], product_token: str) -> PageDirectives:
    """Directives from ``<meta name=... content=...>`` pairs.

    ``name="robots"`` binds every crawler; ``name="<our token>"`` binds us;
    other names (``googlebot``, ``description``...) are ignored.
    """
    ours = {"robots", _token(product_token)} - {""}
    flags = _new_flags()
    for name, content in name_content_pairs:
        # a name is read as robots.txt reads a User-agent line (its leading letters): a bot
        # "probe2bot" is bound by <meta name="probe2bot">, as by its robots.txt group
        if _token(name) in ours:
            _apply(_SPLIT.split(content), flags)
    return PageDirectives(**flags)


_MAX_VALUE = 8192
_MAX_ITEMS = 100


def from_x_robots_tag(header_values: Iterable[str], product_token: str) -> PageDirectives:
    """Directives from ``X-Robots-Tag`` header values.

    ``noindex, nofollow`` binds everyone; ``otherbot: noindex, nofollow`` binds
    only otherbot, and the scope lasts until the next ``bot:`` prefix in the
    same header value.
    """
    token = _token(product_token)
    flags = _new_flags()
    for value in header_values:
        scope: str | None = None
        for item in value[:_MAX_VALUE].split(",")[:_MAX_ITEMS]:  # bounded work per header
            m = _SCOPED.fullmatch(item)
            if m is not None:
                name = m.group(1).lower()
                if name in _VALUED:
                    continue  # e.g. "unavailable_after: 25 Jun 2010": ignored
                scope = _token(name)  # (as a robots.txt User-agent line is read)
                item = m.group(2)
            if scope is None or (scope == token and token):
                _apply(_SPLIT.split(item.strip()), flags)
    return PageDirectives(**flags)


def merge(*ds: PageDirectives) -> PageDirectives:
    """Combine directives from several sources: any restriction wins."""
    if not ds:
        return _NONE
    return PageDirectives(
        noindex=any(d.noindex for d in ds),
        nofollow=any(d.nofollow for d in ds),
        noarchive=any(d.noarchive for d in ds),
    )
