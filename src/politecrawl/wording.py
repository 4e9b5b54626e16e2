"""Counts said in words: "1 URL", "2 URLs" (the printed lines read as written, not "1 sites")."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, made plural (``noun + "s"``, or ``plural``) unless ``n`` is 1."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
