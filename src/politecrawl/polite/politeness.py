"""The one place where politeness arithmetic lives.

Given what we know of a site (robots Crawl-delay, its recent response times, backoff after
429/503/timeouts), say when the next request to it may start. The frontier asks; nothing
else sleeps or computes a delay.

The rule (the seeds' "Politeness" article): the next request starts no earlier than
``end of the last response + delay`` where ``delay = max(Crawl-delay, floor, factor x mean
of the last 5 response times)``, multiplied by the backoff factor, plus a small random
addition that is never negative: the floor is a floor (unlike Scrapy's 0.5-1.5x
randomisation). Counting from the end of the last response (as Heritrix and BUbiNG do), not
from its start, is what makes the gap hold as the server sees it: the server saw the last
request before it sent the last byte of its answer, and the next one reaches it after the
crawler starts it, however long name resolution and connecting took either time.

One server, many names: a site's key (its host) and its server's address (the IP the host
resolves to) are both gates. At most one request is in flight per IP, and the next request to
an IP starts no earlier than the end of the last response from it + ``ip_min_delay_s``
(``ip_next``). The frontier keeps both times and leases a key only when both have come.
The gate itself is here too, once for every backend: ``ip_gate`` (may a due key take its IP
now, wait in the IP's line, or wait for the IP's time), ``ip_free_at`` (an IP's next time after
a release) and ``ip_called_at`` (when a key called from the line may go). The SQLite frontier
and the table shared by ``--processes N`` (``partition.IpTable``) call them; the Redis scripts
keep the IP's holder, line and time atomically, and store only times computed here
(``schedule_next``, ``reclaim_times``), handed to them as arguments, as the delays are.
A host that moves to another address (a new DNS answer, a connection to another of its
addresses) takes its key with it: the gate is on the address its request goes to
(``server_of``, asked at the lease; ``address_wait`` while its name is being looked up).

A site that says go away (``outcome.refusal``: 401, 403, 429, a timeout) is paused after
``park_after_failures`` refusals in a row and given up (its queued URLs dropped) if it
still refuses after the pause (``record_refusal``).
"""

from __future__ import annotations

import enum
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from politecrawl.config import PolitenessConfig


@dataclass(slots=True)
class HostState:
    """What the crawler remembers of one politeness key; persisted with the crawl."""

    key: str
    last_start: float = 0.0
    next_allowed: float = 0.0
    response_times_s: deque[float] = field(default_factory=lambda: deque(maxlen=5))
    crawl_delay_s: float | None = None
    backoff_factor: float = 1.0
    retry_after_until: float = 0.0
    consecutive_failures: int = 0
    parked_until: float = 0.0
    last_end: float = 0.0  # when the last response ended (or the request failed)
    ip_next: float = 0.0  # this key's server address may be asked again from then on
    consecutive_refusals: int = 0
    # origin -> the Crawl-delay its robots.txt in force says (origins saying none are absent)
    origin_delays: dict[str, float] = field(default_factory=dict)
    unanswered: bool = False  # the last request was given up unanswered (not persisted)
    # the key's origins whose last request was answered normally, oldest first: while one
    # does, another origin's failures are its own (``failing_alone``), not the server's
    origins_ok: dict[str, None] = field(default_factory=dict)
    unanswered_times: int = 0  # the last response times that were such waits (not persisted)


class IpGate(enum.Enum):
    """What the one-request-per-IP rule says of a key whose URLs are due (``ip_gate``)."""

    TAKE = "take"  # the IP is free: the key is leased and holds the IP until released
    QUEUE = "queue"  # another key of the IP holds it or has its next turn: wait in its line
    LATER = "later"  # free, but not before the IP's next time: the key's turn then


def ip_gate(held: bool, free_at: float, now: float) -> IpGate:
    """The per-IP gate: at most one request in flight per server address, and none before the
    IP's next time ``free_at``. ``held``: another key of it is leased or has the next turn
    (first come first served: a key just released goes behind the keys already waiting, or
    names that together want more than their server gives starve)."""
    if held:
        return IpGate.QUEUE
    if free_at > now:
        return IpGate.LATER
    return IpGate.TAKE


# a process's claim to an IP's next turn (``partition.IpTable``) lapses this long after the IP's
# time unless its key asks again (it polls every ``IP_POLL_S``): a process that ended, or whose
# key went elsewhere, holds no turn
IP_CLAIM_S = 1.0


def ip_first(
    claim_mine: bool, since: float, claim_since: float, claim_until: float, now: float
) -> bool:
    """Whether a key due for its IP since ``since`` goes before the claim another process laid
    to the IP's next turn for its key due since ``claim_since`` (first come first served over
    all processes); a lapsed claim (``claim_until`` passed) counts for nothing."""
    return claim_mine or claim_until <= now or since < claim_since


def ip_claim_until(free_at: float, now: float) -> float:
    """How long a claim to an IP's next turn holds (see ``ip_first``)."""
    return max(free_at, now) + IP_CLAIM_S


def ip_free_at(current: float, released: float) -> float:
    """An IP's next time after a key of it is released with ``released`` (its ``ip_next``, or
    a reclaim's): never earlier than it was, since a late release must not undo a later one."""
    return max(current, released)


def ip_called_at(free_at: float, next_allowed: float, not_before: float) -> float:
    """When a key called from its IP's line may go: its IP's time, its own next time and its
    first URL's, whichever comes last."""
    return max(free_at, next_allowed, not_before)


# a key turned away by its IP that cannot wait in the IP's line (``partition.IpTable``, a key of
# another shard: ``frontier.redis.moves``) asks again after this
IP_POLL_S = 0.05
# a due site whose server's address is not known yet (its name being looked up: a resume, a
# TTL that ended) waits at most this long for the answer before it goes on the address it had
LOOKUP_WAIT_S = 2.0


def server_of(known: str, found: Sequence[str]) -> str:
    """The address a site's next request is gated on: the one it had (its last connection's)
    while its host still has it, else the host's first address now (the one a new connection
    tries first); ``known`` when nothing is known of the host now (``found`` empty)."""
    if not found or known in found:
        return known
    return found[0]


def address_wait(since: float, now: float) -> float | None:
    """A due site whose server's address is being looked up since ``since``: when to look
    again (the waits doubling from ``IP_POLL_S``), or None once it has waited
    ``LOOKUP_WAIT_S``: it goes on the address it had (the address its request connects to
    corrects it, ``frontier.connected``)."""
    waited = now - since
    if waited >= LOOKUP_WAIT_S:
        return None
    return now + min(max(IP_POLL_S, waited), LOOKUP_WAIT_S - waited)


def ip_retry_at(held: bool, free_at: float, now: float) -> float:
    """When a key turned away by its IP (``ip_gate``) asks again if it cannot wait in the IP's
    line: at the IP's next time, or soon if another key holds it."""
    if ip_gate(held, free_at, now) is IpGate.QUEUE:
        return now + IP_POLL_S
    return max(free_at, now)


def released_soonest(state: HostState, called_at: float | None = None) -> float:
    """After a release, the earliest a key of this site's IP may be due: this one at its next
    time, or the next in the IP's line, which the release called (``called_at``: its own time,
    as the frontier scheduled it; None if no key was called) and which goes once the IP's time
    (``ip_next``) has come too. A cache of the queues' next time must not wait past it.

    The called key is the frontier's to report: its line may be long while this site's state
    says nothing of it (``ip_next`` is 0 when this worker keeps no IP time, ``--ip-min-delay
    off``, yet the frontier still gates keys a ``seed`` placed by IP; an outside probe: 50
    names on one IP, the worker slept until the released site's own next time while the key
    called was due, 100 requests/s fell to 6 over two minutes)."""
    if called_at is None:
        return state.next_allowed
    return min(state.next_allowed, ip_called_at(state.ip_next, called_at, 0.0))


class Refused(enum.Enum):
    """What a refusal (see ``outcome.refusal``) did to a site."""

    COUNTED = "counted"
    PAUSED = "paused"
    GIVEN_UP = "given_up"


def load_delay_s(state: HostState, cfg: PolitenessConfig) -> float:
    """``--delay-factor`` x the mean of the last response times: what the server's own pace
    asks for (a request given up unanswered counts the time waited, ``record_unanswered``)."""
    rt = state.response_times_s
    return cfg.response_time_factor * (sum(rt) / len(rt)) if rt else 0.0


def base_delay_s(state: HostState, cfg: PolitenessConfig) -> float:
    """Delay between request starts before backoff and jitter."""
    return max(state.crawl_delay_s or 0.0, cfg.min_delay_s, load_delay_s(state, cfg))


def delay_s(state: HostState, cfg: PolitenessConfig) -> float:
    """Delay after the last start, backoff included, capped at ``max_backoff_s``."""
    base = base_delay_s(state, cfg)
    if state.backoff_factor > 1.0:
        return max(base, min(base * state.backoff_factor, cfg.max_backoff_s))
    return base


def schedule_next(
    state: HostState, cfg: PolitenessConfig, rng: random.Random | None = None
) -> float:
    """Set and return the earliest start of the next request to this key; also the earliest
    start of the next request to its server's address (``ip_next``). Both count from the end
    of the last response, so no gap the server sees is shorter than the delay."""
    jitter = (rng or random).random() * cfg.jitter_s
    since = max(state.last_start, state.last_end)
    earliest = since + delay_s(state, cfg) + jitter
    state.next_allowed = max(earliest, state.retry_after_until)
    if cfg.ip_min_delay_s is not None:
        gap = cfg.ip_min_delay_s
        if state.unanswered:  # the server may still work on it: its other names wait too
            gap = max(gap, load_delay_s(state, cfg))
        state.ip_next = max(state.ip_next, since + gap)
    return state.next_allowed


def record_start(state: HostState, cfg: PolitenessConfig, now: float) -> None:
    """A request starts now; until it ends, the next may not start before a full delay.

    The provisional ``next_allowed`` is what gets persisted before the request goes out, so a
    crash mid-request cannot make the restarted crawler ask the site again too soon.
    """
    state.last_start = now
    state.unanswered = False
    state.next_allowed = max(state.next_allowed, now + delay_s(state, cfg))


def record_end(state: HostState, now: float) -> None:
    """The request's response ended (or it failed) now: the next gap counts from here."""
    state.last_end = max(state.last_end, now)


def record_response(
    state: HostState,
    cfg: PolitenessConfig,
    duration_s: float,
    *,
    normal: bool = True,
    origin: str = "",
) -> None:
    """An answer: learn its time. A normal one (``outcome.answered_normally``: not a 5xx,
    not a refusal) also ends any run of failures and refusals and halves any backoff, and
    names its ``origin`` as one the server answers on (``failing_alone``)."""
    _learn_time(state, cfg, duration_s)
    state.unanswered_times = 0
    if not normal:
        origin_failed(state, origin)
    if normal:
        if origin:
            state.origins_ok.pop(origin, None)
            state.origins_ok[origin] = None
            while len(state.origins_ok) > MAX_ORIGINS_OK:
                del state.origins_ok[next(iter(state.origins_ok))]
        state.consecutive_failures = 0
        state.consecutive_refusals = 0
        state.backoff_factor = max(1.0, state.backoff_factor / 2)


MAX_ORIGINS_OK = 16  # origins of one key remembered as answering (the latest stay)


def origin_failed(state: HostState, origin: str) -> None:
    """A request of ``origin`` failed (a 5xx, no answer, no connection): it no longer counts
    as an origin the server answers on."""
    state.origins_ok.pop(origin, None)


def failing_alone(state: HostState, origin: str) -> bool:
    """Whether a failure of ``origin`` (a 5xx, no answer, no connection) is its own: another
    origin of the key (another port or scheme of the host: RFC 9309 2.3 makes each its own
    site) was answered normally at its last request. Such a failure waits on the URL's or
    the robots.txt's own retry schedule; it neither slows (no backoff; a Retry-After is
    still honoured), nor counts towards parking, the key. A server down on all its origins
    is still parked: each origin's first failure takes it off the list, so from the second
    origin's failure on they count. (An http port refusing next to a live https one parked
    the host for an hour, and the https pages were lost.)"""
    return any(o != origin for o in state.origins_ok)


def record_unanswered(state: HostState, cfg: PolitenessConfig, waited_s: float) -> None:
    """A request that reached the server was given up after ``waited_s`` with no answer (a
    timeout, or cut at ``--max-time``: ``outcome.unanswered``). It took at least that long,
    so it counts as a response time of ``waited_s``: the site's next request waits
    ``--delay-factor`` x the mean after the give-up, as after any slow answer, and its
    server's other names wait that long too (``schedule_next``), since the server may still
    be working on it. Before, only the backoff's doubling spaced the next request (0.4, 0.8,
    1.6 s after timeouts of 2 s at a server taking 6 s: 2 or 3 requests of one site in flight
    there at once). Taken back by ``unanswered_excused`` when the crawler's own network lost
    it, and by ``forgive_failures`` when an outage confirmed later forgives its failure."""
    _learn_time(state, cfg, waited_s)
    state.unanswered = True
    state.unanswered_times += 1


def unanswered_excused(state: HostState) -> None:
    """The request ``record_unanswered`` learned was lost by the crawler's own network
    (``engine.outage.OutageGuard.excused``): its wait says nothing of the server."""
    _take_back_waits(state, 1)


def _take_back_waits(state: HostState, n: int) -> None:
    """Unlearn up to ``n`` of the last response times that were waits of requests given up
    unanswered (``record_unanswered``)."""
    rt = state.response_times_s
    for _ in range(min(n, state.unanswered_times, len(rt))):
        rt.pop()
    state.unanswered_times = max(0, state.unanswered_times - n)
    state.unanswered = False


def _learn_time(state: HostState, cfg: PolitenessConfig, duration_s: float) -> None:
    if state.response_times_s.maxlen != cfg.response_time_window:
        state.response_times_s = deque(state.response_times_s, maxlen=cfg.response_time_window)
    state.response_times_s.append(max(0.0, duration_s))


def record_refusal(state: HostState, cfg: PolitenessConfig, now: float) -> Refused:
    """The site refused a request (401, 403, 429, a timeout: ``outcome.refusal``).

    ``park_after_failures`` refusals in a row pause the site for ``park_s``; a refusal after
    that pause (the run goes on) gives the site up: its queued URLs are to be dropped.
    """
    state.consecutive_refusals += 1
    n = state.consecutive_refusals
    if n > cfg.park_after_failures:
        return Refused.GIVEN_UP
    if n == cfg.park_after_failures:
        state.parked_until = max(state.parked_until, now + cfg.park_s)
        state.retry_after_until = max(state.retry_after_until, state.parked_until)
        return Refused.PAUSED
    return Refused.COUNTED


def record_failure(
    state: HostState, cfg: PolitenessConfig, now: float, hold_s: float | None = None
) -> bool:
    """Any failed request; after ``park_after_failures`` in a row the host is parked for
    ``park_s`` (asked again much later, not hammered). True when it was parked just now.
    ``hold_s``: the failure may be the crawler's own network's (``engine.outage.hold_s``):
    from ``park_after_failures`` on, the host waits that long instead, not parked yet."""
    state.consecutive_failures += 1
    if hold_s is not None and state.consecutive_failures >= cfg.park_after_failures:
        state.retry_after_until = max(state.retry_after_until, now + hold_s)
        return False
    if state.consecutive_failures % cfg.park_after_failures == 0:
        state.parked_until = now + cfg.park_s
        state.retry_after_until = max(state.retry_after_until, state.parked_until)
        return True
    return False


def unpark(state: HostState) -> None:
    """A resume asks again a site given up for its robots.txt: the parking its failures
    earned is lifted (a server's own Retry-After is not), and its run of failures starts
    over. Parked, its URLs queued once more waited ``park_s`` (an hour) for nothing."""
    if state.retry_after_until == state.parked_until:
        state.retry_after_until = 0.0
    state.parked_until = 0.0
    state.consecutive_failures = 0


def forgive_failures(state: HostState, n: int) -> None:
    """Take back ``n`` failures that were not the site's (the crawler's own network was down,
    ``engine.outage``): its runs of failures and refusals, the backoff they doubled, and the
    waits of requests given up unanswered that were learned as response times."""
    _take_back_waits(state, n)
    state.consecutive_failures = max(0, state.consecutive_failures - n)
    state.consecutive_refusals = max(0, state.consecutive_refusals - n)
    state.backoff_factor = max(1.0, state.backoff_factor / 2.0 ** min(n, 60))


def reclaim_times(state: HostState, now: float, floor_s: float) -> tuple[float, float]:
    """A lease given up or expired (its worker closed or died mid-turn, perhaps with a request
    in flight): when the site may be asked again, a full delay from ``now`` (its own last gap,
    at least ``floor_s``) and not before its saved next time; and when its server's IP may."""
    delay = floor_s
    if state.last_start > 0 and state.next_allowed - state.last_start > delay:
        delay = state.next_allowed - state.last_start
    return max(state.next_allowed, now + delay), now + floor_s


def is_parked(state: HostState, now: float) -> bool:
    return state.parked_until > now


# A request with no answer after this long is slow: it no longer counts against
# ``--concurrency`` (``net.fetch.Fetcher.slow``), and its site is no reference for the budget
# policy (``only_its_turn``). On the web a dead link's host often answers nothing at all (a
# firewall drops the packets, a server hangs), and each request to it waits out the connect
# or read timeout (10 s, 20 s); a live site answers a page in well under a second.
SLOW_ANSWER_S = 2.0


def waiting_long(state: HostState, now: float) -> bool:
    """Whether the site's request in flight has had no answer for ``SLOW_ANSWER_S``."""
    return state.last_start > state.last_end and now - state.last_start >= SLOW_ANSWER_S


def only_its_turn(state: HostState, now: float) -> bool:
    """Whether the site waits for nothing but its ordinary turn: it has answered before, its
    last request did not fail or refuse, it is not backing off, told to retry after, or
    parked, and its request in flight, if any, is not waiting long for its answer
    (``waiting_long``). Only such sites can be asked now or soon; the budget policy
    (``--defer-ratio``) holds other sites back for their URLs and for no other, or a crawl
    whose best links point at hosts that fail (names that do not resolve, robots.txt out of
    reach) stalls, and one whose best site hangs waits out the read timeout (a site of the
    slice that stopped answering after 40 requests: 25 s for 150 pages focused, 2 s
    breadth-first; tests/test_focus_stall.py)."""
    return (
        not waiting_long(state, now)
        and bool(state.response_times_s)
        and state.consecutive_failures == 0
        and state.consecutive_refusals == 0
        and state.backoff_factor <= 1.0
        and state.retry_after_until <= now
        and state.parked_until <= now
    )


def in_penalty_box(state: HostState, now: float) -> bool:
    """Slowed down by the site itself (a 429/503's doubled delay, or a Retry-After still
    running), not parked: what ``--metrics`` counts as ``sites{state="penalty_box"}``."""
    slowed = state.backoff_factor > 1.0 or state.retry_after_until > now
    return slowed and not is_parked(state, now)


def record_overload(
    state: HostState, cfg: PolitenessConfig, now: float, retry_after_s: float | None
) -> bool:
    """429/503, a timeout or a 5xx: double the delay (capped) and honour Retry-After.

    Returns True when the host was parked (see ``record_failure``).
    """
    parked = record_failure(state, cfg, now)
    slow_down(state, cfg, now, retry_after_s)
    return parked


def slow_down(
    state: HostState, cfg: PolitenessConfig, now: float, retry_after_s: float | None
) -> None:
    """Double the delay (capped at ``max_backoff_s``) and honour Retry-After (capped)."""
    base = max(base_delay_s(state, cfg), 1e-3)
    state.backoff_factor = min(state.backoff_factor * 2, max(1.0, cfg.max_backoff_s / base))
    honour_retry_after(state, cfg, now, retry_after_s)


def honour_retry_after(
    state: HostState, cfg: PolitenessConfig, now: float, retry_after_s: float | None
) -> None:
    """A server's Retry-After holds the key (capped): said by one origin of it, it is still
    the server's word (RFC 9110 10.2.3), so an origin failing alone honours it too."""
    if retry_after_s is not None:
        wait = retry_after_wait_s(retry_after_s, cfg.max_retry_after_s)
        state.retry_after_until = max(state.retry_after_until, now + wait)


MAX_ORIGIN_DELAYS = 32  # origins of one key whose Crawl-delay is kept (the largest stay)


def set_crawl_delay(state: HostState, origin: str, crawl_delay_s: float | None) -> None:
    """``origin``'s robots.txt was read: its Crawl-delay (None: it says none). robots.txt is
    per origin (RFC 9309 2.3) but the pace is per key, so the key keeps the largest of its
    origins' delays: https://mix.test's file without one must not undo http://mix.test's 2 s
    (the last file read used to set the key's delay)."""
    delays = state.origin_delays
    if crawl_delay_s is None:
        delays.pop(origin, None)
    else:
        delays[origin] = crawl_delay_s
    while len(delays) > MAX_ORIGIN_DELAYS:  # a key of many origins: the smallest go first
        del delays[min(delays, key=delays.__getitem__)]
    state.crawl_delay_s = max(delays.values()) if delays else None


def elsewhere_at(state: HostState, now: float, limit_s: float) -> float:
    """When a request made outside the site's own lease (a robots.txt redirect to it from
    another site: ``robots.hops``) may reach it: not while its own request is in flight (one
    started less than ``limit_s``, the request time limit, ago and not ended), and not before
    its next time."""
    at = state.next_allowed
    if state.last_start > state.last_end and now - state.last_start < limit_s:
        at = max(at, now + IP_POLL_S)
    return at


def wait_until(state: HostState, when: float) -> None:
    """Nothing more to this key before ``when`` (an unreachable robots.txt's next ask)."""
    state.next_allowed = max(state.next_allowed, when)


def retry_backoff_s(attempt: int, base_s: float, cap_s: float | None = None) -> float:
    """How long a failed URL waits before its next attempt: ``base_s`` doubled per attempt
    (``attempt`` counts from 1), at most ``cap_s``: a transient failure's waits reach minutes,
    then stay there (30 s, 1, 2, 4, 8 min, then every 15 min by default), so the retries of
    a site that is down span hours, not seconds."""
    wait = float(base_s * 2.0 ** min(max(0, attempt - 1), 60))
    return wait if cap_s is None else min(wait, max(cap_s, base_s))


def retry_after_wait_s(retry_after_s: float, max_retry_after_s: float) -> float:
    """A server's Retry-After (RFC 9110 10.2.3) as honoured: never negative, capped."""
    return min(max(0.0, retry_after_s), max_retry_after_s)


def robots_retry_s(base_s: float, failures: int, cap_s: float | None = None) -> float:
    """The wait before asking an unreachable robots.txt again (RFC 9309 2.3.1.4: disallow all
    meanwhile): a page's retry schedule (``--retry-base`` doubled per failure in a row, at
    most ``--retry-max-wait``), so a failing site's asks span hours as its pages' would; a
    Retry-After it sent holds its key longer (``slow_down``)."""
    return retry_backoff_s(failures, base_s, cap_s)


def fastest_gap_s(cfg: PolitenessConfig) -> float:
    """The shortest mean time between two requests to one site: the floor plus the jitter's
    mean, or the server address's gap if longer (a Crawl-delay, slow answers or backoff only
    make it longer)."""
    return max(cfg.min_delay_s + cfg.jitter_s / 2, cfg.ip_min_delay_s or 0.0)


def least_time_s(pages: int, sites: int, cfg: PolitenessConfig) -> float:
    """The least time ``pages`` pages spread evenly over ``sites`` sites take: each site's
    robots.txt first, then one request per gap (the sites in parallel)."""
    per_site = -(-pages // max(1, sites))  # ceil
    return per_site * fastest_gap_s(cfg)


def most_pages(seconds: float, sites: int, cfg: PolitenessConfig) -> int:
    """The most pages ``sites`` sites can give in ``seconds`` (after each one's robots.txt)."""
    gap = fastest_gap_s(cfg)
    return max(0, sites * int(seconds // gap)) if gap > 0 else -1
