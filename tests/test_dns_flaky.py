"""A resolver that fails for a while, or answers slowly, through the real command.

In a network namespace with a DNS server of the test's own (``dnsserver.in_netns``):

- one name answered SERVFAIL for its first 1.5 s (the other sites fine: no outage): the
  failure was kept for the negative TTL (300 s), every retry of the site's robots.txt met the
  cached failure, and the site was given up in 2.4 s for good. It must be crawled;
- one name answered SERVFAIL until the first crawl ends: the site is given up (its
  robots.txt could not be reached) and named so, with a resume that asks again; the resume,
  with DNS answering, crawls it;
- every answer 0.5 s late: the wait was counted as the server's response time, and the
  30 x response-time rule held each site 15 s after its robots.txt. The pace must be the
  floor's. With them, a name that does not exist: its URLs were dropped and only counted
  (exit 0); the site must be named lost.

Run by pytest; ``python tests/test_dns_flaky.py inside DIR`` is the part in the namespace.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dnsserver import DnsServer, Query, inside_report

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

WEB, PORT = "11.0.0.2", 8080
HOSTS, PAGES = 4, 4
UA = "dnsbot/1.0 (+http://bot.example/)"
FLAKY_S = 1.5


class FlakyDns(DnsServer):
    """SERVFAIL for the names in ``failing`` (forever) and for ``flaky`` for its first
    ``FLAKY_S`` seconds from its first query."""

    failing: set[str]
    flaky: str = ""
    _first: float | None = None

    def reply(self, data: bytes) -> bytes | None:
        from dnslib import RCODE, DNSRecord

        query = DNSRecord.parse(data)
        name = str(query.q.qname).rstrip(".").lower()
        if name == self.flaky and self._first is None:
            self._first = time.time()
        failing = name in self.failing or (
            name == self.flaky and self._first is not None and time.time() - self._first < FLAKY_S
        )
        if not failing:
            return super().reply(data)
        self.log.append(Query(time.time(), name, "SERVFAIL"))
        reply = query.reply()
        reply.header.rcode = RCODE.SERVFAIL
        return bytes(reply.pack())


def test_a_resolver_that_fails_for_a_while_or_answers_slowly(tmp_path: Path) -> None:
    report = inside_report(__file__, tmp_path, addrs=(WEB,), timeout_s=300)
    runs = report["runs"]
    pages = {f"/p/{i}.html" for i in range(1, PAGES)}
    # a name failing for 1.5 s: asked again at the site's next turns, and crawled
    first = runs["first"]
    assert pages <= set(first["served"]["h0.test"]), first
    # a name failing throughout: given up, named, and a resume would ask again
    lost = {x["site"]: x for x in first["summary"]["sites_lost"]}
    assert first["exit"] == 3, first["stderr"]
    assert set(lost) == {"h1.test"}, lost
    assert "robots.txt" in lost["h1.test"]["reason"]
    assert lost["h1.test"]["resume"].startswith("a resume asks its robots.txt again")
    assert "h1.test: given_up" in first["stdout"] and "asked again on a resume" in first["stdout"]
    # the resume, DNS answering now: the site's URLs are queued again and crawled
    again = runs["resume"]
    assert again["exit"] == 0, again["stderr"]
    assert again["summary"]["sites_lost"] == [], again["summary"]
    assert pages <= set(again["served"].get("h1.test", [])), again
    assert "queued again" in again["stdout"] + again["stderr"]
    # 0.5 s lookups are not the servers' response time: every page of every site in time,
    # the delays the floor's, not 30 x 0.5 s
    slow = runs["slow"]
    for host in ("h2.test", "h3.test"):
        assert pages <= set(slow["served"][host]), slow
    assert max(slow["delays"]) < 2.0, slow["delays"]
    # a name that does not exist (NXDOMAIN) lost its 3 URLs: named, not only counted
    lost = slow["summary"]["sites_lost"]
    assert slow["exit"] == 3, slow["stderr"]
    assert [(x["site"], x["state"], x["urls_left"]) for x in lost] == [
        ("gone.test", "given_up", 3)
    ], lost
    assert "no such host" in lost[0]["reason"] and "gone.test: given_up" in slow["stdout"]


async def _crawl(work: Path, name: str, seeds: list[str], dns: FlakyDns) -> dict[str, object]:
    from politecrawl.demo.web import TestWeb

    web = TestWeb(HOSTS, PAGES, port=PORT, bind=WEB, plain=True)
    await web.start()
    seeds_file = work / f"{name}.txt"
    seeds_file.write_text("".join(f"{u}\n" for u in seeds))
    out = work / ("out" if name in ("first", "resume") else name)
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "politecrawl", "crawl", "--seeds", str(seeds_file),
            "--out", str(out), "--user-agent", UA, "--scope", "any", "--min-delay", "0.2",
            "--jitter", "0.01", "--retry-base", "0.5", "--ip-min-delay", "off",
            # robots.txt is asked again as a page: 3.5 s (and never parked), not hours
            "--transient-attempts", "4",
            "--max-time", "60", "--no-progress",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        said, err = await proc.communicate()
    finally:
        await web.stop()
    served: dict[str, list[str]] = defaultdict(list)
    for e in web.access_log:
        if e.status == 200:
            served[e.host.split(":")[0]].append(e.path)
    requests = read_jsonl(out / "log" / "requests.jsonl", headers=True)
    return {
        "exit": proc.returncode,
        "stderr": err.decode()[-3000:],
        "stdout": said.decode()[-3000:],
        "summary": json.loads((out / "summary.json").read_text()),
        "served": served,
        "delays": [r["delay_s"] for r in requests if "delay_s" in r],
    }


async def _inside(work: Path) -> None:
    from politecrawl.demo.web import TestWeb

    dns = FlakyDns({"h*.test": WEB}, delay_s=0.0)
    dns.failing, dns.flaky = {"h1.test"}, "h0.test"
    dns.start()
    urls = TestWeb(HOSTS, PAGES, port=PORT, bind=WEB, plain=True).seed_urls()
    runs: dict[str, object] = {}
    try:
        two = [u for u in urls if "//h0.test" in u or "//h1.test" in u]
        runs["first"] = await _crawl(work, "first", two, dns)
        dns.failing = set()
        runs["resume"] = await _crawl(work, "resume", two, dns)
        dns.delay_s = 0.5
        gone = [f"http://gone.test:{PORT}/p/{i}.html" for i in range(3)]  # no rule: NXDOMAIN
        runs["slow"] = await _crawl(work, "slow", [u for u in urls if u not in two] + gone, dns)
    finally:
        dns.stop()
    (work / "report.json").write_text(json.dumps({"runs": runs}, indent=1))


if __name__ == "__main__" and sys.argv[1:2] == ["inside"]:
    asyncio.run(_inside(Path(sys.argv[2])))
