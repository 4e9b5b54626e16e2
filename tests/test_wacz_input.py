"""``politecrawl wacz`` on input it cannot pack as it is, through the real command on a real
crawl's folder: misuse is one line and exit 2, a WARC file that does not read to its end is
one line naming it and exit 1 with no package written, and a damaged index or pages log is
mended (the index rebuilt from its WARC file, a bad row left out) and said on stderr.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from pageweb import PageWeb
from test_wacz import _crawl, _site

from politecrawl.storage.cdxj import index_name

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real crawl's folder (one WARC file and its ``.cdxj``), copied by each test."""
    tmp = tmp_path_factory.mktemp("crawl")

    async def run() -> Path:
        async with PageWeb(_site("north"), host="north.test") as site:
            return await _crawl(site, tmp, "c")

    out = asyncio.run(run())
    assert len(list((out / "warc").glob("*.warc.gz"))) == 1
    return out


def _wacz(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "politecrawl", "wacz", *map(str, args)],
        capture_output=True, text=True, timeout=120, cwd=cwd,
    )  # fmt: skip


def _copy(crawl: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    """A copy of the crawl, its WARC file and that file's index."""
    out = tmp_path / "c"
    shutil.copytree(crawl, out)
    (warc,) = (out / "warc").glob("*.warc.gz")
    return out, warc, warc.with_name(index_name(warc.name))


def _one_line(p: subprocess.CompletedProcess[str], code: int) -> str:
    assert p.returncode == code and "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    return lines[0]


def _index(wacz: Path) -> list[str]:
    with zipfile.ZipFile(wacz) as zf:
        return zf.read("indexes/index.cdx").decode().split("\n")


def _page_urls(wacz: Path) -> list[str]:
    with zipfile.ZipFile(wacz) as zf:
        rows = [json.loads(x) for x in zf.read("pages/pages.jsonl").decode().splitlines()]
    return sorted(r["url"] for r in rows[1:])


def _intact(crawl: Path, tmp_path: Path) -> Path:
    """The package of the untouched crawl: what a mended one must equal."""
    p = _wacz(crawl, "--output", tmp_path / "intact.wacz", cwd=tmp_path)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    return tmp_path / "intact.wacz"


@pytest.mark.parametrize("output", [".", "", "..", "FOLDER"])
def test_an_output_that_names_no_file_is_one_line(
    crawl: Path, tmp_path: Path, output: str
) -> None:
    if output == "FOLDER":
        output = str(tmp_path)
    line = _one_line(_wacz(crawl, "--output", output, cwd=tmp_path), 2)
    assert "--output must name the .wacz file" in line, line


def test_a_folder_given_twice_is_said_so(crawl: Path, tmp_path: Path) -> None:
    line = _one_line(_wacz(crawl, crawl, "--output", "x.wacz", cwd=tmp_path), 2)
    assert line == f"politecrawl: error: the folder {crawl} was given twice", line
    spelled = os.path.relpath(crawl, tmp_path) + "/."
    line = _one_line(_wacz(crawl, spelled, "--output", "x.wacz", cwd=tmp_path), 2)
    assert "was given twice" in line and spelled.removesuffix("/.") in line, line
    assert not (tmp_path / "x.wacz").exists()


@pytest.mark.parametrize("damage", ["cut short", "a byte changed", "not a WARC file"])
def test_a_warc_file_that_does_not_read_to_its_end_is_refused(
    crawl: Path, tmp_path: Path, damage: str
) -> None:
    out, warc, _ = _copy(crawl, tmp_path)
    data = warc.read_bytes()
    if damage == "cut short":
        warc.write_bytes(data[:-300])
        bad = warc
    elif damage == "a byte changed":
        middle = len(data) // 2
        warc.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :])
        bad = warc
    else:  # a gzip file of something else, without an index, among the crawl's files
        bad = out / "warc" / "zz-not-a-warc.warc.gz"
        bad.write_bytes(gzip.compress(b"not a WARC record\n" * 50))
    line = _one_line(_wacz(out, "--output", "x.wacz", cwd=tmp_path), 1)
    assert line.startswith(f"politecrawl: {bad}: "), line
    assert ("not a WARC file" if bad != warc else "cut short or damaged") in line, line
    assert "nothing packed" in line, line
    assert not (tmp_path / "x.wacz").exists() and not (tmp_path / "x.wacz.tmp").exists()


@pytest.mark.parametrize("damage", ["a garbage line", "empty", "a line of another file"])
def test_a_damaged_index_is_rebuilt_from_its_warc_file_and_said(
    crawl: Path, tmp_path: Path, damage: str
) -> None:
    out, warc, cdxj = _copy(crawl, tmp_path)
    lines = cdxj.read_text().splitlines(keepends=True)
    if damage == "a garbage line":
        cdxj.write_text("".join(lines[:2]) + "garbage\n" + "".join(lines[2:]))
    elif damage == "empty":
        cdxj.write_text("")
    else:
        cdxj.write_text("".join(lines[:-1]) + lines[-1].replace(warc.name, "other.warc.gz"))
    p = _wacz(out, "--output", "x.wacz", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert f"{cdxj} is {'empty' if damage == 'empty' else 'damaged'}: rebuilt from " in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert f"{len(lines)} captures indexed" in p.stdout, p.stdout
    assert _index(tmp_path / "x.wacz") == _index(_intact(crawl, tmp_path))


def test_an_index_without_its_last_newline_is_packed_line_by_line(
    crawl: Path, tmp_path: Path
) -> None:
    """Two crawls' folders, the first's index cut just before its last newline: its last
    line and the second's first stay two lines (they were one, and pywb could find neither)."""
    first, _, cdxj = _copy(crawl, tmp_path)
    second = tmp_path / "second"
    shutil.copytree(crawl, second)
    (warc,) = (second / "warc").glob("*.warc.gz")
    warc.rename(warc.with_name("second-" + warc.name))  # a name of its own, and its index
    old = warc.with_name(index_name(warc.name))
    old.rename(old.with_name("second-" + old.name))
    moved = old.with_name("second-" + old.name)
    moved.write_text(moved.read_text().replace(warc.name, "second-" + warc.name))
    text = cdxj.read_text()
    assert text.endswith("}\n")
    cdxj.write_text(text[:-1])
    p = _wacz(first, second, "--output", "x.wacz", cwd=tmp_path)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    lines = _index(tmp_path / "x.wacz")
    assert lines[-1] == "" and len(lines) - 1 == 2 * len(text.splitlines())
    for line in lines[:-1]:
        assert json.loads(line.split(" ", 2)[2])["offset"].isdigit(), line


def test_a_pages_row_without_a_url_is_left_out_and_said(crawl: Path, tmp_path: Path) -> None:
    out, _, _ = _copy(crawl, tmp_path)
    rows = (out / "pages.jsonl").read_text().splitlines()
    row = next(json.loads(r) for r in rows if '"kept": "stored"' in r or '"kept":"stored"' in r)
    del row["url"]
    with (out / "pages.jsonl").open("a") as fh:
        fh.write(json.dumps(row) + "\n")
    p = _wacz(out, "--output", "x.wacz", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "pages rows without a url or time left out: 1" in lines[0], lines
    assert _page_urls(tmp_path / "x.wacz") == _page_urls(_intact(crawl, tmp_path))
