"""The one log reader on damaged files: read as far as each goes, and say what it skipped.

A rotated file with a flipped byte, cut short or not compressed at all, a torn line, garbage,
records of the wrong shape, a log that is a directory: none may raise, none may lose a record
without the reader counting it (``LogDamage``).
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from politecrawl.storage.logs import LogDamage, iter_log_records
from politecrawl.storage.records import PAGES, REQUESTS, time_of

ROTATED = "requests.2026-11-28T000000.jsonl.gz"


def _request(i: int) -> dict[str, Any]:
    return {
        "time": f"2026-11-28T10:00:{i % 60:02d}.{i:03d}Z",
        "url": f"http://h{i % 3}.test:8000/p{i}",
        "ip": "127.0.0.1",
        "status": 200,
        "duration_ms": 1.5,
        "bytes": 100,
        "outcome": "stored",
        "attempt": 1,
        "delay_s": 0.2,
    }


def _lines(recs: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in recs)


def _read(log_dir: Path) -> tuple[list[dict[str, Any]], LogDamage]:
    damage = LogDamage()
    recs = list(iter_log_records(log_dir, "requests", shape=REQUESTS, damage=damage))
    return recs, damage


@pytest.mark.unit
def test_a_flipped_byte_in_a_rotated_file_is_said_not_raised(tmp_path: Path) -> None:
    """zlib.error (a corrupt deflate block) and a bad CRC: the current file is still read,
    and the rotated one is named with why it could not be read."""
    recs = [_request(i) for i in range(400)]
    packed = gzip.compress(_lines(recs[:300]), mtime=0)
    for at, why in ((20, "corrupt compressed data"), (len(packed) - 6, "CRC check failed")):
        log = tmp_path / str(at)
        log.mkdir()
        broken = bytearray(packed)
        broken[at] ^= 0xFF
        (log / ROTATED).write_bytes(bytes(broken))
        (log / "requests.jsonl").write_bytes(_lines(recs[300:]))
        got, damage = _read(log)
        assert got[-100:] == recs[300:]
        (line,) = damage.lines(tmp_path)
        assert line.startswith(f"{at}/{ROTATED}: unreadable") and why in line, line


@pytest.mark.unit
def test_a_truncated_gz_is_read_up_to_the_cut(tmp_path: Path) -> None:
    recs = [_request(i) for i in range(2000)]
    packed = gzip.compress(_lines(recs), mtime=0)
    (tmp_path / ROTATED).write_bytes(packed[: len(packed) // 2])
    got, damage = _read(tmp_path)
    assert 0 < len(got) < len(recs) and got == recs[: len(got)]  # as far as it goes
    (found,) = damage.files.values()
    assert found.cut == "the compressed data ends early" and found.at_line >= len(got)
    assert damage.to_json(tmp_path)[0]["unreadable_after_line"] == found.at_line


@pytest.mark.unit
def test_plain_text_named_gz_is_read_whole_and_said(tmp_path: Path) -> None:
    recs = [_request(i) for i in range(10)]
    (tmp_path / ROTATED).write_bytes(_lines(recs[:5]))
    (tmp_path / "requests.jsonl").write_bytes(_lines(recs[5:]))
    got, damage = _read(tmp_path)
    assert got == recs  # nothing dropped
    assert damage.lines(tmp_path) == [
        f"{ROTATED}: not gzip-compressed as its name says: read as plain text"
    ]


@pytest.mark.unit
def test_torn_garbage_and_misshapen_lines_are_each_counted(tmp_path: Path) -> None:
    good = [_request(i) for i in range(6)]
    bad_shapes = [
        {**good[0], "time": None},
        {**good[0], "time": 1.7e9},
        {**good[0], "time": True},
        {**good[0], "time": 1e18},
        {**good[0], "time": math.nan},
        {**good[0], "time": "0001-01-01T00:00:00+01:00"},  # before year 1 in UTC
        {**good[0], "duration_ms": "fast"},
        {**good[0], "delay_s": math.inf},
        {**good[0], "status": True},
        {**good[0], "url": "http://[::1/"},
        {k: v for k, v in good[0].items() if k != "url"},
    ]
    text = (
        _lines(good[:2])
        + b"\x00\xffgarbage\n"
        + b'{"time": "2026-11-28T10:00:00Z", "url": \n'  # torn mid-file: the rest lost
        + b"[1, 2]\n"
        + b"\n"
        + _lines(bad_shapes)
        + _lines(good[2:])
        + b'{"time": "2026-11-28T10:01:00Z", "ur'  # cut mid-line by a crash
    )
    (tmp_path / "requests.jsonl").write_bytes(text)
    got, damage = _read(tmp_path)
    assert got == good
    assert damage.lines(tmp_path) == [
        f"requests.jsonl: 5 damaged lines skipped; {len(bad_shapes)} records of the wrong "
        "shape skipped"
    ]
    # the same file without a shape: every JSON object, the damaged lines still counted
    plain = LogDamage()
    assert len(list(iter_log_records(tmp_path, "requests", damage=plain))) == 6 + len(bad_shapes)
    assert plain.to_json(tmp_path)[0]["damaged_lines"] == 5


@pytest.mark.unit
def test_a_log_that_is_a_directory_is_said_unreadable(tmp_path: Path) -> None:
    (tmp_path / "requests.jsonl").mkdir()
    got, damage = _read(tmp_path)
    assert got == []
    (line,) = damage.lines(tmp_path)
    assert line == "requests.jsonl: unreadable (Is a directory): nothing read from it"


@pytest.mark.unit
def test_pages_may_carry_unix_seconds_but_not_beyond_year_9999() -> None:
    assert PAGES.fits({"time": 1.7e9, "relevance": 0.5})
    assert not PAGES.fits({"time": 1e18})
    assert not PAGES.fits({"time": 1.7e9, "relevance": math.nan})
    assert time_of("9999-12-31T23:59:59-01:00") is None  # past the last UTC datetime
    assert time_of("2026-11-29") is not None


@pytest.mark.unit
@given(st.binary(max_size=600))
def test_any_bytes_as_a_log_every_line_is_a_record_or_counted(data: bytes) -> None:
    """Nothing lost silently: each line is yielded, or counted as damaged or misshapen."""
    import tempfile

    assume(not data.startswith(b"\x1f\x8b"))  # gzip's magic: read (and cut) as gzip

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp)
        (log / "requests.jsonl").write_bytes(data)
        damage = LogDamage()
        got = list(iter_log_records(log, "requests", headers=True, shape=REQUESTS, damage=damage))
        n = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
        found = damage.files.get(log / "requests.jsonl")
        skipped = found.lines + found.records if found else 0
        assert len(got) + skipped == n, (got, found)
        assert all(REQUESTS.fits(r) for r in got)


@pytest.mark.unit
@given(
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 255)), max_size=3),
    st.one_of(st.none(), st.integers(0, 10_000)),
)
def test_damaged_gzip_loses_nothing_unsaid(flips: list[tuple[int, int]], cut: int | None) -> None:
    """Bytes flipped anywhere in a rotated file, or the file cut anywhere: the reader never
    raises, and unless it returned every record unchanged, it says the file was damaged."""
    import tempfile

    recs = [_request(i) for i in range(120)]
    packed = bytearray(gzip.compress(_lines(recs), mtime=0))
    for at, mask in flips:
        packed[at % len(packed)] ^= mask
    data = bytes(packed if cut is None else packed[: cut % len(packed)])
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / ROTATED).write_bytes(data)
        got, damage = _read(Path(tmp))
    if got != recs:
        assert damage, (flips, cut)
