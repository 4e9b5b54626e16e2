"""The names ``politecrawl wacz`` gives the package's resources: Frictionless (py-wacz's
``wacz validate``) accepts only ``^[-a-z0-9._/]+$``, each name once."""

from __future__ import annotations

import re

import pytest

from politecrawl.tools.wacz import _named, _resource

pytestmark = pytest.mark.unit


def test_names_are_the_file_names_made_valid_and_unique() -> None:
    paths = [
        "archive/politecrawl@1-20261129-7-00001.warc.gz",
        "archive/politecrawl-1-20261129-7-00001.warc.gz",  # the first one's name, mapped
        "archive/Crawl Ü.warc.gz",
        "indexes/index.cdx",
        "pages/pages.jsonl",
    ]
    named = _named([_resource(p, "sha256:0", 1) for p in paths])
    assert [r["path"] for r in named] == paths
    names = [r["name"] for r in named]
    assert names == [
        "politecrawl-1-20261129-7-00001.warc.gz",
        "politecrawl-1-20261129-7-00001.warc.gz-2",
        "crawl--.warc.gz",
        "index.cdx",
        "pages.jsonl",
    ]
    assert all(re.fullmatch(r"[-a-z0-9._/]+", n) for n in names)
