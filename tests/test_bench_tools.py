"""The README's bench commands that take options of their own, run as written on tiny inputs:
``bench/focus.py --save`` then ``--report`` (merging saved runs), and ``bench/soak.py
--tracemalloc N`` (what holds the memory) with ``--tracemalloc-from S`` (its baseline's
time). The figures are the benches' business; these check
that each option does what the README says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
import docbed  # noqa: E402  (bench/ on the path first)

pytestmark = pytest.mark.e2e


def _bench(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=timeout, cwd=BENCH.parent
    )


@pytest.mark.skipif(
    bool(docbed.missing("slice")),
    reason="documentation bed not installed: apt-get install " + " ".join(docbed.SLICE_PACKAGES),
)
def test_focus_saves_runs_and_report_merges_them(tmp_path: Path) -> None:
    saved = tmp_path / "runs.json"
    run = _bench(
        str(BENCH / "focus.py"), "--bed", "slice", "--topics", "concurrency",
        "--fetches", "100", "--save", str(saved),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    rows = json.loads(saved.read_text())
    assert [r["topic"] for r in rows] == ["concurrency"]
    assert {"bfs", "focused", "oracle"} <= set(rows[0]["per"])
    png = BENCH / "out" / "focus.png"
    png.unlink(missing_ok=True)
    report = _bench(str(BENCH / "focus.py"), "--report", str(saved))
    assert report.returncode == 0, report.stderr[-3000:]
    # the saved run's table, read back: no crawl made (the report is instant)
    assert "concurrency" in report.stdout and "focused" in report.stdout, report.stdout
    assert "oracle" in report.stdout
    assert png.exists()


def _soak(small: bool, *options: str) -> subprocess.CompletedProcess[str]:
    """bench/soak.py on a tiny test web: 18 s of 20 sites, or (``small``) 6 s of 5."""
    size = ("0.1", "5", "2", "5") if small else ("0.3", "20", "3", "10")
    minutes, hosts, pages, concurrency = size
    run = _bench(
        str(BENCH / "soak.py"), "--minutes", minutes, "--hosts", hosts, "--pages", pages,
        "--delay", "0.2", "--concurrency", concurrency, "--every", "2", *options,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def _baseline_s(run: subprocess.CompletedProcess[str]) -> float:
    (base,) = [ln for ln in run.stdout.splitlines() if ln.startswith("tracemalloc: baseline at")]
    return float(base.split()[3])


def test_soak_tracemalloc_names_what_holds_the_memory(tmp_path: Path) -> None:
    run = _soak(False, "--tracemalloc", "4")
    lines = run.stdout.splitlines()
    grew = lines.index("tracemalloc: the 4 sites that grew most after the baseline")
    held = lines.index("tracemalloc: the largest holders at the end")
    assert held - grew - 1 == 4, lines[grew:held]  # --tracemalloc N: N sites
    assert all("MiB" in line and "blocks" in line for line in lines[grew + 1 : held])
    # the default baseline: a third of a run shorter than 3 minutes (18 s here: 6 s)
    assert _baseline_s(run) >= 6, run.stdout
    later = _soak(False, "--tracemalloc", "2", "--tracemalloc-from", "12")
    assert _baseline_s(later) >= 12, later.stdout  # --tracemalloc-from: no earlier
    too_late = _soak(True, "--tracemalloc", "2", "--tracemalloc-from", "600")
    assert "no baseline: the run ended before 600 s" in too_late.stdout
    without = _soak(True)
    assert "tracemalloc" not in without.stdout
