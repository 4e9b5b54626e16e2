"""WARC 1.1 output: a warcinfo record, then request + response (or revisit) pairs; rotated
by size.

What is stored, and why (the conventions Heritrix, warcprox, wget and Common Crawl follow,
checked by replaying in pywb and reading with warcio, see tests/test_replay.py):

* The payload is the body as the server sent it with the transfer coding removed (aiohttp
  de-chunks) and the content coding kept (gzip/br bytes as received). The HTTP headers are
  made to agree with those bytes: ``Transfer-Encoding: chunked`` is stored as
  ``X-Crawler-Transfer-Encoding: chunked`` (Common Crawl's name). Kept as is, it would make
  warcio and pywb de-chunk a body that is no longer chunked: warcio mangles one whose first
  line looks like hex, pywb serves it cut. ``Content-Encoding`` and ``Content-Length`` stay,
  because the stored bytes are still content-coded; pywb decodes gzip/br itself when it
  rewrites. Over a payload cut short, ``Content-Length`` becomes ``X-Crawler-Content-Length``.
* Every response and revisit has ``WARC-Payload-Digest`` (sha1, base32, of the payload as
  stored) and ``WARC-IP-Address``; a payload shorter than the server's is marked
  ``WARC-Truncated`` with its reason (``FetchResult.cut``: length, time, disconnect,
  protocol).
* An https exchange made with ``--tls-insecure`` (the certificate not checked) says so on
  its request and response records: ``WARC-TLS-Certificate-Verified: false``.
* Revisit records (WARC 1.1 section 6.7) name their original by ``WARC-Refers-To``,
  ``WARC-Refers-To-Target-URI`` and ``WARC-Refers-To-Date``, and carry the original's
  payload digest: pywb finds the original by URI, closest date and that digest.
  ``identical-payload-digest`` (only for byte-identical payloads) keeps the response's HTTP
  headers and no payload, so it says ``WARC-Truncated: length`` (as Heritrix writes).
  ``server-not-modified`` (a 304 to a conditional GET) has an empty block, as Heritrix
  writes it: pywb then replays the original's headers and payload, where the 304's own
  headers would replay an empty 304.

fastwarc builds the records (about 0.13 ms per record with gzip here, twice warcio's speed);
each record is its own gzip member, which warcio and other standard tools read.

Beside each file, ``NAME.cdxj`` indexes its response and revisit records as they are written
(``cdxj``: pywb's and py-wacz's format), rebuilt from the file when a crash tore it.

A file being written is named ``*.warc.gz.open`` and renamed when closed. A crash can leave
an ``.open`` file whose last member is torn; at start the writer cuts such a file back to its
last whole gzip member and renames it, so every ``.warc.gz`` in the folder reads cleanly.

Records are not buffered here: when ``write_exchange`` returns, the page's records are with the
OS, so the frontier may count the page stored (nothing half-written is taken for whole, and a
SIGKILL loses no record of a page marked done). After a write error the writer takes no more
records and ``close`` leaves the file ``.open``, so the next start cuts its torn tail.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import functools
import hashlib
import io
import os
import time
import uuid
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from fastwarc.warc import WarcRecord, WarcRecordType
from isal import isal_zlib

from politecrawl.errors import StorageError
from politecrawl.net.fetch import FetchResult
from politecrawl.storage.cdxj import cdxj_line, index_name, index_warc, prepare, write_index
from politecrawl.storage.logs import mend

# on the records of an https exchange made with --tls-insecure: the server's certificate was
# not checked (a WARC 1.1 extension field, section 4: readers ignore fields they don't know)
TLS_UNVERIFIED = "WARC-TLS-Certificate-Verified"


def _warc_date(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def payload_digest(payload: bytes) -> str:
    """``sha1:BASE32`` of a payload as stored: the form of WARC-Payload-Digest everywhere."""
    return "sha1:" + base64.b32encode(hashlib.sha1(payload).digest()).decode("ascii")


_EMPTY_DIGEST = payload_digest(b"")


@dataclass(frozen=True, slots=True)
class Capture:
    """A response record in the archive: what a later revisit record names as original."""

    record_id: str  # <urn:uuid:...>
    url: str
    date: str  # its WARC-Date
    digest: str  # its WARC-Payload-Digest

    def to_row(self) -> list[str]:
        return [self.record_id, self.url, self.date, self.digest]

    def __reduce__(self) -> tuple[type[Capture], tuple[str, str, str, str]]:
        return Capture, (self.record_id, self.url, self.date, self.digest)  # see parse.Link

    @classmethod
    def from_row(cls, row: list[str]) -> Capture:
        return cls(*row)


# headers that describe the bytes on the wire, not the bytes stored (see the module docstring)
_RENAMED = {"transfer-encoding": "X-Crawler-Transfer-Encoding"}
_RENAMED_CUT = {**_RENAMED, "content-length": "X-Crawler-Content-Length"}


def stored_headers(headers: list[tuple[str, str]], cut: bool = False) -> list[tuple[str, str]]:
    """The HTTP headers as stored over a de-chunked payload; over a ``cut`` one (shorter than
    the server's) Content-Length is kept as ``X-Crawler-Content-Length``, since a replay
    promising bytes it does not have leaves the client waiting for them."""
    renamed = _RENAMED_CUT if cut else _RENAMED
    return [(renamed.get(k.lower(), k), v) for k, v in headers]


def _http_request_block(res: FetchResult) -> bytes:
    from yarl import URL

    u = URL(res.url)
    target = u.raw_path_qs or "/"
    lines = [f"GET {target} HTTP/1.1", f"Host: {u.raw_authority}"]
    lines += [f"{k}: {v}" for k, v in res.request_headers if k.lower() != "host"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")


def _http_head(res: FetchResult) -> bytes:
    head = [f"HTTP/{res.http_version} {res.status} {res.reason}"]
    head += [f"{k}: {v}" for k, v in stored_headers(res.headers, res.cut is not None)]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1", "replace")


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
            # this writer's own leftovers only: another process's file may be open and live
            for p in sorted(directory.glob(f"{prefix}-*.warc.gz.open"))
            if (cut := repair_open_file(p)) is not None
        }
        for name in self.repaired:  # the crash may have come between a record and its line
            reindex(directory / name.removesuffix(".open"))
        self._serial = len(list(directory.glob(f"{prefix}-*.warc.gz")))
        self._fh: io.FileIO | None = None
        self._index: io.FileIO | None = None  # NAME.cdxj, beside the file (cdxj)
        self._broken: str | None = None  # the write error that made the open file suspect
        prepare()  # the index's one slow import, before any request (``cdxj.prepare``)
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
            self._index = io.FileIO(self.directory / index_name(name), "ab")
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
        self._append(_member(rec), 1)

    def _ready(self) -> None:
        """A file to write to: refused after a write error, rotated by size."""
        if self._broken is not None:
            raise StorageError(f"cannot write WARC: {self._broken}")
        if self._fh is None or self._size >= self._max_bytes:
            self.close()
            self._open()

    def _append(self, data: bytes, count: int, indexed: list[_Indexed] | None = None) -> None:
        """Whole gzip members handed to the OS before returning (one ``write`` when it takes
        them all), then their index lines. On error: cut back to the last whole member, take
        nothing more."""
        fh, index = self._fh, self._index
        assert fh is not None and index is not None
        try:
            failed = _write_all(fh, data)
        except OSError as exc:
            failed = exc
        if failed is not None:
            self._broken = str(failed)
            with contextlib.suppress(OSError):  # else the repair at the next start cuts it
                fh.truncate(self._size)
            raise StorageError(f"cannot write WARC: {failed}") from failed
        base, self._size = self._size, self._size + len(data)
        self.records += count
        if indexed:
            lines = [line(offset=base + start, length=size, filename=self._name)
                     for start, size, line in indexed]  # fmt: skip
            try:
                failed = _write_all(index, "".join(lines).encode("utf-8"))
            except OSError as exc:
                failed = exc
            if failed is not None:  # the record is whole: the next start re-indexes the file
                self._broken = str(failed)
                raise StorageError(f"cannot write WARC index: {failed}") from failed

    def write_exchange(self, res: FetchResult, digest: str | None = None) -> Capture | None:
        """A request record and its response record (WARC-Concurrent-To links them).

        Returns the response's ``Capture`` (None when nothing was written: no response).
        ``digest``: the payload digest, when the caller computed it already.
        """
        if res.status is None:
            return None
        self._ready()
        packed = pack_exchange(res, digest)
        self._append(packed.data, 2, packed.indexed())
        return packed.capture

    def append_exchange(self, packed: PackedExchange) -> Capture:
        """An exchange ``pack_exchange`` built elsewhere (in a worker process: ``workpool``),
        written as ``write_exchange`` would have written it."""
        self._ready()
        self._append(packed.data, 2, packed.indexed())
        return packed.capture

    def write_revisit(
        self, res: FetchResult, *, profile: str, original: Capture | None
    ) -> str | None:
        """A revisit record (WARC 1.1 section 6.7) and its request record; no payload again.
        Returns the revisit record's id (None when nothing was written: no response).

        ``profile``: "identical-payload-digest" for a payload byte-identical to ``original``'s
        (the response's HTTP headers kept); "server-not-modified" after a 304 (an empty block
        naming ``original``, or the 304's own headers when no original is known, e.g. one
        stored before these records named it, which pywb then replays as the 304 it was).
        """
        if res.status is None:
            return None
        self._ready()
        date = _warc_date(res.started)
        rec_id = uuid.uuid4().urn
        rec = _record(WarcRecordType.revisit, res, date, rec_id)
        rec.headers["WARC-Profile"] = f"http://netpreserve.org/warc/1.1/revisit/{profile}"
        if original is not None:
            rec.headers["WARC-Refers-To"] = original.record_id
            rec.headers["WARC-Refers-To-Target-URI"] = original.url
            rec.headers["WARC-Refers-To-Date"] = original.date
            rec.headers["WARC-Payload-Digest"] = original.digest
        else:
            rec.headers["WARC-Payload-Digest"] = _EMPTY_DIGEST  # the 304's own empty payload
        if original is not None:  # the payload is the original's, not in this record
            rec.headers["WARC-Truncated"] = "length"
        status: int | None = res.status
        if original is not None and profile == "server-not-modified":
            rec.set_bytes_content(b"")  # Heritrix's form: pywb replays the original whole
            status = None  # no HTTP head in the record
        else:
            rec.set_bytes_content(_http_head(res))
        request, revisit = _member(_request(res, date, rec_id)), _member(rec)
        line = functools.partial(
            cdxj_line,
            url=res.url,
            date=date,
            revisit=True,
            content_type=None,
            status=status,
            digest=rec.headers.get("WARC-Payload-Digest"),
        )
        self._append(request + revisit, 2, [(len(request), len(revisit), line)])
        return f"<{rec_id}>"  # as WARC-Record-ID writes it, as a Capture's id is

    def write_metadata(
        self, url: str, started: float, refers_to: str, fields: list[tuple[str, str]]
    ) -> None:
        """A metadata record (WARC 1.1 §6.6) about the record ``refers_to`` of ``url``:
        ``application/warc-fields`` lines, e.g. the use preferences in force at the fetch."""
        self._ready()
        rec = WarcRecord()
        rec.init_headers(WarcRecordType.metadata)
        rec.headers["WARC-Target-URI"] = url
        rec.headers["WARC-Date"] = _warc_date(started)
        rec.headers["WARC-Refers-To"] = refers_to
        rec.headers["Content-Type"] = "application/warc-fields"
        body = "".join(f"{k}: {' '.join(v.split())}\r\n" for k, v in fields)
        rec.set_bytes_content(mend(body).encode("utf-8"))  # a site's lone surrogate: U+FFFD
        self._append(_member(rec), 1)  # not indexed: CDXJ lists captures

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
        index, self._index = self._index, None
        try:
            if index is not None:
                index.close()
            fh.close()
            if self._broken is None:
                os.replace(self.directory / (self._name + ".open"), self.directory / self._name)
        except OSError as exc:
            self._broken = str(exc)
            raise StorageError(f"cannot close WARC {self._name}: {exc}") from exc


# an index line waiting for its place: (start in the data appended, length, the line's maker)
_Indexed = tuple[int, int, "functools.partial[str]"]


def _write_all(fh: io.FileIO, data: bytes) -> OSError | None:
    """All of ``data`` written (the OS's own errors raise); a write that makes no progress
    is returned as the error it is, for the caller's one ``StorageError``."""
    view, done = memoryview(data), 0
    while done < len(data):
        n = fh.write(view[done:])
        if not n:  # a regular file takes at least a byte or raises; never spin
            return OSError(errno.EIO, "WARC write made no progress")
        done += n
    return None


def reindex(path: Path) -> None:
    """``NAME.cdxj`` rebuilt from the WARC file itself (after a crash: see ``cdxj``)."""
    target = path.with_name(index_name(path.name))
    try:
        if path.exists():
            write_index(target, index_warc(path))
        else:  # nothing of the file was kept
            target.unlink(missing_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot rebuild the index of {path.name}: {exc}") from exc


@dataclass(frozen=True, slots=True)
class PackedExchange:
    """A request and response record as gzip members, ready to append, and the capture
    (``request_len``: the request member's length; ``status``, ``content_type``: for the
    response's index line)."""

    data: bytes
    capture: Capture
    request_len: int = 0
    status: int | None = None
    content_type: str | None = None

    def __reduce__(self) -> tuple[type[PackedExchange], tuple[object, ...]]:
        fields = (self.data, self.capture, self.request_len, self.status, self.content_type)
        return PackedExchange, fields  # see parse.Link

    def indexed(self) -> list[_Indexed]:
        """The response record's index line, to be placed where the data lands."""
        c = self.capture
        line = functools.partial(
            cdxj_line,
            url=c.url,
            date=c.date,
            revisit=False,
            content_type=self.content_type,
            status=self.status,
            digest=c.digest,
        )
        return [(self.request_len, len(self.data) - self.request_len, line)]


def pack_exchange(res: FetchResult, digest: str | None = None) -> PackedExchange:
    """The request and response records of ``res`` (WARC-Concurrent-To links them), built
    and compressed: the costly part of archiving a page, done wherever the CPU is free.
    ``digest``: ``payload_digest(res.raw_body)``, if known (a SHA-1 of the body not done twice)."""
    date = _warc_date(res.started)
    if digest is None:
        digest = payload_digest(res.raw_body)
    resp_id = uuid.uuid4().urn
    resp = _record(WarcRecordType.response, res, date, resp_id)
    resp.headers["WARC-Payload-Digest"] = digest
    if res.cut is not None:  # WARC 1.1 section 5.13: why the payload is short
        resp.headers["WARC-Truncated"] = res.cut
    resp.set_bytes_content(_http_head(res) + res.raw_body)
    request = _member(_request(res, date, resp_id))
    capture = Capture(f"<{resp_id}>", res.url, date, digest)
    ctype = res.header("content-type")
    return PackedExchange(request + _member(resp), capture, len(request), res.status, ctype)


def _record(kind: WarcRecordType, res: FetchResult, date: str, rec_id: str) -> WarcRecord:
    rec = WarcRecord()
    rec.init_headers(kind, record_urn=rec_id[4:].encode())
    rec.headers["WARC-Target-URI"] = res.url
    rec.headers["WARC-Date"] = date
    rec.headers["Content-Type"] = "application/http; msgtype=response"
    if res.ip:
        rec.headers["WARC-IP-Address"] = res.ip
    if res.tls_unverified:  # --tls-insecure: nobody vouched for who answered
        rec.headers[TLS_UNVERIFIED] = "false"
    return rec


def _request(res: FetchResult, date: str, concurrent_to: str) -> WarcRecord:
    req = WarcRecord()
    req.init_headers(WarcRecordType.request)
    req.headers["WARC-Target-URI"] = res.url
    req.headers["WARC-Date"] = date
    req.headers["Content-Type"] = "application/http; msgtype=request"
    req.headers["WARC-Concurrent-To"] = f"<{concurrent_to}>"
    if res.tls_unverified:
        req.headers[TLS_UNVERIFIED] = "false"
    req.set_bytes_content(_http_request_block(res))
    return req


# Compressed by ISA-L (``isal``), not zlib: the same gzip format, which every WARC reader
# (warcio, pywb, zlib itself) reads, about five times faster. On 200 pages of the Python 3.11
# documentation (85 KiB each) zlib took 0.52 ms a page at level 3 (0.45 at level 1) and
# ISA-L 0.11 ms at its level 2, for members 5 % larger (ratio 0.166 against zlib's 0.158);
# compression was the largest single part of WARC writing, itself a fifth of a crawl's CPU.
_GZIP_LEVEL = 2  # ISA-L's levels are 0-3


def _member(rec: WarcRecord) -> bytes:
    """One record as its own gzip member."""
    buf = io.BytesIO()
    rec.write(buf, checksum_data=True)
    comp = isal_zlib.compressobj(_GZIP_LEVEL, isal_zlib.DEFLATED, 31)
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


def unreadable(path: Path) -> str | None:
    """Why a closed WARC file does not read to its end (cut short, a damaged member, not a
    WARC file), or None: ``politecrawl wacz`` packs no file pywb could not read through."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(1 << 12)
            fh.seek(0)
            good = _whole_members_end(fh)
    except OSError as exc:
        return f"cannot read it: {exc.strerror or exc}"
    try:
        start = zlib.decompressobj(31).decompress(head, 5)
    except zlib.error:
        start = b""
    if not start.startswith(b"WARC/"):
        return "not a WARC file (gzip-compressed records)"
    if good < size:
        return f"cut short or damaged: whole records end at byte {good} of {size}"
    return None


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
