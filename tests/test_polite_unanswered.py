"""A request the crawler gives up (a timeout at ``--request-time``, or cut at ``--max-time``)
is still work for the server: the real ``politecrawl crawl`` against a real server
(tests/logserver.py, which logs a request its client gave up when it is done with it),
judged by the server's own log of the time each request kept it busy.

A request with no answer after T seconds took at least T: it counts as a response time of
T, so the next request waits ``--delay-factor`` (30) x the mean of the last ones, and the
server's other names wait as long. Before, only the backoff's doubling spaced them: the
server had two or three requests of one site in flight at once (probe fault 8), another
name's request came ``--ip-min-delay`` after the timeout (fault 8b), and a crawl cut at
``--max-time`` and resumed at once asked again while the server still worked (fault 7).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_polite_servers import crawl, group, log_server, max_in_flight, read_log

pytestmark = pytest.mark.e2e

SLOW_S = 3.0  # each page of a ``slowpage`` name keeps the server this long
FLAGS = ["--request-time", "1", "--retry-base", "1", "--min-delay", "0.2", "--delay-factor", "30"]


def _pages(rows: list[dict[str, object]], host: str) -> list[dict[str, object]]:
    return [r for r in rows if r["host"] == host and r["path"] != "/robots.txt"]


def test_a_timed_out_request_spaces_its_site_as_a_slow_answer(tmp_path: Path) -> None:
    with log_server(tmp_path, "127.0.0.1", slow_latency=SLOW_S) as (port, log):
        crawl(
            tmp_path,
            [f"http://slowpage.to.test:{port}/"],
            "--resolve", f"*.to.test:{port}:127.0.0.1",
            "--ip-min-delay", "off", "--max-time", "8", *FLAGS,
            code=1,  # nothing could be fetched
        )  # fmt: skip
        time.sleep(SLOW_S + 1.0)  # the server finishes what was given up
        rows = read_log(log)
    pages = _pages(rows, "slowpage.to.test")
    assert pages, rows  # the page was asked (and given up after 1 s)
    assert max_in_flight(pages) == 1, [(r["start"], r["end"]) for r in pages]


def test_a_timed_out_request_keeps_its_servers_other_names_waiting(tmp_path: Path) -> None:
    with log_server(tmp_path, "127.0.0.1", slow_latency=SLOW_S) as (port, log):
        crawl(
            tmp_path,
            [f"http://slowpage.ip.test:{port}/", f"http://fast.ip.test:{port}/"],
            "--resolve", f"*.ip.test:{port}:127.0.0.1",
            "--ip-min-delay", "0.5", "--max-time", "8", *FLAGS,
        )  # fmt: skip
        time.sleep(SLOW_S + 1.0)
        rows = read_log(log)
    assert _pages(rows, "slowpage.ip.test"), rows
    assert max_in_flight(rows) == 1, [(r["host"], r["start"], r["end"]) for r in rows]


def test_a_request_cut_at_max_time_spaces_the_resume(tmp_path: Path) -> None:
    """A page taking 5 s, cut by ``--max-time 3``; the crawl resumed at once: the time the
    cut request was waited for counts, so the resume does not ask while the server works."""
    with log_server(tmp_path, "127.0.0.1", slow_latency=5.0) as (port, log):
        flags = ["--resolve", f"*.cut.test:{port}:127.0.0.1", "--ip-min-delay", "off"]
        flags += ["--min-delay", "0.2", "--delay-factor", "30"]
        seeds = [f"http://slowpage.cut.test:{port}/"]
        # (a stop by --max-time with the request cut: exit 0, the README's code for it)
        crawl(tmp_path, seeds, *flags, "--max-time", "3", code=0)
        crawl(tmp_path, seeds, *flags, "--max-time", "4", code=0)
        time.sleep(6.0)
        rows = read_log(log)
    pages = _pages(rows, "slowpage.cut.test")
    assert pages, rows
    assert max_in_flight(pages) == 1, [(r["start"], r["end"]) for r in pages]
    assert len(group(rows, "host")) == 1


def test_a_server_that_hangs_keeps_its_other_names_waiting_whatever_the_retry_wait(
    tmp_path: Path,
) -> None:
    """A page that keeps the server 8 s, given up after 2 s, its retry 20 s away: the
    server's other name waits --delay-factor x the mean after the give-up (30 x 1 s). It was
    held 5 s from the request's start until the timed-out site's next turn, which the retry
    wait put off: the other name's requests went to the server while it still worked."""
    with log_server(tmp_path, "127.0.0.1", slow_latency=8.0) as (port, log):
        crawl(
            tmp_path,
            [f"http://slowpage.hang.test:{port}/", f"http://fast.hang.test:{port}/"],
            "--resolve", f"*.hang.test:{port}:127.0.0.1", "--ip-min-delay", "0.2",
            "--request-time", "2", "--retry-base", "20", "--min-delay", "0.2",
            "--delay-factor", "30", "--max-time", "12",
        )  # fmt: skip
        time.sleep(8.0 + 1.0)  # the server finishes what was given up
        rows = read_log(log)
    assert _pages(rows, "slowpage.hang.test"), rows
    assert max_in_flight(rows) == 1, [(r["host"], r["path"], r["start"], r["end"]) for r in rows]
