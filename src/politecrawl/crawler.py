"""The asyncio engine: lease a ready site, take one step for it, give it back with its next time.

One URL's path is one function naming its steps (``_turn``): never-crawl check, robots,
fetch, classify, then store/parse/admit, re-queue, or drop. Each turn makes at most one
request for its politeness key, and the key is not leased again before the time
``politeness.schedule_next`` gave it, so nothing here sleeps per URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from yarl import URL

from politecrawl import politeness
from politecrawl.admission import HOST_URLS, Admission, Gate, canonical_seeds
from politecrawl.config import CrawlConfig
from politecrawl.continuity import Continuity, PageVerdict
from politecrawl.dashboard import Dashboard
from politecrawl.errors import FrontierError, LeaseLost, StorageError
from politecrawl.exclusions import NeverCrawlList
from politecrawl.fetch import Fetcher, FetchResult
from politecrawl.focus import Focus
from politecrawl.frontier import PAGE, SITEMAP, Frontier, UrlEntry
from politecrawl.frontier.factory import make_frontier
from politecrawl.handler import PageHandler, load_handler, run_handler
from politecrawl.outcome import (
    Drop,
    DropReason,
    NotModified,
    Redirect,
    Retry,
    Store,
    answered_normally,
    classify,
    outcome_label,
    refusal,
)
from politecrawl.outlock import OutputLock
from politecrawl.page import Page, read_response
from politecrawl.pagework import do_page_work
from politecrawl.relevance import NuggetFunction
from politecrawl.robotscache import RobotsCache, is_usable
from politecrawl.sinks import ItemRecord, ItemsLog, Kept, PageRecord, PagesLog, Sink
from politecrawl.sitemaps import parse_sitemap
from politecrawl.storage import JsonlLog, WarcWriter
from politecrawl.storage.warc import Capture, PackedExchange, payload_digest
from politecrawl.urls import (
    host_of,
    join,
    origin_of,
    politeness_key,
    robots_url,
)
from politecrawl.workpool import WorkPool

log = logging.getLogger("politecrawl")

_ROBOTS_MAX_HOPS = 5  # RFC 9309 2.3.1.2
_ROBOTS_GIVE_UP = 3  # unreachable robots.txt this many times: the site's URLs are dropped
_FLUSH_S = 1.0
_SITEMAP_PRIORITY = 1e9
_SEED_PRIORITY = 2.0  # above any link's: the seeds first, whatever the strategy
_FOCUS_SAVE_S = 60.0  # sitemaps first: they seed the site's pages


@dataclass(slots=True)
class Summary:
    """What ``summary.json`` holds."""

    pages_fetched: int
    requests: int
    stored: int
    robots_disallowed: int
    excluded: int
    extension_filtered: int
    redirects: int
    errors: dict[str, int]
    hosts: int
    seconds: float
    queued_left: int
    counters: dict[str, int]
    stopped_by: str

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


class Crawler:
    """A polite crawl of ``config``; ``await Crawler(config).run()`` returns its summary.

    ``on_page``: a page handler (``handler``; default: ``config.handler`` imported), whose
    items go to ``OUT/items.jsonl``. ``relevance``: a nugget function, instead of
    ``config.relevance``/``config.topic``. ``sinks``: more destinations for the kept pages
    and items, beside ``pages.jsonl`` and ``items.jsonl`` (``sinks.Sink``).
    """

    def __init__(
        self,
        config: CrawlConfig,
        *,
        clock: Callable[[], float] = time.time,
        on_page: PageHandler | None = None,
        relevance: NuggetFunction | None = None,
        sinks: Iterable[Sink] = (),
    ) -> None:
        # every seed in its canonical form, whoever gave it (API or CLI); a bad one is an error
        config = dataclasses.replace(config, seeds=canonical_seeds(config.seeds))
        self.cfg = config
        self.clock = clock
        # the user's handler first: a bad import string leaves nothing behind
        self.on_page = on_page or (load_handler(config.handler) if config.handler else None)
        self.token = config.fetch.product_token
        out = config.out_dir
        out.mkdir(parents=True, exist_ok=True)
        self._lock = OutputLock(out)  # one live crawl per folder; released in _finish
        self.pool = WorkPool(config.processes)  # workers start on first use; closed in _finish
        self.worker_cpu_s = 0.0  # CPU of the page work done in worker processes
        seeds_file = out / "seeds.txt"  # what this crawl started from (segments use it)
        if not seeds_file.exists():
            seeds_file.write_text("".join(f"{u}\n" for u in config.seeds), encoding="utf-8")
        self.frontier: Frontier = make_frontier(config)
        self.counters: Counter[str] = Counter()
        self._flushed: Counter[str] = Counter()
        self._rng = random.Random()
        self._sitemaps_per_host: Counter[str] = Counter()
        self.never = NeverCrawlList(config.exclude_file, config.exclude_check_s)
        self.admission = Admission(
            self.frontier,
            Gate.from_config(config, self.never),
            config.politeness.key_mode,
            self.counters,
            self._ip_of,
            ip_rule=config.politeness.ip_min_delay_s is not None,
        )
        self._ips: dict[str, str | None] = {}
        self.robots = RobotsCache(
            self.frontier, config.robots_ttl_s, retry_s=max(4 * config.politeness.min_delay_s, 0.5)
        )
        logs: dict[str, Any] = {
            "rotate_bytes": config.log_rotate_bytes,
            "retention_days": config.log_retention_days,
        }
        self.request_log = JsonlLog(out / "log" / "requests.jsonl", **logs)
        self.robots_log = JsonlLog(out / "log" / "robots.jsonl", **logs)
        from politecrawl import __version__

        self.warc = WarcWriter(
            out / "warc",
            f"politecrawl/{__version__}",
            config.fetch.user_agent,
            config.warc_max_bytes,
        )
        self.focus = Focus.from_options(
            config.strategy, config.topic, relevance if relevance is not None else config.relevance
        )
        self.focus.load(out / "focus.json")
        self.pages_log = JsonlLog(out / "pages.jsonl", **logs)
        self.sinks: list[Sink] = [PagesLog(self.pages_log)]
        if self.on_page is not None:
            self.sinks.append(ItemsLog(JsonlLog(out / "items.jsonl", **logs)))
        self.sinks += sinks
        self._keep_tree = len(self.sinks) > 1  # a handler or a user's sink sees the whole tree
        self.continuity = Continuity(
            out,
            recrawl=config.recrawl,
            revisit_min_s=config.revisit_min_s,
            revisit_max_s=config.revisit_max_s,
            rules_log=JsonlLog(out / "log" / "rules.jsonl", **logs),
        )
        self.admission.rewrite = self.continuity.rewrite
        self.traps_log = JsonlLog(out / "log" / "traps.jsonl", **logs)
        self.links_log = JsonlLog(out / "log" / "links.jsonl", **logs)  # segment fetches only
        self.admission.gate.spaces.on_trap = self._trap_found
        self._rescoring: asyncio.Task[None] | None = None
        self._last_focus_save = time.monotonic()
        self._stop = asyncio.Event()
        self._wake: asyncio.Event | None = None
        self._stopped_by = "done"
        self._started = 0.0
        self._pages_this_run = 0
        self.fatal: str | None = None
        self.progress: Dashboard | None = None  # the live dashboard, on a terminal

    # -- the loop -------------------------------------------------------------------------
    def stop(self, why: str = "interrupted") -> None:
        """Finish in-flight requests, save, and return (Ctrl-C, SIGTERM, limits)."""
        if not self._stop.is_set():
            self._stopped_by = why
            self._stop.set()
            if self._wake is not None:
                self._wake.set()

    async def seed(self) -> int:
        """Only admit the seeds (``politecrawl seed``): no request is made."""
        async with Fetcher(self.cfg.fetch) as self.fetcher:
            queued = await self.admission.admit([(seed, _SEED_PRIORITY) for seed in self.cfg.seeds])
        await self.frontier.flush()
        await self.frontier.close()
        for close in self._closers():
            close()
        self._lock.release()
        return len(queued)

    def _closers(self) -> list[Callable[[], None]]:
        return [
            self.request_log.close,
            self.robots_log.close,
            self.traps_log.close,
            self.links_log.close,
            *(s.close for s in self.sinks),
        ]

    async def run(self) -> Summary:
        self._started = self.clock()
        self._wake = asyncio.Event()
        self.counters.update(await self.frontier.counters())
        self._flushed = Counter(self.counters)
        self.admission.gate.restore_host_counts(self.counters)
        refetch = getattr(self.frontier, "refetches", 0)
        if refetch:
            log.info(
                "resuming: %d URLs were in flight at the last stop and will be re-fetched", refetch
            )
        tasks: set[asyncio.Task[None]] = set()
        last_flush = time.monotonic()
        if self.cfg.progress and sys.stderr.isatty():
            self.progress = Dashboard(self.cfg, clock=self.clock)
        progress = self.progress
        async with Fetcher(self.cfg.fetch) as self.fetcher:
            await self.admission.admit([(seed, _SEED_PRIORITY) for seed in self.cfg.seeds])
            with _signals(self):
                while not self._stop.is_set():
                    now = self.clock()
                    self._check_limits(now)
                    if self.never.maybe_reload(now):
                        self.counters["never_crawl_reloads"] += 1
                    while len(tasks) < self.cfg.concurrency and not self._stop.is_set():
                        key = await self.frontier.lease(now)
                        if key is None:
                            break
                        task = asyncio.create_task(self._turn(key))
                        tasks.add(task)
                        task.add_done_callback(self._task_done(tasks))
                    wake = await self.frontier.next_wake()
                    if not tasks and wake is None:
                        break
                    if len(tasks) >= self.cfg.concurrency:
                        wake = None  # full: only a finished turn (or the flush tick) matters
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
                                self.counters, self.frontier, self._harvest(), self._pages_this_run
                            )
                if tasks:
                    await asyncio.gather(*tasks, return_exceptions=True)
        if progress:
            await progress.done(self.counters, self.frontier, self._harvest(), self._pages_this_run)
        return await self._finish()

    async def _ip_of(self, url: str) -> str | None:
        """The address a URL's host resolves to (cached per origin): the politeness key with
        ``--politeness-key ip``, else the IP rule's (see ``politeness``)."""
        origin = origin_of(url)
        if origin in self._ips:
            return self._ips[origin]
        ip: str | None = None
        u = URL(url)
        try:
            found = await self.fetcher.resolver.resolve(u.host or "", u.port or 0)
            ip = str(found[0]["host"]) if found else None
        except OSError:
            ip = None  # unresolvable or refused: keyed by host; the fetch will say why
        if len(self._ips) > 1_000_000:
            self._ips.clear()
        self._ips[origin] = ip
        return ip

    def _harvest(self) -> float | None:
        return self.focus.harvest_rate() if self.focus.nugget is not None else None

    def _task_done(self, tasks: set[asyncio.Task[None]]) -> Callable[[asyncio.Task[None]], None]:
        def done(task: asyncio.Task[None]) -> None:
            tasks.discard(task)
            if self._wake is not None:
                self._wake.set()

        return done

    def _check_limits(self, now: float) -> None:
        if self.cfg.max_pages is not None and self._pages_this_run >= self.cfg.max_pages:
            self.stop("max_pages")
        elif self.cfg.max_time_s is not None and now - self._started >= self.cfg.max_time_s:
            self.stop("max_time")

    async def _housekeeping(self) -> None:
        """Once a second: frontier cap, background re-scoring, saving what was learned."""
        if self.cfg.max_queue is not None:
            n = await self.frontier.trim(self.cfg.max_queue)
            self.counters["queue_full"] += n
        if self.focus.rescore_due() and (
            self._rescoring is None or self._rescoring.done()
        ):
            self._rescoring = asyncio.create_task(self._rescore())
        if time.monotonic() - self._last_focus_save > _FOCUS_SAVE_S:
            self._last_focus_save = time.monotonic()
            self._save_focus()
            self.continuity.save()

    async def _rescore(self) -> None:
        """Queued URLs re-scored as the model changes, in chunks so the loop keeps moving."""
        items = self.focus.rescore()
        mode = self.cfg.politeness.key_mode
        for i in range(0, len(items), 2000):
            chunk = [(u, politeness_key(u, mode), p) for u, p in items[i : i + 2000]]
            self.counters["rescored"] += await self.frontier.reprioritize(chunk)
            await asyncio.sleep(0)

    def _save_focus(self) -> None:
        path = self.cfg.out_dir / "focus.json"
        try:
            self.focus.save(path)
        except OSError as exc:
            raise StorageError(f"cannot save {path}: {exc}") from exc

    async def _flush(self) -> None:
        """WARC first: a page counts as stored in the frontier only once its records are
        with the OS, never the other way round."""
        self.warc.flush()
        delta = {k: v - self._flushed[k] for k, v in self.counters.items() if v != self._flushed[k]}
        if delta:
            await self.frontier.add_counters(delta)
            self._flushed = Counter(self.counters)
        await self.frontier.flush()
        self.continuity.flush()

    def _storage_failed(self, exc: Exception) -> None:
        """Disk full, I/O error: stop cleanly; the first error is the one reported."""
        self.counters["error:storage"] += 1
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
        if self._rescoring is not None:
            with self._saving():
                await self._rescoring
        with self._saving():
            self._save_focus()
        with self._saving():
            await self._flush()
        queued_left = -1  # unknown: the frontier could not say
        with self._saving():
            queued_left = (await self.frontier.stats())["queued"]
        with self._saving():
            self.warc.close()
        with self._saving():
            await self.frontier.close()
        for close in self._closers():
            with self._saving():
                close()
        with self._saving():
            self.continuity.close()
        self.pool.close()
        if self.pool.offloaded:
            self.counters["pages_read_in_workers"] = self.pool.offloaded
            self.counters["pages_read_inline"] = self.pool.inline
            self.counters["worker_cpu_ms"] = round(self.worker_cpu_s * 1000)
        self._lock.release()
        c = self.counters
        summary = Summary(
            pages_fetched=c["pages_fetched"],
            requests=c["requests"],
            stored=c["stored"],
            robots_disallowed=c[DropReason.ROBOTS.value],
            excluded=c[DropReason.EXCLUDED.value],
            extension_filtered=c[DropReason.EXTENSION.value],
            redirects=c["redirects"],
            errors={k[6:]: v for k, v in sorted(c.items()) if k.startswith("error:")},
            hosts=c["hosts_contacted"],
            seconds=round(self.clock() - self._started, 3),
            queued_left=queued_left,
            counters={k: v for k, v in sorted(c.items()) if not k.startswith(HOST_URLS)},
            stopped_by=self._stopped_by,
        )
        path = self.cfg.out_dir / "summary.json"
        tmp = path.with_suffix(".json.tmp")
        with self._saving():
            tmp.write_text(json.dumps(summary.to_json(), indent=2) + "\n")
            tmp.replace(path)
        summary.stopped_by = self._stopped_by
        return summary

    # -- one turn of one site ---------------------------------------------------------------
    async def _turn(self, key: str) -> None:
        """At most one request for ``key``; always releases the lease."""
        host = await self.frontier.host(key)
        made_request = False
        try:
            made_request = await self._step(key, host)
        except LeaseLost as exc:  # our lease expired (we were too slow): nothing to release
            log.warning("lease on %s lost: %s", key, exc)
            self.counters["leases_lost"] += 1
            return
        except (StorageError, FrontierError) as exc:  # disk full, I/O error: stop cleanly
            self._storage_failed(exc)
        except Exception:  # the one broad catch: log, classify, keep crawling
            log.exception("internal error on %s", key)
            self.counters["error:internal"] += 1
        if made_request:
            politeness.schedule_next(host, self.cfg.politeness, self._rng)
        await self.frontier.release(key, host)

    async def _step(self, key: str, host: politeness.HostState) -> bool:
        """Never-crawl list, robots.txt, then one fetch: the order is the policy."""
        now = self.clock()
        if self.never.maybe_reload(now):  # cheap unless a check is due
            self.counters["never_crawl_reloads"] += 1
        while (entry := await self.frontier.pop_url(key, now)) is not None:
            url = entry.url
            if self.never.excludes(host_of(url)):
                await self._drop(entry, DropReason.EXCLUDED)
                continue
            canonical = self.continuity.rewrite(url)
            if canonical != url:  # queued before a rule was learned: its canonical form instead
                await self._drop(entry, DropReason.DUPLICATE_URL)
                await self.admission.admit([(canonical, entry.priority)], depth=entry.depth)
                continue
            origin = origin_of(url)
            rules = await self.robots.rules_for(origin, now)
            if rules is None:
                await self.frontier.push_back(entry, front=True)
                await self._fetch_robots(origin, host)
                return True
            if not is_usable(self.robots.status(origin)) and not rules.is_allowed(self.token, url):
                # robots.txt unreachable: stay away, ask again later, give up after a few tries
                await self.frontier.push_back(entry, front=True)
                host.next_allowed = max(host.next_allowed, self.robots.retry_at(origin))
                if self.robots.unreachable_count(origin) >= _ROBOTS_GIVE_UP:
                    n = await self.frontier.drop_queued(key, "dropped:robots_unavailable")
                    self.counters[DropReason.ROBOTS_UNAVAILABLE.value] += n
                return False
            if not rules.is_allowed(self.token, url):
                await self._drop(entry, DropReason.ROBOTS)
                continue
            if self.cfg.max_pages is not None and self._pages_this_run >= self.cfg.max_pages:
                await self.frontier.push_back(entry, front=True)
                self.stop("max_pages")
                return False
            self._pages_this_run += 1
            attempt = entry.attempt
            try:
                await self._fetch_url(entry, host)
            except LeaseLost:
                raise  # another worker holds the site now; the URL was re-queued for it
            except (StorageError, FrontierError):
                # the disk failed, not the page: back in the queue for the next run, since
                # nothing half-written counts as stored (_fetch_url tells the frontier last)
                entry.attempt = attempt
                with contextlib.suppress(FrontierError):
                    await self.frontier.push_back(entry, front=True)
                raise
            except Exception:
                # nothing is lost: the URL is recorded with the failure, then we go on
                await self.frontier.finish(entry.url, "dropped:internal_error")
                raise
            return True
        return False

    async def _drop(self, entry: UrlEntry, reason: DropReason) -> None:
        self.counters[reason.value] += 1
        await self.frontier.finish(entry.url, f"dropped:{reason.value}")

    async def _fetch_robots(self, origin: str, host: politeness.HostState) -> None:
        """robots.txt under the site's own lease and delay; redirects followed up to 5 hops."""
        target, hops = self.robots.pending_redirect(origin) or (robots_url(origin + "/"), 0)
        res = await self._request(host, target, html_only=False)
        status = res.status if res.error is None and res.status is not None else 0
        location = res.header("location")
        if 300 <= status < 400 and location and hops < _ROBOTS_MAX_HOPS:
            nxt = join(target, location)
            if nxt is not None:
                await self.robots.record_redirect(origin, nxt, hops + 1, self.clock())
                self._log_request(res, "robots:redirect", 1, host)
                self._log_robots(origin, res, "redirect")
                return
        if 300 <= status < 400:
            status = 404  # too many hops: RFC 9309 2.3.1.2 treats it as unavailable
        if res.error in ("address_refused", "invalid_url"):
            # not a server failure: nothing of this origin can ever be fetched, so no retries
            self._log_request(res, f"dropped:{res.error}", 1, host)
            n = await self.frontier.drop_queued(host.key, f"dropped:{res.error}")
            self.counters[res.error] += n
            return
        if status == 429 or status >= 500 or status == 0:
            politeness.record_overload(host, self.cfg.politeness, self.clock(), None)
        rules = await self.robots.record(origin, status, res.body, self.clock())
        if is_usable(status):
            politeness.set_crawl_delay(host, rules.crawl_delay(self.token))
            if self.cfg.sitemaps and 200 <= status < 300:
                await self._admit_sitemaps(origin, rules.sitemaps)
        label = (
            "robots:ok"
            if 200 <= status < 300
            else "robots:none"
            if is_usable(status)
            else "robots:unreachable"
        )
        self.counters[label] += 1
        if label == "robots:unreachable" and not self.counters["pages_fetched"]:
            # nothing fetched yet: say why the crawl waits (the API has no other output)
            log.warning(
                "robots.txt of %s unreachable (%s); the site waits and is asked again later",
                origin,
                res.error_detail or res.error or f"HTTP {status}",
            )
        self._log_request(res, label, 1, host)
        self._log_robots(origin, res, label)

    async def _admit_sitemaps(self, origin: str, urls: list[str]) -> None:
        room = self.cfg.max_sitemaps_per_host - self._sitemaps_per_host[origin]
        if room <= 0 or not urls:
            return
        take = urls[:room]
        self._sitemaps_per_host[origin] += len(take)
        await self.admission.admit([(u, _SITEMAP_PRIORITY) for u in take], kind=SITEMAP, raw=True)

    async def _request(
        self,
        host: politeness.HostState,
        url: str,
        *,
        html_only: bool,
        extra_headers: dict[str, str] | None = None,
    ) -> FetchResult:
        """Every request the crawler makes passes here: politeness bookkeeping and counts."""
        if host.last_start == 0.0:
            self.counters["hosts_contacted"] += 1
        politeness.record_start(host, self.cfg.politeness, self.clock())
        await self.frontier.begin_request(host.key, host)  # on disk before the request goes
        politeness.record_start(host, self.cfg.politeness, self.clock())  # the real start
        res = await self.fetcher.fetch(url, html_only=html_only, extra_headers=extra_headers)
        politeness.record_end(host, self.clock())  # the next gap counts from here
        self.counters["requests"] += 1
        if res.status is not None and res.status >= 400:
            self.counters[f"error:http_{res.status}"] += 1
        if res.error is not None:
            self.counters[f"error:{res.error}"] += 1
        elif res.status is not None:
            politeness.record_response(
                host, self.cfg.politeness, res.duration_s, normal=answered_normally(res)
            )
        return res

    async def _refused(self, host: politeness.HostState, why: str) -> bool:
        """The site refused (``outcome.refusal``): pause it, or give it up. True if given up."""
        cfg = self.cfg.politeness
        done = politeness.record_refusal(host, cfg, self.clock())
        n = host.consecutive_refusals
        if done is politeness.Refused.PAUSED:
            self.counters["sites_paused"] += 1
            log.warning(
                "%s refused %d requests in a row (%s): paused for %.0f s",
                host.key,
                n,
                why,
                cfg.park_s,
            )
        elif done is politeness.Refused.GIVEN_UP:
            dropped = await self.frontier.drop_queued(
                host.key, f"dropped:{DropReason.SITE_REFUSED.value}"
            )
            self.counters["sites_given_up"] += 1
            self.counters[DropReason.SITE_REFUSED.value] += dropped + 1
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

    async def _fetch_url(self, entry: UrlEntry, host: politeness.HostState) -> None:
        known = await self.frontier.validators(entry.url) if entry.kind == PAGE else None
        conditional = {}
        if known is not None:  # conditional GET: an unchanged page costs the site a 304
            if known[0]:
                conditional["If-None-Match"] = known[0]
            if known[1]:
                conditional["If-Modified-Since"] = known[1]
        res = await self._request(
            host, entry.url, html_only=entry.kind == PAGE, extra_headers=conditional or None
        )
        entry.attempt += 1
        if res.status is not None:
            self.counters["pages_fetched" if entry.kind == PAGE else "sitemaps_fetched"] += 1
        outcome = classify(
            res,
            entry.attempt,
            self.cfg.fetch.max_attempts,
            max_retry_after_s=self.cfg.politeness.max_retry_after_s,
            retry_base_s=self.cfg.fetch.retry_base_s,
        )
        label = outcome_label(outcome)
        refused = refusal(res)
        if refused is not None and await self._refused(host, refused):
            outcome = Drop(DropReason.SITE_REFUSED, refused)  # the URL goes with its site
            label = outcome_label(outcome)
        due: float | None = None  # with --recrawl: when this page comes back
        if isinstance(outcome, Store):
            if entry.kind == SITEMAP:
                label = await self._read_sitemap(entry, res)
            else:
                label, due = await self._store(entry, res)
        elif isinstance(outcome, NotModified):
            self.counters["not_modified"] += 1
            due = self.continuity.on_not_modified(entry.url, now=res.started)
            # names the capture holding the content, so replay shows it, not an empty 304
            original = self.continuity.capture_of(entry.url)
            self.warc.write_revisit(res, profile="server-not-modified", original=original)
        elif isinstance(outcome, Redirect):
            self.counters["redirects"] += 1
            self.warc.write_exchange(res)
            await self._redirect(entry, outcome)
        elif isinstance(outcome, Retry):
            if outcome.overload:
                ra = outcome.after_s if res.header("retry-after") else None
                politeness.slow_down(host, self.cfg.politeness, self.clock(), ra)
            # a refusal (429, timeout) counts as one, not as a failure too
            parked = refused is None and politeness.record_failure(
                host, self.cfg.politeness, self.clock()
            )
            if parked:
                self.counters["hosts_parked"] += 1
                log.warning(
                    "%s failed %d times in a row: parked for %.0f s",
                    host.key,
                    host.consecutive_failures,
                    self.cfg.politeness.park_s,
                )
            entry.not_before = self.clock() + outcome.after_s
            self.counters["retries"] += 1
        else:
            if outcome.reason is not DropReason.SITE_REFUSED:  # counted by _refused
                self.counters[outcome.reason.value] += 1
            if res.status is not None and not res.abandoned:
                self.warc.write_exchange(res)
        if due is not None:  # a continuous crawl: back in the queue, due at its interval
            entry.not_before, entry.attempt, entry.refetch = due, 0, False
            self.counters["revisits_scheduled"] += 1
        self._log_request(
            res, label, entry.attempt, host, refetch=entry.refetch, revisit=known is not None
        )
        # the frontier last: a write error above leaves the URL for _step to put back
        if due is not None or isinstance(outcome, Retry):
            await self.frontier.push_back(entry)
        else:
            await self.frontier.finish(entry.url, label)

    async def _store(self, entry: UrlEntry, res: FetchResult) -> tuple[str, float | None]:
        """Read the page once, score it, recognise duplicates, store it, give it to the handler
        and the sinks, then admit the links it follows with priorities."""
        focus = self.focus
        scored = focus.nugget is not None
        sim: int | None = None  # the SimHash, when a worker process computed it with the page
        packed: PackedExchange | None = None  # and the WARC records, ready to append
        if self.pool.workers and not self._keep_tree:  # a tree cannot cross processes
            work = await self.pool.run(do_page_work, res, entry.url, self.token, entry.depth,
                                       score=scored)  # fmt: skip
            page, sim, packed = work.page, work.simhash, work.exchange
            if work.pid != os.getpid():
                self.worker_cpu_s += work.cpu_s
        else:
            page = await read_response(
                res, entry.url, self.token, entry.depth, score=scored, keep_tree=self._keep_tree
            )
        score = focus.score_page(entry.url, page.document)
        page.relevance = score.relevance
        etag, modified = res.header("etag"), res.header("last-modified")
        seen = self.continuity.on_page(
            entry.url,
            page.visible_text,
            page.canonical,
            digest=packed.capture.digest if packed else payload_digest(res.raw_body),
            now=res.started,
            etag=etag,
            last_modified=modified,
            sim=sim,
        )
        if seen.revisit:
            self.counters["revisits"] += 1
            self.counters["changes_seen"] += bool(seen.changed)
        kept: Kept | None = None
        record_id: str | None = None
        if seen.near_duplicate_of is not None:  # stored in full all the same, links followed
            self.counters["near_duplicates"] += 1
        if seen.duplicate_of is not None:
            # the very bytes of a page already stored: a revisit record, links not followed
            self.counters["duplicates"] += 1
            self.counters[f"duplicates:{host_of(entry.url)}"] += 1
            if not (page.directives.noindex or page.directives.noarchive):
                record_id = self._archive(entry.url, res, seen.original, packed)
            page.follow([])
            kept = "duplicate"
        elif page.directives.noindex:
            self.counters[DropReason.NOINDEX.value] += 1
        else:
            if page.directives.noarchive:  # the site asks for no archived copy: none kept
                self.counters["noarchive"] += 1
                kept = "noarchive"
            else:
                record_id = self._archive(entry.url, res, seen.original, packed)
                kept = "stored"
            self.counters["stored"] += 1
            if etag or modified:
                await self.frontier.save_validators(entry.url, etag, modified, res.started)
        items: list[dict[str, Any]] = []
        if self.on_page is not None and kept in ("stored", "noarchive"):
            items, error = await run_handler(self.on_page, page, record_id)
            self.counters["items"] += len(items)
            self.counters["handler_errors"] += error is not None
        if res.truncated:
            self.counters["truncated"] += 1
        if page.links_cut:
            self.counters["links_cut"] += page.links_cut
        if page.directives.nofollow:
            self.counters["nofollow_pages"] += 1
        self.counters["nofollow_links"] += sum(1 for link in page.links if link.nofollow)
        links = page.links_to_follow() if self.cfg.follow_links else []  # else: a segment fetch
        if focus.model is not None:  # features only for links not seen before
            fresh = set(await self.frontier.unseen([link.url for link in links]))
            links = [link for link in links if link.url in fresh]
        depth = entry.depth + 1
        if not self.cfg.follow_links:  # a segment fetch: the links go to the next segment
            self._record_links(entry.url, page.links_to_follow())
        link_items = focus.link_items(entry.url, links, depth, score)
        queued = await self.admission.admit(link_items, depth=depth, source=entry.url)
        if focus.model is not None and len(queued) < len(link_items):
            focus.forget([u for u, _ in link_items if u not in queued])
        if kept is not None:
            self._log_page(entry, res, page, kept, record_id, seen, len(links), items)
        if score.relevant:
            self.counters["relevant_pages"] += 1
            target = self.cfg.target_relevant
            if target is not None and focus.relevant_pages >= target:
                self.stop("target_relevant")
        if seen.duplicate_of is not None:
            return f"duplicate:{seen.duplicate_of}", seen.next_due
        return ("stored" if not page.directives.noindex else "dropped:noindex"), seen.next_due

    def _archive(
        self,
        url: str,
        res: FetchResult,
        original: Capture | None,
        packed: PackedExchange | None = None,
    ) -> str | None:
        """The response (``packed`` already, if a worker built it), or a revisit record when
        ``original`` holds these very bytes; returns the record id that holds the page's
        content (the original's for a revisit)."""
        if original is not None:
            self.warc.write_revisit(res, profile="identical-payload-digest", original=original)
        elif packed is not None:
            original = self.warc.append_exchange(packed)
        else:
            original = self.warc.write_exchange(res)
        if original is not None:
            self.continuity.stored(url, original)
            return original.record_id
        return None

    def _log_page(
        self,
        entry: UrlEntry,
        res: FetchResult,
        page: Page,
        kept: Kept,
        record_id: str | None,
        seen: PageVerdict,
        outlinks: int,
        items: list[dict[str, Any]],
    ) -> None:
        """The kept page, then its items, to every sink (pages.jsonl, items.jsonl, the user's)."""
        record = PageRecord(
            page,
            kept,
            fetched_at=res.started,
            priority=entry.priority,
            warc_record_id=record_id,
            duplicate_of=seen.duplicate_of,
            near_duplicate_of=seen.near_duplicate_of,
            changed=seen.changed,
            outlinks=outlinks,
        )
        for sink in self.sinks:
            sink.write(record)
            for item in items:
                sink.write(ItemRecord(item, page))

    async def _read_sitemap(self, entry: UrlEntry, res: FetchResult) -> str:
        sm = await asyncio.to_thread(
            parse_sitemap, res.body, url=entry.url, content_type=res.content_type
        )
        self.warc.write_exchange(res)
        if sm.error:
            self.counters[f"sitemap_error:{sm.error}"] += 1
        await self.admission.admit(
            [(p.url, self.focus.default_priority(1)) for p in sm.pages], depth=1
        )
        children = [c.url for c in sm.children]
        await self._admit_sitemaps(origin_of(entry.url), children)
        self.counters["sitemap_urls"] += len(sm.pages)
        for p in sm.pages:
            self.continuity.hint(p.url, p.changefreq, p.lastmod)
        return "stored:sitemap" if not sm.error else f"stored:sitemap:{sm.error}"

    async def _redirect(self, entry: UrlEntry, outcome: Redirect) -> None:
        target = join(entry.url, outcome.location)
        if target is None:
            self.counters[DropReason.BAD_REDIRECT.value] += 1
            return
        if entry.hops + 1 > self.cfg.fetch.max_redirect_hops:
            self.counters[DropReason.TOO_MANY_REDIRECTS.value] += 1
            return
        await self.admission.admit(
            [(target, entry.priority)],
            depth=entry.depth,
            hops=entry.hops + 1,
            kind=entry.kind,
            source=entry.url,
        )

    # -- logs -------------------------------------------------------------------------------
    def _trap_found(self, host: str, pattern: str, example: str) -> None:
        """A URL space that feeds itself: named in the log, ``log/traps.jsonl`` and log-stats."""
        self.counters["traps_found"] += 1
        log.warning(
            "suspected crawler trap on %s: URLs like %s keep linking to new ones; "
            "no more of them are followed (--max-urls-per-pattern %s)",
            host,
            pattern,
            self.cfg.max_urls_per_pattern,
        )
        self.traps_log.write(
            {
                "time": _iso(self.clock()),
                "host": host,
                "pattern": pattern,
                "example": example,
                "limit": self.cfg.max_urls_per_pattern,
            }
        )

    def _record_links(self, url: str, links: list[Any]) -> None:
        """A segment fetch follows nothing, but its links are what ``segment build`` makes the
        next segment from (the offline model's loop: crawl -> build -> fetch -> build)."""
        if links:
            self.links_log.write({"url": url, "links": [link.url for link in links]})

    def _log_request(
        self,
        res: FetchResult,
        outcome: str,
        attempt: int,
        host: politeness.HostState,
        *,
        refetch: bool = False,
        revisit: bool = False,
    ) -> None:
        rec: dict[str, Any] = {
            "time": _iso(res.started),
            "url": res.url,
            "ip": res.ip,
            "status": res.status,
            "content_type": res.header("content-type"),
            "content_length": res.header("content-length"),
            "location": res.header("location"),
            "duration_ms": round(res.duration_s * 1000, 1),
            "bytes": res.bytes_received,
            "outcome": outcome,
            "attempt": attempt,
            "delay_s": round(politeness.delay_s(host, self.cfg.politeness), 3),
            "key": host.key,
        }
        if res.error:
            rec["error"] = res.error
            rec["error_detail"] = res.error_detail
        if res.truncated:
            rec["truncated"] = True
        if refetch:
            rec["refetch"] = True
        if revisit:
            rec["revisit"] = True
        self.request_log.write(rec)
        if self.progress is not None:
            self.progress.request(rec)

    def _log_robots(self, origin: str, res: FetchResult, outcome: str) -> None:
        self.robots_log.write(
            {
                "time": _iso(res.started),
                "host": host_of(origin + "/"),
                "origin": origin,
                "url": res.url,
                "status": res.status,
                "outcome": outcome,
                "error": res.error,
                "content_type": res.header("content-type"),
                "body": res.body.decode("utf-8", "replace"),
            }
        )


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts % 1 * 1000):03d}Z"


@contextlib.contextmanager
def _signals(crawler: Crawler) -> Any:
    """First Ctrl-C/SIGTERM: graceful stop. Second Ctrl-C: stop at once (state is committed)."""
    loop = asyncio.get_running_loop()
    installed = []

    def first(sig: signal.Signals) -> None:
        if crawler._stop.is_set():
            raise SystemExit(130)  # state committed at the last flush, at most 1 s ago
        log.warning("%s: finishing in-flight requests and saving state", sig.name)
        crawler.stop("interrupted")

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, first, sig)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
