"""``politecrawl wacz OUT [OUT ...] --output FILE.wacz``: a crawl packed as WACZ 1.1.1.

WACZ (Webrecorder's format: ReplayWeb.page, pywb, Browsertrix) is a ZIP of::

    archive/*.warc.gz          the crawl's WARC files, as written
    indexes/index.cdx          the CDXJ index of every response and revisit record, sorted
    pages/pages.jsonl          the pages (json-pages-1.0): url, ts, title
    datapackage.json           every file above with its sha256 and size (Frictionless)
    datapackage-digest.json    the sha256 of datapackage.json

laid out as py-wacz's ``wacz create`` lays it out: every entry stored, not deflated (a WARC
member must be readable at its offset in place), and each file listed in datapackage.json.

The index is the crawl's own (``NAME.cdxj`` beside each WARC file, ``storage.cdxj``), so
packing does not index the WARC files again; a WARC file without one (a crawl made before the
index existed) is indexed here, and so, with a warning, is one whose index is empty or has a
line that is not a whole index line of that file (``storage.cdxj.read_index``).

With ``--processes N`` every process's files are in the one ``OUT/warc`` folder. A shared
crawl's workers each have their own ``--out``: give them all (``politecrawl wacz w1 w2 w3
--output crawl.wacz``), and every worker's WARC files go into one package with one index.

A WARC file still being written (``*.open``: a live crawl, or one that crashed and was not
restarted) is refused: stop the crawl, or run it again to repair. So is a closed one that
does not read to its end (cut short, a damaged member, not a WARC file:
``storage.warc.unreadable``), by name, and nothing is packed: a package pywb and
ReplayWeb.page fail on must not be made as if it were whole.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import re
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from politecrawl.errors import ConfigError, PolitecrawlError, StorageError
from politecrawl.storage.cdxj import index_name, index_warc, read_index, sort_key
from politecrawl.storage.logs import LogDamage, iter_log_records
from politecrawl.storage.records import PAGES
from politecrawl.storage.warc import unreadable
from politecrawl.wording import counted

__all__ = ["WACZ_VERSION", "main_args", "pack"]

WACZ_VERSION = "1.1.1"
_PAGES_HEADER = {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}

log = logging.getLogger(__name__)


def main_args(args: argparse.Namespace) -> int:
    """The ``wacz`` command: pack, then one line saying what went in."""
    out: Path = args.output
    summary = pack(list(args.dirs), out, title=args.title)
    print(
        f"{out}: {counted(summary['warcs'], 'WARC file')}, "
        f"{counted(summary['captures'], 'capture')} indexed, "
        f"{counted(summary['pages'], 'page')} (WACZ {WACZ_VERSION})"
    )
    return 0


def pack(dirs: list[Path], output: Path, *, title: str | None = None) -> dict[str, int]:
    """Write ``output``; returns how many WARC files, index lines and pages went in."""
    if output.name in ("", "..") or output.is_dir():
        raise ConfigError(f"--output must name the .wacz file to write, got {str(output)!r}")
    warcs = _warc_files(dirs)
    _refuse_damaged(warcs)
    lines: list[str] = []
    for path in warcs:
        lines += _index_of(path)
    lines.sort(key=sort_key)
    pages = [_PAGES_HEADER, *_pages(dirs)]
    from politecrawl import __version__

    resources: list[dict[str, Any]] = []
    tmp = output.with_name(output.name + ".tmp")
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as zf:
            for path in warcs:
                resources.append(_add_file(zf, f"archive/{path.name}", path))
            resources.append(_add_bytes(zf, "indexes/index.cdx", "".join(lines).encode()))
            body = "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pages)
            resources.append(_add_bytes(zf, "pages/pages.jsonl", body.encode()))
            package: dict[str, Any] = {
                "profile": "data-package",
                "resources": _named(resources),
                "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "wacz_version": WACZ_VERSION,
                "software": f"politecrawl/{__version__}",
            }
            if title:
                package["title"] = title
            if len(pages) > 1:
                main = _main_page(dirs, pages[1:])
                package["mainPageURL"] = main["url"]
                package["mainPageDate"] = main["ts"]
            data = json.dumps(package, indent=2).encode()
            zf.writestr("datapackage.json", data)
            digest = {"path": "datapackage.json", "hash": "sha256:" + _sha256(data)}
            zf.writestr("datapackage-digest.json", json.dumps(digest, indent=2))
        tmp.replace(output)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StorageError(f"cannot write {output}: {exc}") from exc
    return {"warcs": len(warcs), "captures": len(lines), "pages": len(pages) - 1}


def _warc_files(dirs: list[Path]) -> list[Path]:
    """Every closed WARC file of the crawls, each name once; refused while one is open."""
    found: dict[str, Path] = {}
    given: dict[Path, Path] = {}
    for out in dirs:
        if (same := given.setdefault(out.resolve(), out)) is not out:
            also = "" if str(same) == str(out) else f" (as {same} and {out})"
            raise ConfigError(f"the folder {out} was given twice{also}")
        folder = out / "warc"
        if not folder.is_dir():
            # a folder that is no crawl's is the user's slip (exit 2), as for report and log
            raise ConfigError(f"{out} is not a crawl output folder (no warc/ in it)")
        live = sorted(p.name for p in folder.glob("*.warc.gz.open"))
        if live:
            raise PolitecrawlError(
                f"{folder}: {live[0]} is still open (a crawl running, or one that crashed: "
                "stop it, or run it again so it repairs the file)"
            )
        for path in sorted(folder.glob("*.warc.gz")):
            if path.name in found:
                raise PolitecrawlError(f"two WARC files named {path.name}: {found[path.name]}")
            found[path.name] = path
    if not found:
        raise PolitecrawlError("no WARC file to pack")
    return list(found.values())


def _refuse_damaged(warcs: list[Path]) -> None:
    """Every WARC file reads to its end, or none is packed: a package holding a file cut
    short or damaged is one pywb and ReplayWeb.page fail on, and nothing would say so."""
    damaged = [(path, why) for path in warcs if (why := unreadable(path))]
    if damaged:
        path, why = damaged[0]
        more = f"; {len(damaged) - 1} more damaged" if len(damaged) > 1 else ""
        raise StorageError(
            f"{path}: {why}{more}; nothing packed (move it out of {path.parent} "
            "to pack the rest)"
        )


def _index_of(path: Path) -> list[str]:
    """The WARC file's index lines: its own ``NAME.cdxj`` when every line is whole, else
    rebuilt from the file as after a crash (``storage.cdxj.index_warc``), and said."""
    sidecar = path.with_name(index_name(path.name))
    kept = read_index(sidecar, path.name) if sidecar.exists() else None
    if kept:
        return kept
    try:
        lines = index_warc(path)
    except (OSError, ValueError) as exc:  # fastwarc's: a record it cannot parse
        raise StorageError(f"{path}: cannot index it: {exc}") from exc
    if kept is None and sidecar.exists():
        log.warning("%s is damaged: rebuilt from %s", sidecar, path.name)
    elif kept == [] and lines:
        log.warning("%s is empty: rebuilt from %s", sidecar, path.name)
    return lines


def _pages(dirs: list[Path]) -> Iterator[dict[str, Any]]:
    """The pages kept in the WARC files (stored, or a revisit of a duplicate), from every
    process's ``pages.jsonl``; ``ts`` to the second, as the capture's timestamp. A row
    without its url or time (a damaged log) is left out, and said."""
    for out in dirs:
        skipped, damage = 0, LogDamage()
        for row in iter_log_records(out, "pages", shape=PAGES, damage=damage):
            if row.get("warc_record_id") and row.get("kept") in ("stored", "duplicate"):
                if not (isinstance(row.get("url"), str) and isinstance(row.get("time"), str)):
                    skipped += 1
                    continue
                ts = row["time"][:19] + "Z"
                # (the page's own id: its row's record id is unknown to older crawls' rows)
                page_id = hashlib.sha1(f"{row['url']} {row.get('time')}".encode()).hexdigest()
                page = {"id": page_id[:32], "url": row["url"], "ts": ts}
                if row.get("title"):
                    page["title"] = row["title"]
                yield page
        if skipped:
            log.warning("%s: pages rows without a url or time left out: %d", out, skipped)
        for line in damage.lines(out):
            log.warning("%s: %s (left out of pages.jsonl)", out, line)


def _main_page(dirs: list[Path], pages: list[dict[str, Any]]) -> dict[str, Any]:
    """The page a viewer opens first: the crawl's first seed (the first folder's
    ``seeds.txt``) when it was stored, its first capture; else the first page stored."""
    try:
        with (dirs[0] / "seeds.txt").open(encoding="utf-8") as fh:
            first = next((line.strip() for line in fh if line.strip()), None)
    except (OSError, UnicodeDecodeError):  # a crawl made before seeds.txt; a damaged one
        first = None
    return next((p for p in pages if p["url"] == first), pages[0])


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _add_bytes(zf: zipfile.ZipFile, name: str, data: bytes) -> dict[str, Any]:
    zf.writestr(name, data)
    return _resource(name, "sha256:" + _sha256(data), len(data))


def _add_file(zf: zipfile.ZipFile, name: str, path: Path) -> dict[str, Any]:
    """A file copied in, stored, hashed as it goes (a WARC file may be a gigabyte)."""
    h, size = hashlib.sha256(), 0
    with path.open("rb") as src, zf.open(name, "w", force_zip64=True) as dst:
        while chunk := src.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
            dst.write(chunk)
    return _resource(name, "sha256:" + h.hexdigest(), size)


def _resource(path: str, digest: str, size: int) -> dict[str, Any]:
    return {"name": path.rsplit("/", 1)[1].lower(), "path": path, "hash": digest, "bytes": size}


_NOT_IN_NAME = re.compile(r"[^-a-z0-9._/]")


def _named(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each resource's ``name`` made one Frictionless accepts (``^[-a-z0-9._/]+$``, unique):
    py-wacz's name (the file name, lowercased) with any other character made ``-``, as
    ``--processes N``'s files are named ``politecrawl@1-...``; ``path`` stays the file's."""
    taken: set[str] = set()
    for res in resources:
        base = _NOT_IN_NAME.sub("-", res["name"]) or "-"
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        taken.add(name)
        res["name"] = name
    return resources
