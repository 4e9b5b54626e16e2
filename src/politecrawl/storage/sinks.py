"""Where a crawl's pages and items go: one small protocol, ``Sink``, for every destination.

A sink receives a ``PageRecord`` for each page the crawl keeps (stored in full, stored without
a copy because of ``noarchive``, or recorded as a duplicate of an identical payload; a
``noindex`` page is kept by no one) and an ``ItemRecord`` for each item a page handler
extracted, in that order, after the page's WARC record is with the OS. ``pages.jsonl`` and
``items.jsonl`` are sinks; so is anything a user passes as ``Crawler(config, sinks=[...])``.

A sink that raises ``StorageError`` or ``OSError`` stops the crawl cleanly (the page is not
counted done, as with a failed WARC write); ``close`` is called once at the end. One that
raises ``HandlerError`` for an item (no file can hold it: a cycle, nested past the stack)
costs that item only: left out, said, its page counted in ``handler_errors``. The three
items files write an item's values through one conversion (``itemvalues.ItemValues``): a
date is ISO 8601, a set a list, NaN null, text UTF-8 cannot hold (a lone surrogate) U+FFFD,
said once per file, in each of them alike.
"""

from __future__ import annotations

import csv
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from politecrawl.content.page import Page
from politecrawl.storage.itemvalues import ItemValues
from politecrawl.storage.logs import JsonlLog, log_time

__all__ = [
    "ITEM_FORMATS",
    "ContentLog",
    "ItemRecord",
    "ItemsCsv",
    "ItemsJson",
    "ItemsLog",
    "PageRecord",
    "PagesLog",
    "Record",
    "Sink",
]

log = logging.getLogger("politecrawl")
ITEM_FORMATS = (".jsonl", ".json", ".csv")  # --items FILE: the format is the file's suffix

Kept = Literal["stored", "noarchive", "duplicate", "reserved"]


@dataclass(frozen=True, slots=True)
class PageRecord:
    """A page the crawl kept, and how: ``stored`` (a WARC response record, ``warc_record_id``),
    ``noarchive`` (no copy kept, the page asked: not counted as stored, no items; the
    request log's outcome is ``noarchive``), ``duplicate`` (a revisit
    record of ``duplicate_of``, whose payload is the same). ``warc_record_id`` is always the
    record written for this fetch; when it is a revisit record (a duplicate, or the same
    bytes as this URL's last copy), ``original_record_id`` is the response record it names,
    which holds the payload. ``reserved``: fetched, but its
    owner refuses the crawl's purpose (``polite.usage``): nothing of it is kept, and only
    ``pages.jsonl`` hears of it, with the reason and no text."""

    page: Page
    kept: Kept
    fetched_at: float
    priority: float
    warc_record_id: str | None = None
    original_record_id: str | None = None  # the response a revisit record names
    duplicate_of: str | None = None
    near_duplicate_of: str | None = None  # nearly the same text: stored in full all the same
    changed: bool | None = None
    outlinks: int = 0  # links offered to the gate


@dataclass(frozen=True, slots=True)
class ItemRecord:
    """One item a page handler produced; ``item`` already holds the page's provenance
    (``url``, ``warc_record_id``, ``usage``: ``handler.with_provenance``)."""

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
        if record.kept == "reserved":  # why, and nothing of the page's content
            self.log.write(
                {
                    "time": log_time(record.fetched_at),
                    "url": page.url,
                    "kept": "reserved",
                    "reserved_by": (page.usage or {}).get("refused_by", []),
                    "depth": page.depth,
                    "priority": record.priority,
                    "outlinks": record.outlinks,
                    "usage": page.usage,
                }
            )
            return
        self.log.write(
            {
                "time": log_time(record.fetched_at),
                "url": page.url,
                "kept": record.kept,
                "warc_record_id": record.warc_record_id,
                "original_record_id": record.original_record_id,
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
                "usage": page.usage,
            }
        )

    def close(self) -> None:
        self.log.close()


class ItemsLog:
    """``OUT/items.jsonl``: one line per item, one file (never rotated nor expired: it is the
    crawl's data); values as ``ItemValues`` makes them."""

    def __init__(self, log: JsonlLog) -> None:
        self.log = log
        self.values = ItemValues(log.path)

    def write(self, record: Record) -> None:
        if not isinstance(record, ItemRecord):
            return
        self.log.write(self.values.plain(record.item))  # HandlerError: nothing written

    def close(self) -> None:
        self.log.close()


class ItemsCsv:
    """``--items FILE.csv`` (Scrapy's ``-o items.csv``): the columns are the first item's keys
    (on a resume, the file's header); a key a later item adds is left out, said once in the
    log. Values as ``ItemValues`` makes them: a list or an object written as JSON, null as an
    empty cell."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.values = ItemValues(path)
        self._columns: list[str] | None = None
        if path.exists() and path.stat().st_size:
            with path.open(newline="", encoding="utf-8") as fh:
                self._columns = next(csv.reader(fh), None)
        self._fh = path.open("a", newline="", encoding="utf-8")
        self._out = csv.writer(self._fh)
        self._warned: set[str] = set()

    def write(self, record: Record) -> None:
        if not isinstance(record, ItemRecord):
            return
        item = self.values.plain(record.item)  # HandlerError: none written
        row = [_cell(item.get(k)) for k in self._columns or item]
        if self._columns is None:
            self._columns = list(item)
            self._out.writerow(self._columns)
        for key in item.keys() - set(self._columns) - self._warned:
            self._warned.add(key)
            log.warning("%s: key %r is not a column (the first item's keys): left out; "
                        "a .json or .jsonl file keeps every key", self.path, key)  # fmt: skip
        self._out.writerow(row)
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


def _cell(value: Any) -> Any:
    """A CSV cell of a JSON value: text and numbers as they are, null empty, a list or an
    object as JSON."""
    if value is None:
        return ""
    if isinstance(value, list | dict):
        return _json(value)
    return value


def _json(value: Any) -> str:
    """JSON text of values ``ItemValues`` made (no NaN, no surrogate, nothing but JSON)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


class ItemsJson:
    """``--items FILE.json``: one JSON array of the items, valid once the crawl has ended; a
    resumed crawl continues the same array."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.values = ItemValues(path)
        self._fh = path.open("a+b")
        self._fh.seek(0, 2)
        self._empty = True
        if self._fh.tell():
            self._fh.seek(0)
            text = self._fh.read().rstrip()
            if text.endswith(b"]"):
                text = text[:-1].rstrip()
            self._empty = text in (b"", b"[")
            self._fh.truncate(0)
            self._fh.write(text if text else b"[")
        else:
            self._fh.write(b"[")
        self._fh.flush()

    def write(self, record: Record) -> None:
        if not isinstance(record, ItemRecord):
            return
        line = _json(self.values.plain(record.item)).encode()  # HandlerError: nothing written
        sep = b"\n" if self._empty else b",\n"
        self._empty = False
        self._fh.write(sep + line)
        self._fh.flush()

    def close(self) -> None:
        self._fh.write(b"\n]\n")
        self._fh.close()


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
