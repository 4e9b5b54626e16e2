"""What a parsed HTML page says to the crawler: its links and its robots directives.

Only ``<a href>`` and ``<area href>`` are links (the seeds: nothing in comments, scripts,
forms or text is followed). They resolve against ``<base href>``. selectolax (Lexbor) is an
HTML5-spec parser, so markup inside comments, ``<script>`` and ``<textarea>`` is never a link,
and it is ~20x faster than BeautifulSoup (see ../shared/LIBRARIES.md).

The tree is built from *decoded* text (``content.decoding``; ``page.read_page`` decodes once), never
from bytes: Lexbor alone assumes UTF-8, so an ISO-8859-1 ``/café`` became ``/caf%EF%BF%BD``
and a leading byte-order mark pushed ``<head>`` into ``<body>``, losing ``<meta name=robots>``.
Links are then percent-encoded from their true characters as the WHATWG URL Standard says:
the path as UTF-8 (``urls.join``), the query in the page's own encoding when that is not
UTF-8 ("percent-encode after encoding"; what a browser sends for ``?q=café`` on a
windows-1252 page is ``?q=caf%E9``), a character that encoding lacks as ``%26%23NNN%3B``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from selectolax.lexbor import LexborHTMLParser, LexborNode

from politecrawl.content import directives as page_directives
from politecrawl.content.directives import PageDirectives
from politecrawl.content.htmlguard import SCAN_ABOVE_TAGS, depth_cut
from politecrawl.urls.canonical import join

__all__ = ["Link", "ParsedPage", "build_tree", "parse_page", "parse_tree", "visible_text"]

_MAX_LINKS = 10_000  # a page with a million links yields its first 10k; the cut is recorded
_MAX_ANCHOR = 200
_MAX_TEXT = 200_000
_MAX_TITLE = 500
_UNICODE_CODECS = ("utf-8", "utf-16-le", "utf-16-be")


class Link(NamedTuple):
    """A link of a page: its absolute canonical URL, its anchor text, ``rel=nofollow``, and
    whether it is the page in another language (``hreflang`` names a language other than the
    page's own ``<html lang>``: a language switcher's link, the same text translated).

    A named tuple, not a dataclass: a page's links are made and, with ``--processes``,
    pickled and unpickled by the hundred; a tuple does each in about half the time."""

    url: str
    anchor: str
    nofollow: bool
    translation: bool = False

    def __reduce__(self) -> tuple[type[Link], tuple[str, str, bool, bool]]:
        # not the slower default path
        return Link, (self.url, self.anchor, self.nofollow, self.translation)


@dataclass(slots=True)
class ParsedPage:
    title: str = ""
    links: list[Link] = field(default_factory=list)
    directives: PageDirectives = field(default_factory=PageDirectives)
    canonical: str | None = None
    links_cut: int = 0
    depth_cut_at: int | None = None
    text: str = ""  # visible text (scripts and styles removed), for fingerprints
    base: str = ""  # what relative links resolve against (<base href> or the page's URL)
    # meta elements that speak of use (robots, ours, tdm-*): ``polite.usage`` reads them
    usage_metas: list[tuple[str, str]] = field(default_factory=list)


def build_tree(text: str) -> tuple[LexborHTMLParser, int | None]:
    """The parsed tree of decoded HTML, and where hostile nesting was cut (see htmlguard)."""
    cut: int | None = None
    if text.count("<") > SCAN_ABOVE_TAGS:
        raw = text.encode("utf-8", "surrogatepass")
        cut = depth_cut(raw)
        if cut is not None:  # parse the sane prefix only
            text = raw[:cut].decode("utf-8", "ignore")
    return LexborHTMLParser(text), cut


def parse_tree(
    tree: LexborHTMLParser,
    url: str,
    product_token: str,
    header_directives: PageDirectives | None = None,
    *,
    codec: str = "utf-8",
) -> ParsedPage:
    """Title, ``<base>``, canonical, directives and links of a tree; reads, never changes it.

    ``codec`` is the page's encoding (a Python codec name), for the queries of its links.
    """
    page = ParsedPage(base=url)
    head = tree.head
    metas: list[tuple[str, str]] = []
    if head is not None:
        title = head.css_first("title")
        if title is not None:
            page.title = " ".join(title.text().split())[:_MAX_TITLE]
        for node in head.css("base[href], meta[name], link[rel]"):
            attrs = node.attributes
            tag = node.tag
            if tag == "base" and page.base is url:
                joined = join(url, attrs.get("href") or "")
                if joined:
                    page.base = joined
            elif tag == "meta":
                metas.append((attrs.get("name") or "", attrs.get("content") or ""))
            elif tag == "link" and "canonical" in (attrs.get("rel") or "").lower().split():
                page.canonical = join(url, attrs.get("href") or "")
    directives = page_directives.from_meta(metas, product_token)
    usage_names = {"robots", "tdm-reservation", "tdm-policy", product_token.lower()}
    page.usage_metas = [(n, c) for n, c in metas if n.strip().lower() in usage_names]
    if header_directives is not None:
        directives = page_directives.merge(directives, header_directives)
    page.directives = directives
    if not directives.nofollow:
        _links(tree, page, codec)
    return page


def _links(tree: LexborHTMLParser, page: ParsedPage, codec: str) -> None:
    seen: set[str] = set()
    links = page.links
    base = page.base
    legacy = codec not in _UNICODE_CODECS
    root = tree.root
    lang = _primary_language((root.attributes.get("lang") or "") if root is not None else "")
    nodes = tree.css("a[href], area[href]")
    for i, node in enumerate(nodes):
        # caps before the join: the rest costs nothing (unique links, and anchors examined,
        # so a page of a million duplicate hrefs is not joined a million times)
        if len(links) >= _MAX_LINKS or i >= 2 * _MAX_LINKS:
            page.links_cut = len(nodes) - i
            break
        attrs = node.attributes
        href = attrs.get("href") or ""
        if legacy and not href.isascii():
            href = encode_query(href, codec)
        target = join(base, href)
        if target is None or target in seen:
            continue
        seen.add(target)
        rel = attrs.get("rel")
        nofollow = rel is not None and "nofollow" in rel.lower()
        anchor = _anchor_text(node) if node.tag == "a" else ""
        translation = False  # most links have no hreflang: no work for them
        if lang and (hreflang := attrs.get("hreflang")):
            translation = _primary_language(hreflang) not in ("", lang)
        links.append(Link(target, anchor, nofollow, translation))


def _anchor_text(node: LexborNode) -> str:
    """The anchor's text with its own spaces, collapsed. With selectolax's ``strip=True`` each
    text node was stripped and the pieces glued: ``26.1. <acronym>SQL</acronym> Dump`` became
    ``26.1.SQLDump``, a word no topic has (2 % of the anchors of Debian's documentation, every
    DocBook table of contents)."""
    return " ".join(node.text(deep=True)[: 8 * _MAX_ANCHOR].split())[:_MAX_ANCHOR]


def _primary_language(tag: str) -> str:
    """``en`` of ``en-US``, ``EN``, ``en_GB``: the language, without region or script."""
    return tag.strip().lower().replace("_", "-").split("-", 1)[0]


def encode_query(href: str, codec: str) -> str:
    """``href`` with the non-ASCII characters of its query percent-encoded in ``codec`` (WHATWG
    URL, query state, for a document whose encoding is not UTF-8); the rest is left to
    ``urls.join``, which encodes paths as UTF-8."""
    end = href.find("#")
    end = len(href) if end < 0 else end
    q = href.find("?", 0, end)
    if q < 0:
        return href
    query = href[q + 1 : end]
    if query.isascii():
        return href
    out: list[str] = []
    for ch in query:
        if ch.isascii():
            out.append(ch)
            continue
        try:
            out.append("".join(f"%{b:02X}" for b in ch.encode(codec)))
        except (UnicodeError, LookupError):  # not in the page's encoding: an HTML reference
            out.append(f"%26%23{ord(ch)}%3B")
    return href[: q + 1] + "".join(out) + href[end:]


def visible_text(tree: LexborHTMLParser) -> str:
    """The body's text without scripts and styles; removes those from ``tree``."""
    body = tree.body
    if body is None:
        return ""
    for node in body.css("script, style, template"):
        node.decompose()
    return body.text(deep=True, separator=" ", strip=True)[:_MAX_TEXT]


def parse_page(
    body: bytes,
    url: str,
    product_token: str,
    header_directives: PageDirectives | None = None,
    content_type: str | None = None,
) -> ParsedPage:
    """Decode, parse, extract links, directives and text; never raises on malformed HTML.

    For tools and tests; the crawler reads a page once with ``page.read_page``.
    """
    from politecrawl.content.decoding import decode_html

    decoded = decode_html(body, content_type)
    tree, cut = build_tree(decoded.text)
    page = parse_tree(tree, url, product_token, header_directives, codec=decoded.charset)
    page.depth_cut_at = cut
    page.text = visible_text(tree)
    return page
