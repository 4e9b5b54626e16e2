"""robots.txt decisions per origin: what the last fetch said and how long it stays true.

RFC 9309 section 2.3.1: 2xx -> parse (whatever the Content-Type, the seeds say); 4xx other
than 429 -> no rules ("unavailable": allow all); 429, 5xx, network failure -> "unreachable":
disallow everything and ask again later, with backoff. Good answers are cached ``ttl_s``
(24 h by default, section 2.4); failures only until the next retry. The raw copies live in
the frontier's store, so a resumed crawl does not ask again while they are fresh.
"""

from __future__ import annotations

from collections import OrderedDict

from politecrawl.frontier import Frontier, RobotsRecord
from politecrawl.robots import RobotsRules

MAX_ROBOTS_BYTES = 512_000  # RFC 9309 2.5: parse at least 500 KiB
LAST_GOOD_AFTER_S = 30 * 86400.0  # RFC 9309 2.3.1.4: unreachable 30 days -> last good copy
FAILED = 0  # status stored for a network failure


def is_usable(status: int) -> bool:
    """True when the answer settles the rules (2xx or 4xx but 429)."""
    return 200 <= status < 300 or (400 <= status < 500 and status != 429)


class RobotsCache:
    def __init__(
        self, store: Frontier, ttl_s: float, retry_s: float, parsed_cap: int = 10_000
    ) -> None:
        self._store = store
        self.ttl_s = ttl_s
        self.retry_s = retry_s
        self._parsed: OrderedDict[str, tuple[float, int, RobotsRules]] = OrderedDict()
        self._cap = parsed_cap
        self.failures: dict[str, int] = {}

    async def rules_for(self, origin: str, now: float) -> RobotsRules | None:
        """The rules in force for ``origin``, or None when robots.txt must be fetched now."""
        hit = self._parsed.get(origin)
        if hit is None:
            rec = await self._store.robots(origin)
            if rec is None:
                return None
            hit = (rec.fetched_at, rec.status, self._rules(rec))
            self._remember(origin, hit)
        fetched_at, status, rules = hit
        fresh_for = self.ttl_s if is_usable(status) else self._retry_after(origin)
        if now - fetched_at >= fresh_for:
            return None
        self._parsed.move_to_end(origin)
        return rules

    def _retry_after(self, origin: str) -> float:
        return float(self.retry_s * 2.0 ** max(0, self.failures.get(origin, 1) - 1))

    @staticmethod
    def _rules(rec: RobotsRecord) -> RobotsRules:
        if 200 <= rec.status < 300:
            return RobotsRules.parse(rec.body[:MAX_ROBOTS_BYTES])
        if is_usable(rec.status):
            return RobotsRules.allow_all()
        if rec.good_body is not None and rec.fetched_at - rec.failing_since >= LAST_GOOD_AFTER_S:
            return RobotsRules.parse(rec.good_body)
        return RobotsRules.disallow_all()

    def _remember(self, origin: str, hit: tuple[float, int, RobotsRules]) -> None:
        self._parsed[origin] = hit
        self._parsed.move_to_end(origin)
        while len(self._parsed) > self._cap:
            self._parsed.popitem(last=False)

    async def record(self, origin: str, status: int, body: bytes, now: float) -> RobotsRules:
        """Store a fetch's answer; a failure keeps the last good copy's body for the log."""
        if is_usable(status):
            self.failures.pop(origin, None)
        else:
            self.failures[origin] = self.failures.get(origin, 0) + 1
        rec = RobotsRecord(origin, now, status, body[:MAX_ROBOTS_BYTES])
        if not is_usable(status):
            prev = await self._store.robots(origin)
            if prev is not None:
                ok = 200 <= prev.status < 300
                rec = RobotsRecord(
                    origin,
                    now,
                    status,
                    rec.body,
                    failing_since=prev.failing_since
                    or (now if is_usable(prev.status) else prev.fetched_at),
                    good_body=prev.body if ok else prev.good_body,
                )
            else:
                rec = RobotsRecord(origin, now, status, rec.body, failing_since=now)
        await self._store.save_robots(rec)
        rules = self._rules(rec)
        self._remember(origin, (now, rec.status, rules))
        return rules

    def retry_at(self, origin: str) -> float:
        """When an unreachable robots.txt may be asked again (backoff doubles per failure)."""
        hit = self._parsed.get(origin)
        return (hit[0] if hit else 0.0) + self._retry_after(origin)

    def status(self, origin: str) -> int:
        """Status of the copy in force (as last returned by ``rules_for``)."""
        hit = self._parsed.get(origin)
        return hit[1] if hit is not None else FAILED

    def unreachable_count(self, origin: str) -> int:
        return self.failures.get(origin, 0)
