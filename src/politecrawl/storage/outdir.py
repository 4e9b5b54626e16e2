"""What an output folder holds, told before a crawl opens it: nothing yet, a crawl to resume
(made with how many processes), or a crawl's output whose state is gone.

The state (``state.sqlite``, ``state@i.sqlite`` with ``--processes``) is the only record of the
URLs found but not fetched yet, of what was fetched and of the counts; the logs, the WARC files
and ``summary.json`` cannot give it back (no log lists the links a page queued). Opened without
it, a folder holding an earlier crawl's output would be crawled afresh: everything fetched
again and ``summary.json`` overwritten, the earlier figures lost without a word. So that is
refused, one line naming the missing file: put it back to resume, or give a new ``--out``.

A crawl is resumed with the processes it was made with (its sites are spread over them by
hash, and another count would hand a site to two processes): ``partitions.json`` says how
many, and when it is missing the files tagged ``@i`` say it.

``seeds.txt`` holds the seeds of every run into the folder, each once, in the order first given
(``record_seeds``): a resume with a new seed, or another segment fetched into the same folder,
adds its own. ``segment build --scope host|domain`` takes its scope from it.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

from politecrawl.errors import ConfigError

__all__ = ["LAYOUT", "SEEDS", "check_layout", "check_state", "processes_of", "record_seeds"]

LAYOUT = "partitions.json"  # OUT/partitions.json: how many processes the crawl was made with
SEEDS = "seeds.txt"  # OUT/seeds.txt: every run's seeds, one a line

# a file of process i > 0 (``partition.tagged``): state@1.sqlite, log/requests@1.jsonl, ...
_TAGGED = re.compile(r"^[a-z_]+@(\d+)[.-]")


def _tag(index: int) -> str:
    return f"@{index}" if index else ""


def processes_of(out: Path) -> tuple[int | None, str]:
    """How many processes the crawl in ``out`` was made with (None: no crawl there yet),
    and what says so."""
    layout = out / LAYOUT
    if layout.exists():
        with contextlib.suppress(ValueError, OSError, KeyError, TypeError):
            return int(json.loads(layout.read_text())["processes"]), str(layout)
    found = {
        int(m.group(1)): p.name
        for folder in (out, out / "log", out / "warc")
        if folder.is_dir()
        for p in folder.iterdir()
        if (m := _TAGGED.match(p.name))
    }
    if found:
        last = max(found)
        return last + 1, f"{found[last]}, with {LAYOUT} missing"
    if (out / "state.sqlite").exists():
        return 1, "state.sqlite"
    return None, ""


def _output_of(out: Path, index: int) -> list[str]:
    """What process ``index`` of a crawl left in ``out`` besides its state."""
    t = _tag(index)
    found = []
    if index == 0 and (out / "summary.json").exists():
        found.append("summary.json")
    log = out / "log"
    if log.is_dir() and any(log.glob(f"requests{t}.*jsonl*")):
        found.append(f"log/requests{t}.jsonl")
    if (out / f"pages{t}.jsonl").exists():
        found.append(f"pages{t}.jsonl")
    warc = out / "warc"
    if warc.is_dir() and any(warc.glob(f"politecrawl{t}-*.warc.gz*")):
        found.append("warc/")
    return found


def _state_missing(out: Path, index: int) -> str | None:
    """Why process ``index``'s state is not there (None: it is)."""
    name = f"state{_tag(index)}.sqlite"
    path = out / name
    if not path.exists():
        return f"{name} is missing"
    wal = out / f"{name}-wal"
    if path.stat().st_size == 0 and not (wal.exists() and wal.stat().st_size > 0):
        return f"{name} is empty"
    return None


def check_state(out: Path, index: int = 0) -> None:
    """Refuse a folder holding process ``index``'s output without its state (see above)."""
    why = _state_missing(out, index)
    found = _output_of(out, index) if why is not None else []
    if found:
        raise ConfigError(
            f"{out} holds an earlier crawl's output ({', '.join(found)}) but not its state: "
            f"{why}, and a crawl here would fetch everything again and overwrite "
            "summary.json; put it back to resume, or give a new --out to start afresh"
        )


def check_layout(out: Path, processes: int, *, write: bool = True) -> None:
    """Before a crawl (or a resume) on ``out`` with ``processes`` processes: the count it
    was made with, each process's state there if its output is; ``partitions.json`` written
    for a new crawl of more than one process (or written again), unless ``write`` is False
    (a check before the crawl's other options are judged: a refused run writes nothing)."""
    made, source = processes_of(out)
    if made is not None and made != processes:
        raise ConfigError(
            f"{out} is a crawl made with --processes {made} ({source}): resume it with "
            f"--processes {made} (its sites are spread over that many processes)"
        )
    for index in range(processes):
        check_state(out, index)
    layout = out / LAYOUT
    if write and processes > 1 and not layout.exists():
        out.mkdir(parents=True, exist_ok=True)
        layout.write_text(json.dumps({"processes": processes}) + "\n")


def check_judge(out: Path, judges: dict[str, str | None]) -> None:
    """A resume judges relevance as its crawl did: its queue is ranked and its relevant pages
    counted by the crawl's ``--topic`` / ``--relevance`` (``config.json``), so another one
    would mix the two in silence (a resume with a new topic stopped at --target-relevant
    after 5 pages of it, counting the old topic's 20). Refused; a crawl made without either
    may be given one."""
    try:
        made = json.loads((out / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # a new crawl (or no record): nothing to keep to
    if not isinstance(made, dict):
        return
    for flag, now in judges.items():
        before = made.get(flag[2:])
        if before and before != now:
            raise ConfigError(
                f"{out} is a crawl made with {flag} {before!r}: a resume ranks its queue and "
                f"counts its relevant pages by it, so {flag} {now!r} would mix the two; give "
                f"the same {flag}, or another --out for the new one"
            )


def record_seeds(out: Path, seeds: tuple[str, ...] | list[str]) -> None:
    """Add to ``OUT/seeds.txt`` the seeds it does not hold yet (appended: the earlier runs'
    stay first)."""
    path = out / SEEDS
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    have = set(text.splitlines())
    new = [u for u in dict.fromkeys(seeds) if u not in have]
    if new:
        with path.open("a", encoding="utf-8") as fh:
            fh.write("\n" if text and not text.endswith("\n") else "")
            fh.writelines(f"{u}\n" for u in new)
