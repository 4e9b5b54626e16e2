"""Name lookups at the web's speed: c-ares (aiodns), concurrent, cached, resolved ahead.

On the open web an uncached lookup takes tens to hundreds of milliseconds. ``getaddrinfo`` in
a few threads (aiohttp's ThreadedResolver) then caps a crawl at a few dozen new sites a
second; c-ares runs every lookup at once on the event loop's own thread. ``NameCache``:

- keeps each answer for its TTL (RFC 1035 3.2.1; clamped to ``[min_ttl_s, max_ttl_s]``: a
  hosts-file answer has none), and each failure for ``negative_ttl_s`` (RFC 2308: a name
  that does not resolve, linked from a thousand pages, is asked once per negative TTL);
- shares one lookup among all who wait for the same name (never two queries in flight);
- resolves ahead: ``prefetch`` starts a lookup when a site is queued, so the site's turn
  finds its answer cached; an answer used in the last fifth of its TTL is refreshed in the
  background, and ``keep_for`` (after each turn) refreshes, just before the site's next turn,
  an answer whose TTL would end first: a due site does not wait on DNS;
- has its own timeout and tries (c-ares' per-try timeout, plus a hard stop around it).

c-ares reads /etc/resolv.conf and /etc/hosts itself. The caller (``resolver.GuardedResolver``)
applies ``--resolve`` overrides before asking here, and the address guard after: the cache
holds answers, not permissions.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import aiodns
import aiodns.error

from politecrawl.errors import FetchError

__all__ = ["NameCache", "NameNotResolved"]

_MIN_TTL_S = 30.0  # a zero TTL (hosts file, some CDNs) would mean one lookup per request
_MAX_TTL_S = 3600.0
_REFRESH_SHARE = 0.2  # an answer used in the last fifth of its life is refreshed ahead
_LEAD_S = 1.0  # an answer that would expire before a site's next turn is refreshed this early
_MAX_INFLIGHT = 256  # prefetches at once; lookups a turn waits for are never held back
_MAX_QUEUED = 100_000  # prefetches waiting; beyond, a name is looked up at its turn
_MAX_ENTRIES = 200_000
# a failed lookup (SERVFAIL, a timeout) is kept this long at most: long enough that a name
# linked from a thousand pages is not asked a thousand times, short enough that the next turn
# of its site asks again (kept for the negative TTL, 300 s, every retry of a site's robots.txt
# met the cached failure, and a 20 s DNS outage gave its sites up for good). RFC 2308 7.1
# allows caching a server failure; the negative TTL is for names that do not exist
_TRANSIENT_FAILURE_S = 5.0
_JUST_FAILED_S = 1.0  # a failure this fresh answers a turn's lookup too: not asked twice


class NameNotResolved(FetchError, socket.gaierror):
    """A name with no address: aiohttp wraps it as a DNS error. Its ``errno`` says which,
    as ``getaddrinfo``'s would: ``EAI_NONAME`` when DNS says the name does not exist
    (NXDOMAIN, no data: permanent, ``no_such_host``), ``EAI_AGAIN`` when the lookup failed
    (SERVFAIL, a timeout, no server answering: transient)."""


# c-ares' answers that mean the name does not exist, not that the lookup failed
_NO_SUCH_NAME = frozenset({aiodns.error.ARES_ENOTFOUND, aiodns.error.ARES_ENODATA})


def _lookup_errno(exc: BaseException, waited_s: float, timeout_s: float) -> int:
    """``EAI_NONAME`` for DNS saying the name does not exist, else ``EAI_AGAIN``. A "no
    data" that came only after a query timed out is no such answer: c-ares gives ENODATA
    when the A query times out and the AAAA one answers empty, so a slow resolver (3 s an
    answer) made live names "no such host", and their sites were dropped at once."""
    code = exc.args[0] if isinstance(exc, aiodns.error.DNSError) and exc.args else None
    if code == aiodns.error.ARES_ENODATA and waited_s >= timeout_s:
        return socket.EAI_AGAIN
    return socket.EAI_NONAME if code in _NO_SUCH_NAME else socket.EAI_AGAIN


def _transient(entry: _Entry) -> bool:
    """A cached failure that says the lookup failed, not that the name does not exist."""
    return entry.error is not None and entry.error.errno == socket.EAI_AGAIN


@dataclass(frozen=True, slots=True)
class _Entry:
    """One cached answer (``addrs``) or failure (``error``), until ``expires`` (monotonic)."""

    addrs: tuple[tuple[str, socket.AddressFamily], ...]
    error: NameNotResolved | None
    expires: float
    refresh_at: float
    failed_at: float = 0.0  # a failure: when (a turn re-asks past a transient one)


class NameCache:
    """Concurrent c-ares lookups, each answer kept for its TTL and each failure for the
    negative TTL. ``lookup`` waits; ``prefetch`` does not. ``clock`` is injectable."""

    def __init__(
        self,
        *,
        timeout_s: float = 2.0,
        tries: int = 3,
        negative_ttl_s: float = 300.0,
        min_ttl_s: float = _MIN_TTL_S,
        max_ttl_s: float = _MAX_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.timeout_s = timeout_s
        self.tries = tries
        self.negative_ttl_s = negative_ttl_s
        self.min_ttl_s, self.max_ttl_s = min_ttl_s, max_ttl_s
        self.clock = clock
        self.queries = 0  # lookups sent to c-ares (not answered from this cache)
        self.hits = 0
        self._entries: dict[str, _Entry] = {}
        self._inflight: dict[str, asyncio.Future[_Entry]] = {}
        self._queued: deque[str] = deque()
        self._queued_set: set[str] = set()
        self._prefetching = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._aiodns: aiodns.DNSResolver | None = None  # made on first use (needs a loop)
        self._closed = False

    async def lookup(self, host: str) -> tuple[tuple[str, socket.AddressFamily], ...]:
        """The addresses of ``host`` (IPv6 and IPv4, in c-ares' order); raises
        ``NameNotResolved``, from the cache while the failure's negative TTL lasts."""
        entry = self._fresh(host)
        if entry is None or (_transient(entry) and self._failed_before(entry)):
            # (a turn asks again past a transient failure: turns are spaced by the site's
            # delay or backoff, so this is one query per turn, not per link; a failure just
            # stored is the answer to the lookup this turn waited for, not asked twice)
            entry = await self._resolve(host)
        else:
            self.hits += 1
            if entry.error is None and self.clock() >= entry.refresh_at:
                self._start(host)  # used near the end of its TTL: refreshed ahead
        if entry.error is not None:
            raise entry.error
        return entry.addrs

    async def answers(self, host: str) -> bool:
        """Whether DNS answers for ``host`` now: one query, past the cache and not kept in
        it (the outage probe's: a cached answer says nothing of the resolver now)."""
        if self._closed:
            return False
        return (await self._ares(host.lower())).error is None

    def prefetch(self, host: str) -> None:
        """Look ``host`` up in the background unless cached or already asked: called when a
        site is queued, so its turn does not wait. Never blocks, never raises."""
        if host in self._inflight or host in self._queued_set or self._fresh(host) is not None:
            return
        if len(self._queued) >= _MAX_QUEUED:
            return  # looked up at its turn instead
        self._queued.append(host)
        self._queued_set.add(host)
        self._pump()

    def keep_for(self, host: str, seconds: float) -> None:
        """The site of ``host`` has its next turn in ``seconds``: if its answer would expire
        before, it is looked up again ``_LEAD_S`` before that turn. Failures keep their own
        negative TTL; an answer never asked for is not kept."""
        entry = self._fresh(host)
        if entry is None or entry.error is not None or entry.expires > self.clock() + seconds:
            return
        loop = asyncio.get_running_loop()
        loop.call_later(max(0.0, seconds - _LEAD_S), self._refresh, host)

    def cached(self, host: str) -> bool:
        """Whether ``host`` has an answer or failure that is still fresh."""
        return self._fresh(host) is not None

    def known(self, host: str) -> tuple[str, ...] | None:
        """The addresses of ``host`` if a fresh answer is cached (``()``: a failure), without
        waiting; else None, and a lookup is started (as ``prefetch``)."""
        entry = self._fresh(host)
        if entry is None:
            self.prefetch(host)
            return None
        return tuple(addr for addr, _ in entry.addrs)

    async def close(self) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._aiodns is not None:
            await self._aiodns.close()
            self._aiodns = None

    # -- inside -----------------------------------------------------------------------------
    def _fresh(self, host: str) -> _Entry | None:
        entry = self._entries.get(host)
        if entry is not None and entry.expires <= self.clock():
            return None
        return entry

    def _failed_before(self, entry: _Entry) -> bool:
        """A transient failure older than ``_JUST_FAILED_S``."""
        return self.clock() - entry.failed_at >= _JUST_FAILED_S

    def _refresh(self, host: str) -> None:
        """A ``keep_for`` timer: look ``host`` up again unless done meanwhile or closed."""
        entry = self._entries.get(host)
        if self._closed or host in self._inflight:
            return
        if entry is None or entry.expires <= self.clock() + _LEAD_S:
            self._start(host)

    def _pump(self) -> None:
        """Start queued prefetches while fewer than ``_MAX_INFLIGHT`` run."""
        while self._queued and self._prefetching < _MAX_INFLIGHT:
            host = self._queued.popleft()
            self._queued_set.discard(host)
            if host in self._inflight or self._fresh(host) is not None:
                continue
            self._prefetching += 1
            self._start(host, prefetch=True)

    def _start(self, host: str, *, prefetch: bool = False) -> None:
        """A background lookup of ``host`` (shared with anyone who asks meanwhile)."""
        if host in self._inflight:
            if prefetch:
                self._prefetching -= 1
            return
        fut = self._ask(host)

        async def wait() -> None:
            try:
                await asyncio.shield(fut)
            except (NameNotResolved, asyncio.CancelledError):
                pass
            finally:
                if prefetch:
                    self._prefetching -= 1
                    self._pump()

        task = asyncio.get_running_loop().create_task(wait())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _resolve(self, host: str) -> _Entry:
        fut = self._inflight.get(host) or self._ask(host)
        return await asyncio.shield(fut)

    def _ask(self, host: str) -> asyncio.Future[_Entry]:
        """One query for ``host``, its result stored when it comes: the shared future."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[_Entry] = loop.create_future()
        self._inflight[host] = fut
        self.queries += 1
        task = loop.create_task(self._query(host, fut))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return fut

    async def _query(self, host: str, fut: asyncio.Future[_Entry]) -> None:
        try:
            entry = await self._ares(host)
        except BaseException:  # cancelled (closing): whoever waits is told
            if not fut.done():
                fut.set_exception(NameNotResolved(socket.EAI_AGAIN, f"{host}: lookup cancelled"))
                fut.exception()  # retrieved: nobody may be waiting
            self._inflight.pop(host, None)
            raise
        self._store(host, entry)
        self._inflight.pop(host, None)
        if not fut.done():
            fut.set_result(entry)

    async def _ares(self, host: str) -> _Entry:
        if self._aiodns is None:
            self._aiodns = aiodns.DNSResolver(timeout=self.timeout_s, tries=self.tries)
        now = self.clock()
        try:
            # a hard stop too: c-ares' own timeout grows from try to try
            async with asyncio.timeout(self.timeout_s * self.tries * 2 + 0.5):
                found = await self._aiodns.getaddrinfo(
                    host, family=socket.AF_UNSPEC, type=socket.SOCK_STREAM
                )
        except (aiodns.error.DNSError, TimeoutError, ValueError) as exc:
            # (ValueError, UnicodeError: a name c-ares cannot even send)
            why = exc.args[-1] if exc.args else "timed out"
            errno = _lookup_errno(exc, self.clock() - now, self.timeout_s)
            error = NameNotResolved(errno, f"{host}: {why}")
            keep = self.negative_ttl_s
            if errno == socket.EAI_AGAIN:
                keep = min(keep, _TRANSIENT_FAILURE_S)
            failed = self.clock()  # (a lookup may take its whole hard stop: kept from its end)
            end = failed + keep
            return _Entry((), error, end, end, failed)
        addrs: list[tuple[str, socket.AddressFamily]] = []
        ttls: list[float] = []
        for node in found.nodes:
            addr = node.addr[0]
            family = socket.AddressFamily(node.family)
            pair = (addr.decode() if isinstance(addr, bytes) else str(addr), family)
            if pair not in addrs:
                addrs.append(pair)
            ttls.append(float(node.ttl))
        if not addrs:
            error = NameNotResolved(socket.EAI_NONAME, f"{host}: no address")
            end = now + self.negative_ttl_s
            return _Entry((), error, end, end)
        ttl = min(max(min(ttls), self.min_ttl_s), self.max_ttl_s)
        return _Entry(tuple(addrs), None, now + ttl, now + ttl * (1 - _REFRESH_SHARE))

    def _store(self, host: str, entry: _Entry) -> None:
        entries = self._entries
        if len(entries) >= _MAX_ENTRIES and host not in entries:
            now = self.clock()
            for name in [n for n, e in entries.items() if e.expires <= now]:
                del entries[name]
            if len(entries) >= _MAX_ENTRIES:  # all fresh: the oldest half goes
                for name in list(entries)[: _MAX_ENTRIES // 2]:
                    del entries[name]
        entries.pop(host, None)  # re-inserted: the dict's order is the age
        entries[host] = entry
