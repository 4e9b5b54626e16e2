"""The bot information page: complete, honest about defaults, escaped, well-formed."""

from __future__ import annotations

import argparse
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from politecrawl.errors import ConfigError
from politecrawl.tools.botpage import main_args, render

UA = "acmebot/1.0 (+https://acme.example/bot)"
_VOID = {"meta", "br", "img", "link", "hr", "input"}


class _Checker(HTMLParser):
    """Tag balance, text, links and any external resource references."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.text: list[str] = []
        self.hrefs: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.hrefs += [v or "" for k, v in attrs if k == "href"]
        if any(k == "src" for k, _ in attrs):
            self.errors.append(f"external resource in <{tag}>")
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(f"unbalanced </{tag}>")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _check(page: str) -> _Checker:
    c = _Checker()
    c.feed(page)
    c.close()
    assert c.errors == [] and c.stack == []
    assert page.startswith("<!DOCTYPE html>")
    assert {"html", "head", "title", "body", "h1", "style"} <= c.tags
    assert "script" not in c.tags and "<link" not in page
    return c


@pytest.mark.unit
def test_page_says_everything_an_operator_needs() -> None:
    page = render(
        UA,
        "crawler@acme.example",
        ["192.0.2.10", "2001:db8::7"],
        "We index steam-train history pages for a public archive.",
    )
    c = _check(page)
    text = "".join(c.text)
    assert "We index steam-train history pages" in text
    assert "192.0.2.10" in text and "2001:db8::7" in text
    assert UA in text
    # blocking: entirely and in part, with the product token
    assert "User-agent: acmebot\nDisallow: /\n" in text + "\n"
    assert "User-agent: acmebot\nDisallow: /private/" in text
    assert "User-agent: acmebot\nCrawl-delay: 60" in text
    assert "X-Robots-Tag" in text and '<meta name="robots"' in text and "noindex" in text
    assert "15 seconds" in text and "one request at a time" in text
    assert "mailto:crawler@acme.example" in c.hrefs
    assert "robots.txt" in text


@pytest.mark.unit
def test_everything_user_given_is_escaped() -> None:
    evil = '<script>alert("x")</script>'
    page = render(
        "evilbot/2 (+https://e.example/?a=1&b=<i>)", "a&b@e.example", ["192.0.2.1"],
        evil + " & more",
    )
    c = _check(page)
    assert "<script>" not in page and "<i>" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more" in page
    assert "mailto:a&b@e.example" in c.hrefs  # attribute escaped, parsed back intact
    assert evil in "".join(c.text)


@pytest.mark.unit
def test_defaults_without_purpose_or_ips() -> None:
    text = "".join(_check(render(UA, "ops@acme.example", [], None)).text)
    assert "acmebot collects public web pages" in text
    assert "not listed here yet" in text


@pytest.mark.unit
@pytest.mark.parametrize("ua", ["", "Mozilla/5.0 (compatible; x)", "acmebot/1.0"])
def test_dishonest_user_agent_refused(ua: str) -> None:
    with pytest.raises(ConfigError):
        render(ua, "ops@acme.example", [], None)


@pytest.mark.unit
@pytest.mark.parametrize("ip", ["999.1.1.1", "<script>", "", "2001:db8::zz"])
def test_an_address_that_is_none_is_refused(ip: str) -> None:
    """The page tells operators which addresses to expect: a typo there misleads them."""
    with pytest.raises(ConfigError, match="is not an IP address"):
        render(UA, "ops@acme.example", ["192.0.2.7", ip], None)


@pytest.mark.unit
def test_contact_must_be_an_email() -> None:
    with pytest.raises(ConfigError, match="e-mail"):
        render(UA, "https://acme.example/contact", [], None)


@pytest.mark.unit
def test_main_args_stdout_and_file(tmp_path: Path, capsys: Any) -> None:
    ns = argparse.Namespace(
        user_agent=UA, contact="ops@acme.example", ip=["192.0.2.1"], purpose=None, out=None
    )
    assert main_args(ns) == 0
    printed = capsys.readouterr().out
    assert "192.0.2.1" in printed
    ns.out = str(tmp_path / "bot.html")
    assert main_args(ns) == 0
    assert (tmp_path / "bot.html").read_text(encoding="utf-8") == printed
    ns.out = str(tmp_path / "missing" / "bot.html")
    with pytest.raises(ConfigError, match="does not exist"):
        main_args(ns)


@pytest.mark.e2e
def test_page_states_the_crawls_real_delay(tmp_path: Path) -> None:
    """Not "at least 15 seconds" whatever the crawl does: --min-delay, or the crawl's config."""
    import subprocess
    import sys

    def page(*args: str) -> str:
        p = subprocess.run(
            [sys.executable, "-m", "politecrawl", "botpage", "--user-agent",
             "acmebot/1.0 (+https://acme.example/bot)", "--contact", "ops@acme.example", *args],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert p.returncode == 0, p.stderr
        return " ".join(p.stdout.split())

    assert "at least 15 seconds after the previous one started" in page()
    assert "(30 times the average time" in page()
    text = page("--min-delay", "2.5", "--delay-factor", "10")
    assert "at least 2.5 seconds after" in text and "(10 times the average" in text
    assert "15 seconds" not in text
    cfg = tmp_path / "crawl.toml"
    cfg.write_text("[crawl]\nmin-delay = 60\n")
    assert "at least 60 seconds after" in page("--config", str(cfg))
    assert "at least 1 second after" in page("--config", str(cfg), "--min-delay", "1")
