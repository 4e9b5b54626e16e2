"""The wheel, built for real: the crawler, its demo and the demo's web; no test web."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import politecrawl

pytestmark = pytest.mark.e2e
SRC = Path(politecrawl.__file__).parent


def test_the_wheel_holds_no_test_web(tmp_path: Path) -> None:
    """Built for real: the installed package is the crawler, its demo and the demo's web."""
    root = SRC.parents[1]
    tree = tmp_path / "tree"  # a clean copy: a build/ left in the checkout may hold stale files
    shutil.copytree(root / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(root / name, tree / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(tree)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("politecrawl-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    modules = [n for n in names if n.startswith("politecrawl/") and n.endswith(".py")]
    assert "politecrawl/engine/crawler.py" in modules
    assert not [n for n in names if n.startswith("tests/") or "/tests/" in n]
    test_only = ("hostileweb", "topicweb", "dupweb", "pageweb", "replayweb", "logserver",
                 "loopbackweb", "webthread", "conftest")  # fmt: skip
    assert not [n for n in modules if Path(n).stem in test_only], modules
    # the only web server in the wheel is the demo's (the metrics endpoint is
    # prometheus_client's own, not a web of pages)
    serves = ("from aiohttp import web", "loop.create_server", "asyncio.start_server")
    archive = zipfile.ZipFile(wheel)
    servers = [n for n in modules if any(s in archive.read(n).decode() for s in serves)]
    assert servers
    assert all(n.startswith("politecrawl/demo/") for n in servers), servers
