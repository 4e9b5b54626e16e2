"""An item's values read the same in every items file (``items.jsonl``, ``--items FILE.json``,
``--items FILE.csv``): one conversion (``storage.itemvalues``) for the three writers, each
mending said once per file. Checked through the real ``politecrawl crawl`` (a subprocess)
against a small site on 127.0.0.1 (``outputweb``), judged by the files it writes."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from outputweb import output_site
from test_outputs import FAST, STORED, UA, handler, paths, politecrawl, summary

pytestmark = pytest.mark.e2e

FORMATS = ["jsonl", "json", "csv"]


def _strict(text: str) -> Any:
    """JSON as RFC 8259 has it: ``NaN`` and ``Infinity`` are no JSON."""

    def refuse(word: str) -> Any:
        raise ValueError(f"not JSON: {word}")

    return json.loads(text, parse_constant=refuse)


def _items(tmp: Path, fmt: str, code: str) -> tuple[list[dict[str, Any]], str]:
    """Crawl the output site with the handler ``code``, items to ``items.FMT``: the items as
    the file holds them (a CSV cell that is JSON read as JSON) and the crawl's stderr."""
    spec = handler(tmp, code)
    items_file = tmp / f"items.{fmt}"
    with output_site() as site:
        done = politecrawl("crawl", site.url("/"), "--user-agent", UA, "--out", str(tmp / "out"),
                           "--resolve", site.resolve, *FAST,
                           "--handler", spec, "--items", str(items_file))  # fmt: skip
    assert done.returncode == 0, done.stderr  # (the handler's own tracebacks are on stderr)
    (tmp / "stdout").write_text(done.stdout)
    text = items_file.read_text(encoding="utf-8")
    if fmt == "json":
        items = _strict(text)
    elif fmt == "jsonl":
        items = [_strict(line) for line in text.splitlines()]
    else:
        items = []
        for row in csv.DictReader(text.splitlines()):
            for k, v in row.items():
                if v.startswith(("[", "{")):
                    row[k] = json.loads(v)
            items.append(row)
    assert paths(i["url"] for i in items) == STORED, items
    return items, done.stderr


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_date_a_set_and_a_lone_surrogate_read_alike_in_every_format(
    tmp_path: Path, fmt: str
) -> None:
    """Before: a datetime was ``2024-01-02T03:04:05`` in .jsonl but ``2024-01-02 03:04:05``
    in .json and .csv; a set ``"{1, 2}"`` (quotes included in the CSV cell); a lone
    surrogate made U+FFFD in .json and .csv without the warning .jsonl gave."""
    items, stderr = _items(tmp_path, fmt, (
        "import datetime\n"
        "def h(page):\n"
        "    yield {'when': datetime.datetime(2024, 1, 2, 3, 4, 5),\n"
        "           'day': datetime.date(2024, 1, 2),\n"
        "           'tags': {2, 1},\n"
        "           'name': b'caf\\xe9'.decode('utf-8', 'surrogateescape')}\n"
    ))  # fmt: skip
    for item in items:
        assert item["when"] == "2024-01-02T03:04:05"
        assert item["day"] == "2024-01-02"
        assert item["tags"] == [1, 2]
        assert item["name"] == "caf\ufffd"
    assert stderr.count("lone surrogate") == 1, stderr  # said once per file, 5 items mended
    assert f"items.{fmt}: a value held a lone surrogate" in stderr


@pytest.mark.parametrize("fmt", FORMATS)
def test_nan_and_infinity_are_null_in_every_format_said_once(tmp_path: Path, fmt: str) -> None:
    """Before: ``--items FILE.json`` wrote ``NaN`` and ``Infinity`` (no JSON: RFC 8259 6), the
    .jsonl writer null, the CSV writer ``nan``, none of them a word of it."""
    items, stderr = _items(tmp_path, fmt, (
        "import math\n"
        "def h(page):\n"
        "    yield {'nan': float('nan'), 'inf': math.inf, 'deep': [-math.inf, 1.5], 'n': 2.5}\n"
    ))  # fmt: skip
    empty = "" if fmt == "csv" else None  # CSV has no null: an empty cell
    for item in items:
        assert item["nan"] == empty and item["inf"] == empty
        assert item["deep"] == [None, 1.5]
        assert str(item["n"]) == "2.5"
    assert stderr.count("NaN or infinite") == 1, stderr
    assert f"items.{fmt}: a number was NaN or infinite" in stderr


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_page_whose_handler_fails_twice_is_one_page_failed(tmp_path: Path, fmt: str) -> None:
    """Before: a page whose handler yielded an item no file can hold (a dict that contains
    itself) and then raised counted 2 in ``handler_errors``, and the summary said "your code
    failed --handler on 10 pages" of a crawl that stored 5."""
    items, stderr = _items(tmp_path, fmt, (
        "def h(page):\n"
        "    yield {'n': 1}\n"
        "    loop = {}\n"
        "    loop['self'] = loop\n"
        "    yield {'n': loop}\n"
        "    raise RuntimeError('and then it broke')\n"
    ))  # fmt: skip
    assert [str(i["n"]) for i in items] == ["1"] * len(STORED)
    counters = summary(tmp_path / "out")["counters"]
    assert counters["items"] == len(STORED)
    assert counters["handler_errors"] == len(STORED)  # pages, one count each
    assert stderr.count("left out") == len(STORED) and stderr.count("and then it broke") >= 5
    printed = (tmp_path / "stdout").read_text()
    assert f"--handler on {len(STORED)} pages" in printed, printed
