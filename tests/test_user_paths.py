"""Issue "Polite and lossless on every path a user takes", items 2, 3, 6 and 11: the real
``politecrawl`` command (a subprocess, as a user types it) against real loopback servers,
judged by what the servers logged and what landed in the output folder."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from redis_server import redis_url  # noqa: F401  (fixture)

from politecrawl import ConfigError, Crawler
from politecrawl.demo.accesslog import load_access_log
from politecrawl.demo.web import TestWeb
from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

UA = "testbot/1.0 (+http://bot.example/info)"
FAST = [
    "--min-delay", "0.01", "--jitter", "0", "--delay-factor", "1", "--ip-min-delay", "0",
    "--no-progress",
]  # fmt: skip


async def politecrawl(*args: str, timeout: float = 120) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "politecrawl.tools.cli",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


# -- a small multi-host server that logs every request ---------------------------------------
class Site:
    """``cal.test``: an endless calendar (each day its own text, linking the next and previous
    day and month); ``book.test``: 120 chapters listed on one index page, each linking the next
    and previous chapter (large, but finite and hand-made: must be crawled whole)."""

    CHAPTERS = 150
    WORDS = (
        "river", "stone", "market", "lantern", "harbour", "winter", "orchard", "engine",
        "signal", "garden", "copper", "meadow", "thunder", "ribbon", "castle", "pepper",
        "violin", "canyon", "marble", "falcon", "tunnel", "quartz",
    )  # fmt: skip

    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []
        self.times: list[float] = []  # when each request of ``log`` arrived
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> Site:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self.handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}:{self.port}{path}"

    def resolve(self) -> str:
        return f"*.test:{self.port}:127.0.0.1"

    async def handle(self, request: web.Request) -> web.Response:
        host = request.host.split(":")[0]
        path = request.path
        self.log.append((host, request.path_qs))
        self.times.append(time.monotonic())
        if path == "/robots.txt":
            return web.Response(status=404)
        if host == "cal.test":
            return self._calendar(path)
        if host == "book.test":
            return self._book(path)
        return web.Response(status=404)

    @classmethod
    def prose(cls, n: int) -> str:
        """Text of its own for page ``n``: near-duplicate detection must not merge them."""
        import random

        rng = random.Random(n)
        return " ".join(rng.choice(cls.WORDS) for _ in range(120))

    @staticmethod
    def _html(title: str, links: list[str], text: str = "") -> web.Response:
        body = "".join(f'<p><a href="{href}">{href}</a></p>' for href in links)
        return web.Response(
            text=f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
            f"<p>{text}</p>{body}</body></html>",
            content_type="text/html",
        )

    def _calendar(self, path: str) -> web.Response:
        if path == "/":
            # a calendar opens at today (a date fixed in the test would drift into the past)
            return self._html("Calendar", [f"/cal/{dt.date.today()}"])
        part = path.removeprefix("/cal/")
        try:
            if len(part) == 10:
                day = dt.date.fromisoformat(part)
                month = day.replace(day=1)
                prev_m = (month - dt.timedelta(days=1)).replace(day=1)
                next_m = (month + dt.timedelta(days=32)).replace(day=1)
                links = [
                    f"/cal/{day - dt.timedelta(days=1)}",
                    f"/cal/{day + dt.timedelta(days=1)}",
                    f"/cal/{prev_m:%Y-%m}",
                    f"/cal/{next_m:%Y-%m}",
                ]
                text = f"Events of {day:%A %d %B %Y}: {self.prose(day.toordinal())}"
                return self._html(f"Day {day}", links, text)
            month = dt.date.fromisoformat(part + "-01")
            prev_m = (month - dt.timedelta(days=1)).replace(day=1)
            next_m = (month + dt.timedelta(days=32)).replace(day=1)
            links = [f"/cal/{prev_m:%Y-%m}", f"/cal/{next_m:%Y-%m}", f"/cal/{month}"]
            text = f"{month:%B %Y}: {self.prose(-month.toordinal())}"
            return self._html(f"Month {month:%B %Y}", links, text)
        except ValueError:
            return web.Response(status=404)

    def _book(self, path: str) -> web.Response:
        n = self.CHAPTERS
        if path == "/":
            return self._html("Book", [f"/chapter/{i}" for i in range(1, n + 1)])
        num = path.removeprefix("/chapter/")
        if num.isdigit() and 1 <= int(num) <= n:
            i = int(num)
            links = [f"/chapter/{j}" for j in (i - 1, i + 1) if 1 <= j <= n]
            return self._html(f"Chapter {i}", links, self.prose(10_000_000 + i))
        return web.Response(status=404)


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    async with Site() as s:
        yield s


def _seeds(tmp_path: Path, urls: list[str]) -> Path:
    path = tmp_path / "seeds.txt"
    path.write_text("\n".join(urls) + "\n")
    return path


# -- item 6: crawler traps -----------------------------------------------------------------
async def test_endless_calendar_is_stopped_and_named_hand_made_site_is_whole(
    site: Site, tmp_path: Path
) -> None:
    seeds = _seeds(tmp_path, [site.url("cal.test"), site.url("book.test")])
    out = tmp_path / "out"
    code, _, err = await politecrawl(
        "crawl", "--seeds", str(seeds), "--user-agent", UA, "--out", str(out),
        "--resolve", site.resolve(), "--allow-private-addresses", "--scope", "host",
        "--max-time", "90", *FAST,
    )  # fmt: skip
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped_by"] == "done"  # the calendar did not keep the crawl going
    cal = [p for h, p in site.log if h == "cal.test" and p.startswith("/cal/")]
    book = {p for h, p in site.log if h == "book.test" and p.startswith("/chapter/")}
    # the calendar rule: walks past a year beyond today name it, within a few hundred
    # requests (days and months, both directions)
    assert len(cal) <= 500, len(cal)
    assert len(book) == Site.CHAPTERS  # an index-listed site is not a trap
    assert "suspected crawler trap on cal.test" in err
    code, stats, err = await politecrawl("log-stats", str(out))
    assert code == 0, err
    traps = stats.split("Suspected crawler traps:")[1].split("\n\n")[0]
    assert "cal.test" in traps and "/cal/N-N-N" in traps, traps
    assert "book.test" not in traps


# -- item 2: one output folder, one crawl ----------------------------------------------------
async def test_second_crawl_on_a_live_folder_is_refused_and_kill9_lock_does_not_block(
    site: Site,
    tmp_path: Path,
    redis_url: str,  # noqa: F811
) -> None:
    seeds = _seeds(tmp_path, [site.url("book.test")])
    out = tmp_path / "out"
    common = [
        "--seeds", str(seeds), "--user-agent", UA, "--out", str(out), "--resolve",
        site.resolve(), "--allow-private-addresses", "--no-progress", "--jitter", "0",
        "--ip-min-delay", "0",
    ]  # fmt: skip
    first = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "politecrawl", "crawl", *common, "--min-delay", "0.3",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(600):  # until the first crawl is really crawling
            if sum(1 for h, p in site.log if p.startswith("/chapter/")) >= 2:
                break
            await asyncio.sleep(0.05)
        before = len(site.log)
        code, _, err = await politecrawl("crawl", *common, "--min-delay", "0.3")
        assert code == 2
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "in use by another crawl" in lines[0], err
        # a worker of a shared crawl on the same folder: refused the same way
        crawl_id = f"lock-{os.getpid()}"
        code, _, err = await politecrawl(
            "seed", str(seeds), "--frontier", redis_url, "--crawl-id", crawl_id,
            "--resolve", site.resolve(), "--allow-private-addresses",
        )  # fmt: skip
        assert code == 0, err
        code, _, err = await politecrawl(
            "worker", "--frontier", redis_url, "--crawl-id", crawl_id, "--user-agent", UA,
            "--out", str(out), "--resolve", site.resolve(), "--allow-private-addresses",
        )  # fmt: skip
        assert code == 2 and "in use by another crawl" in err, err
        # the refused run sent nothing: only the first crawl's spaced requests appear
        assert first.returncode is None
        first.send_signal(signal.SIGKILL)
        await first.wait()
        # only the first crawl's requests, 0.3 s apart (0.05 s slack: the server shares the
        # test's event loop), and none at all from the refused runs
        gaps = [b - a for a, b in itertools.pairwise(site.times[before - 1 :])]
        assert all(g >= 0.25 for g in gaps), gaps
    finally:
        if first.returncode is None:
            first.kill()
            await first.wait()
    # the lock died with its process: the same command resumes and finishes
    code, _, err = await politecrawl("crawl", *common, "--min-delay", "0.01")
    assert code == 0, err
    fetched = Counter(p for h, p in site.log if p.startswith("/chapter/"))
    assert len(fetched) == Site.CHAPTERS


# -- item 3: every seed through the one gate -------------------------------------------------
async def test_api_seeds_are_canonical_and_bad_ones_refused(tmp_path: Path) -> None:
    from conftest import crawl_config

    async with TestWeb(
        n_hosts=1, pages_per_host=6, seed=2, plain=True,
        access_log_path=str(tmp_path / "access.jsonl"),
    ) as web:  # fmt: skip
        host = web.hosts[0]
        shouted = f"HTTP://{host.upper()}:{web.port}/./"  # the same site, written differently
        cfg = crawl_config(web, tmp_path / "out", seeds=1, delay=0.05)
        import dataclasses

        cfg = dataclasses.replace(cfg, seeds=(shouted,))
        await Crawler(cfg).run()
        with pytest.raises(ConfigError, match="not a crawlable URL"):
            Crawler(dataclasses.replace(cfg, seeds=("not a url",), out_dir=tmp_path / "o2"))
    rows = read_jsonl(tmp_path / "out/log/requests.jsonl")
    assert {r["key"] for r in rows} == {host}
    assert rows[0]["url"] == f"http://{host}:{web.port}/robots.txt"
    entries = load_access_log(str(tmp_path / "access.jsonl"))
    paths = Counter(e.path for e in entries)
    assert paths["/"] == 1  # the seed and the links to "/" are one URL
    starts = sorted((e.start, e.end) for e in entries)
    assert all(b[0] >= a[1] for a, b in itertools.pairwise(starts))  # one at a time


async def test_cli_bad_seed_is_one_line(tmp_path: Path) -> None:
    seeds = _seeds(tmp_path, ["http://ok.test/", "not a url"])
    code, _, err = await politecrawl(
        "crawl", "--seeds", str(seeds), "--user-agent", UA, "--out", str(tmp_path / "o")
    )
    assert code == 2 and len(err.strip().splitlines()) == 1, err


# -- item 11: the offline model, segment after segment --------------------------------------
async def test_segments_loop_without_repeats(tmp_path: Path) -> None:
    log_path = tmp_path / "access.jsonl"
    async with TestWeb(
        n_hosts=3, pages_per_host=8, seed=4, plain=True, access_log_path=str(log_path)
    ) as web:
        seeds = _seeds(tmp_path, web.seed_urls())
        net = ["--resolve", web.resolve_arg(), "--allow-private-addresses", *FAST]
        code, _, err = await politecrawl(
            "crawl", "--seeds", str(seeds), "--user-agent", UA, "--out",
            str(tmp_path / "c0"), "--max-pages", "4", *net,
        )  # fmt: skip
        assert code == 0, err
        dirs = [tmp_path / "c0"]
        segs = tmp_path / "segs"
        segs.mkdir()
        issued: list[set[str]] = []
        for i in range(1, 12):
            seg = segs / f"{i}.seg"
            code, _, err = await politecrawl(
                "segment", "build", *map(str, dirs), "--out", str(seg), "--scope", "any"
            )
            assert code == 0, err
            urls = {u for u in seg.read_text().splitlines() if u and not u.startswith("#")}
            if not urls:
                break
            assert all(not (urls & before) for before in issued)  # never handed out twice
            issued.append(urls)
            d = tmp_path / f"f{i}"
            code, _, err = await politecrawl(
                "fetch", str(seg), "--user-agent", UA, "--out", str(d), "--scope", "any", *net
            )
            assert code == 0, err
            dirs.append(d)
        else:
            pytest.fail("the segments never ran dry")
    assert len(issued) >= 2  # the loop went on past the first segment
    pages = Counter(
        (e.host, e.path) for e in load_access_log(str(log_path)) if e.path != "/robots.txt"
    )
    assert max(pages.values()) == 1, [p for p, n in pages.items() if n > 1]  # nothing twice
    per_host = Counter(e.host for e in load_access_log(str(log_path)) if e.path != "/robots.txt")
    assert sum(per_host.values()) >= 3 * 8 * 0.9  # (nearly) the whole web, segment by segment
    assert os.path.exists(tmp_path / "f1" / "log" / "links.jsonl")
