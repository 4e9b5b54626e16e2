"""What every step of a turn works with: the crawl's stores, logs and counters, opened once.

``Crawler`` builds one ``CrawlContext`` and hands it to each step of a turn (``turn``,
``robots.gate``, ``request``, ``keep``, ``journal``); a step takes exactly the parts it
needs from it, and a test can build one to run a step alone. Opening order matters: the
user's handler is imported first (a bad import string leaves nothing behind), then
``/metrics`` is served (a port taken leaves nothing behind either), then the output folder
is locked (one live crawl per folder), then the stores are opened.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from socket import AF_UNSPEC
from typing import Any

from yarl import URL

from politecrawl.config import CrawlConfig
from politecrawl.continuity.tracker import Continuity
from politecrawl.engine.admission import Admission, Gate
from politecrawl.engine.journal import Counts, trap_found
from politecrawl.engine.losses import GIVEN_UP_OUTCOMES, Losses
from politecrawl.engine.metrics import Metrics
from politecrawl.engine.metrics import serve as serve_metrics
from politecrawl.engine.outage import OutageGuard
from politecrawl.engine.partition import Partition, tagged
from politecrawl.engine.workpool import WorkPool
from politecrawl.errors import ConfigError, StorageError
from politecrawl.focus.relevance import NuggetFunction
from politecrawl.focus.strategy import Focus
from politecrawl.frontier import Backend, CrawlStore
from politecrawl.frontier.factory import make_frontier
from politecrawl.handler import PageHandler, load_handler
from politecrawl.net.fetch import Fetcher
from politecrawl.polite.exclusions import NeverCrawlList
from politecrawl.polite.usage import Purpose, UsageBook
from politecrawl.robots.cache import RobotsCache
from politecrawl.storage import JsonlLog, WarcWriter, log_time
from politecrawl.storage.logs import iter_log_records
from politecrawl.storage.outdir import check_state, record_seeds
from politecrawl.storage.outlock import OutputLock
from politecrawl.storage.sinks import ContentLog, ItemsCsv, ItemsJson, ItemsLog, PagesLog, Sink
from politecrawl.storage.uncommitted import drop_rows_of
from politecrawl.tools.dashboard import Dashboard
from politecrawl.urls.canonical import origin_of, politeness_key
from politecrawl.urls.traps import cut_counter
from politecrawl.version import __version__

_MAX_IPS = 1_000_000  # origins whose address is remembered before the cache starts over

_log = logging.getLogger("politecrawl")


class _Held:
    """The output folder's lock when another process (the partitions' supervisor) holds it."""

    def release(self) -> None:
        pass


class CrawlContext:
    """The crawl's shared state. ``stop`` and ``storage_failed`` are the crawler's own: a
    step asks the crawl to stop, or reports a failed save, through them."""

    fetcher: Fetcher  # set by Crawler.run/seed while the session is open

    def __init__(
        self,
        config: CrawlConfig,
        *,
        clock: Callable[[], float],
        stop: Callable[[str], None],
        storage_failed: Callable[[Exception], None],
        on_page: PageHandler | None = None,
        relevance: NuggetFunction | None = None,
        sinks: Iterable[Sink] = (),
        frontier: Backend | None = None,
        partition: Partition | None = None,
    ) -> None:
        self.cfg = config
        self.partition = partition
        self.clock = clock
        self.stop = stop
        self.storage_failed = storage_failed
        # the user's handler first: a bad import string leaves nothing behind
        self.on_page = on_page or (load_handler(config.handler) if config.handler else None)
        self.token = config.fetch.product_token
        # then /metrics: a port taken is refused before the folder is touched
        self.metrics: Metrics | None = None
        self._metrics_server: Any = None
        if config.metrics:  # a partition's are summed and served by its supervisor
            self.metrics = Metrics()
            if self.partition is None:
                self._metrics_server = serve_metrics(config.metrics, self.metrics.registry)
        try:
            self.lock: OutputLock | _Held = self._lock_folder(config.out_dir)
        except BaseException:  # a folder locked or unwritable: nothing left serving
            self.close_metrics()
            raise
        try:
            self._open(config, relevance, sinks, frontier)
        except BaseException:
            self.lock.release()  # a store that cannot be opened leaves the folder free
            self.close_metrics()
            raise

    def _lock_folder(self, out: Path) -> OutputLock | _Held:
        """One live crawl per folder; released by Crawler._finish (a partition's supervisor
        holds it for the partitions)."""
        try:
            out.mkdir(parents=True, exist_ok=True)
            (out / "log").mkdir(exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create the output folder {out}: {exc.strerror}") from exc
        return _Held() if self.partition is not None else OutputLock(out)

    def _open(
        self,
        config: CrawlConfig,
        relevance: NuggetFunction | None,
        sinks: Iterable[Sink],
        frontier: Backend | None,
    ) -> None:
        out = config.out_dir
        self.pool = WorkPool(config.processes)  # workers start with the crawl (Crawler.run)
        self.worker_cpu_s = 0.0  # CPU of the page work done in worker processes
        record_seeds(out, config.seeds)  # every run's seeds (segment build reads them)
        ips = self.partition.ips if self.partition is not None else None
        if config.politeness.ip_min_delay_s is None:
            ips = None  # no IP rule
        if frontier is None and not config.frontier_url:  # an earlier crawl's output, no state
            check_state(out, self.partition.index if self.partition is not None else 0)
        self.frontier: Backend = frontier or make_frontier(config, self.tagged("state.sqlite"), ips)
        if self.partition is not None and self.frontier.outbox is None:
            raise ConfigError("--processes N > 1 partitions the embedded frontier only")
        self.store: CrawlStore = self.frontier.store
        rule = config.politeness
        if rule.ip_min_delay_s is not None and rule.key_mode != "ip":  # (ip: the key is it)
            self.frontier.addresses = self.connects_to  # the IP rule follows moving hosts
        self.counters = Counts()  # saved with every commit of the state (SQLite)
        # a shared crawl's worker: the sites it sent requests to (its summary's ``hosts``)
        self.contacted: set[str] | None = set() if config.frontier_url else None
        self.rng = random.Random()
        self.sitemaps_per_host: Counter[str] = Counter()
        self.pages_this_run = 0
        self.progress: Dashboard | None = None  # the live dashboard, on a terminal
        board = self.partition.outage if self.partition is not None else None
        self.outage = OutageGuard(board=board)  # the crawler's own network, told from a site's
        self.losses = Losses()  # the sites parked or given up, for the summary
        self._left: dict[str, int] = {}  # parked site -> URLs left (count_left)
        self.never = NeverCrawlList(config.exclude_file, config.exclude_check_s)
        self._ips: dict[str, str | None] = {}
        fetch = config.fetch
        self.robots = RobotsCache(
            self.store,
            config.robots_ttl_s,
            retry_s=fetch.retry_base_s,
            retry_max_s=fetch.retry_max_wait_s,
            attempts=(fetch.max_attempts, fetch.transient_attempts),
        )
        logs: dict[str, Any] = {
            "rotate_bytes": config.log_rotate_bytes,
            "retention_days": config.log_retention_days,
        }
        log = out / "log"
        self.request_log = JsonlLog(log / self.tagged("requests.jsonl"), **logs)
        # what this run is for, first in the request log: a complaint is answered from it
        self.request_log.write(
            {
                "time": log_time(self.clock()),
                "record": "header",
                "user_agent": config.fetch.user_agent,
                "purpose": config.purpose,
            }
        )
        self.usage = UsageBook(Purpose(config.purpose), self.token)
        self.refusing_sites: set[str] = set()  # origins whose whole site refuses the purpose
        self.robots_log = JsonlLog(log / self.tagged("robots.jsonl"), **logs)
        self.warc = WarcWriter(
            out / "warc",
            f"politecrawl/{__version__}",
            config.fetch.user_agent,
            config.warc_max_bytes,
            prefix=self.tagged("politecrawl"),
        )
        self.focus = Focus.from_options(
            config.strategy, config.topic, relevance if relevance is not None else config.relevance
        )
        self.focus_path = out / self.tagged("focus.json")
        self.focus.load(self.focus_path)
        self.relevant_pages()  # (the others' target counts this partition's at once)
        # the crawl's data, not logs: pages.jsonl rotates (its readers read every part) but
        # never expires; items and content are one file each, never rotated
        pages = out / self.tagged("pages.jsonl")
        self._drop_uncommitted([pages, self._items_path(), out / self.tagged("content.jsonl")])
        self.pages_log = JsonlLog(pages, rotate_bytes=config.log_rotate_bytes, retention_days=None)
        self.sinks: list[Sink] = [PagesLog(self.pages_log)]
        if self.on_page is not None:
            self.sinks.append(self._items_sink())
        self.sinks += sinks
        self.keep_tree = len(self.sinks) > 1  # a handler or a user's sink sees the whole tree
        if config.extract:  # reads page.text, not the tree
            content = JsonlLog(out / self.tagged("content.jsonl"), rotate=False)
            self.sinks.append(ContentLog(content, config.extract))
        if (sizes_from := getattr(self.store, "sizes_from", None)) is not None:
            data = [s.log for s in self.sinks if isinstance(s, PagesLog | ItemsLog | ContentLog)]
            sizes_from(lambda: {self._data_name(d.path): d.size for d in data})
        self.continuity = Continuity(
            out,
            recrawl=config.recrawl,
            revisit_min_s=config.revisit_min_s,
            revisit_max_s=config.revisit_max_s,
            rules_log=JsonlLog(log / self.tagged("rules.jsonl"), **logs),
            name=self.tagged("continuity.sqlite"),
        )
        self.traps_log = JsonlLog(log / self.tagged("traps.jsonl"), **logs)
        self.links_log = JsonlLog(log / self.tagged("links.jsonl"), **logs)  # segment fetches
        on_trap = functools.partial(
            trap_found, self.counters, self.traps_log, self.clock, config.max_urls_per_pattern
        )
        self.admission = Admission(
            self.frontier,
            self.store,
            Gate.from_config(config, self.never, on_trap),
            config.politeness.key_mode,
            self.counters,
            self.ip_of,
            self.continuity.rewrite,  # learned duplicate-URL rules: variants never fetched
            ip_rule=config.politeness.ip_min_delay_s is not None,
            router=self.partition,
            remember_refused=kept.note_refused if (kept := self.frontier.refusals) else None,
            resolve_ahead=self.resolve_ahead,
        )
        # traps an earlier run named stay named: judged from zero, each had another budget
        for named in self.admission.gate.spaces.remember(iter_log_records(log, "traps")):
            self.counters[cut_counter(*named)] += 0  # named in this run's summary too

    def _items_path(self) -> Path:
        """``--items`` or ``OUT/items.jsonl``, tagged with the process (``@i``)."""
        path = self.cfg.items_file or self.cfg.out_dir / "items.jsonl"
        return path.with_name(self.tagged(path.name))

    def _data_name(self, path: Path) -> str:
        """A data file's name in the state: relative to OUT when in it (OUT may move)."""
        return path.name if path.parent == self.cfg.out_dir else str(path.resolve())

    def _drop_uncommitted(self, files: list[Path]) -> None:
        """A resume after a crash: the rows of the pages it fetches again, written by the
        run that died before committing them, are dropped (``storage.uncommitted``)."""
        refetched = getattr(self.frontier, "refetched", None)
        starts = getattr(self.store, "output_starts", None)
        if not refetched or starts is None:
            return
        saved, urls = starts(), set(refetched)
        for path in files:
            start = saved.get(self._data_name(path))
            if start is not None and (n := drop_rows_of(path, start, urls)):
                _log.info("resuming: %d rows of %s were of pages fetched again now: dropped",
                         n, path.name)  # fmt: skip

    def _items_sink(self) -> Sink:
        """``--items``: JSON lines, CSV or JSON, by the file's name; one file, never rotated."""
        path = self._items_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.suffix == ".csv":
                return ItemsCsv(path)
            if path.suffix == ".json":
                return ItemsJson(path)
        except OSError as exc:
            raise StorageError(f"cannot write the items to {path}: {exc.strerror}") from exc
        return ItemsLog(JsonlLog(path, rotate=False))

    async def rescore(self) -> None:
        """Queued URLs re-scored as the model changes, in chunks so the loop keeps moving."""
        await self.reprioritize(self.focus.rescore())

    async def reprioritize(self, items: list[tuple[str, float]]) -> None:
        """New priorities for queued ``(url, priority)``."""
        mode = self.cfg.politeness.key_mode
        for i in range(0, len(items), 2000):
            chunk = [(u, politeness_key(u, mode), p) for u, p in items[i : i + 2000]]
            self.counters["rescored"] += await self.frontier.reprioritize(chunk)
            await asyncio.sleep(0)

    def relevant_pages(self) -> int:
        """The relevant pages of the whole crawl, earlier runs' too: every partition's."""
        mine = self.focus.relevant_pages
        return self.partition.relevant(mine) if self.partition is not None else mine

    def target_met(self) -> bool:
        """``--target-relevant`` reached, counting the whole crawl's relevant pages."""
        target = self.cfg.target_relevant
        return target is not None and self.relevant_pages() >= target

    def claim_page(self) -> bool:
        """One more page request, if ``--max-pages`` allows it (over every partition)."""
        limit = self.cfg.max_pages
        if self.partition is not None:
            ok = self.partition.claim_page(self.pages_this_run, limit)
        else:
            ok = limit is None or self.pages_this_run < limit
        self.pages_this_run += ok
        return ok

    def save_focus(self) -> None:
        """What the focused strategy learned (``focus.json``), for the next run."""
        try:
            self.focus.save(self.focus_path)
        except OSError as exc:
            raise StorageError(f"cannot save {self.focus_path}: {exc}") from exc

    def tagged(self, name: str) -> str:
        """A file's name for this process (``partition.tagged``: as is with one process)."""
        return tagged(name, self.partition.index) if self.partition is not None else name

    def close_pool(self) -> None:
        """Stop the worker processes; what they did goes in the counters."""
        self.pool.close()
        if self.pool.offloaded:
            self.counters["pages_read_in_workers"] = self.pool.offloaded
            self.counters["pages_read_inline"] = self.pool.inline
            self.counters["worker_cpu_ms"] = round(self.worker_cpu_s * 1000)

    def closers(self) -> list[Callable[[], None]]:
        """The logs and sinks to close when the crawl ends (each on its own)."""
        return [
            self.request_log.close,
            self.robots_log.close,
            self.traps_log.close,
            self.links_log.close,
            *(s.close for s in self.sinks),
            self.close_metrics,
        ]

    def close_metrics(self) -> None:
        """Stop serving ``/metrics`` (the crawl is over)."""
        server, self._metrics_server = self._metrics_server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def resolve_ahead(self, origin: str) -> None:
        """Start the lookup of a queued site's name (``NameCache.prefetch``), so that its
        turn finds the answer cached; nothing before the session is open."""
        fetcher = getattr(self, "fetcher", None)
        if fetcher is None:
            return
        u = URL(origin)
        if u.host:
            fetcher.resolver.prefetch(u.host, u.port or 0)

    def resolve_before_next_turn(self, url: str, next_allowed: float) -> None:
        """The next turn of ``url``'s site (at ``next_allowed``, ``clock`` time) finds its
        name's answer fresh (``NameCache.keep_for``)."""
        fetcher = getattr(self, "fetcher", None)
        if fetcher is None:
            return
        u = URL(url)
        if u.host:
            fetcher.resolver.keep_for(u.host, u.port or 0, next_allowed - self.clock())

    def connects_to(self, url: str) -> tuple[str, ...] | None:
        """Where a request for ``url`` would connect now, without waiting
        (``GuardedResolver.current``); None while its name is looked up."""
        try:
            resolver = self.fetcher.resolver
        except AttributeError:
            return ()  # (no session open: nothing to ask)
        u = URL(url)
        return resolver.current(u.host or "", u.port or 0)

    async def ip_of(self, url: str) -> str | None:
        """The address a URL's host resolves to (cached per origin): the politeness key with
        ``--politeness-key ip``, else the IP rule's (see ``politeness``)."""
        origin = origin_of(url)
        if origin in self._ips:
            return self._ips[origin]
        ip: str | None = None
        u = URL(url)
        try:
            # (every family, in the order a connection tries them: its first is the IP's)
            found = await self.fetcher.resolver.resolve(u.host or "", u.port or 0, AF_UNSPEC)
            ip = str(found[0]["host"]) if found else None
        except OSError:
            ip = None  # unresolvable or refused: keyed by host; the fetch will say why
        if len(self._ips) > _MAX_IPS:
            self._ips.clear()
        self._ips[origin] = ip
        return ip

    def queued_of(self, key: str) -> int | None:
        """URLs a parked site left queued, as ``count_left`` found them (None: not counted)."""
        return self._left.get(key)

    async def count_left(self) -> None:
        """Before the frontier closes (the summary is written after): the URLs each parked
        site left queued, for ``queued_of``."""
        self._left = await self.frontier.queued_counts(self.losses.parked_keys())

    def summary_counters(self) -> Counter[str]:
        """The counters this run's summary gives. ``hosts_contacted`` counts each site at its
        first request ever (resumes included); in a shared crawl whichever worker sent it, so
        a worker that asked every site said ``hosts 0``: there, the sites it asked itself."""
        if self.contacted is None:
            return self.counters
        counts = Counter(self.counters)
        counts["hosts_contacted"] = len(self.contacted)
        return counts

    def remember_losses(self) -> None:
        """The sites given up in earlier runs too, and those parked then and still parked,
        when the frontier keeps them (SQLite)."""
        dropped = getattr(self.frontier, "dropped_sites", None)
        if callable(dropped):
            self.losses.remember(dropped(list(GIVEN_UP_OUTCOMES)))
        parked = getattr(self.store, "parked_now", None)
        if callable(parked):
            self.losses.remember_parked(parked(self.clock()))

    async def resolved(self, host: str, port: int) -> str | None:
        """One address of ``host`` through the crawl's own resolver (the outage probe's)."""
        found = await self.fetcher.resolver.resolve(host, port)
        return str(found[0]["host"]) if found else None

    async def name_answers(self, host: str, port: int) -> bool:
        """Whether DNS answers for ``host`` now, past the cache (the outage probe's)."""
        return await self.fetcher.resolver.answers(host, port)

    def harvest(self) -> float | None:
        """The share of relevant pages so far, when a nugget function scores them."""
        return self.focus.harvest_rate() if self.focus.nugget is not None else None
