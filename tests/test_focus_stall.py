"""A focused crawl whose best links point at hosts that fail keeps a breadth-first pace.

The slice of the documentation bed (bench/docbed.py: Python's documentation and four small
sites, served from the installed Debian packages on loopback hosts) is served with its links to
the outside world left in place, each outside host moved under ``.invalid`` on a loopback
port nobody listens on (a socket bound, never listening): every such host fails, as names that
do not resolve do on the web, and no lookup leaves the machine. The real CLI crawls it from the
portal page with ``--scope any`` (the outside links are followed), once ``--strategy focused
--topic ...`` and once ``--strategy bfs``, to the same page budget. Many of the best-scored
links (bugs.python.org, peps.python.org, ...) point at those failing hosts; the defer rule
must not hold the bed's sites back for them.

Two more unkind webs, each judged the same way: the site where the topic's pages are goes
away mid-crawl (``docbed.py serve --die python:40``), and the outside links keep their real
names, which a DNS server of the test's own answers NXDOMAIN for after 100 ms, or never
answers at all (a dead name server: every lookup times out), in a network namespace with only
``lo`` (nothing can leave the machine). The first three failed before the defer rule learned
to ignore failing sites: 36, 68 and 38 pages in 100 s.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))

import docbed
from redis_server import redis_url  # noqa: F401  (fixture)

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

UA = "bedbot/1.0 (+http://bench.example/bot)"
PAGES = 200
MAX_TIME_S = 100  # the focused crawl of the stall fetched ~40 pages in 120 s


@contextmanager
def serving(
    *options: str, dead_links: bool = True, hang: bool = False
) -> Iterator[tuple[int, int]]:
    """(bed port, dead port): the slice served with ``options``. ``dead_links``: its outside
    links point at a port held bound and never listening (connections refused); else they
    keep their real names (the dead port is then 0). ``hang``: the dead port listens and
    never accepts, so each connection is made (the kernel's backlog) and never answered, as
    a hung server's or a firewalled one's: every request runs into the read timeout."""
    with socket.socket() as dead:
        dead.bind(("127.0.0.1", 0))
        if hang:
            dead.listen(4096)
        dead_port = dead.getsockname()[1] if dead_links else 0
        moved = ["--dead-port", str(dead_port)] if dead_links else []
        server = subprocess.Popen(
            [sys.executable, str(Path(docbed.__file__)), "serve", "--bed", "slice",
             *moved, *options],
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            assert server.stdout is not None
            yield int(server.stdout.readline().strip().rsplit(":", 1)[1]), dead_port
        finally:
            server.terminate()
            server.wait(10)


@pytest.fixture(scope="module")
def bed() -> Iterator[tuple[int, int]]:
    """The slice with dead outside links, for the module's lifetime."""
    gone = docbed.missing("slice")
    assert not gone, f"documentation bed not installed: apt-get install {' '.join(gone)}"
    with serving() as served:
        yield served


def run_crawl(
    tmp: Path, port: int, strategy: str, topic: str, pages: int, *extra: str
) -> tuple[float, Path, subprocess.CompletedProcess[str]]:
    """The real command, from the portal, with ``--scope any`` (no allow-list: the outside
    links are followed, and fail): (seconds, output folder, process)."""
    seeds = tmp / "seeds.txt"
    seeds.write_text(f"http://portal.{docbed.TLD}:{port}/\n")
    out = tmp / strategy
    args = [
        "--seeds", str(seeds), "--user-agent", UA, "--out", str(out),
        "--topic", topic, "--strategy", strategy, "--max-pages", str(pages),
        "--max-time", str(MAX_TIME_S),
        "--min-delay", "0.01", "--jitter", "0", "--delay-factor", "1", "--scope", "any",
        "--allow-private-addresses", "--no-progress", "--ip-min-delay", "off", *extra,
    ]  # fmt: skip
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "politecrawl", "crawl", *args],
        capture_output=True,
        text=True,
        timeout=MAX_TIME_S + 60,
    )
    return time.monotonic() - t0, out, proc


def crawl(
    tmp: Path,
    bed: tuple[int, int],
    strategy: str,
    topic: str,
    may_lose: tuple[str, ...] = (),
    pages: int = PAGES,
    extra: tuple[str, ...] = (),
) -> tuple[float, Path]:
    """A crawl of the bed with the outside hosts pinned to its dead port."""
    port, dead_port = bed
    took, out, proc = run_crawl(
        tmp, port, strategy, topic, pages,
        "--resolve", f"*.{docbed.TLD}:{port}:127.0.0.1",
        "--resolve", f"*.invalid:{dead_port}:127.0.0.1", *extra,
    )  # fmt: skip
    # exit 3 names the sites lost: only the dead outside hosts may be
    lost = json.loads((out / "summary.json").read_text())["sites_lost"]
    assert proc.returncode == (3 if lost else 0), proc.stderr[-2000:]
    assert all(str(s["site"]).endswith((".invalid", *may_lose)) for s in lost), lost
    return took, out


def requests_of(out: Path) -> list[dict[str, object]]:
    return read_jsonl(out / "log" / "requests.jsonl")


def page_rows(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """The requests that fetched a page: answered, robots.txt aside."""
    return [
        r for r in rows
        if r["status"] is not None and not str(r["url"]).endswith("/robots.txt")
    ]  # fmt: skip


def pages_of(rows: list[dict[str, object]]) -> list[str]:
    """The pages fetched."""
    return [str(r["url"]) for r in page_rows(rows)]


@pytest.mark.parametrize("frontier", ["sqlite", "redis"])
def test_focused_crawl_keeps_pace_when_best_links_fail(
    tmp_path: Path, bed: tuple[int, int], frontier: str, request: pytest.FixtureRequest
) -> None:
    """``redis``: the focused crawl on the shared frontier, which keeps the budget policy
    across its shards (breadth-first runs on SQLite either way)."""
    topic = next(t for t in docbed.TOPICS if t.name == "concurrency")
    took: dict[str, float] = {}
    found: dict[str, int] = {}
    for strategy in ("bfs", "focused"):
        extra: tuple[str, ...] = ()
        if frontier == "redis" and strategy == "focused":
            url = request.getfixturevalue("redis_url")
            extra = ("--frontier", url, "--crawl-id", f"stall-{tmp_path.name}")
        took[strategy], out = crawl(tmp_path, bed, strategy, topic.query, extra=extra)
        summary = json.loads((out / "summary.json").read_text())
        rows = requests_of(out)
        hosts = {urlsplit(str(r["url"])).hostname or "" for r in rows}
        # nothing but the bed and its dead outside hosts was asked: no lookup left the machine
        assert all(h.endswith((f".{docbed.TLD}", ".invalid")) for h in hosts), hosts
        dead = [r for r in rows if ".invalid" in str(r["url"])]
        assert len({urlsplit(str(r["url"])).hostname for r in dead}) >= 10, strategy
        assert all(r["status"] is None and r["error"] for r in dead)  # each failed
        assert summary["stopped_by"] == "max_pages", (strategy, summary["pages_fetched"])
        pages = pages_of(rows)
        assert len(pages) == PAGES, (strategy, len(pages))
        found[strategy] = sum(docbed.is_relevant(topic, u) for u in pages)
    # a breadth-first pace: loosely (a busy machine), within 3x breadth-first's time
    assert took["focused"] <= 3 * took["bfs"] + 20, took
    assert found["focused"] > found["bfs"], found


def test_focused_crawl_keeps_pace_when_outside_hosts_never_answer(tmp_path: Path) -> None:
    """The outside hosts accept the connection and never answer (the web's usual dead link: a
    firewall or a hung server, not a refusal): each request waits for the read timeout (20 s).
    The bed's pages must not wait behind them: every page of the budget is asked before the
    first of those requests times out (and the crawl, its pages fetched, cuts them: it does not
    wait out their timeouts). Before slow requests stopped counting against
    ``--concurrency`` (``Fetcher.slow``) the hung requests held the 64 turns, and 200 pages
    took 64 s breadth-first and 55 s focused (3.6 s when the outside hosts refuse at once)."""
    gone = docbed.missing("slice")
    assert not gone, f"documentation bed not installed: apt-get install {' '.join(gone)}"
    topic = next(t for t in docbed.TOPICS if t.name == "concurrency")
    found: dict[str, int] = {}
    with serving(hang=True) as bed:
        for strategy in ("bfs", "focused"):
            _, out = crawl(tmp_path, bed, strategy, topic.query)
            summary = json.loads((out / "summary.json").read_text())
            assert summary["stopped_by"] == "max_pages", (strategy, summary["pages_fetched"])
            rows = requests_of(out)
            dead = [r for r in rows if ".invalid" in str(r["url"])]
            assert len({urlsplit(str(r["url"])).hostname for r in dead}) >= 10, strategy
            # each timed out, or was cut when the crawl had its pages (queued for a resume)
            assert all(r["status"] is None and r["error"] in ("timeout", "cut") for r in dead)
            pages = page_rows(rows)
            assert len(pages) == PAGES, (strategy, len(pages))
            timed_out = [_at(r) + float(str(r["duration_ms"])) / 1000 for r in dead
                         if r["error"] == "timeout"]  # fmt: skip
            last_page = max(_at(r) for r in pages)
            assert not timed_out or last_page < min(timed_out), (strategy, last_page)
            found[strategy] = sum(docbed.is_relevant(topic, str(r["url"])) for r in pages)
    assert found["focused"] > found["bfs"], found


def _at(row: dict[str, object]) -> float:
    """When a logged request began, in seconds."""
    return datetime.fromisoformat(str(row["time"])).timestamp()


DIES_AFTER = 40  # requests to python.bed, the site of the topic's pages, before it goes away
GONE_PAGES = 150  # the other sites have ~230 pages: the budget can be met without python.bed
READ_TIMEOUT_S = 20.0  # the crawler's default: how long a request with no answer is waited on


@pytest.mark.parametrize(("how", "frontier"), [("drops", "sqlite"), ("hangs", "sqlite"),
                                               ("hangs", "redis")])  # fmt: skip
def test_focused_crawl_keeps_pace_when_its_best_site_goes_away(
    tmp_path: Path, how: str, frontier: str, request: pytest.FixtureRequest
) -> None:
    """python.bed, where the topic's pages are, answers 40 requests and then drops every
    connection (``drops``), or holds every further request open and never answers
    (``hangs``: each waits for the read timeout, 20 s): the focused crawl, which was spending
    its budget there, must go on with the other sites at a breadth-first pace. A site that
    drops its connections is named lost; a hung one's requests still waiting when the crawl
    has its pages are cut, and its URLs stay queued for a resume."""
    gone = docbed.missing("slice")
    assert not gone, f"documentation bed not installed: apt-get install {' '.join(gone)}"
    topic = next(t for t in docbed.TOPICS if t.name == "concurrency")
    took: dict[str, float] = {}
    hang = ("--hang",) if how == "hangs" else ()
    for strategy in ("bfs", "focused"):
        extra: tuple[str, ...] = ()
        if frontier == "redis" and strategy == "focused":
            url = request.getfixturevalue("redis_url")
            extra = ("--frontier", url, "--crawl-id", f"gone-{tmp_path.name}")
        with serving("--die", f"python:{DIES_AFTER}", *hang) as bed:
            took[strategy], out = crawl(
                tmp_path, bed, strategy, topic.query, ("python.bed",), GONE_PAGES, extra
            )
        summary = json.loads((out / "summary.json").read_text())
        assert summary["stopped_by"] == "max_pages", (strategy, summary["pages_fetched"])
    # the focused crawl went to python.bed first and saw it go away
    rows = requests_of(out)
    python = [r for r in rows if "//python.bed" in str(r["url"])]
    assert len([r for r in python if r["status"] is not None]) <= DIES_AFTER
    assert sum(1 for r in python if r["status"] is None and r["error"]) >= 1
    lost = {str(s["site"]) for s in summary["sites_lost"]}
    if how == "drops":
        assert any(site.startswith("python.bed") for site in lost), lost
    else:
        hung = [r for r in python if r["status"] is None]
        assert all(r["error"] in ("timeout", "cut") for r in hung)
        assert summary["queued_left"] > 0
        # the others' pages did not wait behind the hung site's best URLs for its timeout
        last_page = max(_at(r) for r in page_rows(rows))
        assert last_page < min(_at(r) for r in hung) + READ_TIMEOUT_S, last_page
    assert took["focused"] <= 3 * took["bfs"] + 20, took


# -- the same, with outside names that do not resolve, asked of a DNS server of our own --------

DNS_DELAY_S = 0.1  # every answer, NXDOMAIN or not, after 100 ms: the web's lookups are slow


@pytest.mark.parametrize("dns_mode", ["nxdomain", "silent"])
def test_focused_crawl_keeps_pace_when_outside_names_do_not_resolve(
    tmp_path: Path, dns_mode: str
) -> None:
    """The outside links keep their real host names (bugs.python.org, ...); inside a network
    namespace (only ``lo``) our DNS server answers NXDOMAIN for each after 100 ms, as names
    that are gone do on the web (``nxdomain``), or never answers for them at all, as a dead
    name server does: every lookup runs into the resolver's timeout (``silent``). The bed's
    own names resolve through it too (no ``--resolve``). Focused keeps breadth-first's pace
    and finds more."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from dnsserver import in_netns, netns_possible

    if not netns_possible():
        pytest.skip("unshare -n -m is not possible here (needs root and util-linux)")
    gone = docbed.missing("slice")
    assert not gone, f"documentation bed not installed: apt-get install {' '.join(gone)}"
    cmd = in_netns([sys.executable, str(Path(__file__).resolve()), "inside", str(tmp_path),
                    dns_mode], work=tmp_path)  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=2 * MAX_TIME_S + 180)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    report = json.loads((tmp_path / "report.json").read_text())
    bfs, focused = report["bfs"], report["focused"]
    for run in (bfs, focused):
        assert run["stopped_by"] == "max_pages", run
        assert run["pages"] == PAGES, run
        # the outside names were followed and asked of the DNS server, and none resolved
        assert run["nx_names_asked"] >= 10, run
        assert run["outside_requests_answered"] == 0, run
        # each dead name is a dead link, counted in the summary (a name that does not exist,
        # or a lookup that failed); no site of the bed was lost
        assert run[dns_mode] >= 10 and run["bed_sites_lost"] == 0, run
    assert focused["took"] <= 3 * bfs["took"] + 20, (focused["took"], bfs["took"])
    assert focused["relevant"] > bfs["relevant"], (focused["relevant"], bfs["relevant"])


def _inside(work: Path, dns_mode: str) -> None:
    """In the namespace: the bed (outside links as they are), the DNS server, two crawls."""
    from dnsserver import DnsServer

    rules: dict[str, str | None] = {f"*.{docbed.TLD}": "127.0.0.1"}
    dns = DnsServer(rules, delay_s=DNS_DELAY_S, silent=dns_mode == "silent")
    dns.start()
    topic = next(t for t in docbed.TOPICS if t.name == "concurrency")
    report: dict[str, object] = {}
    try:
        with serving(dead_links=False) as (port, _):
            for strategy in ("bfs", "focused"):
                first = len(dns.log)
                took, out, proc = run_crawl(work, port, strategy, topic.query, PAGES)
                summary = json.loads((out / "summary.json").read_text())
                assert proc.returncode == (3 if summary["sites_lost"] else 0), proc.stderr[-2000:]
                rows = requests_of(out)
                pages = pages_of(rows)
                outside = [r for r in rows if not (urlsplit(str(r["url"])).hostname or "")
                           .endswith(f".{docbed.TLD}")]  # fmt: skip
                asked = {q.name for q in dns.log[first:]}
                report[strategy] = {
                    "took": took,
                    "stopped_by": summary["stopped_by"],
                    "pages": len(pages),
                    "relevant": sum(docbed.is_relevant(topic, u) for u in pages),
                    "nx_names_asked": len({n for n in asked if not n.endswith(f".{docbed.TLD}")}),
                    "outside_requests_answered": sum(1 for r in outside if r["status"] is not None),
                    "nxdomain": summary["errors"].get("no_such_host", 0),
                    "silent": summary["errors"].get("dns", 0),
                    "bed_sites_lost": sum(f".{docbed.TLD}" in str(s["site"])
                                          for s in summary["sites_lost"]),
                    "reasons": sorted({str(s["reason"]) for s in summary["sites_lost"]})[:5],
                }  # fmt: skip
    finally:
        dns.stop()
    (work / "report.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__" and sys.argv[1:2] == ["inside"]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    _inside(Path(sys.argv[2]), sys.argv[3])
