"""The one gate every URL passes before it is queued, whatever its source.

Seeds, extracted links, redirect targets and sitemap entries all come through ``admit``:
canonical form -> seen-set -> scope (allow-list) -> never-crawl list -> extension filter ->
trap limits (URL shape, then URL spaces that grow without end) -> queue. URLs from outside the
crawler (robots.txt ``Sitemap:`` lines) are canonicalised here (``raw=True``); seeds come
canonical from ``CrawlConfig`` (``urls.canonical.canonical_seeds``, once); links, redirect
targets and sitemap entries arrive canonical from ``urls.join`` / ``urls.canonicalize`` and
are not done twice (the per-link hot path). The
seen check comes first because most links on the Web were seen already (and it is one batched
call per page for a networked frontier); every URL the gate refuses is remembered
as seen too, so its refusal is counted once.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Literal, Protocol

from politecrawl.config import CrawlConfig
from politecrawl.engine.outcome import DropReason
from politecrawl.errors import UrlError
from politecrawl.frontier import PAGE, SITEMAP, CrawlStore, Frontier, UrlEntry
from politecrawl.polite.exclusions import NeverCrawlList
from politecrawl.urls.canonical import canonicalize, host_of, origin_of, politeness_key
from politecrawl.urls.filters import (
    DEFAULT_BLOCKED_EXTENSIONS,
    ExtensionFilter,
    Scope,
    TrapLimits,
    trap_reason,
)
from politecrawl.urls.traps import TrapHook, UrlSpaces

HOST_URLS = "host_urls:"  # counter prefix: URLs admitted per host (--max-urls-per-host)
# refusals an option can lift (--scope, --allow, --exclude-file): remembered for a resume
LIFTABLE = frozenset({DropReason.OUT_OF_SCOPE, DropReason.EXCLUDED})
URL_SPACE = "url_space"  # a refusal of ``UrlSpaces``: a named pattern
HOST_CAP = "host_url_limit"  # the detail of a refusal for --max-urls-per-host: no trap
RefusedRow = tuple[str, str, int, int, int, float]  # url, reason, depth, hops, kind, priority


class Router(Protocol):
    """Where the URLs of other processes' sites go (``partition.Partition``)."""

    def keep_mine(
        self, items: Sequence[tuple[str, float]], depth: int, hops: int, kind: int, src: str | None
    ) -> list[tuple[str, float]]: ...


class Gate:
    """The filters of the gate (no seen-set): shared by the crawler and the segment builder."""

    def __init__(
        self,
        scope: Scope,
        never: NeverCrawlList,
        extensions: ExtensionFilter,
        traps: TrapLimits,
        max_urls_per_host: int | None = None,
        spaces: UrlSpaces | None = None,
    ) -> None:
        self.scope = scope
        self.never = never
        self.extensions = extensions
        self.traps = traps
        self.max_urls_per_host = max_urls_per_host
        self.spaces = spaces if spaces is not None else UrlSpaces(None)
        self._per_host: Counter[str] = Counter()

    @classmethod
    def from_config(
        cls, cfg: CrawlConfig, never: NeverCrawlList | None = None, on_trap: TrapHook | None = None
    ) -> Gate:
        exts = cfg.blocked_extensions
        return cls(
            Scope(cfg.scope, cfg.seeds, cfg.allow),
            never if never is not None else NeverCrawlList(cfg.exclude_file, cfg.exclude_check_s),
            ExtensionFilter(exts if exts is not None else DEFAULT_BLOCKED_EXTENSIONS),
            TrapLimits(),
            cfg.max_urls_per_host,
            UrlSpaces(cfg.max_urls_per_pattern, on_trap),
        )

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
                return DropReason.TRAP, HOST_CAP
        if self.spaces.full(url):
            return DropReason.TRAP, URL_SPACE
        return None

    def admitted(
        self, url: str, counters: Counter[str] | None = None, source: str | None = None
    ) -> None:
        """Count a URL that passed (for the per-host cap); in ``counters`` too, which the
        crawl saves with its state, so the cap still holds after a resume. ``source``: the
        page that linked to it (URL spaces that feed themselves are traps: ``traps``)."""
        self.spaces.admitted(url, source)
        if self.max_urls_per_host is not None:
            host = host_of(url)
            self._per_host[host] += 1
            if counters is not None:
                counters[HOST_URLS + host] += 1

    def restore_host_counts(self, counters: Mapping[str, int]) -> None:
        """The per-host counts a resumed crawl saved (see ``admitted``)."""
        n = len(HOST_URLS)
        for name, value in counters.items():
            if name.startswith(HOST_URLS):
                self._per_host[name[n:]] = max(self._per_host[name[n:]], value)


class Admission:
    """The gate plus the seen-set and the queue."""

    def __init__(
        self,
        frontier: Frontier,
        store: CrawlStore,
        gate: Gate,
        key_mode: Literal["host", "domain", "ip"],
        counters: Counter[str],
        ip_of: Callable[[str], Awaitable[str | None]] | None = None,
        rewrite: Callable[[str], str] | None = None,
        *,
        ip_rule: bool = False,
        router: Router | None = None,
        remember_refused: Callable[[Sequence[RefusedRow]], None] | None = None,
        resolve_ahead: Callable[[str], None] | None = None,
    ) -> None:
        self.frontier = frontier
        # a queued site's name is looked up now, in the background: its turn must not wait
        self.resolve_ahead = resolve_ahead
        # --processes N: the URLs of other processes' sites go to them (``partition``)
        self.router = router
        self.store = store
        self.gate = gate
        self.ip_of = ip_of
        # one server, many names: each entry carries its host's address (resolved once per
        # origin, cached by ``ip_of``) so the frontier can keep one request in flight per IP
        self.ip_rule = ip_rule and ip_of is not None and key_mode != "ip"
        self.rewrite = rewrite  # learned duplicate-URL rules (continuity): variants never fetched
        self.key_mode: Literal["host", "domain", "ip"] = key_mode
        self.counters = counters
        # where refusals an option can lift are remembered (``Backend.refusals``), so a
        # resumed crawl whose options lift them admits them again (``readmit``)
        self.remember_refused = remember_refused

    async def admit(
        self,
        items: Sequence[tuple[str, float]],
        *,
        depth: int = 0,
        hops: int = 0,
        kind: int = PAGE,
        raw: bool = False,
        source: str | None = None,
        routed: bool = False,
        refusals: dict[str, str] | None = None,
    ) -> set[str]:
        """Queue ``(url, priority)`` pairs that pass; returns the URLs queued (canonical).

        ``raw``: the URLs come from outside the crawler and are canonicalised first; one
        with no canonical form is counted as ``invalid_url``. ``source``: the page the URLs
        were found on (a link or a redirect), for the URL-space trap guard. ``routed``: the
        URLs came from another process of the crawl, and are this one's (``partition``).
        ``refusals``: filled with why the gate refused each URL it refused (a redirect's
        target: the request log says it)."""
        if raw:
            items = self._canonical(items)
        if self.router is not None and not routed and items:
            items = self.router.keep_mine(items, depth, hops, kind, source)
        if not items:
            return set()
        if self.rewrite is not None:
            rewrite = self.rewrite
            items = [(rewrite(u), p) for u, p in items]
        counters = self.counters
        fresh = set(await self.store.unseen([u for u, _ in items]))
        counters["already_seen"] += len(items) - len(fresh)
        refused: list[str] = []
        liftable: list[RefusedRow] = []
        entries: list[UrlEntry] = []
        key_mode = self.key_mode
        for url, priority in items:
            if url not in fresh:
                continue
            fresh.discard(url)  # a URL twice in one batch counts once
            why = self.gate.refusal(url, kind)
            if why is not None:
                refused.append(url)
                if refusals is not None:
                    refusals[url] = why[0].value
                counters[why[0].value] += 1
                if why[1]:
                    counters[f"{why[0].value}:{why[1]}"] += 1
                    if why[1] == URL_SPACE:  # the summary names the pattern and its count
                        counters[self.gate.spaces.cut_counter(url) or URL_SPACE] += 1
                if why[0] in LIFTABLE:
                    liftable.append((url, why[0].value, depth, hops, kind, priority))
                continue
            self.gate.admitted(url, counters, source)
            if key_mode == "ip" and self.ip_of is not None:
                # many host names on one server share one politeness key: its address
                key = politeness_key(url, "ip", await self.ip_of(url))
            else:
                key = politeness_key(url, key_mode)
            entries.append(UrlEntry(url, key, depth, hops, priority=priority, kind=kind))
        await self._with_ips(entries)
        if liftable and self.remember_refused is not None:
            self.remember_refused(liftable)
        if refused:
            await self.store.mark_seen(refused)
        if self.resolve_ahead is not None:
            for origin in {origin_of(e.url) for e in entries}:
                self.resolve_ahead(origin)
        added = await self.frontier.add(entries) if entries else []
        queued = {e.url for e, ok in zip(entries, added, strict=True) if ok}
        counters["queued"] += len(queued)
        return queued

    async def readmit(
        self,
        rows: Sequence[tuple[str, int, int, int, float]],
        requeue: Callable[[Sequence[UrlEntry]], Awaitable[int]],
    ) -> list[str]:
        """Pass ``(url, depth, hops, kind, priority)`` refused before through the gate again,
        the seen-set aside (they are in it); those that pass go to ``requeue``. Returns them."""
        entries = []
        for url, depth, hops, kind, priority in rows:
            if self.gate.refusal(url, kind) is None:
                self.gate.admitted(url, self.counters)
                entries.append(await self._entry(url, depth, hops, priority, kind))
        await self._with_ips(entries)
        if entries:
            self.counters["queued"] += await requeue(entries)
        return [e.url for e in entries]

    async def revisit(
        self,
        rows: Sequence[tuple[str, int, int, int, float]],
        due: Mapping[str, float],
        requeue: Callable[[Sequence[UrlEntry]], Awaitable[int]],
    ) -> int:
        """Queue pages fetched before again, each due at ``due[url]`` (``--recrawl`` given to
        a crawl made without it): not through the gate, which admitted them once and counts
        what it admits (a revisit is checked at its turn as any URL is: the never-crawl list,
        robots.txt); how many were queued."""
        entries = []
        for url, depth, hops, kind, priority in rows:
            entry = await self._entry(url, depth, hops, priority, kind)
            entry.not_before = due[url]
            entries.append(entry)
        await self._with_ips(entries)
        return await requeue(entries) if entries else 0

    async def _entry(self, url: str, depth: int, hops: int, priority: float, kind: int) -> UrlEntry:
        if self.key_mode == "ip" and self.ip_of is not None:
            # many host names on one server share one politeness key: its address
            key = politeness_key(url, "ip", await self.ip_of(url))
        else:
            key = politeness_key(url, self.key_mode)
        return UrlEntry(url, key, depth, hops, priority=priority, kind=kind)

    async def _with_ips(self, entries: list[UrlEntry]) -> None:
        """The IP rule: each entry carries its host's address (one lookup per origin of the
        batch, together; each is cached by ``ip_of``)."""
        if self.ip_rule and self.ip_of is not None and entries:
            firsts = {origin_of(e.url): e.url for e in reversed(entries)}
            found = await asyncio.gather(*(self.ip_of(u) for u in firsts.values()))
            ips = dict(zip(firsts, found, strict=True))
            for e in entries:
                e.ip = ips[origin_of(e.url)] or ""

    def _canonical(self, items: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        for url, priority in items:
            try:
                out.append((canonicalize(url.strip()), priority))
            except UrlError:
                self.counters[DropReason.INVALID_URL.value] += 1
        return out
