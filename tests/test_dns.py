"""net/dns.NameCache with a fake at its c-ares seam (``_ares``) and an injected clock: what is
asked, when, and what is answered from the cache. The real thing, with a DNS server of the
tests' own in a network namespace, is tests/test_dns_e2e.py."""

from __future__ import annotations

import asyncio
import socket

import pytest

from politecrawl.net.dns import NameCache, NameNotResolved, _Entry
from politecrawl.net.resolver import GuardedResolver, Refused

pytestmark = pytest.mark.unit

V4 = socket.AddressFamily.AF_INET
V6 = socket.AddressFamily.AF_INET6


class FakeAres:
    """Answers when told (``release``); counts the queries per name."""

    def __init__(self, names: NameCache, answers: dict[str, tuple[str, ...] | None]) -> None:
        self.names, self.answers = names, answers
        self.asked: list[str] = []
        self.gate = asyncio.Event()
        self.gate.set()

    async def __call__(self, host: str) -> _Entry:
        self.asked.append(host)
        await self.gate.wait()
        now, ttl = self.names.clock(), 60.0
        addrs = self.answers.get(host)
        if addrs is None:
            end = now + self.names.negative_ttl_s
            return _Entry((), NameNotResolved(socket.EAI_NONAME, f"{host}: not found"), end, end)
        fams = tuple((a, V6 if ":" in a else V4) for a in addrs)
        return _Entry(fams, None, now + ttl, now + ttl * 0.8)


def make(answers: dict[str, tuple[str, ...] | None]) -> tuple[NameCache, FakeAres, list[float]]:
    now = [0.0]
    names = NameCache(negative_ttl_s=10.0, clock=lambda: now[0])
    fake = FakeAres(names, answers)
    names._ares = fake  # type: ignore[method-assign]
    return names, fake, now


async def test_one_query_for_many_waiters() -> None:
    names, fake, _ = make({"a.example": ("93.184.216.34",)})
    fake.gate.clear()
    waiters = [asyncio.create_task(names.lookup("a.example")) for _ in range(50)]
    await asyncio.sleep(0)
    fake.gate.set()
    got = await asyncio.gather(*waiters)
    assert fake.asked == ["a.example"]
    assert all(g == (("93.184.216.34", V4),) for g in got)
    await names.close()


async def test_answer_kept_for_its_ttl_refreshed_ahead_then_asked_again() -> None:
    names, fake, now = make({"a.example": ("93.184.216.34",)})
    await names.lookup("a.example")
    now[0] = 30.0  # within the TTL (60), before the refresh point (48): from the cache
    await names.lookup("a.example")
    assert fake.asked == ["a.example"]
    now[0] = 50.0  # in the last fifth: answered from the cache, and refreshed in the background
    assert await names.lookup("a.example") == (("93.184.216.34", V4),)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert fake.asked == ["a.example"] * 2
    now[0] = 200.0  # long expired: the lookup waits for a new answer
    await names.lookup("a.example")
    assert fake.asked == ["a.example"] * 3
    await names.close()


async def test_failure_kept_for_the_negative_ttl() -> None:
    names, fake, now = make({})
    for _ in range(5):
        with pytest.raises(NameNotResolved):
            await names.lookup("nx.example")
    assert fake.asked == ["nx.example"]
    now[0] = 9.9
    with pytest.raises(NameNotResolved):
        await names.lookup("nx.example")
    assert len(fake.asked) == 1
    now[0] = 10.1
    with pytest.raises(NameNotResolved):
        await names.lookup("nx.example")
    assert len(fake.asked) == 2
    await names.close()


async def test_prefetch_resolves_ahead_once() -> None:
    names, fake, _ = make({"a.example": ("93.184.216.34",), "b.example": ("2001:db8::1",)})
    for _ in range(3):
        names.prefetch("a.example")
        names.prefetch("b.example")
    for _ in range(5):
        await asyncio.sleep(0)
    assert sorted(fake.asked) == ["a.example", "b.example"]
    assert names.cached("a.example") and names.cached("b.example")
    await names.lookup("a.example")
    assert len(fake.asked) == 2
    await names.close()


async def test_guard_checks_cached_answers_and_overrides_skip_dns() -> None:
    names, fake, _ = make({"evil.example": ("10.0.0.5",), "ok.example": ("93.184.216.34",)})
    r = GuardedResolver(("pinned.example:80:93.184.216.35",), allow_private=False, names=names)
    for _ in range(2):  # the second time from the cache: refused again
        with pytest.raises(Refused):
            await r.resolve("evil.example", 80)
    assert fake.asked == ["evil.example"]
    found = await r.resolve("pinned.example", 80)
    assert [f["host"] for f in found] == ["93.184.216.35"]
    r.prefetch("pinned.example", 80)
    r.prefetch("93.184.216.34", 80)
    await asyncio.sleep(0)
    assert fake.asked == ["evil.example"]  # neither an override nor an address is looked up
    found = await r.resolve("ok.example", 80, socket.AF_UNSPEC)
    assert [f["host"] for f in found] == ["93.184.216.34"]
    await r.close()


async def test_an_answer_expiring_before_the_next_turn_is_refreshed_before_it() -> None:
    names, fake, now = make({"a.example": ("93.184.216.34",)})
    await names.lookup("a.example")
    names.keep_for("a.example", 30.0)  # the next turn at 30 s, the answer good until 60 s
    now[0] = 59.8
    names.keep_for("a.example", 0.5)  # the next turn after the TTL: refreshed before it
    for _ in range(5):
        await asyncio.sleep(0)
    assert fake.asked == ["a.example"] * 2
    now[0] = 60.2  # the turn: the refreshed answer is there
    await names.lookup("a.example")
    assert len(fake.asked) == 2
    await names.close()


@pytest.mark.unit
def test_no_data_after_a_timeout_is_a_failed_lookup_not_no_such_name() -> None:
    """c-ares answers ENODATA when the A query times out and the AAAA one is empty: that is
    a slow resolver, not a name without addresses (live sites were dropped at once)."""
    import aiodns.error

    from politecrawl.net.dns import _lookup_errno

    no_data = aiodns.error.DNSError(aiodns.error.ARES_ENODATA, "no data")
    not_found = aiodns.error.DNSError(aiodns.error.ARES_ENOTFOUND, "not found")
    assert _lookup_errno(no_data, waited_s=0.01, timeout_s=2.0) == socket.EAI_NONAME
    assert _lookup_errno(no_data, waited_s=5.0, timeout_s=2.0) == socket.EAI_AGAIN
    assert _lookup_errno(not_found, waited_s=5.0, timeout_s=2.0) == socket.EAI_NONAME
    assert _lookup_errno(TimeoutError(), waited_s=5.0, timeout_s=2.0) == socket.EAI_AGAIN
