"""The CDXJ index written beside each WARC file as records go in: every response and revisit
record, at its offset and length, in pywb's format; rebuilt whole after a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_warc import result
from warcio.archiveiterator import ArchiveIterator

from politecrawl.net.fetch import FetchResult
from politecrawl.storage.cdxj import index_name, index_warc, read_index
from politecrawl.storage.warc import WarcWriter, pack_exchange

pytestmark = pytest.mark.unit


def _captures(path: Path) -> dict[int, tuple[str, str, int]]:
    """offset -> (type, url, length) of each response/revisit record, as warcio reads it."""
    found: dict[int, tuple[str, str, int]] = {}
    with path.open("rb") as fh:
        it = ArchiveIterator(fh)
        for rec in it:
            if rec.rec_type in ("response", "revisit"):
                url = rec.rec_headers.get_header("WARC-Target-URI")
                rec.content_stream().read()
                found[it.get_record_offset()] = (rec.rec_type, url, it.get_record_length())
    return found


def _lines(path: Path) -> list[tuple[str, str, dict[str, str]]]:
    out = []
    for line in path.with_name(index_name(path.name)).read_text().splitlines():
        key, ts, fields = line.split(" ", 2)
        out.append((key, ts, json.loads(fields)))
    return out


def _write_some(tmp_path: Path) -> WarcWriter:
    w = WarcWriter(tmp_path, "politecrawl/test", "ua")
    caps = [w.write_exchange(result(i)) for i in range(6)]
    dup = result(2)
    dup.url = "http://a.test/copy.html"
    w.write_revisit(dup, profile="identical-payload-digest", original=caps[2])
    nm = FetchResult(url=result(1).url, started=1.8e9, status=304, reason="Not Modified")
    w.write_revisit(nm, profile="server-not-modified", original=caps[1])
    w.append_exchange(pack_exchange(result(7)))  # as a worker process packs it
    return w


def test_every_capture_is_indexed_at_its_offset(tmp_path: Path) -> None:
    w = _write_some(tmp_path)
    w.close()
    (warc,) = tmp_path.glob("*.warc.gz")
    lines = _lines(warc)
    captures = _captures(warc)
    assert len(lines) == len(captures) == 9
    for _key, ts, f in lines:
        kind, url, length = captures[int(f["offset"])]
        assert f["url"] == url and int(f["length"]) == length
        assert f["filename"] == warc.name and len(ts) == 14 and ts.isdigit()
        assert f["mime"] == ("warc/revisit" if kind == "revisit" else "text/html")
        assert f["digest"].startswith("sha1:")
    first = lines[0]
    assert first[0] == "test,a)/p/0.html" and first[2]["status"] == "200"
    assert first[1] == "20231114221320"  # 1.7e9
    assert index_warc(warc) == warc.with_name(index_name(warc.name)).read_text().splitlines(
        keepends=True
    )  # what is written as it goes is what indexing the file gives


def test_a_crash_between_record_and_line_is_repaired(tmp_path: Path) -> None:
    w = _write_some(tmp_path)
    w.flush()  # no close: the process dies here, the file stays .open
    (open_file,) = tmp_path.glob("*.warc.gz.open")
    index = open_file.with_name(index_name(open_file.name))
    whole = index.read_text()
    index.write_text("".join(whole.splitlines(keepends=True)[:-3]))  # lines lost in the crash
    with open_file.open("ab") as fh:
        fh.write(b"\x1f\x8b\x08\x00torn")  # and a torn record
    w2 = WarcWriter(tmp_path, "politecrawl/test", "ua")  # the next start
    w2.write_exchange(result(9))
    w2.close()
    repaired = open_file.with_name(open_file.name.removesuffix(".open"))
    assert index.read_text() == whole
    assert len(_lines(repaired)) == len(_captures(repaired)) == 9
    assert len(list(tmp_path.glob("*.cdxj"))) == 2


def test_an_index_is_read_whole_or_not_at_all(tmp_path: Path) -> None:
    """``read_index`` gives each line with its newline (the last one's too, when the file was
    cut just before it), and None for a line that is not an index line of that WARC file:
    ``politecrawl wacz`` then rebuilds the index from the file instead of packing it."""
    w = _write_some(tmp_path)
    w.close()
    (warc,) = tmp_path.glob("*.warc.gz")
    index = warc.with_name(index_name(warc.name))
    text = index.read_text()
    whole = text.splitlines(keepends=True)
    assert read_index(index, warc.name) == whole == index_warc(warc)
    index.write_text(text[:-1])
    assert read_index(index, warc.name) == whole
    assert read_index(index, "other.warc.gz") is None
    for damaged in ("garbage\n", whole[0].split(" {")[0] + " {not json\n", " 2026 {}\n"):
        index.write_text(text + damaged)
        assert read_index(index, warc.name) is None, damaged
    index.write_text("")
    assert read_index(index, warc.name) == []
    index.unlink()
    assert read_index(index, warc.name) is None
