"""The rules behind outages, TLS and slow servers, part by part: the outage guard, the
outcome table's new rows, the retry schedule, the losses report."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from politecrawl.config import PolitenessConfig
from politecrawl.engine.losses import Losses, describe
from politecrawl.engine.outage import ALONE_MAX_S, PROBE_MAX_S, ROW, WINDOW_S, Board, OutageGuard
from politecrawl.engine.outcome import CUT, Drop, DropReason, Retry, classify, outcome_label
from politecrawl.net.fetch import FetchResult
from politecrawl.polite import politeness

pytestmark = pytest.mark.unit


def failing(
    guard: OutageGuard, keys: list[str], kind: str = "connect", now: float = 10.0
) -> list[bool]:
    return [guard.failed(k, kind, now) for k in keys]


async def down(origin: str, dns_only: bool) -> bool:
    return False


async def up(origin: str, dns_only: bool) -> bool:
    return True


def test_many_sites_failing_the_same_way_are_an_outage_when_a_probe_fails_too() -> None:
    guard = OutageGuard()
    guard.answered("http://a.test")
    assert failing(guard, ["k1", "k2", "k3", "k4"]) == [False] * 4
    assert not guard.paused
    assert not guard.failed("k5", "connect", 11.0)  # suspected: the crawl pauses, probes
    assert guard.paused and guard.suspect and not guard.active and guard.due(11.0)
    assert not guard.failed("k6", "connect", 11.2)  # counted, for now
    assert not asyncio.run(guard.probe(down, 11.5))  # the probe failed too: an outage
    assert guard.active and guard.outages == 1
    assert guard.failed("k7", "timeout", 12.0)  # during it, every network failure is its own


def test_a_probe_that_gets_through_makes_it_the_sites_failures() -> None:
    guard = OutageGuard()
    guard.answered("http://a.test")
    failing(guard, ["k1", "k2", "k3", "k4", "k5"])
    assert guard.suspect
    assert asyncio.run(guard.probe(up, 11.0))  # the network works: the sites failed
    assert not guard.paused and guard.false_alarms == 1 and guard.outages == 0
    host = politeness.HostState("k1", consecutive_failures=3)
    guard.absolve(host)
    assert host.consecutive_failures == 3  # nothing forgiven


def test_an_answer_between_failures_or_another_kind_is_no_outage() -> None:
    guard = OutageGuard()
    guard.answered("http://a.test")
    failing(guard, ["k1", "k2", "k3"])
    guard.answered("http://b.test")  # the network works: those were the sites'
    assert failing(guard, ["k4", "k5"]) == [False, False]
    assert failing(guard, ["k6", "k7"], kind="dns") == [False, False]
    assert not guard.active
    assert not guard.failed("k8", "http_500", 10.0)  # not a network failure at all


def test_failures_too_far_apart_or_before_any_answer_are_the_sites() -> None:
    guard = OutageGuard(window_s=30.0)
    assert failing(guard, [f"k{i}" for i in range(10)]) == [False] * 10  # nothing ever answered
    guard = OutageGuard(window_s=30.0)
    guard.answered("http://a.test")
    for i in range(8):
        assert not guard.failed(f"k{i}", "connect", 100.0 * i)


def test_the_failures_before_the_outage_was_confirmed_are_forgiven() -> None:
    guard = OutageGuard()
    guard.answered("http://a.test")
    failing(guard, ["k1", "k2", "k3", "k4", "k5"])
    asyncio.run(guard.probe(down, 10.5))
    host = politeness.HostState("k1", consecutive_failures=3, backoff_factor=2.0)
    guard.absolve(host)
    assert host.consecutive_failures == 2 and host.backoff_factor == 1.0
    guard.absolve(host)  # once
    assert host.consecutive_failures == 2


def test_a_probe_that_gets_through_ends_the_outage_one_that_does_not_waits_longer() -> None:
    guard = OutageGuard()
    guard.answered("http://a.test")
    failing(guard, ["k1", "k2", "k3", "k4", "k5"], now=10.0)
    tried: list[tuple[str, bool]] = []

    async def noted(origin: str, dns_only: bool) -> bool:
        tried.append((origin, dns_only))
        return False

    assert not asyncio.run(guard.probe(noted, 10.0))  # confirmed
    assert guard.active and guard.due(11.0) and not guard.due(10.5)
    assert not asyncio.run(guard.probe(noted, 11.0))
    assert tried == [("http://a.test", False)] * 2 and guard.next_probe == 13.0
    assert asyncio.run(guard.probe(up, 25.0)) and not guard.active
    assert guard.seconds == 15.0


class Rows:
    """The shared memory of ``partition.OutageBoard``, in one process: a row per guard."""

    def __init__(self, n: int) -> None:
        self.rows: list[list[float]] = [[0.0] * ROW for _ in range(n)]

    def board(self, me: int) -> Board:
        rows = self.rows

        class One:
            def put(self, row: Sequence[float]) -> None:
                rows[me] = list(row)

            def others(self) -> list[Sequence[float]]:
                return [r for j, r in enumerate(rows) if j != me]

        return One()


def test_with_few_sites_in_play_all_of_them_failing_alike_is_enough_but_one_never() -> None:
    guard = OutageGuard()
    for k in ["k1", "k2", "k3", "k4"]:
        guard.answered(f"http://{k}", k, 1.0)
    assert failing(guard, ["k1", "k2", "k3"]) == [False] * 3
    assert not guard.paused
    assert not guard.failed("k4", "connect", 10.0)  # the four in play: suspected
    assert guard.suspect
    lone = OutageGuard()
    lone.answered("http://k1", "k1", 1.0)
    assert failing(lone, ["k1", "k1", "k1"]) == [False] * 3 and not lone.paused  # its own


def test_partitions_count_their_sites_together_and_join_an_outage() -> None:
    rows = Rows(2)
    a, b = OutageGuard(board=rows.board(0)), OutageGuard(board=rows.board(1))
    for i in range(7):  # 4 sites here, 3 there: neither has five
        guard, k = (a, f"a{i}") if i < 4 else (b, f"b{i}")
        guard.answered(f"http://{k}", k, 1.0)
    assert failing(b, ["b4", "b5", "b6"]) == [False] * 3 and not b.paused
    assert not a.failed("a0", "connect", 10.0) and not a.paused
    assert not a.failed("a1", "connect", 10.0) and a.suspect  # 2 + 3: five of the crawl's
    assert not b.failed("b4", "connect", 10.5) and b.suspect  # a is paused: b joins


def test_an_answer_in_another_partition_since_the_suspicion_says_the_network_works() -> None:
    rows = Rows(2)
    a, b = OutageGuard(board=rows.board(0)), OutageGuard(board=rows.board(1))
    for k in ["k1", "k2", "k3", "k4", "k5"]:
        a.answered(f"http://{k}", k, 1.0)
    failing(a, ["k1", "k2", "k3", "k4", "k5"], now=10.0)
    assert a.suspect
    b.answered("http://other", "other", now=11.0, started=10.5)  # asked after it, answered
    assert asyncio.run(a.probe(down, 11.0)) and a.false_alarms == 1


def test_a_probe_tries_a_site_that_is_not_failing_first() -> None:
    guard = OutageGuard()
    for k in ["ok", "k1", "k2", "k3", "k4", "k5"]:
        guard.answered(f"http://{k}", k, 1.0)
    failing(guard, ["k1", "k2", "k3", "k4", "k5"])
    tried: list[str] = []

    async def noted(origin: str, dns_only: bool) -> bool:
        tried.append(origin)
        return True

    assert asyncio.run(guard.probe(noted, 11.0)) and tried == ["http://ok"]


def test_an_outage_only_the_failing_sites_could_tell_ends_as_their_failures() -> None:
    guard = OutageGuard()
    for k in ["k1", "k2"]:
        guard.answered(f"http://{k}", k, 1.0)
    failing(guard, ["k1", "k2"])
    assert not asyncio.run(guard.probe(down, 10.0)) and guard.active  # alone: a pause
    assert not asyncio.run(guard.probe(down, 10.0 + ALONE_MAX_S / 2)) and guard.active
    assert asyncio.run(guard.probe(down, 10.0 + ALONE_MAX_S)) and not guard.paused
    assert failing(guard, ["k1", "k2"], now=700.0) == [False, False] and not guard.paused


def test_a_park_waits_while_most_sites_began_failing_alike_not_for_one() -> None:
    guard = OutageGuard()
    for k in ["k1", "k2", "k3", "k4"]:
        guard.answered(f"http://{k}", k, 1.0)
    failing(guard, ["k1", "k2"], now=10.0)
    guard.answered("http://k4", "k4", 10.1)  # k4 still answers: no outage suspected
    assert guard.hold_s("k1", "connect", 10.2) == PROBE_MAX_S  # 2 of 4 began failing
    assert guard.hold_s("k1", "connect", 10.0 + WINDOW_S) is None  # for too long: park it
    assert guard.hold_s("k1", "http_503", 10.2) is None
    many = OutageGuard()
    for i in range(10):
        many.answered(f"http://k{i}", f"k{i}", 1.0)
    many.failed("k1", "connect", 10.0)
    assert many.hold_s("k1", "connect", 10.2) is None  # one dead site among many


def test_a_hold_keeps_the_failures_counted_but_parks_not() -> None:
    cfg = PolitenessConfig(park_after_failures=3)
    h = politeness.HostState("k1")
    for _ in range(3):
        assert not politeness.record_failure(h, cfg, 10.0, PROBE_MAX_S)
    assert h.consecutive_failures == 3 and h.parked_until == 0.0
    assert h.retry_after_until == 10.0 + PROBE_MAX_S


def res(error: str) -> FetchResult:
    return FetchResult(url="http://a.test/", started=0.0, error=error)


def test_transient_failures_are_retried_over_hours() -> None:
    waits = []
    for attempt in range(1, 30):
        out = classify(res("connect"), attempt, 3, retry_base_s=30, transient_attempts=30)
        assert isinstance(out, Retry) and out.blame
        waits.append(out.after_s)
    assert waits[:6] == [30, 60, 120, 240, 480, 900] and max(waits) == 900
    assert sum(waits) > 5 * 3600
    assert classify(res("dns"), 30, 3, transient_attempts=30) == Drop(
        DropReason.RETRIES_EXHAUSTED, "dns"
    )
    assert isinstance(classify(res("network"), 3, 3), Drop)  # not transient: 3 attempts


def test_tls_too_slow_and_cut_rows() -> None:
    assert classify(res("tls:certificate"), 1, 3) == Drop(DropReason.TLS_CERTIFICATE)
    assert outcome_label(classify(res("tls:certificate"), 1, 3)) == "dropped:tls:certificate"
    assert classify(res("too_slow"), 1, 3) == Drop(DropReason.TOO_SLOW)
    cut = classify(res(CUT), 1, 3)
    assert isinstance(cut, Retry) and not cut.blame and outcome_label(cut) == "cut"
    outage = Retry(0.0, False, "outage:connect", blame=False)
    assert outcome_label(outage) == "retry:outage"


def test_backoff_is_capped() -> None:
    assert politeness.retry_backoff_s(1, 30, 900) == 30
    assert politeness.retry_backoff_s(100, 30, 900) == 900
    assert politeness.retry_backoff_s(3, 30) == 120


def test_losses_report_names_each_site_once() -> None:
    losses = Losses()
    losses.note_error("a.test", "connect")
    losses.parked("a.test", "failed 5 times in a row (connect)", 1000.0)
    losses.parked("b.test", "failed 5 times in a row (http_5xx)", 1000.0)
    losses.parked("c.test", "refused 5 requests in a row (http_403)", 1000.0)
    losses.recovered("c.test")  # it answered again: not lost
    losses.given_up("d.test", "robots.txt of http://d.test unreachable", 7)
    queued = {"a.test": 3, "b.test": 0}
    report = losses.report(queued.get, now=500.0)
    assert [x["site"] for x in report] == ["a.test", "d.test"]  # b.test left nothing behind
    a, d = report
    assert a["state"] == "parked" and a["urls_left"] == 3 and a["retry_at"]
    assert d["state"] == "given_up" and d["urls_left"] == 7 and d["retry_at"] is None
    lines = describe(report)
    assert "a.test: parked" in lines[0] and "d.test: given_up" in lines[1]


def test_a_site_parked_and_given_up_for_one_origin_is_named_both_ways() -> None:
    """docs.test parked (its pages failing) and one of its origins given up (a dead port):
    before, the second entry replaced the first, and the parked pages were named nowhere."""
    losses = Losses()
    losses.parked("docs.test", "failed 5 times in a row (protocol)", 1000.0)
    losses.given_up("docs.test", "robots.txt of http://docs.test:9 unreachable", 1,
                    outcome="dropped:robots_unavailable")  # fmt: skip
    report = losses.report({"docs.test": 300}.get, now=500.0)
    assert [(x["state"], x["urls_left"]) for x in report] == [("parked", 300), ("given_up", 1)]
    assert "protocol" in report[0]["reason"] and "docs.test:9" in report[1]["reason"]


def test_a_site_given_up_for_several_reasons_names_each() -> None:
    losses = Losses()
    for port in (81, 82, 81, 83, 84, 85, 86):
        losses.given_up("mix.test", f"robots.txt of http://mix.test:{port} unreachable", 1)
    [lost] = losses.report(lambda key: 0, 0.0)
    assert lost["urls_left"] == 7
    assert lost["reason"] == (
        "robots.txt of http://mix.test:81 unreachable | robots.txt of http://mix.test:82 "
        "unreachable | robots.txt of http://mix.test:83 unreachable | robots.txt of "
        "http://mix.test:84 unreachable | and 2 more"
    )


def test_an_origin_that_stopped_answering_is_named_apart_from_its_site() -> None:
    losses = Losses()
    losses.page_answered("mix.test", "https://mix.test")
    losses.page_answered("mix.test", "http://mix.test:81")
    losses.failed_alone("http://mix.test:81")
    losses.url_failed("mix.test", "connect", "http://mix.test:81")
    losses.url_failed("mix.test", "protocol", "https://mix.test:444")  # last, not alone: a page
    losses.page_answered("mix.test", "https://mix.test:444")
    losses.url_failed("mix.test", "protocol", "https://mix.test:444")
    losses.url_failed("mix.test", "http_503", "http://mix.test:82")
    losses.url_failed("mix.test", "http_503", "https://mix.test")  # then it answered again
    losses.page_answered("mix.test", "https://mix.test")
    reasons = [x["reason"] for x in losses.report(lambda key: 0, 0.0)]
    assert reasons == [
        "http://mix.test:81 stopped answering; its URLs were dropped after their retries; "
        "last error connect",
        "every request to http://mix.test:82 failed; its URLs were dropped after their "
        "retries; last error http_503",
    ]
