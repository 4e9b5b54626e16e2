"""``log``, ``log-stats`` and ``report`` on damaged crawl folders, through the real command.

A real crawl's folder (``politecrawl demo``) is copied and damaged as disks, crashes and hands
damage them; each tool must read what is left, print its figures, exit 0 and say on stderr
(and in ``--json``) what it could not read, one line per damaged file. A property feeds the
tools records of any shape: they never raise, and never print a server's control character.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from politecrawl.storage.logs import LogDamage
from politecrawl.tools import complaints, logstats
from politecrawl.tools.report.page import render

ROTATED = "requests.2026-11-28T000000.jsonl.gz"
TRACEBACK = "Traceback (most recent call last)"
WARNING = "politecrawl: warning: "


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "politecrawl", *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "out"
    p = run("demo", "--hosts", "6", "--pages", "6", "--out", str(out))
    assert p.returncode == 0, p.stderr
    return out


def _copy(demo: Path, tmp_path: Path) -> tuple[Path, list[bytes]]:
    out = tmp_path / "crawl"
    shutil.copytree(demo, out)
    return out, (out / "log" / "requests.jsonl").read_bytes().splitlines(keepends=True)


def _rotate_half(out: Path, lines: list[bytes], packed: bytes | None = None) -> int:
    """The first half of the request log moved to a rotated file (``packed``: its bytes as
    given, else gzip of that half); returns how many lines went there."""
    half = len(lines) // 2
    (out / "log" / ROTATED).write_bytes(packed or gzip.compress(b"".join(lines[:half])))
    (out / "log" / "requests.jsonl").write_bytes(b"".join(lines[half:]))
    return half


def _tools(out: Path, *, differs: bool = False) -> dict[str, list[str]]:
    """Each tool on the folder: each must have done its work (exit 0, no traceback); what
    each warned of. The report also says when the log's figures differ from summary.json's
    (its cards show summary.json's): checked here, with ``differs``, and left out."""
    ran = {
        "log": run("log", str(out), "--host", "h0.test"),
        "log-stats": run("log-stats", str(out)),
        "report": run("report", str(out)),
    }
    warned = {}
    for name, p in ran.items():
        assert p.returncode == 0 and TRACEBACK not in p.stderr, (name, p.stderr)
        warned[name] = [x for x in p.stderr.splitlines() if x.startswith(WARNING)]
    said = [x for x in warned["report"] if x.startswith(f"{WARNING}the log and summary.json")]
    assert len(said) == differs, warned["report"]
    warned["report"] = [x for x in warned["report"] if x not in said]
    return warned


def _stats(out: Path) -> dict[str, Any]:
    p = run("log-stats", str(out), "--json")
    assert p.returncode == 0, p.stderr
    stats: dict[str, Any] = json.loads(p.stdout)
    return stats


def _requests(lines: list[bytes]) -> int:
    return sum(b'"record":"header"' not in x for x in lines)


@pytest.mark.e2e
def test_corrupt_rotated_gz_is_named_and_the_rest_is_read(demo: Path, tmp_path: Path) -> None:
    """One byte flipped in the deflate data (zlib.error): every tool reads the current file
    and names the rotated one; --json has the same under "damage"."""
    out, lines = _copy(demo, tmp_path)
    packed = bytearray(gzip.compress(b"".join(lines[: len(lines) // 2])))
    packed[20] ^= 0xFF
    half = _rotate_half(out, lines, bytes(packed))
    for name, warned in _tools(out, differs=True).items():
        (line,) = warned
        assert f"log/{ROTATED}: unreadable (corrupt compressed data" in line, (name, line)
    stats = _stats(out)
    assert stats["requests"] == _requests(lines[half:])
    (said,) = stats["damage"]
    assert said["file"] == f"log/{ROTATED}" and said["unreadable_after_line"] == 0
    log = json.loads(run("log", str(out), "--host", "h0.test", "--json").stdout)
    assert log["damage"] == stats["damage"]


@pytest.mark.e2e
def test_plain_text_gz_loses_no_request(demo: Path, tmp_path: Path) -> None:
    out, lines = _copy(demo, tmp_path)
    _rotate_half(out, lines, b"".join(lines[: len(lines) // 2]))
    assert _stats(out)["requests"] == _requests(lines)  # main dropped this half silently
    for warned in _tools(out).values():
        assert warned == [
            f"{WARNING}log/{ROTATED}: not gzip-compressed as its name says: read as plain text"
        ]


@pytest.mark.e2e
def test_truncated_gz_is_read_up_to_the_cut_and_said(demo: Path, tmp_path: Path) -> None:
    out, lines = _copy(demo, tmp_path)
    packed = gzip.compress(b"".join(lines[: len(lines) // 2]))
    half = _rotate_half(out, lines, packed[: len(packed) * 2 // 3])
    stats = _stats(out)
    (said,) = stats["damage"]
    assert said["unreadable"] == "the compressed data ends early"
    kept = said["unreadable_after_line"]
    assert 0 < kept < half
    assert _requests(lines[:kept] + lines[half:]) == stats["requests"]  # as far as it goes
    for warned in _tools(out, differs=True).values():
        (line,) = warned
        assert f"unreadable after line {kept} (the compressed data ends early)" in line


@pytest.mark.e2e
def test_torn_and_garbage_lines_are_counted(demo: Path, tmp_path: Path) -> None:
    """A log cut mid-line, a torn line mid-file and garbage lines: the tools say how many
    lines they skipped."""
    out, lines = _copy(demo, tmp_path)
    torn = lines[10][: len(lines[10]) // 2]  # a line whose end never came, then the next
    cut = lines[-1][: len(lines[-1]) // 2]  # the file cut in the middle of its last line
    damaged = [*lines[:10], torn + lines[11], b"\x00\x00\x00\n", b"GET / HTTP/1.1\n"]
    (out / "log" / "requests.jsonl").write_bytes(b"".join([*damaged, *lines[12:-1], cut]))
    for warned in _tools(out, differs=True).values():
        assert warned == [f"{WARNING}log/requests.jsonl: 4 damaged lines skipped"]
    assert _stats(out)["requests"] == _requests(lines) - 3  # lines 10, 11 and the last


@pytest.mark.e2e
def test_records_of_the_wrong_shape_are_skipped_and_counted(demo: Path, tmp_path: Path) -> None:
    """Times that are not times (missing, a number, true, 1e18, NaN), a duration that is a
    word: every tool ran through them before; now each skips and counts them."""
    out, lines = _copy(demo, tmp_path)
    h0 = next(json.loads(x) for x in lines if b"//h0.test" in x)
    bad = [
        {k: v for k, v in h0.items() if k != "time"},
        {**h0, "time": 1764400000},
        {**h0, "time": True},
        {**h0, "time": 1e18},
        {**h0, "duration_ms": "fast"},
        {**h0, "status": "200"},
    ]
    text = b"".join(json.dumps(r).encode() + b"\n" for r in bad)
    text += json.dumps(h0).replace(h0["time"], "NaN").encode() + b"\n"  # "time": "NaN"
    text += json.dumps(h0).replace(f'"{h0["time"]}"', "NaN").encode() + b"\n"  # "time": NaN
    (out / "log" / "requests.jsonl").write_bytes(b"".join(lines) + text)
    for warned in _tools(out).values():
        assert warned == [f"{WARNING}log/requests.jsonl: 8 records of the wrong shape skipped"]
    assert _stats(out)["requests"] == _requests(lines)


@pytest.mark.e2e
def test_a_log_that_is_a_directory_is_said(demo: Path, tmp_path: Path) -> None:
    out, _ = _copy(demo, tmp_path)
    (out / "log" / "requests.jsonl").unlink()
    (out / "log" / "requests.jsonl").mkdir()
    for warned in _tools(out, differs=True).values():
        assert warned == [
            f"{WARNING}log/requests.jsonl: unreadable (Is a directory): nothing read from it"
        ]


def _cards(page: str) -> dict[str, tuple[str, str]]:
    """The report's cards: name -> (figure, where it came from)."""
    found = re.findall(r"<div class=card><b>([^<]*)</b><span>([^<]*) · ([^<]*)</span>", page)
    return {name: (figure, source) for figure, name, source in found}


@pytest.mark.e2e
def test_report_says_where_each_figure_comes_from(demo: Path, tmp_path: Path) -> None:
    """With summary.json, its figures, labelled; without it, the log's, labelled, and equal
    to what the crawl itself counted (so the fallback counts as the crawl does)."""
    out, _ = _copy(demo, tmp_path)
    summary = json.loads((out / "summary.json").read_text())
    told = {
        "requests": str(summary["requests"]),
        "pages fetched": str(summary["pages_fetched"]),
        "stored": str(summary["stored"]),
        "errors": str(sum(summary["errors"].values())),
    }
    p = run("report", str(out))
    assert p.returncode == 0 and WARNING not in p.stderr  # the log and summary.json agree
    cards = _cards((out / "report.html").read_text())
    assert {k: cards[k] for k in told} == {k: (v, "summary.json") for k, v in told.items()}
    assert cards["hosts"][1] == cards["time span"][1] == "log"
    (out / "summary.json").unlink()
    p = run("report", str(out))
    page = (out / "report.html").read_text()
    assert {k: _cards(page)[k] for k in told} == {k: (v, "log") for k, v in told.items()}
    assert p.stderr.splitlines() == [
        f"{WARNING}summary.json: there is none (the crawl is running, or was killed): the "
        "figures are counted from the log"
    ]
    (out / "summary.json").write_text('{"requests": 5, "pages_fetched": ')  # torn
    p = run("report", str(out))
    assert "summary.json: damaged (not JSON): the figures are counted from the log" in p.stderr
    (out / "summary.json").write_text(json.dumps({**summary, "requests": 5}))
    p = run("report", str(out))
    assert f"differ (requests {told['requests']} / 5: log / summary.json)" in p.stderr


@pytest.mark.e2e
def test_report_of_a_crawl_killed_with_kill_9(tmp_path: Path) -> None:
    """No summary.json yet: the cards show the log's figures, not dashes, and say so."""
    from webthread import web_in_thread

    out = tmp_path / "out"
    with web_in_thread(n_hosts=4, pages_per_host=30, seed=5) as web:
        crawl = subprocess.Popen(
            [sys.executable, "-m", "politecrawl", "crawl", *web.seed_urls(),
             "--user-agent", "testbot/1.0 (+http://bot.example/info)", "--out", str(out),
             "--resolve", web.resolve_arg(), "--allow-private-addresses", "--scope", "any",
             "--min-delay", "0.05", "--ip-min-delay", "off", "--no-progress"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        log = out / "log" / "requests.jsonl"
        deadline = datetime.now(UTC) + timedelta(seconds=60)
        while datetime.now(UTC) < deadline and (
            not log.exists() or log.read_bytes().count(b'"outcome":"stored"') < 10
        ):
            time.sleep(0.1)
        crawl.kill()  # SIGKILL
        crawl.wait(30)
    assert not (out / "summary.json").exists()
    lines = log.read_bytes().splitlines()
    p = run("report", str(out))
    assert p.returncode == 0, p.stderr
    cards = _cards((out / "report.html").read_text())
    assert cards["requests"] == (str(_requests(lines)), "log")
    assert cards["stored"] == (str(sum(b'"outcome":"stored"' in x for x in lines)), "log")
    assert int(cards["pages fetched"][0]) >= int(cards["stored"][0]) >= 10
    assert cards["errors"][1] == "log" and "–" not in "".join(v for v, _ in cards.values())
    assert "summary.json: there is none" in p.stderr


# -- records of any shape: the tools never raise, never print a control character ----------

_ZONES = [None, UTC, timezone(timedelta(hours=14)), timezone(timedelta(hours=-12))]
_TIMES = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.sampled_from(_ZONES)
).map(datetime.isoformat)
_HOSTS = st.sampled_from(["a.test", "www.a.test", "[::1]:80", "a.test:81", "x\x1b]0;t\x07.a.test"])
_URLS = st.builds(lambda h, p: f"http://{h}/{p}", _HOSTS, st.text(max_size=8))
_ANY = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(), inner, max_size=2),
    max_leaves=4,
)
_NUMBERS = st.one_of(st.integers(-5, 10**6), st.floats())
_FIELDS = {
    "time": _TIMES,
    "url": _URLS,
    "status": st.integers(-1, 1000),
    "duration_ms": _NUMBERS,
    "delay_s": _NUMBERS,
    "bytes": _NUMBERS,
    "outcome": st.sampled_from(["stored", "robots:ok", "robots:none", "retry", "redirect"]),
    "error": st.text(max_size=8),
    "ip": st.text(max_size=8),
    "record": st.just("header"),
    "purpose": st.text(max_size=8),
    "host": _HOSTS,
    "origin": _URLS,
    "body": st.text(max_size=30),
    "relevance": _NUMBERS,
    "rule": st.text(max_size=8),
    "pattern": st.text(max_size=8),
}
_RECORDS = st.lists(
    st.fixed_dictionaries({}, optional={k: st.one_of(v, _ANY) for k, v in _FIELDS.items()}),
    max_size=12,
)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.mark.unit
@settings(max_examples=60)
@given(_RECORDS, _RECORDS, _RECORDS)
def test_records_of_any_shape_never_crash_a_tool(
    requests: list[dict[str, Any]], robots: list[dict[str, Any]], other: list[dict[str, Any]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        (out / "log").mkdir()
        for name, recs in (("requests", requests), ("robots", robots), ("pages", other),
                           ("traps", other), ("rules", other)):  # fmt: skip
            text = "".join(json.dumps(r) + "\n" for r in recs)
            (out / "log" / f"{name}.jsonl").write_text(text)
        damage = LogDamage()
        stats = logstats.compute(out, damage)
        text = logstats.format_text(stats)
        json.dumps(stats, allow_nan=False)
        rows = complaints.lookup(out, "a.test", None, None, damage=damage)
        text += complaints.format_text(rows)
        json.dumps(rows, allow_nan=False)
        assert _CONTROL.search(text) is None, text
        render(out)
