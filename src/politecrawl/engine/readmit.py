"""A resumed crawl takes its new options at their word, and asks again what failed for want
of a robots.txt (an origin whose robots.txt could not be reached had its URLs dropped; a
resume forgets the failures and queues them once more), or for a TLS handshake that failed
(it may pass: asked again the same way); and, given ``--tls-insecure`` now, what was dropped
because its certificate did not verify (the origin's robots.txt asked again, as a first time).

A URL refused for a reason an option decides (a loopback/private address without
``--allow-private-addresses``; out of ``--scope``/``--allow``; on the never-crawl list) is
remembered with its reason: the address refusals as the URL's outcome in the frontier, the
gate's refusals in the store's ``refused`` table (``Admission.remember_refused``). When the
same ``--out`` is crawled again, each goes through the one gate again with the options of this
run; what passes is queued once more, its refusal no longer counted, and the crawl says so.
The embedded (SQLite) frontier keeps these (``Backend.refusals``); a shared crawl keeps its
scope with the crawl.

``--recrawl`` given to a crawl made without it (``revisit``): its pages, finished after their
one fetch, are queued again, each due when a ``--recrawl`` crawl would have asked it again
(its revisit interval estimated from what is known of it, within this run's
``--revisit-min``/``--revisit-max``, counted from its last fetch), and the crawl says so; a
continuous crawl then goes on as one made with it. A shared crawl (``--frontier``) keeps no
finished URLs a worker could list: there only pages fetched with ``--recrawl`` come back.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from politecrawl.engine.losses import ROBOTS_UNAVAILABLE, TLS_CERTIFICATE, TLS_HANDSHAKE
from politecrawl.engine.outcome import DropReason
from politecrawl.polite import politeness
from politecrawl.urls.canonical import origin_of, politeness_key
from politecrawl.wording import counted

if TYPE_CHECKING:
    from politecrawl.engine.context import CrawlContext
    from politecrawl.frontier import UrlEntry

__all__ = ["readmit", "resume", "revisit"]

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
    # A TLS handshake that failed (garbage instead of TLS, a reset, a protocol the server
    # would not speak) is given up at once within a run: asking again seconds later meets the
    # same server. But what breaks a handshake often passes (a server restarting behind a
    # load balancer, a middlebox, a certificate being replaced), unlike a certificate that
    # does not verify, which no waiting changes: so a resume asks again, without any flag,
    # as for a robots.txt that could not be reached (``losses``: "a resume asks it again").
    for dropped, reason_of, asked, said in (
        (TLS_CERTIFICATE, DropReason.TLS_CERTIFICATE, not ctx.cfg.fetch.verify_tls,
         "dropped when their site's TLS certificate did not verify queued again "
         "(--tls-insecure is given now): its robots.txt is asked again"),
        (ROBOTS_UNAVAILABLE, DropReason.ROBOTS_UNAVAILABLE, True,
         "dropped when their site's robots.txt could not be reached queued again: it is "
         "asked again"),
        (TLS_HANDSHAKE, DropReason.TLS_HANDSHAKE, True,
         "dropped when their site's TLS handshake failed queued again: it may answer now, "
         "and is asked again"),
    ):  # fmt: skip
        urls = await _ask_again(ctx, kept.finished_as(dropped), kept.requeue) if asked else []
        if urls:
            _uncount(c, reason_of.value, len(urls))
            notes.append(f"{_urls(len(urls))} {said}")
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


# the outcomes of a fetch read as a page: what a ``--recrawl`` crawl asks again when due
# (``keep.store_page``'s labels, and a 304's)
_PAGES = ("stored", "noarchive", "not_modified", f"dropped:{DropReason.NOINDEX.value}")
_DUPLICATE = "duplicate:"  # + the URL whose payload it had


async def revisit(ctx: CrawlContext, notify: Callable[[str], None]) -> int:
    """``--recrawl`` on a crawl whose pages finished without it: each comes back when due
    (``Continuity.due_again``), said in one line; how many."""
    kept = ctx.frontier.refusals
    if not ctx.cfg.recrawl or kept is None:
        return 0
    rows = [row for label in _PAGES for row in kept.finished_as(label)]
    rows += kept.finished_as(_DUPLICATE, prefix=True)
    due: dict[str, float] = {}
    for row in rows:
        when = ctx.continuity.due_again(row[0])
        if when is not None:
            due[row[0]] = when
    n = await ctx.admission.revisit([r for r in rows if r[0] in due], due, kept.requeue)
    if n:
        ctx.counters["revisits_scheduled"] += n
        wait = max(0.0, min(due.values()) - ctx.clock())
        cfg = ctx.cfg
        notify(
            f"resuming: --recrawl: {counted(n, 'page')} fetched before queued again for "
            f"revisits, each due at its revisit interval (--revisit-min {cfg.revisit_min_s:g} s"
            f" to --revisit-max {cfg.revisit_max_s:g} s, from its last fetch), the first "
            + ("now" if wait < 1 else f"in {wait:.0f} s")
        )
    return n


async def resume(ctx: CrawlContext, notify: Callable[[str], None]) -> bool:
    """What a crawl of an ``--out`` crawled before does and says first, its seeds admitted:
    re-fetches, what its options lift (``readmit``), its pages to revisit when ``--recrawl``
    is given now (``revisit``). True when nothing is left to do: it had finished, and says
    so rather than print old totals as new."""
    if ctx.frontier.refetches:
        log.info("resuming: %d URLs were in flight at the last stop and will be re-fetched",
                 ctx.frontier.refetches)  # fmt: skip
    if ctx.counters["requests"] and ctx.target_met():
        return True  # the target met in earlier runs: nothing to fetch
    notes = await readmit(ctx, notify)
    if await revisit(ctx, notify) or notes or ctx.counters["requests"] == 0:
        return False
    if (await ctx.store.stats()).get("queued", 1) != 0:
        return False
    if ctx.cfg.recrawl:  # (none of its fetches was a page: a redirect, an error, a refusal)
        notify("resuming: --recrawl: no page of this crawl to revisit: none was fetched")
    return True


async def _ask_again(
    ctx: CrawlContext,
    rows: list[tuple[str, int, int, int, float]],
    requeue: Callable[[Sequence[UrlEntry]], Awaitable[int]],
) -> list[str]:
    """URLs dropped with their origin, queued again through the gate: the origin's robots.txt
    failures forgotten (asked again at once) and its site unparked. Returns those queued."""
    if not rows:
        return []
    for origin in sorted({origin_of(r[0]) for r in rows}):
        await ctx.robots.forget_failures(origin)
    mode = ctx.cfg.politeness.key_mode
    if mode != "ip":  # (an address key is known only once the name is resolved)
        for key in sorted({politeness_key(r[0], mode) for r in rows}):
            politeness.unpark(await ctx.store.host(key))
    return await ctx.admission.readmit(rows, requeue)


def _uncount(c: Counter[str], name: str, n: int) -> None:
    """A refusal lifted no longer counts (never below 0: some counters count requests)."""
    c[name] = max(0, c[name] - n)


def _urls(n: int) -> str:
    return counted(n, "URL")
