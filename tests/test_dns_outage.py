"""The crawler's own resolver down from the start, through the real command.

Issue 28: in a namespace with no resolver, each of 2,000 hosts was tried 3 times in 2.5 s
and dropped, and the crawl was "done" in 4.5 s. Here the crawl starts in a network namespace
(``dnsserver.in_netns``) whose resolv.conf names a DNS server that is not there yet: every
lookup fails and no site has ever answered, so there is no site to probe the network with.
The DNS server comes up 8 s later. The crawl must wait for it (its outage guard asks DNS
again, past the cache), then fetch every page of every site, with no site lost, and exit 0.

Run by pytest; ``python tests/test_dns_outage.py inside DIR`` is the part in the namespace.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import defaultdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dnsserver import DnsServer, inside_report

pytestmark = pytest.mark.e2e

WEB, PORT = "11.0.0.1", 8080
HOSTS, PAGES, DOWN_S = 8, 4, 8.0
UA = "dnsbot/1.0 (+http://bot.example/)"


def test_a_resolver_down_from_the_start_loses_no_site(tmp_path: Path) -> None:
    report = inside_report(__file__, tmp_path, addrs=(WEB,), timeout_s=240)
    assert report["exit"] == 0, report["stderr"]
    # the DNS server was down for DOWN_S and the crawl waited for it: nothing dropped
    assert report["summary"]["sites_lost"] == [], report["summary"]["sites_lost"]
    served = report["served"]
    assert len(served) == HOSTS, served
    for host, paths in served.items():
        assert "/robots.txt" in paths, (host, paths)
        assert {f"/p/{i}.html" for i in range(1, PAGES)} <= set(paths), (host, paths)


async def _inside(work: Path) -> None:
    from politecrawl.demo.web import TestWeb

    dns = DnsServer({"h*.test": WEB}, delay_s=0.0)
    web = TestWeb(HOSTS, PAGES, port=PORT, bind=WEB, plain=True)
    await web.start()
    seeds = work / "seeds.txt"
    seeds.write_text("".join(f"{u}\n" for u in web.seed_urls()))
    out = work / "out"
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "politecrawl", "crawl", "--seeds", str(seeds),
            "--out", str(out), "--user-agent", UA, "--scope", "any", "--min-delay", "0.2",
            "--jitter", "0.01", "--delay-factor", "1", "--retry-base", "0.5",
            "--ip-min-delay", "off", "--max-time", "120", "--dns-negative-ttl", "1",
            "--no-progress",
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        await asyncio.sleep(DOWN_S)
        dns.start()
        _, err = await proc.communicate()
    finally:
        await web.stop()
        dns.stop()
    served: dict[str, list[str]] = defaultdict(list)
    for e in web.access_log:
        if e.status == 200:
            served[e.host.split(":")[0]].append(e.path)
    report = {
        "exit": proc.returncode,
        "stderr": err.decode()[-3000:],
        "summary": json.loads((out / "summary.json").read_text()),
        "served": served,
    }
    (work / "report.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__" and sys.argv[1:2] == ["inside"]:
    asyncio.run(_inside(Path(sys.argv[2])))
