"""When to fetch a page again (``--recrawl``): per-URL change-rate estimates.

Model: a page changes as a Poisson process with its own rate ``λ`` (Cho & Garcia-Molina,
"Estimating frequency of change", ACM TOIT 2003). A revisit only tells whether the page
changed at least once since the last fetch, so counting changes underestimates ``λ``; their
bias-reduced estimator for ``n`` revisits ``I`` apart of which ``X`` saw a change is

    λ = -ln((n - X + 0.5) / (n + 0.5)) / I

Revisits here are not evenly spaced, so ``I`` is the mean interval of the revisits counted
(``observed_s / n``), and ``n``, ``X`` and ``observed_s`` decay by ``memory`` at every revisit
so an estimate follows a page whose habits change (about the last ``1 / (1 - memory)``
revisits count). The next revisit comes when the page has probably changed: after
``-ln(1 - target_p) / λ`` (half-life at the default ``target_p = 0.5``), clamped to
``[min_s, max_s]``.

Why not "halve the interval on a change, grow it 1.5x otherwise": that rule has no notion of
*how* likely a change is, so it oscillates around any page's rate and cannot say what a
revisit is worth. The Poisson estimate gives ``P(changed since last fetch) = 1 - exp(-λ t)``,
which is what ``priority`` needs for focused crawls: value of a revisit =
P(changed) x relevance, so relevant pages that change often come back first.

Seeding: a new page starts from one pseudo-revisit at the rate of its hint
(``hint_from_sitemap``: ``<changefreq>`` period and/or the age since ``<lastmod>``; for a
Poisson page the time since its last change is exponential with mean ``1/λ``, so an age is a
rate estimate) or of ``initial_s``; a few real revisits outweigh it.

"Changed" should mean changed *content*: ``content_changed`` compares simhashes, so a new
date or visitor counter (folded away by ``fingerprint.simhash``) does not make a page look
alive. A 304 Not Modified is "unchanged"; a failed fetch is "unknown" (``changed=None``) and
reschedules without teaching the estimate anything.

Persistence: ``RevisitState.to_row()`` / ``from_row()`` are flat tuples for an SQLite table
(``SQL_COLUMNS``); the simhash is stored signed, as SQLite integers are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from politecrawl.continuity.fingerprint import (
    DEFAULT_MAX_DISTANCE,
    hamming,
    to_signed64,
    to_unsigned64,
)
from politecrawl.errors import ConfigError, StateError

__all__ = [
    "CHANGEFREQ_S",
    "SQL_COLUMNS",
    "RevisitPolicy",
    "RevisitState",
    "content_changed",
]

DAY = 86400.0

CHANGEFREQ_S: dict[str, float] = {
    "always": 0.0,
    "hourly": 3600.0,
    "daily": DAY,
    "weekly": 7 * DAY,
    "monthly": 30 * DAY,
    "yearly": 365 * DAY,
    "never": math.inf,
}
"""Sitemap ``<changefreq>`` -> the change period it claims, in seconds."""

SQL_COLUMNS = (
    "last_fetch REAL, next_due REAL NOT NULL, interval REAL NOT NULL, checks REAL NOT NULL, "
    "changes REAL NOT NULL, observed_s REAL NOT NULL, total_checks INTEGER NOT NULL, "
    "total_changes INTEGER NOT NULL, etag TEXT, last_modified TEXT, fingerprint INTEGER"
)
"""Column definitions matching ``RevisitState.to_row()`` (add your own URL key column)."""

Row = tuple[
    float | None, float, float, float, float, float, int, int, str | None, str | None, int | None
]


@dataclass(slots=True)
class RevisitState:
    """What is known about one URL's changes; updated by ``RevisitPolicy.update``."""

    last_fetch: float | None = None  # epoch seconds of the last fetch (any outcome)
    next_due: float = 0.0  # when to fetch again (0: now)
    interval: float = DAY  # seconds between the last fetch and next_due
    checks: float = 0.0  # decayed count of revisits with a known outcome (n)
    changes: float = 0.0  # decayed count of those that found a change (X)
    observed_s: float = 0.0  # decayed sum of those revisits' intervals
    total_checks: int = 0  # plain counts, for statistics
    total_changes: int = 0
    etag: str | None = None  # validators for the conditional request
    last_modified: str | None = None
    fingerprint: int | None = None  # simhash of the last content (unsigned)

    def to_row(self) -> Row:
        """A flat tuple in ``SQL_COLUMNS`` order."""
        fp = None if self.fingerprint is None else to_signed64(self.fingerprint)
        return (
            self.last_fetch, self.next_due, self.interval, self.checks, self.changes,
            self.observed_s, self.total_checks, self.total_changes, self.etag,
            self.last_modified, fp,
        )  # fmt: skip

    @classmethod
    def from_row(cls, row: Row | tuple[object, ...]) -> RevisitState:
        """Inverse of ``to_row`` (accepts what sqlite3 hands back)."""
        (last, due, interval, checks, changes, observed, n, x, etag, lm, fp) = row

        def num(value: object) -> float:
            if not isinstance(value, int | float):
                raise StateError(f"bad RevisitState row value {value!r}")
            return float(value)

        def text(value: object) -> str | None:
            return None if value is None else str(value)

        return cls(
            None if last is None else num(last), num(due), num(interval), num(checks),
            num(changes), num(observed), int(num(n)), int(num(x)), text(etag), text(lm),
            None if fp is None else to_unsigned64(fp if isinstance(fp, int) else int(num(fp))),
        )  # fmt: skip


def content_changed(
    old: int | None, new: int | None, max_distance: int = DEFAULT_MAX_DISTANCE
) -> bool | None:
    """Whether two simhashes are more than near-duplicates apart; None if one is unknown."""
    if old is None or new is None:
        return None
    return hamming(old, new) > max_distance


class RevisitPolicy:
    """Revisit intervals from per-URL Poisson change-rate estimates."""

    def __init__(
        self,
        min_s: float = DAY,
        max_s: float = 30 * DAY,
        *,
        initial_s: float = 7 * DAY,
        target_p: float = 0.5,
        memory: float = 0.9,
        prior_weight: float = 1.0,
    ) -> None:
        if not 0 < min_s <= max_s:
            raise ConfigError("need 0 < min_s <= max_s")
        if not 0.0 < target_p < 1.0:
            raise ConfigError("target_p must be in (0, 1)")
        if not 0.0 < memory <= 1.0:
            raise ConfigError("memory must be in (0, 1]")
        if prior_weight <= 0:
            raise ConfigError("prior_weight must be > 0")
        self.min_s, self.max_s = float(min_s), float(max_s)
        self.initial_s = self.clamp(initial_s)
        self.target_p = target_p
        self.memory = memory
        self.prior_weight = prior_weight
        self._wait_factor = -math.log(1.0 - target_p)

    def clamp(self, seconds: float) -> float:
        """``seconds`` limited to ``[min_s, max_s]``."""
        if math.isnan(seconds):
            return self.max_s
        return min(self.max_s, max(self.min_s, seconds))

    # -- state ---------------------------------------------------------------------------------

    def new_state(self, hint_s: float | None = None, *, now: float = 0.0) -> RevisitState:
        """A never-fetched URL, due at ``now``, its rate seeded from ``hint_s`` or initial_s.

        The seed is ``prior_weight`` pseudo-revisits at the hinted period whose change count
        makes the estimator return exactly ``1 / period``.
        """
        period = self.clamp(self.initial_s if hint_s is None else hint_s)
        n = self.prior_weight
        # solve -ln((n - X + 0.5) / (n + 0.5)) / period = 1 / period for X
        changes = (n + 0.5) * (1.0 - math.exp(-1.0))
        return RevisitState(
            next_due=now,
            interval=self._interval(1.0 / period),
            checks=n,
            changes=min(n, changes),
            observed_s=n * period,
        )

    def rate(self, state: RevisitState) -> float:
        """Estimated changes per second (Cho & Garcia-Molina, bias-reduced); 0 if none seen."""
        n, x = state.checks, min(state.changes, state.checks)
        if n <= 0 or state.observed_s <= 0:
            return 1.0 / self.initial_s
        mean_interval = state.observed_s / n
        return -math.log((n - x + 0.5) / (n + 0.5)) / mean_interval

    def _interval(self, rate: float) -> float:
        if rate <= 0:
            return self.max_s
        return self.clamp(self._wait_factor / rate)

    def update(
        self,
        state: RevisitState,
        now: float,
        changed: bool | None,
        not_modified_304: bool = False,
        *,
        etag: str | None = None,
        last_modified: str | None = None,
        fingerprint: int | None = None,
    ) -> float:
        """Record a fetch of the URL at ``now``; returns (and stores) the next due time.

        ``changed``: did the content change since the last fetch (None: unknown, e.g. the
        fetch failed; a first fetch teaches nothing either). A 304 means unchanged.
        Validators and the fingerprint are stored when given; a 200 without validators
        clears the old ones (they described the old body).
        """
        last = state.last_fetch
        first = last is None
        if not_modified_304:
            changed = False
        if last is not None and changed is not None:
            elapsed = max(0.0, now - last)
            keep = self.memory
            state.checks = keep * state.checks + 1.0
            state.changes = keep * state.changes + (1.0 if changed else 0.0)
            state.observed_s = keep * state.observed_s + elapsed
            state.total_checks += 1
            state.total_changes += 1 if changed else 0
        state.last_fetch = now
        if not_modified_304:
            state.etag = etag or state.etag
            state.last_modified = last_modified or state.last_modified
        elif first or changed is not None:
            state.etag, state.last_modified = etag, last_modified
        if fingerprint is not None:
            state.fingerprint = to_unsigned64(fingerprint)
        state.interval = self._interval(self.rate(state))
        state.next_due = now + state.interval
        return state.next_due

    def reschedule(self, state: RevisitState) -> float:
        """A URL fetched before under another window (a crawl made without ``--recrawl``, or
        with other bounds): its interval estimated again within this policy's bounds from
        what is known of its changes, counted from its last fetch; returns (and stores) the
        next due time. Nothing is learned: no fetch happened."""
        if state.last_fetch is None:
            raise StateError("a URL never fetched has no revisit to reschedule")
        state.interval = self._interval(self.rate(state))
        state.next_due = state.last_fetch + state.interval
        return state.next_due

    # -- hints and priorities ------------------------------------------------------------------

    def hint_from_sitemap(
        self, changefreq: str | None, lastmod: float | None, *, now: float
    ) -> float | None:
        """A seed period (seconds, clamped) from a sitemap entry; None if it says nothing.

        ``changefreq`` names a period; ``lastmod`` gives an age (``now - lastmod``), itself
        an estimate of the mean time between changes. With both, the geometric mean of the
        two rates: sitemaps often claim "daily" for pages that never change.
        """
        periods: list[float] = []
        if changefreq is not None:
            period = CHANGEFREQ_S.get(changefreq.strip().lower())
            if period is not None:
                periods.append(max(period, 1.0))
        if lastmod is not None and math.isfinite(lastmod):
            periods.append(max(now - lastmod, 1.0))
        if not periods:
            return None
        return self.clamp(math.sqrt(periods[0] * periods[1]) if len(periods) == 2 else periods[0])

    def note_lastmod(self, state: RevisitState, lastmod: float, now: float) -> float:
        """A sitemap says the page changed at ``lastmod``: due now if that is after our fetch."""
        if state.last_fetch is not None and lastmod > state.last_fetch:
            state.next_due = min(state.next_due, now)
        return state.next_due

    def p_changed(self, state: RevisitState, now: float) -> float:
        """Probability that the page changed since it was last fetched (1 if never fetched)."""
        if state.last_fetch is None:
            return 1.0
        elapsed = max(0.0, now - state.last_fetch)
        return 1.0 - math.exp(-self.rate(state) * elapsed)

    def priority(self, state: RevisitState, relevance: float, now: float) -> float:
        """Expected value of revisiting now: P(changed since last fetch) x relevance."""
        return self.p_changed(state, now) * relevance
