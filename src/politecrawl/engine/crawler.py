"""The asyncio engine: lease a ready site, take one turn for it, give it back with its next time.

The loop (``Crawler.run``) leases keys from the frontier while there is room and runs
``turn.take_turn`` for each; the per-URL path is that one function, naming its steps (robots
gate, fetch, classify, page processing, sinks, admit, next allowed time), each in its own
module. What the crawler itself keeps: the loop, the once-a-second saving (``_flush``: WARC
before the frontier's commit), the limits, and closing every store on its own (``_finish``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator

from politecrawl.config import CrawlConfig
from politecrawl.engine import outage
from politecrawl.engine.admission import Admission
from politecrawl.engine.context import CrawlContext
from politecrawl.engine.journal import Summary, summary_of, write_summary
from politecrawl.engine.partition import IDLE_POLL_S, Partition
from politecrawl.engine.readmit import resume
from politecrawl.engine.signals import stop_on_signals
from politecrawl.engine.turn import take_turn
from politecrawl.errors import FrontierError, StorageError
from politecrawl.focus.relevance import NuggetFunction
from politecrawl.frontier import Backend
from politecrawl.handler import PageHandler
from politecrawl.net.fetch import Fetcher
from politecrawl.robots.cache import RobotsCache
from politecrawl.storage.sinks import Sink
from politecrawl.tools.dashboard import Dashboard, fmt_duration

__all__ = ["Crawler", "Summary"]

log = logging.getLogger("politecrawl")

_FLUSH_S = 1.0
_SEED_PRIORITY = 2.0  # above any link's: the seeds first, whatever the strategy
_FOCUS_SAVE_S = 60.0
# ``--concurrency`` bounds the turns in flight so the crawler's CPU, memory and sockets stay
# bounded; it is not there to hold live sites back. A turn whose request has waited
# ``politeness.SLOW_ANSWER_S`` stops counting against it (another site is leased), up to this many
# times ``--concurrency`` turns in all: a hung request costs a socket and a timer. Without it,
# the slice of the documentation bed with its 137 outside hosts connecting but never answering
# took 64 s for 200 pages breadth-first and 55 s focused, against 3.6 s when they refuse at
# once; with it, 4.8 s and 3.6 s (tests/test_focus_stall.py). Politeness is the frontier's
# leases (one request per site and per IP), untouched.
_SLOW_ROOM = 4
# at a stop (``--max-pages``, Ctrl-C, SIGTERM), the turns still in flight get this long to end;
# then their requests are cut (logged ``cut``, queued again for a resume), as at ``--max-time``:
# a crawl that has its pages, or was asked to stop, does not wait out the timeouts (20 s read,
# 60 s a request) of servers that never answer
_FINISH_GRACE_S = 2.0
# a crawl with nothing it may ask for this long (its sites parked, backing off...) says so, at
# most once per ``_IDLE_SAY_EVERY_S``: without a dashboard a parked site's hour was silent
_IDLE_SAY_AFTER_S = 60.0
_IDLE_SAY_EVERY_S = 600.0


def _sites(n: int) -> str:
    return f"{n} site" if n == 1 else f"{n} sites"


class Crawler:
    """A polite crawl of ``config``; ``await Crawler(config).run()`` returns its summary.

    ``on_page``: a page handler (``handler``; default: ``config.handler`` imported), whose
    items go to ``OUT/items.jsonl``. ``relevance``: a nugget function, instead of
    ``config.relevance``/``config.topic``. ``sinks``: more destinations for the kept pages
    and items, beside ``pages.jsonl`` and ``items.jsonl`` (``sinks.Sink``). ``frontier``:
    the queues and store to crawl from (``frontier.Backend``), instead of the ones
    ``config`` names (``frontier.factory.make_frontier``). ``notify``: what a resume says.
    """

    def __init__(
        self,
        config: CrawlConfig,
        *,
        clock: Callable[[], float] = time.time,
        on_page: PageHandler | None = None,
        relevance: NuggetFunction | None = None,
        sinks: Iterable[Sink] = (),
        frontier: Backend | None = None,
        partition: Partition | None = None,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        self.cfg = config  # (its seeds canonical: ``CrawlConfig`` makes them so, once)
        self.clock = clock
        self._stop = asyncio.Event()
        self._wake: asyncio.Event | None = None
        self._stopped_by = "done"
        self._started = 0.0
        self.fatal: str | None = None
        self.notify, self.nothing_left = notify or log.info, False  # see ``readmit.resume``
        self.ctx = CrawlContext(
            config,
            clock=clock,
            stop=self.stop,
            storage_failed=self._storage_failed,
            on_page=on_page,
            relevance=relevance,
            sinks=sinks,
            frontier=frontier,
            partition=partition,
        )
        self.partition = partition
        self._max_turns = config.concurrency * _SLOW_ROOM  # slow requests' turns included
        self._rescoring: asyncio.Task[None] | None = None
        self._probing: asyncio.Task[None] | None = None
        self._last_focus_save = time.monotonic()
        self._idle_said = -_IDLE_SAY_EVERY_S

    # the parts a caller may look at
    @property
    def frontier(self) -> Backend:
        return self.ctx.frontier

    @property
    def counters(self) -> Counter[str]:
        return self.ctx.counters

    @property
    def admission(self) -> Admission:
        return self.ctx.admission

    @property
    def robots(self) -> RobotsCache:
        return self.ctx.robots

    @property
    def progress(self) -> Dashboard | None:
        return self.ctx.progress

    # -- the loop -------------------------------------------------------------------------
    def stop(self, why: str = "interrupted") -> None:
        """Finish in-flight requests, save, and return (Ctrl-C, SIGTERM, limits). A request
        still unanswered ``_FINISH_GRACE_S`` after the stop is cut (logged ``cut``, queued
        again for a resume), at ``--max-time`` at once, so the crawl ends within seconds
        whatever a server does (``docker stop`` kills 10 s after its SIGTERM)."""
        if not self._stop.is_set():
            self._stopped_by = why
            self._stop.set()
            fetcher = getattr(self.ctx, "fetcher", None)
            if why == "max_time" and fetcher is not None:
                fetcher.cut()
            if self.partition is not None:
                self.partition.request_stop(why)  # one stops, all stop
            if self._wake is not None:
                self._wake.set()

    async def seed(self) -> int:
        """Only admit the seeds (``politecrawl seed``): no request is made."""
        ctx = self.ctx
        async with Fetcher(self.cfg.fetch, ctx.never.refuses_address) as ctx.fetcher:
            queued = await ctx.admission.admit([(seed, _SEED_PRIORITY) for seed in self.cfg.seeds])
        await ctx.store.flush()
        await ctx.store.close()
        for close in ctx.closers():
            close()
        ctx.lock.release()
        return len(queued)

    async def run(self) -> Summary:
        ctx = self.ctx
        self._started = self.clock()
        self._wake = asyncio.Event()
        ctx.counters.update(await ctx.store.counters())
        ctx.counters.mark_saved()
        if (counted := getattr(ctx.store, "counters_from", None)) is not None:
            counted(ctx.counters.unsaved)  # SQLite: the counts in every commit of the state
        ctx.admission.gate.restore_host_counts(ctx.counters)
        tasks: set[asyncio.Task[None]] = set()
        last_flush = time.monotonic()
        if self.cfg.progress and sys.stderr.isatty():
            ctx.progress = Dashboard(self.cfg, clock=self.clock)
        progress = ctx.progress
        ctx.pool.start()
        part = self.partition
        async with Fetcher(self.cfg.fetch, ctx.never.refuses_address) as ctx.fetcher:
            if part is not None and (outbox := ctx.frontier.outbox) is not None:
                await part.open(ctx.admission, outbox, self._wake.set, self._storage_failed)
            await ctx.admission.admit([(seed, _SEED_PRIORITY) for seed in self.cfg.seeds])
            self.nothing_left = await resume(ctx, self.notify) and part is None
            with stop_on_signals(self._stop.is_set, self.stop):
                while not self._stop.is_set():
                    now = self.clock()
                    self._check_limits(now)
                    if ctx.never.maybe_reload(now):
                        ctx.counters["never_crawl_reloads"] += 1
                    wake = None
                    while self._room(tasks) and not self._stop.is_set():
                        if ctx.outage.paused:  # the crawler's own network looks down: no turn
                            self._probe(now)
                            wake = ctx.outage.next_probe
                            break
                        lease = await ctx.frontier.lease(now)  # the lease: one turn per key
                        if lease.host is None:
                            wake = lease.wake
                            break
                        task = asyncio.create_task(take_turn(ctx, lease.host))
                        tasks.add(task)
                        task.add_done_callback(self._task_done(tasks))
                    if not tasks and wake is None:
                        if part is None or part.finished():
                            break
                        wake = now + IDLE_POLL_S  # links from the others may come
                    elif not tasks and wake is not None:
                        await self._say_idle(now, wake)
                    if not self._room(tasks):
                        # full: a finished turn, or the flush tick (a request turned slow)
                        wake = None
                    timeout = _FLUSH_S if wake is None else min(_FLUSH_S, max(0.0, wake - now))
                    self._wake.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), timeout)
                    if time.monotonic() - last_flush >= _FLUSH_S:
                        with self._saving():
                            await self._housekeeping()
                            await self._flush()
                        last_flush = time.monotonic()
                        if progress:
                            await progress.show(
                                ctx.counters, ctx.store, ctx.harvest(), ctx.pages_this_run
                            )
                if tasks:  # any stop: a grace for the answers on their way, then the cut
                    _, late = await asyncio.wait(tasks, timeout=_FINISH_GRACE_S)
                    if late:
                        ctx.fetcher.cut()
                if tasks:
                    await asyncio.gather(*tasks, return_exceptions=True)
                if self._probing is not None:
                    self._probing.cancel()
            if part is not None:
                await part.close(ctx.counters)
        if progress:
            await progress.done(ctx.counters, ctx.store, ctx.harvest(), ctx.pages_this_run)
        return await self._finish()

    async def _say_idle(self, now: float, wake: float) -> None:
        """Nothing may be asked before ``wake``: if long, say why (no dashboard). Sites leased or
        waiting for an IP held are others' turns (``wake``: a dead worker's bound), not idle."""
        if self.ctx.progress is not None or wake - now < _IDLE_SAY_AFTER_S:
            return
        if time.monotonic() - self._idle_said < _IDLE_SAY_EVERY_S:
            return
        stats = await self.ctx.store.stats()
        if stats.get("in_flight", 0) or stats.get("waiting_for_ip", 0):
            self._idle_said = time.monotonic() - _IDLE_SAY_EVERY_S + _IDLE_SAY_AFTER_S
            return  # (looked at again in a minute)
        parked = stats.get("parked", 0)
        waiting = max(0, stats.get("hosts_waiting", 0) - stats.get("ready", 0) - parked)
        if parked + waiting == 0:
            return
        self._idle_said = time.monotonic()
        log.warning(
            "nothing may be asked for %s: %s parked after failures in a row, %s waiting "
            "(their delay, backoff, Retry-After or Crawl-delay); the crawl waits for them "
            "(--max-time or Ctrl-C stops it, and a resume goes on)",
            fmt_duration(wake - now), _sites(parked), _sites(waiting),
        )

    def _room(self, tasks: set[asyncio.Task[None]]) -> bool:
        """Whether another site may take a turn: fewer than ``--concurrency`` turns but those
        whose request is slow (``Fetcher.slow``), and fewer than ``_SLOW_ROOM`` times as many
        in all."""
        n = len(tasks)
        if n < self.cfg.concurrency:
            return True  # (the usual case: no count of the slow ones needed)
        return n < self._max_turns and n - self.ctx.fetcher.slow() < self.cfg.concurrency

    def _task_done(self, tasks: set[asyncio.Task[None]]) -> Callable[[asyncio.Task[None]], None]:
        def done(task: asyncio.Task[None]) -> None:
            tasks.discard(task)
            if self._wake is not None:
                self._wake.set()

        return done

    def _probe(self, now: float) -> None:
        """During an outage: probe the network when due (one probe at a time), and wake the
        loop when it is back."""
        ctx = self.ctx
        if not ctx.outage.due(now) or (self._probing is not None and not self._probing.done()):
            return
        reach = outage.reach(ctx.resolved, ctx.name_answers, self.cfg.fetch.connect_timeout_s)

        async def probe() -> None:
            began, confirmed = ctx.outage.since, ctx.outage.active
            if await ctx.outage.probe(reach, self.clock()):
                if confirmed:
                    ctx.counters["outages"] += 1
                    ctx.counters["outage_ms"] += round((self.clock() - began) * 1000)
                else:
                    ctx.counters["outage_false_alarms"] += 1
            if self._wake is not None:
                self._wake.set()

        self._probing = asyncio.create_task(probe())

    def _check_limits(self, now: float) -> None:
        pages = self.ctx.pages_this_run
        if self.partition is not None:  # the limits are the crawl's; a stop in one stops all
            pages = self.partition.pages(pages, self.stop)
        if self.cfg.max_pages is not None and pages >= self.cfg.max_pages:
            self.stop("max_pages")
        elif self.cfg.max_time_s is not None and now - self._started >= self.cfg.max_time_s:
            self.stop("max_time")

    async def _housekeeping(self) -> None:
        """Once a second: frontier cap, background re-scoring, saving what was learned."""
        ctx = self.ctx
        if self.cfg.max_queue is not None:
            n = await ctx.frontier.trim(self.cfg.max_queue)
            ctx.counters["queue_full"] += n
        if ctx.focus.rescore_due() and (self._rescoring is None or self._rescoring.done()):
            self._rescoring = asyncio.create_task(ctx.rescore())
        if time.monotonic() - self._last_focus_save > _FOCUS_SAVE_S:
            self._last_focus_save = time.monotonic()
            ctx.save_focus()
            ctx.continuity.save()

    async def _flush(self) -> None:
        """WARC first: a page counts as stored in the frontier only once its records are
        with the OS, never the other way round."""
        ctx = self.ctx
        ctx.warc.flush()
        delta = ctx.counters.unsaved()  # before the await: what turns add meanwhile goes next
        if delta:
            await ctx.store.add_counters(delta)
        await ctx.store.flush()
        ctx.continuity.flush()
        if ctx.metrics is not None:
            ctx.metrics.frontier(await ctx.store.stats())
        if self.partition is not None:
            self.partition.saved()  # the links the others sent are saved: they may forget them

    def _storage_failed(self, exc: Exception) -> None:
        """Disk full, I/O error: stop cleanly; the first error is the one reported."""
        self.ctx.counters["error:storage"] += 1
        if self.fatal is not None:
            log.debug("storage error again: %s", exc)
            return
        log.error("stopping: %s", exc)
        self.fatal = str(exc)
        self.stop("storage_error")
        self._stopped_by = "storage_error"  # even if already stopping: the save is what failed

    @contextlib.contextmanager
    def _saving(self) -> Iterator[None]:
        """One saving step: a storage error stops the crawl, and the next step still runs."""
        try:
            yield
        except (StorageError, FrontierError, OSError) as exc:
            self._storage_failed(exc)

    async def _finish(self) -> Summary:
        """Save and close every store, each on its own: one that fails must not leave the
        others open or the summary unwritten (the next run resumes from what was saved)."""
        ctx = self.ctx
        if self._rescoring is not None:
            with self._saving():
                await self._rescoring
        with self._saving():
            ctx.save_focus()
        with self._saving():
            await self._flush()
        queued_left = -1  # unknown: the frontier could not say
        with self._saving():
            queued_left = (await ctx.store.stats())["queued"]
        with self._saving():
            ctx.remember_losses()
        with self._saving():
            await ctx.count_left()
        with self._saving():
            ctx.warc.close()
        with self._saving():
            await ctx.store.close()
        for close in ctx.closers():
            with self._saving():
                close()
        with self._saving():
            ctx.continuity.close()
        ctx.close_pool()
        ctx.lock.release()
        summary = summary_of(
            ctx.summary_counters(),
            seconds=self.clock() - self._started,
            queued_left=queued_left,
            stopped_by=self._stopped_by,
            sites_lost=ctx.losses.report(ctx.queued_of, self.clock()),
        )
        with self._saving():
            write_summary(self.cfg.out_dir / ctx.tagged("summary.json"), summary)
        summary.stopped_by = self._stopped_by
        return summary
