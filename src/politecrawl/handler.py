"""The page handler: the user's code that turns a stored page into items, and picks its links.

A handler is a function of a ``Page`` that yields (or returns an iterable of) dicts, like a
Scrapy ``parse`` callback or a Crawlee request handler; an ``async def`` one may ``await``
or be an async generator. It may call ``page.follow(links)`` to narrow the links followed
(``response.follow`` in Scrapy, ``enqueue_links`` in Crawlee): those still pass the one gate.
Given as a callable (``Crawler(config, on_page=handler)``) or an import string
(``--handler pkg.module:function``, ``handler = "pkg.module:function"`` in TOML).

It is called for each page stored (not for ``noindex`` pages nor duplicates), on the event
loop, after the page's WARC record is written, so each item gets the page's ``url``, the
``warc_record_id`` of that response record and the owner's ``usage`` statements. Neither side
overwrites the other: a key the handler yields itself keeps the handler's value (a Scrapy
item's own ``url``, say), and when that value differs from the page's, the page's goes under
``page_url`` (``page_warc_record_id``, ``page_usage``). A handler that raises,
or yields something that is not a mapping, costs that page the items it had not yet yielded,
never the crawl: the error is logged and its page counted (``handler_errors`` counts pages:
one that also yielded an item no file can hold is still one).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeAlias

from politecrawl.content.page import Page
from politecrawl.errors import HandlerError
from politecrawl.focus.relevance import load_callable

__all__ = ["PageHandler", "load_handler", "run_handler", "with_provenance"]

log = logging.getLogger("politecrawl")

Item: TypeAlias = Mapping[str, Any]
PageHandler: TypeAlias = Callable[
    [Page], Iterable[Item] | AsyncIterable[Item] | Awaitable[Iterable[Item] | None] | None
]


def load_handler(spec: str, *, what: str = "page handler") -> PageHandler:
    """Import ``"pkg.module:function"``; ``ConfigError`` if it is not there or not callable
    (its message begins with ``what``: the command line gives ``--handler``)."""
    func: Any = load_callable(spec, what=what)
    handler: PageHandler = func
    return handler


async def run_handler(
    handler: PageHandler, page: Page, warc_record_id: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    """(items with the page's provenance added, the error if the handler failed)."""
    items: list[dict[str, Any]] = []
    base = {"url": page.url, "warc_record_id": warc_record_id, "usage": page.usage}
    try:
        result = handler(page)
        if inspect.isawaitable(result):
            result = await result
        if result is None:
            return items, None
        if isinstance(result, Mapping):
            result = [result]
        if isinstance(result, AsyncIterable):
            async for item in result:
                items.append(with_provenance(base, _mapping(item)))
        else:
            for item in result:
                items.append(with_provenance(base, _mapping(item)))
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # the user's code must not
        # stop the crawl, nor end it with its sys.exit() (Ctrl-C comes by a signal handler)
        log.warning("page handler failed on %s: %r", page.url, exc, exc_info=True)
        return items, repr(exc)
    return items, None


def _mapping(item: object) -> Mapping[str, Any]:
    if not isinstance(item, Mapping):
        raise HandlerError(f"a page handler must yield dicts, got {type(item).__name__}")
    return item


def with_provenance(base: dict[str, Any], item: Mapping[str, Any]) -> dict[str, Any]:
    """``item`` with the page's provenance (``base``) first: a key of both keeps the item's
    value, and the page's, if different, goes under ``page_KEY`` (``page_KEY_`` ... if the
    item has that too), so a consumer never loses either and never reads one for the other."""
    own = dict(item)
    out: dict[str, Any] = {}
    for key, value in base.items():
        if key in own and not _same(own[key], value):
            name = f"page_{key}"
            while name in own:
                name += "_"
            out[name] = value
        else:
            own.pop(key, None)
            out[key] = value
    return out | own


def _same(a: Any, b: Any) -> bool:
    try:  # the user's object: its __eq__ may raise, or answer with an array
        return a is b or (type(a) is type(b) and bool(a == b))
    except Exception:  # not comparable: not the same, both kept
        return False
