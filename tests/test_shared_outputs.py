"""A shared crawl's outputs, through the real commands: ``politecrawl seed`` into Redis, two
``politecrawl worker`` processes, each with its own ``--out`` and its own ``--metrics``
endpoint, then one ``politecrawl wacz`` of both folders.

Each worker's /metrics is scraped while they crawl; the sum of their request counters is the
test server's count once every request is made (busy.test's URL waits on a long Retry-After,
which keeps the workers alive for the last scrape). The package holds both workers' WARC files
and indexes every capture in them; py-wacz's validator accepts it when installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path

import pytest
from conftest import UA
from redis_server import redis_url  # noqa: F401  (fixture)
from test_metrics import _PAGES, BusyWeb, _free_port, _scrape, _sum
from test_wacz import WACZ, _captures

pytestmark = pytest.mark.e2e


async def _run(*args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "politecrawl", *args, stderr=asyncio.subprocess.PIPE
    )
    _, err = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, err.decode()


async def test_workers_serve_their_own_metrics_and_pack_into_one_wacz(
    tmp_path: Path,
    redis_url: str,  # noqa: F811
) -> None:
    crawl_id = f"outputs-{uuid.uuid4().hex[:8]}"
    async with BusyWeb() as site:
        hosts = ("news.test", "south.test", "busy.test")
        resolve = [w for h in hosts for w in ("--resolve", f"{h}:{site.port}:127.0.0.1")]
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(
            f"http://news.test:{site.port}/\nhttp://south.test:{site.port}/\n"
            f"http://busy.test:{site.port}/busy\n"
        )
        code, err = await _run(
            "seed", str(seeds), "--frontier", redis_url, "--crawl-id", crawl_id,
            "--scope", "any", "--allow-private-addresses", *resolve,
        )  # fmt: skip
        assert code == 0, err
        ports = [_free_port(), _free_port()]
        procs = []
        for i, port in enumerate(ports):
            args = [
                "worker", "--frontier", redis_url, "--crawl-id", crawl_id, "--user-agent", UA,
                "--out", str(tmp_path / f"w{i}"), "--min-delay", "0.3", "--jitter", "0",
                "--delay-factor", "0", "--ip-min-delay", "off", "--allow-private-addresses",
                *resolve, "--no-progress", "--metrics", f"127.0.0.1:{port}",
            ]  # fmt: skip
            procs.append(
                await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "politecrawl", *args, stderr=asyncio.subprocess.PIPE
                )
            )
        expected = 3 + 2 * (1 + _PAGES) + 1  # robots.txt x3, two sites' pages, one 503
        scrapes: list[float] = []
        done_at = None
        try:
            for i in range(900):  # 90 s at most
                await asyncio.sleep(0.1)
                assert all(p.returncode is None for p in procs)
                total = 0.0
                for port in ports:
                    with contextlib.suppress(OSError):
                        got = await asyncio.to_thread(_scrape, port)
                        total += _sum(got, "politecrawl_requests_total")
                scrapes.append(total)
                if done_at is None and total >= expected and len(site.seen) >= expected:
                    done_at = i
                if done_at is not None and i - done_at >= 15:
                    break
        finally:
            for p in procs:
                if p.returncode is None:
                    p.send_signal(signal.SIGTERM)
            for p in procs:
                _, perr = await asyncio.wait_for(p.communicate(), 60)
                assert p.returncode == 130, perr.decode()
    assert any(0 < s < expected for s in scrapes)  # scraped mid-crawl
    assert len(site.seen) == expected, site.seen
    assert scrapes[-1] == len(site.seen)  # the workers' counters, summed: the server's count

    outs = [tmp_path / "w0", tmp_path / "w1"]
    wacz = tmp_path / "shared.wacz"
    code, err = await _run("wacz", *map(str, outs), "--output", str(wacz))
    assert code == 0, err
    with zipfile.ZipFile(wacz) as zf:
        lines = zf.read("indexes/index.cdx").decode().splitlines()
        archived = {n.split("/", 1)[1] for n in zf.namelist() if n.startswith("archive/")}
    indexed = {}
    for line in lines:
        f = json.loads(line.split(" ", 2)[2])
        indexed[(f["filename"], int(f["offset"]))] = (f["url"], int(f["length"]))
    captures = _captures(outs)
    pages = [u for u, _ in captures.values() if not u.endswith("/robots.txt")]
    assert indexed == captures and len(pages) == 2 * (1 + _PAGES)  # and each robots.txt
    assert archived == {name for out in outs for name in
                        (p.name for p in (out / "warc").glob("*.warc.gz"))}  # fmt: skip
    if WACZ is not None:
        v = subprocess.run([str(WACZ / "wacz"), "validate", "-f", str(wacz)],
                           capture_output=True, text=True, timeout=300)  # fmt: skip
        assert v.returncode == 0, v.stdout + v.stderr
