"""What a fetched HTML page says to the crawler: its links and its robots directives.

Only ``<a href>`` and ``<area href>`` are links (the seeds: nothing in comments, scripts,
forms or text is followed). They resolve against ``<base href>``. selectolax (Lexbor) is an
HTML5-spec parser, so markup inside comments, ``<script>`` and ``<textarea>`` is never a link,
and it is ~20x faster than BeautifulSoup (see ../shared/LIBRARIES.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser

from politecrawl import page_directives
from politecrawl.htmlguard import depth_cut
from politecrawl.page_directives import PageDirectives
from politecrawl.urls import join

_MAX_LINKS = 10_000  # a page with a million links yields its first 10k; the cut is recorded
_MAX_ANCHOR = 200
_MAX_TEXT = 200_000


@dataclass(frozen=True, slots=True)
class Link:
    url: str
    anchor: str
    nofollow: bool


@dataclass(slots=True)
class ParsedPage:
    title: str = ""
    links: list[Link] = field(default_factory=list)
    directives: PageDirectives = field(default_factory=PageDirectives)
    canonical: str | None = None
    links_cut: int = 0
    depth_cut_at: int | None = None
    text: str = ""  # visible text (scripts and styles removed), for fingerprints


def parse_page(
    body: bytes, url: str, product_token: str, header_directives: PageDirectives | None = None
) -> ParsedPage:
    """Extract links and directives; never raises on malformed HTML."""
    page = ParsedPage()
    cut = depth_cut(body)
    if cut is not None:  # hostile nesting: parse the sane prefix only (see htmlguard)
        body = body[:cut]
        page.depth_cut_at = cut
    tree = LexborHTMLParser(body)
    head = tree.head
    base = url
    metas: list[tuple[str, str]] = []
    if head is not None:
        title = head.css_first("title")
        if title is not None:
            page.title = title.text(strip=True)[:500]
        for node in head.css("base[href], meta[name], link[rel]"):
            attrs = node.attributes
            tag = node.tag
            if tag == "base" and base is url:
                joined = join(url, attrs.get("href") or "")
                if joined:
                    base = joined
            elif tag == "meta":
                metas.append((attrs.get("name") or "", attrs.get("content") or ""))
            elif tag == "link" and "canonical" in (attrs.get("rel") or "").lower().split():
                page.canonical = join(url, attrs.get("href") or "")
    directives = page_directives.from_meta(metas, product_token)
    if header_directives is not None:
        directives = page_directives.merge(directives, header_directives)
    page.directives = directives
    if directives.nofollow:
        page.text = _visible_text(tree)
        return page
    seen: set[str] = set()
    links = page.links
    nodes = tree.css("a[href], area[href]")
    for i, node in enumerate(nodes):
        # caps before the join: the rest costs nothing (unique links, and anchors examined,
        # so a page of a million duplicate hrefs is not joined a million times)
        if len(links) >= _MAX_LINKS or i >= 2 * _MAX_LINKS:
            page.links_cut = len(nodes) - i
            break
        attrs = node.attributes
        target = join(base, attrs.get("href") or "")
        if target is None or target in seen:
            continue
        seen.add(target)
        rel = attrs.get("rel")
        nofollow = rel is not None and "nofollow" in rel.lower()
        anchor = node.text(deep=True, strip=True)[:_MAX_ANCHOR] if node.tag == "a" else ""
        links.append(Link(target, anchor, nofollow))
    page.text = _visible_text(tree)
    return page


def _visible_text(tree: LexborHTMLParser) -> str:
    """The body's text without scripts and styles (after the links were taken)."""
    body = tree.body
    if body is None:
        return ""
    for node in body.css("script, style, template"):
        node.decompose()
    return body.text(deep=True, separator=" ", strip=True)[:_MAX_TEXT]
