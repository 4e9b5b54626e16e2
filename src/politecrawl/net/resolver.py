"""Which addresses the crawler may connect to: the guarded resolver aiohttp connects with.

The check is made inside the resolver, so the address that was approved is the address that
is connected to (DNS cannot be re-bound between check and connect): every answer, fresh or
from the cache, is checked each time it is handed to aiohttp. Here too: curl-style
``--resolve`` overrides (never asked of DNS), the lookups themselves (``dns.NameCache``:
c-ares, cached for each answer's TTL and each failure's negative TTL), and the reading of
host names that are addresses by themselves (``ip_literal``: ``127.1``, ``0x7f.0.0.1``...),
which ``fetch.Fetcher`` checks itself because aiohttp skips the resolver for them.
Kept apart from ``fetch`` because it is the security boundary of every request and is
tested on its own (tests/test_security.py).
"""

from __future__ import annotations

import contextvars
import ipaddress
import re
import socket
import time
from collections.abc import Callable

from aiohttp.abc import AbstractResolver, ResolveResult

from politecrawl.config import parse_resolve_rule
from politecrawl.errors import AddressRefused
from politecrawl.net.dns import NameCache, NameNotResolved

__all__ = ["LOOKUP_WAIT", "GuardedResolver", "Refused", "ip_literal", "is_public_address"]

# the seconds a request in progress waited on name lookups (``fetch`` reads it): time the
# server had no part in, so not its response time (a resolver answering in 1 s made every
# site's delay 30 s, the 30 x response-time rule applied to DNS)
LOOKUP_WAIT: contextvars.ContextVar[list[float]] = contextvars.ContextVar("politecrawl_lookup")


def is_public_address(addr: str) -> bool:
    """False for loopback, private, link-local, multicast, reserved, unspecified addresses.

    IPv6 addresses that carry an IPv4 address are judged by it too: IPv4-mapped
    (``::ffff:127.0.0.1``) and 6to4 (``2002:7f00:1::``, routed towards the embedded address);
    deprecated site-local ``fec0::/10`` counts as private (Python calls it global).
    """
    try:
        ip = ipaddress.ip_address(addr.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return _is_public(ip.ipv4_mapped)
        if ip.is_site_local:
            return False
        if ip.sixtofour is not None and not _is_public(ip.sixtofour):
            return False
    return _is_public(ip)


def _is_public(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return ip.is_global and not (ip.is_multicast or ip.is_reserved or ip.is_link_local)


# a character no address literal has (IPv6 zone ids after "%" can have any, so not those)
_NOT_AN_ADDRESS = re.compile(r"^[^%]*[^0-9a-fA-FxX.:%]").match


def ip_literal(host: str) -> str | None:
    """The address a host names by itself, or None for a name to resolve.

    Besides ``1.2.3.4`` and ``[::1]`` this catches what ``getaddrinfo`` would read as an
    address without any lookup (``127.1``, ``2130706433``, ``0x7f.0.0.1``, a trailing dot),
    so every address literal is checked here, never resolved.
    """
    host = host.strip("[]").rstrip(".")
    if _NOT_AN_ADDRESS(host):  # a name (the usual case): no parse failing twice per fetch
        return None
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    if host and all(c in "0123456789abcdefxABCDEFX." for c in host) and host[0].isdigit():
        try:
            return socket.inet_ntoa(socket.inet_aton(host))
        except OSError:
            return None
    return None


class Refused(AddressRefused, OSError):
    """Raised inside the resolver so aiohttp wraps it (an ``OSError``, which aiohttp expects
    of a resolver); unwrapped to ``AddressRefused``."""


class ListedAddress(Refused):
    """The address is on the never-crawl list (its own outcome: ``excluded``)."""


class GuardedResolver(AbstractResolver):
    """Resolver with curl-style ``--resolve`` overrides and the private-address guard."""

    def __init__(
        self,
        rules: tuple[str, ...],
        allow_private: bool,
        names: NameCache | None = None,
        refuse: Callable[[str], bool] | None = None,
    ) -> None:
        """``refuse``: addresses never to connect to, asked at each connection (the
        never-crawl list's addresses and networks, which it re-reads live)."""
        self._exact: dict[tuple[str, int], str] = {}
        self._wild: list[tuple[str, int, str]] = []
        for rule in rules:
            host, port, addr = parse_resolve_rule(rule)
            if host.startswith("*."):
                self._wild.append((host[1:], port, addr))
            else:
                self._exact[(host, port)] = addr
        self._allow_private = allow_private
        self._refuse = refuse
        self.names = names if names is not None else NameCache()

    def prefetch(self, host: str, port: int) -> None:
        """Resolve ``host`` ahead of its site's turn (not an override, not an address)."""
        host = host.lower()
        if self.override(host, port) is None and ip_literal(host) is None:
            self.names.prefetch(host)

    async def answers(self, host: str, port: int) -> bool:
        """Whether ``host`` resolves now, asked of DNS past the cache (an override or an
        address literal needs no DNS: always)."""
        host = host.lower()
        if self.override(host, port) is not None or ip_literal(host) is not None:
            return True
        return await self.names.answers(host)

    def keep_for(self, host: str, port: int, seconds: float) -> None:
        """``host``'s site has its next turn in ``seconds``: its answer fresh by then."""
        host = host.lower()
        if self.override(host, port) is None and ip_literal(host) is None:
            self.names.keep_for(host, seconds)

    def current(self, host: str, port: int) -> tuple[str, ...] | None:
        """The addresses a new connection to ``host`` may go to now, the one tried first first,
        without waiting: an override's or a literal's, else the fresh cached answer's that the
        guard allows (``()``: none); None if no answer is cached (a lookup is started)."""
        host = host.lower()
        addr = self.override(host, port) or ip_literal(host)
        if addr is not None:
            return (addr,)
        found = self.names.known(host)
        if found is None:
            return None
        return tuple(a for a in found if self.allows(a))

    def override(self, host: str, port: int) -> str | None:
        addr = self._exact.get((host, port))
        if addr is None:
            for suffix, p, a in self._wild:
                if p == port and host.endswith(suffix):
                    return a
        return addr

    def allows(self, addr: str) -> bool:
        try:
            self.check(addr)
        except Refused:
            return False
        return True

    def listed(self, addr: str) -> bool:
        """Whether the never-crawl list names ``addr`` (or a network holding it)."""
        return self._refuse is not None and self._refuse(addr)

    def check(self, addr: str) -> None:
        if not self._allow_private and not is_public_address(addr):
            raise Refused(f"address {addr} is private, loopback or reserved")
        if self.listed(addr):
            raise ListedAddress(f"address {addr} is on the never-crawl list")

    async def _timed_lookup(self, host: str) -> tuple[tuple[str, socket.AddressFamily], ...]:
        """``names.lookup``, its wait added to the request's ``LOOKUP_WAIT``."""
        t0 = time.perf_counter()
        try:
            return await self.names.lookup(host)
        finally:
            sink = LOOKUP_WAIT.get(None)
            if sink is not None:
                sink.append(time.perf_counter() - t0)

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addr = self.override(host.lower(), port)
        if addr is not None:
            fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
            results: list[ResolveResult] = [
                {
                    "hostname": host,
                    "host": addr,
                    "port": port,
                    "family": fam,
                    "proto": 0,
                    "flags": socket.AI_NUMERICHOST,
                }
            ]
        else:
            want = {socket.AF_INET, socket.AF_INET6} if family == socket.AF_UNSPEC else {family}
            results = [
                {
                    "hostname": host,
                    "host": addr,
                    "port": port,
                    "family": fam,
                    "proto": socket.IPPROTO_TCP,
                    "flags": socket.AI_NUMERICHOST | socket.AI_NUMERICSERV,
                }
                for addr, fam in await self._timed_lookup(host.lower())
                if fam in want
            ]
            if not results:
                raise NameNotResolved(socket.EAI_NONAME, f"{host}: no address of family {family!r}")
        allowed = []
        listed = 0
        for r in results:
            try:
                self.check(r["host"])
            except ListedAddress:
                listed += 1
                continue
            except Refused:
                continue
            allowed.append(r)
        if not allowed:
            addrs = ", ".join(r["host"] for r in results)
            if listed == len(results):
                raise ListedAddress(f"{host} resolves only to addresses on the never-crawl "
                                    f"list ({addrs})")  # fmt: skip
            raise Refused(f"{host} resolves only to refused addresses ({addrs})")
        return allowed

    async def close(self) -> None:
        await self.names.close()
