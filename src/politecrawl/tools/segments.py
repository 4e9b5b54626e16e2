"""Offline segments, the seeds' first crawl model: build a fixed list, then fetch it politely.

``build`` reads earlier crawls' folders: every URL they discovered and did not fetch, and
every link a segment fetch recorded (``log/links.jsonl``: a fetch follows no link, only its
URLs' redirects, but keeps the links it found). A URL never fetched is queued, was in flight
when the crawl stopped, or was dropped for a passing reason (``outcome.PASSING_DROPS``: its
robots.txt unreachable, its TLS handshake failed, its retries spent, the queue's cap): those
are offered. One that any crawl fetched, or that a crawl dropped for a lasting reason
(robots.txt disallows it, a 404, ...), is not. The rest pass through the same gate as live
links (``admission.Gate``: scope, never-crawl list, extension filter, traps,
``--max-urls-per-host``), minus what an earlier segment already handed out (every ``*.seg``
file beside ``--out``), and are written sorted by registered domain then URL (one site's URLs
together, the order the fetcher's politeness keys want). Every URL the crawls know is written
or counted as left out, by reason.

The gate sees the URLs best first (shallowest, then highest priority, then URL order), so a
per-host cap keeps the same URLs each time, and the best ones. ``politecrawl fetch SEGMENT``
then crawls that list; ``--state FILE`` keeps robots.txt copies, response times and delays
across segments, so a site's robots.txt is not asked again while fresh. So the loop
crawl -> build -> fetch -> build -> fetch ... goes on, segment after segment, without repeats,
and ends with a segment of no URL (``fetch`` says there is nothing to fetch).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from politecrawl.config import seed_lines
from politecrawl.engine.admission import HOST_CAP, Gate
from politecrawl.engine.outcome import PASSING_DROPS
from politecrawl.errors import ConfigError
from politecrawl.storage.logs import LogDamage, iter_log_records
from politecrawl.storage.records import LINKS
from politecrawl.urls.canonical import host_of, registered_domain

SUFFIX = ".seg"  # what a segment is named: later builds read every *.seg beside --out
_MAGIC = "# politecrawl segment"
_HEADER = f"{_MAGIC}: one URL a line, sorted by registered domain\n"
_PASSING = frozenset(r.value for r in PASSING_DROPS)
# counts' keys: what a build did with each URL it knew (``describe`` words them)
FETCHED, ISSUED, OVER_CAP = "fetched_before", "issued_before", "over_cap"
DROPPED, REFUSED, AGAIN = "dropped:", "refused:", "again:"  # + a DropReason value

log = logging.getLogger(__name__)

Rank = tuple[int, float]  # (depth, -priority): smaller is better


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


def check_fetch_out(out: Path | str | None) -> None:
    """Refuse a ``fetch --out`` that names a folder ``crawl`` made (its ``config.json`` says
    ``follow_links``): a fetch there (``--scope any``) queued the crawl's out-of-scope
    refusals again and rewrote its summary and config. A folder an earlier ``fetch`` made
    (``follow_links: false``), or a new one, goes on. Before anything is read or written."""
    if out is None:
        return
    out = Path(out)
    try:
        made = json.loads((out / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # no record of a crawl: a new folder, or one a fetch is making
    if isinstance(made, dict) and made.get("follow_links") is not False:
        raise ConfigError(
            f"--out {out} is a folder `politecrawl crawl` made (it follows links, in its own "
            "scope): a fetch would change it; give the fetch another folder (segment build "
            "reads both)"
        )


def read_segment(path: Path) -> tuple[str, ...]:
    """A segment's URLs (one a line, ``#`` comments), canonical; none is the loop's end,
    not a mistake (``fetch`` says there is nothing to fetch). ``-`` is standard input."""
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(f"segment file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise ConfigError(f"cannot read segment file {path}: {why}") from None
    if not any(line.split("#", 1)[0].strip() for line in text.splitlines()):
        return ()
    return seed_lines(text, str(path))


def _is_segment(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(len(_MAGIC)) == _MAGIC.encode()
    except OSError:
        return False


def _rows(crawl_dir: Path) -> Iterator[tuple[str, int, str | None, int, float]]:
    """(url, state, outcome, depth, priority) of every URL a crawl discovered (in every
    process's state file, ``state@1.sqlite``... with ``--processes``: ``partition.tagged``)."""
    path = crawl_dir / "state.sqlite"
    if not path.is_file():
        raise ConfigError(f"{crawl_dir} is not a crawl folder (no state.sqlite in it)")
    for one in [path, *sorted(crawl_dir.glob("state@*.sqlite"))]:
        db = sqlite3.connect(f"file:{one}?mode=ro", uri=True)
        try:
            yield from db.execute("SELECT url, state, outcome, depth, priority FROM urls")
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"cannot read {one}: {exc}") from None
        finally:
            db.close()


def _recorded_links(crawl_dir: Path) -> Iterator[tuple[str, str]]:
    """(page, link) for the links a segment fetch found and did not follow
    (``journal.record_links``). What a damaged log could not give is said (a segment built
    from part of the links is smaller than the user expects)."""
    damage = LogDamage()
    for rec in iter_log_records(crawl_dir / "log", "links", shape=LINKS, damage=damage):
        for link in rec["links"]:
            yield rec["url"], link
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


class _Known:
    """What the crawls say of each URL: fetched, dropped for a lasting reason, or never
    fetched (with its best rank, and the passing drop it had, if any)."""

    def __init__(self) -> None:
        self.fetched: set[str] = set()
        self.dropped: dict[str, str] = {}
        self.rank: dict[str, Rank] = {}
        self.again: dict[str, str] = {}

    def offer(self, url: str, rank: Rank) -> None:
        old = self.rank.get(url)
        self.rank[url] = rank if old is None else min(old, rank)

    def read(self, crawl_dir: Path) -> None:
        depth: dict[str, int] = {}
        for url, state, outcome, d, priority in _rows(crawl_dir):
            depth[url] = d
            dropped = outcome is not None and outcome.startswith("dropped:")
            reason = outcome[len("dropped:") :] if outcome is not None and dropped else None
            if state != 2:  # queued, or in flight when the crawl stopped
                self.offer(url, (d, -priority))
            elif reason in _PASSING:
                self.offer(url, (d, -priority))
                self.again.setdefault(url, reason)
            elif reason is not None:
                self.dropped.setdefault(url, reason)
            else:  # stored, not modified, a redirect: fetched
                self.fetched.add(url)
        for page, url in _recorded_links(crawl_dir):
            self.offer(url, (depth.get(page, 0) + 1, 0.0))


def build(crawl_dirs: Sequence[Path], out: Path, gate: Gate) -> Counter[str]:
    """Write the next segment (``check_out`` first); returns counts: ``written``, and for each
    URL known and left out, why (``describe``)."""
    known = _Known()
    for d in crawl_dirs:
        known.read(d)
    issued = issued_before(out)
    counts: Counter[str] = Counter()
    counts[FETCHED] = len(known.fetched)
    for url, reason in known.dropped.items():
        if url not in known.fetched:
            counts[DROPPED + reason] += 1
    keep = []
    for url, _ in sorted(known.rank.items(), key=lambda item: (item[1], item[0])):
        if url in known.fetched or url in known.dropped:
            continue
        if url in issued:
            counts[ISSUED] += 1
            continue
        why = gate.refusal(url)
        if why is not None:
            counts[OVER_CAP if why[1] == HOST_CAP else REFUSED + why[0].value] += 1
            continue
        gate.admitted(url)
        if url in known.again:
            counts[AGAIN + known.again[url]] += 1
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
    except BaseException:  # a full disk, Ctrl-C: no half-written temporary file stays
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def describe(out: Path, counts: Counter[str]) -> str:
    """The build's one line: URLs written, those offered again, and those left out by why."""

    def listed(prefix: str) -> str:
        return ", ".join(
            f"{k[len(prefix) :]} {v}" for k, v in sorted(counts.items()) if k.startswith(prefix)
        )

    n = counts["written"]
    line = f"segment {out}: {n} URL{'s' * (n != 1)}"
    if n == 0:
        line += " (nothing left to fetch: the loop's end)"
    again = listed(AGAIN)
    if again:
        line += f"; offered again (never fetched, for a passing reason): {again}"
    left = [
        f"fetched before {counts[FETCHED]}" if counts[FETCHED] else "",
        f"dropped before for good: {listed(DROPPED)}" if listed(DROPPED) else "",
        f"in an earlier segment {counts[ISSUED]}" if counts[ISSUED] else "",
        f"refused by the gate: {listed(REFUSED)}" if listed(REFUSED) else "",
        f"over --max-urls-per-host {counts[OVER_CAP]}" if counts[OVER_CAP] else "",
    ]
    if any(left):
        line += "; left out: " + "; ".join(x for x in left if x)
    return line
