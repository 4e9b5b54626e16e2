"""What a shared crawl's worker says about itself, through the real ``seed`` and ``worker``
commands on a real Redis, judged by the web server's own log (tests/logserver.py) and each
worker's own logs.

Four sites on one server address (the IP rule on): one request at a time to that address,
so while one worker's site holds it, the other worker has nothing it may ask, and the sites
left are leased or wait in the address's line. Before:

- that worker warned ``nothing may be asked for 2:00: 0 sites parked ..., 3 sites waiting
  (backoff, Retry-After, Crawl-delay)`` while the server saw a request every half second and
  nothing backed off: the 2:00 was the other worker's lease expiry (the bound for a worker
  that died), the "waiting" sites those in the address's line;
- each worker's summary said ``hosts`` = the sites whose very first request it happened to
  send (a worker that asked every site could say 0): now the sites it sent requests to.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from redis_server import redis_url  # noqa: F401  (fixture)
from test_polite_servers import UA, log_server, read_log

pytestmark = pytest.mark.e2e

CLI = [sys.executable, "-m", "politecrawl"]


def _hosts_asked(out: Path) -> set[str]:
    """The sites a worker sent requests to, from its own logs (pages and robots.txt)."""
    hosts = set()
    for name in ("requests.jsonl", "robots.jsonl"):
        for line in (out / "log" / name).read_text().splitlines():
            url = json.loads(line).get("url") if line.strip() else None
            if url:
                hosts.add(url.split("/")[2].split(":")[0])
    return hosts


def test_a_worker_waiting_for_others_turns_is_not_said_idle_and_counts_its_own_hosts(
    redis_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    crawl_id = f"words-{uuid.uuid4().hex[:8]}"
    with log_server(tmp_path, "127.0.0.1", latency=0.02, pages=4) as (port, log):
        resolve = ["--resolve", f"*.one.test:{port}:127.0.0.1", "--allow-private-addresses"]
        hosts = [f"h{i}.one.test" for i in range(4)]
        (tmp_path / "seeds.txt").write_text("".join(f"http://{h}:{port}/\n" for h in hosts))
        seed = [*CLI, "seed", str(tmp_path / "seeds.txt"), "--frontier", redis_url]
        p = subprocess.run([*seed, "--crawl-id", crawl_id, *resolve], capture_output=True,
                           text=True, timeout=60)  # fmt: skip
        assert p.returncode == 0, p.stderr
        cmd = [
            *CLI, "worker", "--frontier", redis_url, "--crawl-id", crawl_id, *resolve,
            "--user-agent", UA, "--no-progress", "--jitter", "0", "--delay-factor", "0",
            "--min-delay", "0.3", "--ip-min-delay", "0.4", "--max-time", "90",
        ]  # fmt: skip
        pipes = {"text": True, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
        workers = [
            subprocess.Popen([*cmd, "--out", str(tmp_path / f"w{i}")], **pipes) for i in range(2)
        ]
        results = [w.communicate(timeout=120) for w in workers]
        rows = read_log(log)
    assert len(rows) == 4 * 6  # robots.txt, / and /p/1..4 on every site: the crawl was whole
    gaps = [b["start"] - a["end"] for a, b in itertools.pairwise(rows)]
    assert max(gaps) < 5.0  # the server was never left alone long
    for i, (w, (out, err)) in enumerate(zip(workers, results, strict=True)):
        assert w.returncode == 0, err[-3000:]
        assert "nothing may be asked" not in err, err  # nothing backed off or was parked
        summary = json.loads((tmp_path / f"w{i}" / "summary.json").read_text())
        assert summary["hosts"] == len(_hosts_asked(tmp_path / f"w{i}")), (summary, out)
