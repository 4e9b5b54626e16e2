"""``politecrawl robots`` on a file and on a live local site."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import UA

from politecrawl.demo.web import TestWeb
from politecrawl.tools.robots_check import check


@pytest.mark.unit
def test_file_verdicts_name_the_rule(tmp_path: Path) -> None:
    f = tmp_path / "robots.txt"
    f.write_text(
        "User-agent: testbot\nDisallow: /p/\nAllow: /p/1.html\nCrawl-delay: 2.5\n"
        "Sitemap: https://x.example/sitemap.xml\n"
    )
    lines = check(str(f), UA, ["/p/1.html", "/p/2.html", "/q"])
    assert "# Crawl-delay for testbot: 2.5 s" in lines
    assert "# Sitemap: https://x.example/sitemap.xml" in lines
    assert lines[-3].startswith("ALLOWED") and "Allow: /p/1.html (line 3)" in lines[-3]
    assert lines[-2].startswith("DISALLOWED") and "Disallow: /p/ (line 2)" in lines[-2]
    assert lines[-1].startswith("ALLOWED") and "no rule matched" in lines[-1]


@pytest.mark.e2e
async def test_url_source_fetches_robots_through_the_guard(tmp_path: Path) -> None:
    async with TestWeb(n_hosts=3, seed=2) as web:
        site = web.url(web.hosts[2], "/")
        args = [
            sys.executable,
            "-m",
            "politecrawl.tools.cli",
            "robots",
            site,
            "--user-agent",
            UA,
            "--resolve",
            web.resolve_arg(),
            "/p/2.html",
            "/p/3.html",
        ]
        import asyncio

        proc = await asyncio.create_subprocess_exec(
            *args, "--allow-private-addresses", stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, err.decode()
        text = out.decode()
        assert "DISALLOWED /p/2.html" in text and "ALLOWED    /p/3.html" in text
        # without permission, the loopback address is refused: all disallowed, nothing fetched
        before = len(web.access_log)
        proc = await asyncio.create_subprocess_exec(
            *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
        text = out.decode()
        assert "address_refused; add --allow-private-addresses" in text
        assert "Disallow: / (the status's rule, no robots.txt line)" in text  # was "(line None)"
        assert len(web.access_log) == before


@pytest.mark.e2e
def test_the_help_example_on_a_file_runs_with_a_bare_bot_name(tmp_path: Path) -> None:
    """``robots --help``'s second example, as printed: a file is only matched, so the bot's
    name will do (it was refused for want of an info URL, exit 2); a live site is asked
    under a user agent that names the bot and its info URL."""
    from politecrawl.tools.examples import EXAMPLES

    (example,) = [e for e in EXAMPLES["robots"] if "robots.txt" in e.split()]
    (tmp_path / "robots.txt").write_text("User-agent: acmebot\nDisallow: /a\n")
    args = example.split()[2:]  # (no quotes in it)
    p = subprocess.run(
        [sys.executable, "-m", "politecrawl", "robots", *args],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1].startswith("DISALLOWED https://docs.example/a")
    live = subprocess.run(
        [sys.executable, "-m", "politecrawl", "robots", "http://127.0.0.1:9/", "--user-agent",
         "acmebot", "/a"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert live.returncode == 2 and "info URL" in live.stderr, live.stderr
