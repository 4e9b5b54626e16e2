"""The live dashboard as a user sees it: the real `politecrawl crawl` in a pseudo-terminal,
its screen read back and checked for elapsed time, progress toward the limits with an ETA,
the busiest sites and the error panel."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import UA
from webthread import web_in_thread

pytestmark = pytest.mark.e2e

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\x1b[=>]")


def run_in_pty(args: list[str], *, columns: int = 110, timeout_s: float = 120) -> tuple[int, str]:
    """Run ``politecrawl ARGS`` with a terminal as stdin/stdout/stderr; (exit code, output)."""
    master, slave = pty.openpty()
    env = dict(os.environ, TERM="xterm-256color", COLUMNS=str(columns), LINES="60")
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "politecrawl", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
    return proc.returncode, b"".join(chunks).decode("utf-8", "replace")


def last_screen(output: str) -> str:
    """The last frame rich drew (it redraws in place: cursor-up and erase sequences)."""
    frames = re.split(r"\x1b\[\d*A|\x1b\[2K\x1b\[1A", output)
    text = frames[-1] if frames else output
    return _ANSI.sub("", text).replace("\r", "")


def test_dashboard_shows_elapsed_progress_and_busiest_sites(tmp_path: Path) -> None:
    with web_in_thread(n_hosts=4, pages_per_host=6, seed=12) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(web.seed_urls()) + "\n")
        rc, output = run_in_pty(
            ["crawl", "--seeds", str(seeds), "--user-agent", UA, "--out", str(tmp_path / "o"),
             "--resolve", web.resolve_arg(), "--allow-private-addresses", "--scope", "any",
             "--min-delay", "0.4", "--retry-base", "0.2", "--max-pages", "20",
             "--max-time", "300"]
        )  # fmt: skip
    (tmp_path / "screen.txt").write_text(output)
    assert rc == 0, output[-3000:]
    screen = last_screen(output)
    assert "elapsed" in screen, screen
    assert re.search(r"--max-pages.*20 / 20 pages", screen), screen
    assert re.search(r"--max-time.*left", screen), screen
    assert "busiest sites" in screen and "requests" in screen
    hosts = [h for h in web.hosts if h in screen]
    assert len(hosts) >= 2, screen  # one row per site
    assert re.search(r"(ready|waits .*: --min-delay 0.4 s)", screen), screen
    assert "errors" in screen
    assert "crawl finished (max_pages)" in output
    # drawn more than once while the crawl ran, with an ETA toward --max-pages
    assert output.count("busiest sites") >= 2
    assert "ETA" in _ANSI.sub("", output)
