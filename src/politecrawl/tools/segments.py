"""Offline segments, the seeds' first crawl model: build a fixed list, then fetch it politely.

``build`` reads earlier crawls' folders: every discovered URL that was never fetched (queued,
or dropped only for the frontier's cap) and every link a segment fetch recorded
(``log/links.jsonl``: a fetch follows no link, only its URLs' redirects, but keeps the
links it found). It passes them through the same gate as live links (``admission.Gate``:
scope, never-crawl list, extension filter, traps), drops what any crawl fetched and what an
earlier segment already handed out (every ``*.seg`` file beside ``--out``), and writes them
sorted by registered domain then URL (one site's URLs together, the order the fetcher's
politeness keys want). ``--out`` is a new file named ``*.seg`` (the name later builds read) or
a segment written before, outside every crawl folder read (``check_out``). ``politecrawl fetch
SEGMENT`` then crawls that list; ``--state FILE`` keeps robots.txt copies, response times and
delays across segments, so a site's robots.txt is not asked again while fresh. So the loop
crawl -> build -> fetch -> build -> fetch ... goes on, segment after segment, without repeats.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from politecrawl.engine.admission import Gate
from politecrawl.errors import ConfigError
from politecrawl.storage.logs import LogDamage, iter_log_records
from politecrawl.storage.records import LINKS
from politecrawl.urls.canonical import host_of, registered_domain

SUFFIX = ".seg"  # what a segment is named: later builds read every *.seg beside --out
_MAGIC = "# politecrawl segment"
_HEADER = f"{_MAGIC}: one URL a line, sorted by registered domain\n"
_UNFETCHED = "state = 0 OR outcome = 'dropped:queue_full'"

log = logging.getLogger(__name__)


def check_out(out: Path, crawl_dirs: Sequence[Path]) -> None:
    """Refuse an ``--out`` that is not a segment's to write: a folder, a name without
    ``.seg``, a missing folder, a file inside a crawl folder the build reads, an existing
    file that is not a segment. Before anything is read or written."""
    if out.is_dir():
        raise ConfigError(f"--out {out} is a folder: name the segment file to write in it")
    where = out.resolve()
    for d in crawl_dirs:
        if d.is_dir() and where.is_relative_to(d.resolve()):
            raise ConfigError(
                f"--out {out} is inside the crawl folder {d}, which the build reads: "
                "write the segment outside it"
            )
    if (out.exists() or out.is_symlink()) and not _is_segment(out):
        raise ConfigError(f"--out {out} exists and is not a segment: it is not overwritten")
    if out.suffix != SUFFIX:
        raise ConfigError(
            f"--out {out}: a segment's name ends in {SUFFIX} (later builds read the {SUFFIX} "
            f"files beside it, not to hand a URL out twice): {out.with_suffix(SUFFIX)}?"
        )
    if not out.parent.is_dir():
        raise ConfigError(f"--out {out}: there is no folder {out.parent}")


def _is_segment(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(len(_MAGIC)) == _MAGIC.encode()
    except OSError:
        return False


def _rows(crawl_dir: Path) -> Iterator[tuple[str, bool]]:
    """(url, fetched) for every URL a crawl discovered (in every process's state file,
    ``state@1.sqlite``... with ``--processes``: ``partition.tagged``)."""
    path = crawl_dir / "state.sqlite"
    if not path.exists():
        raise ConfigError(f"{crawl_dir} is not a crawl folder (no state.sqlite in it)")
    for one in [path, *sorted(crawl_dir.glob("state@*.sqlite"))]:
        db = sqlite3.connect(f"file:{one}?mode=ro", uri=True)
        try:
            yield from db.execute(f"SELECT url, NOT ({_UNFETCHED}) FROM urls")
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"cannot read {one}: {exc}") from None
        finally:
            db.close()


def _recorded_links(crawl_dir: Path) -> Iterator[str]:
    """Links a segment fetch found and did not follow (``reporting.record_links``). What a
    damaged log could not give is said (a segment built from part of the links is smaller
    than the user expects)."""
    damage = LogDamage()
    for rec in iter_log_records(crawl_dir / "log", "links", shape=LINKS, damage=damage):
        yield from rec["links"]
    for line in damage.lines(crawl_dir.parent):  # (the crawl folder named: there may be many)
        log.warning("%s", line)


def issued_before(out: Path) -> set[str]:
    """URLs already handed out: those of every other segment file in ``out``'s folder."""
    issued: set[str] = set()
    for seg in out.parent.glob(f"*{SUFFIX}"):
        if seg.resolve() == out.resolve() or not seg.is_file():
            continue
        with seg.open(encoding="utf-8", errors="replace") as fh:
            issued.update(line.strip() for line in fh if line.strip() and line[0] != "#")
    return issued


def build(crawl_dirs: Sequence[Path], out: Path, gate: Gate) -> Counter[str]:
    """Write the next segment (``check_out`` first); returns counts (written,
    fetched_before, issued_before, and drop reasons)."""
    fetched: set[str] = set()
    candidates: set[str] = set()
    for d in crawl_dirs:
        for url, was_fetched in _rows(d):
            (fetched if was_fetched else candidates).add(url)
        candidates.update(_recorded_links(d))
    issued = issued_before(out)
    counts: Counter[str] = Counter()
    keep = []
    for url in candidates:
        if url in fetched:
            counts["fetched_before"] += 1
            continue
        if url in issued:
            counts["issued_before"] += 1
            continue
        why = gate.refusal(url)
        if why is not None:
            counts[why[0].value] += 1
            continue
        gate.admitted(url)
        keep.append((registered_domain(host_of(url)), url))
    keep.sort()
    _write(out, [url for _, url in keep])
    counts["written"] = len(keep)
    return counts


def _write(out: Path, urls: list[str]) -> None:
    """All or nothing: a temporary file beside ``out``, renamed over it once complete."""
    fd, name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)  # as a file open() makes (mkstemp's is 0600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(_HEADER)
            fh.writelines(f"{url}\n" for url in urls)
        os.replace(name, out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
