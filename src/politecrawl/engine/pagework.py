"""The work one stored page costs the CPU, as one job a worker process can do (``workpool``).

Reading the page (decode, parse, links: ``page.read_page``), its SimHash (``fingerprint``)
and its WARC request and response records, built and compressed (``storage.warc``): about
three quarters of a crawl's CPU on all-HTML pages, and all of it pure: bytes in, values out.
The crawler process then decides (duplicate? noindex? noarchive?) and stores: it appends the
packed records only if the page is archived as a response, and drops them otherwise.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from politecrawl.content.page import Page, read_fetched
from politecrawl.continuity.fingerprint import simhash
from politecrawl.net.fetch import FetchResult
from politecrawl.storage.warc import PackedExchange, pack_exchange


@dataclass(slots=True)
class PageWork:
    page: Page
    simhash: int
    exchange: PackedExchange
    cpu_s: float = 0.0  # the CPU this job took where it ran
    pid: int = 0  # where it ran: another process's CPU is not in the crawler's own rusage

    def __reduce__(self) -> tuple[type[PageWork], tuple[Page, int, PackedExchange, float, int]]:
        return PageWork, (self.page, self.simhash, self.exchange, self.cpu_s, self.pid)


def do_page_work(
    res: FetchResult, url: str, product_token: str, depth: int, *, score: bool
) -> PageWork:
    """Everything costly about a stored page but the decisions. The page's decoded HTML and
    tree are not sent back (``Page.__getstate__``): the crawler needs neither."""
    started = time.process_time()
    page = read_fetched(res, url, product_token, depth, score=score)
    page.text = ""
    sim, exchange = simhash(page.visible_text), pack_exchange(res)
    return PageWork(page, sim, exchange, time.process_time() - started, os.getpid())
