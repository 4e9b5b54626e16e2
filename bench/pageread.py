"""What reading a page costs (``page.read_page``: decode once, parse once, links, text), by size,
against what moving it to a thread costs; the figures behind ``page.INLINE_MAX_BYTES``.

Run as ``python bench/pageread.py``. Pages are built from a fixed seed like real ones: a
head with scripts and styles, a nav of 20 links, paragraphs with a link each, lists of
off-site links. For each size it prints the median ms of ``read_page`` (links, visible text)
and with ``score=True`` and ``keep_tree=True`` (the nugget's Document, a clone for a handler),
the same page labelled ISO-8859-1 (the label checked), then the CPU cost of one
``asyncio.to_thread`` call. The old path (raw bytes to the parser, then a second decode and
parse for relevance) is timed too, as ``parse_page(bytes) + extract_document``.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Callable

from selectolax.lexbor import LexborHTMLParser

from politecrawl.content.htmlguard import depth_cut
from politecrawl.content.page import read_page
from politecrawl.focus.relevance import extract_document

WORDS = [
    "train",
    "steam",
    "line",
    "station",
    "café",
    "über",
    "naïve",
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "railway",
]


def make_page(paragraphs: int, rng: random.Random) -> bytes:
    parts = [
        "<!DOCTYPE html><html><head><meta charset=utf-8><title>A page about trains</title>",
        "<script>var x = 1;</script><style>p { color: red }</style></head><body><nav>",
        *(f'<a href="/nav/{i}">nav {i}</a>' for i in range(20)),
        "</nav><main>",
    ]
    for i in range(paragraphs):
        words = " ".join(rng.choice(WORDS) for _ in range(60))
        parts.append(f'<h2>Part {i}</h2><p>{words} <a href="/p/{i}.html?x={i}">more {i}</a></p>')
        if i % 4 == 0:
            parts.append(f'<li><a href="http://other{i}.test/x">elsewhere {i}</a></li>')
    parts.append("</main><footer>foot</footer></body></html>")
    return "".join(parts).encode()


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


async def thread_cost_us(n: int = 2000) -> float:
    def nothing() -> None:
        return None

    await asyncio.to_thread(nothing)
    c0 = time.process_time()
    for _ in range(n):
        await asyncio.to_thread(nothing)
    return (time.process_time() - c0) / n * 1e6


def main() -> None:
    from politecrawl.content.parse import parse_tree, visible_text

    rng = random.Random(7)
    url = "http://h.test/a/b.html"

    def old(body: bytes, scored: bool) -> None:
        cut = depth_cut(body)  # what the crawler did: bytes straight to the parser
        tree = LexborHTMLParser(body if cut is None else body[:cut])
        parse_tree(tree, url, "bot")
        visible_text(tree)
        if scored:  # and a second decode and parse for relevance
            extract_document(body, url, "text/html")

    print("KiB     lexbor  read  +score  +score+clone  latin1-label  | old  old+score")
    for paragraphs in (3, 30, 120, 200, 400, 1600):
        body = make_page(paragraphs, rng)
        latin = body.replace(b"charset=utf-8", b"charset=iso-8859-1")
        text = body.decode()
        n = max(15, 3000 // paragraphs)
        cols = [
            median_ms(lambda: LexborHTMLParser(text), n),  # noqa: B023
            median_ms(lambda: read_page(body, url, product_token="bot"), n),  # noqa: B023
            median_ms(lambda: read_page(body, url, product_token="bot", score=True), n),  # noqa: B023
            median_ms(
                lambda: read_page(body, url, product_token="bot", score=True, keep_tree=True),  # noqa: B023
                n,
            ),
            median_ms(lambda: read_page(latin, url, product_token="bot"), n),  # noqa: B023
            median_ms(lambda: old(body, False), n),  # noqa: B023
            median_ms(lambda: old(body, True), n),  # noqa: B023
        ]
        print(f"{len(body) / 1024:5.0f}  " + "  ".join(f"{c:7.3f}" for c in cols))
    print(f"asyncio.to_thread: {asyncio.run(thread_cost_us()):.0f} us of CPU per call")


if __name__ == "__main__":
    main()
