"""A site whose host moved to another server, on the shared frontier: the per-IP rule follows
it as in the embedded frontier (``frontier.servers``: asked at the lease, corrected by the
address each request connected to).

A key lives in one shard for good (its queue, state and seen-set entries: ``dir``), the shard
of the address it was first queued with; the turn-taking of an address (its holder, next
time and line) lives in that address's shard. A key that moves to an address of its own
shard is gated there in one script (``ipmove.lua``). One that moves to an address of
another shard is ``away``: its shard's lease no longer gates it, and after each lease of it
this worker takes the address in the address's shard as a guest (``ipguest.lua``: a lease of
that shard named ``~KEY``, renewed with the key's and reclaimed if the worker dies), or gives
the key back to ask again at the address's next time (a guest cannot wait in the address's
line: its key is scheduled in its own shard). Its release frees the guest hold. The two
scripts are not one atomic step (two slots); a worker dying between them leaves a guest
hold that expires with its lease.
"""

from __future__ import annotations

import logging
from typing import Any

from politecrawl.frontier import Addresses
from politecrawl.frontier.redis.keys import fnum, text
from politecrawl.frontier.redis.store import RedisStore
from politecrawl.polite import politeness

log = logging.getLogger("politecrawl.frontier.redis")


class Moves:
    """The addresses of the keys this worker holds, and its guest holds."""

    def __init__(self, store: RedisStore, lease_ttl_s: float) -> None:
        self.store = store
        self.lease_ttl_s = lease_ttl_s
        self.addresses: Addresses | None = None
        self.ip: dict[str, str] = {}  # held key -> its IP ("": none)
        self.guests: dict[str, tuple[str, int]] = {}  # held key -> (IP, shard it is a guest of)
        self._asking: dict[str, float] = {}  # key -> since when its address is looked up

    def away(self, ip: str, shard: int) -> bool:
        """Whether ``ip``'s turn-taking lives in another shard than ``shard``."""
        return bool(ip) and self.store.home(ip) != shard

    async def check(self, key: str, token: str, shard: int, url: str | None, now: float) -> bool:
        """After ``key`` was leased (its first URL ``url``): True if it holds the IP its request
        will go to, moved there if its host moved; else it was given back (to wait for that IP,
        or for its host's address, being looked up)."""
        ip = self.ip.get(key, "")
        if self.addresses is not None and url is not None:
            found = self.addresses(url)
            if found is None:
                later = politeness.address_wait(self._asking.setdefault(key, now), now)
                if later is not None:
                    await self._move(key, token, shard, "", now, "back", later)
                    return False
            self._asking.pop(key, None)
            new = politeness.server_of(ip, found or ())
            if new != ip:
                ip = self.ip[key] = new
                if not await self._move(key, token, shard, new, now, "lease"):
                    return False
        if not self.away(ip, shard):
            return True
        home = self.store.home(ip)
        got = await self._guest(key, token, home, ip, now, "lease")
        if got == "0":
            self.guests[key] = (ip, home)
            return True
        held = got == "-1"
        later = politeness.ip_retry_at(held, 0.0 if held else float(got), now)
        await self._move(key, token, shard, "", now, "back", later)
        return False

    async def connected(self, key: str, token: str, shard: int, ip: str, now: float) -> None:
        """The held ``key``'s request went to ``ip``: its IP from now on, held until its
        release unless another key holds it."""
        if self.addresses is None or not ip or self.ip.get(key) == ip:
            return
        self.ip[key] = ip
        await self.free(key, token, 0.0)  # the old address (a guest's) was not asked
        await self._move(key, token, shard, ip, now, "used")
        if self.away(ip, shard):
            home = self.store.home(ip)
            if await self._guest(key, token, home, ip, now, "used") == "0":
                self.guests[key] = (ip, home)

    async def free(self, key: str, token: str, ip_next: float) -> None:
        """The key's guest hold, if any, given back: its address asked again from ``ip_next``."""
        guest = self.guests.pop(key, None)
        if guest is not None:
            ip, home = guest
            args = ["~" + key, ip, token, fnum(0.0), fnum(0.0), "free", fnum(ip_next)]
            await self.store.run("ipguest", home, args)

    def forget(self, key: str) -> None:
        """The key is no longer held here (a guest hold left expires with its lease)."""
        self.ip.pop(key, None)
        self.guests.pop(key, None)

    def renewals(self, tokens: dict[str, str]) -> dict[int, list[str]]:
        """``(guest, token)`` pairs to renew with the held keys' leases, by shard."""
        out: dict[int, list[str]] = {}
        for key, (_, home) in self.guests.items():
            if key in tokens:
                out.setdefault(home, []).extend(["~" + key, tokens[key]])
        return out

    def lost(self, names: list[str]) -> list[str]:
        """Of lost leases' names, the keys' (a guest's lost hold is only forgotten)."""
        keys = []
        for name in names:
            if name.startswith("~"):
                self.guests.pop(name[1:], None)
            else:
                keys.append(name)
        return keys

    async def _move(
        self, key: str, token: str, shard: int, ip: str, now: float, mode: str, when: float = 0.0
    ) -> bool:
        away = "1" if self.away(ip, shard) else ""
        args: list[Any] = [key, token, ip, away, fnum(now), mode, fnum(when)]
        res = int(await self.store.run("ipmove", shard, args))
        if res == -1:
            log.warning("lease on %s expired while its address was checked", key)
        if ip:
            log.info("%s moved to %s", key, ip)
        return res == 1

    async def _guest(self, key: str, token: str, home: int, ip: str, now: float, mode: str) -> str:
        args = ["~" + key, ip, token, fnum(now), fnum(now + self.lease_ttl_s), mode, ""]
        return text(await self.store.run("ipguest", home, args))
