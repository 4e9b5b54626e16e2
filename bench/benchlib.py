"""What the benchmarks share: the test web in its own process, and this process's CPU and RSS.

Imported by the bench scripts (run as ``python bench/NAME.py``, so this folder is on the path).
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

from politecrawl import CrawlConfig, FetchConfig, PolitenessConfig


def cpu_s(who: int = resource.RUSAGE_SELF) -> float:
    """User + system CPU seconds of this process (or of its finished children)."""
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def rss_mb() -> float:
    """Current resident set size (VmRSS) of this process, MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def start_testweb(
    hosts: int,
    pages: int,
    *,
    access_log: Path | None = None,
    plain: bool = False,
    rich: bool = False,
    lean: bool = False,
) -> tuple[subprocess.Popen[str], int]:
    """``python -m politecrawl.demo.web`` on a free port; (process, port). ``lean``: the
    server that takes less of the CPU the crawler is measured on (``testweblean``)."""
    args = ["--hosts", str(hosts), "--pages", str(pages), "--port", "0"]
    if access_log is not None:
        args += ["--access-log", str(access_log)]
    if plain:
        args.append("--plain")
    if rich:
        args.append("--rich")
    if lean:
        args.append("--lean")
    proc = subprocess.Popen(
        [sys.executable, "-m", "politecrawl.demo.web", *args], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # "serving N hosts on 127.0.0.1:PORT"
    if not line:
        proc.kill()
        raise SystemExit("the test web did not start")
    return proc, int(line.strip().rsplit(":", 1)[1])


def testweb_config(
    port: int, hosts: int, user_agent: str, delay: float, out: Path, **kw: Any
) -> CrawlConfig:
    """A crawl of the test web's seed hosts: delay as floor and retry base, 10 ms jitter."""
    return CrawlConfig(
        seeds=tuple(f"http://h{i}.test:{port}/" for i in range(hosts)),
        out_dir=out,
        fetch=FetchConfig(
            user_agent=user_agent,
            resolve=(f"*.test:{port}:127.0.0.1",),
            allow_private_addresses=True,
            retry_base_s=delay,
        ),
        politeness=PolitenessConfig(
            min_delay_s=delay,
            response_time_factor=1.0,
            jitter_s=0.01,
            ip_min_delay_s=None,  # the test web's names on 127.0.0.1 stand for many servers
        ),
        scope="any",
        progress=False,
        **kw,
    )
