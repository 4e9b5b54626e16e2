"""A site that moves to another server: the per-IP rule follows the address connected to.

The real ``politecrawl crawl`` command against tests/logserver.py on 127.0.0.1 and 127.0.0.2,
judged by the servers' own log. Run 1 pins ``mover.test`` to 127.0.0.1 and ``stay.test`` to
127.0.0.2 and stops on ``--max-time``; run 2 resumes the same crawl with ``mover.test``
pinned to 127.0.0.2, as a new DNS answer would move it. The frontier had kept (and saved)
each site's first address, so run 2 gated ``mover.test`` on 127.0.0.1 while its requests
went to 127.0.0.2: that server got two requests at once (latency 0.3 s, 2 in flight, idle
gaps of -0.3 s with ``--ip-min-delay 1``). Now the address is looked up again at the
lease, and the frontier keeps the one actually connected to.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from redis_server import redis_url  # noqa: F401  (fixture)
from test_polite_servers import (
    CLOCK_S,
    UA,
    crawl,
    group,
    idle_gaps,
    log_server,
    max_in_flight,
    overlaps,
    read_log,
)

from politecrawl.config import FetchConfig
from politecrawl.net.fetch import Fetcher

pytestmark = pytest.mark.e2e

IP_GAP_S = 0.6
LATENCY_S = 0.3


def _two_runs(tmp_path: Path, *flags: str) -> list[dict[str, Any]]:
    """Run 1 with mover.test on 127.0.0.1, run 2 (the same --out) with it on 127.0.0.2; the
    server's log of run 2."""
    with log_server(tmp_path, "127.0.0.1", "127.0.0.2", latency=LATENCY_S, pages=8) as (port, log):
        seeds = [f"http://mover.test:{port}/", f"http://stay.test:{port}/"]
        common = ["--min-delay", "0.3", "--ip-min-delay", str(IP_GAP_S), *flags]
        crawl(
            tmp_path, seeds, *common,
            "--resolve", f"mover.test:{port}:127.0.0.1",
            "--resolve", f"stay.test:{port}:127.0.0.2",
            "--max-time", "2.5",
        )  # fmt: skip
        first = read_log(log)
        resumed_at = time.time()
        crawl(
            tmp_path, seeds, *common,
            "--resolve", f"mover.test:{port}:127.0.0.2",
            "--resolve", f"stay.test:{port}:127.0.0.2",
        )  # fmt: skip
        rows = [r for r in read_log(log) if r["start"] > resumed_at]
    assert {r["host"] for r in first if r["ip"] == "127.0.0.1"} == {"mover.test"}
    for host in ("mover.test", "stay.test"):  # both had pages left for run 2
        assert sum(r["host"] == host for r in first) < 10, host
    return rows


def _judge(rows: list[dict[str, Any]]) -> None:
    assert {r["ip"] for r in rows} == {"127.0.0.2"}  # the pin moved mover.test
    assert "mover.test" in group(rows, "host")
    assert max_in_flight(rows) == 1, overlaps(rows)
    assert min(idle_gaps(rows)) >= IP_GAP_S - CLOCK_S, idle_gaps(rows)


def test_a_site_that_moved_between_runs_is_gated_on_its_new_server(tmp_path: Path) -> None:
    _judge(_two_runs(tmp_path))


def test_the_same_on_a_shared_frontier(redis_url: str, tmp_path: Path) -> None:  # noqa: F811
    """Redis: the two hosts' first addresses hash to different shards (the moved site's queue
    stays in its shard; the new server's turn-taking lives in another)."""
    shared = ["--frontier", redis_url, "--crawl-id", f"mv-{uuid.uuid4().hex[:8]}"]
    _judge(_two_runs(tmp_path, *shared))


async def test_a_connection_kept_alive_to_the_address_its_host_left_is_not_reused(
    tmp_path: Path,
) -> None:
    """A new answer within a run (a TTL that ended): the request goes to the host's address
    now, on which the lease was taken, not over the connection kept alive to the old one;
    a connection to the address now is reused as before."""
    with log_server(tmp_path, "127.0.0.1", "127.0.0.2") as (port, log):
        cfg = FetchConfig(
            user_agent=UA,
            allow_private_addresses=True,
            resolve=(f"mover.test:{port}:127.0.0.1",),
        )
        async with Fetcher(cfg) as fetcher:
            got = [await fetcher.fetch(f"http://mover.test:{port}/p/1")]
            fetcher.resolver._exact[("mover.test", port)] = "127.0.0.2"  # the new answer
            got += [await fetcher.fetch(f"http://mover.test:{port}/p/{i}") for i in (2, 3)]
        rows = read_log(log)
    assert [r.ip for r in got] == ["127.0.0.1", "127.0.0.2", "127.0.0.2"]
    assert [r["ip"] for r in rows] == ["127.0.0.1", "127.0.0.2", "127.0.0.2"]
    assert rows[1]["conn"] == rows[2]["conn"]
