"""The never-crawl list: one domain a line (subdomains included), re-read when the file changes.

The seeds' NeverCrawl.txt: an operator adds a domain after a complaint and can promise "it
takes effect within the half hour". We check the file's mtime every ``check_s`` seconds
(default 60), so it takes effect within a minute. A malformed line is reported with its line
number and skipped; it never stops the crawl.

A line may also be a server address or a network (``203.0.113.7``, ``2001:db8::/32``): a
complaint often comes from a hosting company that names its addresses, not the names on
them. No connection is made to a listed address, whatever name leads there (the resolver
asks ``refuses_address``: ``net.resolver.GuardedResolver``). Before, such a line was taken
for a host name: a URL naming that address was refused, but the names resolving to it were
crawled, and ``10.0.0.0/8`` was read as the one address ``10.0.0.0``.
"""

from __future__ import annotations

import ipaddress
import logging
import os
from pathlib import Path

from politecrawl.urls.filters import parse_domain_list

log = logging.getLogger("politecrawl.polite.exclusions")


class NeverCrawlList:
    def __init__(self, path: Path | None, check_s: float = 60.0) -> None:
        self.path = path
        self.check_s = check_s
        self.domains: frozenset[str] = frozenset()
        self.networks: tuple[IpNetwork, ...] = ()
        self._refused: dict[str, bool] = {}
        self.errors: list[tuple[int, str]] = []
        self._mtime: float | None = None
        self._next_check = 0.0
        self._cache: dict[str, bool] = {}
        self.generation = 0
        if path is not None:
            self.reload()

    def reload(self) -> bool:
        """Read the file again if it changed; True when the list changed."""
        if self.path is None:
            return False
        try:
            st = os.stat(self.path)
        except OSError as exc:
            if self._mtime is not None:
                log.warning(
                    "never-crawl list %s unreadable (%s); keeping the last copy", self.path, exc
                )
            return False
        mtime = st.st_mtime_ns + st.st_size
        if mtime == self._mtime:
            return False
        self._mtime = mtime
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            log.warning("never-crawl list %s unreadable (%s)", self.path, exc)
            return False
        text, networks = _take_networks(text)
        domains, errors = parse_domain_list(text)
        for lineno, msg in errors:
            log.warning("%s:%d: %s (line skipped)", self.path, lineno, msg)
        self.errors = errors
        new = frozenset(domains)
        changed = new != self.domains or networks != self.networks
        self.domains, self.networks = new, networks
        self._cache.clear()
        self._refused.clear()
        if changed:
            self.generation += 1
            log.info("never-crawl list %s: %d domains, %d address ranges", self.path,
                     len(new), len(networks))  # fmt: skip
        return changed

    def maybe_reload(self, now: float) -> bool:
        if self.path is None or now < self._next_check:
            return False
        self._next_check = now + self.check_s
        return self.reload()

    def excludes(self, host: str) -> bool:
        """True when ``host`` or any parent domain of it is listed."""
        if not self.domains:
            return False
        hit = self._cache.get(host)
        if hit is None:
            hit = False
            name = host
            while True:
                if name in self.domains:
                    hit = True
                    break
                dot = name.find(".")
                if dot < 0:
                    break
                name = name[dot + 1 :]
            if len(self._cache) > 100_000:
                self._cache.clear()
            self._cache[host] = hit
        return hit

    def refuses_address(self, addr: str) -> bool:
        """True when ``addr`` (a server address a name resolved to) is listed, or in a
        listed network."""
        if not self.networks:
            return False
        hit = self._refused.get(addr)
        if hit is None:
            try:
                ip = ipaddress.ip_address(addr.partition("%")[0])
            except ValueError:
                return False
            hit = any(ip.version == net.version and ip in net for net in self.networks)
            if len(self._refused) > 100_000:
                self._refused.clear()
            self._refused[addr] = hit
        return hit


IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def _take_networks(text: str) -> tuple[str, tuple[IpNetwork, ...]]:
    """The lines that are an address or a network, taken out (blank lines left in their
    place, so the other lines keep their numbers), and the networks they name."""
    lines = text.split("\n")
    networks: list[IpNetwork] = []
    for i, line in enumerate(lines):
        entry = line.partition("#")[0].strip().strip("[]")
        if not entry or not (entry[0].isdigit() or ":" in entry):
            continue
        try:
            net = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            continue  # a name, or a URL with a port: the domain list's to read
        if net not in networks:
            networks.append(net)
        lines[i] = ""
    return "\n".join(lines), tuple(networks)
