"""``storage.uncommitted.drop_rows_of``: the rows of pages a resume fetches again, dropped
from where the last commits saved the file's size, nothing before it touched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from politecrawl.storage.uncommitted import drop_rows_of

pytestmark = pytest.mark.unit


def _rows(path: Path) -> list[dict[str, str]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_rows_of_refetched_pages_after_the_start_are_dropped(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    before = '{"url":"http://a/1"}\n{"url":"http://a/2"}\n'
    after = (
        '{"url":"http://a/1"}\n'  # a page fetched again: its rows after the mark go
        '{"url":"http://a/3","n":1}\n'
        '{"url":"theirs","page_url":"http://a/2"}\n'  # a handler's own url: the page's counts
        '{"url":"http://a/4"}\n'
    )
    path.write_text(before + after)
    assert drop_rows_of(path, len(before), {"http://a/1", "http://a/2"}) == 2
    assert [r["url"] for r in _rows(path)] == ["http://a/1", "http://a/2", "http://a/3",
                                               "http://a/4"]  # fmt: skip


def test_nothing_changes_without_rows_to_drop(tmp_path: Path) -> None:
    path = tmp_path / "pages.jsonl"
    text = '{"url":"http://a/1"}\n{"url":"http://a/2"}\n{"url":"http://a/3"'  # a torn last line
    path.write_text(text)
    assert drop_rows_of(path, 0, {"http://b/"}) == 0
    assert drop_rows_of(path, 10_000, {"http://a/1"}) == 0  # the mark past the end (rotated)
    assert drop_rows_of(tmp_path / "missing.jsonl", 0, {"http://a/1"}) == 0
    assert path.read_text() == text
    assert drop_rows_of(path, 0, {"http://a/2"}) == 1  # the torn line is kept, for its log
    assert path.read_text() == '{"url":"http://a/1"}\n{"url":"http://a/3"'
