"""One turn of one leased politeness key: at most one request, read top to bottom.

``take_turn`` is the per-URL path, in order::

    lease (Crawler.run: frontier.lease)  ->  robots gate (robots.gate.next_url)
    ->  fetch (request.fetch_page)  ->  classify (outcome.classify, refusals)
    ->  page processing, sinks, admit (keep.store_page)  |  redirect  |  retry  |  drop
    ->  request log  ->  frontier told last  ->  next allowed time (politeness.schedule_next)
    ->  release (frontier.release)

Each turn makes at most one request for its key, and the key is not leased again before the
time ``politeness.schedule_next`` gave it, so nothing here sleeps per URL. A storage or
frontier error puts the URL back at the front of its queue and stops the crawl; anything else
is logged, counted as ``error:internal`` and the crawl goes on.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING

from politecrawl.engine.journal import log_request
from politecrawl.engine.keep import follow_redirect, read_sitemap, store_page
from politecrawl.engine.outcome import (
    CUT,
    Drop,
    DropReason,
    NotModified,
    Outcome,
    Redirect,
    Retry,
    Store,
    answered_then_broke,
    classify,
    outcome_label,
    refusal,
)
from politecrawl.engine.request import fetch_page, refused
from politecrawl.errors import FrontierError, LeaseLost, StorageError
from politecrawl.frontier import SITEMAP, UrlEntry
from politecrawl.net.fetch import FetchResult
from politecrawl.polite import politeness
from politecrawl.robots.gate import Held, next_url
from politecrawl.urls.canonical import origin_of

if TYPE_CHECKING:
    from politecrawl.engine.context import CrawlContext

log = logging.getLogger("politecrawl")


async def take_turn(ctx: CrawlContext, host: politeness.HostState) -> None:
    """At most one request for the leased key (``host.key``); always releases the lease."""
    key = host.key
    url: str | None = None
    try:
        url = await _step(ctx, key, host)
    except LeaseLost as exc:  # our lease expired (we were too slow): nothing to release
        log.warning("lease on %s lost: %s", key, exc)
        ctx.counters["leases_lost"] += 1
        return
    except (StorageError, FrontierError) as exc:  # disk full, I/O error: stop cleanly
        ctx.storage_failed(exc)
    except Exception:  # the one broad catch: log, classify, keep crawling
        log.exception("internal error on %s", key)
        ctx.counters["error:internal"] += 1
    if url is not None:  # a request was made: the next allowed time
        next_allowed = politeness.schedule_next(host, ctx.cfg.politeness, ctx.rng)
        if url:
            ctx.resolve_before_next_turn(url, next_allowed)  # its name's answer fresh by then
        if ctx.metrics is not None:
            ctx.metrics.site(key, penalty=politeness.in_penalty_box(host, ctx.clock()))
    await ctx.frontier.release(key, host)


async def _step(ctx: CrawlContext, key: str, host: politeness.HostState) -> str | None:
    """The robots gate, then one fetch: the order is the policy. The URL of the page
    requested ("" for robots.txt), None if no request was made."""
    ctx.outage.absolve(host)  # failures an outage caused before it was noticed
    entry = await next_url(ctx, key, host)
    if isinstance(entry, Held):
        return "" if entry.made_request else None  # robots.txt: its URL not told
    if ctx.target_met():  # met already (another process's page, say): no request
        await ctx.frontier.push_back(entry, front=True)
        ctx.stop("target_relevant")
        return None
    if not ctx.claim_page():  # (counted over every process: ``Partition.claim_page``)
        await ctx.frontier.push_back(entry, front=True)
        ctx.stop("max_pages")
        return None
    attempt = entry.attempt
    try:
        await fetch_and_handle(ctx, entry, host)
    except LeaseLost:
        raise  # another worker holds the site now; the URL was re-queued for it
    except (StorageError, FrontierError):
        # the disk failed, not the page: back in the queue for the next run, since nothing
        # half-written counts as stored (fetch_and_handle tells the frontier last)
        entry.attempt = attempt
        with contextlib.suppress(FrontierError):
            await ctx.frontier.push_back(entry, front=True)
        raise
    except Exception:
        # nothing is lost: the URL is recorded with the failure, then we go on
        await ctx.frontier.finish(entry.url, "dropped:internal_error")
        raise
    return entry.url


async def fetch_and_handle(ctx: CrawlContext, entry: UrlEntry, host: politeness.HostState) -> None:
    """Fetch, classify, act on the outcome, log the request, and tell the frontier last."""
    res, revisit = await fetch_page(ctx, entry, host)
    # the log says which attempt this request was, and whether a re-fetch after a crash,
    # whatever the outcome then makes of the entry (a revisit's attempts start again; a
    # blameless retry, cut or lost to an outage, gives its attempt back)
    attempt, refetch = entry.attempt, entry.refetch
    if res.outage:  # the crawler's own network was down: not the site's failure
        outcome: Outcome = Retry(0.0, False, f"outage:{res.error}", blame=False)
        refused_why: str | None = None
    else:
        outcome, refused_why = await classify_result(ctx, entry, host, res)
    label, due, redirect_refused = await act(ctx, entry, host, res, outcome, refused_why)
    failed = isinstance(outcome, Retry) or (isinstance(outcome, Drop) and outcome.reason in _FAILED)
    if not failed:  # (a site with nothing but failures is named lost: ``losses``)
        ctx.losses.page_answered(host.key, origin_of(entry.url))
    if due is not None:  # a continuous crawl: back in the queue, due at its interval
        entry.not_before, entry.attempt, entry.refetch = due, 0, False
        ctx.counters["revisits_scheduled"] += 1
    log_request(
        ctx,
        res,
        label,
        attempt,
        host,
        refetch=refetch,
        revisit=revisit,
        redirect_refused=redirect_refused,
    )
    # the frontier last: a write error above leaves the URL for _step to put back
    if due is not None or isinstance(outcome, Retry):
        await ctx.frontier.push_back(entry)
    else:
        await ctx.frontier.finish(entry.url, label)


async def classify_result(
    ctx: CrawlContext, entry: UrlEntry, host: politeness.HostState, res: FetchResult
) -> tuple[Outcome, str | None]:
    """The one table (``outcome.classify``), then what the response says about the site: a
    refusal may pause it or give it up (the URL then goes with its site)."""
    fetch = ctx.cfg.fetch
    outcome = classify(
        res,
        entry.attempt,
        fetch.max_attempts,
        max_retry_after_s=ctx.cfg.politeness.max_retry_after_s,
        retry_base_s=fetch.retry_base_s,
        transient_attempts=fetch.transient_attempts,
        retry_max_wait_s=fetch.retry_max_wait_s,
    )
    why = refusal(res)
    if why is not None and await refused(ctx, host, why):
        outcome = Drop(DropReason.SITE_REFUSED, why)
    return outcome, why


async def act(
    ctx: CrawlContext,
    entry: UrlEntry,
    host: politeness.HostState,
    res: FetchResult,
    outcome: Outcome,
    refused_why: str | None,
) -> tuple[str, float | None, str | None]:
    """Do what the outcome says; returns the request log's label, with ``--recrawl`` when
    the URL is due again, and why a redirect's target was refused, if it was."""
    label = outcome_label(outcome)
    counters = ctx.counters
    if isinstance(outcome, Store):
        if entry.kind == SITEMAP:
            return await read_sitemap(ctx, entry, res), None, None
        return (*await store_page(ctx, entry, res), None)
    if isinstance(outcome, NotModified):
        counters["not_modified"] += 1
        await _update_validators(ctx, entry.url, res)
        due = ctx.continuity.on_not_modified(entry.url, now=res.started)
        # names the capture holding the content, so replay shows it, not an empty 304
        original = ctx.continuity.capture_of(entry.url)
        ctx.warc.write_revisit(res, profile="server-not-modified", original=original)
        return label, due, None
    if isinstance(outcome, Redirect):
        counters["redirects"] += 1
        ctx.warc.write_exchange(res)
        return label, None, await follow_redirect(ctx, entry, outcome)
    elif isinstance(outcome, Retry):
        retry_later(ctx, entry, host, res, outcome, refused_why)
    else:
        if outcome.reason is not DropReason.SITE_REFUSED:  # counted by request.refused
            counters[outcome.reason.value] += 1
        if outcome.reason in _SITE_FAILURES:  # the site's doing: counts as a failure
            count_failure(ctx, host, outcome.reason.value, entry.url)
        if outcome.reason in _FAILED:
            # named if the site, or this origin of it, never answers
            ctx.losses.url_failed(host.key, outcome.detail, origin_of(entry.url))
        if outcome.reason in _FAILED or outcome.reason in _NO_PAGE:  # no page: evidence of a trap
            ctx.admission.gate.spaces.page(entry.url, None)
        if res.status is not None and not res.abandoned:
            ctx.warc.write_exchange(res)
        if res.status is not None and outcome.reason in _NO_PAGE and entry.kind != SITEMAP:
            # a link to nothing: counted against its folders (a folder of them is taken last)
            changed = ctx.focus.saw_no_page(entry.url)
            if changed:
                await ctx.reprioritize(changed)
    return label, None, None


def retry_later(
    ctx: CrawlContext,
    entry: UrlEntry,
    host: politeness.HostState,
    res: FetchResult,
    outcome: Retry,
    refused_why: str | None,
) -> None:
    """A URL to try again: an overload slows the key, failures in a row park it. A
    blameless retry (cut by the crawl's stop, or the crawler's own network down) costs the
    site nothing: no attempt used, no failure counted."""
    entry.not_before = ctx.clock() + outcome.after_s
    if not outcome.blame:
        entry.attempt = max(0, entry.attempt - 1)
        ctx.counters["cut" if outcome.error_class == CUT else "retries_outage"] += 1
        return
    cfg = ctx.cfg.politeness
    alone = politeness.failing_alone(host, origin_of(entry.url))  # the server answers elsewhere
    if outcome.overload:
        ra = outcome.after_s if res.header("retry-after") else None
        if alone:  # (no backoff for the origins that answer; the server's word still holds)
            politeness.honour_retry_after(host, cfg, ctx.clock(), ra)
        else:
            politeness.slow_down(host, cfg, ctx.clock(), ra)
    # a refusal (429, timeout) counts as one, not as a failure too; a page whose headers
    # came (not a 5xx) and whose body broke off is that page's fault, not the server's:
    # five such pages in a row parked a site that answered every other page for an hour
    if refused_why is None and not answered_then_broke(res):
        count_failure(ctx, host, outcome.error_class, entry.url)
    ctx.counters["retries"] += 1


# the server answered, and what it answered is no page: a link that leads to nothing
_NO_PAGE = frozenset(
    {DropReason.HTTP_PERMANENT, DropReason.NOT_HTML, DropReason.UNEXPECTED_STATUS}
)
# drops that say the site is failing, not just the page: counted like a failed request
_SITE_FAILURES = frozenset(
    {DropReason.TOO_SLOW, DropReason.TLS_CERTIFICATE, DropReason.TLS_HANDSHAKE}
)
# a URL lost to the site's failing (after its retries, or at once): a site with nothing but
# these is named lost (``losses.Losses.url_failed``)
_FAILED = _SITE_FAILURES | {DropReason.RETRIES_EXHAUSTED, DropReason.BAD_CHUNKING}


def count_failure(ctx: CrawlContext, host: politeness.HostState, why: str, url: str) -> None:
    """One more failure in a row of the site; enough of them park it (named as lost until it
    answers again). Not one of an origin failing while the server answers on another
    (``politeness.failing_alone``): its URLs go by their own retries, and are named."""
    origin = origin_of(url)
    if politeness.failing_alone(host, origin):
        ctx.counters["failures_alone"] += 1
        ctx.losses.failed_alone(origin)
        return
    cfg = ctx.cfg.politeness
    now = ctx.clock()
    hold = None
    if host.consecutive_failures + 1 >= cfg.park_after_failures:  # a park is near
        hold = ctx.outage.hold_s(host.key, why, now)
    if politeness.record_failure(host, cfg, now, hold):
        ctx.counters["hosts_parked"] += 1
        n = host.consecutive_failures
        ctx.losses.parked(host.key, f"failed {n} times in a row ({why})", host.parked_until)
        log.warning(
            "%s failed %d times in a row (%s): parked for %.0f s", host.key, n, why, cfg.park_s
        )


async def _update_validators(ctx: CrawlContext, url: str, res: FetchResult) -> None:
    """A 304 may carry new validators for the copy kept (RFC 9111 4.3.4: the stored header
    fields are updated from it): the next revisit sends them, not the first ones."""
    etag, modified = res.header("etag"), res.header("last-modified")
    known = await ctx.store.validators(url) if etag or modified else None
    if known is not None and (etag or known[0], modified or known[1]) != known[:2]:
        await ctx.store.save_validators(url, etag or known[0], modified or known[1], known[2])
