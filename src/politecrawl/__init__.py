"""politecrawl: a polite, adaptive web crawler.

>>> from politecrawl import Crawler, CrawlConfig, FetchConfig
"""

__version__ = "0.1.0"

from politecrawl.config import CrawlConfig, FetchConfig, PolitenessConfig  # noqa: E402
from politecrawl.crawler import Crawler, Summary  # noqa: E402
from politecrawl.errors import ConfigError, PolitecrawlError  # noqa: E402

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
