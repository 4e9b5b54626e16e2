"""Where a crawl's CPU goes, by stage: py-spy samples of the crawler, each sample charged to
the stage of its innermost politecrawl (or library) frame.

    python bench/stages.py PROFILE.txt        # a py-spy ``--format raw`` file

Used by ``bench/throughput.py --profile``. Stages: fetch (aiohttp, the event loop, sockets),
decode, parse, admission (gate, URLs, seen-set), frontier (SQLite/Redis), WARC, logs, focus
(relevance, prioritiser), dedup (fingerprints, continuity), engine (crawler.py and the turn's
modules), other.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

# (stage, substrings of a frame's file path); the first rule matching the innermost frame wins
RULES: list[tuple[str, tuple[str, ...]]] = [
    ("decode", ("politecrawl/textdecode", "chardet/", "ftfy/", "charset_normalizer/")),
    (
        "parse",
        (
            "politecrawl/parse",
            "politecrawl/content/page.py",
            "politecrawl/htmlguard",
            "politecrawl/page_directives",
            "selectolax/",
        ),
    ),
    (
        "admission",
        (
            "politecrawl/admission",
            "politecrawl/urls",
            "politecrawl/traps",
            "politecrawl/seen",
            "politecrawl/exclusions",
            "yarl/",
            "idna/",
            "publicsuffixlist/",
        ),
    ),
    ("frontier", ("politecrawl/frontier/", "sqlite3/", "redis/")),
    ("WARC", ("politecrawl/storage/warc", "fastwarc/", "gzip.py", "zlib")),
    ("logs", ("politecrawl/storage/logs", "json/")),
    ("focus", ("politecrawl/focus", "politecrawl/relevance", "politecrawl/prioritizer")),
    (
        "dedup",
        (
            "politecrawl/continuity",
            "politecrawl/fingerprint",
            "politecrawl/duprules",
            "politecrawl/revisit",
        ),
    ),
    ("robots", ("politecrawl/robots",)),
    ("politeness", ("politecrawl/politeness",)),
    (
        "fetch",
        ("politecrawl/fetch", "aiohttp/", "multidict/", "asyncio/", "selectors.py", "ssl.py"),
    ),
    (
        "engine",
        (
            "politecrawl/crawler",
            "politecrawl/turn",
            "politecrawl/robotsgate",
            "politecrawl/request",
            "politecrawl/store",
            "politecrawl/reporting",
            "politecrawl/context",
            "politecrawl/sinks",
        ),
    ),
]


def stage_of(stack: str) -> str:
    """The stage of one ``a (file:line);b (file:line);...`` stack, leaf last."""
    frames = stack.split(";")
    for frame in reversed(frames):
        for stage, needles in RULES:
            if any(n in frame for n in needles):
                return stage
    return "other"


def breakdown(raw: Path) -> Counter[str]:
    """Samples per stage from a py-spy raw (collapsed stacks) file."""
    counts: Counter[str] = Counter()
    for line in raw.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if stack and n.isdigit():
            if "(idle)" in stack or "select (selectors.py" in stack.rsplit(";", 1)[-1]:
                continue  # waiting, not working
            counts[stage_of(stack)] += int(n)
    return counts


def format_breakdown(counts: Counter[str], cpu_s: float | None = None) -> str:
    total = sum(counts.values()) or 1
    lines = []
    for stage, n in counts.most_common():
        share = n / total
        extra = f"  ~{share * cpu_s:.2f} CPU-s" if cpu_s is not None else ""
        lines.append(f"  {stage:<11} {share:6.1%}{extra}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(format_breakdown(breakdown(Path(sys.argv[1]))))
