"""A host that moves to another server: which address its key is gated on, and where the
crawl learns it without waiting (the name cache's answer as it stands, a lookup started if
there is none). The frontiers' side: test_frontier_contract.py (``moved``); the real command:
test_ip_moves.py."""

from __future__ import annotations

import asyncio

import pytest
from test_dns import make

from politecrawl.net.resolver import GuardedResolver
from politecrawl.polite import politeness

pytestmark = pytest.mark.unit

A, B, C = "192.0.2.1", "192.0.2.2", "93.184.216.34"  # C: the only public one


def test_a_key_stays_on_its_address_while_its_host_has_it_else_takes_the_first() -> None:
    assert politeness.server_of(A, (B,)) == B  # moved (a new DNS answer)
    assert politeness.server_of(A, (B, A)) == A  # several addresses: the one connected to
    assert politeness.server_of(A, ()) == A  # nothing known of the host now: as it was
    assert politeness.server_of("", (B, A)) == B  # none yet: the one tried first


def test_a_name_being_looked_up_is_waited_for_a_while_then_not() -> None:
    assert politeness.address_wait(100.0, 100.0) == 100.0 + politeness.IP_POLL_S
    assert politeness.address_wait(100.0, 100.5) == 101.0  # the waits double
    assert politeness.address_wait(100.0, 101.5) == 100.0 + politeness.LOOKUP_WAIT_S
    assert politeness.address_wait(100.0, 100.0 + politeness.LOOKUP_WAIT_S) is None


def test_a_key_that_cannot_wait_in_its_ips_line_asks_again() -> None:
    assert politeness.ip_retry_at(True, 0.0, 10.0) == 10.0 + politeness.IP_POLL_S  # held
    assert politeness.ip_retry_at(False, 12.0, 10.0) == 12.0  # the IP's time
    assert politeness.ip_retry_at(False, 5.0, 10.0) == 10.0


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
