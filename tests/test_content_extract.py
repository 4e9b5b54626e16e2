"""``--extract text,markdown``: the main text of real pages in OUT/content.jsonl, by the real
command. Three pages of the article-extraction benchmark (bench/data/articles) are served on
loopback, crawled, and each row's text is scored against the benchmark's ground truth with
the benchmark's own shingle F1; its ``warc_record_id`` must name the page's response record.
"""

from __future__ import annotations

import asyncio
import gzip
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from pageweb import PageWeb
from warcio.archiveiterator import ArchiveIterator

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

DATA = Path(__file__).resolve().parent.parent / "bench" / "data" / "articles"
IDS = [
    "c00962aabe7bdd1fca78f5360ea7fa93cd7674863b05157e00827506a7aa58c4",
    "85439e26c41c75901820d01a13e8cea7836abb58635ea3986f71a163ab0311d3",
    "0ec95c7261d122f304728e90c983450ef1ce1e0b423546835c397d50aaf0d0f2",
]


def _evaluate() -> Any:
    spec = importlib.util.spec_from_file_location("aeb_evaluate", DATA / "evaluate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def _crawl(tmp_path: Path, extra: list[str]) -> tuple[Path, list[str]]:
    pages = {
        f"/{i}.html": (
            "text/html; charset=utf-8",
            gzip.decompress((DATA / "html" / f"{i}.html.gz").read_bytes()),
        )
        for i in IDS
    }
    pages["/robots.txt"] = ("text/plain", b"User-agent: *\nAllow: /\n")
    async with PageWeb(pages, host="news.test") as site:
        tmp_path.mkdir(parents=True, exist_ok=True)
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(f"{site.root}{i}.html\n" for i in IDS))
        allow = tmp_path / "allow.txt"
        allow.write_text(f"re:^{site.root}[0-9a-f]{{64}}\\.html$\n")
        out = tmp_path / "out"
        args = [*site.crawl_args(str(seeds), str(out)), "--allow", str(allow), *extra]
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "politecrawl", *args, stderr=asyncio.subprocess.PIPE
        )
        _, err = await asyncio.wait_for(proc.communicate(), 180)
        assert proc.returncode == 0, err.decode()
        return out, site.paths


def _response_ids(out: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for path in (out / "warc").glob("*.warc.gz"):
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "response":
                    found[rec.rec_headers["WARC-Target-URI"]] = rec.rec_headers["WARC-Record-ID"]
    return found


async def test_content_jsonl_holds_the_main_text_of_each_stored_page(tmp_path: Path) -> None:
    out, paths = await _crawl(tmp_path, ["--extract", "text,markdown"])
    assert sorted(paths) == sorted([f"/{i}.html" for i in IDS] + ["/robots.txt"])
    rows = [json.loads(line) for line in (out / "content.jsonl").read_text().splitlines()]
    assert len(rows) == len(IDS)
    truth = json.loads(gzip.decompress((DATA / "ground-truth.json.gz").read_bytes()))
    evaluate = _evaluate()
    records = _response_ids(out)
    for row in rows:
        key = row["url"].rsplit("/", 1)[1].removesuffix(".html")
        assert set(row) == {"url", "warc_record_id", "title", "lang", "date", "author",
                            "text", "markdown"}  # fmt: skip
        assert row["warc_record_id"] == records[row["url"]]
        assert row["title"]
        tp, fp, fn = evaluate.string_shingle_matching(
            true=truth[key]["articleBody"], pred=row["text"]
        )
        f1 = 2 * tp / (2 * tp + fp + fn)
        assert f1 > 0.8, (key, f1)
        assert row["markdown"]
    assert any(row["markdown"] != row["text"] for row in rows)  # formatting kept
    assert any(row["date"] for row in rows) and any(row["author"] for row in rows)
    config = json.loads((out / "config.json").read_text())
    assert config["extract"] == ["text", "markdown"]


async def test_toml_markdown_only_and_nothing_unless_asked(tmp_path: Path) -> None:
    toml = tmp_path / "crawl.toml"
    toml.write_text('extract = ["markdown"]\n')
    out, _ = await _crawl(tmp_path / "md", ["--config", str(toml)])
    rows = [json.loads(line) for line in (out / "content.jsonl").read_text().splitlines()]
    assert len(rows) == len(IDS)
    assert all("markdown" in row and "text" not in row for row in rows)
    out, _ = await _crawl(tmp_path / "plain", [])
    assert not (out / "content.jsonl").exists()
    assert len(read_jsonl(out / "pages.jsonl")) == len(IDS)
