"""Focused crawling on real pages: a small slice of the documentation bed (bench/docbed.py).

The real CLI crawls the slice (Python's documentation and four small sites, ~680 pages, served
from the installed Debian packages on loopback hosts) from its portal page, once with
``--strategy focused`` and once with ``--strategy bfs``, 150 pages each. The bed's labels (a
rule on the page's path that the crawler never sees) judge them: the focused crawl must find
several times what breadth-first finds, with generous slack (the replay in
bench/focus_sim.py finds ~20 relevant pages in 150 fetches focused, 0-1 breadth-first).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))

import docbed

from politecrawl.storage.logs import read_jsonl

UA = "bedbot/1.0 (+http://bench.example/bot)"
PAGES = 150

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        bool(docbed.missing("slice")),
        reason="documentation bed not installed: apt-get install "
        + " ".join(docbed.SLICE_PACKAGES),
    ),
]


@pytest.fixture(scope="module")
def bed_port() -> Iterator[int]:
    server = subprocess.Popen(
        [sys.executable, str(Path(docbed.__file__)), "serve", "--bed", "slice"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        yield int(server.stdout.readline().strip().rsplit(":", 1)[1])
    finally:
        server.terminate()
        server.wait(10)


def crawl(tmp: Path, port: int, strategy: str, topic: docbed.Topic) -> list[str]:
    seeds = tmp / "seeds.txt"
    seeds.write_text(f"http://portal.{docbed.TLD}:{port}/\n")
    allow = tmp / "allow.txt"
    hosts = [f"portal.{docbed.TLD}"] + [docbed.site_by_name(n).host for n in docbed.BEDS["slice"]]
    allow.write_text("\n".join(hosts) + "\n")
    out = tmp / strategy
    args = [
        "--seeds", str(seeds), "--user-agent", UA, "--out", str(out),
        "--topic", topic.query, "--strategy", strategy, "--max-pages", str(PAGES),
        "--min-delay", "0.01", "--jitter", "0", "--delay-factor", "1",
        "--scope", "any", "--allow", str(allow),
        "--resolve", f"*.{docbed.TLD}:{port}:127.0.0.1", "--allow-private-addresses",
        "--no-progress", "--ip-min-delay", "off",  # the bed's names share 127.0.0.1
    ]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "politecrawl", "crawl", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    urls = []
    for rec in read_jsonl(out / "log" / "requests.jsonl"):  # its rotated parts too
        url = rec.get("url")
        if url and not url.endswith("/robots.txt"):
            urls.append(url)
    return urls


def test_focused_beats_breadth_first_on_real_pages(tmp_path: Path, bed_port: int) -> None:
    topic = next(t for t in docbed.TOPICS if t.name == "concurrency")
    found = {}
    for strategy in ("focused", "bfs"):
        urls = crawl(tmp_path, bed_port, strategy, topic)
        assert 0 < len(urls) <= PAGES
        assert all(docbed.split_url(u)[0] for u in urls)  # nothing outside the bed's hosts
        found[strategy] = sum(docbed.is_relevant(topic, u) for u in urls)
    assert found["focused"] >= 8, found
    assert found["focused"] >= 3 * found["bfs"] + 3, found
