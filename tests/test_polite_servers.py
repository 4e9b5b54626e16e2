"""Politeness as a server operator sees it: the real ``politecrawl crawl`` command against
real servers in another process (tests/logserver.py), judged by those servers' own log.

Several host names are mapped to one address with ``--resolve`` (one server, many names),
others to 127.0.0.2 (Linux routes all of 127.0.0.0/8 to loopback). The servers run in their
own process, so no slack for a shared event loop is needed: each check below is exact up
to ``CLOCK_S`` (both sides read the same clock).
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redis_server import redis_url  # noqa: F401  (fixture)

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

HERE = Path(__file__).parent
UA = "testbot/1.0 (+http://bot.example/info)"
CLOCK_S = 0.002  # time.time() granularity and float rounding, not event-loop lag


@contextlib.contextmanager
def log_server(tmp: Path, *binds: str, **opts: float) -> Iterator[tuple[int, Path]]:
    """Start tests/logserver.py on ``binds`` (one port); yields (port, its log)."""
    log = tmp / "server.jsonl"
    cmd = [sys.executable, str(HERE / "logserver.py"), str(log)]
    cmd += [f"--bind={b}" for b in binds]
    cmd += [f"--{k.replace('_', '-')}={v}" for k, v in opts.items()]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield port, log
    finally:
        proc.terminate()
        proc.wait(10)


def crawl(
    tmp: Path, seeds: list[str], *flags: str, code: int = 0
) -> subprocess.CompletedProcess[str]:
    """``politecrawl crawl`` as a user types it; returns the finished process (exit ``code``)."""
    (tmp / "seeds.txt").write_text("\n".join(seeds) + "\n")
    cmd = [sys.executable, "-m", "politecrawl", "crawl"]
    cmd += ["--seeds", str(tmp / "seeds.txt")]
    cmd += ["--user-agent", UA, "--out", str(tmp / "out"), "--allow-private-addresses"]
    cmd += ["--scope", "any", "--no-progress", "--jitter", "0", "--delay-factor", "0", *flags]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert p.returncode == code, p.stderr
    return p


def read_log(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sorted(rows, key=lambda r: r["start"])


def group(rows: list[dict[str, Any]], field: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in rows:
        out[r[field]].append(r)
    return out


def overlaps(rows: list[dict[str, Any]]) -> int:
    """Pairs of requests in flight at once, as the server saw them."""
    return sum(
        1
        for a, b in itertools.combinations(rows, 2)
        if a["start"] < b["end"] and b["start"] < a["end"]
    )


def max_in_flight(rows: list[dict[str, Any]]) -> int:
    events = sorted([(r["start"], 1) for r in rows] + [(r["end"], -1) for r in rows])
    most = now = 0
    for _, d in events:
        now += d
        most = max(most, now)
    return most


def idle_gaps(rows: list[dict[str, Any]]) -> list[float]:
    """From the end of each answer to the start of the next request (rows of one server)."""
    return [b["start"] - a["end"] for a, b in itertools.pairwise(rows)]


def start_gaps(rows: list[dict[str, Any]]) -> list[float]:
    return [b["start"] - a["start"] for a, b in itertools.pairwise(rows)]


# -- item 1: one server, many names --------------------------------------------------------------


@pytest.mark.parametrize("processes", ["1", "2"])
def test_one_request_at_a_time_per_server_ip_with_a_gap(tmp_path: Path, processes: str) -> None:
    """Six names on 127.0.0.1 and three on 127.0.0.2, default --politeness-key host: the
    server at each address never has two requests at once, and waits --ip-min-delay between
    them; each host keeps its own --min-delay; the two servers are still crawled together.
    The same with ``--processes 2``: the pages' work in a worker changes none of it."""
    ip_gap, host_delay = 0.1, 0.4
    with log_server(tmp_path, "127.0.0.1", "127.0.0.2", latency=0.05) as (port, log):
        one = [f"h{i}.one.test" for i in range(6)]
        two = [f"h{i}.two.test" for i in range(3)]
        crawl(
            tmp_path,
            [f"http://{h}:{port}/" for h in one + two],
            "--resolve", f"*.one.test:{port}:127.0.0.1",
            "--resolve", f"*.two.test:{port}:127.0.0.2",
            "--min-delay", str(host_delay),
            "--ip-min-delay", str(ip_gap),
            "--processes", processes,
        )  # fmt: skip
        rows = read_log(log)
    assert len(rows) == 9 * 5  # robots.txt, /, /p/1..3 on every host
    by_ip = group(rows, "ip")
    assert {ip: len(r) for ip, r in by_ip.items()} == {"127.0.0.1": 30, "127.0.0.2": 15}
    for ip, seq in by_ip.items():
        assert max_in_flight(seq) == 1, (ip, overlaps(seq))
        assert min(idle_gaps(seq)) >= ip_gap - CLOCK_S, ip
    for host, seq in group(rows, "host").items():
        assert min(start_gaps(seq)) >= host_delay - CLOCK_S, host
    assert max_in_flight(rows) == 2  # one per server: the rule is per IP, not global
    if processes == "2":  # each server's names were crawled by both processes
        logs = sorted((tmp_path / "out" / "log").glob("requests*.jsonl"))
        keys = [{r["key"] for r in read_jsonl(p)} for p in logs]
        assert len(keys) == 2
        for ks in keys:
            assert {k.split(".", 1)[1] for k in ks} == {"one.test", "two.test"}


def test_two_worker_processes_share_the_ip_rule(redis_url: str, tmp_path: Path) -> None:  # noqa: F811
    """The same web crawled by two ``politecrawl worker`` processes on one Redis frontier
    (seeded by ``politecrawl seed``): the IP's holder and next time are shared, so each server
    still sees one request at a time and the gap, whichever worker sends it."""
    ip_gap, crawl_id = 0.1, f"ip-{uuid.uuid4().hex[:8]}"
    with log_server(tmp_path, "127.0.0.1", "127.0.0.2", latency=0.05) as (port, log):
        hosts = [f"h{i}.one.test" for i in range(6)] + [f"h{i}.two.test" for i in range(3)]
        (tmp_path / "seeds.txt").write_text("".join(f"http://{h}:{port}/\n" for h in hosts))
        resolve = [
            "--resolve", f"*.one.test:{port}:127.0.0.1",
            "--resolve", f"*.two.test:{port}:127.0.0.2",
            "--allow-private-addresses",
        ]  # fmt: skip
        shared = ["--frontier", redis_url, "--crawl-id", crawl_id]
        cli = [sys.executable, "-m", "politecrawl"]
        seed = [*cli, "seed", str(tmp_path / "seeds.txt"), *shared, *resolve]
        p = subprocess.run(seed, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        flags = [*shared, *resolve, "--user-agent", UA, "--no-progress", "--jitter", "0"]
        flags += ["--delay-factor", "0", "--min-delay", "0.4", "--ip-min-delay", str(ip_gap)]
        workers = [
            subprocess.Popen([*cli, "worker", "--out", str(tmp_path / w), *flags], text=True,
                             stderr=subprocess.PIPE)
            for w in ("w1", "w2")
        ]  # fmt: skip
        for w in workers:
            _, err = w.communicate(timeout=240)
            assert w.returncode == 0, err
        rows = read_log(log)
    assert len(rows) == 9 * 5
    for w in ("w1", "w2"):  # both took part
        assert (tmp_path / w / "log" / "requests.jsonl").read_text().strip()
    for ip, seq in group(rows, "ip").items():
        assert max_in_flight(seq) == 1, (ip, overlaps(seq))
        assert min(idle_gaps(seq)) >= ip_gap - CLOCK_S, ip


# -- item 7: spacing as the server sees it -------------------------------------------------------


def test_the_gap_holds_when_the_first_request_reaches_the_server_late(tmp_path: Path) -> None:
    """A slow connection set-up (here: the server reads a new connection's first request
    0.3 s late) must not shorten the next gap the server sees: the delay counts from the end
    of the answer, so robots.txt -> / -> /p/1 are each >= --min-delay apart on its clock."""
    delay = 0.8
    with log_server(tmp_path, "127.0.0.1", first_read_delay=0.3, pages=1) as (port, log):
        crawl(
            tmp_path,
            [f"http://robots.late.test:{port}/"],
            "--resolve", f"*.late.test:{port}:127.0.0.1",
            "--min-delay", str(delay),
            "--ip-min-delay", "0",
        )  # fmt: skip
        rows = read_log(log)
    assert [r["path"] for r in rows] == ["/robots.txt", "/", "/p/1"]
    assert rows[0]["conn"] == rows[1]["conn"]  # the keep-alive connection was reused
    assert min(start_gaps(rows)) >= delay - CLOCK_S, start_gaps(rows)
    assert min(idle_gaps(rows)) >= delay - CLOCK_S, idle_gaps(rows)


# -- item 4: a site that says go away ------------------------------------------------------------


def test_a_site_that_refuses_is_paused_then_given_up(tmp_path: Path) -> None:
    """403 to every request, and 429 to every request: after --park-after refusals in a row
    the site is paused for --park-time, and the next refusal gives it up: its other URLs are
    never requested. The log and summary.json say so. A normal site is crawled meanwhile."""
    n_urls = 20
    with log_server(tmp_path, "127.0.0.1") as (port, log):
        seeds = [
            f"http://{h}.x.test:{port}/s/{i}" for h in ("deny", "slow429") for i in range(n_urls)
        ]
        seeds.append(f"http://fine.x.test:{port}/")
        p = crawl(
            tmp_path,
            seeds,
            "--resolve", f"*.x.test:{port}:127.0.0.1",
            "--min-delay", "0.05",
            "--ip-min-delay", "0",
            "--retry-base", "0.05",
            "--park-after", "3",
            "--park-time", "0.6",
            code=3,  # sites lost: named, and the exit code says so
        )  # fmt: skip
        rows = read_log(log)
    pages = group([r for r in rows if r["path"] != "/robots.txt"], "host")
    for host in ("deny.x.test", "slow429.x.test"):
        seq = pages[host]
        assert len(seq) == 4, (host, len(seq))  # 3 refusals, the pause, one more: given up
        assert seq[3]["start"] - seq[2]["end"] >= 0.6 - CLOCK_S  # the pause, on its clock
    assert len(pages["fine.x.test"]) == 4  # the others go on
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    c = summary["counters"]
    assert (c["sites_paused"], c["sites_given_up"]) == (2, 2)
    # 403: three URLs were dropped as refused pages, the rest with the site; 429 keeps its
    # URLs queued for a retry, so all of them go with the site
    assert c["site_refused"] == (n_urls - 3) + n_urls
    assert summary["queued_left"] == 0
    lost = {x["site"]: x for x in summary["sites_lost"]}
    assert sorted(lost) == ["deny.x.test", "slow429.x.test"]
    assert all(x["state"] == "given_up" and "refused" in x["reason"] for x in lost.values())
    assert p.stderr.count("given up") == 3 and p.stderr.count("paused for") == 2
    req_log = read_jsonl(tmp_path / "out" / "log" / "requests.jsonl")
    assert sum(r["outcome"] == "dropped:site_refused" for r in req_log) == 2
