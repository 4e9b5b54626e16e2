"""The command line as a user meets it: real subprocesses, real exit codes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import UA

from politecrawl.demo.web import TestWeb

pytestmark = pytest.mark.e2e


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "politecrawl", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# seeds of tests that must fail before any request: pinned to loopback all the same (and
# refused there), so a test run on code that doesn't fail early asks no DNS server
PINNED = ["--resolve", "ok.example:80:127.0.0.1"]


def one_line_error(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    return lines[0]


def test_missing_seeds_file(tmp_path: Path) -> None:
    err = one_line_error(
        run(
            "crawl",
            "--seeds",
            str(tmp_path / "nope.txt"),
            "--user-agent",
            UA,
            "--out",
            str(tmp_path / "o"),
        )
    )
    assert f"--seeds {tmp_path / 'nope.txt'}: seeds file not found" in err


def test_bad_url_in_seeds(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("# seeds\nhttp://ok.example/\nftp://files.example/x\n")
    err = one_line_error(
        run("crawl", "--seeds", str(seeds), "--user-agent", UA, "--out", str(tmp_path / "o"))
    )
    assert "seeds.txt:3" in err


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--min-delay", "abc"], "invalid float"),
        (["--concurrency", "0"], "concurrency"),
        (["--scope", "planet"], "scope"),
        (["--resolve", "nonsense"], "HOST:PORT:ADDR"),
        (["--jitter", "-1"], "--jitter"),
        (["--target-relevant", "0"], "--target-relevant"),
        (["--max-queue", "0"], "--max-queue"),
        (["--exclude-file", "/no/such/never-crawl.txt"], "--exclude-file"),
        (["--delay-factor", "-1"], "--delay-factor"),  # not its field's name
        (["--park-after", "0"], "--park-after"),
        (["--park-time", "-1"], "--park-time"),
        (["--exclude-check", "0"], "--exclude-check"),
        # NaN passes every comparison: --min-delay nan turned the per-site delay off
        (["--min-delay", "nan"], "--min-delay must be a finite number, got nan"),
        (["--ip-min-delay", "nan"], "--ip-min-delay must be a finite number"),
        (["--jitter", "nan"], "--jitter must be a finite number"),  # was: the default
        (["--max-time", "inf"], "--max-time must be a finite number"),  # was: a traceback
        (["--request-time", "1e309"], "--request-time must be a finite number"),
        (["--request-time", "0"], "--request-time must be > 0"),  # not its field's name
        (["--log-retention-days", "1e30"], "--log-retention-days must be at most"),
        (["--dns-timeout", "1e11"], "--dns-timeout must be at most 300 s"),
        (["--dns-tries", str(10**30)], "--dns-tries must be 1-10"),
        (["--expected-urls", str(10**12)], "--expected-urls must be 1-1,000,000,000"),
        (["--robots-ttl", "-1"], "--robots-ttl must be >= 0"),  # had no check at all
        (["--retry-base", "-1"], "--retry-base must be > 0"),  # nor this
        (["--user-agent", "bot/1 (+http://bot.example/)\r\nX-Injected: yes"], "control char"),
        (["--frontier", "redis://127.0.0.1:notaport/0"], "--frontier"),
        (["--config", "."], "cannot read config file"),  # a folder: exit 2, was 1
        (["--out", ""], "argument --out: an empty name"),  # was: the current folder
        (["--target-relevant", "5"], "--target-relevant needs --topic"),  # it never stopped
        (["--handler", ""], "--handler is empty"),  # these three were taken for none given
        (["--relevance", " "], "--relevance is empty"),
        (["--extract", ""], "--extract names no format"),
        (["--state", "."], "--state"),  # a folder: exit 2 naming it, was exit 1 and state.sqlite
        (["--items", "."], "--items"),
        (["--allow", "undecodable.bin"], "undecodable.bin: cannot read the allow-list"),
    ],
)
def test_bad_option_values(tmp_path: Path, args: list[str], needle: str) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://ok.example/\n")
    (tmp_path / "undecodable.bin").write_bytes(b"\xff\xfe\x00garbage")
    args = [str(tmp_path / a) if a in (".", "undecodable.bin") else a for a in args]
    err = one_line_error(
        run(
            "crawl",
            "--seeds",
            str(seeds),
            "--user-agent",
            UA,
            "--out",
            str(tmp_path / "o"),
            *PINNED,
            *args,
        )
    )
    assert needle in err


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--topic", ""], "--topic is empty"),
        (["--topic", ", ; |"], "has no keywords"),
        (["--topic", "how do I?"], "has no keywords"),
        (["--strategy", "keyword"], "needs --topic or --relevance"),
        (["--relevance", "no_such_module_here:judge"], "cannot import"),
    ],
)
def test_a_focused_crawl_misused_says_one_line_before_anything_else(
    tmp_path: Path, args: list[str], needle: str
) -> None:
    """A topic with nothing to look for, a nugget that does not import: one line, exit 2,
    before the crawl prints its pace or makes its output folder."""
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://ok.example/\n")
    out = tmp_path / "o"
    p = run("crawl", "--seeds", str(seeds), "--user-agent", UA, "--out", str(out), *PINNED, *args)
    assert needle in one_line_error(p)
    assert p.stdout == "" and not out.exists()


@pytest.mark.parametrize(
    "command",
    [["report"], ["log-stats"], ["log", "--host", "example.com"], ["wacz", "--output", "x.wacz"]],
)
def test_every_tool_given_a_folder_that_is_no_crawls_says_so_in_one_line(
    tmp_path: Path, command: list[str]
) -> None:
    """The user's slip (a wrong folder) is misuse: one line, exit 2, for every tool alike."""
    err = one_line_error(run(command[0], str(tmp_path), *command[1:]))
    assert f"{tmp_path} is not a crawl output folder" in err


def test_browser_user_agent_refused(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://ok.example/\n")
    err = one_line_error(
        run(
            "crawl",
            "--seeds",
            str(seeds),
            "--user-agent",
            "Mozilla/5.0 (Windows NT 10.0)",
            "--out",
            str(tmp_path / "o"),
        )
    )
    assert "browser" in err


def test_help_for_every_command() -> None:
    for cmd in ([], ["crawl"], ["demo"]):
        p = run(*cmd, "--help")
        assert p.returncode == 0 and "usage" in p.stdout


async def test_crawl_with_toml_config_flags_win(tmp_path: Path) -> None:
    async with TestWeb(n_hosts=3, pages_per_host=4, seed=5) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(web.seed_urls()) + "\n")
        cfg = tmp_path / "crawl.toml"
        cfg.write_text(
            f'seeds = "{seeds}"\nuser-agent = "{UA}"\nmin-delay = 0.1\n'
            f'resolve = ["{web.resolve_arg()}"]\nallow-private-addresses = true\n'
            'scope = "any"\nmax-pages = 1000\nip-min-delay = 0\n'
        )
        out = tmp_path / "out"
        import asyncio

        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "politecrawl.tools.cli",
            "crawl",
            "--config",
            str(cfg),
            "--out",
            str(out),
            "--max-pages",
            "5",
            "--no-progress",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 120)
        assert proc.returncode == 0, stderr.decode()
        summary = json.loads((out / "summary.json").read_text())
        assert summary["stopped_by"] == "max_pages"
        assert summary["pages_fetched"] == 5
        assert b"crawl finished" in stdout


def test_operator_tools_on_a_real_crawl(tmp_path: Path) -> None:
    """log, log-stats, botpage and report as a user runs them, on a real crawl's output."""
    import asyncio

    from conftest import crawl_config

    from politecrawl import Crawler
    async def crawl() -> None:
        async with TestWeb(n_hosts=3, pages_per_host=4, seed=5) as web:
            await Crawler(crawl_config(web, tmp_path / "out", delay=0.05)).run()

    asyncio.run(crawl())
    p = run("log", str(tmp_path / "out"), "--host", "h1.test", "--json")
    assert p.returncode == 0, p.stderr
    answer = json.loads(p.stdout)
    rows = answer["requests"]
    assert answer["damage"] == []  # an intact crawl's logs
    assert rows and all("h1.test" in r["url"] for r in rows)
    assert any(r["robots_in_force"] for r in rows)
    p = run("log-stats", str(tmp_path / "out"))
    assert p.returncode == 0 and p.stdout.strip()
    p = run(
        "botpage",
        "--user-agent",
        UA,
        "--contact",
        "ops@bot.example",
        "--ip",
        "192.0.2.7",
        "--out",
        str(tmp_path / "bot.html"),
    )
    assert p.returncode == 0, p.stderr
    page = (tmp_path / "bot.html").read_text()
    assert "testbot" in page and "192.0.2.7" in page and "mailto:ops@bot.example" in page
    p = run("report", str(tmp_path / "out"))
    assert p.returncode == 0 and (tmp_path / "out" / "report.html").exists()
    assert one_line_error(
        run("log", str(tmp_path / "out"), "--host", "h1.test", "--since", "yesterday-ish")
    )


@pytest.mark.parametrize(
    "toml,needle",
    [
        ('min-delay = "fast"', "min-delay must be a number, got 'fast'"),
        ("concurrency = 2.5", "concurrency must be a whole number"),
        ('sitemaps = "yes"', "sitemaps must be true or false"),
        ("scope = 3", "scope must be a string"),
        ("min-delay = 0.1\nno-such-option = 1", "unknown option(s): no-such-option"),
        ("delay-factor = -2", "--delay-factor must be >= 0"),
        ("min-delay = ", "not valid TOML"),
        ("min-delay = nan", "--min-delay must be a finite number, got nan"),
        ("robots-ttl = -inf", "--robots-ttl must be a finite number"),
        ('out = ""', "crawl.toml: out: an empty name"),  # was: the current folder
        ("min-delay = true", "min-delay must be a number, got true"),  # was: "a string"
        ("max-pages = -3", "crawl.toml: --max-pages must be >= 1"),  # out of range: the file
        ("min-delay = 1\nmin_delay = 2", "min_delay is given twice"),  # was: silently one
        ("min-delay = 1\n[crawl]\njitter = 0", "min-delay outside [crawl]"),  # was: ignored
    ],
)
def test_bad_toml_values(tmp_path: Path, toml: str, needle: str) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://ok.example/\n")
    cfg = tmp_path / "crawl.toml"
    cfg.write_text(toml + "\n")
    err = one_line_error(
        run(
            "crawl",
            "--config",
            str(cfg),
            "--seeds",
            str(seeds),
            "--user-agent",
            UA,
            "--out",
            str(tmp_path / "o"),
        )
    )
    assert needle in err
    assert "Traceback" not in err


def test_unreachable_redis_is_one_line() -> None:
    """A service that does not answer is not misuse: exit 1, one line, no traceback."""
    for args in (
        ["status", "--frontier", "redis://127.0.0.1:1/0"],
        ["worker", "--frontier", "redis://127.0.0.1:1/0", "--user-agent", UA, "--out", "/tmp"],
    ):
        p = run(*args)
        assert p.returncode == 1, p.stderr
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and "cannot reach the frontier at redis://127.0.0.1:1/0" in lines[0]


def test_fetch_refuses_seeds(tmp_path: Path) -> None:
    seg = tmp_path / "next.seg"
    seg.write_text("http://ok.example/\n")
    err = one_line_error(
        run(
            "fetch",
            str(seg),
            "--seeds",
            str(seg),
            "--user-agent",
            UA,
            "--out",
            str(tmp_path),
            *PINNED,
        )
    )
    assert "segment" in err


def test_max_time_before_the_first_page_says_so_not_that_nothing_was_admitted(
    tmp_path: Path,
) -> None:
    """robots.txt answered at once, then the site's 15 s delay outlasts --max-time 3: no
    failure, so exit 0 and a line that says the time ran out (it said "nothing could be
    fetched: no seed URL was admitted" and exited 1)."""
    from newcomerweb import newcomer_site

    with newcomer_site() as site:
        p = run("crawl", site.url, "--user-agent", UA, "--out", str(tmp_path / "o"),
                "--allow-private-addresses", "--max-time", "3", "--no-progress")  # fmt: skip
        assert site.requests() == ["/robots.txt"]
    assert p.returncode == 0, p.stderr
    assert "--max-time ran out before the first page" in p.stderr
    assert "1 URL queued; the same command again resumes" in p.stderr
    assert "nothing could be fetched" not in p.stderr


@pytest.mark.parametrize("refused", [["--state", "st.sqlite"], ["--politeness-key", "ip"],
                                     ["--handler", "no_such_module_x:items"]])  # fmt: skip
def test_a_refused_run_of_many_processes_leaves_nothing_that_blocks_the_fixed_command(
    tmp_path: Path, refused: list[str]
) -> None:
    """The refused run left partitions.json and config.json in --out, and the corrected
    command (without --processes) was then refused as a resume of a 2-process crawl."""
    out = tmp_path / "o"
    common = ["crawl", "http://127.0.0.1:9/", "--user-agent", UA, "--out", str(out),
              "--allow-private-addresses", "--no-progress", "--max-time", "2"]  # fmt: skip
    args = [str(tmp_path / a) if a == "st.sqlite" else a for a in refused]
    first = run(*common, "--processes", "2", *args)
    one_line_error(first)
    assert "pace:" not in first.stdout  # refused before the crawl states its pace
    assert not (out / "partitions.json").exists() and not (out / "config.json").exists()
    fixed = run(*common)
    assert fixed.returncode == 1, fixed.stderr  # it ran: nothing listens on port 9
    assert "nothing could be fetched" in fixed.stderr


def test_segment_build_refuses_a_missing_never_crawl_file_as_crawl_does(tmp_path: Path) -> None:
    """It went on without the list (exit 0): the segment could hold what must not be asked."""
    missing = str(tmp_path / "no-such-never.txt")
    err = one_line_error(run("segment", "build", str(tmp_path), "--out",
                             str(tmp_path / "next.seg"), "--exclude-file", missing))  # fmt: skip
    assert f"--exclude-file {missing}: no such file" in err
    assert not (tmp_path / "next.seg").exists()


def test_nothing_fetched_says_why(tmp_path: Path) -> None:
    """Seeds all refused (loopback without --allow-private-addresses), or nobody listening:
    exit 1 and the reason on one line, not "crawl finished (done)" and 0."""
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"http://dead.test:{dead}/\n")
    common = ["--seeds", str(seeds), "--user-agent", UA, "--resolve",
              f"dead.test:{dead}:127.0.0.1", "--min-delay", "0.05", "--retry-base", "0.05",
              "--no-progress"]  # fmt: skip
    p = run("crawl", *common, "--out", str(tmp_path / "refused"))
    assert p.returncode == 1, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "nothing could be fetched" in lines[0] and "--allow-private-addresses" in lines[0]

    p = run("crawl", *common, "--allow-private-addresses", "--out", str(tmp_path / "dead"))
    assert p.returncode == 1, p.stderr
    assert "nothing could be fetched" in p.stderr and "no connection" in p.stderr


def test_a_refused_address_is_said_at_once_not_after_the_sites_delay(tmp_path: Path) -> None:
    """A newcomer's first crawl of a server on 127.0.0.1, without --allow-private-addresses
    and at the default 15 s delay: no connection was made, so nothing is spaced; it said
    so after waiting the delay out (15.5 s)."""
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://127.0.0.1:9/\nhttp://127.0.0.1:9/a.html\n")
    p = run("crawl", "--seeds", str(seeds), "--user-agent", UA, "--out", str(tmp_path / "o"),
            "--no-progress")  # fmt: skip
    assert p.returncode == 1 and "--allow-private-addresses" in p.stderr, p.stderr
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["seconds"] < 10, summary["seconds"]  # (the default delay is 15 s)
    assert summary["counters"]["address_refused"] == 2, summary["counters"]


async def test_short_min_delay_is_not_swamped_by_jitter(tmp_path: Path) -> None:
    """--min-delay 0.05 without --jitter: the jitter is a tenth of the delay, not 0.5 s."""
    import asyncio

    async with TestWeb(n_hosts=1, pages_per_host=3, seed=5, plain=True) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(web.seed_urls()[0] + "\n")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "politecrawl", "crawl", "--seeds", str(seeds),
            "--user-agent", UA, "--out", str(tmp_path / "o"), "--resolve", web.resolve_arg(),
            "--allow-private-addresses", "--min-delay", "0.05", "--max-pages", "1",
            "--no-progress",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, err.decode()
    config = json.loads((tmp_path / "o" / "config.json").read_text())
    assert config["politeness"]["jitter_s"] == pytest.approx(0.005)


def test_demo_judges_itself_and_says_what_next(tmp_path: Path) -> None:
    """The demo's server runs in its own process (its access log is the judge, not sharing
    the crawler's loop); it says its errors are deliberate, where the output is and what to
    run next."""
    out = tmp_path / "demo"
    p = run("demo", "--hosts", "4", "--pages", "4", "--min-delay", "0.1", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert re.search(r"\(its own process\); server saw \d+ requests, 0 politeness violations",
                     p.stdout), p.stdout  # fmt: skip
    assert "errors are deliberate" in p.stdout
    assert f"Output: {out}." in p.stdout
    assert f"politecrawl report {out}" in p.stdout
    assert (out / "testweb-access.jsonl").read_text().strip()


def test_api_crawl_that_reaches_nothing_is_not_silent(tmp_path: Path) -> None:
    """The README's API example with a site that cannot be reached (offline): the robots.txt
    failure is said on stderr while the crawl waits, with no logging set up by the user."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    code = f"""
import asyncio
from pathlib import Path
from politecrawl import Crawler, CrawlConfig, FetchConfig, PolitenessConfig
config = CrawlConfig(
    seeds=("http://offline.test:{dead}/",),
    out_dir=Path({str(tmp_path / "crawl1")!r}),
    fetch=FetchConfig(user_agent="acmebot/1.0 (+https://acme.example/bot)",
                      resolve=("offline.test:{dead}:127.0.0.1",), allow_private_addresses=True,
                      retry_base_s=0.05, transient_attempts=3),
    politeness=PolitenessConfig(min_delay_s=0.05),
    max_pages=100,
)
summary = asyncio.run(Crawler(config).run())
print(summary.stored, summary.errors)
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert f"robots.txt of http://offline.test:{dead} unreachable" in p.stderr
    assert "'connect': 3" in p.stdout


@pytest.mark.parametrize(
    "args,needle",
    [
        (["status", "--frontier", "http://127.0.0.1:1/0"], "--frontier must be a redis://"),
        (["status", "--frontier", "redis://127.0.0.1:1/0", "--crawl-id", "a/b"], "--crawl-id"),
        (["seed", "seeds.txt", "--frontier", "http://127.0.0.1:1/0"], "--frontier"),
        (["worker", "--frontier", "redis://127.0.0.1:1/0", "--crawl-id", "a b", "--user-agent",
          UA, "--out", "w"], "--crawl-id"),
        (["crawl", "--seeds", "seeds.txt", "--crawl-id", "mine", "--user-agent", UA, "--out",
          "w"], "--crawl-id names a shared crawl: it needs --frontier"),
    ],
)  # fmt: skip
def test_shared_crawl_misuse(tmp_path: Path, args: list[str], needle: str) -> None:
    (tmp_path / "seeds.txt").write_text("http://ok.example/\n")
    args = [str(tmp_path / a) if a in ("seeds.txt", "w") else a for a in args]
    assert needle in one_line_error(run(*args))


@pytest.mark.parametrize("name", ["continuity.sqlite", "state.sqlite"])
def test_corrupt_store_is_one_line(tmp_path: Path, name: str) -> None:
    """A damaged SQLite file in --out is named in one line (StorageError/FrontierError), exit 1,
    no traceback; nothing is requested."""
    out = tmp_path / "o"
    out.mkdir()
    (out / name).write_bytes(b"not a database, just bytes\n" * 200)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://ok.example/\n")
    p = run(
        "crawl", "--seeds", str(seeds), "--user-agent", UA, "--out", str(out), *PINNED,
        "--no-progress", "--max-time", "5",
    )  # fmt: skip
    assert p.returncode == 1, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert str(out / name) in lines[0] and "not a database" in lines[0], lines[0]
    assert not (out / "summary.json").exists()
