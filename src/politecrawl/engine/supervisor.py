"""The supervisor of a partitioned crawl (``--processes N``): the ``politecrawl crawl`` process.

It holds the output folder's lock, spawns the N crawler processes (each a ``Crawler`` with its
``partition.Partition``), waits for them and merges their summaries into ``summary.json``
(see ``partition``). Apart from ``partition`` because it builds crawlers, and the crawler's
context uses a ``Partition``: one module for both would import itself in a circle.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import dataclasses
import json
import multiprocessing
import multiprocessing.connection
import os
import resource
import shutil
import signal
import socket
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from typing import Any

from politecrawl import errors
from politecrawl.config import CrawlConfig
from politecrawl.engine import gctune, metrics
from politecrawl.engine.crawler import Crawler
from politecrawl.engine.journal import summary_of, write_summary
from politecrawl.engine.partition import STOP_REASONS, Partition, Shared, tagged
from politecrawl.errors import ConfigError, PolitecrawlError
from politecrawl.storage.outdir import check_layout, record_seeds
from politecrawl.storage.outlock import OutputLock

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def check_partitioned(config: CrawlConfig) -> None:
    """What a crawl of many processes cannot do, said before anything is written to its
    folder (a refused run left ``partitions.json`` there, and the corrected command was then
    refused as a resume of another layout)."""
    if config.politeness.key_mode == "ip":
        raise ConfigError(
            "--politeness-key ip needs every site resolved before it is assigned to a "
            "process: use --processes 1 with it (or the default host key)"
        )
    if config.state_file is not None:
        raise ConfigError("--state is one file for one process: use --processes 1 with it")
    _open_files_for(config.processes)


def _open_files_for(n: int) -> None:
    """Room for the n x (n - 1) channel ends the supervisor holds while it starts the
    partitions (each pair of processes talks over a socket pair): the soft limit raised as
    far as the hard one allows, or one line now (256 processes ran out of descriptors in
    the middle of starting, under the usual limit of 1,024)."""
    need = n * (n - 1) + 512  # and the files, logs and sockets of the process itself
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return
    if hard != resource.RLIM_INFINITY and hard < need:
        raise ConfigError(
            f"--processes {n} needs about {need:,} open files (a channel between every two "
            f"processes) and this system allows {hard:,} (ulimit -Hn): use fewer processes"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def run_partitioned(
    config: CrawlConfig, on_locked: Callable[[], None] | None = None
) -> tuple[dict[str, Any], str | None]:
    """The crawl in ``config.processes`` crawler processes; returns the merged summary and the
    first fatal error. Runs in the CLI's process, which holds the output folder's lock;
    ``on_locked`` runs once it does (the CLI writes ``config.json`` there: a run refused by
    the lock must not overwrite a live crawl's)."""
    n, out = config.processes, config.out_dir
    check_partitioned(config)
    if config.metrics:  # taken: one line now, before the folder is touched or a fork
        metrics.check_address(config.metrics)
    out.mkdir(parents=True, exist_ok=True)
    lock = OutputLock(out)
    try:
        check_layout(out, n)
        if on_locked is not None:
            on_locked()
        record_seeds(out, config.seeds)  # every run's seeds (segment build reads them)
        # fork: the partitions start with this process's modules already imported (0.5 s of
        # imports each with spawn, on the crawl's critical path); safe here, where no thread,
        # event loop or database is open yet (only the output folder's lock, which they share)
        ctx: Any = multiprocessing.get_context(
            "fork" if sys.platform.startswith("linux") else "spawn"
        )
        metrics_dir = None
        if config.metrics:  # one endpoint for the whole crawl, the partitions' sum
            metrics_dir = tempfile.mkdtemp(prefix="politecrawl-metrics-")
            metrics.before_partitions(metrics_dir)
        shared = Shared.make(ctx, n)
        ends: dict[int, dict[int, socket.socket]] = {i: {} for i in range(n)}
        for i in range(n):
            for j in range(i + 1, n):
                a, b = socket.socketpair()
                ends[i][j], ends[j][i] = a, b
        child_cfg = dataclasses.replace(config, processes=1, progress=False)

        def others(i: int) -> list[socket.socket]:
            """The channel ends a forked partition inherits but does not own: it closes them,
            so that a partition that dies is seen to (its peers' ends reach EOF) and each
            holds n - 1 channels, not n x (n - 1). Spawned ones inherit nothing."""
            if ctx.get_start_method() != "fork":
                return []
            return [s for j, socks in ends.items() if j != i for s in socks.values()]

        procs = [
            ctx.Process(
                target=_partition_main,
                args=(child_cfg, i, n, ends[i], shared, os.getpid(), others(i)),
                name=f"politecrawl-partition-{i}",
            )
            for i in range(n)
        ]
        for i in range(n):  # what a last run left must not pass for this one's
            (out / tagged("summary.json", i)).unlink(missing_ok=True)
        for p in procs:
            p.start()
        for socks in ends.values():
            for sock in socks.values():
                sock.close()
        if metrics_dir is not None:  # (a thread: only once the partitions are forked)
            server = metrics.serve_partitions(str(config.metrics), metrics_dir)
        try:
            _wait(procs, shared)
        finally:
            if metrics_dir is not None:
                server.shutdown()
                shutil.rmtree(metrics_dir, ignore_errors=True)
        summaries = []
        for i in range(n):
            path = out / tagged("summary.json", i)
            with contextlib.suppress(OSError, ValueError):
                summaries.append(json.loads(path.read_text()))
        for s in summaries:
            if "error" in s:  # the error a partition stopped on, as the one process says it
                kind = getattr(errors, s["error"], errors.PolitecrawlError)
                raise kind(s["message"])
        counters = merged_counters(summaries)
        stops = [s.get("stopped_by", "done") for s in summaries]
        stopped_by = next((s for s in stops if s != "done"), "done")
        fatal = next((s["fatal"] for s in summaries if s.get("fatal")), None)
        if len(summaries) < n:
            if all(p.exitcode in (0, 130) for p in procs):  # a second Ctrl-C: out at once
                stopped_by = "interrupted"
            else:
                stopped_by = "partition_died"
                fatal = fatal or "a crawler process ended without saving its summary"
        summary = summary_of(
            counters,
            seconds=max((float(s.get("seconds", 0.0)) for s in summaries), default=0.0),
            queued_left=sum(int(s.get("queued_left", 0)) for s in summaries),
            stopped_by=stopped_by,
            sites_lost=[x for s in summaries for x in s.get("sites_lost", [])],
        )
        write_summary(out / "summary.json", summary)
        crawl_wide_focus(out, n)
        return summary.to_json(), fatal
    finally:
        lock.release()


def _wait(procs: list[Any], shared: Shared) -> None:
    """Until every partition has ended. SIGTERM is passed on; Ctrl-C reaches them all (one
    process group), so this process ignores it from here on (a second Ctrl-C ends them at
    once, and must not cut the summary short here). A partition that dies stops the others
    (they save and end)."""

    def forward(signum: int, _frame: Any) -> None:
        for p in procs:
            if p.is_alive() and p.pid is not None:
                with contextlib.suppress(OSError):
                    os.kill(p.pid, signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    running = {p.sentinel: p for p in procs}
    while running:
        for ended in multiprocessing.connection.wait(list(running)):
            p = running.pop(ended)
            p.join()
            if p.exitcode != 0:
                with shared.lock:
                    if not shared.state[4 * shared.count]:
                        shared.state[4 * shared.count] = float(STOP_REASONS.index("partition_died"))


def _partition_main(
    config: CrawlConfig,
    index: int,
    count: int,
    socks: dict[int, socket.socket],
    shared: Shared,
    parent: int,
    not_mine: list[socket.socket],
) -> None:
    """One partition's life: a crawler of its sites, its summary saved for the supervisor."""
    for sock in not_mine:
        sock.close()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # killed with the supervisor
    if os.getppid() != parent:
        return
    gctune.tune()
    part = Partition(index, count, socks, shared, config.politeness.key_mode)
    path = config.out_dir / tagged("summary.json", index)
    try:
        crawler = Crawler(config, partition=part)
        summary = asyncio.run(crawler.run())
    except PolitecrawlError as exc:  # a damaged store, say: one line, as with one process
        part.request_stop("partition_died")
        path.write_text(json.dumps({"error": type(exc).__name__, "message": str(exc)}) + "\n")
        return
    data = summary.to_json()
    data["fatal"] = crawler.fatal
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)


def crawl_wide_focus(out: Any, n: int) -> None:
    """``focus.json`` (partition 0's model) says the crawl's relevant and scored pages, every
    partition's (``own_...``: partition 0's, which its next run goes on from)."""
    path = out / "focus.json"
    states = []
    for i in range(n):
        with contextlib.suppress(OSError, ValueError):
            states.append(json.loads((out / tagged("focus.json", i)).read_text()))
    if not states or not isinstance(states[0], dict):
        return
    first = states[0]
    for name in ("relevant_pages", "scored_pages"):
        first[f"own_{name}"] = first.get(f"own_{name}", first.get(name, 0))
        first[name] = sum(int(s.get(f"own_{name}", s.get(name, 0))) for s in states)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(first, indent=2) + "\n")
    tmp.replace(path)


# What each process saw of the crawler's own network: the partitions share one picture of it
# (``partition.OutageBoard``) and pause together, so one outage is counted by each of them;
# the crawl's figure is the largest, not the sum (two processes: one 20 s outage said as 2
# outages of 40 s in all).
_CRAWL_WIDE = frozenset({"outages", "outage_ms", "outage_false_alarms"})


def merged_counters(summaries: list[dict[str, Any]]) -> Counter[str]:
    """The partitions' counters summed, but those of the crawl as a whole (``_CRAWL_WIDE``)."""
    counters: Counter[str] = Counter()
    for s in summaries:
        for name, value in s.get("counters", {}).items():
            if name in _CRAWL_WIDE:
                counters[name] = max(counters[name], value)
            else:
                counters[name] += value
    return counters
