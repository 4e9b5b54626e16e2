"""An item's values as every items file writes them: the one conversion ``items.jsonl``,
``--items FILE.json`` and ``--items FILE.csv`` share, so a value reads the same in each.

A page handler yields whatever Python holds; a file holds JSON's values (text, numbers, true
and false, null, lists and objects). ``ItemValues.plain`` makes an item of them:

- text as UTF-8 can hold it: a lone surrogate (``surrogateescape``'s stand-in for an
  undecodable byte) made U+FFFD (``logs.mend``), said once per file;
- a NaN or an infinity as null (JSON has no such number, RFC 8259 6: ``NaN`` is no JSON),
  said once per file;
- a date, time or datetime as ISO 8601 (``2024-01-02T03:04:05``);
- a tuple as a list, a set as a list (sorted when its members sort), a mapping as an object
  (keys that are numbers, true, false or null as their JSON text, other keys left out, as
  ``json`` does), a dataclass as the object of its fields, an enum as its value;
- any other value as its text (a ``Decimal`` ``1.10``, bytes ``b'\\x00'``).

An item that contains itself, or is nested past the stack, is no file's: ``HandlerError``
(the sink leaves that item out). The CSV writer then writes a list or object cell as JSON.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import logging
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from politecrawl.errors import HandlerError
from politecrawl.storage.logs import mend

__all__ = ["ItemValues"]

log = logging.getLogger("politecrawl")

SURROGATE = "a value held a lone surrogate (an undecodable byte?): written with U+FFFD in its place"

NOT_FINITE = "a number was NaN or infinite, which JSON cannot hold: written as null"


class ItemValues:
    """The conversion for one items file: each kind of mending is said once per file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._said: set[str] = set()

    def plain(self, item: Mapping[Any, Any]) -> dict[str, Any]:
        """``item`` as JSON values; HandlerError if no file can hold it (nothing said)."""
        notes: set[str] = set()
        try:
            out = _object(item, notes, set())
        except RecursionError:  # nested past the stack
            raise HandlerError("not writable: nested too deep") from None
        for note in sorted(notes - self._said):
            self._said.add(note)
            log.warning("%s: %s", self.path, note)
        return out


def _plain(value: Any, notes: set[str], path: set[int]) -> Any:
    if isinstance(value, str):
        return _text(value, notes)
    if isinstance(value, float) and not math.isfinite(value):
        notes.add(NOT_FINITE)
        return None
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, enum.Enum):
        return _plain(value.value, notes, path)
    if isinstance(value, datetime.date | datetime.time):  # (a datetime is a date)
        return value.isoformat()
    if isinstance(value, Mapping):
        return _object(value, notes, path)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return _inside(value, path, lambda: _object(fields, notes, path))
    if isinstance(value, list | tuple):
        return _inside(value, path, lambda: [_plain(v, notes, path) for v in value])
    if isinstance(value, set | frozenset):
        try:
            members = sorted(value)
        except TypeError:  # members that do not sort: their own order
            members = list(value)
        return [_plain(v, notes, path) for v in members]
    try:
        return _text(str(value), notes)
    except Exception as exc:  # a value whose str() fails: the handler's fault, said as such
        raise HandlerError(f"not writable as text: {exc!r}") from None


def _object(value: Mapping[Any, Any], notes: set[str], path: set[int]) -> dict[str, Any]:
    def convert() -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, v in value.items():
            name = _key(key, notes)
            if name is not None:
                out[name] = _plain(v, notes, path)
        return out

    converted: dict[str, Any] = _inside(value, path, convert)
    return converted


def _inside(container: object, path: set[int], convert: Callable[[], Any]) -> Any:
    """``convert()`` with ``container`` on the path from the item down: met again below
    itself, it contains itself."""
    if id(container) in path:
        raise HandlerError("not writable: a value contains itself")
    path.add(id(container))
    try:
        return convert()
    finally:
        path.discard(id(container))


def _key(key: Any, notes: set[str]) -> str | None:
    """An object's key as JSON writes it (``json.dumps(skipkeys=True)``), or None: left out."""
    if isinstance(key, str):
        return _text(key, notes)
    if key is None or isinstance(key, bool):
        return {None: "null", True: "true", False: "false"}[key]
    if isinstance(key, int | float):
        return repr(key) if isinstance(key, float) else str(key)
    return None


def _text(text: str, notes: set[str]) -> str:
    mended = mend(text)
    if mended is not text:
        notes.add(SURROGATE)
    return mended
