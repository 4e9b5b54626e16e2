"""The one gate every URL passes before it is queued, whatever its source.

Seeds, extracted links, redirect targets and sitemap entries all come through ``admit``:
seen-set -> scope (allow-list) -> never-crawl list -> extension filter -> trap limits ->
queue. The seen check comes first because most links on the Web were seen already (and it is
one batched call per page for a networked frontier); every URL the gate refuses is remembered
as seen too, so its refusal is counted once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

from politecrawl.exclusions import NeverCrawlList
from politecrawl.frontier import PAGE, SITEMAP, Frontier, UrlEntry
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
        frontier: Frontier,
        scope: Scope,
        never: NeverCrawlList,
        extensions: ExtensionFilter,
        traps: TrapLimits,
        key_mode: Literal["host", "domain", "ip"],
        counters: Counter[str],
        max_urls_per_host: int | None = None,
    ) -> None:
        self.frontier = frontier
        self.scope = scope
        self.never = never
        self.extensions = extensions
        self.traps = traps
        self.key_mode: Literal["host", "domain", "ip"] = key_mode
        self.counters = counters
        self.max_urls_per_host = max_urls_per_host
        self._per_host: Counter[str] = Counter()

    def refusal(self, url: str, kind: int = PAGE) -> tuple[DropReason, str] | None:
        """Why ``url`` may not be queued (seen-set aside), or None."""
        if not self.scope.admits(url):
            return DropReason.OUT_OF_SCOPE, ""
        if self.never.excludes(host_of(url)):
            return DropReason.EXCLUDED, ""
        if kind != SITEMAP and self.extensions.blocks(url):
            return DropReason.EXTENSION, ""
        trap = trap_reason(url, self.traps)
        if trap is not None:
            return DropReason.TRAP, trap
        if self.max_urls_per_host is not None:
            host = host_of(url)
            if self._per_host[host] >= self.max_urls_per_host:
                return DropReason.TRAP, "host_url_limit"
        return None

    async def admit(
        self, items: Sequence[tuple[str, float]], *, depth: int = 0, hops: int = 0, kind: int = PAGE
    ) -> set[str]:
        """Queue canonical ``(url, priority)`` pairs that pass; returns the URLs queued."""
        if not items:
            return set()
        counters = self.counters
        fresh = set(await self.frontier.unseen([u for u, _ in items]))
        counters["already_seen"] += len(items) - len(fresh)
        refused: list[str] = []
        entries: list[UrlEntry] = []
        key_mode = self.key_mode
        for url, priority in items:
            if url not in fresh:
                continue
            fresh.discard(url)  # a URL twice in one batch counts once
            why = self.refusal(url, kind)
            if why is not None:
                refused.append(url)
                counters[why[0].value] += 1
                if why[1]:
                    counters[f"{why[0].value}:{why[1]}"] += 1
                continue
            if self.max_urls_per_host is not None:
                self._per_host[host_of(url)] += 1
            entries.append(
                UrlEntry(
                    url, politeness_key(url, key_mode), depth, hops, priority=priority, kind=kind
                )
            )
        if refused:
            await self.frontier.mark_seen(refused)
        added = await self.frontier.add(entries) if entries else []
        queued = {e.url for e, ok in zip(entries, added, strict=True) if ok}
        counters["queued"] += len(queued)
        return queued
