"""A nesting guard in front of the HTML parser.

Lexbor (like every HTML5 tree builder) checks element scope on each start tag, so a page of
100,000 nested ``<div>`` costs it quadratic time: about 79 s measured here, hours for 2 MiB.
The guard scans only pages with many tags (5,000+), skipping comments and raw-text elements,
counting elements that really nest (void and self-closing-by-nature tags do not), and returns
where to cut so that nothing nests deeper than 256. Measured: attack variants are cut within
2 KB; real pages (SVG sprites, 50k unclosed ``<li>``, tables) are never cut; the scan costs
20-350 ms on 2 MiB pages and nothing below 5,000 tags.
"""

from __future__ import annotations

import itertools
import re

MAX_DEPTH = 256
SCAN_ABOVE_TAGS = 5000  # below: worst case ~5000^2/2 scope-check steps, ~0.15 s in lexbor
_HIDDEN = re.compile(
    rb"<!--.*?(?:-->|\Z)|<(script|style|textarea|title|xmp|iframe|noembed|noframes)"
    rb"\b.*?(?:</\1\s*>|\Z)",
    re.S,
)
# Possessive, and no "<" inside a tag: with backtracking, "<a" repeated (no ">") cost cubic
# time (16.7 s for 2 KB; found by bench/fuzz.py). A "<" in a quoted attribute value now ends
# the match early; for counting nesting that only miscounts such rare tags.
_TAGS = re.compile(rb"<(/?[a-z][^\s/<>]*+)([^<>]*+)>")
_VOID = frozenset(
    b"area base basefont bgsound br col embed frame hr img input keygen link meta "
    b"param source track wbr".split()
)
_NO_NEST = frozenset(
    b"p li dd dt option optgroup tr td th thead tbody tfoot caption colgroup "
    b"rb rt rp rtc a nobr form button html head body h1 h2 h3 h4 h5 h6".split()
)
_FOREIGN = frozenset((b"svg", b"math"))
_INTEGRATION = frozenset(b"foreignobject desc title annotation-xml mi mo mn ms mtext".split())
_BREAKOUT = frozenset(
    b"b big blockquote body br center code dd div dl dt em embed h1 h2 h3 h4 h5 "
    b"h6 head hr i img li listing menu meta nobr ol p pre ruby s small span "
    b"strong strike sub sup table tt u ul var".split()
)


def _too_deep(tags: list[tuple[bytes, bytes]], max_depth: int) -> int:
    """Index in ``tags`` of the tag opening element ``max_depth + 1``, or -1."""
    counts: dict[bytes, int] = {}
    depth = foreign = 0
    for i, (tag, rest) in enumerate(tags):
        name = tag
        if name[0] == 47:  # "/": an end tag closes the innermost open one of its name
            name = name[1:]
            n = counts.get(name)
            if n:
                counts[name] = n - 1
                depth -= 1
                if foreign and name in _FOREIGN:
                    foreign -= 1
            continue
        if name in _VOID or name in _NO_NEST:
            continue
        if foreign:
            if name in _BREAKOUT:
                foreign = 0
            elif rest.endswith(b"/") and name not in _INTEGRATION:
                continue
        counts[name] = counts.get(name, 0) + 1
        depth += 1
        if depth > max_depth:
            return i
        if name in _FOREIGN:
            foreign += 1
        elif foreign and name in _INTEGRATION:
            foreign = 0
    return -1


def depth_cut(body: bytes, max_depth: int = MAX_DEPTH) -> int | None:
    """Byte offset to cut ``body`` at so no element nests deeper than ``max_depth``; None: keep."""
    if body.count(b"<") <= SCAN_ABOVE_TAGS:
        return None
    low = body.lower()
    i = _too_deep(_TAGS.findall(_HIDDEN.sub(b"", low)), max_depth)
    if i < 0:
        return None
    # rare path: find the same i-th tag in the original (hidden parts blanked, same length)
    blanked = _HIDDEN.sub(lambda m: b" " * (m.end() - m.start()), low)
    m = next(itertools.islice(_TAGS.finditer(blanked), i, None))
    return m.start()
