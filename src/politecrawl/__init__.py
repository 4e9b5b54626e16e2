"""politecrawl: a polite, adaptive web crawler.

>>> from politecrawl import Crawler, CrawlConfig, FetchConfig
"""

__version__ = "0.1.0"

from politecrawl.config import CrawlConfig, FetchConfig, PolitenessConfig
from politecrawl.crawler import Crawler, Summary
from politecrawl.errors import ConfigError, PolitecrawlError

__all__ = [
    "ConfigError",
    "CrawlConfig",
    "Crawler",
    "FetchConfig",
    "PolitecrawlError",
    "PolitenessConfig",
    "Summary",
    "__version__",
]
