"""What a test web saw: its access log, and the politeness judged from it.

Every local test server (``demo.web.TestWeb``, and the test-only webs in tests/) records each
request as an ``AccessEntry``, in memory and as a JSON line when asked; ``load_access_log``
reads such a file back (a web in another process, a killed writer) and
``politeness_violations`` checks it the way a site operator would: per host, no overlapping
requests and no starts closer than the delay. Apart from the servers because tests and
benchmarks use it on its own, on logs written by any of them.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass

import orjson

__all__ = ["AccessEntry", "entry_json", "load_access_log", "politeness_violations"]


@dataclass(frozen=True, slots=True)
class AccessEntry:
    """One request as the server saw it."""

    host: str
    path: str
    method: str
    status: int
    start: float
    end: float
    user_agent: str
    headers: dict[str, str]


def entry_json(entry: AccessEntry) -> str:
    return orjson.dumps(
        {
            "host": entry.host,
            "path": entry.path,
            "method": entry.method,
            "status": entry.status,
            "start": entry.start,
            "end": entry.end,
            "user_agent": entry.user_agent,
            "headers": entry.headers,
        },
        option=orjson.OPT_NON_STR_KEYS,  # header names are multidict's istr, a str subclass
    ).decode()  # every request is logged: the cheap encoder leaves the CPU to the crawler


def load_access_log(path: str) -> list[AccessEntry]:
    """Read a JSON-lines access log; an incomplete last line (writer killed) is skipped."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    entries: list[AccessEntry] = []
    last = len(lines) - 1
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            if i == last:
                break
            raise
        entries.append(
            AccessEntry(
                host=str(d["host"]),
                path=str(d["path"]),
                method=str(d["method"]),
                status=int(d["status"]),
                start=float(d["start"]),
                end=float(d["end"]),
                user_agent=str(d.get("user_agent", "")),
                headers={str(k): str(v) for k, v in d.get("headers", {}).items()},
            )
        )
    return entries


_TOLERANCE_S = 0.005


def politeness_violations(
    entries: list[AccessEntry], min_gap_s: float, tolerance_s: float = _TOLERANCE_S
) -> list[str]:
    """Per host: overlapping requests ("concurrent ...") and too-close starts ("gap ...").

    ``tolerance_s`` absorbs clock granularity; a server sharing the crawler's event loop (the
    in-process tests) needs more, since its handler starts late when the loop is busy.
    """
    by_host: dict[str, list[AccessEntry]] = {}
    for e in entries:
        by_host.setdefault(e.host, []).append(e)
    problems: list[str] = []
    for host in sorted(by_host):
        seq = sorted(by_host[host], key=lambda e: (e.start, e.end))
        busy = seq[0]  # the earlier request that ends last
        for prev, cur in itertools.pairwise(seq):
            if cur.start < busy.end:
                problems.append(
                    f"concurrent {host}: {cur.method} {cur.path} started at {cur.start:.6f} "
                    f"before {busy.method} {busy.path} ended at {busy.end:.6f}"
                )
            gap = cur.start - prev.start
            if gap < min_gap_s - tolerance_s:
                problems.append(
                    f"gap {host}: {cur.method} {cur.path} started {gap:.3f} s after "
                    f"{prev.method} {prev.path} (min {min_gap_s:.3f} s)"
                )
            if cur.end > busy.end:
                busy = cur
    return problems
