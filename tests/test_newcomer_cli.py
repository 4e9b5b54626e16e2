"""Issue 31, "The first hour on your own site", items 6 to 8: what Scrapy and Crawl4AI users
reach for first (seeds as arguments or on stdin, CSV/JSON items, examples in --help, robots.txt
in the WARC), skipped tests that say why, and a README whose first screen gets one going. Each
through the real ``politecrawl`` command against a site of one's own on 127.0.0.1."""

from __future__ import annotations

import csv
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from newcomerweb import PAGES, newcomer_site
from warcio.archiveiterator import ArchiveIterator

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

UA = "newbot/1.0 (+http://bot.example/info)"
FAST = ["--min-delay", "0.05", "--jitter", "0", "--delay-factor", "1", "--ip-min-delay", "0",
        "--no-progress", "--allow-private-addresses"]  # fmt: skip
ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def politecrawl(
    *args: str, cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "politecrawl", *args],
        capture_output=True, text=True, timeout=120, cwd=cwd, input=stdin,
    )  # fmt: skip


# -- item 7 ------------------------------------------------------------------------------------
def test_seeds_as_arguments_and_on_standard_input(tmp_path: Path) -> None:
    with newcomer_site() as site:
        args = politecrawl("crawl", site.url, "--user-agent", UA, "--out", str(tmp_path / "a"),
                           *FAST, "--max-pages", "1")  # fmt: skip
        assert args.returncode == 0, args.stderr
        assert site.requests() == ["/robots.txt", "/"]
        piped = politecrawl("crawl", "--seeds", "-", "--user-agent", UA, "--out",
                            str(tmp_path / "b"), *FAST, "--max-pages", "1",
                            stdin=f"# mine\n{site.url}p3.html\n")  # fmt: skip
        assert piped.returncode == 0, piped.stderr
        assert site.requests()[2:] == ["/robots.txt", "/p3.html"]
    assert (tmp_path / "b" / "seeds.txt").read_text() == f"{site.url}p3.html\n"


HANDLER = """
import datetime, decimal

def text_of(page):
    yield {"title": page.title, "words": len(page.visible_text.split()), "tags": ["a", "b"],
           "when": datetime.date(2020, 1, 2), "price": decimal.Decimal("1.50")}
"""


@pytest.mark.parametrize("name", ["items.csv", "items.json"])
def test_items_as_csv_or_json_chosen_by_the_file_name(tmp_path: Path, name: str) -> None:
    (tmp_path / "extract.py").write_text(HANDLER)
    items = tmp_path / "export" / name
    with newcomer_site() as site:
        for _ in range(2):  # a resumed crawl goes on writing the same file, still valid
            done = politecrawl("crawl", site.url, "--user-agent", UA, "--out", "out", *FAST,
                               "--handler", "extract:text_of", "--items", str(items),
                               "--max-pages", "3", cwd=tmp_path)  # fmt: skip
            assert done.returncode == 0, done.stderr
    assert not (tmp_path / "out" / "items.jsonl").exists()
    if name.endswith(".csv"):
        with items.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        assert list(rows[0])[:2] == ["url", "warc_record_id"]  # then the handler's keys
        assert {"title", "words", "tags"} <= set(rows[0])
        assert json.loads(rows[0]["tags"]) == ["a", "b"]
        # a date and a Decimal as their text, no JSON quotes in the cell
        assert (rows[0]["when"], rows[0]["price"]) == ("2020-01-02", "1.50")
    else:
        rows = json.loads(items.read_text())
        assert rows[0]["tags"] == ["a", "b"]
    assert [r["title"] for r in rows] == [f"Page {n}" for n in range(1, PAGES + 1)]
    assert all(r["warc_record_id"].startswith("<urn:uuid:") for r in rows)


def test_a_handler_file_shadowed_by_an_installed_module_is_said(tmp_path: Path) -> None:
    """``./attrs.py`` beside an installed ``attrs``: the console script imports the installed
    one, and "attrs has no h" left the newcomer guessing; the line now says which was
    imported and how to name the file."""
    import shutil

    script = shutil.which("politecrawl")
    assert script is not None, "the politecrawl command is not installed"
    (tmp_path / "attrs.py").write_text("def h(page):\n    yield {}\n")
    done = subprocess.run(
        [script, "crawl", "http://127.0.0.1:9/", "--user-agent", UA, "--out", "o",
         "--handler", "attrs:h"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "attrs has no h (the installed attrs" in done.stderr, done.stderr
    assert "name the file, ./attrs.py:..." in done.stderr, done.stderr


def test_out_that_is_a_file_and_files_a_toml_names_are_misuse(tmp_path: Path) -> None:
    """``--out`` naming a file: one line, exit 2, before the pace line (it was exit 1 after
    it); a missing --allow or --seeds file that the TOML file set is named with the file;
    a bad seed on the command line is named by its place there."""
    (tmp_path / "afile").write_text("x")
    out_file = politecrawl("crawl", "http://127.0.0.1:9/", "--user-agent", UA, "--out", "afile",
                           cwd=tmp_path)  # fmt: skip
    assert out_file.returncode == 2 and out_file.stdout == "", out_file.stdout
    assert out_file.stderr == "politecrawl: error: --out afile is a file: give a folder\n"
    (tmp_path / "c.toml").write_text('[crawl]\nallow = "nofile.txt"\n')
    toml = politecrawl("crawl", "http://a.test/", "--config", "c.toml", "--user-agent", UA,
                       "--out", "o", cwd=tmp_path)  # fmt: skip
    assert toml.returncode == 2
    assert toml.stderr.startswith("politecrawl: error: c.toml: --allow nofile.txt: cannot read")
    seed = politecrawl("crawl", "http://a.test/", "http://[bad", "--user-agent", UA, "--out",
                       "o", cwd=tmp_path)  # fmt: skip
    assert seed.returncode == 2
    assert "the command line, seed 2: bad seed URL 'http://[bad'" in seed.stderr, seed.stderr


def test_items_without_a_handler_is_refused() -> None:
    """``--items`` alone was taken and nothing written (no handler, no item): misuse."""
    done = politecrawl("crawl", "http://127.0.0.1:9/", "--user-agent", UA, "--out", "x",
                       "--items", "items.csv")  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "politecrawl: error: --items items.csv: items come from a --handler; give one"
    ]


def test_items_file_of_an_unknown_kind_is_refused() -> None:
    done = politecrawl("crawl", "http://127.0.0.1:9/", "--user-agent", UA, "--out", "x",
                       "--handler", "x:y", "--items", "items.xlsx")  # fmt: skip
    assert done.returncode == 2
    assert "--items items.xlsx: the name must end in .jsonl, .json or .csv" in done.stderr


@pytest.mark.parametrize("command", ["crawl", "demo", "robots", "worker", "seed", "status",
                                     "segment build", "fetch", "log", "log-stats", "botpage",
                                     "report", "wacz"])  # fmt: skip
def test_help_shows_two_or_three_examples(command: str) -> None:
    done = politecrawl(*command.split(), "--help")
    assert done.returncode == 0
    examples = done.stdout.split("\nexamples:\n", 1)[1].splitlines()
    runs = [x for x in examples if x.strip().startswith(("politecrawl ", "cat "))]
    assert 2 <= len(runs) <= 3, done.stdout
    assert all(f"politecrawl {command}" in x for x in runs if "demo &&" not in x)


def test_robots_txt_is_a_response_record_in_the_warc(tmp_path: Path) -> None:
    out = tmp_path / "o"
    with newcomer_site() as site:
        done = politecrawl("crawl", site.url, "--user-agent", UA, "--out", str(out), *FAST,
                           "--max-pages", "1")  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = []
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh, check_digests=True):
                if rec.rec_type in ("request", "response"):
                    status = rec.http_headers.get_statuscode() if rec.rec_type == "response" else ""
                    records.append((rec.rec_type, rec.rec_headers["WARC-Target-URI"], status))
    robots = f"{site.url}robots.txt"
    assert records[:2] == [("request", robots, ""), ("response", robots, "404")]
    assert records[2:] == [("request", site.url, ""), ("response", site.url, "200")]
    (logged,) = read_jsonl(out / "log" / "robots.jsonl")
    assert logged["status"] == 404


# -- item 6 ------------------------------------------------------------------------------------
def test_skip_reasons_are_shown_at_the_end_of_the_run(tmp_path: Path) -> None:
    (tmp_path / "test_needs.py").write_text(
        "import pytest\n\ndef test_x():\n    pytest.skip('needs the moon: apt-get install moon')\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-c", str(ROOT / "pyproject.toml"),
         "--rootdir", str(tmp_path), "-p", "no:cacheprovider", str(tmp_path / "test_needs.py")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout
    assert "SKIPPED [1] " in done.stdout and "needs the moon: apt-get install moon" in done.stdout


def test_readme_says_which_tests_need_what() -> None:
    section = README.read_text().split("### Which tests need what", 1)[1]
    for name in ("test_replay.py", "test_focus_bed.py", "test_report.py", "test_redis_",
                 "redis-server", "chromium", "pywb", "python3.11-doc"):  # fmt: skip
        assert name in section
    assert "-rs" in section


# -- item 8 ------------------------------------------------------------------------------------
def first_screen() -> tuple[list[str], list[str], list[str]]:
    """The README's lines before its first code block, that block's lines (the two set-up
    commands, alone), and the next block's (a crawl of a site of your own)."""
    text = README.read_text()
    before, rest = text.split("```sh\n", 1)
    block, rest = rest.split("```", 1)
    third = rest.split("```sh\n", 1)[1].split("```", 1)[0]
    return before.splitlines(), block.splitlines(), third.splitlines()


def test_readme_opens_with_what_it_is_then_the_commands() -> None:
    before, block, own = first_screen()
    assert before[0] == "# politecrawl"
    said = " ".join(x for x in before[1:] if x.strip())
    assert said.startswith("A polite, adaptive web crawler")
    assert block[:2] == [
        "python3 -m pip install -e . && politecrawl demo",
        "python3 -m pip install -e '.[test]' && python3 -m pytest -q",
    ]
    assert len(block) == 2
    assert len(own) == 1 and own[0].startswith("politecrawl crawl http://127.0.0.1:")
    top = README.read_text().split("\n## ", 1)[0]
    assert "venv" not in top and "virtualenv" not in top


def test_readme_third_line_crawls_a_site_of_your_own(tmp_path: Path) -> None:
    """The third command as written, only the port changed to where the site listens."""
    line = first_screen()[2][0]
    with newcomer_site() as site:
        words = [w.replace("127.0.0.1:8000", f"127.0.0.1:{site.port}") for w in shlex.split(line)]
        assert words[0] == "politecrawl"
        done = politecrawl(*words[1:], "--no-progress", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "/p6.html" in site.requests()
    assert done.stdout.startswith("pace: one request per site every 1 s at most")


def test_readme_api_and_output_table_say_what_a_user_needs(tmp_path: Path) -> None:
    text = README.read_text()
    api = text.split("## Python API", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    fetch = api.split("fetch=FetchConfig(", 1)[1].split("),", 1)[0]
    assert "allow_private_addresses=" in fetch
    table = text.split("### Output", 1)[1].split("\n#", 1)[0]
    assert "`OUT/focus.json`" in table and "`OUT/config.json`" in table
    assert re.search(r"\| `visible_text` \|", text)
    demo = politecrawl("demo", "--hosts", "2", "--pages", "2", "--out", str(tmp_path / "d"))
    assert demo.returncode == 0, demo.stderr
    assert json.loads((tmp_path / "d" / "config.json").read_text())["scope"] == "any"
