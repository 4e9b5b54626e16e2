"""The IP rule in the embedded frontier (``SqliteFrontier``): one server, many names.

Each key's server address (``ip_of``, saved in ``key_ips``) is held by the one key of it that
is leased (``holder``); a key found due while its IP is held waits in the IP's line
(``lines``, first come first served) and is scheduled again, one at a time, when the holder
is released; a key found due before the IP's next time is simply scheduled at that time.
Each costs O(log n), never a scan of the IP's keys. With ``--processes N`` the table the
processes share (``partition.IpTable``) is asked after this one.

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

import math
import sqlite3
from collections import deque
from collections.abc import Callable
from typing import Protocol

from politecrawl.frontier import Addresses
from politecrawl.polite import politeness
from politecrawl.polite.politeness import HostState, IpGate


class SharedIps(Protocol):
    """Server IPs held over all the processes of a crawl (``partition.IpTable``)."""

    def hold(self, ip: str, now: float) -> float: ...

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
        self._ip_next: dict[str, float] = {}  # IP -> when it may be asked again
        self.lines: dict[str, deque[str]] = {}  # IP -> keys due, waiting for it
        self.waiting: set[str] = set()  # every key in some line
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
        if old and self.holder.get(old) == key:
            del self.holder[old]
            if self.shared is not None:
                self.shared.release(old, 0.0)
            self.call_next(old)

    def take(self, key: str, ip: str, now: float) -> bool:
        """The per-IP gate for a due key (``politeness.ip_gate``): True if it holds ``ip`` now;
        else it waits in the IP's line or is scheduled at the IP's time."""
        free_at = self._ip_next.get(ip, 0.0)
        gate = politeness.ip_gate(ip in self.holder, free_at, now)
        if gate is IpGate.QUEUE:
            self.waiting.add(key)
            self.lines.setdefault(ip, deque()).append(key)
            return False
        if gate is IpGate.LATER:
            self._schedule(key, free_at)
            return False
        if self.shared is not None and (when := self.shared.hold(ip, now)):
            self._schedule(key, when)  # another process has it, or had it too recently
            return False
        self.holder[ip] = key
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
        """A key called from its IP's line had nothing left: another is called."""
        ip = self.ip_of.get(key)
        if ip and ip not in self.holder:
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
        """The IP is free: the first key waiting for it (with URLs left) is scheduled."""
        line = self.lines.get(ip)
        while line:
            key = line.popleft()
            self.waiting.discard(key)
            own = self._own_times(key)
            if own is not None:
                self._schedule(key, politeness.ip_called_at(self._ip_next.get(ip, 0.0), *own))
                break
        if line is not None and not line:
            del self.lines[ip]
