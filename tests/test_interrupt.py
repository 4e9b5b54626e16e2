"""Ctrl-C: in-flight requests finish, state is saved, and the same command resumes."""

from __future__ import annotations

import asyncio
import collections
import json
import signal
import sys
from pathlib import Path

import pytest
from conftest import UA

from politecrawl.demo.accesslog import politeness_violations
from politecrawl.demo.web import TestWeb
from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e


async def _crawl(cfg: Path, out: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "politecrawl.tools.cli",
        "crawl",
        "--config",
        str(cfg),
        "--out",
        str(out),
        "--no-progress",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def test_sigint_is_graceful_and_resumable(tmp_path: Path) -> None:
    async with TestWeb(n_hosts=6, pages_per_host=10, seed=11) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(web.seed_urls()) + "\n")
        cfg = tmp_path / "crawl.toml"
        cfg.write_text(
            f'seeds = "{seeds}"\nuser-agent = "{UA}"\nmin-delay = 0.2\n'
            f'resolve = ["{web.resolve_arg()}"]\nallow-private-addresses = true\n'
            'scope = "any"\nretry-base = 0.2\nip-min-delay = 0\n'
        )
        out = tmp_path / "out"
        proc = await _crawl(cfg, out)
        for _ in range(200):  # wait (bounded) until it has fetched some pages
            await asyncio.sleep(0.05)
            if len(web.access_log) >= 15:
                break
        proc.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 130, err.decode()  # the shell's convention for Ctrl-C
        first = json.loads((out / "summary.json").read_text())
        assert first["stopped_by"] == "interrupted"
        n_first = len(web.access_log)
        assert n_first < 200

        proc = await _crawl(cfg, out)
        _, err = await asyncio.wait_for(proc.communicate(), 120)
        assert proc.returncode == 3, err.decode()  # h4 lost: its robots.txt answers 500
        second = json.loads((out / "summary.json").read_text())
        assert second["stopped_by"] == "done"
        assert [x["site"] for x in second["sites_lost"]] == ["h4.test"]
        assert len(web.access_log) > n_first

        # graceful: every request the server saw before the stop is in the request log
        logged = read_jsonl(out / "log" / "requests.jsonl")
        assert len(logged) == len(web.access_log)
        retried = {h for h, s in web.sites.items() if s.robots_status >= 500}
        twice = [
            k
            for k, n in collections.Counter(
                (e.host, e.path)
                for e in web.access_log
                if not e.path.startswith(("/status/5", "/status/429"))
                and not (e.path == "/robots.txt" and e.host in retried)
            ).items()
            if n > 1
        ]
        assert twice == []
        # politeness holds across the restart (next-allowed times were persisted)
        assert politeness_violations(web.access_log, 0.2) == []
