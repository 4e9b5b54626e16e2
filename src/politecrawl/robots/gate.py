"""The robots gate: which queued URL of a leased key may be fetched now, and robots.txt first.

A URL leaves the queue only through ``next_url``: the never-crawl list is asked again (it may
have changed since the URL was queued), a learned rewrite rule sends a variant to its
canonical form, and the origin's robots.txt rules decide (RFC 9309). When the rules are not
known or stale, THIS turn fetches robots.txt (``fetch_robots``: the same lease, delay,
fetcher and log as a page) and the page waits for the key's next turn. What a robots.txt
answer means is ``outcome.classify_robots``'s table; how long to wait before asking an
unreachable one again is ``politeness.robots_retry_s``'s (a page's retry schedule), and a
Retry-After it sends holds the key as a page's does.

Admission is per origin (scheme, host, port: RFC 9309 2.3), politeness per key: while one
origin's robots.txt is unreachable only its own URLs wait (each set aside until the next
ask, dropped after as many failures as a page gets: ``outcome.robots_attempts``); the key's
other origins are served.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from politecrawl.engine.journal import log_request, log_robots
from politecrawl.engine.keep import admit_sitemaps
from politecrawl.engine.losses import GIVEN_UP_OUTCOMES, ROBOTS_UNAVAILABLE
from politecrawl.engine.outcome import (
    CUT,
    NO_CONTACT,
    DropReason,
    RobotsAnswer,
    RobotsOutcome,
    classify_robots,
    retry_after_s,
    robots_usable,
)
from politecrawl.engine.request import request
from politecrawl.errors import StorageError
from politecrawl.frontier import UrlEntry
from politecrawl.net.fetch import FetchResult
from politecrawl.polite import politeness
from politecrawl.robots.rules import RobotsRules
from politecrawl.urls.canonical import host_of, origin_of, politeness_key, robots_url

if TYPE_CHECKING:
    from politecrawl.engine.context import CrawlContext

log = logging.getLogger("politecrawl")

TDMREP_PATH = "/.well-known/tdmrep.json"
MAX_HELD_PER_TURN = 64  # URLs of unreachable origins set aside in one turn, at most


@dataclass(frozen=True, slots=True)
class Held:
    """No page this turn: ``made_request`` when robots.txt was fetched instead."""

    made_request: bool


async def next_url(ctx: CrawlContext, key: str, host: politeness.HostState) -> UrlEntry | Held:
    """The key's next URL that may be fetched now, or why none is (``Held``)."""
    now = ctx.clock()
    if ctx.never.maybe_reload(now):  # cheap unless a check is due
        ctx.counters["never_crawl_reloads"] += 1
    held = 0
    while (entry := await ctx.frontier.pop_url(key, now)) is not None:
        url = entry.url
        if ctx.never.excludes(host_of(url)):
            await drop(ctx, entry, DropReason.EXCLUDED)
            continue
        canonical = ctx.continuity.rewrite(url)
        if canonical != url:  # queued before a rule was learned: its canonical form instead
            await drop(ctx, entry, DropReason.DUPLICATE_URL)
            await ctx.admission.admit([(canonical, entry.priority)], depth=entry.depth)
            continue
        hop_at = ctx.robots.hops.due_at(host_of(url), None, now, 0.0)
        if hop_at > now:  # another site's robots.txt redirect to this host: in flight, or
            await ctx.frontier.push_back(entry, front=True)  # its delay still running
            politeness.wait_until(host, hop_at)
            return Held(made_request=False)
        origin = origin_of(url)
        why = ctx.robots.unfetchable(origin)
        if why is not None:  # nothing of this origin can be fetched: its URLs go, no others
            ctx.counters[why] += 1
            await ctx.frontier.finish(url, f"dropped:{why}")
            lost = GIVEN_UP_OUTCOMES.get(f"dropped:{why}")
            if why == DropReason.EXCLUDED and ctx.robots.pending_redirect(origin):
                # its robots.txt redirects to a never-crawl domain: a loss of this site's
                # (an address listed itself is the operator's choice: none)
                lost = "its robots.txt redirects to a never-crawl domain"
            if lost is not None:
                ctx.losses.given_up(
                    key, f"{lost} ({origin})", 1, outcome=f"dropped:{why}", origin=origin
                )
            continue
        rules = await ctx.robots.rules_for(origin, now)
        if rules is None:
            if ctx.robots.given_up(origin):
                # asked enough (its retry time passed while the site's delay ran): it goes
                await drop(ctx, entry, DropReason.ROBOTS_UNAVAILABLE)
                continue
            await ctx.frontier.push_back(entry, front=True)
            asked, wait = await fetch_robots(ctx, origin, host)
            if wait:  # a redirect to a host not free now: the site's page waits till then
                politeness.wait_until(host, wait)
                return Held(made_request=False)
            if asked and ctx.robots.unfetchable(origin) not in NO_CONTACT:
                return Held(made_request=True)
            # answered without a request (a shared hop, a refused one), or refused before any
            # connection (a loopback address: a newcomer's first crawl waited out the 15 s
            # delay to say so): go on
            continue
        allowed = rules.is_allowed(ctx.token, url)
        if not robots_usable(ctx.robots.status(origin)) and not allowed:
            # robots.txt unreachable: this origin's URL waits for the next ask and goes after
            # a few; the key's other origins (same server, other scheme or port) go on
            if ctx.robots.given_up(origin):
                await drop(ctx, entry, DropReason.ROBOTS_UNAVAILABLE)
                ctx.losses.given_up(
                    key, f"robots.txt of {origin} unreachable", 1,
                    outcome=ROBOTS_UNAVAILABLE, origin=origin,
                )
                continue
            entry.not_before = max(entry.not_before, ctx.robots.retry_at(origin))
            await ctx.frontier.push_back(entry)
            held += 1
            if held >= MAX_HELD_PER_TURN:
                return Held(made_request=False)
            continue
        if not allowed:
            await drop(ctx, entry, DropReason.ROBOTS)
            continue
        if not ctx.usage.tdmrep_known(origin):  # once per origin, as robots.txt: page waits
            await ctx.frontier.push_back(entry, front=True)
            if await fetch_tdmrep(ctx, origin, host, rules):
                return Held(made_request=True)
            continue  # not asked (robots.txt disallows it): the page may go now
        refusal = ctx.usage.site_refusal(origin, url, rules)
        if refusal is not None:  # the owner refuses the purpose site-wide: not even fetched
            if origin not in ctx.refusing_sites:
                ctx.refusing_sites.add(origin)
                log.info(
                    "%s refuses %s for the whole site (%s): its pages are not fetched",
                    origin, ctx.cfg.purpose, ", ".join(refusal.sources),
                )  # fmt: skip
            await drop(ctx, entry, DropReason.RESERVED_SITE)
            continue
        ctx.robots.used(origin)
        return entry
    return Held(made_request=False)


async def drop(ctx: CrawlContext, entry: UrlEntry, reason: DropReason) -> None:
    ctx.counters[reason.value] += 1
    await ctx.frontier.finish(entry.url, f"dropped:{reason.value}")


def parked(ctx: CrawlContext, host: politeness.HostState, why: str) -> None:
    """Failures in a row parked the site (``politeness.record_failure``): named a loss."""
    n = host.consecutive_failures
    ctx.losses.parked(host.key, f"{why} {n} times in a row", host.parked_until)
    log.warning(
        "%s: %s %d times in a row: paused for %.0f s", host.key, why, n, ctx.cfg.politeness.park_s
    )


async def fetch_tdmrep(
    ctx: CrawlContext, origin: str, host: politeness.HostState, rules: RobotsRules
) -> bool:
    """``/.well-known/tdmrep.json`` (TDMRep §6.1), once per origin, under the site's own lease
    and delay like robots.txt, and logged; True if a request was made (robots.txt may
    disallow it: then the site has no file for us). A file that cannot be read (429, 5xx, no
    answer) is no permission: as an unreachable robots.txt, it is asked again at a later
    turn, the site slowed (Retry-After honoured), and the pages wait for it."""
    target = origin + TDMREP_PATH
    if not rules.is_allowed(ctx.token, target):
        ctx.usage.record_tdmrep(origin, None, b"")
        return False
    res = await request(ctx, host, target, html_only=False)
    if res.outage or res.error == CUT:  # not the site's failure: asked again, blameless
        log_request(ctx, res, "retry:outage" if res.outage else CUT, 1, host)
        return True
    status = res.status if res.error is None and res.status is not None else 0
    if not robots_usable(status):  # read as robots.txt's status is (RFC 9309 2.3.1.4)
        wait = retry_after_s(res.header("retry-after"))  # the next ask: the key's backoff
        if politeness.record_overload(host, ctx.cfg.politeness, ctx.clock(), wait):
            parked(ctx, host, f"tdmrep.json of {origin} unreachable")
        ctx.counters["tdmrep:unreachable"] += 1
        log_request(ctx, res, "tdmrep:unreachable", 1, host)
        return True
    label = ctx.usage.record_tdmrep(origin, res.status, res.body)
    ctx.counters[label] += 1
    log_request(ctx, res, label, 1, host)
    return True


async def fetch_robots(
    ctx: CrawlContext, origin: str, host: politeness.HostState
) -> tuple[bool, float]:
    """robots.txt under the site's own lease and delay; redirects followed up to 5 hops, one
    per turn (the chain is in the store, so any worker continues it); a hop to another host
    under that host's politeness too (``robots.hops``). Every answer is kept in the WARC
    (request and response records) as well as in ``log/robots.jsonl``. Returns whether a
    request was made, and when to ask again if the hop must wait (0: it need not)."""
    target, hops = ctx.robots.pending_redirect(origin) or (robots_url(origin + "/"), 0)
    away = host_of(target) if hops and host_of(target) != host_of(origin) else None
    if away is not None and ctx.never.excludes(away):  # nothing may go to a never-crawl domain
        log.warning(
            "robots.txt of %s redirects to %s, on the never-crawl list: not asked; "
            "the origin's URLs are dropped (excluded)", origin, target,
        )  # fmt: skip
        ctx.counters["robots:excluded"] += 1
        ctx.robots.mark_unfetchable(origin, DropReason.EXCLUDED.value)
        return False, 0.0
    shared = ctx.robots.hops.answer(target, ctx.clock()) if away else None
    if away is not None and shared is None:
        res_or_wait = await _hop(ctx, host, target, away)
        if isinstance(res_or_wait, float):
            return False, res_or_wait
        res = res_or_wait
    elif shared is None:
        res = await request(ctx, host, target, html_only=False, robots=True)
    else:
        res = shared  # another site's redirect to the same robots.txt asked it already
        ctx.counters["robots:shared"] += 1
    if res.outage or res.error == CUT:  # not the origin's failure: asked again, blameless
        log_request(ctx, res, "retry:outage" if res.outage else CUT, 1, host)
        return True, 0.0
    if shared is None:
        try:  # archived as Heritrix and Browsertrix do: what the crawl obeyed is in the WARC
            ctx.warc.write_exchange(res)
        except (StorageError, OSError) as exc:
            ctx.storage_failed(exc)
    answer = classify_robots(res, target, hops)
    if answer.outcome is RobotsOutcome.REDIRECT and answer.target is not None:
        await ctx.robots.record_redirect(origin, answer.target, hops + 1, ctx.clock())
        if shared is None:
            log_request(ctx, res, "robots:redirect", 1, host)
        log_robots(ctx, origin, res, "redirect")
        return shared is None, 0.0
    if answer.outcome is RobotsOutcome.UNFETCHABLE:
        # not a server failure: nothing of this origin can ever be fetched, so no retries;
        # its URLs are dropped as they come up (the key's other origins are not this one's)
        why = res.error or "address_refused"
        if shared is None:
            log_request(ctx, res, f"dropped:{why}", 1, host)
        ctx.robots.mark_unfetchable(origin, why)
        return shared is None, 0.0
    await _settle(ctx, origin, host, res, answer, shared is None, away)
    return shared is None, 0.0


async def _hop(
    ctx: CrawlContext, host: politeness.HostState, target: str, away: str
) -> FetchResult | float:
    """A redirect's hop to another host, when that host's politeness allows it now (else
    when it will: a float); its answer kept for the other sites redirecting there."""
    now = ctx.clock()
    key = politeness_key(
        target, "host" if ctx.cfg.politeness.key_mode == "ip" else ctx.cfg.politeness.key_mode
    )
    site = None if key == host.key else await ctx.store.host(key)  # ours: we hold its lease
    limit = ctx.cfg.fetch.total_timeout_s
    due = ctx.robots.hops.due_at(away, site, now, limit)
    if due > now:
        ctx.counters["robots:hop_waits"] += 1
        return due
    try:  # (``request`` marks the host busy while it is in flight)
        res = await request(ctx, host, target, html_only=False, robots=True, elsewhere=True)
    finally:
        pace = site if site is not None else host
        ctx.robots.hops.end(away, ctx.clock() + politeness.delay_s(pace, ctx.cfg.politeness))
    told = retry_after_s(res.header("retry-after"))
    if told is not None:  # the target's Retry-After holds the hops to it (RFC 9110 10.2.3)
        wait = politeness.retry_after_wait_s(told, ctx.cfg.politeness.max_retry_after_s)
        ctx.robots.hops.end(away, ctx.clock() + wait)
    if not res.outage and res.error != CUT:
        ctx.robots.hops.keep(target, res, now)
    return res


async def _settle(
    ctx: CrawlContext,
    origin: str,
    host: politeness.HostState,
    res: FetchResult,
    answer: RobotsAnswer,
    asked: bool,
    away: str | None,
) -> None:
    """The last hop's answer: the origin's rules (or its failure) recorded and logged."""
    status = answer.status
    if answer.outcome is RobotsOutcome.UNREACHABLE and res.error != "connect" and not away:
        # an overloaded server slows its key; a port where nothing listens, or one that
        # fails while the server answers on another, says nothing about the others (RFC
        # 9309 2.3: robots.txt is per origin): that origin waits on its own retry schedule
        # (its Retry-After, seconds or a date, honoured as a page's: capped, either way)
        wait = retry_after_s(res.header("retry-after"))
        if politeness.failing_alone(host, origin):
            politeness.honour_retry_after(host, ctx.cfg.politeness, ctx.clock(), wait)
        elif politeness.record_overload(host, ctx.cfg.politeness, ctx.clock(), wait):
            parked(ctx, host, f"robots.txt of {origin} unreachable")
    rules = await ctx.robots.record(origin, status, res.body, ctx.clock())
    if answer.outcome is not RobotsOutcome.UNREACHABLE:
        politeness.set_crawl_delay(host, origin, rules.crawl_delay(ctx.token))
        if ctx.cfg.sitemaps and answer.outcome is RobotsOutcome.RULES:
            await admit_sitemaps(ctx, origin, rules.sitemaps)
    label = f"robots:{answer.outcome.value}"
    ctx.counters[label] += 1
    if answer.outcome is RobotsOutcome.UNREACHABLE and not ctx.counters["pages_fetched"]:
        # nothing fetched yet: say why the crawl waits (the API has no other output)
        log.warning(
            "robots.txt of %s unreachable (%s); the site waits and is asked again later",
            origin,
            res.error_detail or res.error or f"HTTP {status}",
        )
    if asked:
        log_request(ctx, res, label, 1, host)
    log_robots(ctx, origin, res, label)
