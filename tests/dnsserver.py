"""A DNS server of the tests' own, and the network namespace it answers in.

``DnsServer``: UDP on 127.0.0.1:53, answering A queries from ``rules`` (``*.test`` wildcards)
after ``delay_s``, NXDOMAIN for names no rule maps (or mapped to None), and AAAA with no data;
with ``silent`` it never answers for the names no rule maps, as a dead name server does (the
resolver times out). Every query is logged with its time (``log``), so a test can count what
reached the server.
Each answer is delayed without holding up the others, as a real recursive resolver's would.

``in_netns(cmd, ...)``: ``cmd`` wrapped in ``unshare -n -m``: a network namespace with only
``lo`` (nothing can leave the machine), extra addresses on it, and /etc/resolv.conf and
/etc/hosts bind-mounted (``nameserver 127.0.0.1``), so the resolver of the command (c-ares,
glibc) asks ``DnsServer``. Used by tests/test_dns_e2e.py and bench/throughput.py --dns-latency-ms.
"""

from __future__ import annotations

import asyncio
import fnmatch
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dnslib import AAAA, QTYPE, RCODE, RR, A, DNSRecord


@dataclass
class Query:
    t: float
    name: str
    qtype: str


@dataclass
class DnsServer:
    """A/AAAA answers from ``rules`` (name or fnmatch pattern -> IPv4 or None for NXDOMAIN)."""

    rules: dict[str, str | None]
    delay_s: float = 0.1
    ttl_s: int = 300
    port: int = 53
    silent: bool = False  # names no rule maps get no answer at all, not NXDOMAIN
    log: list[Query] = field(default_factory=list)
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None

    def rule(self, name: str) -> tuple[bool, str | None]:
        """(whether a rule maps ``name``, its address: None for NXDOMAIN)."""
        name = name.rstrip(".").lower()
        if name in self.rules:
            return True, self.rules[name]
        for pattern, addr in self.rules.items():
            if fnmatch.fnmatchcase(name, pattern):
                return True, addr
        return False, None

    def reply(self, data: bytes) -> bytes | None:
        """The answer to a query packet; None for none at all (``silent``)."""
        query = DNSRecord.parse(data)
        reply = query.reply()
        qname = str(query.q.qname)
        qtype = QTYPE[query.q.qtype]
        self.log.append(Query(time.time(), qname.rstrip(".").lower(), str(qtype)))
        mapped, addr = self.rule(qname)
        if self.silent and not mapped:
            return None
        if addr is None:
            reply.header.rcode = RCODE.NXDOMAIN
        elif query.q.qtype == QTYPE.A:
            reply.add_answer(RR(qname, QTYPE.A, rdata=A(addr), ttl=self.ttl_s))
        elif query.q.qtype == QTYPE.AAAA and ":" in addr:
            reply.add_answer(RR(qname, QTYPE.AAAA, rdata=AAAA(addr), ttl=self.ttl_s))
        return bytes(reply.pack())

    def start(self) -> None:
        """Serve from a thread of its own (its own event loop)."""
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            server = self

            class Proto(asyncio.DatagramProtocol):
                def connection_made(self, transport: asyncio.BaseTransport) -> None:
                    self.out: Any = transport

                def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
                    try:
                        out = server.reply(data)
                    except Exception:  # a packet dnslib cannot read: no answer
                        return
                    if out is None:
                        return
                    loop.call_later(server.delay_s, self.out.sendto, out, addr)

            loop.run_until_complete(
                loop.create_datagram_endpoint(Proto, local_addr=("127.0.0.1", self.port))
            )
            ready.set()
            loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the DNS server did not start")

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def lookups(self, name: str, gap_s: float = 0.05) -> list[float]:
        """The times ``name`` was asked, its A and AAAA queries within ``gap_s`` counted once."""
        times = sorted(q.t for q in self.log if q.name == name)
        out: list[float] = []
        for t in times:
            if not out or t - out[-1] > gap_s:
                out.append(t)
        return out


def netns_possible() -> bool:
    """True if this process may make a network + mount namespace (root, unshare present)."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    try:
        done = subprocess.run(
            ["unshare", "-n", "-m", "sh", "-c", "ip link set lo up && mount --bind / /mnt"],
            capture_output=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def in_netns(cmd: list[str], addrs: tuple[str, ...] = (), work: Path | None = None) -> list[str]:
    """``cmd`` run in a new network and mount namespace: ``lo`` up with ``addrs`` on it,
    resolv.conf naming 127.0.0.1 (one try per lookup: c-ares' own tries are the crawler's),
    and a hosts file with localhost only."""
    work = work or Path(tempfile.mkdtemp(prefix="pc-netns-"))
    resolv = work / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\n")
    hosts = work / "hosts"
    hosts.write_text("127.0.0.1 localhost\n::1 localhost\n")
    steps = ["ip link set lo up"]
    steps += [f"ip addr add {a}/32 dev lo" for a in addrs]
    steps += [
        f"mount --bind {shlex.quote(str(resolv))} /etc/resolv.conf",
        f"mount --bind {shlex.quote(str(hosts))} /etc/hosts",
        "exec " + shlex.join(cmd),
    ]
    return ["unshare", "-n", "-m", "sh", "-c", " && ".join(steps)]


def inside_report(
    test_file: str, work: Path, addrs: tuple[str, ...] = (), timeout_s: float = 300
) -> dict[str, Any]:
    """Run ``python TEST_FILE inside WORK`` in a namespace of its own (``in_netns``; the test
    is skipped where none can be made) and return the ``report.json`` it wrote there."""
    import json
    import sys

    import pytest

    if not netns_possible():
        pytest.skip("unshare -n -m is not possible here (needs root and util-linux)")
    cmd = in_netns(
        [sys.executable, str(Path(test_file).resolve()), "inside", str(work)],
        addrs=addrs,
        work=work,
    )
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    report: dict[str, Any] = json.loads((work / "report.json").read_text())
    return report
