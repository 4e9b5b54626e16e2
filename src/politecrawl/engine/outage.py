"""The crawler's own network, told apart from a site's: pause, probe, resume, blame no site.

When the crawler's link drops (its network, its resolver, its NAT), every site fails at once
in the same way: connections refused or timing out, names not resolving. Counted against each
site, such an outage parks hundreds of them in seconds (issue 28: 927 of 2,000 sites parked
by a 15 s outage). So failures of the network kinds (``KINDS``) are watched across sites:

- ``MIN_SITES`` different sites failing the same way within ``WINDOW_S``, with no answer from
  any site in between, while some site answered earlier in the crawl, make the guard
  suspect an outage: the crawl leases no site (``Crawler.run`` waits) and probes at once;
- a probe is one TCP connection to an origin that answered before (a name resolution for a
  DNS outage; no HTTP request). If it gets through, the network works and those sites failed
  on their own (many sites of one sick host, say): their failures count, the crawl goes on.
  If it does not, the outage is confirmed;
- during the outage every failure that comes back from a request still in flight is the
  outage's (``FetchResult.outage``): the URL goes back, no attempt used, no failure counted
  (``turn``: ``retry:outage``); the failures counted while it was suspected or just before
  are forgiven at each site's next turn (``absolve``), so no site keeps them;
- a probe every ``PROBE_S`` doubling up to ``PROBE_MAX_S`` ends the outage when it gets
  through: the crawl resumes where it was.

A crawl where no site ever answered has no site to probe the network with. For name
lookups it still can: ``MIN_SITES`` names whose lookups fail (SERVFAIL, timeouts, no
resolver answering; not "no such name") with nothing answered yet mean the crawler's own
resolver is down (issue 28: without DNS, 2,000 sites were dropped in 2.5 s), and the probe
asks DNS again, past the cache, for the names that failed; the crawl waits for the resolver
with no site blamed. Refused connections or timeouts with nothing answered yet may be dead
seeds: those count against their sites (retried over hours: ``outcome.TRANSIENT``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable

from yarl import URL

from politecrawl.polite import politeness

log = logging.getLogger("politecrawl")

KINDS = frozenset({"dns", "connect", "timeout", "network"})
MIN_SITES = 5
WINDOW_S = 30.0
PROBE_S = 1.0
PROBE_MAX_S = 5.0
_GOOD_KEPT = 8  # origins that answered last: what a probe tries
_PROBED = 3  # of them per probe

Probe = Callable[[str, bool], Awaitable[bool]]  # (origin, dns only) -> got through


class OutageGuard:
    """Watches failures across sites; see the module docstring."""

    def __init__(self, *, min_sites: int = MIN_SITES, window_s: float = WINDOW_S) -> None:
        self.min_sites = min_sites
        self.window_s = window_s
        self.active = False  # an outage, confirmed by a probe
        self.suspect = False  # an outage suspected: no turn until a probe says
        self.false_alarms = 0
        self.kind = ""
        self.since = 0.0
        self.next_probe = 0.0
        self.outages = 0
        self.seconds = 0.0
        self._streak: dict[str, tuple[str, float]] = {}  # key -> (kind, when) since an answer
        self._forgive: dict[str, int] = {}  # key -> failures counted before it was noticed
        self._suspected: dict[str, int] = {}  # key -> failures counted while suspected
        self._good: deque[str] = deque(maxlen=_GOOD_KEPT)
        self._cold: deque[str] = deque(maxlen=_GOOD_KEPT)  # names that failed, none answered
        self._probe_wait = PROBE_S

    def answered(self, origin: str) -> None:
        """A site answered (any HTTP status): the network works; no streak goes on."""
        self._streak.clear()
        self._cold.clear()
        if origin in self._good:
            self._good.remove(origin)
        self._good.append(origin)

    def failed(self, key: str, kind: str, now: float) -> bool:
        """A request of ``key`` failed with ``kind``; True when the crawl is (now) in an
        outage, so the failure is not the site's."""
        if kind not in KINDS:
            return False
        if self.active:
            return True
        if self.suspect:  # counted for now; forgiven if the probe confirms the outage
            self._suspected[key] = self._suspected.get(key, 0) + 1
            return False
        self._streak[key] = (kind, now)
        same = [k for k, (kd, t) in self._streak.items() if kd == kind and now - t <= self.window_s]
        if len(same) < self.min_sites:
            return False
        if not self._good:  # nothing answered yet: only the resolver can be probed
            if kind != "dns":
                return False
            self._cold.extend(same[-_PROBED:])
        self.suspect, self.kind, self.since = True, kind, now
        self.next_probe = now  # at once
        self._suspected = {k: 1 for k in same}
        self._streak.clear()
        return False

    def absolve(self, host: politeness.HostState) -> None:
        """Take back from ``host`` the failures the outage caused before it was noticed."""
        n = self._forgive.pop(host.key, 0)
        if n:
            politeness.forgive_failures(host, n)

    @property
    def paused(self) -> bool:
        """No turn now: an outage, suspected or confirmed."""
        return self.active or self.suspect

    def due(self, now: float) -> bool:
        """A probe is due now."""
        return self.paused and now >= self.next_probe

    async def probe(self, reach: Probe, now: float) -> bool:
        """Try the origins that answered last. True when the crawl may go on: the network
        works (a suspected outage was none, or a confirmed one is over)."""
        dns_only = self.kind == "dns"
        through = False
        probed = list(self._good)[-_PROBED:] or [f"http://{k}/" for k in self._cold]
        for origin in probed:
            if await reach(origin, dns_only):
                through = True
                break
        if self.suspect:
            self.suspect = False
            if through:  # the network works: those sites failed on their own
                self.false_alarms += 1
                self._suspected.clear()
                return True
            self._confirm(now)
            return False
        if through:
            self.seconds += max(0.0, now - self.since)
            self.active = False
            log.warning(
                "the network is back after %.0f s (%s): the crawl resumes", now - self.since,
                self.kind,
            )  # fmt: skip
            return True
        self._probe_wait = min(self._probe_wait * 2, PROBE_MAX_S)
        self.next_probe = now + self._probe_wait
        return False

    def _confirm(self, now: float) -> None:
        """The probe did not get through either: the crawler's own network is down."""
        self.active = True
        self.outages += 1
        self._probe_wait = PROBE_S
        self.next_probe = now + PROBE_S
        for k, n in self._suspected.items():  # forgiven at each site's next turn
            self._forgive[k] = self._forgive.get(k, 0) + n
        sites = len(self._suspected)
        self._suspected = {}
        log.warning(
            "%d sites failed the same way (%s) and a probe of a site that answered before did "
            "not get through: the crawler's own network looks down; the crawl pauses, probes, "
            "and resumes with no site blamed", sites, self.kind,
        )  # fmt: skip


def reach(
    resolve: Callable[[str, int], Awaitable[str | None]],
    answers: Callable[[str, int], Awaitable[bool]],
    timeout_s: float,
) -> Probe:
    """A probe: for a DNS outage, ``answers`` (host, port -> whether DNS answers now, past
    the cache, which would answer for a resolver that is down); else ``resolve`` (host, port
    -> an address, cached is fine) and one TCP connection opened and closed, within
    ``timeout_s``."""

    async def one(origin: str, dns_only: bool) -> bool:
        u = URL(origin)
        port = u.port or (443 if u.scheme == "https" else 80)
        try:
            async with asyncio.timeout(timeout_s):
                if dns_only:
                    return await answers(u.host or "", port)
                addr = await resolve(u.host or "", port)
                if addr is None:
                    return False
                _, writer = await asyncio.open_connection(addr, port)
                writer.close()
                return True
        except (OSError, TimeoutError):
            return False

    return one
