"""The frontier: per-politeness-key URL queues, the penalty box, and the crawl's memory.

Three narrow protocols, async so a networked backend fits:

- ``Frontier`` (8 methods): the queues and the lease, all that one turn of the crawl uses
  (``turn``, ``robots.gate``, ``request``, ``admission``): lease -> pop_url -> begin_request ->
  finish / push_back / drop_queued -> release, and ``add`` for admitted links;
- ``QueueUpkeep`` (2): re-prioritising and trimming the queues, off the turn's path;
- ``CrawlStore``: the rest of the crawl's state (seen-set, site states, robots.txt copies,
  validators, counters), which the queues' backend opens and shares its connection with;
- ``Backend.outbox`` says whether a backend can be partitioned over processes
  (``--processes N``: the ``Outbox`` its store keeps the links sent to the others in), so the
  engine never asks which backend it has.

``SqliteFrontier`` (with ``SqliteStore``) is the embedded default, ``RedisFrontier`` (with
``RedisStore``) the shared one. Every backend keeps the same promises, checked by one
contract suite (tests/test_frontier_contract.py):

- a key is leased to one worker at a time, and is not handed out again before the
  ``next_allowed`` time it was released with;
- among keys whose time has come, the one holding the highest-priority URL goes first, and
  within a key the highest-priority URL (FIFO among equals); except that a key due for
  ``max_wait_s`` or longer goes before them all (longest-waiting first), so under overload
  a site with only low-priority URLs is still served within a bounded time;
- one server, many names: a key queued with an ``ip`` (the address its host resolves to) is
  leased only while no other key of that IP is leased, and not before the IP's next time
  (the largest ``HostState.ip_next`` a release of one of its keys gave); keys kept waiting
  by their IP take turns in the order they were found waiting. A key's IP is its host's
  address as first given, until the host moves: given ``addresses`` (where the request for
  a URL would connect now), a due key whose IP its host no longer has moves to the host's
  first address and is gated there; ``connected`` (the address a request actually went to)
  moves it too, and it holds that IP until its release unless another key does;
- a URL is queued at most once (the seen-set), and every queued URL ends ``finish``-ed or is
  still queued: none is lost, across restarts too;
- the budget policy (``defer_ratio``, ``not_worth_it``): a due key whose best URL is below
  that share of the best queued at a key that can be asked now or soon is not leased while
  that better key waits on its own delay or turn (unless it is due for ``max_wait_s``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from politecrawl.polite.politeness import HostState

PAGE, SITEMAP = 0, 1


def not_worth_it(prio: float, best: float | None, ratio: float) -> bool:
    """The budget policy (``--defer-ratio``): a due key whose best URL (``prio``) is below
    ``ratio`` of ``best``, the best queued at a key that can be asked now or soon (ready, in
    flight or waiting for its ordinary turn: ``politeness.only_its_turn``), waits while that
    better URL waits on its own site's delay or turn, as links from unproductive sites "aren't
    crawled unless there's nothing else to do" (../shared/seeds/004). A page budget is then
    spent on the best URLs known, at the cost of time; ``max_wait_s`` still bounds every
    site's wait. Sites that fail, back off or are parked are no reference: the crawl keeps
    its pace when its best links point at hosts that fail. Only for priorities >= 0 (the
    focused strategies' scores)."""
    return bool(ratio) and best is not None and 0.0 <= prio < ratio * best


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


@dataclass(frozen=True, slots=True)
class Lease:
    """What ``Frontier.lease`` gives: a site to take one turn on, or when to ask again."""

    host: HostState | None  # the leased key's politeness state, as stored (None: none due)
    wake: float | None = None  # none leased: when one may be (0 now, None: nothing queued)

    @property
    def key(self) -> str | None:
        return None if self.host is None else self.host.key


class Frontier(Protocol):
    """The queues and the lease: what one turn of the crawl needs, and nothing else."""

    async def add(self, entries: Sequence[UrlEntry]) -> list[bool]:
        """Queue entries not seen before; True at each index that was queued."""
        ...

    async def lease(self, now: float) -> Lease:
        """The next due key, leased to this worker (see the module docstring for the order)."""
        ...

    async def pop_url(self, key: str, now: float) -> UrlEntry | None:
        """The leased key's best URL due at ``now``, marked in flight."""
        ...

    async def push_back(self, entry: UrlEntry, *, front: bool = False) -> None:
        """A popped URL queued again (a retry, or not fetched this turn)."""
        ...

    async def begin_request(self, key: str, state: HostState) -> None:
        """Durably record that a request for ``key`` goes out now (before it does)."""
        ...

    async def finish(self, url: str, outcome: str) -> None:
        """A popped URL is done, with its outcome label."""
        ...

    async def drop_queued(self, key: str, outcome: str) -> int:
        """Finish every queued URL of ``key`` (the site is given up); how many."""
        ...

    async def release(self, key: str, state: HostState) -> None:
        """The turn is over: save the key's state and hand it out again at its next time."""
        ...


class QueueUpkeep(Protocol):
    """Queue upkeep off the turn's path (``--max-queue``, and focused re-scoring); every
    backend has it, and the contract suite checks it."""

    async def reprioritize(self, items: Sequence[tuple[str, str, float]]) -> int:
        """New priorities for queued ``(url, key, priority)``; how many were still queued."""
        ...

    async def trim(self, max_queued: int) -> int:
        """Drop the lowest-priority queued URLs beyond ``max_queued``; how many."""
        ...

    async def queued_counts(self, keys: Sequence[str]) -> dict[str, int]:
        """URLs each key still has queued, due now or later: what a site lost left behind
        (``engine.losses``; asked before the frontier closes)."""
        ...


class CrawlStore(Protocol):
    """The rest of the crawl's state: seen-set, site states, robots.txt copies, validators,
    counters. Backends share one connection with their ``Frontier``; ``close`` closes both."""

    async def unseen(self, urls: Sequence[str]) -> list[str]: ...
    async def mark_seen(self, urls: Sequence[str]) -> None: ...
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


class Outbox(Protocol):
    """Links sent to the other processes of a partitioned crawl (``--processes N``), kept in
    the sender's store until their owner says it saved them (``engine.partition``)."""

    def outbox_add(self, peer: int, batch: bytes) -> int: ...
    def outbox_drop(self, peer: int, upto: int) -> None: ...
    def outbox_rows(self) -> list[tuple[int, int, bytes]]: ...


class Refusals(Protocol):
    """URLs refused for a reason an option decides, kept so that a resumed crawl whose
    options lift the reason admits them again (``engine.readmit``)."""

    def note_refused(self, rows: Sequence[tuple[str, str, int, int, int, float]]) -> None:
        """``(url, reason, depth, hops, kind, priority)`` the gate refused."""
        ...

    def refused_rows(self) -> list[tuple[str, str, int, int, int, float]]: ...
    def forget_refused(self, urls: Sequence[str]) -> None: ...
    def finished_as(
        self, outcome: str, *, prefix: bool = False
    ) -> list[tuple[str, int, int, int, float]]:
        """``(url, depth, hops, kind, priority)`` of the URLs finished with ``outcome`` (with
        ``prefix``: an outcome starting with it, ``duplicate:``)."""
        ...

    async def requeue(self, entries: Sequence[UrlEntry]) -> int:
        """Queue these again, whatever the seen-set says, each due at its ``not_before``;
        how many."""
        ...


# where a request for a URL would connect now, without waiting (``GuardedResolver.current``):
# the addresses its host has, the one tried first first; None while its name is being looked up
Addresses = Callable[[str], Sequence[str] | None]


class Backend(Frontier, QueueUpkeep, Protocol):
    """A backend as ``frontier.factory.make_frontier`` opens it: the queues with their upkeep,
    and their store."""

    # the per-IP rule follows each host's address (see the module docstring); None: a key
    # keeps the IP it was first given
    addresses: Addresses | None

    async def connected(self, key: str, ip: str) -> None:
        """The leased ``key``'s request went to ``ip``, the address actually connected to."""
        ...

    @property
    def outbox(self) -> Outbox | None:
        """Where a partition keeps the links it sends (None: this backend cannot be
        partitioned over processes; a shared frontier is shared already)."""
        ...

    @property
    def refusals(self) -> Refusals | None:
        """Where refusals an option can lift are kept (None: not kept; a shared crawl keeps
        its scope with the crawl)."""
        ...

    @property
    def store(self) -> CrawlStore: ...
    @property
    def refetches(self) -> int:
        """URLs found in flight (a crash, an expired lease): they will be fetched again."""
        ...


__all__ = [
    "PAGE",
    "SITEMAP",
    "Addresses",
    "Backend",
    "CrawlStore",
    "Frontier",
    "Lease",
    "Outbox",
    "QueueUpkeep",
    "Refusals",
    "RobotsRecord",
    "UrlEntry",
]
