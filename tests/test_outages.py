"""Outages of the crawler's own network, TLS failures and slow servers, through the real
command (issue 28, sections 3 and 4), judged by the server's log and the output files."""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import trustme
from conftest import UA
from outageweb import SitesServer
from redis_server import redis_url  # noqa: F401  (fixture)

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e


def crawl(
    server: SitesServer,
    out: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    timeout: float = 240,
) -> subprocess.CompletedProcess[str]:
    seeds = out.parent / f"{out.name}-seeds.txt"
    seeds.write_text("".join(f"{u}\n" for u in server.seeds()))
    cmd = [
        sys.executable, "-m", "politecrawl", "crawl", "--seeds", str(seeds),
        "--user-agent", UA, "--out", str(out), *server.resolve_args(),
        "--allow-private-addresses", "--ip-min-delay", "off", "--scope", "any",
        "--no-progress", *extra,
    ]  # fmt: skip
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )


def requests_log(out: Path) -> list[dict[str, Any]]:
    return read_jsonl(out / "log" / "requests.jsonl")  # its rotated parts too, no header


def summary(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return data


def test_a_15_s_outage_of_the_network_parks_no_site_and_loses_no_page(tmp_path: Path) -> None:
    """The server of 12 sites closes its listening socket for 15 s mid-crawl (every
    connection refused, as when the crawler's own link drops), then listens again on the
    same port: the crawl pauses, probes, resumes; no site is parked or lost, every page is
    fetched, and the exit code is 0."""
    server = SitesServer(hosts=12, pages=12)
    outage: dict[str, float] = {}

    def go_away() -> None:
        time.sleep(4.0)
        outage["down"] = time.time()
        server.down()
        time.sleep(15.0)
        server.up()
        outage["up"] = time.time()

    threading.Thread(target=go_away, daemon=True).start()
    out = tmp_path / "out"
    try:
        p = crawl(server, out, "--min-delay", "0.6", "--retry-base", "1", "--max-time", "150")
    finally:
        server.close()
    assert "up" in outage, "the crawl ended before the outage did"
    assert p.returncode == 0, p.stdout + p.stderr
    s = summary(out)
    assert s["stopped_by"] == "done"
    assert s["sites_lost"] == []
    c = s["counters"]
    assert c.get("hosts_parked", 0) == 0 and c.get("sites_paused", 0) == 0, c
    assert c.get("sites_given_up", 0) == 0 and c.get("retries_exhausted", 0) == 0, c
    assert c.get("outages", 0) >= 1, c
    fetched = server.fetched()
    for host in server.names():  # every page of every site, in the end
        assert fetched.get(host) == server.page_paths(), host
    # the crawl paused: few connections were sent into the outage, each retried, none dropped
    failed = [r for r in requests_log(out) if r.get("error")]
    assert failed and all(r["outcome"] in ("retry", "retry:outage") for r in failed), failed
    assert len(failed) < 40, len(failed)
    assert "sites lost" not in p.stdout


# -- TLS -------------------------------------------------------------------------------------
def tls_server(tmp_path: Path) -> tuple[SitesServer, Path]:
    ca = trustme.CA()
    cert = ca.issue_cert("h0.test")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(ctx)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    return SitesServer(hosts=1, pages=4, tls=ctx), ca_file


def warc_headers(out: Path) -> list[dict[str, str]]:
    from warcio.archiveiterator import ArchiveIterator

    records = []
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                records.append(dict(rec.rec_headers.headers))
    return records


def test_a_certificate_that_does_not_verify_is_named_and_tls_insecure_crawls_it(
    tmp_path: Path,
) -> None:
    server, ca_file = tls_server(tmp_path)
    try:
        # a CA the crawler does not trust: named as a certificate failure, and nothing fetched
        bad = tmp_path / "untrusted"
        p = crawl(server, bad, "--min-delay", "0.05", timeout=120)
        assert p.returncode == 1, p.stdout + p.stderr
        assert "certificate" in p.stderr, p.stderr
        errors = {r.get("error") for r in requests_log(bad)}
        assert errors == {"tls:certificate"}, errors
        assert "tls:certificate" in summary(bad)["errors"]
        assert not server.fetched()

        # --tls-insecure: crawled, and every https record says the certificate was not checked
        lax = tmp_path / "insecure"
        p = crawl(server, lax, "--min-delay", "0.05", "--tls-insecure", timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        assert server.fetched()["h0.test"] == server.page_paths()
        recs = [h for h in warc_headers(lax) if h["WARC-Type"] in ("request", "response")]
        assert recs and all(h.get("WARC-TLS-Certificate-Verified") == "false" for h in recs)

        # the CA trusted (SSL_CERT_FILE): crawled, verified, no such mark
        n = len(server.hits("/"))
        ok = tmp_path / "trusted"
        env = {"SSL_CERT_FILE": str(ca_file)}
        p = crawl(server, ok, "--min-delay", "0.05", env=env, timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        assert len(server.hits("/")) == n + 1
        recs = [h for h in warc_headers(ok) if h["WARC-Type"] in ("request", "response")]
        assert recs and not any("WARC-TLS-Certificate-Verified" in h for h in recs)
    finally:
        server.close()


# -- slow servers ----------------------------------------------------------------------------
def drip_seeds(server: SitesServer) -> list[str]:
    return [f"http://{h}:{server.port}/drip" for h in server.names()]


def test_a_one_byte_a_second_server_is_cut_as_too_slow_and_not_retried(tmp_path: Path) -> None:
    """/drip sends a byte a second for 60 s, on two host names of one address: each is cut
    as too slow a few seconds into its body, once (no retry), and counted against its
    site."""
    server = SitesServer(hosts=2, pages=2, drip_s=60)
    out = tmp_path / "out"
    seeds = tmp_path / "drip.txt"
    seeds.write_text("".join(f"{u}\n" for u in drip_seeds(server)))
    started = time.monotonic()
    try:
        cmd = [
            sys.executable, "-m", "politecrawl", "crawl", "--seeds", str(seeds),
            "--user-agent", UA, "--out", str(out), *server.resolve_args(),
            "--allow-private-addresses", "--ip-min-delay", "off", "--no-progress",
            "--min-delay", "0.05", "--min-rate", "100", "--min-rate-time", "3",
        ]  # fmt: skip
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    finally:
        server.close()
    took = time.monotonic() - started
    assert took < 40, took  # not 2 x 60 s
    drips = [r for r in requests_log(out) if r["url"].endswith("/drip")]
    assert len(drips) == 2, drips  # one each: not retried
    for r in drips:
        assert r["outcome"] == "dropped:too_slow" and r["error"] == "too_slow", r
        assert r["duration_ms"] < 15_000, r
    assert len(server.hits("/drip")) == 2
    c = summary(out)["counters"]
    assert c["too_slow"] == 2, c
    # each site's one page failed, nothing else of it answered: both named lost, exit 3
    lost = summary(out)["sites_lost"]
    assert sorted(x["state"] for x in lost) == ["failed", "failed"], lost
    assert p.returncode == 3, p.stderr


def _drip_crawl(tmp_path: Path) -> tuple[SitesServer, Path, list[str]]:
    """A server whose /drip sends a byte now and then for 60 s, the crawl's output folder, and
    the command that crawls /drip alone (add the limits and --min-rate)."""
    server = SitesServer(hosts=1, pages=2, drip_s=60)
    out = tmp_path / "out"
    seeds = tmp_path / "drip.txt"
    seeds.write_text(f"http://h0.test:{server.port}/drip\n")
    args = [
        sys.executable, "-m", "politecrawl", "crawl", "--seeds", str(seeds), "--user-agent", UA,
        "--out", str(out), *server.resolve_args(), "--allow-private-addresses",
        "--ip-min-delay", "off", "--no-progress", "--min-delay", "0.05",
        # the cut request's wait counts as a response time: at the default factor (30) the
        # resume would wait minutes before asking again
        "--delay-factor", "1",
    ]  # fmt: skip
    return server, out, args


def _cut_then_asked_again(server: SitesServer, out: Path, args: list[str], why: str) -> None:
    """The first run stopped (``why``) with /drip logged cut and queued; the same command
    asks for it again (this time a rate is enforced, so it ends soon)."""
    s = summary(out)
    assert s["stopped_by"] == why and s["queued_left"] == 1, s
    cut = [r for r in requests_log(out) if r["url"].endswith("/drip")]
    assert [r["outcome"] for r in cut] == ["cut"], cut
    assert len(server.hits("/drip")) == 1
    p = subprocess.run(
        [*args, "--max-time", "60", "--min-rate", "100", "--min-rate-time", "1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert len(server.hits("/drip")) == 2, p.stderr
    again = [r for r in requests_log(out) if r["url"].endswith("/drip")]
    assert [r["outcome"] for r in again] == ["cut", "dropped:too_slow"], again


def test_max_time_cuts_the_requests_in_flight_and_a_resume_asks_again(tmp_path: Path) -> None:
    """--max-time 5 while /drip (60 s, and --min-rate off) is in flight: the crawl ends
    within a few seconds of its limit, the request is logged as cut, and the next run of the
    same command asks for it again."""
    server, out, args = _drip_crawl(tmp_path)
    try:
        started = time.monotonic()
        subprocess.run(
            [*args, "--max-time", "5", "--min-rate", "0"], capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        took = time.monotonic() - started
        assert took < 5 + 8, took  # the limit, the interpreter's start, the save
        _cut_then_asked_again(server, out, args, "max_time")
    finally:
        server.close()


def test_ctrl_c_cuts_a_request_that_hangs_and_a_resume_asks_again(tmp_path: Path) -> None:
    """Ctrl-C while /drip (60 s; --min-rate off) is in flight: the requests in flight get 2 s
    to end, then are cut, so the command exits 130 within seconds, not at the request's 60 s
    timeout; the request is logged as cut, the summary says interrupted, and the same command
    asks for it again."""
    server, out, args = _drip_crawl(tmp_path)
    try:
        cmd = [*args, "--min-rate", "0"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(600):  # bounded: until the server has the request
            if server.hits("/drip"):
                break
            time.sleep(0.05)
        assert server.hits("/drip"), "the crawl never asked for /drip"
        signalled = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        took = time.monotonic() - signalled
        assert proc.returncode == 130, err
        assert took < 30, took  # the grace, the save; the request's own timeout is 60 s
        _cut_then_asked_again(server, out, args, "interrupted")
    finally:
        server.close()


# -- losses named ----------------------------------------------------------------------------
def _refused_site_crawl(
    tmp_path: Path, *options: str, again: tuple[str, ...] | None = None
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """h0.test answers (and is crawled whole), h1.test refuses every page (403) and has 10
    URLs queued: the real command with ``options``; the process and ``sites_lost``."""
    server = SitesServer(hosts=2, pages=4, refusing=frozenset({"h1.test"}))
    out = tmp_path / "out"
    seeds = tmp_path / "seeds.txt"
    refused = [f"http://h1.test:{server.port}/p/{j}.html" for j in range(1, 11)]
    seeds.write_text("".join(f"{u}\n" for u in [server.seeds()[0], *refused]))
    cmd = [
        sys.executable, "-m", "politecrawl", "crawl", "--seeds", str(seeds), "--user-agent", UA,
        "--out", str(out), *server.resolve_args(), "--allow-private-addresses",
        "--ip-min-delay", "off", "--no-progress", "--min-delay", "0.05", "--scope", "any",
        *options,
    ]  # fmt: skip
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    finally:
        server.close()
    assert p.returncode == 3, p.stdout + p.stderr
    assert server.fetched()["h0.test"] == server.page_paths()
    if again is not None:  # the same command once more (its server gone: nothing to ask)
        p = subprocess.run([*cmd, *again], capture_output=True, text=True, timeout=120)
    return p, summary(out)["sites_lost"]


def test_a_site_given_up_is_named_in_the_summary_and_the_exit_code_is_3(tmp_path: Path) -> None:
    """h1.test refuses every page (403): paused after 5 refusals, given up after one more.
    The crawl of the other site finishes, and the command says what it lost: the printed
    summary and summary.json name h1.test with its reason and the URLs it left, exit 3."""
    p, lost = _refused_site_crawl(tmp_path, "--park-time", "0.5")
    assert [x["site"] for x in lost] == ["h1.test"], lost
    assert lost[0]["state"] == "given_up" and "refused" in lost[0]["reason"], lost
    assert lost[0]["urls_left"] == 10 - 5, lost  # the 6th refusal and the 4 never asked
    assert "h1.test: given_up" in p.stdout and "politecrawl: 1 site lost:" in p.stderr


@pytest.mark.parametrize("frontier", ["sqlite", "redis"])
def test_a_parked_site_is_named_with_the_urls_it_left(
    tmp_path: Path, frontier: str, request: pytest.FixtureRequest
) -> None:
    """h1.test refuses every page (403): parked after 5 refusals, for longer than the crawl
    may last. The summary names it parked, with the URLs it left queued, counted by the
    frontier the crawl ran on (the shared one counts them before it disconnects). Waiting on
    it, the crawl says so (``--no-progress``: no dashboard)."""
    where = ["--frontier", request.getfixturevalue("redis_url")] if frontier == "redis" else []
    p, lost = _refused_site_crawl(tmp_path, "--park-time", "3600", "--max-time", "8", *where)
    assert [(x["site"], x["state"]) for x in lost] == [("h1.test", "parked")], lost
    assert lost[0]["urls_left"] == 10 - 5, lost  # the 5 refused are done, 5 never asked
    assert "h1.test: parked" in p.stdout and "5 URLs left" in p.stdout, p.stdout
    # waiting on the parked site alone, with no dashboard: said, once, not silent
    assert p.stderr.count("nothing may be asked for") == 1, p.stderr
    assert "1 site parked after failures in a row" in p.stderr, p.stderr


def test_a_resume_while_a_site_is_still_parked_names_it(tmp_path: Path) -> None:
    """The crawl of the test above, then the same command again while h1.test is still
    parked: the resume fetches nothing, and names h1.test parked with the URLs it left,
    exit 3. Before, it said nothing lost (exit 0) and its summary replaced the one that
    had named the site."""
    p, lost = _refused_site_crawl(
        tmp_path, "--park-time", "3600", "--max-time", "8", again=("--max-time", "4")
    )
    assert p.returncode == 3, p.stdout + p.stderr
    assert [(x["site"], x["state"], x["urls_left"]) for x in lost] == [("h1.test", "parked", 5)]
    assert lost[0]["reason"].startswith("parked in an earlier run"), lost
    assert "h1.test: parked" in p.stdout, p.stdout
