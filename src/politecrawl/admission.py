"""The one gate every URL passes before it is queued, whatever its source.

Seeds, extracted links, redirect targets (and later sitemaps) all come through ``admit``:
seen-set -> scope (allow-list) -> never-crawl list -> extension filter -> trap limits. The
seen check comes first because most links on the Web were seen already; every URL the gate
refuses is remembered as seen too, so its refusal is counted once.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from politecrawl.exclusions import NeverCrawlList
from politecrawl.frontier import UrlEntry
from politecrawl.frontier.sqlite import SqliteFrontier
from politecrawl.outcome import DropReason
from politecrawl.urls import (
    ExtensionFilter,
    Scope,
    TrapLimits,
    host_of,
    politeness_key,
    trap_reason,
)


class Admission:
    def __init__(
        self,
        frontier: SqliteFrontier,
        scope: Scope,
        never: NeverCrawlList,
        extensions: ExtensionFilter,
        traps: TrapLimits,
        key_mode: Literal["host", "domain", "ip"],
        counters: Counter[str],
    ) -> None:
        self.frontier = frontier
        self.scope = scope
        self.never = never
        self.extensions = extensions
        self.traps = traps
        self.key_mode: Literal["host", "domain", "ip"] = key_mode
        self.counters = counters

    def refusal(self, url: str) -> tuple[DropReason, str] | None:
        """Why ``url`` may not be queued (seen-set aside), or None."""
        if not self.scope.admits(url):
            return DropReason.OUT_OF_SCOPE, ""
        if self.never.excludes(host_of(url)):
            return DropReason.EXCLUDED, ""
        if self.extensions.blocks(url):
            return DropReason.EXTENSION, ""
        trap = trap_reason(url, self.traps)
        if trap is not None:
            return DropReason.TRAP, trap
        return None

    def admit(self, url: str, depth: int = 0, hops: int = 0) -> DropReason | None:
        """Queue a canonical URL; return why not (``None`` when queued, or already seen)."""
        frontier = self.frontier
        if frontier.is_seen(url):
            self.counters["already_seen"] += 1
            return None
        refused = self.refusal(url)
        if refused is not None:
            reason, detail = refused
            frontier.mark_seen(url)
            self.counters[reason.value] += 1
            if detail:
                self.counters[f"{reason.value}:{detail}"] += 1
            return reason
        frontier.add(UrlEntry(url, politeness_key(url, self.key_mode), depth, hops))
        self.counters["queued"] += 1
        return None
