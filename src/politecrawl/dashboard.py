"""The live terminal dashboard (rich): what the crawl is doing, refreshed once a second.

Pages/s and requests/s over the last interval and overall, queued URLs, sites in flight /
ready / in the penalty box / parked, error classes, and the harvest rate when a topic or a
relevance function is set. Only drawn on a terminal; logs and files are the record.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table


class Dashboard:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.t0 = time.monotonic()
        self._last = (self.t0, 0, 0)
        self._live = Live(console=self.console, auto_refresh=False, transient=False)
        self._live.start()

    def render(self, counters: Counter[str], stats: dict[str, int], harvest: float | None) -> Table:
        now = time.monotonic()
        pages, requests = counters["pages_fetched"], counters["requests"]
        t_prev, p_prev, r_prev = self._last
        dt = max(now - t_prev, 1e-6)
        self._last = (now, pages, requests)
        elapsed = max(now - self.t0, 1e-6)
        table = Table(title="politecrawl", show_header=False, box=None, pad_edge=False)
        table.add_column(style="bold")
        table.add_column()
        table.add_row(
            "pages",
            f"{pages:,}  ({(pages - p_prev) / dt:.1f}/s now, {pages / elapsed:.1f}/s overall)",
        )
        table.add_row("requests", f"{requests:,}  ({(requests - r_prev) / dt:.1f}/s now)")
        table.add_row("stored", f"{counters['stored']:,}")
        table.add_row("queued URLs", f"{stats.get('queued', 0):,}")
        table.add_row(
            "sites",
            f"{stats.get('in_flight', 0)} in flight, "
            f"{stats.get('ready', 0)} ready, "
            f"{stats.get('hosts_waiting', 0) - stats.get('ready', 0)} in "
            f"penalty box, {stats.get('parked', 0)} parked",
        )
        errors = {k[6:]: v for k, v in counters.items() if k.startswith("error:") and v}
        top = ", ".join(f"{k} {v}" for k, v in sorted(errors.items(), key=lambda kv: -kv[1])[:6])
        table.add_row("errors", top or "none")
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

    def show(self, counters: Counter[str], stats: dict[str, int], harvest: float | None) -> None:
        self._live.update(self.render(counters, stats, harvest), refresh=True)

    def done(self, counters: Counter[str], stats: dict[str, Any], harvest: float | None) -> None:
        self.show(counters, stats, harvest)
        self._live.stop()
