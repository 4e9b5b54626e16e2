"""``politecrawl wacz``: a real crawl packed as WACZ 1.1.1, accepted by Webrecorder's own
validator (``wacz validate``, py-wacz) and replayed by pywb from the package's index alone.

Both tools live in virtualenvs of their own (pywb pins ``redis==2.10.6`` and ``brotlipy``;
py-wacz brings frictionless and its pins): found at ``$POLITECRAWL_PYWB`` /
``$POLITECRAWL_WACZ`` (a ``bin`` folder), ``.pywb/bin`` / ``.wacz/bin`` in the repository
(``.ci/run`` makes them), or on PATH; without them the replay test is skipped, unless the
variable is set, when it fails. A ``--processes 2`` crawl's package is validated too (py-wacz
only, required).
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from pageweb import PageWeb, html
from test_processes import _config
from warcio.archiveiterator import ArchiveIterator

from politecrawl.demo.web import TestWeb

pytestmark = pytest.mark.e2e

_ROOT = Path(__file__).resolve().parent.parent


def _tool_bin(env_name: str, venv: str, exe: str) -> Path | None:
    env = os.environ.get(env_name)
    for cand in (env, _ROOT / venv / "bin"):
        if cand and (Path(cand) / exe).exists():
            return Path(cand)
    found = shutil.which(exe)
    if found:
        return Path(found).parent
    if env:
        raise RuntimeError(f"{env_name}={env} has no {exe}")
    return None


PYWB = _tool_bin("POLITECRAWL_PYWB", ".pywb", "wayback")
WACZ = _tool_bin("POLITECRAWL_WACZ", ".wacz", "wacz")

_LEAD = "<p>A page about steam locomotives and the lines they ran on.</p>"


def _site(name: str) -> dict[str, tuple[str, bytes]]:
    links = "".join(f"<a href='/{p}.html'>{p}</a> " for p in ("a", "b", "copy-of-b"))
    page_b = html("Page b", f"<h1>b</h1>{_LEAD}<p>b of {name}</p>").encode()
    return {
        "/robots.txt": ("text/plain", b"User-agent: *\nAllow: /\n"),
        "/": ("text/html; charset=utf-8", html(f"{name} home", links + _LEAD).encode()),
        "/a.html": ("text/html", html("Page a", f"<h1>a</h1>{_LEAD} {name}").encode()),
        "/b.html": ("text/html", page_b),
        "/copy-of-b.html": ("text/html", page_b),  # the same bytes: a revisit record
    }


async def _crawl(site: PageWeb, tmp: Path, name: str) -> Path:
    seeds = tmp / f"{name}-seeds.txt"
    seeds.write_text(site.root + "\n")
    out = tmp / name
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "politecrawl", *site.crawl_args(str(seeds), str(out)),
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    return out


def _captures(folders: list[Path]) -> dict[tuple[str, int], tuple[str, int]]:
    """(file, offset) -> (url, length) of every response and revisit record."""
    found: dict[tuple[str, int], tuple[str, int]] = {}
    for folder in folders:
        for path in sorted((folder / "warc").glob("*.warc.gz")):
            with path.open("rb") as fh:
                it = ArchiveIterator(fh)
                for rec in it:
                    url = rec.rec_headers.get_header("WARC-Target-URI")
                    rec.content_stream().read()
                    if rec.rec_type in ("response", "revisit"):
                        key = (path.name, it.get_record_offset())
                        found[key] = (url, it.get_record_length())
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(port: int, target: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", target)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


@contextlib.contextmanager
def _wayback(root: Path) -> Iterator[int]:
    """pywb serving collection ``c`` from the unpacked package: its index and its WARC files
    as they are (no ``wb-manager add``, which would index them itself)."""
    assert PYWB is not None
    (root / "config.yaml").write_text(
        "collections:\n  c:\n"
        f"    index_paths: {root / 'indexes'}/\n"
        f"    archive_paths: {root / 'archive'}/\n"
    )
    port = _free_port()
    with (root / "wayback.log").open("wb") as log:
        proc = subprocess.Popen(
            [str(PYWB / "wayback"), "-p", str(port), "-b", "127.0.0.1"],
            cwd=root, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        for _ in range(600):  # up to 60 s on a loaded machine
            with contextlib.suppress(OSError):
                if _get(port, "/c/")[0] in (200, 404):
                    break
            assert proc.poll() is None, (root / "wayback.log").read_text()[-2000:]
            time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.skipif(PYWB is None or WACZ is None, reason="pywb or py-wacz not installed")
async def test_two_workers_one_wacz_valid_and_replayed(tmp_path: Path) -> None:
    # a shared crawl's workers each write their own --out; one package takes them all
    async with PageWeb(_site("north"), host="north.test") as north, PageWeb(
        _site("south"), host="south.test"
    ) as south:
        outs = [await _crawl(north, tmp_path, "w1"), await _crawl(south, tmp_path, "w2")]
        live = {site.host: site for site in (north, south)}
        wacz = tmp_path / "crawl.wacz"
        p = subprocess.run(
            [sys.executable, "-m", "politecrawl", "wacz", *map(str, outs), "--output", str(wacz)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert p.returncode == 0, p.stderr

        # Webrecorder's validator accepts it; a package with a changed byte it refuses
        check = [str(WACZ / "wacz"), "validate", "-f"]
        v = subprocess.run([*check, str(wacz)], capture_output=True, text=True, timeout=300)
        assert v.returncode == 0 and "is valid" in v.stdout, v.stdout + v.stderr
        bad = tmp_path / "bad.wacz"
        with zipfile.ZipFile(wacz) as src, zipfile.ZipFile(bad, "w") as dst:
            for item in src.infolist():
                data = src.read(item)
                if item.filename == "pages/pages.jsonl":
                    data = data.replace(b"Page a", b"Page A")
                dst.writestr(item, data)
        v = subprocess.run([*check, str(bad)], capture_output=True, text=True, timeout=300)
        assert v.returncode != 0, v.stdout

        # every response and revisit record of both workers' WARC files is in the index
        root = tmp_path / "unpacked"
        with zipfile.ZipFile(wacz) as zf:
            names = zf.namelist()
            assert all(zf.getinfo(n).compress_type == zipfile.ZIP_STORED for n in names)
            zf.extractall(root)
        package = json.loads((root / "datapackage.json").read_text())
        assert package["wacz_version"] == "1.1.1"
        assert {r["path"] for r in package["resources"]} == set(names) - {
            "datapackage.json", "datapackage-digest.json"
        }  # fmt: skip
        lines = (root / "indexes" / "index.cdx").read_text().splitlines()
        assert lines == sorted(lines, key=lambda x: x.split(" ", 2)[:2])
        indexed = {}
        for line in lines:
            f = json.loads(line.split(" ", 2)[2])
            indexed[(f["filename"], int(f["offset"]))] = (f["url"], int(f["length"]))
        captures = _captures(outs)
        pages_captured = [u for u, _ in captures.values() if not u.endswith("/robots.txt")]
        assert indexed == captures and len(pages_captured) == 8  # and each robots.txt
        assert len({name for name, _ in captures}) >= 2  # both workers' files
        pages = [json.loads(x) for x in (root / "pages" / "pages.jsonl").read_text().splitlines()]
        assert pages[0]["format"] == "json-pages-1.0"
        assert len(pages) - 1 == 8  # 4 HTML pages a site: /, a, b, copy-of-b (a revisit)
        assert len({p["id"] for p in pages[1:]}) == 8

        # pywb replays every page from the package's own index, equal to the live site
        with _wayback(root) as port:
            for page in pages[1:]:
                url = page["url"]
                site = live[url.split("/")[2].split(":")[0]]
                path = "/" + url.split("/", 3)[3]
                ts = "".join(ch for ch in page["ts"] if ch.isdigit())
                status, body = _get(port, f"/c/{ts}id_/{url}")
                assert status == 200, (url, body[:300])
                assert body == site.pages[path][1], url


async def test_a_two_process_crawl_packs_valid(tmp_path: Path) -> None:
    """``--processes 2`` names its second process's files ``politecrawl@1-...``: Frictionless
    refuses ``@`` in a resource's name, so the package's names are mapped (as py-wacz names
    them, the file name lowercased, ``@`` made ``-``) while each path stays the file's.
    Needs py-wacz (``$POLITECRAWL_WACZ`` or ``.wacz/bin``): without it the test fails."""
    assert WACZ is not None, "py-wacz's wacz not found: set POLITECRAWL_WACZ to its bin folder"
    async with TestWeb(n_hosts=4, pages_per_host=3, seed=7, plain=True) as web:
        out = tmp_path / "out"
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "politecrawl", "crawl", "--config", str(_config(tmp_path, web)),
            "--out", str(out), "--no-progress", "--processes", "2",
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await asyncio.wait_for(proc.communicate(), 180)
        assert proc.returncode == 0, err.decode()
    warcs = sorted(p.name for p in (out / "warc").glob("*.warc.gz"))
    assert any(n.startswith("politecrawl@1-") for n in warcs), warcs  # both processes wrote

    wacz = tmp_path / "two.wacz"
    p = subprocess.run(
        [sys.executable, "-m", "politecrawl", "wacz", str(out), "--output", str(wacz)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert p.returncode == 0 and p.stderr == "", p.stderr
    v = subprocess.run([str(WACZ / "wacz"), "validate", "-f", str(wacz)],
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert v.returncode == 0 and "is valid" in v.stdout, v.stdout + v.stderr
    with zipfile.ZipFile(wacz) as zf:
        package = json.loads(zf.read("datapackage.json"))
        resources = package["resources"]
        assert {r["path"] for r in resources} == set(zf.namelist()) - {
            "datapackage.json", "datapackage-digest.json"
        }  # fmt: skip
    assert {r["path"] for r in resources} >= {f"archive/{n}" for n in warcs}
    names = [r["name"] for r in resources]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[-a-z0-9._/]+", n) for n in names), names
