"""The network options of the README's table, each shown by its effect through the real
command (tests/test_options.py shows each reaches the config; this shows it acts):

- ``--request-time`` cuts a request that never ends; ``--transient-attempts`` is how many times
  a transient failure (a timeout here) is tried; ``--retry-max-wait`` caps the doubling wait
  between them (``--retry-base 1`` doubling uncapped, 1 + 2 + 4 + 8 s, would put the fifth
  try beyond the crawl's ``--max-time``; capped at 1 s, all five fit: each timeout also
  doubles the site's own delay, so they come at about 0, 2, 4, 6 and 9 s);
- ``--dns-tries`` and ``--dns-timeout``: how many times, and how long apart, a name is asked
  of a DNS server that never answers (in a network namespace of the test's own, its server's
  log read).

Run by pytest; ``python tests/test_net_options.py inside DIR`` is the part in the namespace.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest
from aiohttp import web
from dnslib import DNSRecord

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dnsserver import in_netns, netns_possible

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

UA = "optbot/1.0 (+http://bot.example/info)"


async def test_request_time_transient_attempts_and_retry_max_wait(tmp_path: Path) -> None:
    asked: list[tuple[str, float]] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        asked.append((request.path, time.monotonic()))
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if request.path == "/":
            return web.Response(text='<a href="/hang">x</a>', content_type="text/html")
        await asyncio.sleep(60)  # /hang: headers never come
        return web.Response(text="late")

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handle)
    runner = web.AppRunner(app, shutdown_timeout=0.5)  # /hang handlers still sleep
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    out = tmp_path / "out"
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "politecrawl", "crawl", f"http://hang.test:{port}/",
            "--user-agent", UA, "--out", str(out), "--allow-private-addresses",
            "--resolve", f"hang.test:{port}:127.0.0.1", "--min-delay", "0.1", "--jitter", "0",
            "--delay-factor", "0", "--ip-min-delay", "off", "--no-progress",
            "--request-time", "1", "--transient-attempts", "5", "--park-after", "10",
            "--retry-base", "1", "--retry-max-wait", "1", "--max-time", "15",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await proc.communicate()
    finally:
        await runner.cleanup()
    assert "Traceback" not in err.decode(), err.decode()
    hangs = [t for p, t in asked if p == "/hang"]
    # --transient-attempts 5: asked five times, then given up; all five before --max-time
    # (--retry-max-wait: the waits stayed at 1 s)
    assert len(hangs) == 5, asked
    rows = [r for r in read_jsonl(out / "log" / "requests.jsonl") if r["url"].endswith("/hang")]
    assert [r["error"] for r in rows] == ["timeout"] * 5, rows
    assert json.loads((out / "summary.json").read_text())["stopped_by"] == "done"
    # --request-time 1 cut each (the server would have answered after 60 s)
    assert all(r["duration_ms"] < 10_000 for r in rows), rows


def test_dns_tries_and_dns_timeout(tmp_path: Path) -> None:
    if not netns_possible():
        pytest.skip("unshare -n -m is not possible here (needs root and util-linux)")
    cmd = in_netns(
        [sys.executable, str(Path(__file__).resolve()), "inside", str(tmp_path)], work=tmp_path
    )
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    report = json.loads((tmp_path / "report.json").read_text())
    for run in report.values():
        assert "Traceback" not in run["stderr"], run["stderr"]
    once, thrice = report["tries1"]["asked"], report["tries3"]["asked"]
    # each query type (A, AAAA) asked once with --dns-tries 1, three times with 3
    assert once and all(len(times) == 1 for times in once.values()), once
    assert set(thrice) == set(once) and all(len(t) == 3 for t in thrice.values()), thrice
    # --dns-timeout 1: no try before the last one's timeout ran out
    for times in thrice.values():
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert min(gaps) >= 0.9, gaps


def _silent_dns(log: dict[str, list[float]], stop: threading.Event) -> None:
    """A DNS server that reads every query and answers none."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 53))
    sock.settimeout(0.2)
    while not stop.is_set():
        try:
            data, _ = sock.recvfrom(4096)
        except TimeoutError:
            continue
        q = DNSRecord.parse(data).q
        log[f"{str(q.qname).rstrip('.')} {q.qtype}"].append(time.monotonic())
    sock.close()


def _inside(work: Path) -> None:
    report = {}
    for name, tries, timeout_s in (("tries1", "1", "1"), ("tries3", "3", "1")):
        log: dict[str, list[float]] = defaultdict(list)
        stop = threading.Event()
        server = threading.Thread(target=_silent_dns, args=(log, stop), daemon=True)
        server.start()
        time.sleep(0.2)
        done = subprocess.run(
            [sys.executable, "-m", "politecrawl", "crawl", "http://quiet.test/",
             "--user-agent", UA, "--out", str(work / name), "--no-progress",
             "--dns-tries", tries, "--dns-timeout", timeout_s, "--dns-negative-ttl", "600",
             "--max-time", "8"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        stop.set()
        server.join()
        report[name] = {
            "asked": {k: v for k, v in log.items() if k.startswith("quiet.test")},
            "stderr": done.stderr[-3000:],
        }
    (work / "report.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__" and sys.argv[1:2] == ["inside"]:
    _inside(Path(sys.argv[2]))
