"""Which frontier a crawl uses: the embedded SQLite one, or a shared Redis/Valkey one.

``Crawler`` calls ``make_frontier(config)``: with ``config.frontier_url`` set, every worker
given the same URL and crawl id shares one crawl (``frontier.redis``); otherwise the crawl
state lives in ``OUT/state.sqlite``.
"""

from __future__ import annotations

from politecrawl.config import CrawlConfig
from politecrawl.frontier import Frontier
from politecrawl.frontier.sqlite import SqliteFrontier


def crawl_id_of(config: CrawlConfig) -> str:
    """The shared crawl's name: ``config.crawl_id`` if the config has one, else the out dir's
    name (so workers of one crawl need the same ``--crawl-id``, or same-named out dirs)."""
    return config.crawl_id or config.out_dir.resolve().name or "default"


def lease_ttl_for(config: CrawlConfig) -> float:
    """Long enough for one turn (one request) even without the heartbeat's renewals."""
    return max(60.0, 2 * config.fetch.total_timeout_s)


def make_frontier(config: CrawlConfig) -> Frontier:
    """The frontier ``config`` asks for (see the module docstring)."""
    if config.frontier_url:
        # (--state, the robots/site statistics shared between crawls, is what a shared
        # frontier already is: every worker of the crawl reads and writes the same ones)
        from politecrawl.frontier.redis import RedisFrontier  # redis only when used

        return RedisFrontier(
            config.frontier_url.replace("valkey://", "redis://", 1),
            crawl_id_of(config),
            lease_ttl_s=lease_ttl_for(config),
            seen_mode=config.resolved_seen_mode,
            expected_urls=config.expected_urls,
            seen_fp_rate=config.seen_fp_rate,
            reclaim_delay_s=config.politeness.min_delay_s,
            max_wait_s=config.max_wait_s,
        )
    return SqliteFrontier(
        config.out_dir / "state.sqlite",
        seen_mode=config.resolved_seen_mode,
        expected_urls=config.expected_urls,
        seen_fp_rate=config.seen_fp_rate,
        state_path=config.state_file,
        max_wait_s=config.max_wait_s,
        defer_ratio=config.resolved_defer_ratio,
    )
