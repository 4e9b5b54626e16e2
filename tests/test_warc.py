"""WARC output read back with a standard tool; a torn tail from a crash is cut at start."""

from __future__ import annotations

import errno
import gzip
import io
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from politecrawl.errors import StorageError
from politecrawl.net.fetch import FetchResult
from politecrawl.storage.warc import WarcWriter, unreadable

pytestmark = pytest.mark.unit


def result(i: int) -> FetchResult:
    body = b"<html><body>" + b"x" * (i * 37 % 5000) + b"</body></html>"
    return FetchResult(
        url=f"http://a.test/p/{i}.html",
        started=1.7e9 + i,
        status=200,
        reason="OK",
        headers=[("Content-Type", "text/html")],
        raw_body=body,
        body=body,
        ip="127.0.0.1",
        request_headers=[("User-Agent", "testbot/1.0 (+http://b.example/)")],
    )


def read_all(d: Path) -> list[tuple[str, str | None]]:
    out = []
    for p in sorted(d.glob("*.warc.gz")):
        with p.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                out.append((rec.rec_type, rec.rec_headers.get_header("WARC-Target-URI")))
    return out


def test_records_read_back_and_file_closed(tmp_path: Path) -> None:
    w = WarcWriter(tmp_path, "politecrawl/test", "testbot/1.0 (+http://b.example/)")
    for i in range(20):
        w.write_exchange(result(i))
    w.close()
    assert not list(tmp_path.glob("*.open"))
    recs = read_all(tmp_path)
    assert recs[0][0] == "warcinfo"
    assert [t for t, _ in recs[1:]] == ["request", "response"] * 20


def test_rotation_by_size(tmp_path: Path) -> None:
    w = WarcWriter(tmp_path, "politecrawl/test", "ua", max_bytes=4000)
    for i in range(30):
        w.write_exchange(result(i))
    w.close()
    files = list(tmp_path.glob("*.warc.gz"))
    assert len(files) > 2
    assert sum(t == "response" for t, _ in read_all(tmp_path)) == 30
    assert sum(t == "warcinfo" for t, _ in read_all(tmp_path)) == len(files)


@pytest.mark.parametrize("torn", [slice(100, 700), slice(0, 150)])  # garbage; a cut member
def test_torn_tail_cut_at_next_start(tmp_path: Path, torn: slice) -> None:
    w = WarcWriter(tmp_path, "politecrawl/test", "ua")
    for i in range(10):
        w.write_exchange(result(i))
    w.flush()
    [open_file] = list(tmp_path.glob("*.open"))
    whole = open_file.stat().st_size
    with open_file.open("ab") as fh:  # a crash mid-record: half a gzip member
        fh.write(open_file.read_bytes()[torn])
    del w  # never closed, like a SIGKILL
    again = WarcWriter(tmp_path, "politecrawl/test", "ua")
    assert list(again.repaired.values()) == [torn.stop - torn.start]
    assert not list(tmp_path.glob("*.open"))
    assert [p.stat().st_size for p in tmp_path.glob("*.warc.gz")] == [whole]
    assert sum(t == "response" for t, _ in read_all(tmp_path)) == 10


class _DiskFull:
    """A file that takes ``room`` more bytes, then fails like a full disk."""

    def __init__(self, fh: io.FileIO, room: int) -> None:
        self.fh, self.room = fh, room

    def write(self, data: memoryview) -> int:
        if self.room <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = self.fh.write(data[: self.room]) or 0
        self.room -= n
        return n

    def __getattr__(self, name: str) -> object:
        return getattr(self.fh, name)


def test_write_error_leaves_file_open_and_takes_no_more(tmp_path: Path) -> None:
    """A torn record is never closed as whole, and nothing is appended after it."""
    w = WarcWriter(tmp_path, "politecrawl/test", "ua")
    for i in range(5):
        w.write_exchange(result(i))
    assert w._fh is not None
    w._fh = _DiskFull(w._fh, 100)  # type: ignore[assignment]
    with pytest.raises(StorageError, match="No space left"):
        w.write_exchange(result(5))
    with pytest.raises(StorageError):  # refused: it would land after a torn member
        w.write_exchange(result(6))
    w.close()
    assert not list(tmp_path.glob("*.warc.gz"))
    [open_file] = list(tmp_path.glob("*.open"))
    again = WarcWriter(tmp_path, "politecrawl/test", "ua")
    assert again.repaired == {open_file.name: 0}  # the torn part was already cut back
    assert [t for t, _ in read_all(tmp_path)] == ["warcinfo"] + ["request", "response"] * 5


def _records(d: Path) -> list[tuple[dict[str, str], bytes, bytes]]:
    """(WARC headers, HTTP head as stored, payload as warcio reads it) of each record."""
    out = []
    for p in sorted(d.glob("*.warc.gz")):
        with p.open("rb") as fh:
            for rec in ArchiveIterator(fh, check_digests=True):
                head = rec.http_headers.to_bytes() if rec.http_headers else b""
                body = rec.content_stream().read()
                assert rec.digest_checker.passed is not False, rec.digest_checker.problems
                out.append((dict(rec.rec_headers.headers), head, body))
    return out


def test_dechunked_body_stored_with_headers_that_say_so(tmp_path: Path) -> None:
    """A de-chunked body whose first line looks like a chunk size reads back unchanged: the
    stored headers no longer claim chunking (warcio would de-chunk it again)."""
    body = b"beef\r\n<html>not a chunk</html>"
    res = result(1)
    res.headers = [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")]
    res.raw_body = res.body = body
    w = WarcWriter(tmp_path, "politecrawl/test", "ua")
    cap = w.write_exchange(res)
    w.close()
    [resp] = [r for r in _records(tmp_path) if r[0]["WARC-Type"] == "response"]
    h, head, payload = resp
    assert payload == body
    assert b"X-Crawler-Transfer-Encoding: chunked" in head and b"\nTransfer-Encoding" not in head
    assert cap is not None and h["WARC-Payload-Digest"] == cap.digest
    assert h["WARC-IP-Address"] == "127.0.0.1" and "WARC-Truncated" not in h


@pytest.mark.parametrize("cut", ["length", "time", "disconnect", "protocol"])
def test_short_payload_marked_with_its_reason(tmp_path: Path, cut: str) -> None:
    res = result(2)
    res.headers.append(("Content-Length", "99999"))
    res.cut = cut
    w = WarcWriter(tmp_path, "politecrawl/test", "ua")
    w.write_exchange(res)
    w.close()
    [(h, head, _)] = [r for r in _records(tmp_path) if r[0]["WARC-Type"] == "response"]
    assert h["WARC-Truncated"] == cut
    # a replay must not promise bytes it does not have
    assert b"X-Crawler-Content-Length: 99999" in head and b"\nContent-Length" not in head


def test_revisits_name_their_original(tmp_path: Path) -> None:
    w = WarcWriter(tmp_path, "politecrawl/test", "ua")
    cap = w.write_exchange(result(3))
    assert cap is not None
    dup = result(3)
    dup.url = "http://a.test/copy.html"
    w.write_revisit(dup, profile="identical-payload-digest", original=cap)
    nm = FetchResult(url=cap.url, started=1.8e9, status=304, reason="Not Modified", ip="::1")
    w.write_revisit(nm, profile="server-not-modified", original=cap)
    w.close()
    revisits = [r for r in _records(tmp_path) if r[0]["WARC-Type"] == "revisit"]
    assert len(revisits) == 2
    for h, _, payload in revisits:
        assert h["WARC-Refers-To"] == cap.record_id
        assert h["WARC-Refers-To-Target-URI"] == cap.url
        assert h["WARC-Refers-To-Date"] == cap.date
        assert h["WARC-Payload-Digest"] == cap.digest
        assert h["WARC-Truncated"] == "length" and payload == b""
    (_, dup_head, _), (nm_h, nm_head, _) = revisits
    assert dup_head.startswith(b"HTTP/1.1 200 OK")  # the response's own headers
    assert nm_head == b"" and nm_h["Content-Length"] == "0"  # Heritrix: pywb uses the original's


def test_a_closed_file_that_does_not_read_to_its_end_says_why(tmp_path: Path) -> None:
    """``unreadable``: None for a whole file; what is wrong with one cut short, one with a
    changed byte (a member's CRC), trailing bytes, or gzip that holds no WARC record."""
    w = WarcWriter(tmp_path, "politecrawl/test", "ua")
    for i in range(5):
        w.write_exchange(result(i))
    w.close()
    (path,) = tmp_path.glob("*.warc.gz")
    data = path.read_bytes()
    assert unreadable(path) is None
    mid = len(data) // 2
    for bad in (data[:-10], data[:mid] + bytes([data[mid] ^ 1]) + data[mid + 1 :], data + b"\0"):
        path.write_bytes(bad)
        why = unreadable(path)
        assert why is not None and why.startswith("cut short or damaged"), why
    for other in (gzip.compress(b"<html>not a WARC</html>"), b"WARC/1.1\r\n", b""):
        path.write_bytes(other)
        assert unreadable(path) == "not a WARC file (gzip-compressed records)"
    path.unlink()
    assert (unreadable(path) or "").startswith("cannot read it")
