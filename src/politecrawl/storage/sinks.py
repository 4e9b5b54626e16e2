"""Where a crawl's pages and items go: one small protocol, ``Sink``, for every destination.

A sink receives a ``PageRecord`` for each page the crawl keeps (stored in full, stored without
a copy because of ``noarchive``, or recorded as a duplicate of an identical payload; a
``noindex`` page is kept by no one) and an ``ItemRecord`` for each item a page handler
extracted, in that order, after the page's WARC record is with the OS. ``pages.jsonl`` and
``items.jsonl`` are sinks; so is anything a user passes as ``Crawler(config, sinks=[...])``.

A sink that raises ``StorageError`` or ``OSError`` stops the crawl cleanly (the page is not
counted done, as with a failed WARC write); ``close`` is called once at the end.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from politecrawl.content.page import Page
from politecrawl.storage import JsonlLog, log_time

__all__ = ["ContentLog", "ItemRecord", "ItemsLog", "PageRecord", "PagesLog", "Record", "Sink"]

Kept = Literal["stored", "noarchive", "duplicate"]


@dataclass(frozen=True, slots=True)
class PageRecord:
    """A page the crawl kept, and how: ``stored`` (a WARC response record, ``warc_record_id``),
    ``noarchive`` (counted as stored, no copy kept: the page asked), ``duplicate`` (a revisit
    record of ``duplicate_of``, whose payload is the same)."""

    page: Page
    kept: Kept
    fetched_at: float
    priority: float
    warc_record_id: str | None = None
    duplicate_of: str | None = None
    near_duplicate_of: str | None = None  # nearly the same text: stored in full all the same
    changed: bool | None = None
    outlinks: int = 0  # links offered to the gate


@dataclass(frozen=True, slots=True)
class ItemRecord:
    """One item a page handler produced; ``item`` already holds ``url`` and ``warc_record_id``."""

    item: dict[str, Any]
    page: Page


Record = PageRecord | ItemRecord


@runtime_checkable
class Sink(Protocol):
    """A destination for what the crawl keeps."""

    def write(self, record: Record) -> None: ...

    def close(self) -> None: ...


class PagesLog:
    """``OUT/pages.jsonl``: one line per kept page, with its decoded charset and how it was kept."""

    def __init__(self, log: JsonlLog) -> None:
        self.log = log

    def write(self, record: Record) -> None:
        if not isinstance(record, PageRecord):
            return
        page = record.page
        self.log.write(
            {
                "time": log_time(record.fetched_at),
                "url": page.url,
                "kept": record.kept,
                "warc_record_id": record.warc_record_id,
                "title": page.title,
                "charset": page.charset,
                "charset_source": page.charset_source,
                "relevance": page.relevance,
                "depth": page.depth,
                "priority": record.priority,
                "outlinks": record.outlinks,
                "canonical": page.canonical,
                "duplicate_of": record.duplicate_of,
                "near_duplicate_of": record.near_duplicate_of,
                "changed": record.changed,
            }
        )

    def close(self) -> None:
        self.log.close()


class ItemsLog:
    """``OUT/items.jsonl``: one line per item; values JSON cannot hold are written as text."""

    def __init__(self, log: JsonlLog) -> None:
        self.log = log

    def write(self, record: Record) -> None:
        if not isinstance(record, ItemRecord):
            return
        try:
            self.log.write(record.item)
        except (TypeError, ValueError):  # a date, a set, a node...: its str()
            self.log.write(json.loads(json.dumps(record.item, default=str, skipkeys=True)))

    def close(self) -> None:
        self.log.close()


class ContentLog:
    """``OUT/content.jsonl`` (``--extract``): one line per page stored in the WARC, with its
    main text as each format asked (``text``, ``markdown``) and the metadata found.

    The extraction itself is done before, in a thread (``keep.extract_content``); here the
    page's cached results are only written. A page with no copy (``noarchive``) or a
    duplicate gets no line: the first asked for no copy, the second's text is its original's.
    """

    def __init__(self, log: JsonlLog, formats: tuple[str, ...]) -> None:
        self.log = log
        self.formats = formats

    def write(self, record: Record) -> None:
        if not isinstance(record, PageRecord) or record.kept != "stored":
            return
        page = record.page
        row: dict[str, Any] = {"url": page.url, "warc_record_id": record.warc_record_id}
        found = [page.extract("markdown" if f == "markdown" else "text") for f in self.formats]
        first = found[0]
        row["title"] = first.title or page.title or None
        row["lang"] = first.lang
        row["date"] = first.date
        row["author"] = first.author
        for fmt, ex in zip(self.formats, found, strict=True):
            row[fmt] = ex.text
        self.log.write(row)

    def close(self) -> None:
        self.log.close()
