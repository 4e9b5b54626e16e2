"""A host that moves to another server: where the crawl learns it without waiting (the name
cache's answer as it stands, a lookup started if there is none)."""

from __future__ import annotations

import asyncio

import pytest
from test_dns import make

from politecrawl.net.resolver import GuardedResolver

pytestmark = pytest.mark.unit

A, B, C = "192.0.2.1", "192.0.2.2", "93.184.216.34"  # C: the only public one


async def test_the_addresses_known_now_without_waiting() -> None:
    names, fake, now = make({"a.example": (C, A), "b.example": None})
    assert names.known("a.example") is None  # nothing cached: a lookup is started
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert fake.asked == ["a.example"]
    assert names.known("a.example") == (C, A)  # in c-ares' order
    assert names.known("a.example") == (C, A) and fake.asked == ["a.example"]
    with pytest.raises(OSError):
        await names.lookup("b.example")
    assert names.known("b.example") == ()  # a failure: no address
    now[0] = 1000.0  # expired: not known, asked again
    assert names.known("a.example") is None
    await names.close()


async def test_the_resolver_says_where_a_connection_would_go_now() -> None:
    names, _, _ = make({"a.example": (C, A)})
    guard = GuardedResolver(("pinned.example:80:" + B,), False, names)
    assert guard.current("Pinned.example", 80) == (B,)  # an override: always known
    assert guard.current("10.0.0.9", 80) == ("10.0.0.9",)  # a literal
    assert guard.current("a.example", 80) is None
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert guard.current("a.example", 80) == (C,)  # the guard keeps what it refuses out
    assert GuardedResolver((), True, names).current("a.example", 80) == (C, A)
    await names.close()
