"""The main text of a page, with no code: trafilatura's extraction, wrapped once.

trafilatura is the field's own library for this (F1 0.958 on the public article-extraction
benchmark; ``bench/extract.py`` measures it through the real crawl). It parses the page again
with lxml and costs about 50 ms of CPU for a news page here, five to ten times reading the
page itself, so it runs only when asked: ``--extract`` (``OUT/content.jsonl``, in a thread,
after the WARC record is written) or a handler calling ``page.main_text()``.

One extraction per format: ``text`` is trafilatura's plain text (what the benchmark scores),
``markdown`` the same extraction with formatting kept; the metadata (title, author, date,
language) come with either. Comments are left out, as the benchmark's own run does.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["Extract", "Format", "extract_main"]

log = logging.getLogger("politecrawl")

Format = Literal["text", "markdown"]

_HTML_LANG = re.compile(rb"<html\b[^>]*?\blang\s*=\s*[\"']?([A-Za-z]{2,3}(?:[-_][A-Za-z0-9]+)*)")


@dataclass(frozen=True, slots=True)
class Extract:
    """What trafilatura found on a page: ``text`` is None when it found no main text."""

    text: str | None
    title: str | None = None
    author: str | None = None
    date: str | None = None
    lang: str | None = None


def extract_main(html: str, url: str, fmt: Format) -> Extract:
    """The page's main text as ``fmt``, and its metadata; never raises on a bad page.

    ``trafilatura.extract`` as the benchmark calls it, kept as a ``Document`` so the metadata
    come from the same extraction (its JSON output has no Markdown)."""
    import trafilatura  # imported on first use: a crawl without --extract never pays for it
    from trafilatura.settings import Document
    from trafilatura.utils import normalize_unicode
    from trafilatura.xml import xmltotxt

    # trafilatura says "ERROR ... empty HTML tree" on stderr for a page with no main text (a
    # tiny valid page): not an error of the crawl's, and the page's record says "no text"
    logging.getLogger("trafilatura").setLevel(logging.CRITICAL)
    markdown = fmt == "markdown"
    try:
        found = trafilatura.bare_extraction(
            html,
            url=url,
            output_format="markdown" if markdown else "txt",
            with_metadata=True,
            include_comments=False,
        )
        doc = found if isinstance(found, Document) else None
        text = None
        if doc is not None and doc.body is not None:  # (as trafilatura.extract returns it)
            text = normalize_unicode(xmltotxt(doc.body, include_formatting=markdown)).strip()
    except Exception as exc:  # a library's failure on one page must not stop the crawl
        log.warning("main text extraction failed on %s: %r", url, exc)
        doc = None
    if doc is None:
        return Extract(None, lang=_html_lang(html))
    return Extract(
        text=text or None,
        title=doc.title or None,
        author=doc.author or None,
        date=doc.date or None,
        lang=doc.language or _html_lang(html),
    )


def _html_lang(html: str) -> str | None:
    """``<html lang>``, when trafilatura gives no language (it detects one only with extras)."""
    m = _HTML_LANG.search(html[:20000].encode("utf-8", "replace"))
    return m.group(1).decode("ascii").replace("_", "-") if m else None
