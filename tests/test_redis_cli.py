"""seed, worker and status as a user runs them: two worker processes share one Redis crawl."""

from __future__ import annotations

import asyncio
import collections
import json
import sys
import uuid
from pathlib import Path

import pytest
from conftest import UA
from redis_server import redis_url  # noqa: F401  (fixture)

from politecrawl.demo.accesslog import politeness_violations
from politecrawl.demo.web import TestWeb

pytestmark = pytest.mark.e2e


async def _cli(*args: str, timeout: float = 120) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "politecrawl.tools.cli",
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
        for w, (rc, out, err) in zip(("w1", "w2"), results, strict=True):
            # exit 3: a worker names the sites it gave up (the test web's robots.txt 5xx):
            # printed above the closing line and kept in summary.json with their reasons
            assert rc in (0, 3), err
            if rc == 3:
                lost = json.loads((tmp_path / w / "summary.json").read_text())["sites_lost"]
                assert lost and all("robots.txt" in x["reason"] for x in lost), lost
                assert all(x["site"] in out for x in lost), out
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


async def test_worker_joins_the_seeded_crawl_and_keeps_its_scope(
    redis_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    """As the README shows it: `seed` and `worker` with no --crawl-id meet in one crawl, and
    the worker, given no --scope and no --seeds, keeps to the scope the crawl was seeded with
    (the pages link to other hosts; none of them is asked)."""
    url = redis_url.rsplit("/", 1)[0] + "/7"  # its own database: the crawl id is "default"
    import redis

    with redis.Redis.from_url(url) as r:
        r.flushdb()
    async with TestWeb(n_hosts=4, pages_per_host=4, seed=9, plain=True) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(web.seed_urls(1)[0] + "\n")
        rc, out, err = await _cli("seed", str(seeds), "--frontier", url, "--scope", "host")
        assert rc == 0, err
        assert "1 of 1 URLs queued in crawl 'default' (scope host)" in out
        rc, out, err = await _cli(
            "worker", "--frontier", url, "--user-agent", UA, "--out", str(tmp_path / "w"),
            "--resolve", web.resolve_arg(), "--allow-private-addresses", "--min-delay", "0.05",
            "--no-progress",
        )  # fmt: skip
        assert rc == 0, err
    seed_host = web.hosts[0]
    asked = {e.host for e in web.access_log}
    assert asked == {seed_host}, asked
    pages = {e.path for e in web.access_log if e.path != "/robots.txt"}
    assert len(pages) > 1  # it crawled the site, not only the seed
    cfg = json.loads((tmp_path / "w" / "config.json").read_text())
    assert cfg["scope"] == "host" and cfg["crawl_id"] is None


async def test_worker_of_an_unseeded_crawl_says_so(redis_url: str, tmp_path: Path) -> None:  # noqa: F811
    rc, _, err = await _cli(
        "worker", "--frontier", redis_url, "--crawl-id", f"none-{uuid.uuid4().hex[:6]}",
        "--user-agent", UA, "--out", str(tmp_path / "w"),
    )  # fmt: skip
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "politecrawl seed" in err
