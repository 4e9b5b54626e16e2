"""Names sharing one server take turns: the real ``politecrawl crawl`` against a real server
(tests/logserver.py), judged by its own log.

Twelve names on 127.0.0.1 together want more than the IP gives (each may be asked every
0.6 s, the IP every 0.1 s after an answer): the IP's turns go first come first served, so
every name is asked as often as the others. Before, the key just released and the one called
from the IP's line raced at the IP's next time and the better-ranked won: on one process half
of the names got no request at all for 25 s, ``--max-wait`` or not; with ``--processes 2``
and on the Redis frontier some names got a third of the others' turns.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from redis_server import redis_url  # noqa: F401  (fixture)
from test_polite_servers import crawl, group, log_server, max_in_flight, read_log

pytestmark = pytest.mark.e2e

NAMES = 12
RUN_S = 16.0


def _names(port: int) -> tuple[list[str], list[str]]:
    hosts = [f"n{i}.fair.test" for i in range(NAMES)]
    return [f"http://{h}:{port}/" for h in hosts], ["--resolve", f"*.fair.test:{port}:127.0.0.1"]


def _flags(*extra: str) -> list[str]:
    return [
        "--min-delay", "0.6", "--ip-min-delay", "0.1", "--max-wait", "5",
        "--jitter", "0.06", "--max-time", str(RUN_S), *extra,
    ]  # fmt: skip


def _check_turns(rows: list[dict[str, object]]) -> None:
    """One request at a time at the server, and after the first 5 s (every name's robots.txt
    and first page) every name asked about as often as the others: turns in order give each
    about one request per 12 x 0.12 s and counts within one or two of each other, so half
    the most is a wide margin; a starved name gets none, or a third."""
    assert max_in_flight(rows) == 1
    first = min(float(r["start"]) for r in rows)  # type: ignore[arg-type]
    late = [r for r in rows if float(r["start"]) >= first + 5.0]  # type: ignore[arg-type]
    counts = {host: len(seq) for host, seq in group(late, "host").items()}
    assert len(counts) == NAMES, counts
    assert min(counts.values()) >= 3 and 2 * min(counts.values()) >= max(counts.values()), counts


@pytest.mark.parametrize("processes", ["1", "2"])
def test_names_of_one_server_take_turns(tmp_path: Path, processes: str) -> None:
    with log_server(tmp_path, "127.0.0.1", latency=0.02, pages=400) as (port, log):
        seeds, resolve = _names(port)
        crawl(tmp_path, seeds, *resolve, *_flags("--processes", processes))
        rows = read_log(log)
    _check_turns(rows)  # type: ignore[arg-type]


def test_names_of_one_server_take_turns_on_the_shared_frontier(
    redis_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The same on the Redis frontier (the IP's holder, line and time kept by its scripts)."""
    with log_server(tmp_path, "127.0.0.1", latency=0.02, pages=400) as (port, log):
        seeds, resolve = _names(port)
        shared = ["--frontier", redis_url, "--crawl-id", f"fair-{uuid.uuid4().hex[:8]}"]
        crawl(tmp_path, seeds, *resolve, *_flags(*shared))
        rows = read_log(log)
    _check_turns(rows)  # type: ignore[arg-type]
