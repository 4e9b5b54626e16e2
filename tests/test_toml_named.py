"""A file the TOML config names that is not there (``seeds``, ``handler``, ``relevance``) is
said in one line naming the TOML file, exit 2, before anything is asked of a server or
written to ``--out``: the README's promise for every option the file sets. Checked through
the real ``politecrawl crawl`` (a subprocess) against a small site on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest
from outputweb import output_site
from test_outputs import FAST, UA, politecrawl

pytestmark = pytest.mark.e2e

CASES = {
    "seeds": ('seeds = "nosuch.txt"', "--seeds nosuch.txt: seeds file not found"),
    "handler": ('handler = "nosuchmod_xyz:fn"', "--handler 'nosuchmod_xyz:fn': cannot import"),
    "handler file": ('handler = "./nosuch_xyz.py:fn"', "--handler './nosuch_xyz.py:fn': no such"),
    "relevance": ('relevance = "nosuchmod_xyz:fn"', "--relevance 'nosuchmod_xyz:fn': cannot"),
}


@pytest.mark.parametrize("urls", [True, False], ids=["urls given", "seeds alone"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_missing_file_the_toml_names_is_named_with_the_toml_file(
    tmp_path: Path, case: str, urls: bool
) -> None:
    """Before: ``--seeds nosuch.txt: seeds file not found`` (when URLs were given too) and
    ``page handler 'nosuchmod:fn': cannot import ...``, neither naming the TOML file that set
    them, as a missing ``allow`` file is named (``seeds`` alone was named already: kept so)."""
    line, said = CASES[case]
    out = tmp_path / "out"
    with output_site() as site:
        toml = tmp_path / "crawl.toml"
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(site.url("/") + "\n")
        seeds_line = "" if case == "seeds" else f'seeds = "{seeds}"\n'
        toml.write_text(f'user-agent = "{UA}"\n{seeds_line}{line}\n')
        args = [site.url("/")] if urls else []
        done = politecrawl("crawl", *args, "--config", str(toml), "--out", str(out),
                           "--resolve", site.resolve, *FAST, cwd=tmp_path)  # fmt: skip
        asked = site.requests()
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"politecrawl: error: {toml}: {said}"), done.stderr
    assert asked == [] and not out.exists()  # nothing asked, nothing written


def test_the_same_given_as_a_flag_names_no_toml_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    toml = tmp_path / "crawl.toml"
    toml.write_text(f'user-agent = "{UA}"\n')
    with output_site() as site:
        done = politecrawl("crawl", site.url("/"), "--config", str(toml), "--out", str(out),
                           "--handler", "nosuchmod_xyz:fn", "--resolve", site.resolve, *FAST,
                           cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("politecrawl: error: --handler 'nosuchmod_xyz:fn': cannot")
    assert not out.exists()
