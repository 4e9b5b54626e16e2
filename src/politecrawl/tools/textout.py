"""What the operator tools print of data they do not control, made safe to print.

A server writes its robots.txt, its Location headers and, through the crawler's logs, much of
what ``log``, ``log-stats`` and ``report`` show. A robots.txt holding ``\\033[2J`` (clear the
screen), ``\\033]0;...\\007`` (retitle the terminal) or a lone ``\\r`` (so a comment prints over
with ``Allow: /``) must reach the operator as visible escapes, never as terminal commands. And
a log the tools could only partly read is said on stderr, one line per damaged file.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable

__all__ = ["printable", "printable_lines", "warn"]

# C0 and C1 controls, DEL, and the characters that reorder or break a line as shown
# (bidirectional overrides and isolates, the Unicode line and paragraph separators)
_LAYOUT = "\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{_LAYOUT}]")
_UNSAFE_BUT_TAB = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_LAYOUT}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    code = ord(c)
    return _NAMED.get(c) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: str) -> str:
    """One field (a URL, a header, an error) on one line: every control character shown as
    its escape, ``\\n`` and ``\\t`` too, so no field can forge a line of the output."""
    return _UNSAFE.sub(_escape, text)


def printable_lines(text: str) -> list[str]:
    """A body's lines (``\\n``, or ``\\r\\n``, ends one); tabs kept, any other control
    character shown as its escape (a lone ``\\r`` included)."""
    return [_UNSAFE_BUT_TAB.sub(_escape, line.removesuffix("\r")) for line in text.split("\n")]


def warn(lines: Iterable[str]) -> None:
    """Each line on stderr, as a warning: a damaged file (``LogDamage.lines``), a source
    missing."""
    for line in lines:
        print(f"politecrawl: warning: {printable(line)}", file=sys.stderr)
