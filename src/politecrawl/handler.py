"""The page handler: the user's code that turns a stored page into items, and picks its links.

A handler is a function of a ``Page`` that yields (or returns an iterable of) dicts, like a
Scrapy ``parse`` callback or a Crawlee request handler; an ``async def`` one may ``await``
or be an async generator. It may call ``page.follow(links)`` to narrow the links followed
(``response.follow`` in Scrapy, ``enqueue_links`` in Crawlee): those still pass the one gate.
Given as a callable (``Crawler(config, on_page=handler)``) or an import string
(``--handler pkg.module:function``, ``handler = "pkg.module:function"`` in TOML).

It is called for each page stored (not for ``noindex`` pages nor duplicates), on the event
loop, after the page's WARC record is written, so each item gets the page's ``url`` and the
``warc_record_id`` of that response record (the item's own keys win). A handler that raises,
or yields something that is not a mapping, costs that page the items it had not yet yielded,
never the crawl: the error is logged and counted (``handler_errors``).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeAlias

from politecrawl.content.page import Page
from politecrawl.errors import HandlerError
from politecrawl.focus.relevance import load_callable

__all__ = ["PageHandler", "load_handler", "run_handler"]

log = logging.getLogger("politecrawl")

Item: TypeAlias = Mapping[str, Any]
PageHandler: TypeAlias = Callable[
    [Page], Iterable[Item] | AsyncIterable[Item] | Awaitable[Iterable[Item] | None] | None
]


def load_handler(spec: str) -> PageHandler:
    """Import ``"pkg.module:function"``; ``ConfigError`` if it is not there or not callable."""
    func: Any = load_callable(spec, what="page handler")
    handler: PageHandler = func
    return handler


async def run_handler(
    handler: PageHandler, page: Page, warc_record_id: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    """(items with ``url`` and ``warc_record_id`` added, the error if the handler failed)."""
    items: list[dict[str, Any]] = []
    base = {"url": page.url, "warc_record_id": warc_record_id}
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
                items.append(base | dict(_mapping(item)))
        else:
            for item in result:
                items.append(base | dict(_mapping(item)))
    except Exception as exc:  # the user's code must not stop the crawl
        log.warning("page handler failed on %s: %r", page.url, exc, exc_info=True)
        return items, repr(exc)
    return items, None


def _mapping(item: object) -> Mapping[str, Any]:
    if not isinstance(item, Mapping):
        raise HandlerError(f"a page handler must yield dicts, got {type(item).__name__}")
    return item
