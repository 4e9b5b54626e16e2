"""The HTML report of a real crawl, rendered by a real headless browser."""

from __future__ import annotations

import argparse
import asyncio
import calendar
import re
import shutil
import struct
import subprocess
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import crawl_config

from politecrawl import Crawler
from politecrawl.demo.web import TestWeb
from politecrawl.errors import ConfigError
from politecrawl.storage.logs import JsonlLog, iter_log_records
from politecrawl.tools.report.page import main_args, write_report

CHART_COLOURS = ("3b7dd8", "2e9d5b", "d9453d", "6a5acd", "e08a2c")  # line/bars/hist/delays


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("crawl") / "out"

    async def go() -> None:
        async with TestWeb(n_hosts=12, pages_per_host=6, seed=3) as web:
            await Crawler(crawl_config(web, out, delay=0.05, concurrency=12, max_time_s=5.0)).run()

    asyncio.run(go())
    return out


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _screenshot(html: Path, png: Path, profile: Path, size: str = "1200,2400") -> None:
    binary = _chromium()
    if binary is None:
        pytest.skip(
            "chromium is not installed (apt-get install chromium): "
            "the report is checked in a real browser"
        )
    subprocess.run(
        [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            f"--screenshot={png}",
            f"--window-size={size}",
            html.resolve().as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )


def _png_decoded(path: Path) -> tuple[int, int, Iterator[bytearray], int]:
    """Width, height, the rows (unfiltered, decoded lazily, top down) and bytes per pixel of
    a (non-interlaced, 8-bit RGB/RGBA) PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w, h, ctype = 8, [], 0, 0, 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos : pos + 8])
        chunk = data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            w, h, _depth, ctype = struct.unpack(">IIBB", chunk[:10])
        elif kind == b"IDAT":
            idat.append(chunk)
        pos += 12 + n
    bpp = {2: 3, 6: 4}[ctype]
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp

    def rows() -> Iterator[bytearray]:
        prev = bytearray(stride)
        for y in range(h):
            line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
            _unfilter(raw[y * (stride + 1)], line, prev, bpp)
            yield line
            prev = line

    return w, h, rows(), bpp


def _png_colours(
    path: Path, want: set[bytes] | None = None, enough: int = 0
) -> tuple[int, int, set[bytes]]:
    """Width, height and the RGB colours of a PNG, read from the top down only until
    ``want`` and ``enough`` colours were seen (decoding in pure Python is slow)."""
    w, h, rows, bpp = _png_decoded(path)
    colours: set[bytes] = set()
    for y, line in enumerate(rows):
        if y % 2 == 0:
            colours.update(bytes(line[i : i + 3]) for i in range(0, len(line), bpp))
            if want is not None and want <= colours and len(colours) >= enough:
                break
    return w, h, colours


def _unfilter(f: int, line: bytearray, prev: bytearray, bpp: int) -> None:
    """PNG row filters (RFC 2083 6.2-6.6), in place; one loop per type for speed."""
    n = len(line)
    if f == 1:
        for i in range(bpp, n):
            line[i] = (line[i] + line[i - bpp]) & 255
    elif f == 2:
        line[:] = bytes((a + b) & 255 for a, b in zip(line, prev, strict=True))
    elif f == 3:
        for i in range(n):
            line[i] = (line[i] + ((line[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
    elif f == 4:
        for i in range(n):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255


@pytest.mark.e2e
def test_report_is_self_contained_and_has_every_chart(crawl: Path) -> None:
    path = write_report(crawl)
    assert path == crawl / "report.html"
    page = path.read_text(encoding="utf-8")
    assert not re.search(r"<script|<link|<img|<iframe|\bsrc=|url\(|@import", page, re.I)
    assert page.count("<svg") == 5  # harvest rate has no data in a crawl without relevance
    for title in (
        "Pages over time",
        "Status classes over time",
        "Response times",
        "Delay applied per host",
        "Top hosts by requests",
        "summary.json",
    ):
        assert f"<h2>{title}</h2>" in page
    assert "not shown: no page in pages.jsonl carries a relevance score" in page
    requests = sum(1 for _ in iter_log_records(crawl / "log", "requests"))
    assert f"{requests} requests logged" in page
    assert "h4.test" in page and "robots disallowed" in page


@pytest.mark.e2e
def test_report_renders_in_a_real_browser(crawl: Path, tmp_path: Path) -> None:
    html = write_report(crawl)
    png = tmp_path / "report.png"
    _screenshot(html, png, tmp_path / "profile")
    assert png.stat().st_size > 30_000
    want = {bytes.fromhex(c) for c in CHART_COLOURS}
    w, h, colours = _png_colours(png, want, 100)
    assert (w, h) == (1200, 2400)
    assert len(colours) >= 100  # text antialiasing and charts, not a blank page
    assert sorted(c.hex() for c in want - colours) == []  # the SVG bars and lines were drawn


@pytest.mark.e2e
def test_harvest_rate_chart_from_pages_jsonl_across_rotation(crawl: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(crawl, out)
    first = next(iter_log_records(out / "log", "requests"))["time"]
    t0 = float(calendar.timegm(time.strptime(first[:19], "%Y-%m-%dT%H:%M:%S")))
    clock = [t0]
    pages = JsonlLog(out / "log" / "pages.jsonl", rotate_bytes=500, clock=lambda: clock[0])
    for i in range(60):
        clock[0] = t0 + i * 0.1
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(clock[0]))
        pages.write(
            {
                "time": f"{stamp}.{i % 10}00Z",
                "url": f"http://h0.test/{i}",
                "relevance": 0.9 if i % 3 == 0 else 0.1,
            }
        )
    pages.close()
    page = write_report(out).read_text(encoding="utf-8")
    assert page.count("<svg") == 6 and "<h2>Harvest rate</h2>" in page
    assert "relevance ≥ 0.5" in page and "not shown" not in page
    png = tmp_path / "harvest.png"
    _screenshot(out / "report.html", png, tmp_path / "profile")
    purple = bytes.fromhex("8e44ad")
    assert purple in _png_colours(png, {purple})[2]  # the harvest line


@pytest.mark.unit
def test_report_of_an_empty_or_missing_folder(tmp_path: Path, capsys: Any) -> None:
    with pytest.raises(ConfigError):
        main_args(argparse.Namespace(dir=str(tmp_path / "nope")))
    (tmp_path / "log").mkdir()
    assert main_args(argparse.Namespace(dir=str(tmp_path))) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "No summary.json" in page and "no data" in page


def _png_rows(path: Path) -> tuple[int, list[bytes]]:
    """Width and every row of a PNG as RGB bytes (the whole image decoded)."""
    w, _, rows, bpp = _png_decoded(path)
    return w, [b"".join(bytes(line[i : i + 3]) for i in range(0, len(line), bpp)) for line in rows]


_PLAIN = {bytes.fromhex(c) for c in ("f5f7f9", "ffffff", "dde3e8", "eef1f4", "e6eaee")}


def _blank(row: bytes, x0: int, x1: int) -> bool:
    return all(row[i : i + 3] in _PLAIN for i in range(x0 * 3, x1 * 3, 6))


@pytest.mark.e2e
def test_report_layout_leaves_no_half_page_empty(crawl: Path, tmp_path: Path) -> None:
    """Seen in a real browser: down the page, the left and the right column each hold
    something (a chart, a table, text) on most rows: no chart-sized hole, no card half
    empty beside a tall one."""
    html = write_report(crawl)
    png = tmp_path / "layout.png"
    _screenshot(html, png, tmp_path / "profile", size="1200,1800")
    w, rows = _png_rows(png)
    content = [y for y, r in enumerate(rows) if not _blank(r, 0, w)]
    assert len(content) > 300
    body = rows[content[0] : content[-1] + 1]
    for x0, x1 in ((40, w // 2 - 20), (w // 2 + 20, w - 40)):  # the left, the right column
        run = longest = 0
        for r in body:
            run = run + 1 if _blank(r, x0, x1) else 0
            longest = max(longest, run)
        assert longest < 250, (x0, longest)  # px of nothing but background or card


@pytest.mark.unit
def test_delay_chart_labels_mean_and_max_apart(crawl: Path) -> None:
    """The label beside the max tick says which number is the mean and which the max."""
    page = write_report(crawl).read_text(encoding="utf-8")
    delays = page.split("<h2>Delay applied per host</h2>", 1)[1].split("</section>", 1)[0]
    ticks = delays.count("<title>max ")
    assert ticks >= 1
    assert len(re.findall(r'class="tick">[0-9.]+, max [0-9.]+</text>', delays)) == ticks
