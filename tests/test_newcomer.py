"""Issue 31, "The first hour on your own site", items 1 to 5: the real ``politecrawl``
command (a subprocess, as a newcomer types it) against a small site of one's own on
127.0.0.1, judged by what the server logged and what landed in the output folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from newcomerweb import newcomer_site

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

UA = "newbot/1.0 (+http://bot.example/info)"
FAST = ["--min-delay", "0.05", "--jitter", "0", "--delay-factor", "1", "--ip-min-delay", "0"]
TESTS = Path(__file__).resolve().parent


def politecrawl(
    *args: str, cwd: Path | None = None, stdin: str | None = None, isolated: bool = False
) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it; ``isolated``: as the installed ``politecrawl`` script
    starts, without the current folder on ``sys.path`` (``python -P``)."""
    flags = ["-P"] if isolated else []
    return subprocess.run(
        [sys.executable, *flags, "-m", "politecrawl", *args, "--no-progress"],
        capture_output=True, text=True, timeout=120, cwd=cwd, input=stdin,
    )  # fmt: skip


def summary(out: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((out / "summary.json").read_text())
    return data


def requests_logged(out: Path) -> list[dict[str, Any]]:
    """The request log's requests (a run's header line aside)."""
    return [rec for rec in read_jsonl(out / "log" / "requests.jsonl") if "url" in rec]


# -- item 1: fixing a mistake takes ----------------------------------------------------------
def test_resumed_crawl_admits_what_allow_private_addresses_lifts(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    with newcomer_site() as site:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(site.url + "\n")
        common = ["--seeds", str(seeds), "--user-agent", UA, "--out", out, *FAST]
        first = politecrawl("crawl", *common)
        assert first.returncode == 1
        assert "--allow-private-addresses" in first.stderr
        assert site.log == []  # refused before any request
        again = politecrawl("crawl", *common, "--allow-private-addresses")
        assert again.returncode == 0, again.stderr
        assert "resuming: 1 URL refused before as loopback/private addresses queued again" in (
            again.stdout
        )
        assert "/p6.html" in site.requests()
        assert "address_refused" not in summary(Path(out))["errors"]  # type: ignore[operator]
        n = len(site.log)
        # the same command once more: nothing left, and how to start afresh
        third = politecrawl("crawl", *common, "--allow-private-addresses")
        assert third.returncode == 0, third.stderr
        assert "nothing left to do" in third.stdout
        assert "to start afresh: give a new --out" in third.stdout
        assert "crawl finished" not in third.stdout
        assert len(site.log) == n  # and nothing was asked again


@pytest.mark.parametrize("lifted", ["scope", "never-crawl"])
def test_resumed_crawl_admits_what_scope_or_never_crawl_list_lifts(
    tmp_path: Path, lifted: str
) -> None:
    out = str(tmp_path / "out")
    never = tmp_path / "never.txt"
    never.write_text("other.test\n")
    first_opts = ["--scope", "host"]
    if lifted == "never-crawl":
        first_opts = ["--scope", "any", "--exclude-file", str(never)]
    with newcomer_site() as site:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(site.url + "\n")
        common = ["--seeds", str(seeds), "--user-agent", UA, "--out", out, *FAST,
                  "--allow-private-addresses", "--resolve", site.resolve]  # fmt: skip
        first = politecrawl("crawl", *common, *first_opts)
        assert first.returncode == 0, first.stderr
        assert site.requests("other.test") == []
        again = politecrawl("crawl", *common, "--scope", "any")
        assert again.returncode == 0, again.stderr
        why = "out of scope" if lifted == "scope" else "on the never-crawl list"
        assert f"resuming: 1 URL refused before as {why}" in again.stdout
        assert site.requests("other.test") == ["/robots.txt", "/"]
        counters = summary(Path(out))["counters"]
        assert isinstance(counters, dict) and counters["readmitted"] == 1


# -- item 2: a handler next to you ----------------------------------------------------------
def test_handler_from_the_current_folder_or_a_file_path(tmp_path: Path) -> None:
    (tmp_path / "extract.py").write_text(
        "def text_of(page):\n    yield {'title': page.title}\n", encoding="utf-8"
    )
    with newcomer_site() as site:
        for i, spec in enumerate(["extract:text_of", "./extract.py:text_of"]):
            out = f"out{i}"
            done = politecrawl(
                "crawl", site.url, "--user-agent", UA, "--out", out, *FAST, "--max-pages", "2",
                "--allow-private-addresses", "--handler", spec, cwd=tmp_path, isolated=True,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            items = (tmp_path / out / "items.jsonl").read_text().splitlines()
            assert json.loads(items[0])["title"] == "Page 1"
        bad = politecrawl(
            "crawl", site.url, "--user-agent", UA, "--out", "bad", "--allow-private-addresses",
            "--handler", "extracts:text_of", cwd=tmp_path, isolated=True,
        )  # fmt: skip
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    assert "No module named 'extracts'" in bad.stderr and "./extracts.py:function" in bad.stderr


def test_user_code_that_fails_is_said_and_counted_and_loses_no_page(tmp_path: Path) -> None:
    """A ``--relevance`` function that raises on one page and returns NaN on another, and a
    ``--handler`` that raises on a third: every page is still fetched and its links followed,
    each failure is a warning naming the page, and the summary counts them (it said nothing
    of a failing nugget function: the page scored 0 silently)."""
    (tmp_path / "mine.py").write_text(
        "def judge(doc):\n"
        "    if doc.title == 'Page 3':\n"
        "        raise ZeroDivisionError('judged by zero')\n"
        "    if doc.title in ('Page 5', 'Page 6'):\n"
        "        return 7.0  # a count of nuggets, not a score: read as 1, said once\n"
        "    return float('nan') if doc.title == 'Page 4' else 0.5\n"
        "def items(page):\n"
        "    if page.title == 'Page 2':\n"
        "        raise KeyError('no such field')\n"
        "    yield {'title': page.title}\n",
        encoding="utf-8",
    )
    with newcomer_site() as site:
        done = politecrawl(
            "crawl", site.url, "--user-agent", UA, "--out", "out", *FAST,
            "--allow-private-addresses", "--relevance", "./mine.py:judge",
            "--handler", "./mine.py:items", cwd=tmp_path, isolated=True,
        )  # fmt: skip
        asked = site.requests()
    assert done.returncode == 0, done.stderr
    assert {f"/p{n}.html" for n in range(2, 7)} <= set(asked)  # the chain followed through
    counters = summary(tmp_path / "out")["counters"]
    assert isinstance(counters, dict)
    assert counters["relevance_errors"] == 2 and counters["handler_errors"] == 1
    assert "your code failed     --handler on 1 page, --relevance on 2 pages" in done.stdout
    assert "ZeroDivisionError('judged by zero')" in done.stderr
    assert "p3.html" in done.stderr and "returned NaN on" in done.stderr
    assert done.stderr.count("outside [0, 1]: read as 1 (said once)") == 1, done.stderr
    assert "page handler failed" in done.stderr and "no such field" in done.stderr
    items = (tmp_path / "out" / "items.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["title"] for line in items) == [
        "Page 1", "Page 3", "Page 4", "Page 5", "Page 6"]  # fmt: skip


# -- item 3: one line, not a traceback --------------------------------------------------------
def test_unwritable_out_is_one_line_and_exit_1(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    readonly = tmp_path / "ro"
    readonly.mkdir()
    base = [sys.executable, "-m", "politecrawl", "crawl", "http://127.0.0.1:9/",
            "--user-agent", UA, "--no-progress"]  # fmt: skip
    under_file = subprocess.run(
        [*base, "--out", str(tmp_path / "afile" / "out")], capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    # a read-only file system, as a new --out under a read-only location (root ignores modes)
    script = f"mount -t tmpfs -o ro tmpfs {readonly} && exec \"$@\""
    read_only = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", *base, "--out", str(readonly / "new")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    for done, why in ((under_file, "Not a directory"), (read_only, "Read-only file system")):
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith("politecrawl: cannot create the output folder")
        assert why in done.stderr


# -- item 4: the pace, said at the start; a mistyped name given up at once --------------------
def test_the_pace_is_stated_at_the_start(tmp_path: Path) -> None:
    with newcomer_site() as site:
        done = politecrawl(
            "crawl", site.url, "--user-agent", UA, "--out", str(tmp_path / "o"),
            "--allow-private-addresses", "--max-pages", "530", "--max-time", "1",
        )  # fmt: skip
    first = done.stdout.splitlines()[0]
    assert first.startswith("pace: one request per site every 15 s at most (--min-delay")
    assert "236 pages an hour per site" in first
    assert "the seeds name 1 site: 530 pages (--max-pages) take at least 2.2 h" in first
    assert "--max-time 1 s allows at most 0" in first


# a second address on lo: getaddrinfo's AI_ADDRCONFIG (aiohttp asks for it) takes a host
# whose only IPv4 address is 127.0.0.1 for one without IPv4, and answers "no such name"
# without asking DNS at all
NETNS_SCRIPT = """
set -e
ip link set lo up
ip addr add 10.254.0.1/32 dev lo
echo "nameserver 127.0.0.1" > "$1/resolv.conf"
mount --bind "$1/resolv.conf" /etc/resolv.conf
python3 "$2/dnsstub.py" 60 > "$1/dns.out" &
dns=$!
trap 'kill $dns' EXIT
for i in $(seq 50); do grep -q ready "$1/dns.out" && break; sleep 0.1; done
shift 2
"$@"
"""


def in_own_netns(tmp: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """``args`` in a network namespace of its own (loopback only), whose DNS server is
    tests/dnsstub.py: no lookup leaves the machine."""
    return subprocess.run(
        ["unshare", "-n", "-m", "sh", "-c", NETNS_SCRIPT, "sh", str(tmp), str(TESTS), *args],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def test_a_mistyped_host_name_is_given_up_at_once(tmp_path: Path) -> None:
    out = tmp_path / "o"
    # the defaults (15 s a site): the old code waited out 3 robots.txt tries, about 300 s
    done = in_own_netns(
        tmp_path, sys.executable, "-m", "politecrawl", "crawl", "http://docs.pyton.example/",
        "--user-agent", UA, "--out", str(out), "--no-progress", timeout=90,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "no such host" in done.stderr and "ssl:default" not in done.stderr
    (rec,) = requests_logged(out)
    assert rec["error"] == "no_such_host"
    assert rec["error_detail"] == (
        "no such host: docs.pyton.example (DNS says the name does not exist)"
    )
    assert summary(out)["stopped_by"] == "done"


def test_user_code_that_exits_or_interrupts_is_a_failure_of_that_page(tmp_path: Path) -> None:
    """``sys.exit()`` in a page handler, ``SystemExit`` and ``KeyboardInterrupt`` raised by a
    nugget function: each a failure of that page, said and counted, every page fetched and
    logged. Before, SystemExit ended the crawl with exit 3 and no summary, and a
    KeyboardInterrupt killed the site's turn: a page asked and never logged, the site
    dropped in silence."""
    (tmp_path / "quits.py").write_text(
        "import sys\n"
        "def judge(doc):\n"
        "    if doc.title == 'Page 3':\n"
        "        sys.exit(3)\n"
        "    if doc.title == 'Page 4':\n"
        "        raise KeyboardInterrupt\n"
        "    return 0.5\n"
        "def items(page):\n"
        "    if page.title == 'Page 2':\n"
        "        sys.exit('enough')\n"
        "    yield {'title': page.title}\n",
        encoding="utf-8",
    )
    with newcomer_site() as site:
        done = politecrawl(
            "crawl", site.url, "--user-agent", UA, "--out", "out", *FAST,
            "--allow-private-addresses", "--relevance", "./quits.py:judge",
            "--handler", "./quits.py:items", cwd=tmp_path, isolated=True,
        )  # fmt: skip
        asked = site.requests()
    assert done.returncode == 0, done.stderr
    assert {f"/p{n}.html" for n in range(2, 7)} <= set(asked)
    logged = {r["url"].rsplit("/", 1)[1] for r in requests_logged(tmp_path / "out")}
    assert {f"p{n}.html" for n in range(2, 7)} <= logged, logged
    counters = summary(tmp_path / "out")["counters"]
    assert isinstance(counters, dict)
    assert counters["relevance_errors"] == 2 and counters["handler_errors"] == 1, counters


def test_a_failed_lookup_is_not_taken_for_a_missing_name(tmp_path: Path) -> None:
    """SERVFAIL (the lookup failed, it may pass) is not NXDOMAIN: the site waits, kept."""
    out = tmp_path / "o"
    done = in_own_netns(
        tmp_path, sys.executable, "-m", "politecrawl", "crawl", "http://servfail.example/",
        "--user-agent", UA, "--out", str(out), "--no-progress", "--max-time", "3", timeout=90,
    )  # fmt: skip
    recs = requests_logged(out)
    assert recs and all(r["error"] == "dns" for r in recs), done.stderr
    assert "ssl:default" not in recs[0]["error_detail"]
    assert recs[0]["error_detail"].startswith("DNS lookup of servfail.example failed")
    assert summary(out)["queued_left"] == 1  # not dropped: asked again later


def test_an_unreachable_robots_txt_is_given_up_after_three_tries(tmp_path: Path) -> None:
    """Slow answers make the site's delay longer than robots.txt's retry time: the third
    failure still ends it (it used to be asked again at every turn, for ever)."""
    out, seeds = tmp_path / "o", tmp_path / "seeds.txt"
    with newcomer_site() as site:
        seeds.write_text(f"http://slow.test:{site.port}/\n")
        done = politecrawl(
            "crawl", "--seeds", str(seeds), "--user-agent", UA, "--out", str(out),
            "--min-delay", "0.1", "--jitter", "0", "--delay-factor", "3", "--ip-min-delay", "0",
            "--retry-base", "0.5",  # robots.txt is asked again as a page: sooner than the delay
            "--allow-private-addresses", "--resolve", site.resolve, "--max-time", "60",
        )  # fmt: skip
        assert site.requests("slow.test") == ["/robots.txt"] * 3
    assert summary(out)["stopped_by"] == "done", done.stderr
    assert summary(out)["counters"]["robots_unavailable"] == 1  # type: ignore[index]


# -- item 5: a missing robots.txt is not an error ---------------------------------------------
def test_robots_txt_404_is_absent_not_an_error(tmp_path: Path) -> None:
    out = tmp_path / "o"
    with newcomer_site() as site:
        done = politecrawl(
            "crawl", site.url, "--user-agent", UA, "--out", str(out), *FAST,
            "--allow-private-addresses",
        )  # fmt: skip
        assert site.requests()[0] == "/robots.txt"
    assert done.returncode == 0, done.stderr
    s = summary(out)
    assert s["errors"] == {"http_404": 1}  # /gone.html, the one page really missing
    assert s["robots_absent"] == 1
    assert "robots.txt absent    1" in done.stdout
    assert "errors               http_404 1" in done.stdout
    report = subprocess.run(
        [sys.executable, "-m", "politecrawl", "report", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    html = (out / "report.html").read_text()
    assert "<div class=card><b>1</b><span>errors · summary.json</span></div>" in html
    assert "robots absent" in html



def test_a_resume_with_another_topic_is_refused(tmp_path: Path) -> None:
    """A focused crawl resumed with another --topic: its queue is ranked, and its relevant
    pages counted, by the first. Before, the resume took the new topic in silence, fetched
    in the old order and stopped at --target-relevant counting the old topic's pages."""
    with newcomer_site() as site:
        common = ["crawl", site.url, "--user-agent", UA, "--out", "out", *FAST,
                  "--allow-private-addresses"]  # fmt: skip
        first = politecrawl(*common, "--topic", "pages", "--max-pages", "2", cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        asked = len(site.requests())
        other = politecrawl(*common, "--topic", "rivers", cwd=tmp_path)
        assert other.returncode == 2, other.stderr
        assert other.stderr.strip().count("\n") == 0, other.stderr
        assert "made with --topic 'pages'" in other.stderr, other.stderr
        assert len(site.requests()) == asked  # nothing asked
        same = politecrawl(*common, "--topic", "pages", "--max-pages", "4", cwd=tmp_path)
        assert same.returncode == 0, same.stderr
        assert len(site.requests()) > asked
