"""What happens to a fetched page that is kept: page processing, duplicates, the WARC record,
the user's handler, the sinks, and its links to the one gate (``admit``).

Order is the invariant: the WARC record is written (unbuffered) before the frontier hears the
URL is finished, and the links are admitted before that too, so what survives a crash is a
prefix of what happened. Sitemaps and redirect targets also leave through the gate here.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from typing import TYPE_CHECKING, Any

from politecrawl.content.page import Page, read_response
from politecrawl.content.sitemaps.read import parse_sitemap
from politecrawl.continuity.tracker import PageVerdict
from politecrawl.engine.journal import record_links
from politecrawl.engine.outcome import DropReason, Redirect, partial, robots_usable
from politecrawl.engine.pagework import do_page_work
from politecrawl.errors import HandlerError
from politecrawl.focus.strategy import PageScore
from politecrawl.frontier import SITEMAP, UrlEntry
from politecrawl.handler import run_handler
from politecrawl.net.fetch import FetchResult
from politecrawl.polite.usage import Usage
from politecrawl.storage.sinks import ItemRecord, Kept, PageRecord, PagesLog
from politecrawl.storage.warc import Capture, PackedExchange, payload_digest
from politecrawl.urls.canonical import host_of, join, origin_of

if TYPE_CHECKING:
    from politecrawl.engine.context import CrawlContext

log = logging.getLogger("politecrawl")

SITEMAP_PRIORITY = 1e9  # sitemaps first: they seed the site's pages


async def read_page(
    ctx: CrawlContext, entry: UrlEntry, res: FetchResult
) -> tuple[Page, int | None, PackedExchange | None]:
    """Page processing: decode once, parse once. With worker processes (``--processes``) and
    nothing that needs the tree, the page job runs there (``pagework``): the page, its
    SimHash and its WARC records packed come back."""
    scored = ctx.focus.nugget is not None
    if ctx.pool.workers and not ctx.keep_tree:  # a tree cannot cross processes
        work = await ctx.pool.run(do_page_work, res, entry.url, ctx.token, entry.depth,
                                  score=scored)  # fmt: skip
        if work.pid != os.getpid():
            ctx.worker_cpu_s += work.cpu_s
        return work.page, work.simhash, work.exchange
    page = await read_response(
        res, entry.url, ctx.token, entry.depth, score=scored, keep_tree=ctx.keep_tree
    )
    return page, None, None


async def store_page(
    ctx: CrawlContext, entry: UrlEntry, res: FetchResult
) -> tuple[str, float | None]:
    """Read the page once, score it, recognise duplicates, store it, give it to the handler
    and the sinks, then admit the links it follows with priorities. Returns the request
    log's outcome and, with ``--recrawl``, when the page is due again."""
    counters, focus = ctx.counters, ctx.focus
    page, sim, packed = await read_page(ctx, entry, res)
    if page.directives.expired:  # past its unavailable_after date: noindex
        counters["unavailable_after"] += 1
    if page.directives.bad_date:
        unreadable_date(ctx, entry.url, page.directives.bad_date)
    usage = await judge_usage(ctx, entry.url, page)
    page.usage = usage.to_json()
    if usage.unreadable:  # (each page's, warned of once a site)
        counters["usage_unreadable"] += len(usage.unreadable)
    if usage.refused:
        return await keep_reserved(ctx, entry, res, page, usage)
    score = focus.score_page(entry.url, page.document)
    counters["relevance_errors"] += score.error is not None
    page.relevance = score.relevance
    etag, modified = res.header("etag"), res.header("last-modified")
    digest = packed.capture.digest if packed else payload_digest(res.raw_body)
    seen = ctx.continuity.on_page(
        entry.url,
        page.visible_text,
        page.canonical,
        digest=digest,
        now=res.started,
        etag=etag,
        last_modified=modified,
        sim=sim,
    )
    # what the page is decides whether its URL pattern may grow past the trap guard's budget
    ctx.admission.gate.spaces.page(
        entry.url, page.visible_text, duplicate=seen.duplicate_of is not None
    )
    if seen.revisit:
        counters["revisits"] += 1
        counters["changes_seen"] += bool(seen.changed)
    kept: Kept | None = None
    record_id: str | None = None  # the record of this fetch: a response, or a revisit
    if seen.near_duplicate_of is not None:  # stored in full all the same, links followed
        counters["near_duplicates"] += 1
    if seen.duplicate_of is not None:
        # the very bytes of a page already stored: a revisit record, links not followed
        counters["duplicates"] += 1
        counters[f"duplicates:{host_of(entry.url)}"] += 1
        if not (page.directives.noindex or page.directives.noarchive):
            record_id = archive(ctx, entry.url, res, seen.original, packed, digest, page.usage)
        page.follow([])
        kept = "duplicate"
    elif page.directives.noindex:
        counters[DropReason.NOINDEX.value] += 1
    else:
        if page.directives.noarchive:  # the site asks for no copy: none kept, none counted
            counters["noarchive"] += 1  # as stored (the request log says ``noarchive``)
            kept = "noarchive"
        else:
            record_id = archive(ctx, entry.url, res, seen.original, packed, digest, page.usage)
            kept = "stored"
            counters["stored"] += 1
            if etag or modified:
                # (a page kept out of the archive has no copy a 304's revisit record could
                # name: it is asked in full again)
                await ctx.store.save_validators(entry.url, etag, modified, res.started)
    # a folder of copies goes last; a relevant page's section is re-scored with what it taught
    changed = focus.saw_stored(entry.url, seen.duplicate_of, score.relevant)
    if changed:
        await ctx.reprioritize(changed)
    items: list[dict[str, Any]] = []
    error: str | None = None
    if ctx.on_page is not None and kept == "stored":
        # (each item carries the page's url, record id and usage: what the owner said
        # travels with the data; a ``noarchive`` page asked that no copy be kept, and items
        # are kept: the handler never sees it, as ``content.jsonl`` never holds its text)
        items, error = await run_handler(ctx.on_page, page, record_id)
    outlinks = await admit_links(ctx, entry, res, page, score)
    if kept == "stored" and ctx.cfg.extract:
        await extract_content(ctx, page)
    if kept is not None:
        left_out = to_sinks(ctx, entry, res, page, kept, record_id, seen, outlinks, items)
        counters["items"] += len(items) - left_out
        # pages, not errors: a page whose handler raised after an item no file could hold
        # is one page the user's code failed on (the summary says "on N pages")
        counters["handler_errors"] += error is not None or left_out > 0
    if score.relevant:
        counters["relevant_pages"] += 1
        if ctx.target_met():  # the crawl's count, not this process's
            ctx.stop("target_relevant")
    if seen.duplicate_of is not None:
        return f"duplicate:{seen.duplicate_of}", seen.next_due
    if page.directives.noindex:
        return "dropped:noindex", seen.next_due
    return kept or "stored", seen.next_due


def unreadable_date(ctx: CrawlContext, url: str, date: str) -> None:
    """An ``unavailable_after`` whose date could not be read: ignored, as Google does
    ("ignored if no valid date/time is specified"); counted, and said once a site."""
    ctx.counters["unavailable_after_unreadable"] += 1
    origin = origin_of(url)
    if ctx.usage.first_time(origin, "unavailable_after"):
        log.warning(
            "%s: an unavailable_after date %r could not be read (RFC 822, RFC 850 or "
            "ISO 8601 expected): ignored, the page kept as if it had none", origin, date,
        )  # fmt: skip


async def judge_usage(ctx: CrawlContext, url: str, page: Page) -> Usage:
    """What the owner says about this page's use, against the crawl's purpose: robots.txt's
    copy in force at the fetch, tdmrep.json, the response's headers, the page's meta."""
    origin = origin_of(url)
    rules = ctx.robots.current(origin) or await ctx.robots.rules_for(origin, ctx.clock())
    return ctx.usage.for_page(origin, url, rules, page.headers, page.usage_metas)


async def keep_reserved(
    ctx: CrawlContext, entry: UrlEntry, res: FetchResult, page: Page, usage: Usage
) -> tuple[str, float | None]:
    """A page whose owner refuses the crawl's purpose: no WARC record, no text, no handler,
    only a ``reserved`` row saying why; its links are followed (the statements govern use,
    not crawling). Returns the request log's outcome, ``reserved:<sources>``."""
    ctx.counters["reserved"] += 1
    for source in usage.sources:
        ctx.counters[f"reserved:{source}"] += 1
    score = ctx.focus.score_page(entry.url, page.document)  # for the links' priorities only
    ctx.counters["relevance_errors"] += score.error is not None
    outlinks = await admit_links(ctx, entry, res, page, score)
    record = PageRecord(page, "reserved", fetched_at=res.started, priority=entry.priority,
                        outlinks=outlinks)  # fmt: skip
    for sink in ctx.sinks:
        if isinstance(sink, PagesLog):  # a user's sink keeps pages: it never sees this one
            sink.write(record)
    return f"reserved:{'+'.join(usage.sources)}", None


async def admit_links(
    ctx: CrawlContext, entry: UrlEntry, res: FetchResult, page: Page, score: PageScore
) -> int:
    """The page's links to the one gate, with the strategy's priorities; how many it follows."""
    counters, focus = ctx.counters, ctx.focus
    if partial(res):
        counters["truncated"] += 1
    if page.links_cut:
        counters["links_cut"] += page.links_cut
    if page.directives.nofollow:
        counters["nofollow_pages"] += 1
    counters["nofollow_links"] += sum(1 for link in page.links if link.nofollow)
    links = page.links_to_follow() if ctx.cfg.follow_links else []  # else: a segment fetch
    if focus.model is not None:  # features only for links not seen before
        fresh = set(await ctx.store.unseen([link.url for link in links]))
        links = [link for link in links if link.url in fresh]
    depth = entry.depth + 1
    if not ctx.cfg.follow_links:  # a segment fetch: the links go to the next segment
        record_links(ctx, entry.url, page.links_to_follow())
    link_items = focus.link_items(entry.url, links, depth, score)
    queued = await ctx.admission.admit(link_items, depth=depth, source=entry.url)
    if focus.model is not None and len(queued) < len(link_items):
        focus.forget([u for u, _ in link_items if u not in queued])
    return len(links)


async def extract_content(ctx: CrawlContext, page: Page) -> None:
    """``--extract``: the page's main text in each format asked, in a thread (about 50 ms of
    CPU a page: never on the event loop), cached on the page for ``content.jsonl``."""
    formats = ctx.cfg.extract

    def run() -> None:
        for fmt in formats:
            page.extract("markdown" if fmt == "markdown" else "text")

    await asyncio.to_thread(run)
    ctx.counters["pages_extracted"] += 1


def archive(
    ctx: CrawlContext,
    url: str,
    res: FetchResult,
    original: Capture | None,
    packed: PackedExchange | None = None,
    digest: str | None = None,
    usage: dict[str, Any] | None = None,
) -> str | None:
    """The response (``packed`` already, if a worker built it), or a revisit record when
    ``original`` holds these very bytes; returns the id of the record written for this fetch
    (the revisit's for a duplicate: its original's is ``original.record_id``). ``digest``:
    the payload's, if computed."""
    record_id: str | None
    if original is not None:
        record_id = ctx.warc.write_revisit(res, profile="identical-payload-digest",
                                           original=original)  # fmt: skip
    else:
        if packed is not None:
            original = ctx.warc.append_exchange(packed)
        else:
            original = ctx.warc.write_exchange(res, digest)
        record_id = original.record_id if original is not None else None
    if original is None or record_id is None:
        return None
    ctx.continuity.stored(url, original)  # the payload's record: what a 304 will name
    if usage is not None:  # the preferences in force at this fetch, beside its record
        ctx.warc.write_metadata(url, res.started, record_id, [
            ("purpose", str(usage["purpose"])),
            ("usage", json.dumps(usage, ensure_ascii=False, separators=(",", ":"))),
        ])  # fmt: skip
    return record_id


def to_sinks(
    ctx: CrawlContext,
    entry: UrlEntry,
    res: FetchResult,
    page: Page,
    kept: Kept,
    record_id: str | None,
    seen: PageVerdict,
    outlinks: int,
    items: list[dict[str, Any]],
) -> int:
    """The kept page, then its items, to every sink (pages.jsonl, items.jsonl, the user's);
    a ``noarchive`` page only to ``pages.jsonl`` (a row without its text): a user's sink keeps
    pages, and the page asked that no copy be kept. Returns how many items a sink left out
    (no file could hold them: each said once, however many sinks refused it)."""
    record = PageRecord(
        page,
        kept,
        fetched_at=res.started,
        priority=entry.priority,
        warc_record_id=record_id,
        original_record_id=seen.original.record_id if record_id and seen.original else None,
        duplicate_of=seen.duplicate_of,
        near_duplicate_of=seen.near_duplicate_of,
        changed=seen.changed,
        outlinks=outlinks,
    )
    left_out: set[int] = set()  # the items' positions
    for sink in ctx.sinks:
        if kept == "noarchive" and not isinstance(sink, PagesLog):
            continue
        sink.write(record)
        for i, item in enumerate(items):
            try:
                sink.write(ItemRecord(item, page))
            except HandlerError as exc:  # an item no file can hold (a cycle): that item only
                if i not in left_out:
                    left_out.add(i)
                    log.warning("an item of %s left out: %s", page.url, exc)
    return len(left_out)


async def read_sitemap(ctx: CrawlContext, entry: UrlEntry, res: FetchResult) -> str:
    """A fetched sitemap: archived, its pages and child sitemaps to the gate."""
    sm = await asyncio.to_thread(
        parse_sitemap, res.body, url=entry.url, content_type=res.content_type
    )
    ctx.warc.write_exchange(res)
    if sm.error:
        ctx.counters[f"sitemap_error:{sm.error}"] += 1
    await ctx.admission.admit([(p.url, ctx.focus.default_priority(1)) for p in sm.pages], depth=1)
    children = [c.url for c in sm.children]
    await admit_sitemaps(ctx, origin_of(entry.url), children)
    ctx.counters["sitemap_urls"] += len(sm.pages)
    for p in sm.pages:
        ctx.continuity.hint(p.url, p.changefreq, p.lastmod)
    return "stored:sitemap" if not sm.error else f"stored:sitemap:{sm.error}"


async def admit_sitemaps(ctx: CrawlContext, origin: str, urls: list[str]) -> None:
    """Sitemaps of an origin to the gate, at most ``max_sitemaps_per_host`` in all."""
    room = ctx.cfg.max_sitemaps_per_host - ctx.sitemaps_per_host[origin]
    if room <= 0 or not urls:
        return
    take = urls[:room]
    ctx.sitemaps_per_host[origin] += len(take)
    await ctx.admission.admit([(u, SITEMAP_PRIORITY) for u in take], kind=SITEMAP, raw=True)


async def follow_redirect(ctx: CrawlContext, entry: UrlEntry, outcome: Redirect) -> str | None:
    """A redirect's target to the gate, one hop further (capped: ``max_redirect_hops``).
    Returns why the target was not queued, if the gate refused it (the request log says it
    beside the redirect: the URL asked for ends there, and its operator asks why); None when
    it was queued, already seen, or is another process's."""
    target = join(entry.url, outcome.location)
    if target is None:
        ctx.counters[DropReason.BAD_REDIRECT.value] += 1
        return DropReason.BAD_REDIRECT.value
    if entry.hops + 1 > ctx.cfg.fetch.max_redirect_hops:
        ctx.counters[DropReason.TOO_MANY_REDIRECTS.value] += 1
        return DropReason.TOO_MANY_REDIRECTS.value
    origin = origin_of(target)
    rules = ctx.robots.current(origin)
    if (
        rules is not None
        and robots_usable(ctx.robots.status(origin))
        and not rules.is_allowed(ctx.token, target)
    ):  # (the rules in force say so now: the redirect's line says why, as for the others;
        # queued, it was dropped at its turn with no line anywhere naming it)
        ctx.counters[DropReason.ROBOTS.value] += 1
        return DropReason.ROBOTS.value
    refusals: dict[str, str] = {}
    await ctx.admission.admit(
        [(target, entry.priority)],
        depth=entry.depth,
        hops=entry.hops + 1,
        kind=entry.kind,
        source=entry.url,
        refusals=refusals,
    )
    return refusals.get(target)
