import pytest

from politecrawl.engine.outcome import (
    Drop,
    DropReason,
    Redirect,
    Retry,
    Store,
    answered_normally,
    classify,
    refusal,
    retry_after_s,
)
from politecrawl.net.fetch import FetchResult

pytestmark = pytest.mark.unit


def res(status=None, headers=(), error=None, abandoned=False):
    r = FetchResult(url="http://a.example/", started=0.0, status=status, headers=list(headers))
    r.error = error
    r.abandoned = abandoned
    return r


@pytest.mark.parametrize("status", [400, 401, 403, 404, 406, 410, 451, 418])
def test_permanent_client_errors_are_not_retried(status):
    out = classify(res(status), attempt=1, max_attempts=3)
    assert out == Drop(DropReason.HTTP_PERMANENT, f"http_{status}")


@pytest.mark.parametrize(
    "status,permanent", [(301, True), (308, True), (302, False), (303, False), (307, False)]
)
def test_redirects_carry_location_and_kind(status, permanent):
    out = classify(res(status, [("Location", "/x")]), 1, 3)
    assert out == Redirect("/x", permanent)


def test_redirect_without_location_is_dropped():
    assert isinstance(classify(res(302), 1, 3), Drop)


def test_html_2xx_stored_non_html_dropped():
    assert classify(res(200), 1, 3) == Store()
    assert classify(res(200, abandoned=True), 1, 3).reason is DropReason.NOT_HTML


@pytest.mark.parametrize("status", [429, 503])
def test_overload_honours_retry_after(status):
    out = classify(res(status, [("Retry-After", "7")]), 1, 3)
    assert out == Retry(7.0, overload=True, error_class=f"http_{status}")


def test_retry_after_capped():
    out = classify(res(503, [("Retry-After", "999999")]), 1, 3, max_retry_after_s=60)
    assert isinstance(out, Retry) and out.after_s == 60


def test_5xx_and_network_errors_back_off_exponentially_then_give_up():
    a1 = classify(res(500), 1, 3, retry_base_s=10)
    a2 = classify(res(error="timeout"), 2, 3, retry_base_s=10)
    assert isinstance(a1, Retry) and a1.after_s == 10
    assert isinstance(a2, Retry) and a2.after_s == 20
    assert classify(res(500), 3, 3) == Drop(DropReason.RETRIES_EXHAUSTED, "http_500")


def test_refused_address_is_final():
    out = classify(res(error="address_refused"), 1, 3)
    assert isinstance(out, Drop) and out.reason is DropReason.ADDRESS_REFUSED


def test_retry_after_http_date():
    assert retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480.0) == 0.0
    assert retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert retry_after_s("soon") is None


@pytest.mark.parametrize(
    "status,error,kind",
    [
        (401, None, "http_401"),
        (403, None, "http_403"),
        (429, None, "http_429"),
        (None, "timeout", "timeout"),
        (404, None, None),
        (410, None, None),
        (500, None, None),
        (503, None, None),
        (200, None, None),
        (None, "connect", None),
        (None, "dns", None),
    ],
)
def test_refusals_are_the_site_saying_go_away(status, error, kind):
    assert refusal(res(status, error=error)) == kind


@pytest.mark.parametrize(
    "status,error,normal",
    [
        (200, None, True),
        (301, None, True),
        (404, None, True),  # an answer: the site is there and talking
        (403, None, False),
        (429, None, False),
        (500, None, False),
        (503, None, False),
        (None, "timeout", False),
        (None, "connect", False),
    ],
)
def test_only_normal_answers_end_a_run_of_failures(status, error, normal):
    assert answered_normally(res(status, error=error)) is normal


# -- robots.txt: the same table for the crawler, robotscache and the robots command ---------------
@pytest.mark.parametrize(
    "status,error,expected,stored",
    [
        (200, None, "ok", 200),
        (204, None, "ok", 204),
        (404, None, "none", 404),
        (401, None, "none", 401),
        (403, None, "none", 403),
        (429, None, "unreachable", 429),
        (500, None, "unreachable", 500),
        (503, None, "unreachable", 503),
        (None, "timeout", "unreachable", 0),
        (None, "connect", "unreachable", 0),
        (None, "address_refused", "unfetchable", 0),
        (None, "invalid_url", "unfetchable", 0),
    ],
)
def test_robots_table(status, error, expected, stored):
    from politecrawl.engine.outcome import classify_robots, robots_outcome

    answer = classify_robots(res(status, error=error), "http://a.example/robots.txt", 0)
    assert (answer.outcome.value, answer.status, answer.target) == (expected, stored, None)
    if expected != "unfetchable":  # a stored status reads the same way
        assert robots_outcome(stored) is answer.outcome


def test_robots_redirects_five_hops_then_no_rules():
    """RFC 9309 2.3.1.2: at least five hops followed; past them, "unavailable" (allow all)."""
    from politecrawl.engine.outcome import ROBOTS_MAX_HOPS, RobotsOutcome, classify_robots

    moved = res(301, [("Location", "/moved.txt")])
    for hops in range(ROBOTS_MAX_HOPS):
        answer = classify_robots(moved, "http://a.example/robots.txt", hops)
        assert answer.outcome is RobotsOutcome.REDIRECT
        assert answer.target == "http://a.example/moved.txt"
    last = classify_robots(moved, "http://a.example/robots.txt", ROBOTS_MAX_HOPS)
    assert (last.outcome, last.status) == (RobotsOutcome.NO_RULES, 404)
    no_location = classify_robots(res(302), "http://a.example/robots.txt", 0)
    assert (no_location.outcome, no_location.status) == (RobotsOutcome.NO_RULES, 404)
