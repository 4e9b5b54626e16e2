"""Append-only JSON-lines logs (the request log, the robots log), rotated, compressed, kept 30 days.

Each line goes to the file in one ``write`` on an ``O_APPEND`` descriptor, so a crash leaves
whole lines or none (a torn last line is cut when the log is opened again).

Rotation (the seeds: "keep your logs for a month... compress the logs"): when the UTC day
changes, or the next line would take the current file past ``rotate_bytes``, ``requests.jsonl``
is renamed ``requests.YYYY-MM-DDTHHMMSS.jsonl`` (the UTC time of the rotation, so the file holds
records up to that moment, and names sort in time order), then gzip-compressed to
``.jsonl.gz`` through a temporary file and an atomic rename. A crash between rename and
compress leaves a readable ``.jsonl``, compressed at the next start. Rotated files whose
rotation time is older than ``retention_days`` are deleted at rotation and at start.

Rotation assumes one writing process per log (the crawler); readers use ``iter_log_records``,
which reads damaged files as far as they go and counts what it skipped (``LogDamage``).

The crawl's data written as JSON lines are no logs: ``pages.jsonl`` is rotated (its readers
read every part) but never expires (``retention_days=None``); ``items.jsonl`` and
``content.jsonl`` are one file each, never rotated (``rotate=False``). A text value JSON text
cannot carry (a lone surrogate, as ``surrogateescape`` leaves for undecodable bytes) is
written with U+FFFD in its place (``mend``), said once per file: one bad value never costs a
line.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import heapq
import json
import logging
import os
import re
import shutil
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from politecrawl.errors import StorageError
from politecrawl.storage.records import Shape
from politecrawl.wording import counted

__all__ = [
    "FileDamage",
    "JsonlLog",
    "LogDamage",
    "iter_log_records",
    "log_time",
    "mend",
    "read_jsonl",
    "rotated_files",
]

DEFAULT_ROTATE_BYTES = 64 << 20
DEFAULT_RETENTION_DAYS = 30.0
_DAY_S = 86400
_STAMP = "%Y-%m-%dT%H%M%S"
_GZIP_LEVEL = 3  # ~8x on request logs at a fraction of level 6's CPU; compression is synchronous

log = logging.getLogger("politecrawl")


def log_time(ts: float) -> str:
    """A Unix time as every log line writes it: ISO 8601, UTC, milliseconds
    (``2026-11-27T22:26:11.042Z``). The part to the second is formatted once a second, not
    once a line (a few lines are written per page)."""
    return f"{_to_the_second(int(ts))}.{int(ts % 1 * 1000):03d}Z"


@functools.lru_cache(maxsize=4)
def _to_the_second(second: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))


def mend(text: str) -> str:
    """``text`` as UTF-8 can hold it: each lone surrogate (``surrogateescape``'s stand-in for
    an undecodable byte, half of a pair split apart) made U+FFFD, a split pair joined again."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


class JsonlLog:
    """One JSON object per line; ``write`` never splits a line, rotation never drops one."""

    def __init__(
        self,
        path: Path,
        *,
        rotate_bytes: int | None = DEFAULT_ROTATE_BYTES,
        retention_days: float | None = DEFAULT_RETENTION_DAYS,
        rotate: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``rotate=False``: one file, never rotated nor expired (the crawl's data, not a log);
        ``retention_days=None``: rotated parts are kept for ever."""
        if not path.name.endswith(".jsonl"):
            raise StorageError(f"a log file name must end in .jsonl: {path}")
        self.path = path
        self.stem = path.name[: -len(".jsonl")]
        self.rotating = rotate
        self.rotate_bytes = rotate_bytes if rotate else None
        self.retention_days = retention_days if rotate else None
        self.clock = clock
        self._dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        self._last_write = 0.0
        self._mended = False  # said once per file
        path.parent.mkdir(parents=True, exist_ok=True)
        self._repair_tail()
        self._finish_interrupted()
        now = clock()
        try:
            st = path.stat()
            size, day = st.st_size, int(st.st_mtime // _DAY_S)
        except FileNotFoundError:
            size, day = 0, int(now // _DAY_S)
        if rotate and size > 0 and day != int(now // _DAY_S):
            self._rotate_file(now)  # written on an earlier day: that day's file is closed
            day = int(now // _DAY_S)
        self._delete_expired(now)
        self._day = day
        self._fd = self._open()
        self._size = os.fstat(self._fd).st_size

    @property
    def size(self) -> int:
        """Bytes in the file being written (its current part, if it rotates)."""
        return self._size

    def _open(self) -> int:
        try:
            return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StorageError(f"cannot open {self.path}: {exc}") from exc

    def _repair_tail(self) -> None:
        """Cut a torn last line left by a crash, so every line in the file parses."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size == 0:
            return
        with self.path.open("rb+") as fh:
            fh.seek(max(0, size - 1))
            if fh.read(1) == b"\n":
                return
            back = min(size, 1 << 20)
            fh.seek(size - back)
            tail = fh.read(back)
            cut = tail.rfind(b"\n")
            fh.truncate(size - back + cut + 1 if cut >= 0 else size - back)

    def write(self, record: dict[str, Any]) -> None:
        """One line; TypeError or ValueError if ``record`` is not JSON at all (nothing written)."""
        line = self._line(record)
        now = self.clock()
        day = int(now // _DAY_S)
        if self._size == 0 or not self.rotating:
            self._day = day
        elif day != self._day or (
            self.rotate_bytes is not None and self._size + len(line) > self.rotate_bytes
        ):
            self.rotate(now)
        try:
            os.write(self._fd, line)
        except OSError as exc:
            raise StorageError(f"cannot write {self.path}: {exc}") from exc
        self._size += len(line)
        self._last_write = now

    def _line(self, record: dict[str, Any]) -> bytes:
        try:  # orjson: a seventh of the json module's time on a request-log line
            return orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
        except TypeError:  # beyond orjson (an int over 64 bits, a key not a string, a surrogate)
            text = self._dumps(record) + "\n"
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            if not self._mended:
                self._mended = True
                log.warning("%s: a value held a lone surrogate (an undecodable byte?): written "
                            "with U+FFFD in its place", self.path)  # fmt: skip
            return mend(text).encode("utf-8")

    def rotate(self, now: float | None = None) -> Path | None:
        """Close the current file, compress it, expire old ones; returns the ``.jsonl.gz``."""
        now = self.clock() if now is None else now
        os.close(self._fd)
        self._fd = -1
        done = self._rotate_file(now) if self._size > 0 else None
        self._delete_expired(now)
        self._day = int(now // _DAY_S)
        self._fd = self._open()
        self._size = 0
        return done

    def _rotate_file(self, now: float) -> Path:
        target = self._rotated_name(now)
        try:
            os.rename(self.path, target)
            return _compress(target)
        except OSError as exc:
            raise StorageError(f"cannot rotate {self.path}: {exc}") from exc

    def _rotated_name(self, now: float) -> Path:
        """``stem.STAMP.jsonl``, later in sort order than every rotated file already there."""
        stamp, n = time.strftime(_STAMP, time.gmtime(now)), 0
        existing = rotated_files(self.path.parent, self.stem)
        if existing:
            last_stamp, last_n = _sort_key(existing[-1])
            if (stamp, n) <= (last_stamp, last_n):  # same second, or the clock went back
                stamp, n = last_stamp, last_n + 1
        suffix = f"{stamp}-{n}" if n else stamp
        return self.path.with_name(f"{self.stem}.{suffix}.jsonl")

    def _finish_interrupted(self) -> None:
        """Compress rotated files a crash left uncompressed; drop half-written ``.gz.tmp``."""
        for tmp in self.path.parent.glob(f"{_glob_escape(self.stem)}.*.jsonl.gz.tmp"):
            tmp.unlink(missing_ok=True)
        pattern = _rotated_re(self.stem)
        for path in sorted(self.path.parent.glob(f"{_glob_escape(self.stem)}.*.jsonl")):
            if pattern.match(path.name):
                _compress(path)

    def _delete_expired(self, now: float) -> None:
        if self.retention_days is None:
            return
        cutoff = time.strftime(_STAMP, time.gmtime(now - self.retention_days * _DAY_S))
        for path in rotated_files(self.path.parent, self.stem):
            if _sort_key(path)[0] < cutoff:
                path.unlink(missing_ok=True)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            if self._last_write:
                # the file's day is its mtime at the next start; keep it on the log's own clock
                os.utime(self.path, (self._last_write, self._last_write))


def _glob_escape(text: str) -> str:
    """``text`` with glob metacharacters made literal."""
    return re.sub(r"([*?\[])", r"[\1]", text)


def _compress(path: Path) -> Path:
    """``x.jsonl`` -> ``x.jsonl.gz`` via a temporary file; the source goes only once the copy
    is complete on disk, so a crash at any point leaves the records readable."""
    gz = path.with_name(path.name + ".gz")
    if gz.exists():  # a crash after the rename, before the unlink: the .gz is complete
        path.unlink()
        return gz
    tmp = path.with_name(gz.name + ".tmp")
    with path.open("rb") as src, open(tmp, "wb") as raw:
        with gzip.GzipFile(
            filename=path.name, mode="wb", fileobj=raw, compresslevel=_GZIP_LEVEL, mtime=0
        ) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        raw.flush()
        os.fsync(raw.fileno())
    os.rename(tmp, gz)
    path.unlink()
    return gz


def _rotated_re(stem: str) -> re.Pattern[str]:
    return re.compile(rf"^{re.escape(stem)}\.(\d{{4}}-\d\d-\d\dT\d{{6}})(?:-(\d+))?\.jsonl(\.gz)?$")


def _sort_key(path: Path) -> tuple[str, int]:
    m = re.search(r"\.(\d{4}-\d\d-\d\dT\d{6})(?:-(\d+))?\.jsonl(?:\.gz)?$", path.name)
    assert m is not None
    return m.group(1), int(m.group(2) or 0)


def rotated_files(log_dir: Path, stem: str) -> list[Path]:
    """Rotated files of one log, oldest first; if a crash left both ``x.jsonl`` and
    ``x.jsonl.gz`` (the latter complete), only the ``.gz`` is listed."""
    pattern = _rotated_re(stem)
    found: dict[tuple[str, int], Path] = {}
    try:
        names = sorted(p.name for p in log_dir.iterdir())
    except FileNotFoundError:
        return []
    for name in names:
        m = pattern.match(name)
        if m is None:
            continue
        key = (m.group(1), int(m.group(2) or 0))
        if key not in found or m.group(3):
            found[key] = log_dir / name
    return [found[k] for k in sorted(found)]


def iter_log_records(
    log_dir: Path,
    stem: str,
    *,
    headers: bool = False,
    shape: Shape | None = None,
    damage: LogDamage | None = None,
) -> Iterator[dict[str, Any]]:
    """Every complete record of a log, rotated files first, in time order; with
    ``--processes N``, the log of every process (``stem@1``, ...: ``partition.tagged``)
    merged by time. A run's header line (``"record": "header"``: its user agent and
    purpose) only with ``headers``; with ``shape`` (``storage.records``), only records of
    that shape.

    A reader must never fail on a crash's leftovers, nor hide them: each file is read as far
    as it goes, and what was skipped (lines that are no JSON object, records of the wrong
    shape, a file unreadable from some line on) is counted in ``damage``.
    """
    for rec in _merged(log_dir, stem, shape, damage):
        if headers or rec.get("record") != "header":
            yield rec


@dataclass(slots=True)
class FileDamage:
    """What one log file held that could not be read as records."""

    lines: int = 0  # lines that are no JSON object: torn, garbage
    records: int = 0  # JSON objects of the wrong shape for their log
    cut: str | None = None  # why the file could not be read to its end
    at_line: int = 0  # lines read before it was cut
    note: str | None = None  # read, but not as its name says (plain text in a .gz)

    def __bool__(self) -> bool:
        return bool(self.lines or self.records or self.cut or self.note)

    def said(self) -> str:
        parts = []
        if self.lines:
            parts.append(f"{_n(self.lines, 'damaged line')} skipped")
        if self.records:
            parts.append(f"{_n(self.records, 'record')} of the wrong shape skipped")
        if self.cut is not None:
            parts.append(
                f"unreadable after line {self.at_line} ({self.cut}): the rest of it is not read"
                if self.at_line
                else f"unreadable ({self.cut}): nothing read from it"
            )
        if self.note is not None:
            parts.append(self.note)
        return "; ".join(parts)


def _n(n: int, what: str) -> str:
    return counted(n, what)


class LogDamage:
    """What the reader skipped, per file, so a tool reading damaged logs can say so."""

    def __init__(self) -> None:
        self.files: dict[Path, FileDamage] = {}

    def __bool__(self) -> bool:
        return bool(self.files)

    def add(self, path: Path, found: FileDamage) -> None:
        if found:
            self.files[path] = found

    def lines(self, base: Path) -> list[str]:
        """One line per damaged file, named from ``base`` (the crawl's folder)."""
        return [f"{_name(p, base)}: {d.said()}" for p, d in sorted(self.files.items())]

    def to_json(self, base: Path) -> list[dict[str, Any]]:
        return [
            {
                "file": _name(p, base),
                "damaged_lines": d.lines,
                "wrong_shape_records": d.records,
                "unreadable": d.cut,
                "unreadable_after_line": d.at_line if d.cut is not None else None,
                "note": d.note,
            }
            for p, d in sorted(self.files.items())
        ]


def _name(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return str(path)


def _merged(
    log_dir: Path, stem: str, shape: Shape | None, damage: LogDamage | None
) -> Iterator[dict[str, Any]]:
    stems = [stem]
    with contextlib.suppress(FileNotFoundError):
        tagged = re.compile(rf"^({re.escape(stem)}@\d+)\.")
        stems += sorted({m.group(1) for p in log_dir.iterdir() if (m := tagged.match(p.name))})
    if len(stems) == 1:
        yield from _one_log(log_dir, stem, shape, damage)
        return
    yield from heapq.merge(
        *(_one_log(log_dir, s, shape, damage) for s in stems),
        key=lambda rec: str(rec.get("time", "")),
    )


def _one_log(
    log_dir: Path, stem: str, shape: Shape | None, damage: LogDamage | None
) -> Iterator[dict[str, Any]]:
    paths = rotated_files(log_dir, stem)
    current = log_dir / f"{stem}.jsonl"
    if current.exists():
        paths.append(current)
    for path in paths:
        found = FileDamage()
        try:
            yield from _read_file(path, shape, found)
        finally:
            if damage is not None:
                damage.add(path, found)


_GZIP_MAGIC = b"\x1f\x8b"


def _read_file(path: Path, shape: Shape | None, found: FileDamage) -> Iterator[dict[str, Any]]:
    """One file, compressed or not whatever its name says (the first bytes tell)."""
    try:
        raw = path.open("rb")
    except FileNotFoundError:
        return  # rotated away or expired since the folder was listed: nothing lost
    except OSError as exc:  # a directory, no permission
        found.cut = exc.strerror or str(exc)
        return
    with raw:
        try:
            start = raw.peek(2)[:2]
        except OSError as exc:
            found.cut = exc.strerror or str(exc)
            return
        compressed, named = start == _GZIP_MAGIC, path.name.endswith(".gz")
        if named and not start:
            found.note = "empty, though a compressed log never is"
        elif named and not compressed:
            found.note = "not gzip-compressed as its name says: read as plain text"
        elif compressed and not named:
            found.note = "gzip-compressed though its name does not say so: read decompressed"
        fh: Any = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
        yield from _records(fh, shape, found)


def _records(fh: Any, shape: Shape | None, found: FileDamage) -> Iterator[dict[str, Any]]:
    n = 0
    try:
        for raw in fh:
            n += 1
            rec = _record(raw)
            if rec is None:
                found.lines += 1
            elif shape is not None and not shape.fits(rec):
                found.records += 1
            else:
                yield rec
    except EOFError:
        found.cut, found.at_line = "the compressed data ends early", n
    except zlib.error as exc:
        found.cut, found.at_line = f"corrupt compressed data: {exc}", n
    except OSError as exc:  # gzip.BadGzipFile (a bad checksum, trailing garbage), EIO
        found.cut, found.at_line = exc.strerror or str(exc), n


def _record(raw: bytes) -> dict[str, Any] | None:
    """A line as a JSON object, or None. A last line without its newline counts if it parses
    whole (a torn one never does: its object is not closed)."""
    try:
        rec = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, not UTF-8; nested past the stack
        return None
    return rec if isinstance(rec, dict) else None


def read_jsonl(path: Path, *, headers: bool = False) -> list[dict[str, Any]]:
    """Every complete line of one log (tests and tools), strictly: a damaged line raises.
    For ``x.jsonl``, its rotated parts come first (a log rotates at midnight: a crawl that
    ran through it has its records in two files); a run's header line (``"record":
    "header"``) only with ``headers``."""
    parts = [path]
    if path.name.endswith(".jsonl"):
        parts = [*rotated_files(path.parent, path.name[: -len(".jsonl")]), path]
    out = []
    for part in parts:
        packed = part is not path and part.name.endswith(".gz")
        with gzip.open(part, "rb") if packed else part.open("rb") as fh:
            for raw in fh:
                if raw.endswith(b"\n"):
                    rec = json.loads(raw)
                    if headers or not (isinstance(rec, dict) and rec.get("record") == "header"):
                        out.append(rec)
    return out
