"""revisit: per-URL change-rate estimates and revisit times, on dupweb's fake clock."""

from __future__ import annotations

import math
import random
import sqlite3
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest
from dupweb import DAY, EPOCH, DupWeb, FakeClock, PageRef
from hypothesis import given
from hypothesis import strategies as st

from politecrawl.continuity.fingerprint import simhash
from politecrawl.continuity.revisit import (
    SQL_COLUMNS,
    RevisitPolicy,
    RevisitState,
    content_changed,
)
from politecrawl.focus.relevance import extract_document

pytestmark = pytest.mark.unit


def test_new_state_seeds_the_rate_from_the_hint() -> None:
    policy = RevisitPolicy()
    for hint in (DAY, 3 * DAY, 20 * DAY):
        state = policy.new_state(hint, now=100.0)
        assert state.next_due == 100.0 and state.last_fetch is None
        assert policy.rate(state) == pytest.approx(1 / hint)
        assert state.interval == pytest.approx(policy.clamp(math.log(2) * hint))
    assert policy.rate(policy.new_state()) == pytest.approx(1 / (7 * DAY))
    assert policy.p_changed(policy.new_state(), 0.0) == 1.0  # never fetched


def test_intervals_shrink_for_changing_pages_and_grow_for_static_ones() -> None:
    policy = RevisitPolicy()
    busy, still = policy.new_state(), policy.new_state()
    t = 0.0
    policy.update(busy, t, None)
    policy.update(still, t, None)
    busy_due: list[float] = []
    still_due: list[float] = []
    for _ in range(12):
        policy.update(busy, busy.next_due, changed=True)
        policy.update(still, still.next_due, changed=False)
        busy_due.append(round(busy.interval))
        still_due.append(round(still.interval))
    assert busy_due == sorted(busy_due, reverse=True) and busy_due[-1] == policy.min_s
    assert still_due == sorted(still_due) and still_due[-1] == policy.max_s
    assert busy.last_fetch is not None and busy.next_due == busy.last_fetch + busy.interval
    assert busy.total_checks == 12 and busy.total_changes == 12 and still.total_changes == 0


def test_estimate_converges_to_the_true_rate() -> None:
    """A page changing as a Poisson process every ~3 days, revisited when the policy says."""
    policy = RevisitPolicy(min_s=3600, max_s=60 * DAY, memory=1.0)
    rng = random.Random(4)
    true_rate = 1 / (3 * DAY)
    state = policy.new_state(20 * DAY)  # a poor hint
    t = 0.0
    policy.update(state, t, None)
    for _ in range(200):
        nxt = state.next_due
        changed = rng.random() < 1 - math.exp(-true_rate * (nxt - t))
        t = nxt
        policy.update(state, t, changed)
    assert policy.rate(state) == pytest.approx(true_rate, rel=0.25)
    assert state.interval == pytest.approx(math.log(2) / true_rate, rel=0.25)


def test_304_unknown_and_validators() -> None:
    policy = RevisitPolicy()
    state = policy.new_state()
    policy.update(state, 0.0, None, etag='"a"', last_modified="Mon, 01 Jan 2024 00:00:00 GMT")
    assert state.etag == '"a"' and state.total_checks == 0  # a first fetch teaches nothing
    policy.update(state, DAY, None)  # failed fetch: unknown, validators kept
    assert state.total_checks == 0 and state.etag == '"a"' and state.last_fetch == DAY
    policy.update(state, 2 * DAY, None, not_modified_304=True)
    assert state.total_checks == 1 and state.total_changes == 0 and state.etag == '"a"'
    policy.update(state, 3 * DAY, True, etag='"b"', fingerprint=-5)
    assert state.etag == '"b"' and state.last_modified is None  # a 200 without Last-Modified
    assert state.fingerprint == 2**64 - 5 and state.total_changes == 1


def test_sitemap_hints() -> None:
    policy = RevisitPolicy()
    now = EPOCH
    assert policy.hint_from_sitemap("daily", None, now=now) == DAY
    assert policy.hint_from_sitemap("Hourly", None, now=now) == DAY  # clamped to min_s
    assert policy.hint_from_sitemap("never", None, now=now) == policy.max_s
    assert policy.hint_from_sitemap("weekly", None, now=now) == 7 * DAY
    assert policy.hint_from_sitemap(None, now - 10 * DAY, now=now) == pytest.approx(10 * DAY)
    both = policy.hint_from_sitemap("daily", now - 16 * DAY, now=now)
    assert both == pytest.approx(4 * DAY)  # geometric mean of the two rates
    assert policy.hint_from_sitemap("sometimes", None, now=now) is None
    assert policy.hint_from_sitemap(None, None, now=now) is None
    state = policy.new_state()
    policy.update(state, now, None)
    assert policy.note_lastmod(state, now - DAY, now + 1) == state.next_due > now + 1
    assert policy.note_lastmod(state, now + 5, now + 10) == now + 10  # changed since: due now


def test_priority_prefers_relevant_pages_that_change_often() -> None:
    policy = RevisitPolicy()
    often, rarely = policy.new_state(DAY), policy.new_state(30 * DAY)
    for s in (often, rarely):
        policy.update(s, 0.0, None)
    now = 2 * DAY
    assert policy.priority(often, 0.8, now) > policy.priority(rarely, 0.8, now)
    assert policy.priority(often, 0.8, now) > policy.priority(often, 0.2, now)
    assert policy.priority(often, 0.0, now) == 0.0
    assert policy.priority(policy.new_state(), 0.5, now) == 0.5  # never fetched
    assert 0 < policy.p_changed(rarely, now) < policy.p_changed(often, now) < 1


def test_rows_round_trip_through_sqlite() -> None:
    policy = RevisitPolicy()
    state = policy.new_state(3 * DAY)
    policy.update(state, EPOCH, None, etag='"x"', fingerprint=0xF000_0000_0000_0001)
    policy.update(state, EPOCH + DAY, True, last_modified="Tue, 02 Jan 2024 00:00:00 GMT")
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE TABLE revisit (url TEXT PRIMARY KEY, {SQL_COLUMNS})")
    db.execute("INSERT INTO revisit VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
               ("http://a.example/", *state.to_row()))  # fmt: skip
    (row,) = db.execute("SELECT * FROM revisit").fetchall()
    assert RevisitState.from_row(row[1:]) == state
    fresh = RevisitState()
    assert RevisitState.from_row(fresh.to_row()) == fresh
    with pytest.raises(ValueError):
        RevisitState.from_row(("x", *fresh.to_row()[1:]))


@given(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
def test_content_changed(a: int, b: int) -> None:
    assert content_changed(a, a) is False
    assert content_changed(a, b) == ((a ^ b).bit_count() > 3)
    assert content_changed(None, b) is None


def test_bad_policies_refused() -> None:
    for kwargs in ({"min_s": 0}, {"min_s": 10, "max_s": 5}, {"target_p": 1.0},
                   {"memory": 0.0}, {"prior_weight": 0}):  # fmt: skip
        with pytest.raises(ValueError):
            RevisitPolicy(**kwargs)


def _visit(dw: DupWeb, url: str, state: RevisitState, policy: RevisitPolicy) -> int:
    """One revisit as the crawler would do it; returns the HTTP status."""
    headers = {"If-None-Match": state.etag} if state.etag else {}
    status, resp, body = dw.fetch(url, headers)
    now = dw.clock()
    if status == 304:
        policy.update(state, now, None, not_modified_304=True)
        return status
    fp = simhash(extract_document(body, url, "text/html").text)
    changed = content_changed(state.fingerprint, fp)
    policy.update(state, now, changed, etag=resp["ETag"],
                  last_modified=resp["Last-Modified"], fingerprint=fp)  # fmt: skip
    return status


def test_dupweb_clock_drives_changes_and_revisits() -> None:
    clock = FakeClock()
    dw = DupWeb(n_sites=3, articles_per_site=30, clock=clock, port=8000)
    kinds = {k: [r for r in dw.pages() if dw.change_kind(r) == k]
             for k in ("static", "counter", "daily", "weekly")}  # fmt: skip
    assert all(kinds.values())
    policy = RevisitPolicy()
    states = {}
    statuses: dict[str, list[int]] = {k: [] for k in kinds}
    for kind, refs in kinds.items():
        for ref in refs[:4]:
            states[(kind, ref)] = s = policy.new_state(now=clock())
            _visit(dw, dw.canonical_url(ref), s, policy)
    for _ in range(60):  # two months, a day at a time: visit whatever is due
        clock.advance(days=1)
        for (kind, ref), s in states.items():
            if s.next_due <= clock():
                statuses[kind].append(_visit(dw, dw.canonical_url(ref), s, policy))
    interval = {k: max(s.interval for (kk, _), s in states.items() if kk == k) for k in kinds}
    assert interval["daily"] == policy.min_s
    assert interval["static"] == interval["counter"] == policy.max_s  # a counter is no change
    assert policy.min_s < interval["weekly"] < policy.max_s
    assert set(statuses["static"]) == {304}  # validators matched
    assert 200 in statuses["counter"]  # the bytes changed (ETag), the text did not


def test_dupweb_versions_validators_and_sitemap() -> None:
    clock = FakeClock(EPOCH + 0.5 * DAY)
    dw = DupWeb(n_sites=2, articles_per_site=5, clock=clock, port=8000)
    home = dw.seed_urls(1)[0]
    status, headers, body = dw.fetch(home)
    assert status == 200 and headers["Last-Modified"] == "Mon, 01 Jan 2024 00:00:00 GMT"
    assert dw.fetch(home, {"If-None-Match": headers["ETag"]})[0] == 304
    since = format_datetime(datetime.fromtimestamp(EPOCH, UTC), usegmt=True)
    assert dw.fetch(home, {"If-Modified-Since": since})[0] == 304
    clock.advance(days=1)
    assert dw.fetch(home, {"If-None-Match": headers["ETag"]})[0] == 200
    assert dw.fetch(home)[2] != body and dw.version(PageRef(0, "home")) == (1, EPOCH + DAY)
    assert dw.fetch(home, {"If-Modified-Since": since})[0] == 200
    sitemap = dw.fetch(home + "sitemap.xml")[2].decode()
    assert dw.canonical_url(PageRef(0, "article/3")) in sitemap
    assert "<lastmod>2024-01-02T00:00:00Z</lastmod>" in sitemap
    assert dw.fetch(home + "robots.txt")[2].startswith(b"User-agent: *\nDisallow:\n")


def test_reschedule_estimates_again_within_the_new_window() -> None:
    """A page fetched by a crawl made without --recrawl (default window), resumed with
    --revisit-min 1 --revisit-max 2: due within the new window, from its last fetch."""
    state = RevisitPolicy().new_state(now=100.0)
    RevisitPolicy().update(state, 100.0, None)
    assert state.interval >= DAY
    narrow = RevisitPolicy(min_s=1, max_s=2)
    assert narrow.reschedule(state) == 102.0 and state.interval == 2.0
    assert state.total_checks == 0  # nothing learned: no fetch happened
