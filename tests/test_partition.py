"""The parts of ``--processes N`` (``partition``) that can be asked alone: who owns a site, the
file names of a process, the IP table shared by the processes, the end of the crawl, and a
log read across processes. The whole command is judged in tests/test_processes.py."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from politecrawl.engine.partition import IpTable, Partition, Shared, owner, tagged
from politecrawl.errors import ConfigError
from politecrawl.storage.logs import iter_log_records
from politecrawl.storage.outdir import check_layout

pytestmark = pytest.mark.unit


def _shared(n: int) -> Shared:
    return Shared.make(multiprocessing.get_context("fork"), n)


def test_owner_is_stable_and_spreads_sites() -> None:
    keys = [f"h{i}.test" for i in range(2000)]
    first = [owner(k, 2) for k in keys]
    assert first == [owner(k, 2) for k in keys]  # the same in every process, every run
    assert 900 < sum(first) < 1100  # about half each


def test_tagged_names() -> None:
    assert tagged("state.sqlite", 0) == "state.sqlite"
    assert tagged("state.sqlite", 1) == "state@1.sqlite"
    assert tagged("requests.jsonl", 3) == "requests@3.jsonl"
    assert tagged("politecrawl", 2) == "politecrawl@2"


def test_an_ip_is_held_by_one_process_and_kept_free_for_its_gap() -> None:
    shared = _shared(2)
    a, b = IpTable(shared, 0), IpTable(shared, 1)
    assert a.hold("10.0.0.1", now=100.0) == 0.0
    assert b.hold("10.0.0.1", now=100.0) > 100.0  # held by the other: ask again later
    assert b.hold("10.0.0.2", now=100.0) == 0.0  # another server: free
    a.release("10.0.0.1", free_at=101.5)
    assert b.hold("10.0.0.1", now=101.0) == 101.5  # free again only after the gap
    assert b.hold("10.0.0.1", now=101.6) == 0.0
    assert a.hold("10.0.0.1", now=101.7) > 101.7


def test_an_ips_next_turn_goes_to_the_process_whose_key_waited_longest() -> None:
    """First come first served over the processes: a process turned away lays claim to the
    IP's next turn for its key; the process that released the IP does not take it back with
    a key that came later (it did, every time, and the other process's names starved)."""
    shared = _shared(2)
    a, b = IpTable(shared, 0), IpTable(shared, 1)
    ip = "10.0.0.1"
    assert a.hold(ip, now=100.0) == 0.0
    assert b.hold(ip, now=100.2, since=100.1) > 100.2  # held: b claims the next turn
    a.release(ip, free_at=101.0)
    assert a.hold(ip, now=101.0, since=100.5) > 101.0  # a's next key came later: b's turn
    assert b.hold(ip, now=101.0, since=100.1) == 0.0
    assert a.hold(ip, now=101.1, since=100.5) > 101.1  # held by b: now a claims
    b.release(ip, free_at=102.0)
    assert b.hold(ip, now=102.0, since=101.5) > 102.0
    assert a.hold(ip, now=102.0, since=100.5) == 0.0


def test_a_claim_to_an_ips_turn_lapses_if_its_process_does_not_come_back() -> None:
    shared = _shared(2)
    a, b = IpTable(shared, 0), IpTable(shared, 1)
    ip = "10.0.0.1"
    assert a.hold(ip, now=100.0) == 0.0
    assert b.hold(ip, now=100.2, since=100.1) > 100.2
    a.release(ip, free_at=100.5)
    assert a.hold(ip, now=100.6, since=100.5) > 100.6  # b's claim holds a while
    assert a.hold(ip, now=102.0, since=100.5) == 0.0  # b never came: the claim lapsed


def test_the_end_needs_every_process_idle_and_every_batch_received() -> None:
    shared = _shared(2)
    p0 = Partition(0, 2, {}, shared, "host")
    p1 = Partition(1, 2, {}, shared, "host")
    assert not p0.finished()  # p1 has not said it is idle
    assert p1.finished() and p0.finished()
    shared.state[4 * 0 + 1] += 1  # a batch sent by p0, not yet received by p1
    assert not p1.finished()
    shared.state[4 * 1 + 2] += 1  # received
    assert p1.finished()


def test_a_stop_in_one_process_is_seen_by_all() -> None:
    shared = _shared(3)
    parts = [Partition(i, 3, {}, shared, "host") for i in range(3)]
    assert all(p.stop_requested() is None for p in parts)
    parts[2].request_stop("max_pages")
    parts[0].request_stop("interrupted")  # the first reason stays
    assert [p.stop_requested() for p in parts] == ["max_pages"] * 3
    parts[0].pages(4)
    assert parts[1].pages(5) == 9  # --max-pages counts every process's pages


def test_a_crawl_keeps_its_process_count(tmp_path: Path) -> None:
    check_layout(tmp_path / "new", 2)
    assert json.loads((tmp_path / "new" / "partitions.json").read_text()) == {"processes": 2}
    check_layout(tmp_path / "new", 2)
    with pytest.raises(ConfigError, match="--processes 2"):
        check_layout(tmp_path / "new", 1)
    one = tmp_path / "one"
    one.mkdir()
    (one / "state.sqlite").write_bytes(b"")
    with pytest.raises(ConfigError, match="--processes 1"):
        check_layout(one, 3)
    # partitions.json lost: the files tagged @i say how many processes made the crawl
    (tmp_path / "new" / "partitions.json").unlink()
    (tmp_path / "new" / "state@1.sqlite").write_bytes(b"")
    with pytest.raises(ConfigError, match=r"--processes 2 \(state@1.sqlite, with partitions"):
        check_layout(tmp_path / "new", 1)
    check_layout(tmp_path / "new", 2)
    assert json.loads((tmp_path / "new" / "partitions.json").read_text()) == {"processes": 2}


def test_a_log_is_read_across_processes_in_time_order(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir()

    def line(second: int) -> str:
        return json.dumps({"time": f"2026-01-01T00:00:0{second}.000Z", "n": second}) + "\n"

    (log / "requests.jsonl").write_text(line(1) + line(3))
    (log / "requests@1.jsonl").write_text(line(2) + line(4) + line(5)[:20])  # a torn last line

    (log / "robots@1.jsonl").write_text(line(0))
    assert [r["n"] for r in iter_log_records(log, "requests")] == [1, 2, 3, 4]
    assert [r["n"] for r in iter_log_records(log, "robots")] == [0]


def test_the_crawls_own_outages_are_not_summed_over_its_processes() -> None:
    """Each process counts the one outage the partitions share; pages add up."""
    from politecrawl.engine.supervisor import merged_counters

    got = merged_counters(
        [
            {"counters": {"outages": 1, "outage_ms": 20_500, "pages_fetched": 40}},
            {"counters": {"outages": 1, "outage_ms": 19_800, "pages_fetched": 35}},
        ]
    )
    assert got == {"outages": 1, "outage_ms": 20_500, "pages_fetched": 75}
