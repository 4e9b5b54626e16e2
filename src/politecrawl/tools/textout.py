"""What the operator tools say about what they could not read: one line per problem on stderr."""

from __future__ import annotations

import sys
from collections.abc import Iterable

__all__ = ["warn"]


def warn(lines: Iterable[str]) -> None:
    """Each line on stderr, as a warning: a damaged file (``LogDamage.lines``), a source
    missing."""
    for line in lines:
        print(f"politecrawl: warning: {line}", file=sys.stderr)
