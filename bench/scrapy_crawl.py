"""Scrapy on the same local test web, with equal politeness: the comparison in bench/throughput.py.

    python bench/scrapy_crawl.py PORT HOSTS DELAY CONCURRENCY [system [SECONDS]]

One request per host at a time (CONCURRENT_REQUESTS_PER_DOMAIN=1), the same fixed delay
(RANDOMIZE_DOWNLOAD_DELAY off, since Scrapy would otherwise go as low as 0.5x), robots.txt
obeyed, links followed with the LinkExtractor a Scrapy user would use (a CrawlSpider rule).
``*.test`` resolves to 127.0.0.1 through a resolver subclass; with ``system``, through
Scrapy's own resolver as its users run it (getaddrinfo in the reactor's threads, 10 of them:
bench/dnslatency.py), and SECONDS bounds the crawl (CLOSESPIDER_TIMEOUT).
Prints one JSON line of stats:
responses (robots.txt included), requests, and robots.txt responses. Scrapy sends its start
URLs without the duplicate filter (``dont_filter``), so each seed home page is fetched twice
(the seed, then the link to it): that is Scrapy as its users run it, counted as fetched.
Bench-only: Scrapy is not a dependency of politecrawl.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor
from scrapy.resolver import CachingThreadedResolver
from scrapy.spiders import CrawlSpider, Rule
from twisted.internet import defer


class LoopbackResolver(CachingThreadedResolver):
    def getHostByName(self, name: str, timeout: Any = ()) -> Any:
        if name.endswith(".test"):
            return defer.succeed("127.0.0.1")
        return super().getHostByName(name, timeout)


class WebSpider(CrawlSpider):
    name = "testweb"
    rules = (Rule(LinkExtractor(), follow=True),)

    def __init__(self, seeds: list[str], **kw: Any) -> None:
        self.start_urls = seeds
        super().__init__(**kw)


def main() -> int:
    port, hosts, delay, concurrency = (
        int(sys.argv[1]),
        int(sys.argv[2]),
        float(sys.argv[3]),
        int(sys.argv[4]),
    )
    system = sys.argv[5:6] == ["system"]
    seeds = [f"http://h{i}.test:{port}/" for i in range(hosts)]
    extra: dict[str, Any] = {}
    if system:
        extra = {"REACTOR_THREADPOOL_MAXSIZE": 10, "DNS_RESOLVER": CachingThreadedResolver}
        if len(sys.argv) > 6:
            extra["CLOSESPIDER_TIMEOUT"] = float(sys.argv[6])
    process = CrawlerProcess(
        settings={
            "USER_AGENT": "benchbot/1.0 (+http://bench.example/bot)",
            "ROBOTSTXT_OBEY": True,
            "CONCURRENT_REQUESTS": concurrency,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
            "DOWNLOAD_DELAY": delay,
            "RANDOMIZE_DOWNLOAD_DELAY": False,
            "DNS_RESOLVER": "__main__.LoopbackResolver",
            "LOG_LEVEL": "ERROR",
            "TELNETCONSOLE_ENABLED": False,
            "RETRY_TIMES": 2,
            "REACTOR_THREADPOOL_MAXSIZE": 4,
            **extra,
        }
    )
    crawler = process.create_crawler(WebSpider)
    process.crawl(crawler, seeds=seeds)
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats else {}
    print(
        json.dumps(
            {
                "responses": stats.get("response_received_count", 0),
                "requests": stats.get("downloader/request_count", 0),
                "robots": stats.get("robotstxt/response_count", 0),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
