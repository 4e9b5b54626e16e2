"""The documentation bed on ONE host name, a port per site: what a dead origin costs.

    python bench/origins.py [--max-time 280]

Issue 28, section 1: every site of ``bench/docbed.py`` is served on 127.0.0.1, each on a port
of its own, so all of them are one politeness key (the host) and thirteen robots.txt origins.
The Django pages link ``http://127.0.0.1:8000/`` and Flask's ``http://127.0.0.1:5000/``
(their tutorials' addresses), where nothing listens: origins whose robots.txt cannot be
reached. The real command crawls the seeds
(each site's start page); printed: HTML pages stored per site out of the files it has, URLs
dropped as ``robots_unavailable``, and the crawl's end. The code before issue 28 in the same
conditions: ``PYTHONPATH=<a checkout of it>/src python bench/origins.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent))

import docbed

from politecrawl.storage.logs import read_jsonl

UA = "benchbot/1.0 (+http://bot.example/info)"


def _app(root: Path) -> web.Application:
    async def handle(request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        f = (root / request.path.lstrip("/")).resolve()
        if f.is_dir():
            f = f / "index.html"
        if not f.is_file() or not f.is_relative_to(root):
            raise web.HTTPNotFound()
        ctype = "text/html" if f.suffix == ".html" else "application/octet-stream"
        return web.Response(body=f.read_bytes(), content_type=ctype)

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handle)
    return app


async def run(out: Path, max_time_s: float) -> int:
    runners: list[web.AppRunner] = []
    seeds: list[str] = []
    files: dict[int, tuple[str, int]] = {}  # port -> (site, HTML files)
    for s in docbed.SITES:
        if not (s.path / s.start).is_file():
            continue
        root = s.path.resolve()
        runner = web.AppRunner(_app(root), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        runners.append(runner)
        port = runner.addresses[0][1]
        seeds.append(f"http://127.0.0.1:{port}/{s.start}")
        files[port] = (s.name, sum(1 for _ in root.rglob("*.html")))
    (out / "seeds.txt").write_text("\n".join(seeds) + "\n")
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "politecrawl", "crawl", "--seeds", str(out / "seeds.txt"),
        "--user-agent", UA, "--out", str(out / "out"), "--min-delay", "0", "--jitter", "0",
        "--delay-factor", "0", "--ip-min-delay", "off", "--allow-private-addresses",
        "--scope", "host", "--no-progress", "--max-time", str(max_time_s),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=dict(os.environ),
    )  # fmt: skip
    _, err = await proc.communicate()
    seconds = time.perf_counter() - t0
    for runner in runners:
        await runner.cleanup()
    stored: dict[int, int] = {}
    for row in read_jsonl(out / "out" / "log" / "requests.jsonl"):
        if row.get("outcome") == "stored" and row["url"].endswith(".html"):
            port = int(row["url"].split("/")[2].rpartition(":")[2])
            stored[port] = stored.get(port, 0) + 1
    summary = json.loads((out / "out" / "summary.json").read_text())
    counters = summary.get("counters", summary)
    total, got = sum(n for _, n in files.values()), sum(stored.values())
    print(f"exit {proc.returncode}, {seconds:.0f} s, stopped by {summary.get('stopped_by')}")
    print(f"HTML pages stored: {got} of {total} files ({100 * got / total:.1f} %)")
    print(f"URLs dropped as robots_unavailable: {counters.get('robots_unavailable', 0)}")
    for port, (name, n) in files.items():
        print(f"  {name:<12}{stored.get(port, 0):>6} / {n}")
    if proc.returncode:
        print(err.decode()[-2000:])
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-time", type=float, default=280.0, help="the crawl's --max-time")
    args = ap.parse_args(argv)
    missing = docbed.missing("all")
    if missing:
        print(f"not installed (apt): {' '.join(missing)}")
    with tempfile.TemporaryDirectory() as tmp:
        return asyncio.run(run(Path(tmp), args.max_time))


if __name__ == "__main__":
    raise SystemExit(main())
