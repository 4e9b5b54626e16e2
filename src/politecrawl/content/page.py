"""One fetched HTML page, read once: decoded once, parsed once, seen by every later step.

``read_page`` is the page-processing step of a turn. In order:

1. decode (``content.decoding.decode_html``): byte-order mark, HTTP charset, ``<meta charset>``,
   and the detector where the label is missing or doubtful (a windows-1252 label is checked);
   no mojibake repair here: the HTML is what a browser decodes, so links are too;
2. parse the decoded text once with selectolax (``parse.build_tree``, nesting guard first);
3. from that one tree: title (mojibake repaired), ``<base>``, canonical, meta robots merged
   with X-Robots-Tag, and the links, percent-encoded from their true characters
   (``parse.parse_tree``);
4. the visible text for fingerprints (``parse.visible_text``) and, only when a nugget function
   is set, the ``relevance.Document`` it reads (``relevance.document_from_tree``, repaired).

Step 4 removes scripts and chrome from the tree, so when a page handler or a sink will see the
tree it works on a clone (a third of a parse). Nothing here parses a second time.

Pages of ``INLINE_MAX_BYTES`` or less are read on the event loop; bigger ones in a thread
(``read_response``). Measured here (``python bench/pageread.py``): reading costs 0.1 ms for
a 2 KiB page, 0.3 ms at 14 KiB, 0.8 ms at 52 KiB, 1.4 ms at 87 KiB and about 18 ms at
700 KiB, mostly in ``urls.join`` per link; ``asyncio.to_thread`` costs 55-100 us of CPU per
call. Below 64 KiB the thread would cost a tenth to a half of the work it moves, and the loop
is held about a millisecond at most; above it, Lexbor's parse (which releases the GIL) runs
beside the loop and the rest gives the loop the GIL every switch interval (5 ms) instead of
holding it for the whole page.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from multidict import CIMultiDict, CIMultiDictProxy
from selectolax.lexbor import LexborHTMLParser, LexborNode

from politecrawl.content.decoding import Source, decode_html, repair_text
from politecrawl.content.directives import PageDirectives, from_x_robots_tag
from politecrawl.content.extract import Extract, Format, extract_main
from politecrawl.content.parse import Link, build_tree, encode_query, parse_tree, visible_text
from politecrawl.focus.relevance import Document, document_from_tree
from politecrawl.net.fetch import FetchResult
from politecrawl.urls.canonical import join

__all__ = [
    "INLINE_MAX_BYTES",
    "Page",
    "read_fetched",
    "read_page",
    "read_response",
]

INLINE_MAX_BYTES = 64 * 1024


@dataclass(slots=True, eq=False)
class Page:
    """A fetched HTML page as the crawler read it; what a page handler receives.

    ``text`` is the decoded HTML (as a browser decodes it), ``charset`` the codec it was decoded
    with and ``charset_source`` why (``header``, ``bom``, ``meta``, ``detected``, ``default``).
    ``links`` are the page's links, absolute and canonical, ``rel=nofollow`` ones marked;
    ``relevance`` is the nugget function's score (None without one). ``tree`` is the
    selectolax document, whole: ``page.css("h1")``.
    """

    url: str
    status: int
    headers: CIMultiDictProxy[str]
    text: str
    charset: str
    charset_source: Source
    title: str
    links: list[Link]
    directives: PageDirectives
    canonical: str | None
    tree: LexborHTMLParser | None  # None when read in a worker process: parsed again on use
    base: str
    depth: int = 0
    relevance: float | None = None
    visible_text: str = ""  # the body's text without scripts and styles (fingerprints)
    links_cut: int = 0
    depth_cut_at: int | None = None
    document: Document | None = None  # what the nugget function reads
    # (name, content) of the meta elements that state use preferences (robots, tdm-*)
    usage_metas: list[tuple[str, str]] = field(default_factory=list)
    usage: dict[str, Any] | None = None  # the preferences in force (``polite.usage``)
    _followed: list[Link] | None = field(default=None, repr=False)
    _extracts: dict[str, Extract] | None = field(default=None, repr=False)

    def css(self, selector: str) -> list[LexborNode]:
        """Every element matching a CSS selector."""
        return self.whole_tree().css(selector)

    def css_first(self, selector: str) -> LexborNode | None:
        """The first element matching a CSS selector, or None."""
        return self.whole_tree().css_first(selector)

    def main_text(self) -> str | None:
        """The page's main text, boilerplate removed (trafilatura), or None if it has none.
        Computed on the first call only (about 50 ms of CPU for a news page)."""
        return self.extract("text").text

    def markdown(self) -> str | None:
        """The main text as Markdown (headings, lists, emphasis kept); computed once."""
        return self.extract("markdown").text

    def extract(self, fmt: Format) -> Extract:
        """The main text as ``fmt`` and the page's title, author, date and language, as
        trafilatura finds them (``content.extract``); each format extracted once."""
        done = self._extracts if self._extracts is not None else {}
        self._extracts = done
        if fmt not in done:
            done[fmt] = extract_main(self.text, self.url, fmt)
        return done[fmt]

    def whole_tree(self) -> LexborHTMLParser:
        """The parsed document (parsed again from ``text`` if it was read in another process:
        a tree cannot cross a process boundary)."""
        if self.tree is None:
            self.tree = build_tree(self.text)[0]
        return self.tree

    def __getstate__(self) -> tuple[object, ...]:
        """For a worker process (``workpool``): every field in order but the tree, the
        headers as pairs, the links as four columns (plain lists pickle in C, a link at a
        time does not): this crosses processes once per page."""
        state = [getattr(self, name) for name in _PAGE_FIELDS]
        state[_TREE] = None
        state[_HEADERS] = list(self.headers.items())
        links = self.links
        state[_LINKS] = ([k.url for k in links], [k.anchor for k in links],
                         [k.nofollow for k in links], [k.translation for k in links])  # fmt: skip
        return tuple(state)

    def __setstate__(self, state: tuple[object, ...]) -> None:
        for name, value in zip(_PAGE_FIELDS, state, strict=True):
            object.__setattr__(self, name, value)
        self.headers = CIMultiDictProxy(CIMultiDict(self.headers))
        columns = cast(tuple[list[str], list[str], list[bool]], state[_LINKS])
        self.links = list(map(_new_link, zip(*columns, strict=True)))

    def follow(self, links: Iterable[str | Link]) -> None:
        """Follow only these links of this page (the default is all of them). Call it as often
        as needed; ``page.follow([])`` follows none. A URL may be relative (to the page's
        ``<base>``). They still pass the one gate (scope, robots.txt, traps, seen), and the
        page's own nofollow (meta, X-Robots-Tag, ``rel=nofollow``) still wins."""
        chosen = self._followed if self._followed is not None else []
        self._followed = chosen
        known = {link.url: link for link in self.links}
        legacy = self.charset not in ("utf-8", "utf-16-le", "utf-16-be")
        for link in links:
            href = link.url if isinstance(link, Link) else link
            if legacy and not href.isascii():
                href = encode_query(href, self.charset)
            url = join(self.base, href)
            if url is not None:
                chosen.append(known.get(url) or Link(url, "", False))

    def links_to_follow(self) -> list[Link]:
        """The links the crawler offers to the gate: all, or those given to ``follow``."""
        if self.directives.nofollow:
            return []
        chosen = self.links if self._followed is None else self._followed
        return [link for link in chosen if not link.nofollow]


_PAGE_FIELDS: tuple[str, ...] = tuple(Page.__dataclass_fields__)
# a Link from a (url, anchor, nofollow, translation) tuple in C: ``Link._make`` is a Python
# call per link (50 links: 6.9 us against 10.4, and a page's result is unpickled once per page)
_new_link = functools.partial(tuple.__new__, Link)
_TREE, _HEADERS, _LINKS = (_PAGE_FIELDS.index(name) for name in ("tree", "headers", "links"))


def read_page(
    body: bytes,
    url: str,
    *,
    status: int = 200,
    headers: Iterable[tuple[str, str]] = (),
    product_token: str,
    header_directives: PageDirectives | None = None,
    depth: int = 0,
    score: bool = False,
    keep_tree: bool = False,
) -> Page:
    """Decode once, parse once, extract everything (module docstring). Never raises on
    malformed HTML. ``score``: build the nugget function's ``Document``; ``keep_tree``: leave
    ``page.tree`` whole for a handler or a sink (the text is taken from a clone)."""
    hdrs = CIMultiDictProxy(CIMultiDict(headers))
    decoded = decode_html(body, hdrs.get("content-type"), repair=False)
    tree, cut = build_tree(decoded.text)
    parsed = parse_tree(tree, url, product_token, header_directives, codec=decoded.charset)
    title = repair_text(parsed.title)
    work = tree.clone() if keep_tree else tree
    text = visible_text(work)
    doc = None
    if score:
        doc = document_from_tree(work, url, title, decoded.charset, depth, repair=True)
    return Page(
        url=url,
        status=status,
        headers=hdrs,
        text=decoded.text,
        charset=decoded.charset,
        charset_source=decoded.source,
        title=title,
        links=parsed.links,
        directives=parsed.directives,
        canonical=parsed.canonical,
        tree=tree,
        base=parsed.base,
        depth=depth,
        visible_text=text,
        links_cut=parsed.links_cut,
        depth_cut_at=cut,
        document=doc,
        usage_metas=parsed.usage_metas,
    )


def read_fetched(
    res: FetchResult,
    url: str,
    product_token: str,
    depth: int,
    *,
    score: bool,
    keep_tree: bool = False,
) -> Page:
    """The page of a fetched response, its X-Robots-Tag merged with its meta robots (on the
    event loop, in a thread, or in a worker process: ``pagework``)."""
    xrt = res.header_all("x-robots-tag")
    return read_page(
        res.body,
        url,
        status=res.status or 0,
        headers=res.headers,
        product_token=product_token,
        header_directives=from_x_robots_tag(xrt, product_token) if xrt else None,
        depth=depth,
        score=score,
        keep_tree=keep_tree,
    )


async def read_response(
    res: FetchResult, url: str, product_token: str, depth: int, *, score: bool, keep_tree: bool
) -> Page:
    """``read_fetched``, in a thread when the body is over ``INLINE_MAX_BYTES``."""
    read = functools.partial(
        read_fetched, res, url, product_token, depth, score=score, keep_tree=keep_tree
    )
    if len(res.body) <= INLINE_MAX_BYTES:
        return read()
    return await asyncio.to_thread(read)
