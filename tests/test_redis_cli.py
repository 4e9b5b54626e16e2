"""seed, worker and status as a user runs them: two worker processes share one Redis crawl."""

from __future__ import annotations

import asyncio
import collections
import json
import sys
import uuid
from pathlib import Path

from conftest import UA
from redis_server import redis_url  # noqa: F401  (fixture)

from politecrawl.testweb import TestWeb, politeness_violations


async def _cli(*args: str, timeout: float = 120) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "politecrawl.cli",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_two_worker_processes_one_crawl(redis_url: str, tmp_path: Path) -> None:  # noqa: F811
    crawl = f"cli-{uuid.uuid4().hex[:8]}"
    async with TestWeb(n_hosts=5, pages_per_host=5, seed=8) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(web.seed_urls()) + "\n")
        rc, out, err = await _cli(
            "seed",
            str(seeds),
            "--frontier",
            redis_url,
            "--crawl-id",
            crawl,
            "--resolve",
            web.resolve_arg(),
            "--allow-private-addresses",
        )
        assert rc == 0, err
        assert "5 of 5 URLs queued" in out
        rc, out, _ = await _cli("status", "--frontier", redis_url, "--crawl-id", crawl, "--json")
        assert json.loads(out)["queued"] == 5

        common = [
            "--frontier",
            redis_url,
            "--crawl-id",
            crawl,
            "--user-agent",
            UA,
            "--resolve",
            web.resolve_arg(),
            "--allow-private-addresses",
            "--ip-min-delay",
            "0",
            "--min-delay",
            "0.15",
            "--retry-base",
            "0.2",
            "--park-time",
            "0.5",
            "--no-progress",
        ]
        results = await asyncio.gather(
            _cli("worker", "--out", str(tmp_path / "w1"), *common),
            _cli("worker", "--out", str(tmp_path / "w2"), *common),
        )
        for rc, _, err in results:
            assert rc == 0, err
        rc, out, _ = await _cli("status", "--frontier", redis_url, "--crawl-id", crawl, "--json")
        st = json.loads(out)
        assert st["queued"] == 0 and st["leases_held"] == 0

    # both workers did part of it; the server saw one crawler: polite, nothing twice
    for w in ("w1", "w2"):
        assert (tmp_path / w / "log" / "requests.jsonl").read_text().strip()
    assert politeness_violations(web.access_log, 0.15) == []
    retried = {h for h, s in web.sites.items() if s.robots_status >= 500}
    counts = collections.Counter(
        (e.host, e.path)
        for e in web.access_log
        if not e.path.startswith(("/status/5", "/status/429"))
        and not (
            e.path == "/robots.txt"
            and (e.host in retried or web.sites[e.host].robots_status == 301)
        )
    )
    assert [k for k, n in counts.items() if n > 1] == []
