"""The offline loop (crawl -> segment build -> fetch -> build) as an outside tester drove it:
the real ``politecrawl`` command, a subprocess. Each test names the fault it stands for.

Build tests read crawl folders made here with the crawl's own state schema (the rows a crawl
leaves: fetched, queued, dropped for each reason), so each outcome is there on purpose."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import UA

from politecrawl.demo.web import TestWeb
from politecrawl.frontier.sqlitestore import _SCHEMA

pytestmark = pytest.mark.e2e


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "politecrawl", *args], capture_output=True, text=True, timeout=120
    )


def one_line_misuse(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    return lines[0]


# (url, state, outcome, depth, priority); state 0 queued, 1 in flight, 2 finished
Row = tuple[str, int, str | None, int, float]


def crawl_folder(where: Path, rows: list[Row], seeds: list[str] | None = None) -> Path:
    where.mkdir(parents=True)
    db = sqlite3.connect(where / "state.sqlite")
    db.executescript(_SCHEMA)
    db.executemany(
        "INSERT INTO urls(url, key, depth, hops, attempt, not_before, state, outcome, priority)"
        " VALUES (?, ?, ?, 0, 0, 0, ?, ?, ?)",
        [(u, u.split("/")[2], d, s, o, p) for u, s, o, d, p in rows],
    )
    db.commit()
    db.close()
    (where / "seeds.txt").write_text("".join(f"{u}\n" for u in seeds or [rows[0][0]]))
    return where


def urls_of(seg: Path) -> list[str]:
    return [u for u in seg.read_text().splitlines() if u and not u.startswith("#")]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- 1: --out never overwrites what is not a segment, and fails cleanly ------------------------
def test_out_inside_a_crawl_folder_is_refused_and_its_state_kept(tmp_path: Path) -> None:
    """``--out crawl1/state.sqlite`` overwrote the crawl's state with a segment list, exit 0."""
    c1 = crawl_folder(tmp_path / "crawl1", [("http://a.test/", 2, "stored", 0, 0.0),
                                            ("http://a.test/x", 0, None, 1, 0.0)])  # fmt: skip
    state = c1 / "state.sqlite"
    before = digest(state)
    for out in (state, c1 / "next.seg", c1 / "log" / ".." / "n.seg"):
        err = one_line_misuse(run("segment", "build", str(c1), "--out", str(out)))
        assert "--out" in err and "crawl folder" in err, err
    assert digest(state) == before
    assert sorted(p.name for p in c1.iterdir()) == ["seeds.txt", "state.sqlite"]


def test_out_naming_a_file_that_is_not_a_segment_is_refused(tmp_path: Path) -> None:
    c1 = crawl_folder(tmp_path / "c1", [("http://a.test/x", 0, None, 1, 0.0)])
    notes = tmp_path / "notes.seg"
    notes.write_text("my own notes\n")
    err = one_line_misuse(run("segment", "build", str(c1), "--out", str(notes)))
    assert "--out" in err and "not a segment" in err, err
    assert notes.read_text() == "my own notes\n"
    # a segment written before is one: built again in its place
    seg = tmp_path / "next.seg"
    assert run("segment", "build", str(c1), "--out", str(seg)).returncode == 0
    p = run("segment", "build", str(c1), "--out", str(seg))
    assert p.returncode == 0, p.stderr
    assert urls_of(seg) == ["http://a.test/x"]


def test_out_a_folder_or_in_a_missing_folder_is_one_line_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    """A folder gave "cannot use crawlA.tmp: Is a directory", exit 1, and a stray
    ``crawlA.tmp``; a missing parent, exit 1 naming ``x.seg.tmp``."""
    c1 = crawl_folder(tmp_path / "c1", [("http://a.test/x", 0, None, 1, 0.0)])
    folder = tmp_path / "segs.seg"
    folder.mkdir()
    listing = sorted(p.name for p in tmp_path.iterdir())
    err = one_line_misuse(run("segment", "build", str(c1), "--out", str(folder)))
    assert "--out" in err and "folder" in err and ".tmp" not in err, err
    missing = tmp_path / "no" / "such" / "x.seg"
    err = one_line_misuse(run("segment", "build", str(c1), "--out", str(missing)))
    assert "--out" in err and ".tmp" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == listing
    assert list(folder.iterdir()) == []


# -- 6: a segment is named *.seg, the name later builds read -----------------------------------
def test_out_not_named_seg_is_refused(tmp_path: Path) -> None:
    """It was written without a word, and later builds (reading ``*.seg`` beside --out for
    the no-repeat guarantee) never saw it: its URLs were handed out again."""
    c1 = crawl_folder(tmp_path / "c1", [("http://a.test/x", 0, None, 1, 0.0)])
    err = one_line_misuse(run("segment", "build", str(c1), "--out", str(tmp_path / "next.txt")))
    assert "--out" in err and ".seg" in err, err
    assert not (tmp_path / "next.txt").exists()


# -- 2: what a drop says about the URL decides whether the next segment holds it ---------------
def test_urls_dropped_for_a_passing_reason_are_offered_again(tmp_path: Path) -> None:
    """The build took only queued and ``dropped:queue_full`` URLs as unfetched: one dropped
    while its robots.txt could not be reached, or after its retries, was never offered again."""
    h = "http://a.test"
    c1 = crawl_folder(tmp_path / "c1", [
        (f"{h}/", 2, "stored", 0, 0.0),
        (f"{h}/queued", 0, None, 1, 0.0),
        (f"{h}/in-flight", 1, None, 1, 0.0),  # the crawl was killed while asking it
        (f"{h}/full", 2, "dropped:queue_full", 1, 0.0),
        (f"{h}/robots-down", 2, "dropped:robots_unavailable", 1, 0.0),
        (f"{h}/5xx", 2, "dropped:retries_exhausted", 1, 0.0),
        (f"{h}/disallowed", 2, "dropped:robots_disallowed", 1, 0.0),
        (f"{h}/gone", 2, "dropped:http_permanent", 1, 0.0),
        (f"{h}/moved", 2, "redirect", 1, 0.0),
    ])  # fmt: skip
    seg = tmp_path / "next.seg"
    p = run("segment", "build", str(c1), "--out", str(seg))
    assert p.returncode == 0, p.stderr
    assert sorted(urls_of(seg)) == sorted(
        f"{h}{x}" for x in ("/queued", "/in-flight", "/full", "/robots-down", "/5xx")
    )
    out = p.stdout
    assert "5 URLs" in out
    assert "robots_unavailable 1" in out and "retries_exhausted 1" in out  # offered again
    assert "fetched before 2" in out  # the stored page and the redirect
    assert "robots_disallowed 1" in out and "http_permanent 1" in out  # left out, by reason
    # a URL fetched by one crawl is not offered for another crawl's failure to fetch it
    c2 = crawl_folder(tmp_path / "c2", [(f"{h}/5xx", 2, "stored", 0, 0.0),
                                        (f"{h}/gone", 0, None, 1, 0.0)])  # fmt: skip
    seg2 = tmp_path / "other" / "next.seg"
    seg2.parent.mkdir()
    assert run("segment", "build", str(c1), str(c2), "--out", str(seg2)).returncode == 0
    taken = set(urls_of(seg2))
    assert f"{h}/5xx" not in taken and f"{h}/gone" not in taken and f"{h}/queued" in taken


# -- 3: --max-urls-per-host keeps the best URLs, the same each run -----------------------------
def test_max_urls_per_host_keeps_the_shallowest_and_says_so(tmp_path: Path) -> None:
    rows: list[Row] = [("http://a.test/", 2, "stored", 0, 0.0)]
    rows += [(f"http://a.test/deep/{i}", 0, None, 3, 0.0) for i in range(12)]
    rows += [(f"http://a.test/low/{i}", 0, None, 1, 0.5) for i in range(3)]
    rows += [("http://a.test/top", 0, None, 1, 9.0), ("http://a.test/mid", 0, None, 2, 0.0)]
    rows += [(f"http://b.test/{i}", 0, None, 5, 0.0) for i in range(2)]
    c1 = crawl_folder(tmp_path / "c1", rows)
    kept = []
    for i in range(3):
        seg = tmp_path / f"run{i}" / "next.seg"
        seg.parent.mkdir()
        p = run("segment", "build", str(c1), "--out", str(seg), "--max-urls-per-host", "4")
        assert p.returncode == 0, p.stderr
        assert "trap" not in p.stdout, p.stdout
        assert "over --max-urls-per-host 13" in p.stdout, p.stdout
        kept.append(urls_of(seg))
    assert kept[0] == kept[1] == kept[2]
    assert set(kept[0]) == {
        "http://a.test/top", "http://a.test/low/0", "http://a.test/low/1", "http://a.test/low/2",
        "http://b.test/0", "http://b.test/1",
    }  # fmt: skip


# -- 5: an empty segment is the loop's end, not misuse -----------------------------------------
def test_fetch_of_an_empty_segment_is_the_end_of_the_loop(tmp_path: Path) -> None:
    c1 = crawl_folder(tmp_path / "c1", [("http://a.test/", 2, "stored", 0, 0.0)])
    seg = tmp_path / "last.seg"
    p = run("segment", "build", str(c1), "--out", str(seg))
    assert p.returncode == 0 and "0 URLs" in p.stdout, p.stderr
    out = tmp_path / "f"
    p = run("fetch", str(seg), "--user-agent", UA, "--out", str(out), "--no-progress")
    assert p.returncode == 0, p.stderr
    assert "nothing to fetch" in p.stdout + p.stderr
    assert not out.exists()
    err = one_line_misuse(run("fetch", str(tmp_path / "nope.seg"), "--user-agent", UA,
                              "--out", str(out)))  # fmt: skip
    assert "segment file not found" in err and "seeds file" not in err, err
    # a plain seeds file with no URL for `crawl` stays misuse
    empty = tmp_path / "seeds.txt"
    empty.write_text("# none\n")
    err = one_line_misuse(run("crawl", "--seeds", str(empty), "--user-agent", UA,
                              "--out", str(out)))  # fmt: skip
    assert "holds no URL" in err


# -- 4: OUT/seeds.txt holds every run's seeds ---------------------------------------------------
async def _cli(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "politecrawl", *args,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_seeds_txt_is_the_union_of_every_runs_seeds(tmp_path: Path) -> None:
    """A second fetch (or a resumed crawl with a new seed) into the same folder left
    seeds.txt as the first run wrote it, so ``segment build --scope host`` then dropped the
    new hosts' links as out_of_scope."""
    async with TestWeb(n_hosts=3, pages_per_host=4, seed=2, plain=True) as web:
        a, b, c = web.seed_urls()
        net = ["--user-agent", UA, "--resolve", web.resolve_arg(), "--allow-private-addresses",
               "--min-delay", "0.01", "--ip-min-delay", "0", "--no-progress"]  # fmt: skip
        segs = tmp_path / "segs"
        segs.mkdir()
        (segs / "1.seg").write_text(f"{a}\n")
        (segs / "2.seg").write_text(f"{b}\n{a}\n")
        f = tmp_path / "f"
        for name in ("1.seg", "2.seg"):
            rc, _, err = await _cli("fetch", str(segs / name), "--out", str(f), *net)
            assert rc == 0, err
        assert (f / "seeds.txt").read_text().splitlines() == [a, b]
        rc, out, err = await _cli("segment", "build", str(f), "--out", str(segs / "3.seg"),
                                  "--scope", "host")  # fmt: skip
        assert rc == 0, err
        hosts = {u.split("/")[2] for u in urls_of(segs / "3.seg")}
        assert hosts == {a.split("/")[2], b.split("/")[2]}, (hosts, out)

        crawl = tmp_path / "c"
        rc, _, err = await _cli("crawl", a, "--out", str(crawl), "--max-pages", "1", *net)
        assert rc == 0, err
        rc, _, err = await _cli("crawl", c, a, "--out", str(crawl), "--max-pages", "2", *net)
        assert rc == 0, err
        assert (crawl / "seeds.txt").read_text().splitlines() == [a, c]
