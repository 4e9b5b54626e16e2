"""The fetch step: every request the crawler makes (pages and robots.txt) passes here.

``request`` keeps the politeness bookkeeping around the one call to ``Fetcher.fetch``: the
provisional next time is on disk before the request leaves (``frontier.begin_request``), the
start and the end of the response are recorded (the next gap counts from the end), and the
request is counted. ``fetch_page`` adds the conditional GET; ``refused`` is what a refusal
does to the site.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
from typing import TYPE_CHECKING

from politecrawl.engine.outcome import (
    CUT,
    MAX_ROBOTS_BYTES,
    DropReason,
    answered_normally,
    unanswered,
)
from politecrawl.frontier import PAGE, UrlEntry
from politecrawl.net.fetch import FetchResult
from politecrawl.polite import politeness
from politecrawl.urls.canonical import host_of, origin_of

if TYPE_CHECKING:
    from politecrawl.engine.context import CrawlContext

log = logging.getLogger("politecrawl")


async def request(
    ctx: CrawlContext,
    host: politeness.HostState,
    url: str,
    *,
    html_only: bool,
    extra_headers: dict[str, str] | None = None,
    robots: bool = False,
    elsewhere: bool = False,
) -> FetchResult:
    """One request under the key's lease: politeness bookkeeping and counts around it.
    ``robots``: a robots.txt, whose 4xx (but 429) only says there is none (RFC 9309
    2.3.1.3): counted as ``robots:none`` by the robots step, not as an error; its body is
    read to 500 KiB at least (RFC 9309 2.5), whatever ``--max-size`` says of pages.
    ``elsewhere``: to another host's server (a robots.txt redirect, ``robots.hops``): the
    key's address and response times are not that server's."""
    name = host_of(url)
    ctx.robots.hops.begin(name)  # before any wait: no robots.txt redirect to it meanwhile
    try:
        return await _request(ctx, host, url, html_only, extra_headers, robots, elsewhere)
    finally:
        ctx.robots.hops.end(name, 0.0)


async def _request(
    ctx: CrawlContext,
    host: politeness.HostState,
    url: str,
    html_only: bool,
    extra_headers: dict[str, str] | None,
    robots: bool,
    elsewhere: bool,
) -> FetchResult:
    cfg = ctx.cfg.politeness
    if host.last_start == 0.0:
        ctx.counters["hosts_contacted"] += 1
    if ctx.contacted is not None:
        ctx.contacted.add(host.key)
    politeness.record_start(host, cfg, ctx.clock())
    await ctx.frontier.begin_request(host.key, host)  # on disk before the request goes
    politeness.record_start(host, cfg, ctx.clock())  # the real start
    res = await ctx.fetcher.fetch(
        url,
        html_only=html_only,
        extra_headers=extra_headers,
        min_cap=MAX_ROBOTS_BYTES if robots else 0,
    )
    politeness.record_end(host, ctx.clock())  # the next gap counts from here
    if res.ip and not elsewhere:  # the per-IP rule follows the address actually connected to
        await ctx.frontier.connected(host.key, res.ip)
    ctx.counters["requests"] += 1
    absent = robots and res.status is not None and 400 <= res.status < 500 and res.status != 429
    if res.status is not None and res.status >= 400 and not absent:
        ctx.counters[f"error:http_{res.status}"] += 1
    if res.error is not None:
        ctx.counters[f"error:{res.error}"] += 1
        # many sites failing the same way at once: the crawler's network, not this site
        res.outage = ctx.outage.failed(host.key, res.error, ctx.clock())
        if not res.outage and res.error != CUT and not elsewhere:
            politeness.origin_failed(host, origin_of(url))  # (``politeness.failing_alone``)
        if unanswered(res) and not res.outage:
            await _unanswered(ctx, host, res)
        if res.outage:
            ctx.counters["outage_failures"] += 1
        else:
            ctx.losses.note_error(host.key, res.error, origin_of(url))
    elif res.status is not None:
        ctx.outage.answered(origin_of(url), host.key, ctx.clock(), host.last_start)
        normal = answered_normally(res)
        if not elsewhere:
            politeness.record_response(
                host, cfg, res.answer_s, normal=normal, origin=origin_of(url)
            )
        if normal:
            ctx.losses.recovered(host.key)
    return res


async def fetch_page(
    ctx: CrawlContext, entry: UrlEntry, host: politeness.HostState
) -> tuple[FetchResult, bool]:
    """Fetch a queued URL, conditionally when its validators are known (an unchanged page
    costs the site a 304). Returns the result and whether the request was a revisit."""
    known = await ctx.store.validators(entry.url) if entry.kind == PAGE else None
    conditional = {}
    if known is not None:
        if known[0]:
            conditional["If-None-Match"] = known[0]
        if known[1] and _http_date(known[1]):  # a garbled one is not sent back (RFC 9110 13.1.3)
            conditional["If-Modified-Since"] = known[1]
    res = await request(
        ctx, host, entry.url, html_only=entry.kind == PAGE, extra_headers=conditional or None
    )
    entry.attempt += 1
    if res.status is not None:
        ctx.counters["pages_fetched" if entry.kind == PAGE else "sitemaps_fetched"] += 1
    return res, known is not None


async def refused(ctx: CrawlContext, host: politeness.HostState, why: str) -> bool:
    """The site refused (``outcome.refusal``): pause it, or give it up. True if given up."""
    cfg = ctx.cfg.politeness
    done = politeness.record_refusal(host, cfg, ctx.clock())
    n = host.consecutive_refusals
    if done is politeness.Refused.PAUSED:
        ctx.counters["sites_paused"] += 1
        ctx.losses.parked(host.key, f"refused {n} requests in a row ({why})", host.parked_until)
        log.warning(
            "%s refused %d requests in a row (%s): paused for %.0f s",
            host.key,
            n,
            why,
            cfg.park_s,
        )
    elif done is politeness.Refused.GIVEN_UP:
        dropped = await ctx.frontier.drop_queued(
            host.key, f"dropped:{DropReason.SITE_REFUSED.value}"
        )
        ctx.counters["sites_given_up"] += 1
        ctx.counters[DropReason.SITE_REFUSED.value] += dropped + 1
        ctx.losses.given_up(
            host.key, f"refused {n} requests in a row ({why}) after a pause", dropped + 1
        )
        log.warning(
            "%s refused %d requests in a row (%s) after a pause: given up, "
            "its %d remaining URLs dropped",
            host.key,
            n,
            why,
            dropped + 1,
        )
        return True
    return False


def _http_date(value: str) -> bool:
    """Whether ``value`` reads as an HTTP-date (``If-Modified-Since`` takes nothing else: a
    server's ``Last-Modified: garbage-date`` was sent back as it was on every revisit)."""
    try:
        email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return False
    return True


# After a request given up unanswered, the turn waits this long before judging it: the outage
# guard suspects an outage of the crawler's own network as the failures come back, and the
# requests a link down for 15 s left hanging come back together (12 sites within 0.05 s).
UNANSWERED_GRACE_S = 2.0


async def _unanswered(ctx: CrawlContext, host: politeness.HostState, res: FetchResult) -> None:
    """A request that reached the server got no answer (``outcome.unanswered``): its wait is
    learned as a response time (the DNS wait is not the server's), so the site and its
    server wait as after a slow answer; taken back if an outage was suspected since it
    started. Learned first, so a stop cutting the grace leaves it learned (a resume waits)."""
    cfg = ctx.cfg.politeness
    if not cfg.response_time_factor:  # (--delay-factor 0: response times space nothing)
        return
    if politeness.failing_alone(host, origin_of(res.url)):  # a hung port, not a slow server
        ctx.counters["unanswered_alone"] += 1
        return
    politeness.record_unanswered(host, cfg, res.answer_s)
    if res.error != CUT:  # (a stop cut it: no time to wait)
        await asyncio.sleep(UNANSWERED_GRACE_S)  # the lease held: its server's names wait
    if ctx.outage.excused(host.last_start):
        politeness.unanswered_excused(host)
    else:
        ctx.counters["unanswered_waits"] += 1
