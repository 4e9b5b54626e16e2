"""What a crawl says before it starts and when it had nothing to do, in the user's terms.

The pace is the politeness rule's arithmetic (``politeness.fastest_gap_s``) applied to the
seeds given, so nobody learns only after an hour that the site takes a day; a topic is said as
it was read (its phrases and keywords), so a topic read wrong is seen at once; a resumed crawl
that found nothing left to fetch says so, and how to start afresh.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from politecrawl.config import CrawlConfig
from politecrawl.polite import politeness
from politecrawl.urls.canonical import politeness_key

__all__ = ["duration", "nothing_left", "pace", "say_start"]

_EXAMPLE_PAGES = 1000  # the pages the pace is told for when no --max-pages is given


def duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``2.2 h``, ``3.1 days``: as a person would say it."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def pace(cfg: CrawlConfig) -> str:
    """One line: the pace per site and what it means for these seeds and limits."""
    pol = cfg.politeness
    gap = politeness.fastest_gap_s(pol)
    mode = "host" if pol.key_mode == "ip" else pol.key_mode
    sites = len({politeness_key(u, mode) for u in cfg.seeds}) or 1
    per_hour = f"{3600 / gap:,.0f}" if gap > 0 else "unlimited"
    ip_gap = pol.ip_min_delay_s or 0.0
    every = (
        f"{pol.min_delay_s:g} s at most (--min-delay"
        if pol.min_delay_s >= ip_gap
        else f"{ip_gap:g} s at most (--ip-min-delay, one server"
    )
    line = (
        f"pace: one request per site every {every}; a Crawl-delay or slow answers make it "
        f"longer): {per_hour} pages an hour per site"
    )
    if gap <= 0:
        return line
    pages = cfg.max_pages if cfg.max_pages is not None else _EXAMPLE_PAGES
    what = f"{pages:,} pages (--max-pages)" if cfg.max_pages is not None else f"{pages:,} pages"
    plural = "site" if sites == 1 else "sites"
    line += (
        f"; the seeds name {sites} {plural}: {what} take at least "
        f"{duration(politeness.least_time_s(pages, sites, pol))}"
    )
    if cfg.max_time_s is not None:
        most = politeness.most_pages(cfg.max_time_s, sites, pol)
        line += f", and --max-time {cfg.max_time_s:g} s allows at most {most:,}"
    return line


def nothing_left(summary: dict[str, Any], out: Path, target: int | None = None) -> int:
    """What a resumed crawl that had nothing to fetch prints instead of its totals; its exit
    code. Sites still lost (given up, and not asked again by a resume: a site that refused,
    a certificate that does not verify without ``--tls-insecure``) are named, exit 3 as any
    crawl that lost sites (README, "Exit codes"): a resume is no complete crawl for them."""
    from politecrawl.engine.losses import describe
    from politecrawl.tools.endsummary import lost_line

    lost = summary.get("sites_lost") or []
    still = f", but {len(lost)} of its sites {'are' if len(lost) > 1 else 'is'} still lost:"
    relevant = (summary.get("counters") or {}).get("relevant_pages", 0)
    why = (  # (``target``: --target-relevant; met, the queue may still hold URLs)
        f"its --target-relevant {target:,} was met: {relevant:,} relevant pages"
        if target is not None and relevant >= target
        else "no URL is queued"
    )
    print(
        f"nothing left to do: the crawl in {out} had already finished "
        f"({summary['pages_fetched']:,} pages fetched, {summary['stored']:,} stored in earlier "
        f"runs; {why})" + (still if lost else ".")
    )
    for line in describe(lost):
        print(line)
    print(
        f"  to start afresh: give a new --out (or delete {out});\n"
        "  to crawl more here: give new seeds, or options that admit what was refused "
        "(--scope, --allow, --allow-private-addresses, --tls-insecure)",
        flush=True,
    )
    if not lost:
        return 0
    print(f"politecrawl: {lost_line(lost, out / 'summary.json')}", file=sys.stderr)
    return 3


def say_misread_name(cfg: CrawlConfig) -> None:
    """A bot name robots.txt reads shorter (``polite.useragent.misread``), said on stderr."""
    from politecrawl.polite import useragent

    misread = useragent.misread(cfg.fetch.user_agent)
    if misread is not None:
        print(f"politecrawl: warning: --user-agent: {misread}", file=sys.stderr)


def say_start(cfg: CrawlConfig) -> None:
    """What a crawl says before it starts, on stdout (a misread bot name on stderr): the topic
    as read (``focus.topic.described``), then the pace."""
    say_misread_name(cfg)
    if cfg.topic:
        from politecrawl.focus.topic import described, read_topic

        print(described(read_topic(cfg.topic)), flush=True)
    print(pace(cfg), flush=True)
