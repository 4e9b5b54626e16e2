"""WARC 1.1 output: a warcinfo record, then request + response pairs; rotated by size.

fastwarc builds the records (about 0.13 ms per record with gzip here, twice warcio's speed);
each record is its own gzip member, which warcio and other standard tools read.

A file being written is named ``*.warc.gz.open`` and renamed when closed. A crash can leave
an ``.open`` file whose last member is torn; at start the writer cuts such a file back to its
last whole gzip member and renames it, so every ``.warc.gz`` in the folder reads cleanly.

Records are not buffered here: when ``write_exchange`` returns, the page's records are with the
OS, so the frontier may count the page stored (nothing half-written is taken for whole, and a
SIGKILL loses no record of a page marked done). After a write error the writer takes no more
records and ``close`` leaves the file ``.open``, so the next start cuts its torn tail.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import time
import uuid
import zlib
from datetime import UTC, datetime
from pathlib import Path

from fastwarc.warc import WarcRecord, WarcRecordType

from politecrawl.errors import StorageError
from politecrawl.fetch import FetchResult


def _warc_date(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _http_request_block(res: FetchResult) -> bytes:
    from yarl import URL

    u = URL(res.url)
    target = u.raw_path_qs or "/"
    lines = [f"GET {target} HTTP/1.1", f"Host: {u.raw_authority}"]
    lines += [f"{k}: {v}" for k, v in res.request_headers if k.lower() != "host"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")


def _http_response_block(res: FetchResult) -> bytes:
    head = [f"HTTP/{res.http_version} {res.status} {res.reason}"]
    head += [f"{k}: {v}" for k, v in res.headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1", "replace") + res.raw_body


class WarcWriter:
    """Writes ``prefix-TIMESTAMP-NNNNN.warc.gz`` files under ``directory``."""

    def __init__(
        self,
        directory: Path,
        software: str,
        user_agent: str,
        max_bytes: int = 1024**3,
        prefix: str = "politecrawl",
    ) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._software = software
        self._user_agent = user_agent
        self._max_bytes = max_bytes
        self._prefix = prefix
        self.repaired = {
            p.name: cut
            for p in sorted(directory.glob("*.warc.gz.open"))
            if (cut := repair_open_file(p)) is not None
        }
        self._serial = len(list(directory.glob(f"{prefix}-*.warc.gz")))
        self._fh: io.FileIO | None = None
        self._broken: str | None = None  # the write error that made the open file suspect
        self._name = ""
        self._size = 0
        self.records = 0

    def _open(self) -> None:
        self._serial += 1
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
        name = f"{self._prefix}-{stamp}-{os.getpid()}-{self._serial:05d}.warc.gz"
        self._name = name
        try:
            self._fh = io.FileIO(self.directory / (name + ".open"), "ab")
        except OSError as exc:
            raise StorageError(f"cannot create WARC {name}: {exc}") from exc
        self._size = 0
        info = (
            f"software: {self._software}\r\nformat: WARC File Format 1.1\r\n"
            f"http-header-user-agent: {self._user_agent}\r\n"
            "robots: obey\r\n"
        ).encode()
        rec = WarcRecord()
        rec.init_headers(WarcRecordType.warcinfo)
        rec.headers["WARC-Filename"] = name
        rec.headers["Content-Type"] = "application/warc-fields"
        rec.set_bytes_content(info)
        self._write(rec)

    def _ready(self) -> None:
        """A file to write to: refused after a write error, rotated by size."""
        if self._broken is not None:
            raise StorageError(f"cannot write WARC: {self._broken}")
        if self._fh is None or self._size >= self._max_bytes:
            self.close()
            self._open()

    def _write(self, *recs: WarcRecord) -> None:
        """The records as gzip members, handed to the OS before returning (one ``write`` when
        it takes them all). On error: cut back to the last whole member, take nothing more."""
        data = b"".join(_member(rec) for rec in recs)
        fh = self._fh
        assert fh is not None
        view, done = memoryview(data), 0
        try:
            while done < len(data):
                n = fh.write(view[done:])
                if not n:  # a regular file takes at least a byte or raises; never spin
                    raise OSError(errno.EIO, "WARC write made no progress")
                done += n
        except OSError as exc:
            self._broken = str(exc)
            with contextlib.suppress(OSError):  # else the repair at the next start cuts it
                fh.truncate(self._size)
            raise StorageError(f"cannot write WARC: {exc}") from exc
        self._size += len(data)
        self.records += len(recs)

    def write_exchange(self, res: FetchResult) -> str | None:
        """A request record and its response record (WARC-Concurrent-To links them); returns
        the response record's WARC-Record-ID as written (``<urn:uuid:...>``), None if none."""
        if res.status is None:
            return None
        self._ready()
        date = _warc_date(res.started)
        resp_id = uuid.uuid4().urn
        resp = WarcRecord()
        resp.init_headers(WarcRecordType.response, record_urn=resp_id[4:].encode())
        resp.headers["WARC-Target-URI"] = res.url
        resp.headers["WARC-Date"] = date
        resp.headers["Content-Type"] = "application/http; msgtype=response"
        if res.ip:
            resp.headers["WARC-IP-Address"] = res.ip
        if res.truncated:  # WARC 1.1 section 5.13: why the record is shorter than the payload
            resp.headers["WARC-Truncated"] = (
                "length"
                if res.error is None
                else "time"
                if res.error == "timeout"
                else "disconnect"
            )
        resp.set_bytes_content(_http_response_block(res))
        req = WarcRecord()
        req.init_headers(WarcRecordType.request)
        req.headers["WARC-Target-URI"] = res.url
        req.headers["WARC-Date"] = date
        req.headers["Content-Type"] = "application/http; msgtype=request"
        req.headers["WARC-Concurrent-To"] = f"<{resp_id}>"
        req.set_bytes_content(_http_request_block(res))
        self._write(req, resp)
        return f"<{resp_id}>"

    def write_revisit(
        self, res: FetchResult, *, profile: str, refers_to: str, refers_to_date: float | None = None
    ) -> None:
        """A revisit record (WARC 1.1 section 6.7): the response headers, no payload again.

        ``profile``: "server-not-modified" after a 304, "identical-payload-digest" for a page
        whose content was already stored under ``refers_to``.
        """
        if res.status is None:
            return
        self._ready()
        rec = WarcRecord()
        rec.init_headers(WarcRecordType.revisit)
        rec.headers["WARC-Target-URI"] = res.url
        rec.headers["WARC-Date"] = _warc_date(res.started)
        rec.headers["WARC-Profile"] = f"http://netpreserve.org/warc/1.1/revisit/{profile}"
        rec.headers["WARC-Refers-To-Target-URI"] = refers_to
        if refers_to_date is not None:
            rec.headers["WARC-Refers-To-Date"] = _warc_date(refers_to_date)
        rec.headers["Content-Type"] = "application/http; msgtype=response"
        if res.ip:
            rec.headers["WARC-IP-Address"] = res.ip
        head = [f"HTTP/{res.http_version} {res.status} {res.reason}"]
        head += [f"{k}: {v}" for k, v in res.headers]
        rec.set_bytes_content(("\r\n".join(head) + "\r\n\r\n").encode("latin-1", "replace"))
        self._write(rec)

    def flush(self) -> None:
        """Nothing is buffered (see the module docstring); kept for callers that save in order."""
        if self._fh is not None and self._broken is None:
            try:
                self._fh.flush()
            except OSError as exc:
                raise StorageError(f"cannot write WARC: {exc}") from exc

    def close(self) -> None:
        """Close and rename to ``.warc.gz``; a file that saw a write error stays ``.open``."""
        fh, self._fh = self._fh, None
        if fh is None:
            return
        try:
            fh.close()
            if self._broken is None:
                os.replace(self.directory / (self._name + ".open"), self.directory / self._name)
        except OSError as exc:
            self._broken = str(exc)
            raise StorageError(f"cannot close WARC {self._name}: {exc}") from exc


def _member(rec: WarcRecord) -> bytes:
    """One record as its own gzip member."""
    buf = io.BytesIO()
    rec.write(buf, checksum_data=True)
    comp = zlib.compressobj(6, zlib.DEFLATED, 31)
    return comp.compress(buf.getvalue()) + comp.flush()


def repair_open_file(path: Path) -> int | None:
    """Cut a crashed ``.open`` WARC back to its last whole gzip member and close it.

    Returns the number of bytes cut (0 when the file was whole), or None if unreadable.
    """
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            good = _whole_members_end(fh)
        if good == 0:  # not even the warcinfo record survived: nothing to keep
            path.unlink()
            return size
        if good < size:
            with path.open("rb+") as fh:
                fh.truncate(good)
        os.replace(path, path.with_suffix(""))  # name.warc.gz.open -> name.warc.gz
    except OSError:
        return None
    return size - good


def _whole_members_end(fh: io.BufferedReader, chunk: int = 1 << 16) -> int:
    """Offset just after the last complete gzip member (streaming, bounded memory)."""
    good = 0
    pos = 0
    while True:
        fh.seek(pos)
        d = zlib.decompressobj(31)
        fed = 0
        try:
            while not d.eof:
                data = fh.read(chunk)
                if not data:
                    return good
                d.decompress(data, 1 << 20)
                while d.unconsumed_tail and not d.eof:
                    d.decompress(d.unconsumed_tail, 1 << 20)
                fed += len(data)
        except zlib.error:
            return good
        pos += fed - len(d.unused_data)
        good = pos
