"""``--metrics HOST:PORT``: /metrics scraped while the real command crawls, read with
prometheus_client's own parser; its request counter is the test server's count.

The crawl is kept alive at the end by a site that answered 503 with a long Retry-After (its
URL waits to be retried, the site in the penalty box): every other request is done, so the
counter must equal what the server saw, robots.txt included. Then SIGTERM ends it. The same
with ``--processes 2``: one endpoint for the whole crawl, the partitions' sum.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys
import urllib.request
from pathlib import Path

import pytest
from aiohttp import web
from conftest import UA
from pageweb import PageWeb, html
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.e2e

_PAGES = 8


class BusyWeb(PageWeb):
    """news.test's pages, and busy.test answering 503 with Retry-After: 300; every request
    logged with its host."""

    def __init__(self) -> None:
        links = "".join(f"<a href='/p{i}.html'>p{i}</a> " for i in range(_PAGES))
        pages = {f"/p{i}.html": ("text/html", html(f"p{i}", f"<p>page {i}</p>").encode())
                 for i in range(_PAGES)}  # fmt: skip
        pages["/"] = ("text/html", html("home", links).encode())
        pages["/robots.txt"] = ("text/plain", b"User-agent: *\nAllow: /\n")
        super().__init__(pages)
        self.seen: list[str] = []

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append(f"{request.host.split(':')[0]}{request.raw_path}")
        if request.host.startswith("busy.test") and request.raw_path != "/robots.txt":
            return web.Response(status=503, text="busy", headers={"Retry-After": "300"})
        return await super()._handle(request)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _scrape(port: int) -> dict[str, float]:
    """Every sample as ``name{label="v"}`` -> value, parsed by prometheus_client."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    samples: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            samples[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
    return samples


def _sum(samples: dict[str, float], name: str) -> float:
    return sum(v for k, v in samples.items() if k == name or k.startswith(name + "{"))


@pytest.mark.parametrize("processes", [1, 2])
async def test_metrics_scraped_mid_crawl_match_the_server(tmp_path: Path, processes: int) -> None:
    async with BusyWeb() as site:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(f"http://news.test:{site.port}/\nhttp://busy.test:{site.port}/busy\n")
        port = _free_port()
        args = [
            "crawl", "--seeds", str(seeds), "--user-agent", UA, "--out", str(tmp_path / "out"),
            "--min-delay", "0.3", "--jitter", "0", "--delay-factor", "0",
            "--ip-min-delay", "off", "--scope", "any", "--allow-private-addresses",
            "--resolve", f"news.test:{site.port}:127.0.0.1",
            "--resolve", f"busy.test:{site.port}:127.0.0.1",
            "--no-progress", "--metrics", f"127.0.0.1:{port}", "--processes", str(processes),
        ]  # fmt: skip
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "politecrawl", *args, stderr=asyncio.subprocess.PIPE
        )
        expected = 2 + 1 + _PAGES + 1  # two robots.txt, home, pages, busy's one 503
        scrapes: list[tuple[int, dict[str, float]]] = []
        done_at = None  # every request made: the gauges (set once a second) then catch up
        try:
            for i in range(600):  # 60 s at most
                await asyncio.sleep(0.1)
                assert proc.returncode is None, (await proc.communicate())[1].decode()
                with contextlib.suppress(OSError):
                    got = await asyncio.to_thread(_scrape, port)
                    scrapes.append((len(site.seen), got))
                made = _sum(scrapes[-1][1], "politecrawl_requests_total") if scrapes else 0
                if done_at is None and len(site.seen) >= expected and made >= expected:
                    done_at = i
                if done_at is not None and i - done_at >= 25:
                    break
            final = scrapes[-1][1]
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
            _, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 130, err.decode()
    # live: scraped while the crawl was under way, before it had made every request
    assert any(0 < _sum(s, "politecrawl_requests_total") < expected for _, s in scrapes)
    assert len(site.seen) == expected, site.seen
    assert _sum(final, "politecrawl_requests_total") == len(site.seen)
    assert final['politecrawl_requests_total{outcome="retry"}'] == 1
    assert final['politecrawl_requests_total{outcome="stored"}'] == _PAGES + 1
    assert final["politecrawl_robots_fetches_total"] == 2
    assert final["politecrawl_pages_total"] == _PAGES + 2
    assert final["politecrawl_pages_stored_total"] == _PAGES + 1
    assert final["politecrawl_retries_total"] == 1
    assert final["politecrawl_bytes_total"] > 0
    assert final["politecrawl_response_seconds_count"] == expected
    assert final["politecrawl_politeness_delay_seconds_count"] == expected
    assert final['politecrawl_sites{state="penalty_box"}'] == 1  # busy.test, Retry-After
    assert final["politecrawl_queued_urls"] == 1  # its URL, waiting for the retry
    assert final['politecrawl_sites{state="in_flight"}'] == 0
