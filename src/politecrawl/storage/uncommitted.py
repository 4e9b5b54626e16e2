"""Rows the last run wrote for pages it did not live to commit, dropped before a resume.

A kept page's rows (``pages.jsonl``, the items, ``content.jsonl``) go to the OS as the page
is kept; the frontier commits that the page is done about once a second. A run killed between
the two (``kill -9``, a power cut) left rows for pages its resume fetches again (their URLs
were in flight: re-fetches), so each such page was in those files twice. Each commit of the
state now saves the files' sizes (``SqliteStore.sizes_from``); a resume drops the rows of the
pages it will fetch again from the size saved two commits back. Two, not one: a page's rows
and its finish may fall on either side of a commit.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from pathlib import Path

__all__ = ["drop_rows_of"]


def drop_rows_of(path: Path, start: int, urls: Collection[str]) -> int:
    """Remove the rows at or after byte ``start`` of the JSON-lines file ``path`` whose page
    (``page_url``, else ``url``) is one of ``urls``; the number removed.

    The rows kept are written over the old ones from ``start`` on, then the file is cut: a
    crash midway leaves some rows twice, never one lost."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return 0
    if not urls or start >= size:
        return 0
    with path.open("rb+") as fh:
        fh.seek(start)
        kept: list[bytes] = []
        dropped = 0
        for line in fh.read().splitlines(keepends=True):
            if _page_of(line) in urls:
                dropped += 1
            else:
                kept.append(line)
        if dropped:
            body = b"".join(kept)
            fh.seek(start)
            fh.write(body)
            fh.flush()
            os.fsync(fh.fileno())
            fh.truncate(start + len(body))
    return dropped


def _page_of(line: bytes) -> str | None:
    try:
        row = json.loads(line)
    except ValueError:  # a torn last line (its log mends it when it opens)
        return None
    if not isinstance(row, dict):
        return None
    url = row.get("page_url") or row.get("url")
    return url if isinstance(url, str) else None
