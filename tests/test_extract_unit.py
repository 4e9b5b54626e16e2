"""``Page.main_text()`` / ``page.markdown()``: trafilatura's main text, computed once, only
when asked; ``--extract`` parsed from flags, comma lists and TOML lists alike."""

from __future__ import annotations

import pickle

import pytest

from politecrawl.config import parse_extract, parse_metrics_address
from politecrawl.content import page as page_module
from politecrawl.content.extract import Extract, extract_main
from politecrawl.content.page import read_page
from politecrawl.errors import ConfigError

pytestmark = pytest.mark.unit

ARTICLE = (
    "<html lang='en-GB'><head><title>Steam at Didcot</title>"
    "<meta name='author' content='Ada Byron'>"
    "<meta property='article:published_time' content='2024-05-06'></head><body>"
    "<nav><a href='/'>Home</a> <a href='/news'>News</a> <a href='/shop'>Shop</a></nav>"
    "<article><h1>Steam at Didcot</h1>"
    + "".join(
        f"<p>The <b>locomotive</b> number {i} ran from Didcot to Oxford on a bright morning, "
        "drawing a crowd of families, engineers and photographers along the line.</p>"
        for i in range(8)
    )
    + "</article><footer>Copyright 2024 Railway News. All rights reserved.</footer>"
    "</body></html>"
)


def _page() -> page_module.Page:
    return read_page(ARTICLE.encode(), "http://news.test/a", product_token="testbot")


def test_main_text_is_the_article_without_chrome() -> None:
    page = _page()
    text = page.main_text()
    assert text is not None
    assert "locomotive number 7 ran from Didcot" in text
    assert "Copyright" not in text and "Shop" not in text
    md = page.markdown()
    assert md is not None and "**locomotive**" in md
    ex = page.extract("text")
    assert ex.author == "Ada Byron" and ex.date == "2024-05-06" and ex.lang == "en-GB"


def test_computed_once_and_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def counting(html: str, url: str, fmt: str) -> Extract:
        calls.append(fmt)
        return extract_main(html, url, fmt)  # type: ignore[arg-type]

    monkeypatch.setattr(page_module, "extract_main", counting)
    page = _page()
    assert calls == []  # reading a page extracts nothing
    first = page.main_text()
    assert page.main_text() == first and page.main_text() == first
    assert calls == ["text"]
    page.markdown()
    page.markdown()
    assert calls == ["text", "markdown"]
    again = pickle.loads(pickle.dumps(page))  # to and from a worker process: cache kept
    assert again.main_text() == first and calls == ["text", "markdown"]


def test_no_main_text_is_none() -> None:
    page = read_page(b"<html><body></body></html>", "http://x.test/", product_token="t")
    assert page.main_text() is None


def test_extract_option_values() -> None:
    assert parse_extract(["text"]) == ("text",)
    assert parse_extract(["text,markdown"]) == ("text", "markdown")
    assert parse_extract(["markdown", "text", "markdown"]) == ("markdown", "text")
    with pytest.raises(ConfigError, match="text or markdown"):
        parse_extract(["html"])


def test_metrics_address() -> None:
    assert parse_metrics_address("127.0.0.1:9108") == ("127.0.0.1", 9108)
    assert parse_metrics_address("9108") == ("127.0.0.1", 9108)  # loopback unless told
    assert parse_metrics_address("[::1]:0") == ("::1", 0)
    assert parse_metrics_address("0.0.0.0:9108") == ("0.0.0.0", 9108)
    with pytest.raises(ConfigError):
        parse_metrics_address("host:http")
