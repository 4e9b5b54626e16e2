"""robots.txt decisions per origin: what the last fetch said and how long it stays true.

RFC 9309 section 2.3.1, as ``outcome.robots_outcome`` reads a status: 2xx -> parse (whatever
the Content-Type, the seeds say); 4xx other than 429 -> no rules ("unavailable": allow all);
429, 5xx, network failure -> "unreachable": disallow everything and ask again later, with the
backoff ``politeness.robots_retry_s`` computes. Good answers are cached ``ttl_s``
(24 h by default, section 2.4); failures only until the next retry. The raw copies live in
the frontier's store, so a resumed crawl does not ask again while they are fresh.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import NamedTuple

from politecrawl.engine.outcome import (
    MAX_ROBOTS_BYTES,
    RobotsOutcome,
    robots_attempts,
    robots_outcome,
    robots_usable,
)
from politecrawl.frontier import CrawlStore, RobotsRecord
from politecrawl.polite.politeness import robots_retry_s
from politecrawl.robots.hops import HopBook
from politecrawl.robots.rules import RobotsRules

LAST_GOOD_AFTER_S = 30 * 86400.0  # RFC 9309 2.3.1.4: unreachable 30 days -> last good copy
FAILED = 0  # status stored for a network failure


class _Hit(NamedTuple):
    fetched_at: float
    status: int
    rules: RobotsRules
    failures: int
    redirect_to: str
    hops: int


class RobotsCache:
    """Parsed rules per origin in front of the store's raw copies.

    Everything a decision depends on (the copy, the failures in a row, a redirect chain under
    way) is in the store's ``RobotsRecord``, so workers sharing a frontier and a resumed
    crawl decide alike; when this process's copy says "ask now", the store is read again in
    case another worker already did.
    """

    def __init__(
        self,
        store: CrawlStore,
        ttl_s: float,
        retry_s: float,
        parsed_cap: int = 10_000,
        *,
        retry_max_s: float | None = None,
        attempts: tuple[int, int] = (3, 3),
    ) -> None:
        self._store = store
        self.ttl_s = ttl_s
        self.retry_s = retry_s
        self._retry_max_s = retry_max_s
        self._attempts = attempts  # (answered 429/5xx, no answer): ``robots_attempts``
        self.hops = HopBook(ttl_s, retry_s)  # redirects to other hosts
        self._parsed: OrderedDict[str, _Hit] = OrderedDict()
        self._cap = parsed_cap
        self._unfetchable: dict[str, str] = {}  # origin -> why (a refused address...)
        # origins whose good copy was fetched and no page asked under it yet: in force until
        # one is, however old (see ``_fresh``)
        self._unused: set[str] = set()
        # origins whose robots.txt ever answered (a usable status, or a good copy kept while
        # it fails): asked for hours when it fails (``robots_attempts``); one that never
        # answered (a dead link's host, a dead port of a live host) a few times
        self._answered: set[str] = set()

    async def rules_for(self, origin: str, now: float) -> RobotsRules | None:
        """The rules in force for ``origin``, or None when robots.txt must be fetched now."""
        hit = self._parsed.get(origin)
        if hit is None or not self._fresh(origin, hit, now):
            rec = await self._store.robots(origin)
            if rec is None:
                return None
            if hit is None or rec.fetched_at != hit.fetched_at or rec.hops != hit.hops:
                hit = self._hit(rec)
                self._remember(origin, hit)
        if not self._fresh(origin, hit, now):
            return None
        self._parsed.move_to_end(origin)
        return hit.rules

    def _fresh(self, origin: str, hit: _Hit, now: float) -> bool:
        """Whether the copy is in force. A good copy fetched and not yet used for a page is,
        however old: with a site's delay (its Crawl-delay, --min-delay, or its turn among the
        names of one server) at or past ``ttl_s``, each copy was stale by the time the page it
        was fetched for could go, and the crawl asked robots.txt at every turn, never a
        page (``--robots-ttl 0`` did that at once)."""
        if hit.redirect_to:
            return False  # a redirect chain under way: its next hop is due
        if not robots_usable(hit.status):
            return now - hit.fetched_at < self._retry_after(hit.failures)
        return now - hit.fetched_at < self.ttl_s or origin in self._unused

    async def forget_failures(self, origin: str) -> None:
        """Ask an unreachable robots.txt again at once, its failures in a row forgotten: a
        resume re-queues the URLs dropped with its site (``engine.readmit``), and the old
        count would drop them again before a single ask."""
        prev = await self._store.robots(origin)
        if prev is None or robots_usable(prev.status):
            return
        await self._store.save_robots(dataclasses.replace(prev, fetched_at=0.0, failures=0))
        self._parsed.pop(origin, None)

    def used(self, origin: str) -> None:
        """A page of ``origin`` is asked under the copy in force: from now on the TTL alone
        says how long it stays."""
        self._unused.discard(origin)

    def _retry_after(self, failures: int) -> float:
        return robots_retry_s(self.retry_s, failures, self._retry_max_s)

    def _hit(self, rec: RobotsRecord) -> _Hit:
        if robots_usable(rec.status) or rec.good_body is not None:
            self._answered.add(rec.origin)
        return _Hit(
            rec.fetched_at, rec.status, self._rules(rec), rec.failures, rec.redirect_to, rec.hops
        )

    @staticmethod
    def _rules(rec: RobotsRecord) -> RobotsRules:
        if robots_outcome(rec.status) is RobotsOutcome.RULES:
            return RobotsRules.parse(rec.body[:MAX_ROBOTS_BYTES], origin=rec.origin)
        if robots_usable(rec.status):
            return RobotsRules.allow_all()
        if rec.good_body is not None and rec.fetched_at - rec.failing_since >= LAST_GOOD_AFTER_S:
            return RobotsRules.parse(rec.good_body, origin=rec.origin)
        return RobotsRules.disallow_all()

    def _remember(self, origin: str, hit: _Hit) -> None:
        self._parsed[origin] = hit
        self._parsed.move_to_end(origin)
        while len(self._parsed) > self._cap:
            self._unused.discard(self._parsed.popitem(last=False)[0])

    async def record(self, origin: str, status: int, body: bytes, now: float) -> RobotsRules:
        """Store a fetch's answer; a failure keeps the last good copy's body for the log."""
        prev = await self._store.robots(origin)
        rec = RobotsRecord(origin, now, status, body[:MAX_ROBOTS_BYTES])
        if not robots_usable(status):
            failures = (prev.failures if prev is not None else 0) + 1
            if prev is not None:
                ok = robots_outcome(prev.status) is RobotsOutcome.RULES
                rec = RobotsRecord(
                    origin,
                    now,
                    status,
                    rec.body,
                    failing_since=prev.failing_since
                    or (now if robots_usable(prev.status) else prev.fetched_at),
                    good_body=prev.body if ok else prev.good_body,
                    failures=failures,
                )
            else:
                rec = RobotsRecord(
                    origin, now, status, rec.body, failing_since=now, failures=failures
                )
        await self._store.save_robots(rec)
        hit = self._hit(rec)
        self._remember(origin, hit)
        if robots_usable(status):
            self._unused.add(origin)
        return hit.rules

    async def record_redirect(self, origin: str, target: str, hops: int, now: float) -> None:
        """robots.txt redirected: the next hop is asked at the site's next turn (whichever
        worker takes it); the copy in force and the failure count are kept meanwhile."""
        prev = await self._store.robots(origin)
        if prev is None:  # a first fetch redirected: nothing in force yet
            prev = RobotsRecord(origin, now, FAILED, b"")
        rec = dataclasses.replace(prev, redirect_to=target, hops=hops)
        await self._store.save_robots(rec)
        self._remember(origin, self._hit(rec))

    def pending_redirect(self, origin: str) -> tuple[str, int] | None:
        """(next hop, its number) of a redirect chain under way (as ``rules_for`` last saw)."""
        hit = self._parsed.get(origin)
        return (hit.redirect_to, hit.hops) if hit is not None and hit.redirect_to else None

    def retry_at(self, origin: str) -> float:
        """When an unreachable robots.txt may be asked again (backoff doubles per failure)."""
        hit = self._parsed.get(origin)
        return (hit.fetched_at if hit else 0.0) + self._retry_after(hit.failures if hit else 1)

    def current(self, origin: str) -> RobotsRules | None:
        """The rules last read for ``origin``, fresh or not: the copy in force when a page
        fetched under it is judged (aipref-attach-04 §3.3)."""
        hit = self._parsed.get(origin)
        return hit.rules if hit is not None else None

    def status(self, origin: str) -> int:
        """Status of the copy in force (as last returned by ``rules_for``)."""
        hit = self._parsed.get(origin)
        return hit.status if hit is not None else FAILED

    def mark_unfetchable(self, origin: str, why: str) -> None:
        """Nothing of ``origin`` can ever be fetched (its address is refused, its URL
        invalid): this process drops its URLs without asking again (a resume asks once)."""
        self._unfetchable[origin] = why

    def unfetchable(self, origin: str) -> str | None:
        return self._unfetchable.get(origin)

    def unreachable_count(self, origin: str) -> int:
        hit = self._parsed.get(origin)
        return hit.failures if hit is not None else 0

    def given_up(self, origin: str) -> bool:
        """robots.txt failed as many times in a row as a page may (``robots_attempts``: fewer
        if it never answered)."""
        hit = self._parsed.get(origin)
        if hit is None or robots_usable(hit.status):
            return False
        answered = origin in self._answered
        return hit.failures >= robots_attempts(hit.status, *self._attempts, answered)
