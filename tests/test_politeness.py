import random

import pytest

from politecrawl.config import PolitenessConfig
from politecrawl.engine.outcome import unanswered
from politecrawl.net.fetch import FetchResult
from politecrawl.polite import politeness
from politecrawl.polite.politeness import HostState

pytestmark = pytest.mark.unit


def test_floor_is_a_floor_jitter_only_adds():
    cfg = PolitenessConfig(min_delay_s=15.0, jitter_s=0.5)
    rng = random.Random(1)
    for _ in range(200):
        h = HostState("a", last_start=100.0)
        nxt = politeness.schedule_next(h, cfg, rng)
        assert 115.0 <= nxt <= 115.5


def test_delay_is_max_of_crawl_delay_floor_and_response_times():
    cfg = PolitenessConfig(min_delay_s=15.0, response_time_factor=30.0, jitter_s=0.0)
    h = HostState("a")
    assert politeness.delay_s(h, cfg) == 15.0
    politeness.set_crawl_delay(h, "http://a.test", 20.5)
    assert politeness.delay_s(h, cfg) == 20.5
    for rt in (1.0, 1.5, 2.0, 1.5, 1.5):  # the seeds' example: mean 1.5 s x 30 = 45 s
        politeness.record_response(h, cfg, rt)
    assert politeness.delay_s(h, cfg) == 45.0


def test_a_keys_crawl_delay_is_the_largest_of_its_origins():
    h = HostState("mix.test")
    politeness.set_crawl_delay(h, "http://mix.test", 2.0)
    politeness.set_crawl_delay(h, "https://mix.test", None)  # read last, says none
    assert h.crawl_delay_s == 2.0
    politeness.set_crawl_delay(h, "https://mix.test", 5.0)
    politeness.set_crawl_delay(h, "http://mix.test", None)  # its file changed
    assert h.crawl_delay_s == 5.0
    politeness.set_crawl_delay(h, "https://mix.test", None)
    assert h.crawl_delay_s is None


def test_only_last_five_response_times_count():
    cfg = PolitenessConfig(min_delay_s=0.0, response_time_factor=10.0, jitter_s=0.0)
    h = HostState("a")
    for rt in (100.0, 1.0, 1.0, 1.0, 1.0, 1.0):
        politeness.record_response(h, cfg, rt)
    assert politeness.delay_s(h, cfg) == 10.0


def test_overload_doubles_capped_and_decays_on_success():
    cfg = PolitenessConfig(min_delay_s=10.0, jitter_s=0.0, max_backoff_s=60.0)
    h = HostState("a")
    politeness.record_overload(h, cfg, now=0.0, retry_after_s=None)
    assert politeness.delay_s(h, cfg) == 20.0
    for _ in range(10):
        politeness.record_overload(h, cfg, now=0.0, retry_after_s=None)
    assert politeness.delay_s(h, cfg) == 60.0
    for _ in range(10):
        politeness.record_response(h, cfg, 0.01)
    assert politeness.delay_s(h, cfg) == 10.0


def test_retry_after_pushes_next_allowed_and_is_capped():
    cfg = PolitenessConfig(min_delay_s=1.0, jitter_s=0.0, max_retry_after_s=100.0)
    h = HostState("a", last_start=0.0)
    politeness.record_overload(h, cfg, now=0.0, retry_after_s=50.0)
    assert politeness.schedule_next(h, cfg) == 50.0
    politeness.record_overload(h, cfg, now=0.0, retry_after_s=10_000.0)
    assert politeness.schedule_next(h, cfg) == 100.0


def test_host_failing_n_times_in_a_row_is_parked():
    cfg = PolitenessConfig(min_delay_s=1.0, jitter_s=0.0, park_after_failures=3, park_s=600.0)
    h = HostState("a", last_start=0.0)
    assert not politeness.record_failure(h, cfg, now=0.0)
    assert not politeness.record_overload(h, cfg, now=0.0, retry_after_s=None)
    assert politeness.record_failure(h, cfg, now=10.0)  # the third in a row
    assert politeness.is_parked(h, now=11.0)
    assert politeness.schedule_next(h, cfg) == 610.0
    politeness.record_response(h, cfg, 0.1)  # one good answer resets the count
    assert h.consecutive_failures == 0


def test_a_request_start_persists_a_provisional_next_time():
    cfg = PolitenessConfig(min_delay_s=15.0, jitter_s=0.0)
    h = HostState("a")
    politeness.record_start(h, cfg, now=100.0)
    assert h.next_allowed == 115.0  # on disk before the request goes out


def test_the_next_start_counts_from_the_end_of_the_last_response():
    """The server saw the last request before its answer ended: counting from there, no gap
    it sees is shorter than the delay, however long the request took to reach it."""
    cfg = PolitenessConfig(min_delay_s=5.0, jitter_s=0.0, response_time_factor=0.0)
    h = HostState("a")
    politeness.record_start(h, cfg, now=100.0)
    politeness.record_end(h, now=100.4)  # name resolution, connect and answer: 0.4 s
    assert politeness.schedule_next(h, cfg) == 105.4


def test_the_ip_may_be_asked_again_a_gap_after_the_last_answer():
    cfg = PolitenessConfig(min_delay_s=5.0, jitter_s=0.0, ip_min_delay_s=1.5)
    h = HostState("a")
    politeness.record_start(h, cfg, now=100.0)
    politeness.record_end(h, now=100.2)
    politeness.schedule_next(h, cfg)
    assert h.ip_next == 101.7
    off = PolitenessConfig(min_delay_s=5.0, jitter_s=0.0, ip_min_delay_s=None)
    h2 = HostState("b")
    politeness.record_end(h2, now=100.2)
    politeness.schedule_next(h2, off)
    assert h2.ip_next == 0.0  # no IP rule


def test_a_request_given_up_unanswered_counts_as_a_response_time_for_site_and_ip():
    """No answer in 2 s: it took at least 2 s. The site waits --delay-factor x the mean after
    the give-up, and so does its server's IP (the server may still be working on it); the
    next request that is answered ends the IP's longer wait."""
    cfg = PolitenessConfig(
        min_delay_s=0.2, jitter_s=0.0, response_time_factor=30.0, ip_min_delay_s=1.0
    )
    h = HostState("a")
    politeness.record_start(h, cfg, now=100.0)
    politeness.record_end(h, now=102.0)
    politeness.record_unanswered(h, cfg, 2.0)
    assert politeness.schedule_next(h, cfg) == 102.0 + 60.0
    assert h.ip_next == 102.0 + 60.0
    politeness.record_start(h, cfg, now=200.0)
    politeness.record_end(h, now=200.5)
    politeness.record_response(h, cfg, 0.5)
    politeness.schedule_next(h, cfg)
    assert h.ip_next == 200.5 + 1.0  # answered: the IP's own gap again


def test_a_request_lost_in_an_outage_is_not_a_response_time():
    """Excused (an outage of the crawler's own network suspected while it was out): its wait
    is taken back; an outage confirmed later takes back a wait learned too."""
    cfg = PolitenessConfig(min_delay_s=0.2, jitter_s=0.0, response_time_factor=30.0,
                           ip_min_delay_s=1.0)  # fmt: skip
    h = HostState("a")
    politeness.record_start(h, cfg, now=100.0)
    politeness.record_response(h, cfg, 0.1)
    politeness.record_start(h, cfg, now=101.0)
    politeness.record_end(h, now=121.0)
    politeness.record_unanswered(h, cfg, 20.0)
    politeness.unanswered_excused(h)
    assert list(h.response_times_s) == [0.1]
    assert politeness.schedule_next(h, cfg) == 121.0 + 3.0  # 30 x 0.1
    assert h.ip_next == 121.0 + 1.0
    politeness.record_unanswered(h, cfg, 20.0)
    assert list(h.response_times_s) == [0.1, 20.0]
    politeness.forgive_failures(h, 1)
    assert list(h.response_times_s) == [0.1]


def test_only_a_request_that_reached_the_server_and_was_given_up_is_unanswered():
    def res(error: str | None, ip: str | None) -> FetchResult:
        r = FetchResult(url="http://a.test/", started=0.0)
        r.error, r.ip = error, ip
        return r

    assert unanswered(res("timeout", "10.0.0.1"))  # read or total timeout
    assert unanswered(res("cut", "10.0.0.1"))  # cut at --max-time
    assert not unanswered(res("timeout", None))  # a connect timeout: never reached it
    assert not unanswered(res("connect", None))
    assert not unanswered(res("disconnect", "10.0.0.1"))  # the server ended it
    assert not unanswered(res(None, "10.0.0.1"))


def test_refusals_in_a_row_pause_the_site_then_give_it_up():
    cfg = PolitenessConfig(min_delay_s=1.0, jitter_s=0.0, park_after_failures=3, park_s=600.0)
    h = HostState("a", last_start=0.0)
    got = [politeness.record_refusal(h, cfg, now=10.0) for _ in range(3)]
    assert got == [
        politeness.Refused.COUNTED,
        politeness.Refused.COUNTED,
        politeness.Refused.PAUSED,
    ]
    assert politeness.is_parked(h, now=11.0)
    assert politeness.schedule_next(h, cfg) == 610.0  # paused: not asked before then
    assert politeness.record_refusal(h, cfg, now=611.0) is politeness.Refused.GIVEN_UP


def test_a_normal_answer_ends_a_run_of_refusals_a_5xx_does_not():
    cfg = PolitenessConfig(min_delay_s=1.0, jitter_s=0.0, park_after_failures=3, park_s=600.0)
    h = HostState("a")
    politeness.record_refusal(h, cfg, now=0.0)
    politeness.record_refusal(h, cfg, now=0.0)
    politeness.record_response(h, cfg, 0.1, normal=True)
    assert politeness.record_refusal(h, cfg, now=0.0) is politeness.Refused.COUNTED
    for _ in range(2):  # 5xx answers: their time is learned, the failures keep counting
        politeness.record_response(h, cfg, 0.1, normal=False)
        assert not politeness.record_failure(h, cfg, now=0.0)
    politeness.record_response(h, cfg, 0.1, normal=False)
    assert politeness.record_failure(h, cfg, now=0.0)  # the third 5xx in a row: parked


def test_every_wait_is_computed_here():
    """Retry backoff, Retry-After's cap and robots.txt's retry: one arithmetic, used by
    outcome, robotscache and the robots gate alike."""
    from politecrawl.engine import outcome
    from politecrawl.robots.cache import RobotsCache

    assert [politeness.retry_backoff_s(a, 30.0) for a in (1, 2, 3)] == [30.0, 60.0, 120.0]
    assert politeness.retry_after_wait_s(7200.0, 3600.0) == 3600.0
    assert politeness.retry_after_wait_s(-5.0, 3600.0) == 0.0
    assert [politeness.robots_retry_s(4.0, n) for n in (1, 2, 3)] == [4.0, 8.0, 16.0]
    assert [politeness.robots_retry_s(30.0, n, 900.0) for n in (5, 6, 9)] == [480, 900, 900]
    assert outcome.robots_attempts(0, 3, 30) == 30  # no answer: transient, hours of asks
    assert outcome.robots_attempts(503, 3, 30) == 3
    # a site that never answered anything (a dead link's host): about 15 minutes of asks
    assert outcome.robots_attempts(0, 3, 30, answered=False) == outcome.ROBOTS_FIRST_ASKS == 6
    assert outcome.robots_attempts(0, 3, 4, answered=False) == 4
    # outcome's retries and robotscache's intervals are these very numbers
    r = outcome.classify(
        FetchResult(
            url="http://a.test/", started=0.0, status=503, headers=[("Retry-After", "99999")]
        ),
        1,
        3,
        max_retry_after_s=600.0,
    )
    assert isinstance(r, outcome.Retry) and r.after_s == 600.0
    assert RobotsCache(None, 86400.0, 4.0)._retry_after(3) == 16.0  # type: ignore[arg-type]
    s = HostState("a.test", next_allowed=10.0)
    politeness.wait_until(s, 5.0)
    assert s.next_allowed == 10.0
    politeness.wait_until(s, 50.0)
    assert s.next_allowed == 50.0


def test_reclaim_times_wait_a_full_delay_from_the_reclaim() -> None:
    """A lease that expired (its worker died mid-request) or was given back: the site waits
    its own last gap from now, at least the floor, never before its saved next time; its
    server's IP waits the floor. The Redis scripts receive these times as arguments."""
    from politecrawl.polite.politeness import reclaim_times

    a_20s_site = HostState(key="a.test", last_start=100.0, next_allowed=120.0)
    assert reclaim_times(a_20s_site, now=130.0, floor_s=0.5) == (150.0, 130.5)
    fresh = HostState(key="b.test")
    assert reclaim_times(fresh, now=130.0, floor_s=2.0) == (132.0, 132.0)
    # a Retry-After of 400 s: the whole wait again, from the reclaim
    told = HostState(key="c.test", last_start=100.0, next_allowed=500.0)
    assert reclaim_times(told, now=130.0, floor_s=1.0)[0] == 530.0


def test_a_site_whose_request_waits_long_is_no_reference_for_the_budget_policy() -> None:
    """``only_its_turn``: a site that answered before is a reference while its request is
    answered quickly; once that request has had no answer for ``SLOW_ANSWER_S`` (a server
    that hung) it is not, until it answers or fails."""
    cfg = PolitenessConfig(min_delay_s=1.0, jitter_s=0.0)
    h = HostState("a.example:80")
    assert not politeness.only_its_turn(h, 100.0)  # never answered
    politeness.record_start(h, cfg, 100.0)
    politeness.record_end(h, 100.2)
    politeness.record_response(h, cfg, 0.2)
    assert politeness.only_its_turn(h, 101.0)
    politeness.record_start(h, cfg, 102.0)  # in flight
    assert politeness.only_its_turn(h, 102.0 + politeness.SLOW_ANSWER_S / 2)
    assert politeness.waiting_long(h, 102.0 + politeness.SLOW_ANSWER_S)
    assert not politeness.only_its_turn(h, 102.0 + politeness.SLOW_ANSWER_S)
    politeness.record_end(h, 105.0)
    politeness.record_response(h, cfg, 3.0)  # it answered after all
    assert not politeness.waiting_long(h, 200.0)
    assert politeness.only_its_turn(h, 200.0)


def test_a_failure_is_an_origins_own_when_the_server_answers_on_another() -> None:
    """robots.txt is per origin (RFC 9309 2.3): a dead port next to a live one fails alone."""
    cfg = PolitenessConfig()
    state = HostState("mix.test")
    assert not politeness.failing_alone(state, "http://mix.test:81")  # nothing answered yet
    politeness.record_response(state, cfg, 0.1, origin="http://mix.test:80")
    assert politeness.failing_alone(state, "http://mix.test:81")
    assert not politeness.failing_alone(state, "http://mix.test:80")
    politeness.record_response(state, cfg, 0.1, normal=False, origin="http://mix.test:81")
    assert politeness.failing_alone(state, "http://mix.test:81")  # its 503: :80 still answers


def test_a_server_down_on_every_origin_is_no_origin_failing_alone() -> None:
    cfg = PolitenessConfig()
    state = HostState("mix.test")
    politeness.record_response(state, cfg, 0.1, origin="http://mix.test")
    politeness.record_response(state, cfg, 0.1, origin="https://mix.test")
    politeness.origin_failed(state, "http://mix.test")
    assert politeness.failing_alone(state, "http://mix.test")  # https still answers
    politeness.origin_failed(state, "https://mix.test")
    assert not politeness.failing_alone(state, "https://mix.test")  # both down: the server's
    assert not politeness.failing_alone(state, "http://mix.test")
