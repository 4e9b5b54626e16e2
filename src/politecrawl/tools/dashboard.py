"""The live terminal dashboard (rich): what the crawl is doing, redrawn once a second.

Four parts, top to bottom:

- the crawl: elapsed time, pages/s and requests/s (now and overall), stored, queued URLs,
  sites in flight / ready / in the penalty box / parked, what was not fetched and why, the
  harvest rate when a topic or a relevance function is set;
- progress toward each limit given (``--max-pages``, ``--max-time``, ``--target-relevant``)
  with an ETA at the rate so far, or a note that the crawl runs until its frontier is empty;
- the busiest sites (most requests this run): requests, the last answer, and whether each is
  ready or waiting, for how long and why (its delay, Crawl-delay, backoff, Retry-After,
  parked);
- errors: counts by class and the last few, with their URL.

Only drawn on a terminal; the logs and files are the record. The crawler feeds it every
request (``request``) and redraws it (``show``); it never decides anything.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from politecrawl.config import CrawlConfig
from politecrawl.frontier import CrawlStore
from politecrawl.polite import politeness

__all__ = ["Dashboard", "fmt_duration"]

_SITES = 8  # busiest sites shown
_LAST_ERRORS = 5


def fmt_duration(seconds: float) -> str:
    """``1:02:03``, ``2:03`` or ``7 s``: short, for a terminal."""
    s = max(0, int(seconds + 0.5))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    if h:
        return f"{h}:{m:02d}:{sec:02d}"
    return f"{m}:{sec:02d}" if m else f"{sec} s"


class _Site:
    __slots__ = ("last", "requests")

    def __init__(self) -> None:
        self.requests = 0
        self.last = ""


class Dashboard:
    """``request(rec)`` for every logged request, ``await show(...)`` once a second."""

    def __init__(
        self,
        cfg: CrawlConfig,
        console: Console | None = None,
        *,
        clock: Any = time.time,
        start: bool = True,
    ) -> None:
        self.cfg = cfg
        self.console = console or Console(stderr=True)
        self.clock = clock  # the crawler's clock: host states' times are on it
        self.t0 = time.monotonic()
        self._last = (self.t0, 0, 0)
        self._sites: dict[str, _Site] = {}
        self._errors: deque[tuple[float, str, str]] = deque(maxlen=_LAST_ERRORS)
        self._live = Live(console=self.console, auto_refresh=False, transient=False)
        if start:
            self._live.start()

    # -- fed by the crawler ---------------------------------------------------------------
    def request(self, rec: dict[str, Any]) -> None:
        """One request as the request log has it."""
        site = self._sites.get(rec["key"])
        if site is None:
            site = self._sites[rec["key"]] = _Site()
        site.requests += 1
        status, error = rec.get("status"), rec.get("error")
        site.last = f"{error}" if error else f"{status} {rec.get('outcome', '')}".strip()
        robots_none = rec.get("outcome") == "robots:none"  # no robots.txt: not an error
        if error or (status is not None and status >= 400 and not robots_none):
            self._errors.append((self.clock(), rec["url"], error or f"HTTP {status}"))

    async def show(
        self,
        counters: Counter[str],
        store: CrawlStore,
        harvest: float | None,
        pages_this_run: int,
    ) -> None:
        stats = await store.stats()
        sites = await self._site_rows(store)
        self._live.update(
            self.render(counters, stats, harvest, pages_this_run, sites), refresh=True
        )

    async def done(
        self,
        counters: Counter[str],
        store: CrawlStore,
        harvest: float | None,
        pages_this_run: int,
    ) -> None:
        await self.show(counters, store, harvest, pages_this_run)
        self._live.stop()

    # -- drawing --------------------------------------------------------------------------
    def render(
        self,
        counters: Counter[str],
        stats: dict[str, int],
        harvest: float | None,
        pages_this_run: int,
        sites: list[tuple[str, int, str, str]],
    ) -> Group:
        now = time.monotonic()
        elapsed = max(now - self.t0, 1e-6)
        return Group(
            self._overview(counters, stats, harvest, now, elapsed),
            self._progress(counters, pages_this_run, elapsed, stats),
            self._site_table(sites),
            self._error_panel(counters),
        )

    def _overview(
        self,
        counters: Counter[str],
        stats: dict[str, int],
        harvest: float | None,
        now: float,
        elapsed: float,
    ) -> Table:
        pages, requests = counters["pages_fetched"], counters["requests"]
        t_prev, p_prev, r_prev = self._last
        dt = max(now - t_prev, 1e-6)
        self._last = (now, pages, requests)
        table = Table(
            title=f"politecrawl  elapsed {fmt_duration(elapsed)}",
            title_justify="left",
            show_header=False,
            box=None,
            pad_edge=False,
        )
        table.add_column(style="bold")
        table.add_column()
        table.add_row("output", str(self.cfg.out_dir))
        table.add_row(
            "pages",
            f"{pages:,}  ({(pages - p_prev) / dt:.1f}/s now, {pages / elapsed:.1f}/s overall)",
        )
        table.add_row("requests", f"{requests:,}  ({(requests - r_prev) / dt:.1f}/s now)")
        table.add_row("stored", f"{counters['stored']:,}")
        table.add_row("queued URLs", f"{stats.get('queued', 0):,}")
        waiting = stats.get("hosts_waiting", 0) - stats.get("ready", 0)
        table.add_row(
            "sites",
            f"{stats.get('in_flight', 0)} in flight, {stats.get('ready', 0)} ready, "
            f"{waiting} in penalty box, {stats.get('parked', 0)} parked",
        )
        dropped = sum(
            counters[k]
            for k in ("robots_disallowed", "extension", "excluded", "out_of_scope", "trap")
        )
        table.add_row("not fetched", f"{dropped:,} (robots, extension, never-crawl, scope, traps)")
        if harvest is not None:
            table.add_row(
                "harvest rate", f"{harvest:.1%} ({counters['relevant_pages']:,} relevant)"
            )
        return table

    def _progress(
        self, counters: Counter[str], pages_this_run: int, elapsed: float, stats: dict[str, int]
    ) -> Table:
        """One bar per limit given, each with the ETA its own rate so far gives."""
        table = Table(title="progress", title_justify="left", show_header=False, box=None)
        table.add_column(style="bold")
        table.add_column()
        table.add_column(justify="right")
        table.add_column()
        cfg = self.cfg
        limits: list[tuple[str, float, float, str]] = []
        if cfg.max_pages is not None:
            limits.append(("--max-pages", pages_this_run, cfg.max_pages, "pages"))
        if cfg.max_time_s is not None:
            limits.append(("--max-time", elapsed, cfg.max_time_s, "s"))
        if cfg.target_relevant is not None:
            limits.append(
                ("--target-relevant", counters["relevant_pages"], cfg.target_relevant, "relevant")
            )
        for name, done, total, unit in limits:
            left = max(0.0, total - done)
            rate = done / elapsed
            eta = "ETA " + fmt_duration(left / rate) if rate > 0 else "ETA unknown"
            if unit == "s":
                eta = f"{fmt_duration(left)} left"
                shown = f"{fmt_duration(done)} / {fmt_duration(total)}"
            else:
                shown = f"{int(done):,} / {int(total):,} {unit}"
            table.add_row(name, ProgressBar(total=total, completed=min(done, total), width=30),
                          shown, eta)  # fmt: skip
        if not limits:
            table.add_row(
                "no limit",
                Text(f"runs until no URL is left ({stats.get('queued', 0):,} queued)"),
                "",
                "",
            )
        return table

    async def _site_rows(self, store: CrawlStore) -> list[tuple[str, int, str, str]]:
        """(site, requests, last answer, state) for the busiest sites this run."""
        busiest = sorted(self._sites.items(), key=lambda kv: -kv[1].requests)[:_SITES]
        now = self.clock()
        rows = []
        for key, site in busiest:
            state = _site_state(await store.host(key), self.cfg, now)
            rows.append((key, site.requests, site.last, state))
        return rows

    def _site_table(self, sites: list[tuple[str, int, str, str]]) -> Table:
        table = Table(title="busiest sites", title_justify="left", box=None, pad_edge=False)
        table.add_column("site", overflow="fold", max_width=40)
        table.add_column("requests", justify="right")
        table.add_column("last answer", max_width=28, overflow="ellipsis", no_wrap=True)
        table.add_column("now", overflow="fold")
        for key, n, last, state in sites:
            table.add_row(key, f"{n:,}", last, state)
        if not sites:
            table.add_row("(none asked yet)", "", "", "")
        return table

    def _error_panel(self, counters: Counter[str]) -> Panel:
        errors = {k[6:]: v for k, v in counters.items() if k.startswith("error:") and v}
        top = sorted(errors.items(), key=lambda kv: -kv[1])[:6]
        lines = [Text(", ".join(f"{k} {v:,}" for k, v in top) or "none")]
        now = self.clock()
        for t, url, what in reversed(self._errors):
            lines.append(Text(f"{fmt_duration(now - t)} ago  {what}  {url}", overflow="ellipsis",
                              no_wrap=True))  # fmt: skip
        return Panel(Group(*lines), title="errors", title_align="left", expand=True)


def _site_state(host: politeness.HostState, cfg: CrawlConfig, now: float) -> str:
    """Ready, or waiting: how long and why (the longest of the reasons applies)."""
    wait = host.next_allowed - now
    if politeness.is_parked(host, now):
        return (
            f"parked {fmt_duration(host.parked_until - now)} "
            f"({host.consecutive_failures} failures in a row)"
        )
    if wait <= 0:
        return "ready"
    delay = politeness.delay_s(host, cfg.politeness)
    if host.retry_after_until > now and host.retry_after_until >= host.next_allowed - 1e-6:
        why = "Retry-After"
    elif host.backoff_factor > 1:
        why = f"backoff x{host.backoff_factor:g} after errors (delay {delay:.3g} s)"
    elif host.crawl_delay_s is not None and host.crawl_delay_s >= delay - 1e-9:
        why = f"robots.txt Crawl-delay {host.crawl_delay_s:g} s"
    elif delay > cfg.politeness.min_delay_s + 1e-9:
        why = f"slow answers: delay {delay:.3g} s ({cfg.politeness.response_time_factor:g}x)"
    else:
        why = f"--min-delay {cfg.politeness.min_delay_s:g} s"
    shown = fmt_duration(wait) if wait >= 1 else f"{wait:.1f} s" if wait >= 0.1 else "<0.1 s"
    return f"waits {shown}: {why}"
