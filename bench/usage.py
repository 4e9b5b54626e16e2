"""What deciding a page's use costs (``polite.usage``): per URL before the fetch
(``UsageBook.site_refusal``: robots.txt rules and tdmrep.json) and per fetched page
(``UsageBook.for_page``: those plus the headers and meta elements), against reading the page.

Run as ``python bench/usage.py``. The robots.txt is Cloudflare's managed file (a Content-Signal
line) plus 50 Content-Usage path rules; the tdmrep.json has 20 rules; the page carries a
Content-Usage header, a tdm-reservation header and a meta robots element. It prints the
median microseconds per call over 5 rounds of 20,000 URLs.
"""

from __future__ import annotations

import json
import statistics
import time

from multidict import CIMultiDict, CIMultiDictProxy

from politecrawl.polite.usage import Purpose, UsageBook
from politecrawl.robots.rules import RobotsRules

ORIGIN = "https://example.com"
ROBOTS = "User-agent: *\nContent-Signal: search=yes, ai-train=no\nAllow: /\n" + "".join(
    f"Content-Usage: /section{i}/ train-ai={'y' if i % 2 else 'n'}, search=y\n" for i in range(50)
)
TDMREP = json.dumps([{"location": f"/docs{i}/", "tdm-reservation": i % 2} for i in range(20)])
HEADERS = CIMultiDictProxy(CIMultiDict({"Content-Usage": "train-ai=n", "tdm-reservation": "1",
                                        "Content-Type": "text/html"}))  # fmt: skip
METAS = [("robots", "index, follow, noai")]
N, ROUNDS = 20_000, 5


def per_call_us(fn: object, urls: list[str]) -> float:
    """Median over rounds of the microseconds one call takes."""
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for url in urls:
            fn(url)  # type: ignore[operator]
        times.append((time.perf_counter() - start) / len(urls) * 1e6)
    return statistics.median(times)


def main() -> None:
    rules = RobotsRules.parse(ROBOTS.encode())
    book = UsageBook(Purpose.AI_TRAIN, "benchbot")
    book.record_tdmrep(ORIGIN, 200, TDMREP.encode())
    urls = [f"{ORIGIN}/section{i % 60}/page{i}.html" for i in range(N)]
    before = per_call_us(lambda u: book.site_refusal(ORIGIN, u, rules), urls)
    page = per_call_us(lambda u: book.for_page(ORIGIN, u, rules, HEADERS, METAS), urls)
    print("robots.txt: 1 Content-Signal + 50 Content-Usage rules; tdmrep.json: 20 rules")
    print(f"site_refusal (before each fetch): {before:.1f} us per URL")
    print(f"for_page (each fetched page):     {page:.1f} us per page")


if __name__ == "__main__":
    main()
