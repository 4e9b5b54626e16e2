"""The never-crawl list names server addresses too: a hosting company's complaint names its
addresses, not the names on them. Through the real command, judged by the server's log.

Before, ``127.0.0.1`` in the list was taken for a host name (only URLs naming that address
were refused: every name resolving to it was crawled), and ``127.0.0.0/29`` for the one
address ``127.0.0.0``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import UA
from outageweb import SitesServer

from politecrawl.polite.exclusions import NeverCrawlList
from politecrawl.storage.logs import read_jsonl


def _crawl(server: SitesServer, out: Path, never: Path, *extra: str) -> subprocess.Popen[str]:
    seeds = out.parent / "seeds.txt"
    seeds.write_text("".join(f"{u}\n" for u in server.seeds()))
    cmd = [
        sys.executable, "-m", "politecrawl", "crawl", "--seeds", str(seeds), "--user-agent", UA,
        "--out", str(out), *server.resolve_args(), "--allow-private-addresses",
        "--ip-min-delay", "off", "--no-progress", "--scope", "any", "--exclude-file", str(never),
        *extra,
    ]  # fmt: skip
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.e2e
def test_a_listed_network_gets_no_request_whatever_name_leads_there(tmp_path: Path) -> None:
    server = SitesServer(hosts=3, pages=4)
    never = tmp_path / "never.txt"
    never.write_text("# the hosting company's range\n127.0.0.0/29\n")
    try:
        proc = _crawl(server, tmp_path / "out", never, "--min-delay", "0.05", "--max-time", "30")
        _, err = proc.communicate(timeout=120)
    finally:
        server.close()
    assert server.log == [], server.log  # not even robots.txt
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["counters"]["excluded"] == 3, summary["counters"]
    assert "on the never-crawl list" in err and "private" not in err, err
    log = json.dumps(read_jsonl(tmp_path / "out" / "log" / "requests.jsonl"))
    assert "resolves only to addresses on the never-crawl list (127.0.0.1)" in log


@pytest.mark.e2e
def test_an_address_added_mid_crawl_stops_the_requests_to_it(tmp_path: Path) -> None:
    server = SitesServer(hosts=2, pages=200)
    never = tmp_path / "never.txt"
    never.write_text("# nothing yet\n")
    try:
        proc = _crawl(server, tmp_path / "out", never, "--min-delay", "0.1",
                      "--exclude-check", "0.5", "--max-time", "60")  # fmt: skip
        deadline = time.monotonic() + 60
        while len(server.log) < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        never.write_text("127.0.0.1\n")
        listed_at = time.time()
        proc.communicate(timeout=120)
    finally:
        server.close()
    late = [h for h in server.log if h.when > listed_at + 3.0]  # the check every 0.5 s, a turn
    assert len(server.log) >= 10 and late == [], late
    assert len(server.fetched().get("h0.test", ())) < 200  # it stopped well before the end


@pytest.mark.unit
def test_the_list_reads_addresses_and_networks_beside_domains(tmp_path: Path) -> None:
    path = tmp_path / "never.txt"
    path.write_text("example.com\n203.0.113.7\n10.0.0.0/8  # a range\n2001:db8::/32\nbad name\n")
    never = NeverCrawlList(path)
    assert never.domains == frozenset({"example.com"})
    assert [e[0] for e in never.errors] == [5]  # the bad line keeps its number
    assert never.refuses_address("203.0.113.7") and never.refuses_address("10.200.3.4")
    assert never.refuses_address("2001:db8::1") and not never.refuses_address("2001:db9::1")
    assert not never.refuses_address("203.0.113.8") and not never.refuses_address("not an ip")
    assert never.excludes("www.example.com") and not never.excludes("10.200.3.4.example")
