"""Which frontier a crawl uses: the embedded SQLite one, or a shared Redis/Valkey one.

``Crawler`` calls ``make_frontier(config)``: the queues, which hold their store as
``.store``. With ``config.frontier_url`` set, every worker given the same URL and crawl id
shares one crawl (``frontier.redis``); otherwise the crawl state lives in
``OUT/state.sqlite``.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from politecrawl.config import CrawlConfig
from politecrawl.errors import FrontierError
from politecrawl.frontier import Backend
from politecrawl.frontier.sqlite import SharedIps, SqliteFrontier

DEFAULT_CRAWL_ID = "default"
_SCOPE_KEY = "scope"  # under the crawl's prefix: JSON {"scope", "seeds", "allow"}


def crawl_id_of(config: CrawlConfig) -> str:
    """The shared crawl's name: ``config.crawl_id``, else ``default`` (as for ``seed`` and
    ``status``, so a worker started without ``--crawl-id`` joins what ``seed`` made)."""
    return config.crawl_id or DEFAULT_CRAWL_ID


def _redis_url(url: str) -> str:
    return url.replace("valkey://", "redis://", 1)


async def shared_scope(
    url: str, crawl_id: str, update: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """The scope a shared crawl was seeded with, which travels with it: ``scope``, the seeds'
    origins (what host/domain scope is measured against) and the ``allow`` list. With
    ``update``, seeds are added to those stored and scope/allow replaced where given; the
    result is returned. ``None``: the crawl was never seeded."""
    from redis.exceptions import RedisError

    from politecrawl.frontier.redis import connect, prefix

    key = prefix(crawl_id) + _SCOPE_KEY
    r = await connect(_redis_url(url))
    try:
        raw = await r.get(key)
        meta: dict[str, Any] | None = json.loads(raw) if raw else None
        if update is not None:
            old = meta or {"scope": "domain", "seeds": [], "allow": []}
            meta = {
                "scope": update.get("scope") or old["scope"],
                "seeds": sorted(set(old["seeds"]) | set(update.get("seeds", ()))),
                "allow": list(update.get("allow") or old["allow"]),
            }
            await r.set(key, json.dumps(meta))
        return meta
    except (RedisError, OSError) as exc:
        raise FrontierError(f"cannot reach the frontier at {url}: {exc}") from exc
    finally:
        await r.aclose()


def lease_ttl_for(config: CrawlConfig) -> float:
    """Long enough for one turn (one request) even without the heartbeat's renewals. A
    ``?lease_ttl=S`` on the frontier URL sets it (shorter: a killed worker's sites come back
    sooner; the heartbeat renews a live worker's leases every third of it)."""
    return max(60.0, 2 * config.fetch.total_timeout_s)


def make_frontier(
    config: CrawlConfig, name: str = "state.sqlite", shared_ips: SharedIps | None = None
) -> Backend:
    """The frontier ``config`` asks for (see the module docstring); ``name``: the embedded
    store's file in the output folder (one per process with ``--processes``); ``shared_ips``:
    the IP rule over all processes (``partition.IpTable``)."""
    if config.frontier_url:
        # (--state, the robots/site statistics shared between crawls, is what a shared
        # frontier already is: every worker of the crawl reads and writes the same ones)
        from politecrawl.frontier.redis import DEFAULT_SHARDS, RedisFrontier, split_url
        from politecrawl.urls.canonical import politeness_key

        url, own = split_url(_redis_url(config.frontier_url))
        try:
            shards = int(own.get("shards", DEFAULT_SHARDS))
            lease_ttl = float(own.get("lease_ttl", 0)) or lease_ttl_for(config)
        except ValueError as exc:
            raise FrontierError(
                f"bad --frontier setting in {config.frontier_url!r}: {exc}"
            ) from None
        mode = config.politeness.key_mode
        return RedisFrontier.open(
            url,
            crawl_id_of(config),
            lease_ttl_s=lease_ttl,
            seen_mode=config.resolved_seen_mode,
            expected_urls=config.expected_urls,
            seen_fp_rate=config.seen_fp_rate,
            reclaim_delay_s=config.politeness.min_delay_s,
            max_wait_s=config.max_wait_s,
            shards=shards,
            # unseen/mark_seen find a URL's shard by its politeness key (unknown before
            # resolving with --politeness-key ip: then ``add`` alone decides)
            key_of=None if mode == "ip" else functools.partial(politeness_key, mode=mode),
            peek_cache_s=0.05,
            defer_ratio=config.resolved_defer_ratio,
        )
    return SqliteFrontier.open(
        config.out_dir / name,
        seen_mode=config.resolved_seen_mode,
        expected_urls=config.expected_urls,
        seen_fp_rate=config.seen_fp_rate,
        state_path=config.state_file,
        max_wait_s=config.max_wait_s,
        defer_ratio=config.resolved_defer_ratio,
        shared_ips=shared_ips,
    )
