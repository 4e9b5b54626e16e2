"""``storage.itemvalues``: the one conversion of an item's values the three items files share."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import logging
from pathlib import Path

import pytest

from politecrawl.errors import HandlerError
from politecrawl.storage.itemvalues import ItemValues

pytestmark = pytest.mark.unit


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Book:
    title: str
    tags: frozenset[str]


def test_values_become_json_values() -> None:
    got = ItemValues(Path("items.jsonl")).plain(
        {
            "when": datetime.datetime(2024, 1, 2, 3, 4, 5),
            "at": datetime.time(3, 4),
            "tags": {"b", "a"},
            "mixed": {1},
            "pair": (1, [2, (3,)]),
            "price": decimal.Decimal("1.10"),
            "colour": Colour.RED,
            "book": Book("t", frozenset({"y", "x"})),
            1: "an int key",
            None: "a null key",
            (1, 2): "a key JSON has no text for",
        }
    )
    assert got == {
        "when": "2024-01-02T03:04:05",
        "at": "03:04:00",
        "tags": ["a", "b"],
        "mixed": [1],
        "pair": [1, [2, [3]]],
        "price": "1.10",
        "colour": "red",
        "book": {"title": "t", "tags": ["x", "y"]},
        "1": "an int key",
        "null": "a null key",
    }


def test_a_value_shared_is_no_cycle_and_a_cycle_is_no_files() -> None:
    values = ItemValues(Path("items.csv"))
    shared = [1]
    assert values.plain({"a": shared, "b": shared}) == {"a": [1], "b": [1]}
    loop: dict[str, object] = {}
    loop["self"] = loop
    with pytest.raises(HandlerError, match="contains itself"):
        values.plain({"x": [loop]})
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(HandlerError, match="nested too deep"):
        values.plain({"x": deep})


def test_a_lone_surrogate_is_mended_and_said_once_per_file(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bad = b"caf\xe9".decode("utf-8", "surrogateescape")
    values = ItemValues(Path("items.json"))
    with caplog.at_level(logging.WARNING, logger="politecrawl"):
        for _ in range(3):
            assert values.plain({bad: [bad]}) == {"caf\ufffd": ["caf\ufffd"]}
        ItemValues(Path("other.json")).plain({"k": bad})
    said = [r.getMessage() for r in caplog.records if "lone surrogate" in r.getMessage()]
    assert len(said) == 2 and said[0].startswith("items.json: ") and "other.json" in said[1]
