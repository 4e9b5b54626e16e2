"""The frontier: per-politeness-key URL queues, the penalty box, and the crawl's memory.

``Frontier`` is the seam (async, so a networked backend fits); ``SqliteFrontier`` is the
embedded default, ``RedisFrontier`` the shared one. Every backend keeps the same promises,
checked by one contract suite (tests/test_frontier_contract.py):

- a key is leased to one worker at a time, and is not handed out again before the
  ``next_allowed`` time it was released with;
- among keys whose time has come, the one holding the highest-priority URL goes first, and
  within a key the highest-priority URL (FIFO among equals); except that a key due for
  ``max_wait_s`` or longer goes before them all (longest-waiting first), so under overload
  a site with only low-priority URLs is still served within a bounded time;
- one server, many names: a key queued with an ``ip`` (the address its host resolves to) is
  leased only while no other key of that IP is leased, and not before the IP's next time
  (the largest ``HostState.ip_next`` a release of one of its keys gave); keys kept waiting
  by their IP take turns in the order they were found waiting;
- a URL is queued at most once (the seen-set), and every queued URL ends ``finish``-ed or is
  still queued: none is lost, across restarts too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from politecrawl.politeness import HostState

PAGE, SITEMAP = 0, 1


@dataclass(slots=True)
class UrlEntry:
    url: str
    key: str
    depth: int = 0
    hops: int = 0
    attempt: int = 0
    not_before: float = 0.0
    priority: float = 0.0
    kind: int = PAGE
    refetch: bool = False
    ip: str = ""  # the server address of the key's host ("" unknown: no IP rule)


@dataclass(frozen=True, slots=True)
class RobotsRecord:
    """A robots.txt fetch; while it fails, the last good copy is kept beside it."""

    origin: str
    fetched_at: float
    status: int
    body: bytes
    failing_since: float = 0.0
    good_body: bytes | None = None
    failures: int = 0  # fetches in a row that failed (backoff, give-up): shared by workers
    redirect_to: str = ""  # a redirect chain under way: the next hop to ask, and its number
    hops: int = 0


class Frontier(Protocol):
    async def add(self, entries: Sequence[UrlEntry]) -> list[bool]:
        """Queue entries not seen before; True at each index that was queued."""
        ...

    async def unseen(self, urls: Sequence[str]) -> list[str]: ...
    async def mark_seen(self, urls: Sequence[str]) -> None: ...
    async def lease(self, now: float) -> str | None: ...
    async def next_wake(self) -> float | None: ...
    async def pop_url(self, key: str, now: float) -> UrlEntry | None: ...
    async def push_back(self, entry: UrlEntry, *, front: bool = False) -> None: ...
    async def begin_request(self, key: str, state: HostState) -> None:
        """Durably record that a request for ``key`` goes out now (before it does)."""
        ...

    async def release(self, key: str, state: HostState) -> None: ...
    async def finish(self, url: str, outcome: str) -> None: ...
    async def drop_queued(self, key: str, outcome: str) -> int: ...
    async def reprioritize(self, items: Sequence[tuple[str, str, float]]) -> int: ...
    async def trim(self, max_queued: int) -> int: ...
    async def host(self, key: str) -> HostState: ...
    async def robots(self, origin: str) -> RobotsRecord | None: ...
    async def save_robots(self, record: RobotsRecord) -> None: ...
    async def validators(self, url: str) -> tuple[str | None, str | None, float] | None:
        """ETag, Last-Modified and fetch time of the last stored copy (conditional GET)."""
        ...

    async def save_validators(
        self, url: str, etag: str | None, last_modified: str | None, fetched_at: float
    ) -> None: ...
    async def add_counters(self, delta: dict[str, int]) -> None: ...
    async def counters(self) -> dict[str, int]: ...
    async def stats(self) -> dict[str, int]: ...
    async def flush(self) -> None: ...
    async def close(self) -> None: ...


__all__ = ["PAGE", "SITEMAP", "Frontier", "RobotsRecord", "UrlEntry"]
