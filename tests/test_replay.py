"""The WARC replays: a crawl by the real command, replayed in pywb, equal to the live server.

``politecrawl crawl --recrawl`` runs over ``replayweb`` (charsets, chunked with and without
gzip, brotli, byte-identical and near-identical pages, a short body, a corrupt gzip body, a
bad chunk-size line, redirects; with ``--recrawl`` each page comes back as a conditional GET
and is answered 304). Then:

* every record's digests are checked with warcio (``ArchiveIterator(check_digests=True)``),
  and the record fields the issue asks for are there;
* pywb (its own virtualenv: pywb pins ``redis==2.10.6`` and ``brotlipy``, which replaces the
  ``brotli`` module politecrawl uses, so it cannot share one) indexes the WARC and replays
  every capture, response and revisit alike, in identity mode (``id_``) and rewritten mode
  (``mp_``), compared with what the server sends for that URL.

pywb is found at ``$POLITECRAWL_PYWB`` (a ``bin`` folder), ``.pywb/bin`` in the repository
(``.ci/run`` makes it), or on PATH; without it the test is skipped, unless
``POLITECRAWL_PYWB`` is set, when it fails.

Equal means: the same status and Content-Type; for a redirect the same target; in identity
mode the same bytes (content coding kept, the client accepting gzip and br) and
Content-Encoding; in rewritten mode the same text (title, headings, paragraphs) once each side
is decoded by its own headers. A body the server broke off (a short body, a bad chunk) is
compared as the part a client gets before the break. Cases impossible to replay equal to live
would be named in ``_IMPOSSIBLE`` with the reason; none is.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import html.parser
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import brotli
import pytest
from conftest import UA
from replayweb import CASES, ReplayWeb
from warcio.archiveiterator import ArchiveIterator

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

_ROOT = Path(__file__).resolve().parent.parent


def _pywb_bin() -> Path | None:
    env = os.environ.get("POLITECRAWL_PYWB")
    for cand in (env, _ROOT / ".pywb" / "bin"):
        if cand and (Path(cand) / "wayback").exists():
            return Path(cand)
    found = shutil.which("wayback")
    if found:
        return Path(found).parent
    if env:
        raise RuntimeError(f"POLITECRAWL_PYWB={env} has no wayback")
    return None


PYWB = _pywb_bin()

# (mode, path) -> why that capture cannot replay equal to live (none here does not)
_IMPOSSIBLE: dict[tuple[str, str], str] = {}


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes  # what arrived, content coding kept (short if the connection broke)


def _get(port: int, target: str, host: str) -> Answer:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", target, headers={"Host": host, "Accept-Encoding": "gzip, br"})
        resp = conn.getresponse()
        try:
            body = resp.read()
        except http.client.IncompleteRead as exc:  # a short body, or a broken chunk
            body = exc.partial
        headers = {k.lower(): v for k, v in resp.getheaders()}
        return Answer(resp.status, headers, body)
    finally:
        conn.close()


def _decoded(ans: Answer) -> bytes:
    """The body with its content coding undone (as far as it decodes)."""
    enc = ans.headers.get("content-encoding", "").strip().lower()
    try:
        if enc == "gzip":
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(ans.body)
        if enc == "br":
            return bytes(brotli.decompress(ans.body))
    except (zlib.error, brotli.error):
        return ans.body
    return ans.body


class _Text(html.parser.HTMLParser):
    """The visible text of title, headings and paragraphs (pywb adds only scripts)."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        self._skip += tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        self._skip -= tag in ("script", "style") and self._skip > 0

    def handle_data(self, data: str) -> None:
        if not self._skip and data.strip():
            self.parts.append(data.strip())


def _text(ans: Answer) -> list[str]:
    body = _decoded(ans)
    ctype = ans.headers.get("content-type", "")
    charset = ctype.split("charset=", 1)[1].strip() if "charset=" in ctype else "utf-8"
    if body.startswith((b"\xff\xfe", b"\xfe\xff")):
        charset = "utf-16"
    p = _Text()
    p.feed(body.decode(charset, "replace"))
    return p.parts


def _same(mode: str, live: Answer, replay: Answer) -> str | None:
    """None when ``replay`` shows what ``live`` does, else how it differs."""
    if replay.status != live.status:
        return f"status {replay.status} != {live.status}"
    if 300 <= live.status < 400:
        loc, want = replay.headers.get("location", ""), live.headers["location"]
        return None if loc.endswith(want) else f"location {loc!r} for {want!r}"
    if replay.headers.get("content-type") != live.headers.get("content-type"):
        return f"content-type {replay.headers.get('content-type')!r}"
    if mode == "id_":  # the very bytes, content coding and all
        enc = replay.headers.get("content-encoding")
        if enc != live.headers.get("content-encoding"):
            return f"content-encoding {enc!r}"
        same = replay.body == live.body
        return None if same else f"body {len(replay.body)} bytes != {len(live.body)}"
    got_t, want_t = _text(replay), _text(live)
    return None if got_t == want_t else f"text {got_t[:3]} != {want_t[:3]}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _wayback(root: Path, warcs: list[Path]) -> Iterator[int]:
    """pywb serving ``warcs`` as collection ``c`` on a loopback port."""
    assert PYWB is not None
    run = {"cwd": root, "check": True, "capture_output": True, "timeout": 120}
    subprocess.run([str(PYWB / "wb-manager"), "init", "c"], **run)  # type: ignore[call-overload]
    subprocess.run([str(PYWB / "wb-manager"), "add", "c", *map(str, warcs)], **run)  # type: ignore[call-overload]
    port = _free_port()
    with (root / "wayback.log").open("wb") as log:
        proc = subprocess.Popen(
            [str(PYWB / "wayback"), "-p", str(port), "-b", "127.0.0.1"],
            cwd=root,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        for _ in range(600):  # up to 60 s for a loaded machine; usually about 2 s
            with contextlib.suppress(OSError):
                if _get(port, "/c/", "127.0.0.1").status == 200:
                    break
            assert proc.poll() is None, (root / "wayback.log").read_text()[-2000:]
            time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@dataclass(frozen=True, slots=True)
class Rec:
    kind: str  # response | revisit 304 | revisit duplicate
    url: str
    path: str
    timestamp: str  # 14 digits, as pywb addresses a capture
    headers: dict[str, str]


def _records(out: Path) -> tuple[list[Rec], dict[str, dict[str, str]]]:
    """Captures in the WARC (digests checked by warcio) and every record's headers by id."""
    recs: list[Rec] = []
    by_id: dict[str, dict[str, str]] = {}
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh, check_digests=True):
                rec.raw_stream.read()  # (content_stream would decode br with brotlipy)
                h = dict(rec.rec_headers.headers)
                assert rec.digest_checker.passed is not False, (h, rec.digest_checker.problems)
                by_id[h["WARC-Record-ID"]] = h
                if rec.rec_type not in ("response", "revisit"):
                    continue
                kind = "response"
                if rec.rec_type == "revisit":
                    kind = "revisit 304" if "not-modified" in h["WARC-Profile"] else "revisit dup"
                url = h["WARC-Target-URI"]
                stamp = "".join(c for c in h["WARC-Date"] if c.isdigit())[:14]
                path_ = "/" + url.split("/", 3)[3]
                recs.append(Rec(kind, url, path_, stamp, h))
    return recs, by_id


async def _crawl(web: ReplayWeb, out: Path) -> None:
    seeds = out.parent / "seeds.txt"
    seeds.write_text(web.url("/") + "\n")
    cmd = [
        sys.executable, "-m", "politecrawl", "crawl", "--seeds", str(seeds),
        "--out", str(out), "--user-agent", UA, "--resolve", web.resolve_arg(),
        "--allow-private-addresses", "--min-delay", "0", "--delay-factor", "0",
        "--jitter", "0", "--retry-base", "0.1", "--no-progress", "--ip-min-delay", "0",
        # every page comes back once or twice as a conditional GET (a 304 here)
        "--recrawl", "--revisit-min", "1.5", "--revisit-max", "2", "--max-time", "6",
    ]  # fmt: skip
    proc = await asyncio.create_subprocess_exec(*cmd, stdout=subprocess.PIPE)
    stdout, _ = await proc.communicate()
    assert proc.returncode == 0, stdout.decode()


def _check_records(recs: list[Rec], by_id: dict[str, dict[str, str]]) -> None:
    """Payload digest, IP address, and the revisit fields name a real original."""
    for r in recs:
        h = r.headers
        assert h.get("WARC-Payload-Digest", "").startswith("sha1:"), h
        assert h.get("WARC-IP-Address") == "127.0.0.1", h
        if r.kind == "response":
            continue
        orig = by_id[h["WARC-Refers-To"]]  # the original is in the archive
        assert orig["WARC-Type"] == "response"
        assert orig["WARC-Target-URI"] == h["WARC-Refers-To-Target-URI"]
        assert orig["WARC-Date"] == h["WARC-Refers-To-Date"]
        # only byte-identical payloads: the original's digest is this payload's
        assert orig["WARC-Payload-Digest"] == h["WARC-Payload-Digest"]
        assert h["WARC-Truncated"] == "length"  # no payload of its own


def _check_short_bodies(recs: list[Rec]) -> None:
    """Each short body is marked with its reason; a whole one is not."""
    reasons = {r.path: r.headers.get("WARC-Truncated") for r in recs if r.kind == "response"}
    assert reasons["/short.html"] == "disconnect"
    assert reasons["/bad-chunk.html"] == "protocol"
    assert reasons["/corrupt-gzip.html"] is None  # read whole: the bytes are what was sent
    assert reasons["/chunked.html"] is None


async def test_crawl_replays_in_pywb_equal_to_live(tmp_path: Path) -> None:
    if PYWB is None:
        pytest.skip("pywb not installed (.ci/run makes .pywb; or set POLITECRAWL_PYWB)")
    out = tmp_path / "out"
    async with ReplayWeb() as web:
        await _crawl(web, out)
        host = f"replay.test:{web.port}"
        live = {
            p: await asyncio.to_thread(_get, web.port, p, host) for p in CASES if p != "/robots.txt"
        }
    recs, by_id = _records(out)
    _check_records(recs, by_id)
    _check_short_bodies(recs)
    kinds = collections.Counter(r.kind for r in recs)
    assert kinds["revisit 304"] > 0 and kinds["revisit dup"] > 0 and kinds["response"] > 0

    # the crawl's own account: the bad chunk ended at once with its own outcome; every
    # request has its server's address; the duplicate and the near-duplicate are told apart
    log = read_jsonl(out / "log" / "requests.jsonl")
    assert all(row["ip"] == "127.0.0.1" for row in log), [r for r in log if not r["ip"]]
    bad = [r for r in log if r["url"].endswith("/bad-chunk.html")]
    assert bad and all(r["outcome"] == "dropped:bad_chunking" for r in bad), bad
    pages = [(p["url"].split("/", 3)[3], p) for p in read_jsonl(out / "pages.jsonl")]
    dups = {(u, p["duplicate_of"].split("/", 3)[3]) for u, p in pages if p["duplicate_of"]}
    assert dups in ({("dup-b.html", "dup-a.html")}, {("dup-a.html", "dup-b.html")}), dups
    near = {
        (u, p["near_duplicate_of"].split("/", 3)[3]) for u, p in pages if p["near_duplicate_of"]
    }
    # the reports differing in one number are near-duplicates (stored in full); other pages
    # sharing the same prose (once decoded right, UTF-16 included) may be too
    assert near & {("near-2.html", "near-1.html"), ("near-1.html", "near-2.html")}, near
    assert not {u for u, _ in near} & {u for u, _ in dups}, (near, dups)

    warcs = sorted((out / "warc").glob("*.warc.gz"))
    # and warcio's own checker (pywb's virtualenv: its warcio decodes br with brotlipy)
    check = subprocess.run(
        [str(PYWB / "warcio"), "check", "-v", *map(str, warcs)], capture_output=True, text=True
    )
    assert check.returncode == 0 and "fail" not in check.stdout, check.stdout + check.stderr
    tally: dict[tuple[str, str], list[int]] = collections.defaultdict(lambda: [0, 0])
    wrong = []
    (tmp_path / "pywb").mkdir()
    with _wayback(tmp_path / "pywb", warcs) as port:
        for r in recs:
            if r.path == "/robots.txt":  # archived as Heritrix does; the pages are compared
                continue
            for mode in ("id_", "mp_"):
                try:
                    replay = _get(port, f"/c/{r.timestamp}{mode}/{r.url}", f"127.0.0.1:{port}")
                    diff = _same(mode, live[r.path], replay)
                except TimeoutError:  # e.g. a Content-Length the replay cannot fill
                    diff = "no answer in 10 s"
                impossible = _IMPOSSIBLE.get((mode, r.path))
                tally[(r.kind, mode)][1] += 1
                tally[(r.kind, mode)][0] += diff is None
                if diff is not None and impossible is None:
                    wrong.append((r.kind, mode, r.path, r.timestamp, diff))
    figures = {f"{k} {m}": f"{ok}/{n}" for (k, m), (ok, n) in sorted(tally.items())}
    print("replay equal to live:", json.dumps(figures))
    assert not wrong, wrong
