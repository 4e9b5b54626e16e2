"""The crawler's own network, told apart from a site's: pause, probe, resume, blame no site.

When the crawler's link drops (its network, its resolver, its NAT), every site fails at once
in the same way: connections refused or timing out, names not resolving. Counted against each
site, such an outage parks hundreds of them in seconds (issue 28: 927 of 2,000 sites parked
by a 15 s outage). So failures of the network kinds (``KINDS``) are watched across sites:

- enough different sites failing the same way within ``WINDOW_S``, with no answer from any
  site in between, while some site answered earlier in the crawl, make the guard suspect an
  outage: the crawl leases no site (``Crawler.run`` waits) and probes at once. Enough is
  ``MIN_SITES``, or every site in play when fewer are (``need``), but never one alone
  (``FEW_SITES``): a site is in play when it made a request in the last ``PLAY_S``;
- the crawl as a whole tells it, not one process: with ``--processes N`` each guard
  publishes its row (sites in play, sites failing per kind, paused, last answer) on a
  ``Board`` in shared memory (``partition.OutageBoard``) and counts the others' with its
  own; a network failure in one partition while another is paused joins the suspicion;
- a probe is one TCP connection to an origin that answered before (a name resolution for a
  DNS outage; no HTTP request), one that is not failing first (independent of the sites
  suspected), and any request started since the suspicion and answered, in any partition,
  is as good. If it gets through, the network works and those sites failed on their own
  (many sites of one sick host, say): their failures count, the crawl goes on. If it does
  not, the outage is confirmed;
- during the outage every failure that comes back from a request still in flight is the
  outage's (``FetchResult.outage``): the URL goes back, no attempt used, no failure counted
  (``turn``: ``retry:outage``); the network failures each site had counted since its own
  last answer, within ``WINDOW_S`` before the suspicion, are forgiven at its next turn
  (``absolve``), so no site keeps them;
- a probe every ``PROBE_S`` doubling up to ``PROBE_MAX_S`` ends the outage when it gets
  through: the crawl resumes where it was;
- a site about to be parked while half the sites in play or more began failing alike less
  than ``WINDOW_S`` ago waits ``PROBE_MAX_S`` instead (``hold_s``): the outage may not be
  told yet (the sites of one server failed first, the others' 0.5 s later, and went on
  answering in between). Then it is parked, unless an outage was confirmed meanwhile. (6
  sites of 7 on one server gone for 20 s, the 7th answering: no outage, each held, asked
  every 5 s, none parked, all fetched; gone for longer, they are parked 30 s in.)

Why the threshold follows the sites in play (an outside probe: 4 or 7 sites x 120 pages on
two loopback servers that go away together for 20 s, one 0.5 s after the other,
``--min-delay 0.1``): a fixed five could not be reached by a crawl of four sites
(177 of 484 pages, all four parked for an hour), nor by two processes of 3-4 sites each
(306 of 847 pages, all seven parked, exit 3), while one process of the same seven fetched
all 847. With the threshold alone the four sites still lost 3 to the parks of the half
second in between (220 of 484); with the hold, 484 of 484, and 847 of 847 with two
processes, no site parked, exit 0. One site failing is still its own (never enough); among
many sites nothing changed (five, and no hold for a few of many).

With few sites no independent origin may be left to probe: only the failing sites, so a
server hosting every site of the crawl going down looks like the crawler's own outage. Such
an outage (``alone``) lasts ``ALONE_MAX_S`` at most: then the failures are the sites' again
(backoff, parking) and the guard asks five sites until some site answers (``_skeptic``).

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
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from yarl import URL

from politecrawl.polite import politeness

log = logging.getLogger("politecrawl")

KINDS = frozenset({"dns", "connect", "timeout", "network"})
MIN_SITES = 5
FEW_SITES = 2  # one site failing is that site's failure, however few are in play
WINDOW_S = 30.0
PLAY_S = 60.0  # a site that made a request this recently is in play
ALONE_MAX_S = 600.0  # an outage only the failing sites could be probed for, at the most
PROBE_S = 1.0
PROBE_MAX_S = 5.0
_GOOD_KEPT = 8  # origins that answered last: what a probe tries
_PROBED = 3  # of them per probe
_RECENT_KEPT = 4096  # sites with failures kept before the stale are dropped

# a guard's row on the board: when written, sites in play, paused, last answer (when seen,
# when its request started), then sites failing per kind since the last answer
_KIND_ORDER = ("dns", "connect", "timeout", "network")
_AT, _PLAY, _PAUSED, _ANSWERED, _STARTED, _FAIL = 0, 1, 2, 3, 4, 5
ROW = _FAIL + len(_KIND_ORDER)

Probe = Callable[[str, bool], Awaitable[bool]]  # (origin, dns only) -> got through


class Board(Protocol):
    """The other partitions' guards (``partition.OutageBoard``): a row each."""

    def put(self, row: Sequence[float]) -> None: ...

    def others(self) -> list[Sequence[float]]: ...


class OutageGuard:
    """Watches failures across sites; see the module docstring."""

    def __init__(
        self, *, min_sites: int = MIN_SITES, window_s: float = WINDOW_S, board: Board | None = None
    ) -> None:
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
        self._board = board
        self._streak: dict[str, tuple[str, float]] = {}  # key -> (kind, when) since an answer
        self._forgive: dict[str, int] = {}  # key -> failures counted before it was noticed
        self._recent: dict[str, tuple[str, int, float, float]] = {}  # key -> (kind, failures
        # counted, first, last) since its own last answer
        self._failing: set[str] = set()  # the keys that made it suspected
        self._good: deque[tuple[str, str]] = deque(maxlen=_GOOD_KEPT)  # (origin, key)
        self._cold: deque[str] = deque(maxlen=_GOOD_KEPT)  # names that failed, none answered
        self._play: OrderedDict[str, float] = OrderedDict()  # key -> its last request
        self._answered_at = 0.0  # the last answer: when seen, when its request started
        self._answered_started = 0.0
        self._alone = False  # confirmed with only the failing sites to probe
        self._skeptic = False  # an outage ``alone`` ran out: five sites, until an answer
        self._probe_wait = PROBE_S

    def answered(self, origin: str, key: str = "", now: float = 0.0, started: float = 0.0) -> None:
        """A site answered (any HTTP status): the network works; no streak goes on."""
        self._streak.clear()
        self._cold.clear()
        self._skeptic = False
        self._recent.pop(key, None)
        self._good = deque((g for g in self._good if g[0] != origin), maxlen=_GOOD_KEPT)
        self._good.append((origin, key))
        self._answered_at = max(self._answered_at, now)
        self._answered_started = max(self._answered_started, started)
        self._touch(key, now)
        self._publish(now)

    def failed(self, key: str, kind: str, now: float) -> bool:
        """A request of ``key`` failed with ``kind``; True when the crawl is (now) in an
        outage, so the failure is not the site's."""
        self._touch(key, now)
        if kind not in KINDS:
            return False
        if self.active:
            return True
        self._count(key, kind, now)  # counted for now; forgiven if an outage is confirmed
        if self.suspect:
            return False
        self._streak[key] = (kind, now)
        rows = self._others(now)
        last = max([self._answered_at, *(r[_ANSWERED] for r in rows)])
        same = [
            k for k, (kd, t) in self._streak.items()
            if kd == kind and now - t <= self.window_s and t > last
        ]  # fmt: skip
        there = sum(r[_FAIL + _KIND_ORDER.index(kind)] for r in rows if r[_AT] > last)
        in_play = len(self._play) + sum(r[_PLAY] for r in rows)
        some_answer = bool(self._good) or any(r[_ANSWERED] for r in rows)
        joined = some_answer and any(r[_PAUSED] for r in rows)  # paused elsewhere: join it
        if not joined and len(same) + there < self.need(round(in_play)):
            self._publish(now)
            return False
        if not self._good and not joined:  # nothing answered yet: only the resolver
            if kind != "dns" or len(same) < self.min_sites:
                self._publish(now)
                return False
            self._cold.extend(same[-_PROBED:])
        self.suspect, self.kind, self.since = True, kind, now
        self.next_probe = now  # at once
        self._failing = set(same) | {key}
        self._streak.clear()
        self._publish(now)
        return False

    def need(self, in_play: int) -> int:
        """How many sites failing alike make an outage suspected, with ``in_play`` sites in
        play over the crawl (see the module docstring)."""
        if self._skeptic:
            return self.min_sites
        return min(self.min_sites, max(FEW_SITES, in_play))

    def hold_s(self, key: str, kind: str, now: float) -> float | None:
        """At the park of ``key``: ``PROBE_MAX_S`` while its failures may be the crawler's own
        network's, not yet told: it and others began failing alike less than ``WINDOW_S``
        ago, half the sites in play or more (one server of two went away first, say). The
        park waits; an outage confirmed forgives the failures. None: park it."""
        if kind not in KINDS or not self._good or self._skeptic:
            return None
        w = self.window_s
        self._recent = {k: v for k, v in self._recent.items() if now - v[3] <= w}
        mine = self._recent.get(key)
        if mine is None or now - mine[2] >= w:
            return None
        rows = self._others(now)
        n = sum(v[0] == kind and now - v[2] < w for v in self._recent.values()) + sum(
            r[_FAIL + _KIND_ORDER.index(kind)] for r in rows
        )
        in_play = len(self._play) + sum(r[_PLAY] for r in rows)
        return PROBE_MAX_S if n >= FEW_SITES and 2 * n >= in_play else None

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
        """Try the origins that answered last, those not failing first. True when the crawl
        may go on: the network works (a suspected outage was none, or a confirmed one is
        over)."""
        dns_only = self.kind == "dns"
        free = [o for o, k in self._good if k not in self._failing]
        alone = not free
        probed = (free or [o for o, _ in self._good])[-_PROBED:]
        probed = probed or [f"http://{k}/" for k in self._cold]
        # a request started since and answered, here or in another partition: it works
        through = max([self._answered_started, *(r[_STARTED] for r in self._others(now))]) > (
            self.since
        )
        for origin in probed:
            if through or await reach(origin, dns_only):
                through = True
                break
        if self.suspect:
            self.suspect = False
            if through:  # the network works: those sites failed on their own
                self.false_alarms += 1
                self._publish(now)
                return True
            self._confirm(now, alone)
            return False
        if through or (self._alone and now - self.since >= ALONE_MAX_S):
            self._resume(now, through)
            return True
        self._probe_wait = min(self._probe_wait * 2, PROBE_MAX_S)
        self.next_probe = now + self._probe_wait
        self._publish(now)
        return False

    def excused(self, started: float) -> bool:
        """A request that started at ``started`` and was given up unanswered may have been
        lost by the crawler's own network, not kept by its server: an outage was suspected
        since it started (even one a probe then found over: a link down for 15 s leaves
        every request sent into it to time out after it is back), or is on. Its wait then
        says nothing of the server (``engine.request._unanswered``). (No request starts while
        paused, so one an outage met began before its suspicion.)"""
        return self.paused or self.since >= started > 0

    def _resume(self, now: float, through: bool) -> None:
        self.seconds += max(0.0, now - self.since)
        self.active = False
        self._publish(now)
        if through:
            log.warning(
                "the network is back after %.0f s (%s): the crawl resumes", now - self.since,
                self.kind,
            )  # fmt: skip
            return
        self._skeptic = True
        log.warning(
            "the sites failing (%s) are the only ones a probe could try, and none got through "
            "in %.0f s: their failures are theirs from now on (backoff, parking)",
            self.kind, now - self.since,
        )  # fmt: skip

    def _confirm(self, now: float, alone: bool) -> None:
        """The probe did not get through either: the crawler's own network is down."""
        self.active = True
        self._alone = alone
        self.outages += 1
        self._probe_wait = PROBE_S
        self.next_probe = now + PROBE_S
        sites = 0
        for k, (_, n, _, last) in self._recent.items():  # forgiven at each site's next turn
            if last >= self.since - self.window_s:
                self._forgive[k] = self._forgive.get(k, 0) + n
                sites += 1
        self._recent.clear()
        self._publish(now)
        log.warning(
            "%d sites failed the same way (%s) and a probe of a site that answered before did "
            "not get through: the crawler's own network looks down; the crawl pauses, probes, "
            "and resumes with no site blamed", sites, self.kind,
        )  # fmt: skip

    def _count(self, key: str, kind: str, now: float) -> None:
        """A network failure counted against ``key`` (for now)."""
        _, n, first, _ = self._recent.get(key, (kind, 0, now, now))
        self._recent[key] = (kind, n + 1, first, now)
        if len(self._recent) > _RECENT_KEPT:  # (dead sites of a large crawl) those gone quiet
            w = self.window_s
            self._recent = {k: v for k, v in self._recent.items() if now - v[3] <= w}

    # -- the crawl as a whole -------------------------------------------------------------
    def _touch(self, key: str, now: float) -> None:
        """``key`` made a request: in play; those idle for ``PLAY_S`` are not."""
        play = self._play
        play[key] = now
        play.move_to_end(key)
        while play and now - next(iter(play.values())) > PLAY_S:
            play.popitem(last=False)

    def _others(self, now: float) -> list[Sequence[float]]:
        """The other partitions' rows written in the last ``PLAY_S`` (older: idle)."""
        if self._board is None:
            return []
        return [r for r in self._board.others() if now - r[_AT] <= PLAY_S]

    def _publish(self, now: float) -> None:
        if self._board is None:
            return
        row = [0.0] * ROW
        row[_AT], row[_PLAY], row[_PAUSED] = now, float(len(self._play)), float(self.paused)
        row[_ANSWERED], row[_STARTED] = self._answered_at, self._answered_started
        for kd, t in self._streak.values():
            if now - t <= self.window_s:
                row[_FAIL + _KIND_ORDER.index(kd)] += 1.0
        self._board.put(row)


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
