"""``politecrawl demo``: crawl the bundled local test web and check ourselves against it.

The test web's own access log is the judge: the demo reports how many politeness violations
(two requests to one host at once, or closer than the delay) it saw, which must be zero.

The test web runs in a process of its own (``python -m politecrawl.demo.web``), so its clock
and event loop are not the crawler's: a server sharing the crawler's loop starts a handler
late when the loop is busy, and then sees a gap shorter than the crawler really left (2
"violations" in 6 runs on a loaded machine, each fine in the crawler's own log). That process
dies with the demo however the demo ends (it stops when its standard input, a pipe from the
demo, closes: ``demo.web``), and the crawl stops if the web dies first.

A demo resumed on its folder serves the web on the port it was made with (``testweb.json``):
every queued URL carries that port, and only ``*.test`` on that port is pinned to 127.0.0.1,
so on another port the queued URLs' names would go to the system's DNS resolver. The crawl's
allow-list keeps it to those pinned URLs, so no URL the demo meets is ever looked up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import sys
from pathlib import Path
from typing import Any

from politecrawl.config import DEMO_UA, CrawlConfig, FetchConfig, PolitenessConfig
from politecrawl.demo.accesslog import load_access_log, politeness_violations
from politecrawl.demo.web import TestWeb
from politecrawl.engine.crawler import Crawler
from politecrawl.errors import ConfigError, PolitecrawlError
from politecrawl.options import write_config
from politecrawl.storage.outdir import check_layout
from politecrawl.storage.outlock import OutputLock

_SEED = 7
WEB_RECORD = "testweb.json"  # OUT/testweb.json: the port, hosts and pages the web was made with
WEB_DIED = "test_web_died"  # the summary's stopped_by when the web ended under the crawl


def _made_with(out: Path, hosts: int, pages: int) -> int:
    """The port the folder's crawl was made with (0: a new crawl, any free port). A resumed
    crawl's web must be the same: another size is misuse; a folder with state but no record
    of its port cannot be resumed without asking DNS for its queued URLs' names."""
    record = out / WEB_RECORD
    if record.exists():
        try:
            made = json.loads(record.read_text(encoding="utf-8"))
            port, was = int(made["port"]), (int(made["hosts"]), int(made["pages"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{record} cannot be read ({exc}): give a new --out") from None
        if was != (hosts, pages):
            raise ConfigError(
                f"{out} is a demo of {was[0]} hosts x {was[1]} pages: resume it with "
                f"--hosts {was[0]} --pages {was[1]}, or give a new --out"
            )
        return port
    if not (out / "state.sqlite").exists():
        return 0
    # made before the port was recorded: config.json's pin names it
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        rules = json.loads((out / "config.json").read_text(encoding="utf-8"))["fetch"]["resolve"]
        for rule in rules:
            if m := re.fullmatch(r"\*\.test:(\d+):127\.0\.0\.1", rule):
                return int(m.group(1))
    raise ConfigError(
        f"{out} holds a demo crawl but not the port its test web served ({WEB_RECORD}): "
        "its queued URLs would be looked up in DNS; give a new --out"
    )


def _port_free(port: int) -> bool:
    """Whether 127.0.0.1:``port`` can be listened on now (as the web binds: address reuse)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


async def _start_web(hosts: int, pages: int, log_path: Path, port: int) -> tuple[Any, int]:
    """The test web in its own process, on ``port`` (0: a free one); (process, port) once it
    serves. Its standard input is a pipe the demo never writes to: the web dies with it."""
    if port and not _port_free(port):
        raise PolitecrawlError(
            f"the demo's test web cannot serve on 127.0.0.1:{port} again, the port this "
            f"crawl was made with and its queued URLs carry: it is in use; free it, or give "
            "a new --out"
        )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "politecrawl.demo.web", "--hosts", str(hosts), "--pages",
        str(pages), "--seed", str(_SEED), "--access-log", str(log_path), "--port", str(port),
        "--append-log", "--until-stdin-closes",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
    except TimeoutError:
        line = b""
    m = re.search(rb"127\.0\.0\.1:(\d+)", line)
    if m is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise PolitecrawlError("the demo's test web did not start")
    return proc, int(m.group(1))


async def run_demo(out: Path, hosts: int, pages: int, min_delay_s: float) -> dict[str, Any]:
    check_layout(out, 1)  # an earlier crawl's output without its state is refused, as by crawl
    port = _made_with(out, hosts, pages)
    out.mkdir(parents=True, exist_ok=True)
    OutputLock(out).release()  # a live demo on the folder: said so, not as its port in use
    log_path = out / "testweb-access.jsonl"
    proc, port = await _start_web(hosts, pages, log_path, port)
    watch = asyncio.ensure_future(proc.wait())
    try:
        record = {"port": port, "hosts": hosts, "pages": pages, "seed": _SEED}
        (out / WEB_RECORD).write_text(json.dumps(record) + "\n", encoding="utf-8")
        web = TestWeb(n_hosts=hosts, pages_per_host=pages, seed=_SEED, port=port)  # addresses
        cfg = CrawlConfig(
            seeds=tuple(web.seed_urls(min(hosts, 5))),
            out_dir=out,
            fetch=FetchConfig(
                user_agent=DEMO_UA,
                resolve=(web.resolve_arg(),),
                allow_private_addresses=True,
                retry_base_s=0.5,
            ),
            # the test web is one server: one request at a time, no extra gap
            politeness=PolitenessConfig(
                min_delay_s=min_delay_s, jitter_s=0.05, park_s=2.0, ip_min_delay_s=0.0
            ),
            scope="any",
            # only what the pin covers: no URL of the demo's is ever asked of DNS
            allow=(rf"re:^http://h\d+\.test:{port}/",),
            exclude_check_s=1.0,
            robots_ttl_s=3600.0,
        )
        crawler = Crawler(cfg)
        write_config(cfg)  # as `crawl` does: the settings are part of the output

        def died(_: object) -> None:  # the web ended under the crawl: nothing left to judge
            crawler.stop(WEB_DIED)

        watch.add_done_callback(died)
        try:
            summary = (await crawler.run()).to_json()
        finally:
            watch.remove_done_callback(died)
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        await watch
    seen = load_access_log(str(log_path))
    problems = politeness_violations(seen, min_delay_s)
    print(
        f"test web: {hosts} hosts x {pages} pages on 127.0.0.1:{port} (its own process); "
        f"server saw {len(seen)} requests, {len(problems)} politeness violations"
    )
    for p in problems[:10]:
        print(f"  violation: {p}")
    return summary


def what_went_wrong(summary: dict[str, Any]) -> tuple[str | None, str | None]:
    """(what the printed summary says of the test web's deliberate errors, the line for
    stderr on failures that are no part of it). The web's errors are its HTTP answers (403,
    404, 410, 429, 500, 503); a name not resolving, a refused connection or a timeout is a
    real failure of the demo, and calling it deliberate would hide it."""
    errors: dict[str, int] = summary["errors"]
    mine = sum(n for k, n in errors.items() if k.startswith("http_"))
    real = {k: n for k, n in errors.items() if not k.startswith("http_")}
    said = None
    if mine:
        said = (
            f"\nThe {mine} HTTP errors are deliberate: the test web answers some URLs with 403, "
            "404, 410, 429, 500 and 503, serves robots.txt errors and redirect loops, to show "
            "how the crawler treats them (see log/requests.jsonl)."
        )
    wrong = []
    if summary["stopped_by"] == WEB_DIED:
        wrong.append("the test web ended before the crawl did")
    if real:
        listed = ", ".join(f"{k} {n}" for k, n in sorted(real.items()))
        wrong.append(f"{sum(real.values())} errors are no part of the test web ({listed})")
    if not wrong:
        return said, None
    return said, f"politecrawl: demo failed: {'; '.join(wrong)} (see log/requests.jsonl)"
