"""Log statistics on a real crawl's request log, plus planted patterns it must find."""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import crawl_config

from politecrawl import Crawler
from politecrawl.demo.accesslog import AccessEntry
from politecrawl.demo.web import TestWeb
from politecrawl.errors import ConfigError
from politecrawl.storage.logs import JsonlLog, iter_log_records
from politecrawl.tools.logstats import compute, format_text, main_args, url_extension


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[AccessEntry]]:
    out = tmp_path_factory.mktemp("crawl")

    async def go() -> list[AccessEntry]:
        async with TestWeb(n_hosts=12, pages_per_host=6, seed=3) as web:
            await Crawler(crawl_config(web, out, delay=0.05, concurrency=12, max_time_s=5.0)).run()
            return web.access_log

    return out, asyncio.run(go())


@pytest.mark.unit
def test_url_extension() -> None:
    assert url_extension("http://a.test/x/photo.JPG?x=1") == "jpg"
    assert url_extension("http://a.test/x.y/") == ""
    assert url_extension("http://a.test/") == ""
    assert url_extension("http://a.test/archive.tar.gz") == "gz"
    assert url_extension("http://a.test/v1.0") == "0"
    assert url_extension("http://a.test/weird.!!") == ""


@pytest.mark.e2e
def test_figures_agree_with_the_log_and_the_server(crawl: tuple[Path, list[AccessEntry]]) -> None:
    out, access = crawl
    stats = compute(out)
    log = list(iter_log_records(out / "log", "requests"))
    assert stats["requests"] == len(log) == len(access)
    assert stats["status"] == {
        str(k): v for k, v in sorted(collections.Counter(r["status"] for r in log).items())
    }
    assert sum(stats["status_classes"].values()) == len(log)
    assert stats["redirects"] == sum(1 for r in log if 300 <= (r["status"] or 0) < 400) > 0
    html = stats["extensions"]["html"]
    assert html["requests"] >= 10 and html["html_share"] == 1.0 and html["stored_share"] > 0.5
    assert "(none)" in stats["extensions"]
    assert "(none)" not in stats["suggested_blocklist_additions"]
    # the site whose robots.txt answers 500 is nothing but errors
    worst = {h["host"]: h for h in stats["top_error_hosts"]}
    assert worst["h4.test"]["errors"] == worst["h4.test"]["requests"]
    slow = stats["slowest_hosts"]
    assert 0 < len(slow) <= 20
    assert [s["mean_ms"] for s in slow] == sorted((s["mean_ms"] for s in slow), reverse=True)
    assert stats["suspected_traps"] == []
    json.dumps(stats)


def _planted(log: JsonlLog) -> None:
    def rec(
        url: str, ctype: str, outcome: str, status: int = 200, ms: float = 10.0
    ) -> dict[str, Any]:
        return {
            "time": "2030-01-01T00:00:00.000Z",
            "url": url,
            "status": status,
            "content_type": ctype,
            "outcome": outcome,
            "duration_ms": ms,
            "delay_s": 15,
        }

    for i in range(6):
        log.write(rec(f"http://img.example/p/{i}.jpg", "image/jpeg", "dropped:not_html"))
    for i in range(20):  # 1 of 20 stored: 5 %
        log.write(
            rec(
                f"http://cgi.example/s/{i}.pl",
                "text/plain",
                "stored" if i == 0 else "dropped:not_html",
            )
        )
    for i in range(10):  # 1 of 10 stored: exactly 10 %, not below
        log.write(
            rec(
                f"http://cgi.example/c/{i}.cgi",
                "text/plain",
                "stored" if i == 0 else "dropped:not_html",
            )
        )
    for i in range(4):  # too few to judge
        log.write(rec(f"http://cgi.example/a/{i}.asp", "text/plain", "dropped:not_html"))
    for i in range(30):
        log.write(rec(f"http://calendar.example/cal?day={i}", "text/html", "stored"))
    for i in range(6):
        log.write(rec("http://deep.example/" + "a/" * 10 + f"{i}.html", "text/html", "stored"))
    for i in range(5):
        log.write(rec(f"http://traps.example/x{i}", "text/html", "dropped:trap_loop"))
    log.write(rec("http://slow.example/", "text/html", "stored", ms=9000.0))
    log.write(
        rec("http://slow.example/x", "text/html", "dropped:http_permanent", status=404, ms=7000.0)
    )


@pytest.mark.unit
def test_planted_patterns_are_found(crawl: tuple[Path, list[AccessEntry]], tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(crawl[0], out)
    log = JsonlLog(out / "log" / "requests.jsonl", rotate_bytes=2000)  # rotates as it goes
    _planted(log)
    log.close()
    stats = compute(out)
    assert stats["suggested_blocklist_additions"] == ["pl", "jpg"]  # most requested first
    assert stats["extensions"]["jpg"] == {"requests": 6, "html_share": 0.0, "stored_share": 0.0}
    traps = {t["host"]: t for t in stats["suspected_traps"]}
    assert set(traps) == {"calendar.example", "deep.example", "traps.example"}
    assert traps["calendar.example"]["max_query_variants"] == 30
    assert traps["calendar.example"]["path_with_most_variants"] == "/cal"
    assert traps["deep.example"]["deep_or_long_urls"] == 6
    assert traps["traps.example"]["trap_drops"] == 5
    assert stats["slowest_hosts"][0] == {"host": "slow.example", "mean_ms": 8000.0, "responses": 2}
    assert {"host": "slow.example", "errors": 1, "requests": 2} in stats["top_error_hosts"]
    text = format_text(stats)
    assert "extension blocklist" in text and "pl, jpg" in text
    assert "30 query variants of /cal" in text
    assert "slow.example" in text


@pytest.mark.unit
def test_main_args_text_and_json(crawl: tuple[Path, list[AccessEntry]], capsys: Any) -> None:
    out = crawl[0]
    assert main_args(argparse.Namespace(dir=str(out), json=True)) == 0
    assert json.loads(capsys.readouterr().out) == compute(out)
    assert main_args(argparse.Namespace(dir=str(out), json=False)) == 0
    text = capsys.readouterr().out
    for heading in (
        "Status classes",
        "By URL extension",
        "Suspected crawler traps",
        "Slowest hosts",
        "Redirects:",
    ):
        assert heading in text
    with pytest.raises(ConfigError):
        main_args(argparse.Namespace(dir=str(out / "nope"), json=False))
