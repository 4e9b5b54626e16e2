"""Disk full: the crawler stops with one clear line and exit code 1, and the next run resumes.

A real write failure, without root: the crawl runs in a child process whose RLIMIT_FSIZE is
small, with SIGXFSZ ignored, so a write that would take any file past the limit fails with
EFBIG (as ENOSPC would on a full disk). Two cases: the crawl state (SQLite's WAL, the file
that grows first on a normal crawl) and the WARC output (distinct pages of 256 KiB of random
bytes, so the WARC outgrows everything else).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import random
import sys
from pathlib import Path

import pytest
from aiohttp import web
from conftest import UA
from warcio.archiveiterator import ArchiveIterator

from politecrawl.demo.web import TestWeb

pytestmark = pytest.mark.e2e

# The child: limit file sizes, ignore SIGXFSZ (so writes fail with EFBIG), run the CLI.
_LIMITED = (
    "import resource, runpy, signal, sys\n"
    "limit = int(sys.argv.pop(1))\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))\n"
    "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    "sys.argv[0] = 'politecrawl'\n"
    "runpy.run_module('politecrawl.tools.cli', run_name='__main__')\n"
)


async def _crawl(cfg: Path, out: Path, limit: int | None = None) -> tuple[int, str, str]:
    head = ["-c", _LIMITED, str(limit)] if limit is not None else ["-m", "politecrawl"]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *head,
        "crawl",
        "--config",
        str(cfg),
        "--out",
        str(out),
        "--no-progress",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(proc.communicate(), 180)
    assert proc.returncode is not None
    return proc.returncode, stdout.decode(), stderr.decode()


def _config(tmp: Path, seeds: list[str], resolve: str, extra: str = "") -> Path:
    (tmp / "seeds.txt").write_text("\n".join(seeds) + "\n")
    cfg = tmp / "crawl.toml"
    cfg.write_text(
        f'seeds = "{tmp / "seeds.txt"}"\nuser-agent = "{UA}"\nmin-delay = 0.05\n'
        f'resolve = ["{resolve}"]\nallow-private-addresses = true\nscope = "any"\n'
        f"retry-base = 0.2\nip-min-delay = 0\n{extra}"
    )
    return cfg


def _assert_stopped_cleanly(code: int, stderr: str, out: Path) -> None:
    """Exit 1, no traceback, the last stderr line says it stopped and why."""
    assert code == 1, stderr
    assert "Traceback" not in stderr, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("politecrawl: stopped: "), stderr
    assert "resume" in last, last
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped_by"] == "storage_error"


def _assert_resumed(code: int, stderr: str, out: Path) -> dict[str, object]:
    assert "Traceback" not in stderr, stderr
    summary = json.loads((out / "summary.json").read_text())
    # exit 3 names the sites lost: only the test web's whose robots.txt answers 5xx
    assert code == (3 if summary["sites_lost"] else 0), stderr
    assert all("robots.txt" in str(s["reason"]) for s in summary["sites_lost"]), summary
    assert summary["stopped_by"] == "done" and summary["queued_left"] == 0
    assert not list((out / "warc").glob("*.open"))  # a torn WARC was repaired and closed
    return summary


async def test_state_write_fails_then_resume(tmp_path: Path) -> None:
    """SQLite cannot grow its WAL: the crawl stops, and a run without the limit finishes it."""
    async with TestWeb(n_hosts=6, pages_per_host=8, seed=5) as web:
        cfg = _config(tmp_path, web.seed_urls(), web.resolve_arg())
        out = tmp_path / "out"
        code, _, err = await _crawl(cfg, out, limit=150_000)
        first_run = len(web.access_log)
        assert 0 < first_run < 100  # it stopped early, it did not crawl on without saving
        assert "Traceback" not in err, err
        assert code == 1, err
        last = err.strip().splitlines()[-1]
        assert last.startswith("politecrawl: ") and "crawl state" in last, err

        code, _, err = await _crawl(cfg, out)
        _assert_resumed(code, err, out)
        # nothing lost: every page robots.txt allows was fetched by one run or the other
        fetched = {(e.host, e.path) for e in web.access_log}
        for host, site in web.sites.items():
            if site.robots_status >= 500 or (site.robots or "").endswith("Disallow: /\n"):
                continue
            for page in site.pages:
                blocked = (site.robots and "testbot" in site.robots and page == "/p/2.html") or (
                    site.robots
                    and "Disallow: /p/\n" in site.robots
                    and page.startswith("/p/")
                    and page != "/p/1.html"
                )
                assert blocked or (host, page) in fetched, (host, page)


async def test_state_write_fails_stops_with_one_clear_line(tmp_path: Path) -> None:
    async with TestWeb(n_hosts=6, pages_per_host=8, seed=5) as web:
        cfg = _config(tmp_path, web.seed_urls(), web.resolve_arg())
        out = tmp_path / "out"
        code, _, err = await _crawl(cfg, out, limit=150_000)
        _assert_stopped_cleanly(code, err, out)


class BigPages:
    """Any host on 127.0.0.1: distinct pages of 256 KiB of random bytes (served as HTML).

    Incompressible and no two alike, so each stored page adds 256 KiB to the WARC: the WARC
    outgrows every other file.
    """

    def __init__(self) -> None:
        self.hits: list[str] = []
        self.port = 0
        self._runner: web.ServerRunner | None = None

    async def __aenter__(self) -> BigPages:
        self._runner = web.ServerRunner(web.Server(self._handle), shutdown_timeout=1.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.port = int(self._runner.addresses[0][1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.BaseRequest) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        self.hits.append(request.path_qs)
        body = random.Random(request.path_qs).randbytes(256 * 1024)
        return web.Response(body=body, content_type="text/html")

    def seeds(self) -> list[str]:
        return [f"http://b{i}.big.test:{self.port}/page/{i}" for i in range(12)]

    def resolve(self) -> str:
        return f"*.big.test:{self.port}:127.0.0.1"


async def test_warc_write_fails_then_resume(tmp_path: Path) -> None:
    """The WARC cannot grow: the crawl stops early, and the next run finishes the crawl."""
    async with BigPages() as big:
        cfg = _config(tmp_path, big.seeds(), big.resolve(), "concurrency = 4\n")
        out = tmp_path / "out"
        code, _, err = await _crawl(cfg, out, limit=1_500_000)
        assert code == 1, err
        assert len(big.hits) < len(big.seeds())

        code, _, err = await _crawl(cfg, out)
        _assert_resumed(code, err, out)
        assert set(big.hits) == {f"/page/{i}" for i in range(12)}


async def test_warc_write_fails_cleanly_and_loses_nothing(tmp_path: Path) -> None:
    async with BigPages() as big:
        cfg = _config(tmp_path, big.seeds(), big.resolve(), "concurrency = 4\n")
        out = tmp_path / "out"
        code, _, err = await _crawl(cfg, out, limit=1_500_000)
        _assert_stopped_cleanly(code, err, out)
        for path in (out / "warc").glob("*.warc.gz"):  # what was closed reads to its end
            gzip.decompress(path.read_bytes())

        code, _, err = await _crawl(cfg, out)
        _assert_resumed(code, err, out)
        complete = set()
        for path in (out / "warc").glob("*.warc.gz"):
            with path.open("rb") as fh:
                for rec in ArchiveIterator(fh):
                    if (
                        rec.rec_type == "response"
                        and len(rec.content_stream().read()) == 256 * 1024
                    ):
                        complete.add(rec.rec_headers.get_header("WARC-Target-URI"))
        assert complete == set(big.seeds())
