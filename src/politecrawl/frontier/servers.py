"""The IP rule in the embedded frontier (``SqliteFrontier``): one server, many names.

Each key's server address (``ip_of``, saved in ``key_ips``) is held by the one key of it that
is leased (``holder``). The IP's turns go first come first served: the first key found due
while the IP is free but not yet askable is given the next turn (``called``) and scheduled at
the IP's next time; a key found due while another holds the IP or has the next turn waits
in the IP's line (``lines``), and when the holder is released the line's first key is given
the next turn. A key released goes behind those already waiting, so names that together want
more than their server gives share it in turn (before, the key just released and the one
called raced at the IP's next time, and the better-ranked won every time: six of twelve
names on one IP got no request for 25 s). Each costs O(log n), never a scan of the IP's keys.
With ``--processes N`` the table the processes share (``partition.IpTable``) is asked after
this one, with when the key first wanted the IP: its turns go first come first served over
the processes too.

A host moves (a new DNS answer at a resume or when its TTL ends, a connection to another of
its addresses): its key follows the address its requests go to. At the lease (``server``)
the address the request will connect to is asked of the crawl's name cache without waiting
(``addresses``); if the key's IP is no longer among its host's addresses, the key moves to
the first of them and is gated there, before any request (an answer not cached yet is
looked up while the key waits, ``politeness.address_wait``). After each request the address
actually connected to is the key's (``connected``): the key holds that IP until its release
sets the IP's next time, unless another key holds it. That case, a request that went to an
address other than the one its lease was taken on while that address was busy, cannot be
prevented: a connection's address is known only once it is made (aiohttp may try a host's
second address, or reuse a connection kept alive); the lease's check leaves it to a name's
answer changing between the lease and the connection, or a host with several addresses.
"""

from __future__ import annotations

import heapq
import itertools
import math
import sqlite3
from collections.abc import Callable
from typing import Protocol

from politecrawl.frontier import Addresses
from politecrawl.polite import politeness
from politecrawl.polite.politeness import HostState, IpGate


class SharedIps(Protocol):
    """Server IPs held over all the processes of a crawl (``partition.IpTable``)."""

    def hold(self, ip: str, now: float, since: float | None = None) -> float: ...

    def release(self, ip: str, free_at: float) -> None: ...


class Servers:
    """The IP rule's state. ``schedule(key, when)`` puts a key in the frontier's penalty box;
    ``own_times(key)`` is a waiting key's own next time and its first URL's, or None if it has
    nothing queued."""

    def __init__(
        self,
        db: sqlite3.Connection,
        shared: SharedIps | None,
        schedule: Callable[[str, float], None],
        own_times: Callable[[str], tuple[float, float] | None],
    ) -> None:
        self._db = db
        self.shared = shared
        self._schedule = schedule
        self._own_times = own_times
        self.ip_of: dict[str, str] = dict(db.execute("SELECT key, ip FROM key_ips").fetchall())
        self.holder: dict[str, str] = {}  # IP -> the one key of it leased now
        self.called: dict[str, str] = {}  # IP -> the key whose turn is next (scheduled)
        self._ip_next: dict[str, float] = {}  # IP -> when it may be asked again
        # IP -> keys due, waiting for it: (due since, arrival, key), the longest-waiting first
        self.lines: dict[str, list[tuple[float, int, str]]] = {}
        self._arrivals = itertools.count()
        self.waiting: set[str] = set()  # every key in some line
        self._since: dict[str, float] = {}  # key turned away by its IP -> since when it waits
        self.addresses: Addresses | None = None  # (see the module docstring)
        self._asking: dict[str, float] = {}  # key -> since when its address is looked up

    def learn(self, key: str, ip: str) -> None:
        """A queued URL's address: the key's if it had none (a later answer is the lease's)."""
        if ip and key not in self.ip_of:
            self._set(key, ip)

    def _set(self, key: str, ip: str) -> None:
        self.ip_of[key] = ip
        self._db.execute("INSERT OR REPLACE INTO key_ips VALUES (?,?)", (key, ip))

    def server(self, key: str, url: str | None, now: float) -> tuple[str, float]:
        """The IP a due key's request for ``url`` will go to ("": none known), moved there if
        its host moved; or, while its name is being looked up, when to ask again (0.0: now)."""
        ip = self.ip_of.get(key, "")
        if self.addresses is None or url is None:
            return ip, 0.0
        found = self.addresses(url)
        if found is None:
            later = politeness.address_wait(self._asking.setdefault(key, now), now)
            if later is not None:
                return ip, later
        self._asking.pop(key, None)
        new = politeness.server_of(ip, found or ())
        if new != ip:
            self.move(key, new)
        return new, 0.0

    def move(self, key: str, ip: str) -> None:
        """``key``'s host is at ``ip`` now: its IP from now on. The old one, if the key held it,
        is freed, its next time unchanged (it was not asked)."""
        old = self.ip_of.get(key)
        self._set(key, ip)
        if old and self.called.get(old) == key:
            del self.called[old]
            self.call_next(old)
        if old and self.holder.get(old) == key:
            del self.holder[old]
            if self.shared is not None:
                self.shared.release(old, 0.0)
            self.call_next(old)

    def take(self, key: str, ip: str, now: float, due: float | None = None) -> bool:
        """The per-IP gate for a key due since ``due`` (``politeness.ip_gate``): True if it
        holds ``ip`` now; else it waits in the IP's line (another key holds it or has the next
        turn), or it has the next turn and is scheduled at the IP's time. The line is ordered
        by when each key became due: keys found due together join it in their rank's order,
        not the order they are tried in."""
        free_at = self._ip_next.get(ip, 0.0)
        since = self._since.setdefault(key, now if due is None else due)
        gate = politeness.ip_gate(self._others_turn(key, ip), free_at, now)
        if gate is IpGate.QUEUE:
            self._wait(key, ip, since)
            return False
        self.called[ip] = key
        if gate is IpGate.LATER:
            self._schedule(key, free_at)
            return False
        if self.shared is not None and (when := self.shared.hold(ip, now, since)):
            self._schedule(key, when)  # another process has it or its next turn, or had it
            return False
        del self.called[ip], self._since[key]
        self.holder[ip] = key
        return True

    def _others_turn(self, key: str, ip: str) -> bool:
        turn = self.holder.get(ip) or self.called.get(ip)
        return turn is not None and turn != key

    def _wait(self, key: str, ip: str, since: float) -> None:
        if key not in self.waiting:
            self.waiting.add(key)
            heapq.heappush(self.lines.setdefault(ip, []), (since, next(self._arrivals), key))

    def queued_if_busy(self, key: str, now: float) -> bool:
        """A key found due now joins its IP's line at once if another key holds the IP or has
        its next turn (True): the line is in the order keys became due, whatever the order
        the lease tries them in (by rank: a key just released and better ranked would go
        before keys due earlier)."""
        ip = self.ip_of.get(key)
        if not ip or not self._others_turn(key, ip):
            return False
        self._wait(key, ip, self._since.setdefault(key, now))
        return True

    def connected(self, key: str, ip: str) -> None:
        """The leased ``key``'s request went to ``ip``: the key's IP from now on, held by it
        until its release (which sets the IP's next time) unless another key holds it."""
        if self.addresses is None or not ip or self.ip_of.get(key) == ip:
            return
        self.move(key, ip)
        if ip in self.holder:
            return  # (two requests were in flight there: see the module docstring)
        # held over all processes too, whatever its time (the request went already)
        if self.shared is not None and self.shared.hold(ip, math.inf):
            return
        self.holder[ip] = key

    def left(self, key: str) -> None:
        """A due key had nothing left: if it had the IP's next turn, the next key is called."""
        self._since.pop(key, None)
        ip = self.ip_of.get(key)
        if ip and self.called.get(ip) == key:
            del self.called[ip]
        if ip:
            self.call_next(ip)

    def release(self, key: str, state: HostState) -> None:
        """The key's turn is over: its IP is asked again from ``state.ip_next`` on; if the key
        held it, it is free and the first key of its line is called."""
        ip = self.ip_of.get(key)
        if not ip:
            return
        self._ip_next[ip] = politeness.ip_free_at(self._ip_next.get(ip, 0.0), state.ip_next)
        if self.holder.get(ip) != key:
            return
        del self.holder[ip]
        if self.shared is not None:
            self.shared.release(ip, state.ip_next)
        self.call_next(ip)

    def call_next(self, ip: str) -> None:
        """The IP is free and no key has its next turn: the first key waiting for it (with
        URLs left) is given the turn and scheduled."""
        if ip in self.holder or ip in self.called:
            return
        line = self.lines.get(ip)
        while line:
            key = heapq.heappop(line)[2]
            self.waiting.discard(key)
            own = self._own_times(key)
            if own is None:
                self._since.pop(key, None)
            else:
                self.called[ip] = key
                self._schedule(key, politeness.ip_called_at(self._ip_next.get(ip, 0.0), *own))
                break
        if line is not None and not line:
            del self.lines[ip]
