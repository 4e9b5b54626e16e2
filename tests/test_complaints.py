"""Complaint lookup: every request to a host in a window, with the robots.txt then in force."""

from __future__ import annotations

import argparse
import asyncio
import http.server
import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import UA, crawl_config

from politecrawl import Crawler
from politecrawl.demo.web import TestWeb
from politecrawl.errors import ConfigError
from politecrawl.storage.logs import JsonlLog, iter_log_records, rotated_files
from politecrawl.tools.complaints import format_text, host_arg, lookup, main_args, parse_time


def _crawl_with_rotating_logs(out: Path) -> TestWeb:
    """A real crawl whose logs rotate every few KB, and whose robots.txt expire after 1 s
    (so each site has several robots.txt fetches), then a resumed second run (cut short:
    the slow tail of retries adds nothing here)."""

    async def go() -> TestWeb:
        async with TestWeb(n_hosts=8, pages_per_host=5, seed=3) as web:
            for limits in ({"max_pages": 40}, {"max_time_s": 4.0}):
                await Crawler(
                    crawl_config(
                        web,
                        out,
                        delay=0.05,
                        concurrency=8,
                        robots_ttl_s=1.0,
                        log_rotate_bytes=3000,
                        **limits,
                    )
                ).run()
            return web

    return asyncio.run(go())


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TestWeb]:
    out = tmp_path_factory.mktemp("crawl")
    web = _crawl_with_rotating_logs(out)
    return out, web


def _brute_force(out: Path, host: str) -> list[tuple[str, str, Any]]:
    robots = list(iter_log_records(out / "log", "robots"))
    rows = []
    for r in iter_log_records(out / "log", "requests"):
        if f"//{host}:" not in r["url"]:
            continue
        before = [
            x
            for x in robots
            if x["host"] == host and x["time"] <= r["time"] and x["outcome"] != "redirect"
        ]
        latest = max(before, key=lambda x: x["time"])["time"] if before else None
        rows.append((r["time"], r["url"], latest))
    return sorted(rows)


@pytest.mark.e2e
def test_lookup_across_rotated_logs_matches_the_logs(crawl: tuple[Path, TestWeb]) -> None:
    out, web = crawl
    assert len(rotated_files(out / "log", "requests")) >= 3
    assert len(rotated_files(out / "log", "robots")) >= 2
    for host in web.hosts:
        rows = lookup(out, host, None, None)
        got = [
            (r["time"], r["url"], r["robots_in_force"]["time"] if r["robots_in_force"] else None)
            for r in rows
        ]
        assert sorted(got) == _brute_force(out, host), host
        assert [r["time"] for r in rows] == sorted(r["time"] for r in rows)
        # the server saw exactly these requests
        seen = sorted(e.path for e in web.access_log if e.host == host)
        assert sorted("/" + r["url"].split("/", 3)[3] for r in rows) == seen


@pytest.mark.unit
def test_robots_in_force_says_what_the_site_said(crawl: tuple[Path, TestWeb]) -> None:
    out, web = crawl
    special = next(h for h, s in web.sites.items() if s.robots and "testbot" in s.robots)
    rows = lookup(out, special, None, None)
    pages = [r for r in rows if not r["outcome"].startswith("robots:")]
    assert pages and all("User-agent: testbot" in r["robots_in_force"]["body"] for r in pages)
    assert len({r["robots_in_force"]["time"] for r in rows}) >= 2  # refetched, ttl 1 s
    broken = next(h for h, s in web.sites.items() if s.robots_status == 500)
    rows = lookup(out, broken, None, None)
    assert rows and {r["outcome"] for r in rows} == {"robots:unreachable"}
    assert all(r["robots_in_force"]["status"] == 500 for r in rows)
    for r in rows:
        assert set(r) >= {
            "time",
            "url",
            "status",
            "duration_ms",
            "delay_s",
            "outcome",
            "robots_in_force",
        }


@pytest.mark.unit
def test_time_window_and_json_output(crawl: tuple[Path, TestWeb], capsys: Any) -> None:
    out, web = crawl
    host = web.hosts[0]
    rows = lookup(out, host, None, None)
    mid = rows[len(rows) // 2]["time"]
    since = datetime.fromisoformat(mid)
    later = lookup(out, host, since, None)
    earlier = lookup(out, host, None, since)
    assert later[0]["time"] == mid and all(r["time"] >= mid for r in later)
    assert all(r["time"] <= mid for r in earlier)
    assert len(later) + len(earlier) == len(rows) + sum(r["time"] == mid for r in rows)
    args = argparse.Namespace(dir=str(out), host=host.upper(), since=mid, until=None, json=True)
    assert main_args(args) == 0
    answer = {"matched_by": "host", "requests": later, "damage": []}
    assert json.loads(capsys.readouterr().out) == answer


@pytest.mark.unit
def test_text_shows_each_robots_version_once(crawl: tuple[Path, TestWeb], capsys: Any) -> None:
    out, web = crawl
    host = web.hosts[0]
    rows = lookup(out, host, None, None)
    text = format_text(rows)
    assert text.count("Disallow: /private/") == 1  # several fetches, one distinct body
    origin = rows[0]["url"].split("/robots.txt")[0].rstrip("/")
    assert f"requests to {origin}:" in text  # one origin: named once, each line its path
    assert all(f"  {r['url'].removeprefix(origin) or '/'}\n" in text for r in rows)
    assert f"{host}: {len(rows)} requests" in text
    assert (
        main_args(argparse.Namespace(dir=str(out), host=host, since=None, until=None, json=False))
        == 0
    )
    assert "robots.txt in force" in capsys.readouterr().out


def _write(log: JsonlLog, recs: list[dict[str, Any]]) -> None:
    for r in recs:
        log.write(r)
    log.close()


@pytest.mark.unit
def test_subdomains_window_and_robots_versions(tmp_path: Path) -> None:
    """The latest robots.txt at or before each request, per origin; lookalikes excluded."""
    log_dir = tmp_path / "log"

    def req(t: str, url: str) -> dict[str, Any]:
        return {
            "time": f"2024-03-01T{t}Z",
            "url": url,
            "status": 200,
            "duration_ms": 5.0,
            "delay_s": 15.0,
            "outcome": "stored",
            "ip": "192.0.2.7",
            "attempt": 1,
        }

    def rob(t: str, origin: str, body: str) -> dict[str, Any]:
        return {
            "time": f"2024-03-01T{t}Z",
            "host": origin.split("//")[1],
            "origin": origin,
            "url": origin + "/robots.txt",
            "status": 200,
            "outcome": "robots:ok",
            "body": body,
        }

    _write(
        JsonlLog(log_dir / "robots.jsonl"),
        [
            rob("10:00:00.000", "https://example.com", "User-agent: *\nDisallow: /a/\n"),
            rob("12:00:00.000", "https://example.com", "User-agent: *\nDisallow: /b/\n"),
            rob("10:30:00.000", "https://www.example.com", "User-agent: *\nDisallow:\n"),
        ],
    )
    _write(
        JsonlLog(log_dir / "requests.jsonl"),
        [
            req("09:00:00.000", "https://example.com/early"),
            req("11:00:00.000", "https://example.com/x"),
            req("12:00:00.000", "https://example.com/y"),
            req("11:30:00.000", "https://www.example.com/w"),
            req("11:40:00.000", "https://badexample.com/no"),
            req("11:50:00.000", "https://example.com.evil.net/no"),
        ],
    )
    rows = lookup(tmp_path, "Example.com.", None, None)
    assert [r["url"].split("/", 3)[3] for r in rows] == ["early", "x", "w", "y"]
    bodies = [r["robots_in_force"] and r["robots_in_force"]["body"] for r in rows]
    assert bodies == [
        None,
        "User-agent: *\nDisallow: /a/\n",
        "User-agent: *\nDisallow:\n",
        "User-agent: *\nDisallow: /b/\n",
    ]
    window = lookup(
        tmp_path, "example.com", datetime(2024, 3, 1, 11, tzinfo=UTC), datetime(2024, 3, 1, 11, 45)
    )
    assert [r["url"].rsplit("/", 1)[1] for r in window] == ["x", "w"]
    text = format_text(rows)
    assert text.count("Disallow: /a/") == 1 and text.count("Disallow: /b/") == 1
    assert "192.0.2.7" in text
    assert lookup(tmp_path, "www.example.com", None, None)[0]["url"].endswith("/w")


@pytest.mark.unit
def test_misuse_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        parse_time("yesterday")
    assert parse_time("2024-03-01", end_of_day=True) == datetime(
        2024, 3, 1, 23, 59, 59, 999999, tzinfo=UTC
    )
    assert parse_time("2024-03-01T12:00:00+02:00") == datetime(2024, 3, 1, 10, tzinfo=UTC)
    ns = argparse.Namespace(
        dir=str(tmp_path / "missing"), host="x.org", since=None, until=None, json=False
    )
    with pytest.raises(ConfigError, match="not a crawl output folder"):
        main_args(ns)
    (tmp_path / "log").mkdir()
    with pytest.raises(ConfigError, match="bad time"):
        main_args(
            argparse.Namespace(
                dir=str(tmp_path), host="x.org", since="01/03/2024", until=None, json=False
            )
        )
    with pytest.raises(ConfigError, match="after"):
        main_args(
            argparse.Namespace(
                dir=str(tmp_path), host="x.org", since="2024-03-02", until="2024-03-01", json=False
            )
        )


@pytest.mark.unit
def test_text_fits_100_columns(tmp_path: Path) -> None:
    """Each request on one line of at most 100 columns, unless a URL's host alone does not
    leave room: a long URL keeps its host whole and is cut in the middle of its path, and
    the text says that --json has it in full."""
    long_url = "https://a-rather-long-host-name.example.org/" + "segment/" * 20 + "end.html"
    recs = [
        {
            "time": f"2024-03-0{d}T23:59:5{i}.123Z",
            "url": url,
            "status": None,
            "error": "timeout",
            "duration_ms": 20000.0,
            "delay_s": 3600.0,
            "outcome": "dropped:robots_unavailable",
            "ip": None,
            "attempt": 3,
        }
        for d, i, url in ((1, 0, long_url), (2, 1, "https://www.example.org/x"))
    ]
    _write(JsonlLog(tmp_path / "log" / "requests.jsonl"), recs)
    (tmp_path / "log" / "robots.jsonl").write_text("")
    text = format_text(lookup(tmp_path, "example.org", None, None))
    long_line = next(line for line in text.splitlines() if "a-rather" in line and "…" in line)
    assert long_line.endswith("https://a-rather-long-host-name.example.org/segmen…end.html")
    assert max(len(line) for line in text.splitlines() if line != long_line) <= 100, text
    assert "2024-03-01\n" in text and "2024-03-02\n" in text  # a date line per day
    assert "23:59:50.123  timeout" in long_line
    assert "--json has each in full" in text
    assert "https://www.example.org/x" in text  # two origins: full URLs


@pytest.mark.unit
def test_every_date_only_form_is_a_whole_day_and_no_time_overflows() -> None:
    end = datetime(2024, 3, 1, 23, 59, 59, 999999, tzinfo=UTC)
    for day in ("2024-03-01", "20240301", "2024-W09-5", "2024W095"):
        assert parse_time(day, end_of_day=True) == end, day
        assert parse_time(day) == datetime(2024, 3, 1, tzinfo=UTC), day
    assert parse_time("2024-W09", end_of_day=True) == datetime(  # a week: to its Sunday
        2024, 3, 3, 23, 59, 59, 999999, tzinfo=UTC
    )
    assert parse_time("20240301T120000Z", end_of_day=True) == datetime(2024, 3, 1, 12, tzinfo=UTC)
    latest, earliest = datetime.max.replace(tzinfo=UTC), datetime.min.replace(tzinfo=UTC)
    assert parse_time("9999-12-31T23:59:59-01:00") == latest  # past what a datetime holds
    assert parse_time("9999-12-31", end_of_day=True) == latest
    assert parse_time("0001-01-01T00:00:00+01:00", end_of_day=True) == earliest


@pytest.mark.unit
def test_host_names_a_host_or_is_refused() -> None:
    assert host_arg("HTTPS://User@Www.Example.COM.:8443/x?y") == "www.example.com"
    assert host_arg("::1") == host_arg("http://[::1]:8080/") == "[::1]"
    assert host_arg("bücher.example") == "xn--bcher-kva.example"
    for bad, says in (
        ("http://", "names no host"),
        (".", "names no host"),
        ("https:///path", "names no host"),
        ("*.test", "wildcards are not supported, and not needed: --host test covers"),
        ("exa mple.com", "is not a host name"),
    ):
        with pytest.raises(ConfigError, match=re.escape(says)):
            host_arg(bad)


# -- a hostile robots.txt, served for real, through a real crawl and the real command --------

HOSTILE_ROBOTS = (
    b"User-agent: *\r\n"
    b"Disallow: /private/\r\n"
    b"# \x1b[2J\x1b]0;all clear\x07 screen cleared, terminal retitled\n"
    b"# Disallow: /\rAllow: /\n"  # a comment that a terminal shows as a rule
    b"Disallow: /\xc2\x9b31mred\n"  # U+009B (CSI), read as ESC [ by some terminals
)
_PAGES = {
    "/robots.txt": (HOSTILE_ROBOTS, "text/plain"),
    "/": (b'<html><body><a href="/a">a</a></body></html>', "text/html"),
    "/a": (b"<html><body>a</body></html>", "text/html"),
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A crawl of a site whose robots.txt holds terminal control sequences."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body, kind = _PAGES.get(self.path, (b"not here", "text/plain"))
            self.send_response(200 if self.path in _PAGES else 404)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    out = tmp_path_factory.mktemp("hostile") / "out"
    try:
        p = _cli("crawl", f"http://127.0.0.1:{server.server_port}/", "--user-agent", UA,
                 "--out", str(out), "--allow-private-addresses", "--min-delay", "0.1",
                 "--ip-min-delay", "0.1", "--no-progress")  # fmt: skip
        assert p.returncode == 0, p.stderr
    finally:
        server.shutdown()
    yield out


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "politecrawl", *args], capture_output=True, text=True, timeout=120
    )


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.mark.e2e
def test_a_hostile_robots_txt_reaches_the_terminal_escaped(hostile: Path) -> None:
    p = _cli("log", str(hostile), "--host", "127.0.0.1")
    assert p.returncode == 0, p.stderr
    assert _CONTROL.search(p.stdout) is None, repr(p.stdout)
    assert "    | # \\x1b[2J\\x1b]0;all clear\\x07 screen cleared, terminal retitled\n" in p.stdout
    assert "    | # Disallow: /\\rAllow: /\n" in p.stdout  # the comment, shown as it is
    assert "    | Disallow: /\\x9b31mred\n" in p.stdout
    assert "    | User-agent: *\n" in p.stdout  # a CRLF line end is a line end
    for tool in ("log-stats", "report"):
        q = _cli(tool, str(hostile))
        assert q.returncode == 0 and _CONTROL.search(q.stdout + q.stderr) is None, q
    # --json keeps the body whole, each control character escaped by JSON itself
    j = _cli("log", str(hostile), "--host", "127.0.0.1", "--json")
    assert _CONTROL.search(j.stdout) is None
    bodies = {r["robots_in_force"]["body"] for r in json.loads(j.stdout)["requests"][1:]}
    assert bodies == {HOSTILE_ROBOTS.decode()}


@pytest.mark.e2e
def test_until_takes_every_date_form_and_any_time(hostile: Path) -> None:
    def rows(*args: str) -> list[dict[str, Any]]:
        p = _cli("log", str(hostile), "--host", "127.0.0.1", "--json", *args)
        assert p.returncode == 0, p.stderr
        return list(json.loads(p.stdout)["requests"])

    everything = rows()
    assert len(everything) >= 3  # robots.txt, /, /a
    day = datetime.fromisoformat(everything[0]["time"]).date()
    that_day = rows("--until", day.isoformat())
    assert that_day  # (the crawl may have run over midnight: the day's part, each form alike)
    for form in (day.strftime("%Y%m%d"), day.strftime("%G-W%V-%u"), day.strftime("%GW%V%u")):
        assert rows("--until", form) == that_day, form
    for late in ("9999-12-31T23:59:59-01:00", "9999-12-31"):
        assert rows("--until", late) == everything, late
    assert rows("--since", "0001-01-01T00:00:00+01:00") == everything
    assert rows("--until", "0001-01-01T00:00:00+01:00") == []


@pytest.mark.e2e
def test_host_misuse_is_one_line_and_exit_2(hostile: Path) -> None:
    for host in ("http://", ".", "", "*.test", "exa mple.com"):
        p = _cli("log", str(hostile), "--host", host)
        assert p.returncode == 2 and p.stdout == "", (host, p)
        assert len(p.stderr.splitlines()) == 1 and "--host" in p.stderr, (host, p.stderr)


@pytest.mark.unit
def test_an_address_matches_by_the_recorded_ip_or_the_urls_address() -> None:
    from politecrawl.tools.complaints import address_of, request_matches

    v6 = address_of("::1")
    assert v6 == address_of("[::1]") == address_of("0:0:0:0:0:0:0:1") == address_of("::1%lo")
    assert address_of("::ffff:127.0.0.1") == address_of("127.0.0.1")
    assert address_of("example.com") is None and address_of(None) is None
    pinned = {"url": "http://a.example.test:8000/x", "ip": "127.0.0.1"}
    assert request_matches(pinned, "127.0.0.1", address_of("127.0.0.1"))
    assert not request_matches(pinned, "::1", v6)
    assert request_matches({"url": "http://[::1]:80/", "ip": None}, "[::1]", v6)  # not answered
    assert request_matches(pinned, "example.test", None)  # a name: its subdomains
    assert not request_matches(pinned, "127.0.0.1", None)  # (a name, not an address, asked)
