"""A fetch into a crawl's folder, --target-relevant across processes and on a re-run: the real
command against a small site of the test's own on 127.0.0.1, judged by the server's log."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from aiohttp import web
from conftest import UA
from loopbackweb import serving

pytestmark = pytest.mark.e2e

_FANOUT = 6  # links on every page: /p/N links /p/6N+1 ... /p/6N+6, an endless tree


async def _cli(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "politecrawl.tools.cli", *args,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ),
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 180)
    return proc.returncode or 0, out.decode(), err.decode()


class Site:
    """Pages /p/N on four hosts h0..h3.test (page N links 6N+1 ... 6N+6, each on host
    h{M % 4}, and one page of outside.test); every third page says "locomotive"."""

    def __init__(self) -> None:
        self.log: list[str] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.log.append(f"{request.host.split(':')[0]}{request.path}")
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        n = int(request.path.rsplit("/", 1)[-1]) if request.path.startswith("/p/") else 0
        port = request.host.rsplit(":", 1)[-1]
        kids = [_FANOUT * n + k for k in range(1, _FANOUT + 1)]
        links = "".join(f'<a href="http://h{m % 4}.test:{port}/p/{m}">x</a>' for m in kids)
        links += f'<a href="http://outside.test:{port}/p/{n}">out</a>'
        word = "locomotive steam engine" if n % 3 == 0 else "kettle tea"
        body = f"<html><head><title>p{n}</title></head><body><p>{word} {n}</p>{links}</body></html>"
        return web.Response(text=body, content_type="text/html")

    def pages(self) -> list[int]:
        """The page numbers requested, in order."""
        return [int(x.rsplit("/", 1)[-1]) for x in self.log if "/p/" in x]


def _common(port: int, scope: str = "host") -> list[str]:
    return [
        "--user-agent", UA, "--resolve", f"*.test:{port}:127.0.0.1",
        "--allow-private-addresses", "--min-delay", "0", "--ip-min-delay", "0",
        "--no-progress", "--scope", scope,
    ]  # fmt: skip


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


async def test_fetch_refuses_a_crawl_folder_and_goes_on_in_its_own(tmp_path: Path) -> None:
    site = Site()
    async with serving(site.handle) as port:
        c0 = tmp_path / "c0"
        seed = f"http://h0.test:{port}/p/0"
        rc, _, err = await _cli("crawl", seed, "--out", str(c0), "--max-pages", "8", *_common(port))
        assert rc == 0, err
        seg = tmp_path / "r1.seg"
        rc, _, err = await _cli("segment", "build", str(c0), "--out", str(seg))
        assert rc == 0, err
        before, asked = _files(c0), len(site.log)
        fetch = ["fetch", str(seg), *_common(port)[:-2], "--max-pages", "5"]
        rc, out, err = await _cli(*fetch, "--out", str(c0))
        assert rc == 2, (out, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "--out" in lines[0] and "crawl" in lines[0], err
        assert "another folder" in lines[0]
        assert len(site.log) == asked, site.log[asked:]  # not one request
        assert _files(c0) == before  # nothing written: config.json, summary.json as they were
        assert json.loads((c0 / "config.json").read_text())["follow_links"] is True
        # the loop goes on in a folder of its own, and again in the same one
        f1 = tmp_path / "f1"
        rc, _, err = await _cli(*fetch, "--out", str(f1))
        assert rc == 0, err
        assert json.loads((f1 / "config.json").read_text())["follow_links"] is False
        asked = len(site.log)
        rc, out, err = await _cli(*fetch, "--out", str(f1))
        assert rc == 0, (out, err)
        assert "--out" not in err  # (its URLs fetched: they are not asked again)


_NUGGET = """
def rel(doc):
    return 1.0 if "locomotive" in doc.text else 0.0
"""


async def _focused(tmp_path: Path, port: int, out: Path, *extra: str) -> tuple[int, str, str]:
    (tmp_path / "relmod.py").write_text(_NUGGET)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    return await _cli(
        "crawl", f"http://h0.test:{port}/p/0", "--out", str(out), "--relevance", "relmod:rel",
        *_common(port, "any"), *extra,
    )  # fmt: skip


async def test_target_relevant_and_max_pages_are_the_crawls_over_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    site = Site()
    async with serving(site.handle) as port:
        out = tmp_path / "c"
        rc, _, err = await _focused(
            tmp_path, port, out, "--processes", "2", "--target-relevant", "6",
            "--max-pages", "60", "--concurrency", "1",
        )  # fmt: skip
        assert rc == 0, err
        pages = site.pages()
        relevant = [n for n in pages if n % 3 == 0]
        summary = json.loads((out / "summary.json").read_text())
        assert summary["stopped_by"] == "target_relevant", (summary["stopped_by"], pages)
        # stopped at the 6th relevant page of the crawl (a request in flight may end)
        assert 6 <= len(relevant) <= 8, pages
        assert json.loads((out / "focus.json").read_text())["relevant_pages"] == len(relevant)
        # --max-pages is the crawl's too: two processes never ask more than it
        site.log.clear()
        rc, _, err = await _focused(
            tmp_path, port, tmp_path / "m", "--processes", "2", "--max-pages", "25"
        )
        assert rc == 0, err
        assert len(site.pages()) <= 25, len(site.pages())


async def test_a_rerun_whose_target_is_met_fetches_nothing(tmp_path: Path) -> None:
    site = Site()
    async with serving(site.handle) as port:
        out = tmp_path / "c"
        rc, _, err = await _focused(tmp_path, port, out, "--target-relevant", "3")
        assert rc == 0, err
        assert json.loads((out / "summary.json").read_text())["stopped_by"] == "target_relevant"
        asked = len(site.log)
        rc, stdout, err = await _focused(tmp_path, port, out, "--target-relevant", "3")
        assert rc == 0, err
        assert site.log[asked:] == []  # not one request
        assert "nothing left to do" in stdout, stdout
        assert "its --target-relevant 3 was met" in stdout, stdout
