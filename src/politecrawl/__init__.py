"""politecrawl: a polite, adaptive web crawler.

>>> from politecrawl import Crawler, CrawlConfig, FetchConfig

``Crawler(config, on_page=handler, relevance=nugget, sinks=[...])``: a page handler gets each
stored ``Page`` and yields dict items (``OUT/items.jsonl``); ``page.follow(links)`` narrows the
links followed. ``Sink`` is the protocol of every destination of kept pages and items.
"""

from politecrawl.config import CrawlConfig, FetchConfig, PolitenessConfig
from politecrawl.content.page import Page
from politecrawl.content.parse import Link
from politecrawl.engine.crawler import Crawler, Summary
from politecrawl.errors import ConfigError, PolitecrawlError
from politecrawl.focus.relevance import Document, KeywordScorer, NuggetFunction
from politecrawl.handler import PageHandler
from politecrawl.storage.sinks import ItemRecord, PageRecord, Sink
from politecrawl.version import __version__

__all__ = [
    "ConfigError",
    "CrawlConfig",
    "Crawler",
    "Document",
    "FetchConfig",
    "ItemRecord",
    "KeywordScorer",
    "Link",
    "NuggetFunction",
    "Page",
    "PageHandler",
    "PageRecord",
    "PolitecrawlError",
    "PolitenessConfig",
    "Sink",
    "Summary",
    "__version__",
]
