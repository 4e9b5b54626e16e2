"""The crawler's own link down for 15 s (``lo`` down in a namespace of the test's own), through
the real command: requests written while it was down must not reach the servers once it is
back.

They did: each sat in the kernel's send buffer, the fetch timed out and closed its connection,
the URL was asked again on a new one, and the kernel then delivered the old copy too. The
servers saw 30 of 30 sites asked a page twice, 0.04 s apart (a probe of the product from
outside). A connection now closes with what it had not sent (SO_LINGER 0).

Run by pytest; ``python tests/test_outage_ghosts.py inside DIR`` is the part in the namespace.
"""

from __future__ import annotations

import asyncio
import collections
import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dnsserver import inside_report

pytestmark = pytest.mark.e2e

HOSTS, PAGES, DELAY = 12, 30, 0.5
UA = "ghostbot/1.0 (+http://bot.example/)"


def test_requests_sent_into_an_outage_do_not_arrive_after_it(tmp_path: Path) -> None:
    report = inside_report(__file__, tmp_path, timeout_s=400)
    assert report["exit"] == 0, report["stderr"]
    assert report["timeouts"] > 0, report  # requests were in flight when the link went down
    assert report["repeated"] == [], report["repeated"]  # no page asked twice
    assert report["violations"] == [], report["violations"]  # no gap below the delay
    assert report["pages"] == HOSTS * PAGES, report["pages"]  # nothing lost


async def _inside(work: Path) -> None:
    from politecrawl.demo.accesslog import politeness_violations
    from politecrawl.demo.web import TestWeb

    web = TestWeb(HOSTS, PAGES, plain=True)
    await web.start()
    seeds = work / "seeds.txt"
    seeds.write_text("".join(f"{u}\n" for u in web.seed_urls()))
    out = work / "out"
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "politecrawl", "crawl", "--seeds", str(seeds),
            "--out", str(out), "--user-agent", UA, "--scope", "any", "--min-delay", str(DELAY),
            "--jitter", "0", "--resolve", web.resolve_arg(), "--allow-private-addresses",
            "--ip-min-delay", "off", "--retry-base", "1", "--max-time", "200", "--no-progress",
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        await asyncio.sleep(6.0)
        subprocess.run(["ip", "link", "set", "lo", "down"], check=True)
        await asyncio.sleep(15.0)
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        _, err = await proc.communicate()
    finally:
        await web.stop()
    asked = collections.Counter(
        (e.host, e.path) for e in web.access_log if e.path != "/robots.txt"
    )
    summary = json.loads((out / "summary.json").read_text())
    report = {
        "exit": proc.returncode,
        "stderr": err.decode()[-3000:],
        "timeouts": summary["counters"].get("error:timeout", 0),
        "repeated": sorted(f"{h}{p}" for (h, p), n in asked.items() if n > 1),
        "violations": [str(v) for v in politeness_violations(web.access_log, DELAY)][:20],
        "pages": len(asked),
    }
    (work / "report.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__" and sys.argv[1:2] == ["inside"]:
    asyncio.run(_inside(Path(sys.argv[2])))
