"""Log rotation: by UTC day and by size, gzip, retention; no record lost or duplicated."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from calendar import timegm
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from politecrawl.storage.logs import JsonlLog, iter_log_records, log_time, read_jsonl, rotated_files


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, iso: str) -> None:
        self.t = float(timegm(time.strptime(iso, "%Y-%m-%dT%H:%M:%S")))

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def _seqs(log_dir: Path, stem: str = "requests") -> list[int]:
    return [r["seq"] for r in iter_log_records(log_dir, stem)]


@pytest.mark.unit
def test_rotates_at_utc_day_change(tmp_path: Path) -> None:
    clock = Clock("2024-03-01T23:59:50")
    log = JsonlLog(tmp_path / "requests.jsonl", clock=clock)
    for i in range(3):
        log.write({"seq": i})
    clock.advance(15)  # 2024-03-02T00:00:05
    log.write({"seq": 3})
    log.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["requests.2024-03-02T000005.jsonl.gz", "requests.jsonl"]
    with gzip.open(tmp_path / names[0], "rb") as fh:
        assert [json.loads(x)["seq"] for x in fh] == [0, 1, 2]
    with (tmp_path / "requests.jsonl").open() as fh:
        assert [json.loads(x)["seq"] for x in fh] == [3]
    # a reader of the log (tests, benches) gets the whole of it: a crawl that ran through
    # midnight has its records in two files
    assert [r["seq"] for r in read_jsonl(tmp_path / "requests.jsonl")] == [0, 1, 2, 3]


@pytest.mark.unit
def test_rotates_by_size_and_never_splits_a_line(tmp_path: Path) -> None:
    clock = Clock("2024-03-01T10:00:00")
    log = JsonlLog(tmp_path / "requests.jsonl", rotate_bytes=200, clock=clock)
    for i in range(40):
        log.write({"seq": i, "pad": "x" * 30})
        clock.advance(0.3)  # several rotations within one second: names must stay ordered
    log.close()
    rotated = rotated_files(tmp_path, "requests")
    assert len(rotated) >= 5
    for path in rotated:
        data = gzip.decompress(path.read_bytes())
        assert 0 < len(data) <= 200 and data.endswith(b"\n")
    assert _seqs(tmp_path) == list(range(40))


@pytest.mark.unit
def test_compressed_files_are_plain_gzip_and_no_uncompressed_left(tmp_path: Path) -> None:
    clock = Clock("2024-03-01T10:00:00")
    log = JsonlLog(tmp_path / "requests.jsonl", rotate_bytes=1000, clock=clock)
    for i in range(100):
        log.write({"seq": i, "url": f"http://h{i % 3}.test/p/{i}.html"})
    log.close()
    rotated = rotated_files(tmp_path, "requests")
    assert rotated and all(p.name.endswith(".jsonl.gz") for p in rotated)
    assert not list(tmp_path.glob("*.tmp"))
    raw = sum(len(gzip.decompress(p.read_bytes())) for p in rotated)
    assert sum(p.stat().st_size for p in rotated) < raw


@pytest.mark.unit
def test_crash_between_rename_and_compress_is_finished_at_next_start(tmp_path: Path) -> None:
    clock = Clock("2024-03-01T10:00:00")
    log = JsonlLog(tmp_path / "requests.jsonl", clock=clock)
    for i in range(5):
        log.write({"seq": i})
    log.close()
    # what a crash right after the rename leaves, plus a half-written .gz.tmp
    (tmp_path / "requests.jsonl").rename(tmp_path / "requests.2024-03-01T100000.jsonl")
    (tmp_path / "requests.2024-03-01T100000.jsonl.gz.tmp").write_bytes(b"\x1f\x8b garbage")
    assert _seqs(tmp_path) == [0, 1, 2, 3, 4]  # readable before the next start too
    log = JsonlLog(tmp_path / "requests.jsonl", clock=clock)
    log.write({"seq": 5})
    log.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "requests.2024-03-01T100000.jsonl.gz",
        "requests.jsonl",
    ]
    assert _seqs(tmp_path) == list(range(6))


@pytest.mark.unit
def test_crash_after_compress_before_unlink_reads_once(tmp_path: Path) -> None:
    (tmp_path / "requests.2024-03-01T100000.jsonl").write_bytes(b'{"seq":0}\n{"seq":1}\n')
    (tmp_path / "requests.2024-03-01T100000.jsonl.gz").write_bytes(
        gzip.compress(b'{"seq":0}\n{"seq":1}\n')
    )
    assert _seqs(tmp_path) == [0, 1]
    JsonlLog(tmp_path / "requests.jsonl", clock=Clock("2024-03-01T11:00:00")).close()
    assert [p.name for p in rotated_files(tmp_path, "requests")] == [
        "requests.2024-03-01T100000.jsonl.gz"
    ]
    assert not (tmp_path / "requests.2024-03-01T100000.jsonl").exists()


@pytest.mark.unit
def test_retention_deletes_old_rotated_files_at_rotation_and_start(tmp_path: Path) -> None:
    clock = Clock("2024-03-01T10:00:00")
    log = JsonlLog(tmp_path / "requests.jsonl", retention_days=30, clock=clock)
    log.write({"seq": 0})
    clock.advance(86400)  # 03-02: rotation 1 (holds seq 0)
    log.write({"seq": 1})
    clock.advance(20 * 86400)  # 03-22: rotation 2 (holds seq 1)
    log.write({"seq": 2})
    clock.advance(11 * 86400)  # 04-02: rotation 3; rotation 1 is now 31 days old
    log.write({"seq": 3})
    log.close()
    assert [p.name for p in rotated_files(tmp_path, "requests")] == [
        "requests.2024-03-22T100000.jsonl.gz",
        "requests.2024-04-02T100000.jsonl.gz",
    ]
    assert _seqs(tmp_path) == [1, 2, 3]
    # at start: 40 days later, everything rotated so far is past retention
    clock.advance(40 * 86400)
    JsonlLog(tmp_path / "requests.jsonl", retention_days=30, clock=clock).close()
    assert [p.name for p in rotated_files(tmp_path, "requests")] == [
        "requests.2024-05-12T100000.jsonl.gz"
    ]  # the file written on 04-02, rotated at start
    assert _seqs(tmp_path) == [3]


@pytest.mark.unit
def test_no_line_lost_across_three_rotations_a_torn_tail_and_a_reopen(tmp_path: Path) -> None:
    clock = Clock("2024-03-01T22:00:00")
    path = tmp_path / "requests.jsonl"
    log = JsonlLog(path, rotate_bytes=150, clock=clock)
    seq = 0
    for _ in range(12):  # 12 x ~31 bytes: size rotations
        log.write({"seq": seq, "p": "y" * 20})
        seq += 1
    clock.advance(3 * 3600)  # day change
    log.write({"seq": seq})
    seq += 1
    log.close()
    assert len(rotated_files(tmp_path, "requests")) >= 3
    with path.open("ab") as fh:  # a crash in the middle of a line
        fh.write(b'{"seq": 99999, "torn')
    assert 99999 not in _seqs(tmp_path)
    log = JsonlLog(path, rotate_bytes=150, clock=clock)  # same day: no rotation at start
    for _ in range(30):
        log.write({"seq": seq, "p": "z" * 20})
        seq += 1
    log.close()
    assert _seqs(tmp_path) == list(range(seq))


@pytest.mark.unit
def test_reopen_on_a_later_day_rotates_at_start(tmp_path: Path) -> None:
    clock = Clock("2024-03-01T12:00:00")
    log = JsonlLog(tmp_path / "requests.jsonl", clock=clock)
    log.write({"seq": 0})
    log.close()
    clock.advance(86400)
    log = JsonlLog(tmp_path / "requests.jsonl", clock=clock)
    log.write({"seq": 1})
    log.close()
    assert [p.name for p in rotated_files(tmp_path, "requests")] == [
        "requests.2024-03-02T120000.jsonl.gz"
    ]
    assert _seqs(tmp_path) == [0, 1]


@pytest.mark.unit
def test_two_logs_in_one_folder_do_not_mix(tmp_path: Path) -> None:
    clock = Clock("2024-03-01T12:00:00")
    req = JsonlLog(tmp_path / "requests.jsonl", rotate_bytes=30, clock=clock)
    rob = JsonlLog(tmp_path / "robots.jsonl", rotate_bytes=30, clock=clock)
    for i in range(6):
        req.write({"seq": i})
        rob.write({"seq": 100 + i})
    req.close()
    rob.close()
    assert _seqs(tmp_path, "requests") == list(range(6))
    assert _seqs(tmp_path, "robots") == [100 + i for i in range(6)]


_WRITER = """
import sys
from pathlib import Path
from politecrawl.storage.logs import JsonlLog
log = JsonlLog(Path(sys.argv[1]), rotate_bytes=2000)
start = int(sys.argv[2])
print("ready", flush=True)
i = start
while True:
    log.write({"seq": i, "pad": "q" * (i % 50)})
    i += 1
"""


@pytest.mark.e2e
def test_kill_9_while_writing_and_rotating_loses_nothing_written(tmp_path: Path) -> None:
    """A real crash: every record present is whole, and they form one gap-free sequence."""
    path = tmp_path / "requests.jsonl"
    start = 0
    for _ in range(2):
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), str(start)],
            stdout=subprocess.PIPE,
            env={**os.environ},
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        time.sleep(0.2)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        seqs = _seqs(tmp_path)
        assert seqs == list(range(len(seqs)))
        start = len(seqs)
    JsonlLog(path).close()  # the next start repairs and compresses what the crash left
    assert _seqs(tmp_path) == list(range(start))
    assert all(p.name.endswith(".gz") for p in rotated_files(tmp_path, "requests"))


@pytest.mark.unit
@given(st.floats(min_value=0, max_value=4e9, allow_nan=False))
def test_log_time_is_iso_utc_to_the_millisecond(ts: float) -> None:
    """Every log line's time: the second formatted once and reused, the same text as
    formatting the whole time each line."""
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts % 1 * 1000):03d}Z"
    assert log_time(ts) == whole
    assert log_time(ts + 1.0) > log_time(ts)  # in time order as text, as the tools read them
