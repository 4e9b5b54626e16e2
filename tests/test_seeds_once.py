"""Seeds are canonicalised once, in one place (``urls.canonical.canonical_seeds``), whatever
their source: a seeds file, the API, a ``dataclasses.replace`` of the config, the scope."""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from pathlib import Path

import pytest

from politecrawl.config import DEMO_UA, CrawlConfig, FetchConfig, read_seeds
from politecrawl.errors import ConfigError
from politecrawl.urls import canonical
from politecrawl.urls.canonical import Seeds, canonical_seeds
from politecrawl.urls.filters import Scope

pytestmark = pytest.mark.unit


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """``canonicalize`` counted per URL, in every politecrawl module that holds it."""
    seen: Counter[str] = Counter()
    real = canonical.canonicalize

    def counting(url: str) -> str:
        seen[url] += 1
        return real(url)

    for name, module in list(sys.modules.items()):
        if name.startswith("politecrawl") and getattr(module, "canonicalize", None) is real:
            monkeypatch.setattr(module, "canonicalize", counting)
    return seen


def test_a_seeds_file_is_canonicalised_once_on_its_way_to_the_crawl(
    tmp_path: Path, calls: Counter[str]
) -> None:
    from politecrawl.engine.admission import Gate

    seeds_file = tmp_path / "seeds.txt"
    seeds_file.write_text("HTTP://A.Example.test/./x  # one\nhttp://b.example.test\n\n")
    seeds = read_seeds(seeds_file)
    assert seeds == ("http://a.example.test/x", "http://b.example.test/")
    cfg = CrawlConfig(seeds=seeds, out_dir=tmp_path / "out", fetch=FetchConfig(user_agent=DEMO_UA))
    cfg = dataclasses.replace(cfg, concurrency=3)  # (what the CLI and the supervisor do)
    gate = Gate.from_config(cfg)
    assert gate.scope.admits("http://a.example.test/y")
    assert isinstance(cfg.seeds, Seeds)
    assert dict(calls) == {"HTTP://A.Example.test/./x": 1, "http://b.example.test": 1}


def test_api_seeds_become_canonical_in_the_config_once(tmp_path: Path, calls: Counter[str]) -> None:
    fetch = FetchConfig(user_agent=DEMO_UA)
    cfg = CrawlConfig(seeds=("http://C.test", "http://c.test/"), out_dir=tmp_path, fetch=fetch)
    assert cfg.seeds == ("http://c.test/",)  # in order, once each
    dataclasses.replace(cfg, max_pages=5)
    Scope("host", cfg.seeds)
    assert dict(calls) == {"http://C.test": 1, "http://c.test/": 1}


def test_a_bad_seed_names_itself_and_its_line(tmp_path: Path) -> None:
    seeds_file = tmp_path / "seeds.txt"
    seeds_file.write_text("http://ok.test/\nftp://no.test/\n")
    with pytest.raises(ConfigError, match=r"seeds\.txt:2: bad seed URL 'ftp://no\.test/'"):
        read_seeds(seeds_file)
    with pytest.raises(ConfigError, match="not a crawlable URL"):
        canonical_seeds(["not a url"])


def test_a_seeds_file_saved_with_a_byte_order_mark_reads_as_its_urls(tmp_path: Path) -> None:
    """Windows editors save UTF-8 with a mark: it was read as part of the first URL, which
    was refused as relative."""
    seeds_file = tmp_path / "seeds.txt"
    seeds_file.write_bytes(b"\xef\xbb\xbfhttp://a.example/\r\nhttp://b.example/x\r\n")
    assert list(read_seeds(seeds_file)) == ["http://a.example/", "http://b.example/x"]


def test_a_huge_bad_seed_is_shown_by_its_start(tmp_path: Path) -> None:
    """A 3 MB line was echoed whole in the one-line error."""
    seeds_file = tmp_path / "seeds.txt"
    seeds_file.write_text("http://a.example/" + "x" * 3_000_000 + " y\n")
    with pytest.raises(ConfigError) as err:
        read_seeds(seeds_file)
    assert len(str(err.value)) < 400 and "(3,000,019 characters)" in str(err.value)
