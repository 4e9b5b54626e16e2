"""A focused crawl keeps to the language it came in, through the real command, judged by
what the server answered.

A manual served in five languages, as the Apache HTTP Server's is: every page links its
translations (``hreflang``, a language switcher), and the translations keep the technical
words of the English page (directive and protocol names), so the nugget function scores them
on topic as well. They hold the same text translated: a crawl that wants the topic's pages
must spend its budget on the pages, not on their translations.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import UA
from originweb import focused_crawl

pytestmark = pytest.mark.e2e

LANGS = ("en", "fr", "de", "ja", "es")
ON_TOPIC = ("ssl-intro", "ssl-howto", "ssl-faq", "ssl-compat", "mod-ssl", "tls-certificates")
OTHER = tuple(f"chapter-{i}" for i in range(14))
NAMES = ON_TOPIC + OTHER
TOPIC = "tls certificates, ssl encryption, https"
BUDGET = 18  # pages; the English manual has 21


def page(lang: str, name: str) -> str:
    switcher = "".join(
        f'<a href="/{other}/{name}.html" hreflang="{other}" rel="alternate">{other}</a> '
        for other in LANGS
        if other != lang
    )
    if name in ON_TOPIC:
        words = "SSL encryption with TLS certificates for https: SSLCertificateFile, TLS 1.3. " * 4
    else:
        words = "Logging, caching and the configuration files of the server. " * 4
    if lang != "en":  # translated prose, the technical words kept
        words = f"[{lang}] " + words
    nav = "".join(f'<a href="/{lang}/{n}.html">{n.replace("-", " ")}</a> ' for n in NAMES)
    return (
        f'<html lang="{lang}"><head><title>{name}</title></head><body>'
        f"<p>{switcher}</p><h1>{name}</h1><p>{words}</p><p>{nav}</p></body></html>"
    )


def manual(path: str) -> str | None:
    """The manual's pages: ``/`` and ``/LANG/NAME.html``."""
    if path == "/":
        return page("en", "index")
    parts = path.strip("/").removesuffix(".html").split("/")
    if len(parts) == 2 and parts[0] in LANGS and parts[1] in NAMES:
        return page(parts[0], parts[1])
    return None


async def test_a_focused_crawl_takes_the_pages_not_their_translations(tmp_path: Path) -> None:
    fetched = await focused_crawl(manual, TOPIC, BUDGET, tmp_path / "out", UA)
    english = {path for path in fetched if path.startswith("/en/")}
    translations = [path for path in fetched if path.split("/")[1] in LANGS[1:]]
    # every on-topic page of the manual, in the language the crawl came in
    assert {f"/en/{n}.html" for n in ON_TOPIC} <= english, fetched
    # and the budget was not spent on their translations (before: it went to /fr/ after its
    # first page)
    assert len(translations) <= 2, translations
