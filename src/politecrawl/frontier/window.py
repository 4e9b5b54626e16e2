"""A key's window: the few queued URLs of a site held in memory, best first.

The queue itself is in SQLite (``frontier.sqlite``). A window is read ``WINDOW`` URLs at a time
when its site is leased; between the site's turns it keeps at most ``KEEP_BETWEEN_TURNS``. A
window that was kept whole (all of a site's URLs, appended to as links came in) held every
queued URL of the crawl in memory, about 250 bytes each (``bench/soak.py --tracemalloc``).
"""

from __future__ import annotations

import heapq

from politecrawl.frontier import UrlEntry

WINDOW = 32
KEEP_BETWEEN_TURNS = 4  # URLs a site's window keeps while the site is not leased

Window = list[tuple[float, int, UrlEntry]]  # a heap of (-priority, seq, entry)


def offer(win: Window, pending: int, item: tuple[float, int, UrlEntry]) -> None:
    """A URL newly queued for a site that has a window (``pending`` URLs queued before it).

    A window always holds its site's best URLs (the top of the queue, ties first come first
    served): a complete window (all the site's URLs) takes every URL, an incomplete one only
    a URL that beats its worst, and an empty one none (the next pop reads the queue again).
    Past twice ``WINDOW`` it keeps its best ``WINDOW``; the rest stay in SQLite."""
    if len(win) == pending or (win and item < max(win)):
        heapq.heappush(win, item)
        if len(win) > 2 * WINDOW:
            win[:] = heapq.nsmallest(WINDOW, win)


def between_turns(win: Window) -> None:
    """A released site keeps only its next few URLs in memory."""
    if len(win) > KEEP_BETWEEN_TURNS:
        win[:] = heapq.nsmallest(KEEP_BETWEEN_TURNS, win)
