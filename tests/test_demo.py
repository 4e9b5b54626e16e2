"""``politecrawl demo`` killed, resumed, and left without its test web, through the real command.

Judged by the processes left running, what the test web's access log holds, what the crawl
logged and, for the resume, by a DNS server of the test's own: the resumed demo runs in a
network namespace (``dnsserver.in_netns``: only ``lo``, resolv.conf naming that server), so
a lookup the demo should not make is counted there and never leaves the machine.

- ``kill -9`` of the demo takes its test web with it: nothing left holding the port;
- the same command again serves the web on the port its queued URLs carry, asks DNS for
  nothing, and ends done, with no failure called deliberate;
- a test web that dies under the crawl stops the demo, which says so and exits 1.

Run by pytest; ``python tests/test_demo.py inside DIR`` is the part inside the namespace.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dnsserver import DnsServer, in_netns, netns_possible

from politecrawl.demo.accesslog import load_access_log, politeness_violations
from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

DELAY = 0.2
SMALL = ["--hosts", "8", "--pages", "20", "--min-delay", str(DELAY)]


def _demo(out: Path) -> list[str]:
    return [sys.executable, "-m", "politecrawl", "demo", "--out", str(out), *SMALL]


def _web_pids(out: Path) -> list[int]:
    """The demo's test web processes for ``out`` (their command line names its folder)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"politecrawl.demo.web" in args and any(str(out).encode() in a for a in args):
            pids.append(int(proc.name))
    return pids


def _alive(pid: int) -> bool:
    """Running (a zombie no one has reaped yet counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_for_requests(out: Path, n: int, demo: subprocess.Popen[str]) -> None:
    log = out / "testweb-access.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and demo.poll() is None:
        if log.exists() and len(log.read_text().splitlines()) >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"the demo's test web did not see {n} requests")


def _port_of(out: Path) -> int:
    """The port of the demo's test web, from its pin in config.json."""
    (rule,) = json.loads((out / "config.json").read_text())["fetch"]["resolve"]
    return int(rule.split(":")[1])


def _end(demo: subprocess.Popen[str], out: Path) -> list[int]:
    """Kill what the test started and is still running; the web processes left behind."""
    if demo.poll() is None:
        demo.kill()
        demo.wait()
    left = [pid for pid in _web_pids(out) if _alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left


def test_kill_9_of_the_demo_takes_its_test_web_with_it(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    demo = subprocess.Popen(_demo(out), text=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        _wait_for_requests(out, 20, demo)
        (web,) = _web_pids(out)
        port = _port_of(out)
        demo.kill()
        demo.wait()
        deadline = time.monotonic() + 5
        while _alive(web) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(web), "the test web outlived the demo"
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
    finally:
        _end(demo, out)


def test_a_test_web_that_dies_under_the_demo_stops_it_and_is_said(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    demo = subprocess.Popen(_demo(out), text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # fmt: skip
    try:
        _wait_for_requests(out, 20, demo)
        (web,) = _web_pids(out)
        os.kill(web, signal.SIGKILL)
        stdout, stderr = demo.communicate(timeout=60)
    finally:
        _end(demo, out)
    assert demo.returncode == 1, (stdout, stderr)
    (said,) = [line for line in stderr.splitlines() if line.startswith("politecrawl:")]
    assert "the test web ended before the crawl did" in said, stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped_by"] == "test_web_died"
    for kind in (k for k in summary["errors"] if not k.startswith("http_")):
        assert kind in said  # named as the failures they are, none called deliberate
    assert "HTTP errors are deliberate" in stdout or not any(
        k.startswith("http_") for k in summary["errors"]
    )


def test_a_resumed_demo_serves_its_port_again_and_asks_dns_nothing(tmp_path: Path) -> None:
    assert netns_possible(), "needs root, unshare and ip (README: Which tests need what)"
    done = subprocess.run(
        in_netns([sys.executable, str(Path(__file__).resolve()), "inside", str(tmp_path)],
                 work=tmp_path),
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    run = json.loads((tmp_path / "result.json").read_text())
    assert run["dns_asked"] == [], "the demo asked DNS for names it pins"
    assert run["left_running"] == [], "the first run's test web outlived it"
    assert run["code"] == 0, run["stderr"]
    assert "no part of the test web" not in run["stderr"], run["stderr"]
    out = tmp_path / "demo"
    port = json.loads((out / "testweb.json").read_text())["port"]
    assert port == run["first_port"]
    assert f"on 127.0.0.1:{port} " in run["stdout"]
    records = [r for r in read_jsonl(out / "log" / "requests.jsonl") if "url" in r]
    assert records and all(r["url"].split("/")[2].endswith(f".test:{port}") for r in records)
    assert not [r for r in records if r.get("error") in ("no_such_host", "dns", "connect")]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped_by"] == "done" and summary["queued_left"] == 0
    seen = load_access_log(str(out / "testweb-access.jsonl"))
    assert len(seen) > run["seen_before_kill"]  # the judge reads both runs' requests
    assert politeness_violations(seen, DELAY) == []
    assert f"server saw {len(seen)} requests, 0 politeness violations" in run["stdout"]


def inside(tmp: Path) -> None:
    """In the namespace: a DNS server that answers every name with NXDOMAIN and logs every
    query; the demo killed with ``kill -9`` while it crawls, then the same command again."""
    dns = DnsServer({}, delay_s=0.0)
    dns.start()
    out = tmp / "demo"
    first = subprocess.Popen(_demo(out), text=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)  # fmt: skip
    _wait_for_requests(out, 60, first)
    first_port = _port_of(out)
    first.kill()
    first.wait()
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in _web_pids(out)) and time.monotonic() < deadline:
        time.sleep(0.05)
    seen_before = len((out / "testweb-access.jsonl").read_text().splitlines())
    try:
        second = subprocess.run(_demo(out), capture_output=True, text=True, timeout=300)
    finally:
        left = _end(first, out)
        dns.stop()
    result = {
        "dns_asked": sorted({q.name for q in dns.log}),
        "left_running": left,
        "first_port": first_port,
        "seen_before_kill": seen_before,
        "code": second.returncode,
        "stdout": second.stdout,
        "stderr": second.stderr,
    }
    (tmp / "result.json").write_text(json.dumps(result))


if __name__ == "__main__" and sys.argv[1:2] == ["inside"]:
    inside(Path(sys.argv[2]))
