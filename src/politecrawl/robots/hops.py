"""robots.txt redirects to another host: the hop's request reaches that host's server, so its
politeness must hold there (RFC 9309 2.3.1.2 has the crawler follow them across authorities).

Six sites whose robots.txt answer ``301 http://www.test/robots.txt`` used to put six requests
in flight at once on www.test, each under its own source site's lease. Now:

- an answer to a hop is kept by its URL (``--robots-ttl`` when it settles something, the
  robots.txt retry time when it failed) and shared: N sites redirecting to one robots.txt
  cost one request;
- at most one request to a host is in flight in this process, a hop included (``request``
  marks the host busy), and after a hop the host (its hops and its own site's pages) waits
  the target's delay;
- a hop to a host whose own site has a request in flight or is not yet due waits (the
  source site's page waits for a later turn, as it does for its robots.txt);
- the hop does not move the source site onto the target's address (``request(elsewhere=)``).

Why not under the target site's own lease: the hop would have to be a queued item of the
target's key (another shard with ``--processes N``, another worker with Redis) whose answer
is then written back to the source origin's robots record, with a kind of entry every backend
must learn; the gate here needs nothing of the frontier but the target's saved state
(``CrawlStore.host``), read only. What it does not see is another process's hop in flight to
the same host; the target's own turns it sees through its saved state (with Redis, every
worker's; with ``--processes N``, only when the target's site is this process's).
"""

from __future__ import annotations

from collections import OrderedDict

from politecrawl.engine.outcome import robots_answer_settles
from politecrawl.net.fetch import FetchResult
from politecrawl.polite import politeness

HOP_ANSWERS_KEPT = 256  # hop answers kept (a body is at most 500 KiB)


class HopBook:
    """Per process: hop answers by URL, and each target host's hops in flight and next time."""

    def __init__(self, ttl_s: float, retry_s: float) -> None:
        self._ttl_s = ttl_s
        self._retry_s = retry_s
        self._answers: OrderedDict[str, tuple[float, FetchResult]] = OrderedDict()
        self._busy: dict[str, int] = {}  # host -> requests to it in flight
        self._next: dict[str, float] = {}

    def answer(self, url: str, now: float) -> FetchResult | None:
        """The answer a hop to ``url`` got, while it stays true."""
        got = self._answers.get(url)
        if got is None:
            return None
        at, res = got
        if now - at >= (self._ttl_s if robots_answer_settles(res) else self._retry_s):
            del self._answers[url]
            return None
        return res

    def keep(self, url: str, res: FetchResult, now: float) -> None:
        self._answers[url] = (now, res)
        self._answers.move_to_end(url)
        while len(self._answers) > HOP_ANSWERS_KEPT:
            self._answers.popitem(last=False)

    def due_at(
        self, host: str, site: politeness.HostState | None, now: float, limit_s: float
    ) -> float:
        """When a hop to ``host`` may go: not while another is in flight, not before the
        target's delay after the last one, nor while its own site's request is in flight or
        its next time has not come (``site``: its saved state; None: the hop is ours)."""
        at = self._next.get(host, 0.0)
        if host in self._busy:
            at = max(at, now + politeness.IP_POLL_S)
        if site is not None:
            at = max(at, politeness.elsewhere_at(site, now, limit_s))
        return at

    def begin(self, host: str) -> None:
        """A request to ``host`` (any: a page, robots.txt, a hop) is in flight."""
        self._busy[host] = self._busy.get(host, 0) + 1

    def end(self, host: str, next_at: float) -> None:
        """It ended; the next hop (and the host's own next request) not before ``next_at``."""
        n = self._busy.pop(host, 0) - 1
        if n > 0:
            self._busy[host] = n
        self._next[host] = max(self._next.get(host, 0.0), next_at)
        if len(self._next) > 4 * HOP_ANSWERS_KEPT:  # the latest times kept: the others passed
            latest = sorted(self._next.items(), key=lambda ht: ht[1])[-HOP_ANSWERS_KEPT:]
            self._next = dict(latest)
