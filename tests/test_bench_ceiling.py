"""``bench/throughput.py --ceiling`` as the README gives it, on a tiny web: each round also
measures the machine's own two-process gain and two independent half-crawls, and the bench
prints both with their per-round figures (the figures themselves are the bench's to judge)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

BENCH = Path(__file__).parent.parent / "bench" / "throughput.py"


def test_ceiling_rounds_are_measured_and_printed() -> None:
    cmd = [
        sys.executable, str(BENCH), "--rich", "--hosts", "12", "--pages", "2",
        "--delay", "0.1", "--no-redis", "--no-scrapy", "--processes", "1,2",
        "--rounds", "2", "--ceiling",
    ]  # fmt: skip
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    line = next(x for x in p.stdout.splitlines() if x.startswith("ceiling"))
    loop = re.search(r"2 processes = ([\d.]+)x 1 \(median; ([\d., ]+)\)", line)
    split = re.search(r"one crawl of all \(median; ([\d., ]+)\)", line)
    assert loop and split, line
    assert len(loop.group(2).split(", ")) == 2 and float(loop.group(1)) > 0  # one per round
    assert len(split.group(1).split(", ")) == 2
    assert re.search(r"politecrawl x2 reaches \d+% of it", line)
    # both variants crawled the whole tiny web in every round
    assert re.search(r"politecrawl x2: \(median of 2\) 24 pages", p.stdout), p.stdout
