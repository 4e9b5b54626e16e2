"""CDXJ: the index of a WARC file's captures, as pywb, py-wacz and Browsertrix write it.

One line per response or revisit record (the records ``cdxj-indexer`` indexes by default;
request and warcinfo records are not captures)::

    SURT-KEY TIMESTAMP14 {"url": ..., "mime": ..., "status": "200", "digest": "sha1:...",
                          "length": "...", "offset": "...", "filename": "NAME.warc.gz"}

The key is the URL in SURT form from the ``surt`` package, the canonicalisation pywb itself
applies to a URL it is asked to replay, so a lookup finds the line. ``mime`` is the HTTP
Content-Type's media type (``warc/revisit`` for a revisit), ``offset`` and ``length`` the
record's gzip member in the file.

``WarcWriter`` appends a file's lines to ``NAME.cdxj`` beside it as each record is written
(after the record's bytes: what the index names is in the file). A crash between the two
leaves a line missing; the start that repairs the torn ``.open`` file rebuilds its index
from the file itself (``index_warc``), so after any crash every record of every closed WARC
file is in its index. Lines are in write order; ``politecrawl wacz`` sorts them.
"""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Iterator
from pathlib import Path

from fastwarc.warc import ArchiveIterator, WarcRecordType

__all__ = [
    "cdxj_line",
    "index_name",
    "index_warc",
    "prepare",
    "read_index",
    "sort_key",
    "write_index",
]

_INDEXED = WarcRecordType.response | WarcRecordType.revisit


def index_name(warc_name: str) -> str:
    """``NAME.warc.gz`` (or ``.warc.gz.open``) -> ``NAME.cdxj``."""
    return warc_name.removesuffix(".open").removesuffix(".gz").removesuffix(".warc") + ".cdxj"


def prepare() -> None:
    """Import ``surt`` now (about 0.1 s), before the crawl's requests: imported by the first
    index line instead, on the event loop, it would stall the requests then in flight (the
    first robots.txt answers) and inflate the response times their sites' delays follow."""
    import surt  # noqa: F401


def _surt(url: str) -> str:
    import surt

    key: str = surt.surt(url)
    return key


def cdxj_line(
    *,
    url: str,
    date: str,
    revisit: bool,
    content_type: str | None,
    status: int | None,
    digest: str | None,
    offset: int,
    length: int,
    filename: str,
) -> str:
    """One index line (with its newline) for a record written at ``offset``, ``length``
    bytes long; ``date`` is its WARC-Date."""
    fields: dict[str, str] = {"url": url}
    mime = "warc/revisit" if revisit else _media_type(content_type)
    if mime:
        fields["mime"] = mime
    if status is not None:
        fields["status"] = str(status)
    if digest:
        fields["digest"] = digest
    fields["length"] = str(length)
    fields["offset"] = str(offset)
    fields["filename"] = filename
    return f"{_surt(url)} {_timestamp(date)} {json.dumps(fields)}\n"


def _media_type(content_type: str | None) -> str | None:
    if not content_type:
        return None
    return content_type.replace(";", " ").split(None, 1)[0].strip() or None


def _timestamp(warc_date: str) -> str:
    """``2026-11-28T04:01:02.123456Z`` -> ``20261128040102``."""
    return "".join(ch for ch in warc_date[:19] if ch.isdigit())


def sort_key(line: str) -> tuple[str, str]:
    """Lines in pywb's order: by key, then timestamp (a binary search needs it)."""
    key, ts, _ = line.split(" ", 2)
    return key, ts


def index_warc(path: Path, filename: str | None = None) -> list[str]:
    """Every response and revisit record of a WARC file (``.warc.gz``), as index lines,
    read from the file itself: a crashed file's index rebuilt, or an old crawl's made."""
    name = filename or path.name.removesuffix(".open")
    with path.open("rb") as fh:
        records = list(_records(fh))
    size = path.stat().st_size
    lines: list[str] = []
    for i, (offset, line) in enumerate(records):
        end = records[i + 1][0] if i + 1 < len(records) else size
        if line is not None:
            lines.append(line(offset=offset, length=end - offset, filename=name))
    return lines


def _records(fh: io.BufferedReader) -> Iterator[tuple[int, functools.partial[str] | None]]:
    """(offset, its index line but for its place, or None: not indexed) for each record."""
    for rec in ArchiveIterator(fh, parse_http=True):
        line = None
        if rec.record_type & _INDEXED:
            http = rec.http_headers
            line = functools.partial(
                cdxj_line,
                url=rec.headers.get("WARC-Target-URI") or "",
                date=rec.headers.get("WARC-Date") or "",
                revisit=rec.record_type == WarcRecordType.revisit,
                content_type=http.get("Content-Type") if http is not None else None,
                status=http.status_code if http is not None else None,
                digest=rec.headers.get("WARC-Payload-Digest"),
            )
        yield rec.stream_pos, line


def read_index(path: Path, filename: str) -> list[str] | None:
    """An index file's lines, each with its newline (a last line cut just before its newline
    is whole), or None when a line is not one ``cdxj_line`` writes for ``filename``: a
    damaged index, to rebuild from the WARC file (``index_warc``), never to pack as it is."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if not all(_is_line(line, filename) for line in lines):
        return None
    return [line + "\n" for line in lines]


def _is_line(line: str, filename: str) -> bool:
    parts = line.split(" ", 2)
    if len(parts) != 3 or not parts[0] or not parts[1].isdigit():
        return False
    try:
        fields = json.loads(parts[2])
    except ValueError:
        return False
    return (
        isinstance(fields, dict)
        and fields.get("filename") == filename
        and str(fields.get("offset")).isdigit()
        and str(fields.get("length")).isdigit()
    )


def write_index(path: Path, lines: list[str]) -> None:
    """A whole index file, replaced at once (never half-written)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(lines), encoding="utf-8")
    tmp.replace(path)
