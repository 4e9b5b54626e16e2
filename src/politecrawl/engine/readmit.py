"""A resumed crawl takes its new options at their word, and asks again what failed for want
of a robots.txt (an origin whose robots.txt could not be reached had its URLs dropped; a
resume forgets the failures and queues them once more).

A URL refused for a reason an option decides (a loopback/private address without
``--allow-private-addresses``; out of ``--scope``/``--allow``; on the never-crawl list) is
remembered with its reason: the address refusals as the URL's outcome in the frontier, the
gate's refusals in the store's ``refused`` table (``Admission.remember_refused``). When the
same ``--out`` is crawled again, each goes through the one gate again with the options of this
run; what passes is queued once more, its refusal no longer counted, and the crawl says so.
The embedded (SQLite) frontier keeps these (``Backend.refusals``); a shared crawl keeps its
scope with the crawl.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from politecrawl.engine.losses import ROBOTS_UNAVAILABLE
from politecrawl.engine.outcome import DropReason
from politecrawl.polite import politeness
from politecrawl.urls.canonical import origin_of, politeness_key
from politecrawl.wording import counted

if TYPE_CHECKING:
    from politecrawl.engine.context import CrawlContext

__all__ = ["readmit", "resume"]

log = logging.getLogger("politecrawl")

_ADDRESS = DropReason.ADDRESS_REFUSED.value
_WHY = {  # reason -> the options that decide it, as the user types them
    DropReason.OUT_OF_SCOPE.value: "out of scope (--scope, --allow)",
    DropReason.EXCLUDED.value: "on the never-crawl list (--exclude-file)",
}


async def readmit(ctx: CrawlContext, notify: Callable[[str], None]) -> list[str]:
    """Queue again what this run's options no longer refuse; one line per kind, said."""
    kept = ctx.frontier.refusals
    if kept is None:
        return []
    notes: list[str] = []
    c = ctx.counters
    if ctx.cfg.fetch.allow_private_addresses:
        rows = kept.finished_as(f"dropped:{_ADDRESS}")
        urls = await ctx.admission.readmit(rows, kept.requeue) if rows else []
        if urls:
            _uncount(c, _ADDRESS, len(urls))
            _uncount(c, f"error:{_ADDRESS}", len(urls))
            notes.append(
                f"{_urls(len(urls))} refused before as loopback/private addresses "
                "queued again (--allow-private-addresses is given now)"
            )
    rows = kept.finished_as(ROBOTS_UNAVAILABLE)
    if rows:  # their sites' robots.txt could not be reached: it may be back now
        for origin in sorted({origin_of(r[0]) for r in rows}):
            await ctx.robots.forget_failures(origin)
        mode = ctx.cfg.politeness.key_mode
        if mode != "ip":  # (an address key is known only once the name is resolved)
            for key in sorted({politeness_key(r[0], mode) for r in rows}):
                politeness.unpark(await ctx.store.host(key))
        urls = await ctx.admission.readmit(rows, kept.requeue)
        if urls:
            _uncount(c, DropReason.ROBOTS_UNAVAILABLE.value, len(urls))
            notes.append(
                f"{_urls(len(urls))} dropped when their site's robots.txt could not be "
                "reached queued again: it is asked again"
            )
    refused = kept.refused_rows()
    if refused:
        reason = {r[0]: r[1] for r in refused}
        urls = await ctx.admission.readmit(
            [(u, d, h, k, p) for u, _, d, h, k, p in refused], kept.requeue
        )
        kept.forget_refused(urls)
        for why, n in sorted(Counter(reason[u] for u in urls).items()):
            _uncount(c, why, n)
            notes.append(
                f"{_urls(n)} refused before as {_WHY.get(why, why)} queued again: "
                "this run's options admit them"
            )
    readmitted = sum(int(n.split(" ", 1)[0]) for n in notes)
    if readmitted:
        c["readmitted"] += readmitted
    for note in notes:
        notify(f"resuming: {note}")
    return notes


async def resume(ctx: CrawlContext, notify: Callable[[str], None]) -> bool:
    """What a crawl of an ``--out`` crawled before does and says first, its seeds admitted:
    re-fetches, what its options lift (``readmit``). True when nothing is left to do (not a
    continuous crawl): it had finished, and says so rather than print old totals as new."""
    if ctx.frontier.refetches:
        log.info("resuming: %d URLs were in flight at the last stop and will be re-fetched",
                 ctx.frontier.refetches)  # fmt: skip
    if await readmit(ctx, notify) or ctx.counters["requests"] == 0 or ctx.cfg.recrawl:
        return False
    return (await ctx.store.stats()).get("queued", 1) == 0


def _uncount(c: Counter[str], name: str, n: int) -> None:
    """A refusal lifted no longer counts (never below 0: some counters count requests)."""
    c[name] = max(0, c[name] - n)


def _urls(n: int) -> str:
    return counted(n, "URL")
