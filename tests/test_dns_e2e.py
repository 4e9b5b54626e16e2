"""Name lookups at the web's speed, through the real command, with a DNS server of our own.

The whole scene runs in a network namespace (``dnsserver.in_netns``: ``unshare -n -m``, only
``lo``, resolv.conf and hosts bind-mounted), so no lookup can leave the machine and c-ares
asks our ``DnsServer`` as it would ask a real one. In there the test web listens on
11.0.0.1, an address the guard takes for public, so the crawls run *without*
``--allow-private-addresses``; listeners on 10.0.0.5, 169.254.1.1 and 127.0.0.1 stand for
the inside a hostile name may point at, and count every connection they get.

Two crawls of the test web, ``--max-time`` bound, one with answers at once and one with
answers after 100 ms; politeness (600 sites, one request per 2 s each) bounds them, not the
shared machine's CPU. A third crawl, of the hostile and the failing names, with 100 ms
answers. The test judges, from the servers' own logs:

- the pace: with 100 ms lookups the web gets most of the requests it gets with instant ones
  (loosely: the machine is shared);
- the guard: names answered with 10.x, 169.254.x and 127.x are refused, their listeners see
  no connection, although the DNS server was asked (the answer is what was refused);
  ``--resolve`` pins a name the DNS server would say does not exist, and it is never asked;
- negative caching: a name that does not resolve, requested again and again (robots.txt of
  ten origins on it, retried), is asked of the DNS server only once per negative TTL.

Run by pytest; ``python tests/test_dns_e2e.py inside DIR`` is the part inside the namespace.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dnsserver import DnsServer, in_netns, netns_possible

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

WEB, EVIL, META, PORT = "11.0.0.1", "10.0.0.5", "169.254.1.1", 8080
HOSTS, PAGES, MAX_TIME_S, NEG_TTL_S = 600, 20, 7, 1.5
UA = "dnsbot/1.0 (+http://bot.example/)"
TRAPS = {"evil.test": EVIL, "meta.test": META, "lo.test": "127.0.0.1"}
NX_ORIGINS = [f"http://nx.test:{PORT + k}/" for k in range(20)]


def test_lookups_at_100ms_keep_pace_guard_and_negative_cache(tmp_path: Path) -> None:
    if not netns_possible():
        pytest.skip("unshare -n -m is not possible here (needs root and util-linux)")
    cmd = in_netns(
        [sys.executable, str(Path(__file__).resolve()), "inside", str(tmp_path)],
        addrs=(WEB, EVIL, META),
        work=tmp_path,
    )
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    report = json.loads((tmp_path / "report.json").read_text())
    instant, slow, guard = report["instant"], report["slow"], report["guard"]

    # the pace: 100 ms lookups cost little (ThreadedResolver: a few dozen names a second)
    assert instant["web_requests"] > HOSTS, instant
    assert slow["web_requests"] >= 0.75 * instant["web_requests"], (slow, instant)
    assert slow["web_hosts"] >= 0.95 * HOSTS, slow
    for run in (instant, slow):
        # one lookup per name, whatever the number of requests to it (A and AAAA: 2 queries)
        assert max(run["queries_per_web_name"].values()) <= 2, run["queries_per_web_name"]
        # --resolve bypasses DNS: the name the server says does not exist is fetched, unasked
        assert run["dns_asked"]["h0.test"] == 0, run["dns_asked"]
        assert run["pinned_ok"] >= 1, run
    # the guard: each hostile name was answered, refused, and never connected to
    assert guard["trap_connections"] == {n: 0 for n in TRAPS}, guard
    for name in TRAPS:
        assert guard["dns_asked"][name] >= 1, guard["dns_asked"]
        assert guard["errors"][name] == ["address_refused"], guard["errors"]
    # negative caching: robots.txt of twenty origins on nx.test, each refused before any
    # connection, so all in one turn of the site; the name itself looked up once (that it is
    # asked again after the negative TTL: test_dns.py::test_failure_kept_for_the_negative_ttl)
    attempts, lookups = guard["nx_attempts"], guard["nx_lookups"]
    assert attempts == len(NX_ORIGINS), guard
    assert len(lookups) == 1, guard


# -- inside the namespace ----------------------------------------------------------------------


async def _trap(addr: str, hits: Counter[str], name: str) -> asyncio.Server:
    def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        hits[name] += 1
        writer.close()

    return await asyncio.start_server(connected, addr, PORT)


async def _crawl(out: Path, seeds: list[str], min_delay_s: float) -> None:
    (out.parent / f"{out.name}-seeds.txt").write_text("".join(f"{s}\n" for s in seeds))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "politecrawl", "crawl",
        "--seeds", str(out.parent / f"{out.name}-seeds.txt"), "--out", str(out),
        "--user-agent", UA, "--scope", "any", "--min-delay", str(min_delay_s),
        "--jitter", "0.01", "--delay-factor", "1", "--retry-base", "0.5", "--park-time", "1",
        "--park-after", "100",
        "--concurrency", "100", "--ip-min-delay", "off", "--max-time", str(MAX_TIME_S),
        "--dns-negative-ttl", str(NEG_TTL_S), "--resolve", f"h0.test:{PORT}:{WEB}",
        "--no-progress",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await proc.communicate()
    # 1: nothing could be fetched, as expected of the crawl of hostile and failing names only
    if proc.returncode != (1 if seeds == _hostile() else 0):
        raise SystemExit(f"crawl failed ({proc.returncode}): {err.decode()[-3000:]}")


def _hostile() -> list[str]:
    return [f"http://{n}:{PORT}/" for n in TRAPS] + NX_ORIGINS


def _jsonl(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return read_jsonl(path)


async def _inside(work: Path) -> None:
    from politecrawl.demo.web import TestWeb

    rules: dict[str, str | None] = {"h0.test": None, "nx.test": None, "h*.test": WEB, **TRAPS}
    dns = DnsServer(rules, delay_s=0.0)
    dns.start()
    hits: Counter[str] = Counter()
    traps = [await _trap(addr, hits, name) for name, addr in TRAPS.items()]
    web = TestWeb(HOSTS, PAGES, port=PORT, bind=WEB, plain=True)
    await web.start()
    hostile = _hostile()
    report: dict[str, object] = {}
    runs = (("instant", 0.0, web.seed_urls(), 2.0), ("slow", 0.1, web.seed_urls(), 2.0))
    try:
        for name, delay_s, seeds, min_delay_s in (*runs, ("guard", 0.1, hostile, 0.2)):
            dns.delay_s = delay_s
            dns.log.clear()
            hits.clear()
            first = len(web.access_log)
            out = work / name
            await _crawl(out, seeds, min_delay_s)
            served = web.access_log[first:]
            rows = _jsonl(out / "log" / "requests.jsonl") + _jsonl(out / "log" / "robots.jsonl")
            errors: dict[str, list[str]] = {}
            for row in rows:
                host = str(row["url"]).split("/")[2].split(":")[0]
                if host in TRAPS:
                    errors.setdefault(host, []).append(str(row.get("error")))
            asked = Counter(q.name for q in dns.log)
            report[name] = {
                "web_requests": len(served),
                "web_hosts": len({e.host for e in served}),
                "pinned_ok": sum(
                    1 for e in served if e.host.startswith("h0.test") and e.status == 200
                ),
                "queries_per_web_name": {
                    n: c for n, c in asked.items() if n.startswith("h") and n.endswith(".test")
                },
                "dns_asked": {n: asked[n] for n in [*TRAPS, "h0.test"]},
                "trap_connections": {n: hits[n] for n in TRAPS},
                "errors": {h: sorted(set(e)) for h, e in errors.items()},
                "nx_attempts": sum(
                    1 for row in rows if str(row["url"]).split("/")[2].startswith("nx.test")
                ),
                "nx_lookups": dns.lookups("nx.test"),
                "at": time.time(),
            }
    finally:
        await web.stop()
        for trap in traps:
            trap.close()
        dns.stop()
    (work / "report.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__" and sys.argv[1:2] == ["inside"]:
    asyncio.run(_inside(Path(sys.argv[2])))
