"""The public API: ``__all__`` pinned, and the README's item-extraction example run as written
against a local site."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path

import pytest
from pageweb import UA, PageWeb, html

import politecrawl

README = Path(__file__).resolve().parent.parent / "README.md"

PUBLIC = [
    "ConfigError",
    "CrawlConfig",
    "Crawler",
    "Document",
    "FetchConfig",
    "ItemRecord",
    "KeywordScorer",
    "Link",
    "NuggetFunction",
    "Page",
    "PageHandler",
    "PageRecord",
    "PolitecrawlError",
    "PolitenessConfig",
    "Sink",
    "Summary",
    "__version__",
]


@pytest.mark.unit
def test_all_is_pinned() -> None:
    assert sorted(politecrawl.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(politecrawl, name) is not None
    public = {n for n in vars(politecrawl) if not n.startswith("_")}
    submodules = {n for n, v in vars(politecrawl).items() if type(v) is type(politecrawl)}
    assert public - submodules <= set(PUBLIC)


def readme_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("### Extracting items", 1)[1]
    m = re.search(r"```python\n(.*?)```", section, re.S)
    assert m is not None
    return m[1]


@pytest.mark.unit
def test_readme_example_is_at_most_15_lines() -> None:
    assert len(readme_example().strip().splitlines()) <= 15


# The example as written, with only where it goes changed: its seed is the local site, reached
# on loopback, at a test's pace.
PRELUDE = """
import dataclasses, politecrawl
_real = politecrawl.CrawlConfig
def _local(**kw):
    kw["seeds"] = ({root!r},)
    kw["fetch"] = dataclasses.replace(
        kw["fetch"], resolve=({resolve!r},), allow_private_addresses=True, user_agent={ua!r})
    kw["politeness"] = politecrawl.PolitenessConfig(
        min_delay_s=0.05, jitter_s=0, response_time_factor=0)
    kw["progress"] = False
    return _real(**kw)
politecrawl.CrawlConfig = _local
"""


def books_site() -> dict[str, tuple[str, bytes]]:
    def book(title: str, price: str) -> str:
        return f'<article class="book"><h2>{title}</h2><p class="price">{price}</p></article>'

    ct = "text/html; charset=utf-8"
    return {
        "/": (ct, html("Books", book("Dune", "£9") + book("Emma", "£5") + '<a href='
              '"/catalogue/page-2.html">next</a><a href="/about.html">about</a>').encode()),
        "/catalogue/page-2.html": (ct, html("Page 2", book("Ulysses", "£12")).encode()),
        "/about.html": (ct, html("About", "<p>us</p>").encode()),
    }  # fmt: skip


@pytest.mark.e2e
async def test_readme_example_runs_against_a_local_site(tmp_path: Path) -> None:
    async with PageWeb(books_site(), host="books.test") as site:
        prelude = PRELUDE.format(
            root=site.root, resolve=f"{site.host}:{site.port}:127.0.0.1", ua=UA
        )
        script = tmp_path / "example.py"
        script.write_text(prelude + readme_example())
        env = dict(os.environ)  # this checkout's politecrawl, whatever the working directory
        src = str(Path(politecrawl.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(script), cwd=tmp_path, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, stderr = await asyncio.wait_for(proc.communicate(), 120)
        assert proc.returncode == 0, stderr.decode()
    items = [json.loads(x) for x in (tmp_path / "books" / "items.jsonl").read_text().splitlines()]
    assert sorted((i["title"], i["price"]) for i in items) == [
        ("Dune", "£9"), ("Emma", "£5"), ("Ulysses", "£12")]  # fmt: skip
    assert all(i["url"].startswith(site.root) and i["warc_record_id"] for i in items)
    assert "/about.html" not in site.paths and "/catalogue/page-2.html" in site.paths
