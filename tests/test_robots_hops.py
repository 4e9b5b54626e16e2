"""robots.hops: a robots.txt redirect's answer shared by URL, one request to a host at a
time, the target site's own turn respected."""

from __future__ import annotations

import pytest

from politecrawl.net.fetch import FetchResult
from politecrawl.polite.politeness import IP_POLL_S, HostState
from politecrawl.robots.hops import HopBook

pytestmark = pytest.mark.unit

URL = "http://www.test/robots.txt"


def answer(status: int | None, error: str | None = None) -> FetchResult:
    res = FetchResult(url=URL, started=0.0)
    res.status, res.error = status, error
    return res


def test_an_answer_is_shared_for_the_ttl_and_a_failure_until_the_retry_time() -> None:
    book = HopBook(ttl_s=100.0, retry_s=5.0)
    book.keep(URL, answer(200), 10.0)
    assert book.answer(URL, 109.0) is not None and book.answer(URL, 110.0) is None
    book.keep(URL, answer(503), 10.0)
    assert book.answer(URL, 14.0) is not None and book.answer(URL, 15.0) is None
    book.keep(URL, answer(None, "timeout"), 10.0)
    assert book.answer(URL, 15.0) is None
    book.keep(URL, answer(301), 10.0)  # a redirect settles the hop: the next one is known
    assert book.answer(URL, 50.0) is not None


def test_a_host_busy_or_not_due_holds_the_hop() -> None:
    book = HopBook(ttl_s=100.0, retry_s=5.0)
    assert book.due_at("www.test", None, 10.0, 60.0) == 0.0
    book.begin("www.test")  # a request to it in flight in this process
    assert book.due_at("www.test", None, 10.0, 60.0) == 10.0 + IP_POLL_S
    book.end("www.test", 12.0)  # ended; its delay runs to 12 s
    assert book.due_at("www.test", None, 10.0, 60.0) == 12.0
    site = HostState("other.test", next_allowed=20.0)  # its own site not due yet
    assert book.due_at("other.test", site, 10.0, 60.0) == 20.0
    busy = HostState("busy.test", last_start=9.0, last_end=8.0)  # its own request in flight
    assert book.due_at("busy.test", busy, 10.0, 60.0) == 10.0 + IP_POLL_S
    assert book.due_at("busy.test", busy, 100.0, 60.0) == 0.0  # a crash's stale mark
