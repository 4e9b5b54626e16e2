"""What the crawl writes about itself: the request log, the robots log, traps, segment links,
and ``summary.json``.

Every request (pages and robots.txt) ends in ``log_request``, so ``log/requests.jsonl`` is
complete by construction (``request.request`` makes the request, the turn logs it).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from politecrawl.config import CrawlConfig
from politecrawl.engine.admission import HOST_URLS
from politecrawl.engine.losses import traps_cut
from politecrawl.engine.metrics import Metrics
from politecrawl.engine.outcome import DropReason, partial
from politecrawl.net.fetch import FetchResult
from politecrawl.polite import politeness
from politecrawl.storage import JsonlLog, log_time
from politecrawl.tools.dashboard import Dashboard
from politecrawl.urls.canonical import host_of, origin_of
from politecrawl.urls.traps import cut_counter

log = logging.getLogger("politecrawl")


class Logs(Protocol):
    """The parts of the crawl's context (``context.CrawlContext``) the journal writes to: a
    protocol, so that the context can use the journal without the journal importing it."""

    @property
    def cfg(self) -> CrawlConfig: ...
    @property
    def progress(self) -> Dashboard | None: ...
    @property
    def request_log(self) -> JsonlLog: ...
    @property
    def robots_log(self) -> JsonlLog: ...
    @property
    def links_log(self) -> JsonlLog: ...
    @property
    def metrics(self) -> Metrics | None: ...


class Counts(Counter[str]):
    """The crawl's counters, knowing which changed since they were last saved: the SQLite
    store writes ``unsaved()`` into every commit of the crawl's state (``counters_from``),
    so a page marked done on disk is counted on disk too, whenever a ``kill -9`` comes. (Saved
    once a second apart from the commits before every request, a crash lost the counts of the
    pages committed in between: 71 requests of 1,833 over two kills, 210 with two processes.)
    Only the names that changed are read at a commit, not one per site."""

    def __init__(self) -> None:
        super().__init__()
        self._saved: dict[str, int] = {}
        self._changed: set[str] = set()

    def __setitem__(self, key: str, value: int) -> None:
        super().__setitem__(key, value)
        self._changed.add(key)

    def mark_saved(self) -> None:
        """What it holds now is what the store holds (loaded from it)."""
        self._saved = dict(self)
        self._changed.clear()

    def unsaved(self) -> dict[str, int]:
        """What changed since the last call (or ``mark_saved``), as differences to add to the
        saved counts; taken as saved from now on."""
        changed, self._changed = self._changed, set()
        delta = {}
        for key in changed:
            value = self[key]
            if value != self._saved.get(key, 0):
                delta[key] = value - self._saved.get(key, 0)
                self._saved[key] = value
        return delta


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
    # pages fetched but not kept, their owner refusing the purpose, and URLs not fetched
    # because the whole site refuses it (polite.usage)
    reserved: int = 0
    reserved_sites: int = 0
    robots_absent: int = 0  # robots.txt 4xx (RFC 9309 2.3.1.3: allow all): not an error
    # each site parked or given up (``losses.Losses.report``): exit code 3 when not empty
    sites_lost: list[dict[str, Any]] = field(default_factory=list)
    # each URL pattern the trap guard stopped following (``losses.traps_cut``): not exit 3
    traps: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


def summary_of(
    c: Counter[str],
    *,
    seconds: float,
    queued_left: int,
    stopped_by: str,
    sites_lost: list[dict[str, Any]] | None = None,
) -> Summary:
    """The summary of a crawl whose counters are ``c``."""
    return Summary(
        pages_fetched=c["pages_fetched"],
        requests=c["requests"],
        stored=c["stored"],
        robots_disallowed=c[DropReason.ROBOTS.value],
        excluded=c[DropReason.EXCLUDED.value],
        extension_filtered=c[DropReason.EXTENSION.value],
        redirects=c["redirects"],
        errors={k[6:]: v for k, v in sorted(c.items()) if k.startswith("error:") and v},
        hosts=c["hosts_contacted"],
        seconds=round(seconds, 3),
        queued_left=queued_left,
        counters={k: v for k, v in sorted(c.items()) if not k.startswith(HOST_URLS)},
        stopped_by=stopped_by,
        reserved=c["reserved"],
        reserved_sites=c[DropReason.RESERVED_SITE.value],
        robots_absent=c["robots:none"],
        sites_lost=sites_lost or [],
        traps=traps_cut(c),
    )


def write_summary(path: Path, summary: Summary) -> None:
    """``summary.json``, replaced whole (never half-written)."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(summary.to_json(), indent=2) + "\n")
    tmp.replace(path)


def log_request(
    ctx: Logs,
    res: FetchResult,
    outcome: str,
    attempt: int,
    host: politeness.HostState,
    *,
    refetch: bool = False,
    revisit: bool = False,
    redirect_refused: str | None = None,
) -> None:
    """One line of ``log/requests.jsonl`` (and the dashboard's request feed)."""
    rec: dict[str, Any] = {
        "time": log_time(res.started),
        "url": res.url,
        "ip": res.ip,
        "status": res.status,
        "content_type": res.header("content-type"),
        "content_length": res.header("content-length"),
        "location": res.location(),
        "duration_ms": round(res.duration_s * 1000, 1),
        "bytes": res.bytes_received,
        "outcome": outcome,
        "attempt": attempt,
        "delay_s": round(politeness.delay_s(host, ctx.cfg.politeness), 3),
        "key": host.key,
    }
    if res.error:
        rec["error"] = res.error
        rec["error_detail"] = res.error_detail
    if partial(res):
        rec["truncated"] = True
    if refetch:
        rec["refetch"] = True
    if revisit:
        rec["revisit"] = True
    if res.lookup_s >= 0.001:  # of duration_ms, the wait on DNS (not the server's time)
        rec["lookup_ms"] = round(res.lookup_s * 1000, 1)
    if redirect_refused is not None:  # the target was not queued: the URL ends here
        rec["redirect_refused"] = redirect_refused
    ctx.request_log.write(rec)
    if ctx.metrics is not None:
        robots = res.url == origin_of(res.url) + "/robots.txt"
        ctx.metrics.request(
            outcome,
            robots=robots,
            page=res.status is not None and not outcome.startswith("stored:sitemap"),
            nbytes=res.bytes_received,
            duration_s=res.duration_s,
            delay_s=rec["delay_s"],
        )
    if ctx.progress is not None:
        ctx.progress.request(rec)


def log_robots(ctx: Logs, origin: str, res: FetchResult, outcome: str) -> None:
    """One line of ``log/robots.jsonl``, with the whole body as received."""
    ctx.robots_log.write(
        {
            "time": log_time(res.started),
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


def trap_found(
    counters: Counter[str],
    traps_log: JsonlLog,
    clock: Callable[[], float],
    limit: int | None,
    host: str,
    pattern: str,
    example: str,
    why: str,
) -> None:
    """A URL space with no end: named in the log, ``log/traps.jsonl`` and log-stats. ``why``:
    ``calendar`` (its pages walk dates past the horizon) or ``budget`` (its own pages found
    ``--max-urls-per-pattern`` of it, raised by links into it). (Given the parts it writes to,
    not the context: the context builds the gate with it.)"""
    counters["traps_found"] += 1
    counters[cut_counter(host, pattern, why)] += 0  # named in the summary, even if none refused
    if why == "calendar":
        reason = "its pages keep linking dates ever further away (a calendar)"
    else:
        reason = f"its pages keep linking new ones (--max-urls-per-pattern {limit})"
    log.warning(
        "suspected crawler trap on %s: URLs like %s; %s; no more of them are followed",
        host,
        pattern,
        reason,
    )
    traps_log.write(
        {
            "time": log_time(clock()),
            "host": host,
            "pattern": pattern,
            "example": example,
            "why": why,
            "limit": limit,
        }
    )


def record_links(ctx: Logs, url: str, links: list[Any]) -> None:
    """A segment fetch follows nothing, but its links are what ``segment build`` makes the
    next segment from (the offline model's loop: crawl -> build -> fetch -> build)."""
    if links:
        ctx.links_log.write({"url": url, "links": [link.url for link in links]})
