"""bench/throughput.py --dns-latency-ms N: crawls whose every name lookup takes N ms.

    python bench/throughput.py --dns-latency-ms 100 [--hosts 2000] [--pages 5] [--delay 0.5]
        [--dns-seconds 30]

On the open web an uncached lookup takes tens to hundreds of milliseconds; the test web
resolves every name at once (``--resolve``). Here nothing is pinned: the crawlers ask a DNS
server of the bench's own (tests/dnsserver.py) that answers every ``*.test`` name with
127.0.0.1 after N ms, in a network namespace of its own (``unshare -n -m``, resolv.conf and
hosts bind-mounted: no lookup can leave the machine). In one run, each for ``--dns-seconds``:
politecrawl with instant answers, politecrawl with N ms answers, and Scrapy with N ms answers
(its own resolver: getaddrinfo in its reactor's threads), with the requests the test web got
from each. Targets (issue 29): politecrawl at N ms >= 0.8x its instant self, >= 2x Scrapy.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlib import start_testweb

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
from dnsserver import DnsServer, in_netns, netns_possible  # noqa: E402

UA = "benchbot/1.0 (+http://bench.example/bot)"


def run(args: argparse.Namespace) -> int:
    """From bench/throughput.py: the bench, re-run inside a network namespace."""
    if not netns_possible():
        raise SystemExit("--dns-latency-ms needs a network namespace (unshare -n -m, as root)")
    work = Path(tempfile.mkdtemp(prefix="pc-dnsbench-"))
    inner = [
        sys.executable, str(Path(__file__).resolve()), str(args.hosts), str(args.pages),
        str(args.delay), str(args.concurrency), str(args.dns_latency_ms), str(args.dns_seconds),
        "rich" if args.rich else "plain" if args.plain else "mixed", str(work),
    ]  # fmt: skip
    return subprocess.run(in_netns(inner, work=work), check=False).returncode


def _crawl(port: int, hosts: int, delay: float, concurrency: int, secs: float, out: Path) -> int:
    """``politecrawl crawl`` for ``secs`` seconds, its names looked up (no ``--resolve``)."""
    seeds = out.parent / f"{out.name}-seeds.txt"
    seeds.write_text("".join(f"http://h{i}.test:{port}/\n" for i in range(hosts)))
    cmd = [
        sys.executable, "-m", "politecrawl", "crawl", "--seeds", str(seeds), "--user-agent", UA,
        "--out", str(out), "--allow-private-addresses", "--scope", "any",
        "--min-delay", str(delay), "--jitter", "0.01", "--delay-factor", "1",
        "--retry-base", "0.5", "--park-time", "1", "--concurrency", str(concurrency),
        "--no-progress", "--ip-min-delay", "off", "--max-time", str(secs),
    ]  # fmt: skip
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return int(json.loads((out / "summary.json").read_text())["requests"])


def _scrapy(port: int, hosts: int, delay: float, concurrency: int, secs: float) -> int:
    """Scrapy for ``secs`` seconds with its own resolver (the system's, through its threads)."""
    script = HERE / "scrapy_crawl.py"
    cmd = [str(port), str(hosts), str(delay), str(concurrency), "system", str(secs)]
    done = subprocess.run(
        [sys.executable, str(script), *cmd],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(json.loads(done.stdout.strip().splitlines()[-1])["requests"])


def _inside(argv: list[str]) -> int:
    hosts, pages, delay, concurrency = int(argv[0]), int(argv[1]), float(argv[2]), int(argv[3])
    latency_s, secs, web, work = float(argv[4]) / 1000, float(argv[5]), argv[6], Path(argv[7])
    dns = DnsServer({"*.test": "127.0.0.1"}, delay_s=0.0)
    dns.start()
    server, port = start_testweb(hosts, pages, plain=web != "mixed", rich=web == "rich", lean=True)
    got: dict[str, tuple[int, int]] = {}
    try:
        for name, delay_s in (("politecrawl, instant lookups", 0.0), ("politecrawl", latency_s)):
            dns.delay_s, first = delay_s, len(dns.log)
            n = _crawl(port, hosts, delay, concurrency, secs, work / f"pc-{len(got)}")
            got[name] = (n, len(dns.log) - first)
        dns.delay_s, first = latency_s, len(dns.log)
        got["scrapy"] = (_scrapy(port, hosts, delay, concurrency, secs), len(dns.log) - first)
    finally:
        server.terminate()
        server.wait(10)
        dns.stop()
    ms = latency_s * 1000
    print(
        f"{web} test web: {hosts} sites x {pages} pages, delay {delay}s, concurrency "
        f"{concurrency}; each crawler {secs:.0f}s; a DNS server answering after {ms:.0f} ms"
    )
    for name, (n, queries) in got.items():
        when = "at once" if name.endswith("instant lookups") else f"after {ms:.0f} ms"
        label = name.removesuffix(", instant lookups")
        print(
            f"  {label:<12} lookups {when:<14}: {n:>7} requests ({n / secs:.0f}/s); "
            f"{queries} DNS queries"
        )
    instant, slow, scrapy = (got[k][0] for k in got)
    print(
        f"ratio: politecrawl {ms:.0f} ms / instant = {slow / max(instant, 1):.2f}x "
        f"(target >= 0.8x); politecrawl / Scrapy at {ms:.0f} ms = "
        f"{slow / max(scrapy, 1):.2f}x (target >= 2x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(_inside(sys.argv[1:]))
