"""What ``report.html`` is drawn from: the crawl's logs read once into time buckets.

The request log (rotated files included) becomes count vectors per time bucket (pages,
stored, status classes, robots.txt), a response-time histogram and per-host delays;
``pages.jsonl`` gives the harvest rate when its records carry a relevance. Buckets coarsen as
they grow, so a month of logs needs little memory. Kept apart from the page (``report``) and
the SVG drawing (``reportcharts``) so that what is counted can be read in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from politecrawl.storage.logs import LogDamage, iter_log_records
from politecrawl.storage.records import PAGES as PAGE_SHAPE
from politecrawl.storage.records import REQUESTS, time_of
from politecrawl.tools.textout import printable

__all__ = [
    "CLASSES",
    "HIST_EDGES_MS",
    "PAGES",
    "RELEVANT_AT",
    "STORED",
    "ReportData",
    "read_pages",
    "read_requests",
]

_GRAINS = (
    1,
    5,
    10,
    30,
    60,
    300,
    600,
    1800,
    3600,
    10800,
    21600,
    86400,
    604800,
    4 * 604800,
    52 * 604800,
    520 * 604800,
    5200 * 604800,
)  # each divides the next (the last ones: a damaged log's year 1 beside this year's times)
_MAX_KEYS = 20000
_TARGET_BUCKETS = 90
HIST_EDGES_MS = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 60000)
RELEVANT_AT = 0.5

# request vector: pages, stored, 2xx, 3xx, 4xx, 5xx, no response, robots.txt
PAGES, STORED, _C2, _C3, _C4, _C5, _CNONE, _ROBOTS = range(8)
CLASSES = (
    ("2xx", "#2e9d5b", _C2),
    ("3xx", "#3b7dd8", _C3),
    ("4xx", "#f0a030", _C4),
    ("5xx", "#d9453d", _C5),
    ("no response", "#8a939c", _CNONE),
)


class _Timeline:
    """Count vectors per time bucket; the bucket size grows when there are too many keys."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.grain_i = 0
        self.buckets: dict[int, list[int]] = {}

    @property
    def grain(self) -> int:
        return _GRAINS[self.grain_i]

    def add(self, t: float, *idx: int) -> None:
        k = int(t // self.grain) * self.grain
        vec = self.buckets.get(k)
        if vec is None:
            vec = self.buckets[k] = [0] * self.width
            if len(self.buckets) > _MAX_KEYS and self.grain_i + 1 < len(_GRAINS):
                self._regrain(self.grain_i + 1)
                vec = self.buckets[int(t // self.grain) * self.grain]
        for i in idx:
            vec[i] += 1

    def _regrain(self, grain_i: int) -> None:
        self.grain_i = grain_i
        g, merged = self.grain, dict[int, list[int]]()
        for k, vec in self.buckets.items():
            kk = k // g * g
            tgt = merged.setdefault(kk, [0] * self.width)
            for i, v in enumerate(vec):
                tgt[i] += v
        self.buckets = merged

    def series(self) -> tuple[list[int], int, list[list[int]]]:
        """Contiguous buckets (zeros filled in), at most about ``_TARGET_BUCKETS`` of them."""
        if not self.buckets:
            return [], self.grain, []
        lo, hi = min(self.buckets), max(self.buckets)
        while (hi - lo) // self.grain + 1 > _TARGET_BUCKETS and self.grain_i + 1 < len(_GRAINS):
            self._regrain(self.grain_i + 1)
            lo, hi = min(self.buckets), max(self.buckets)
        starts = list(range(lo, hi + 1, self.grain))
        zero = [0] * self.width
        return starts, self.grain, [self.buckets.get(s, zero) for s in starts]


@dataclass(slots=True)
class ReportData:
    requests: _Timeline = field(default_factory=lambda: _Timeline(8))
    harvest: _Timeline = field(default_factory=lambda: _Timeline(2))
    hist: list[int] = field(default_factory=lambda: [0] * len(HIST_EDGES_MS))
    hosts: dict[str, list[float]] = field(default_factory=dict)  # requests, delay sum, max
    total: int = 0
    first: float | None = None
    last: float | None = None
    scored_pages: int = 0
    # the figures summary.json also has, counted from the log as the crawl counts them
    fetched: int = 0
    stored: int = 0
    errors: int = 0
    damage: LogDamage = field(default_factory=LogDamage)  # what the logs held unread


def _epoch(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)  # pages.jsonl may carry Unix seconds (its shape bounds them)
    when = time_of(value)
    return None if when is None else when.timestamp()


def read_requests(out_dir: Path, data: ReportData) -> None:
    log_dir = out_dir / "log"
    for rec in iter_log_records(log_dir, "requests", shape=REQUESTS, damage=data.damage):
        t = _epoch(rec["time"])
        if t is None:
            continue
        data.total += 1
        data.first = t if data.first is None else min(data.first, t)
        data.last = t if data.last is None else max(data.last, t)
        code = rec.get("status")
        outcome = str(rec.get("outcome") or "")
        _count_as_the_summary(data, code, outcome, rec.get("error"))
        cls = (
            _CNONE
            if not isinstance(code, int) or not 200 <= code < 600
            else (_C2, _C3, _C4, _C5)[code // 100 - 2]
        )
        if outcome.startswith("robots:"):
            data.requests.add(t, cls, _ROBOTS)
        elif outcome == "stored":
            data.requests.add(t, cls, PAGES, STORED)
        else:
            data.requests.add(t, cls, PAGES)
        dur = rec.get("duration_ms")
        if isinstance(code, int) and isinstance(dur, int | float):
            i = next((i for i, e in enumerate(HIST_EDGES_MS) if dur < e), len(HIST_EDGES_MS))
            data.hist[max(0, i - 1)] += 1
        host = printable(urlsplit(str(rec["url"])).hostname or "?")
        h = data.hosts.get(host)
        if h is None:
            h = data.hosts[host] = [0.0, 0.0, 0.0]
        delay = rec.get("delay_s")
        h[0] += 1
        if isinstance(delay, int | float):
            h[1] += delay
            h[2] = max(h[2], float(delay))


def _count_as_the_summary(data: ReportData, code: Any, outcome: str, error: Any) -> None:
    """``engine.request`` counts: a page fetched (a response to a page, not a robots.txt
    nor a sitemap), stored, an error (4xx/5xx but a robots.txt's 4xx, or no response)."""
    robots = outcome.startswith("robots:")
    if code is not None and not robots and not outcome.startswith("stored:sitemap"):
        data.fetched += 1
    if outcome == "stored":
        data.stored += 1
    if isinstance(code, int) and code >= 400 and outcome != "robots:none":
        data.errors += 1
    if error:
        data.errors += 1


def read_pages(out_dir: Path, data: ReportData) -> None:
    """pages.jsonl (in log/ or the output folder): harvest rate needs a relevance per page."""
    folder = out_dir / "log"
    if not any(folder.glob("pages*.jsonl*")):
        folder = out_dir
    for rec in iter_log_records(folder, "pages", shape=PAGE_SHAPE, damage=data.damage):
        t = _epoch(rec["time"])
        rel = rec.get("relevant", rec.get("relevance"))
        if t is None or rel is None or not isinstance(rel, bool | int | float):
            continue
        data.scored_pages += 1
        if (rel is True) or (not isinstance(rel, bool) and rel >= RELEVANT_AT):
            data.harvest.add(t, 0, 1)
        else:
            data.harvest.add(t, 0)
