"""Reading a sitemap's bytes into entries: the XML walk (expat), its salvage, and text lists.

``Collector`` is the result being built plus the expat callbacks that build it, one per
parse; ``sitemaps.parse_sitemap`` undoes gzip, picks XML or text and hands the bytes here.
Kept apart from the entry point because this is where the bounds that make a hostile file
cheap live, and they are easier to check together.

Why ``xml.parsers.expat`` driven directly
-----------------------------------------
* Safety: the parser refuses any ``<!ENTITY`` declaration the moment expat
  reports it (``EntityDeclHandler`` raises), before anything is expanded, so
  billion-laughs and quadratic-blowup documents stop at their DTD, and an XXE
  entity (``SYSTEM "file:///etc/passwd"``) is never even declared. Parameter
  entity parsing is off and no ``ExternalEntityRefHandler`` resolves anything,
  so an external DTD subset is never fetched or read. ElementTree's C parser
  has no hook for this (it expands internal entities and leans on expat's
  amplification limit), and a regex scanner would have to re-implement CDATA,
  comments and character references to be right.
* Speed: tokenising is C; element boundaries reach Python (two short
  callbacks) and text goes straight into ``list.append`` (no Python frame).
* Tolerance: namespace processing is off, so elements match by local name and
  an undeclared prefix does not fail the file. After a well-formedness error
  (in the wild: mostly an unescaped ``&`` in a query string) the locations
  parsed so far are kept, and the rest of the file is salvaged by a linear,
  backtracking-free tag scan that decodes only the five predefined entities
  and character references; ``error`` still says "malformed xml".
* Bounds on expat itself: it keeps the open-element stack and every distinct
  element and attribute name for the whole parse, and pyexpat builds a tag's
  whole attribute dict before a handler sees it (measured: 15 MB of ``<a>``
  took 600 MB; one 11 MB tag of attributes, 186 MB). So nesting deeper than
  64, more than 1024 distinct element or attribute names, or a tag with more
  than 64 attributes (found by a linear pre-scan) stops the parse with
  "too complex", keeping what came before, and peak memory stays a small
  multiple of the input.
"""

from __future__ import annotations

import re
from typing import Final, NoReturn
from xml.parsers import expat

from politecrawl.content.sitemaps.result import (
    ENTITIES_REFUSED,
    ERROR_RANK,
    MALFORMED_XML,
    NOT_A_SITEMAP,
    TOO_COMPLEX,
    TOO_MANY_URLS,
    TRUNCATED_XML,
    Sitemap,
    SitemapEntry,
    read_changefreq,
    read_priority,
    read_rfc822_time,
    read_w3c_time,
)
from politecrawl.errors import PolitecrawlError
from politecrawl.urls.canonical import canonicalize, join

__all__ = ["Collector"]

# Structure bounds.  expat keeps the open-element stack and every distinct
# element name for the whole parse (measured: 15 MB of "<a>" took 600 MB), so
# these bound its memory; real sitemaps and feeds stay far below them.
_MAX_DEPTH: Final = 64
_MAX_NAMES: Final = 1024  # distinct element names, and distinct attribute names
_MAX_ATTRS: Final = 64  # attributes on one element
# pyexpat builds a start tag's whole attribute dict (and expat a table entry
# per distinct attribute name) before any handler can refuse it: an 11 MB tag
# of short attributes took 186 MB.  So such a tag is found first, by a search
# that is linear (possessive, never crosses "<", quoted values may hold ">").
_MANY_ATTRS: Final = re.compile(
    rb"<[^\s<>!?/]++(?:\s++[^\s=<>]++\s*+=\s*+(?:\"[^\"<]*+\"|'[^'<]*+'))"
    rb"{%d}" % (_MAX_ATTRS + 1)
).search
# Plain-text lists: a candidate is a line that starts with "scheme://"; other
# lines (comments, prose) are not locations and are ignored silently.  Line
# ends are made "\n" first: sre passes over non-line-starts fast for (?m)^
# (about 10 ns a byte here) but 4-10 times slower for a look-behind alternation.
_URL_LINE: Final = re.compile(rb"(?m)^[ \t\f\v]*+([A-Za-z][A-Za-z0-9+.\-]*+://[^\n]*)")

# Salvage scan (after an XML error).  Possessive quantifiers and [^<>] keep it
# linear: no attempt runs past the next "<" (not even CDATA, which in a URL
# never holds one), so hostile input cannot make it quadratic.
_SALVAGE_ENTRY: Final = re.compile(
    rb"<(/?)((?:[A-Za-z_][\w.\-]*:)?)(url|sitemap)(?=[\s/>])[^<>]*+>", re.I
)
_SALVAGE_FIELD: Final = re.compile(
    rb"<((?:[A-Za-z_][\w.\-]*:)?)(loc|lastmod|changefreq|priority)(?=[\s>])[^<>]*+>"
    rb"((?:[^<]++|<!\[CDATA\[[^<]*?\]\]>)*+)</\1\2\s*>",
    re.I | re.S,
)
_CDATA_SPLIT: Final = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.S)
_XML_REF: Final = re.compile(r"&(?:(amp|lt|gt|quot|apos)|#([0-9]{1,7})|#[xX]([0-9A-Fa-f]{1,6}));")
_PREDEFINED: Final = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}

_TRUNCATION_CODES: Final = frozenset(
    expat.errors.codes[message]
    for message in (
        expat.errors.XML_ERROR_NO_ELEMENTS,
        expat.errors.XML_ERROR_UNCLOSED_TOKEN,
        expat.errors.XML_ERROR_PARTIAL_CHAR,
        expat.errors.XML_ERROR_UNCLOSED_CDATA_SECTION,
    )
)

# Sitemap element local names that mean something: entries and their fields.
_SITEMAP_ROLES: Final = {
    r: r for r in ("loc", "lastmod", "changefreq", "priority", "url", "sitemap")
}
# Per feed kind: element local name -> role of its text (or "href": take the
# Atom link attribute).  Local names are lower-cased, prefix stripped.
_RSS_FIELDS: Final = {"link": "loc", "pubdate": "pubdate", "date": "lastmod"}
_ATOM_FIELDS: Final = {"link": "href", "updated": "lastmod", "published": "published"}


class _Refused(PolitecrawlError):
    """Raised from an expat handler: the document declares entities."""


class _NotSitemap(PolitecrawlError):
    """Raised from an expat handler: the root element is not one we read."""


class _TooComplex(PolitecrawlError):
    """Raised from an expat handler: nesting, names or attributes past what sitemaps use."""


def _refuse(*_args: object) -> NoReturn:
    raise _Refused


def _unescape_ref(match: re.Match[str]) -> str:
    name, dec, hexa = match.groups()
    if name:
        return _PREDEFINED[name]
    code = int(dec) if dec else int(hexa, 16)
    return chr(code) if 0 < code <= 0x10FFFF else match.group()


def _salvage_text(raw: bytes) -> str:
    """Element text as XML would give it: CDATA verbatim, predefined/char refs decoded."""
    text = raw.decode("utf-8", "surrogateescape")
    if "<![CDATA[" not in text:
        return _XML_REF.sub(_unescape_ref, text) if "&" in text else text
    parts = _CDATA_SPLIT.split(text)  # outside, inside, outside, ...
    parts[::2] = [_XML_REF.sub(_unescape_ref, part) for part in parts[::2]]
    return "".join(parts)


class Collector:
    """The result being built, plus the expat callbacks that build it (one per parse)."""

    __slots__ = (
        "attr_names",
        "base",
        "buf",
        "children",
        "cur",
        "depth",
        "entries",
        "entry_depth",
        "error",
        "feed",
        "field",
        "fields",
        "kind",
        "max_urls",
        "names",
        "pages",
        "parser",
        "prefix",
        "resume",
        "roles",
        "seen",
        "skipped",
    )

    def __init__(self, url: str, max_urls: int) -> None:
        self.pages: list[SitemapEntry] = []
        self.children: list[SitemapEntry] = []
        self.skipped = 0
        self.error: str | None = None
        self.seen = 0  # locations examined, valid or not: bounds canonicalize calls
        self.max_urls = max_urls
        try:
            self.base: str | None = canonicalize(url) if url else None
        except ValueError:
            self.base = None
        # XML walk state.
        # intern=None: pyexpat's name-interning dict would keep every distinct
        # element name (millions in a hostile file: ~850 MB measured for 32 MB).
        self.parser = expat.ParserCreate(intern=None)  # configured by parse_xml
        self.kind: str | None = None  # root local name once seen
        self.feed = False
        self.fields: dict[str, str] = {}
        self.entries: dict[str, list[SitemapEntry]] = {}
        self.names: dict[str, str] = {}  # raw element name -> lower-case local name
        self.attr_names: set[str] = set()
        self.depth = 0
        self.entry_depth = 0  # depth of the open entry element, 0 outside entries
        self.prefix = ""  # the root's namespace prefix as written
        self.roles: dict[str, str] = {}  # raw element name -> sitemap role or ""
        self.resume = 0  # byte index of the last complete sitemap entry, for salvage
        self.cur: dict[str, str] = {}  # role -> text of the open entry
        self.field: str | None = None
        self.buf: list[str] = []

    def fail(self, error: str) -> None:
        """Record an error class unless a more important one is already recorded."""
        if self.error is None or ERROR_RANK[error] < ERROR_RANK[self.error]:
            self.error = error

    def result(self) -> Sitemap:
        return Sitemap(self.pages, self.children, self.skipped, self.error)

    # -- one location -------------------------------------------------------

    def add(self, target: list[SitemapEntry], cur: dict[str, str], *, resolve: bool) -> None:
        """Validate one entry's location and append it; count it if invalid or over the limit."""
        raw = cur.get("loc")
        if raw is None:
            return
        if self.seen >= self.max_urls:
            self.skipped += 1
            self.fail(TOO_MANY_URLS)
            return
        self.seen += 1
        if resolve and self.base is not None:  # feeds may use relative links
            url = join(self.base, raw)
        else:
            try:
                url = canonicalize(raw)
            except ValueError:
                url = None
        if url is None:
            self.skipped += 1
            return
        if len(cur) == 1:  # only <loc>: the common text-list and bare-sitemap case
            target.append(SitemapEntry(url, None, None, None))
            return
        text = cur.get("lastmod")
        lastmod = None if text is None else read_w3c_time(text)
        if lastmod is None and self.feed:
            lastmod = read_w3c_time(cur.get("published"))
            if lastmod is None:
                lastmod = read_rfc822_time(cur.get("pubdate"))
        changefreq = cur.get("changefreq")
        priority = cur.get("priority")
        target.append(
            SitemapEntry(
                url,
                lastmod,
                None if changefreq is None else read_changefreq(changefreq),
                None if priority is None else read_priority(priority),
            )
        )

    # -- expat callbacks: sitemaps (hot) --------------------------------------
    #
    # Nesting is told by name, not depth: a field counts only with the root's
    # own prefix, so <image:loc> inside <url> is never the page.  Text goes
    # straight into ``buf`` (list.append, no Python frame); a start tag clears
    # it, so at an end tag it holds the element's text (for leaves like <loc>).

    def sitemap_start(self, name: str, attrs: dict[str, str]) -> None:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _TooComplex
        if attrs:
            self._check_attrs(attrs)
        if name not in self.roles:
            self._sitemap_role(name)
        self.buf.clear()

    def sitemap_end(self, name: str) -> None:
        self.depth -= 1
        role = self.roles.get(name)  # None only for the root
        if role:
            if role == "url" or role == "sitemap":
                self.add(self.pages if role == "url" else self.children, self.cur, resolve=False)
                self.cur = {}
                self.resume = self.parser.CurrentByteIndex
                if self.seen >= self.max_urls:
                    self._count_only()
            elif role not in self.cur:
                self.cur[role] = "".join(self.buf)

    def _sitemap_role(self, name: str) -> None:
        local = self.names.get(name) or self._local(name)
        prefix = name[: -len(local) - 1] if len(name) > len(local) else ""
        self.roles[name] = _SITEMAP_ROLES.get(local, "") if prefix == self.prefix else ""

    # -- expat callbacks: feeds (rare, so plain depth tracking) --------------

    def _local(self, name: str) -> str:
        """Lower-case local name, remembered; too many distinct names is not a sitemap.

        expat keeps every distinct element name for the whole parse, so this
        bound is also what bounds expat's memory on a hostile file.
        """
        if len(self.names) >= _MAX_NAMES:
            raise _TooComplex
        local = self.names[name] = name.rpartition(":")[2].lower()
        return local

    def _check_attrs(self, attrs: dict[str, str]) -> None:
        """Bound attributes per element and distinct attribute names (expat keeps those too)."""
        if len(attrs) > _MAX_ATTRS:
            raise _TooComplex
        seen = self.attr_names
        for key in attrs:
            if key not in seen:
                if len(seen) >= _MAX_NAMES:
                    raise _TooComplex
                seen.add(key)

    def start(self, name: str, attrs: dict[str, str]) -> None:
        depth = self.depth = self.depth + 1
        if depth > _MAX_DEPTH:
            raise _TooComplex
        if attrs:
            self._check_attrs(attrs)
        local = self.names.get(name) or self._local(name)
        entry_depth = self.entry_depth
        if entry_depth:
            if depth == entry_depth + 1:
                role = self.fields.get(local)
                if role == "href":
                    self._atom_link(attrs)
                elif role is not None:
                    self.field = role
                    self.buf.clear()
        elif depth == 1:
            self._root(name, local)
        elif local in self.entries:
            self.entry_depth = depth
            self.cur = {}
            self.buf.clear()

    def end(self, _name: str) -> None:
        depth = self.depth
        self.depth = depth - 1
        if depth == self.entry_depth:
            self.entry_depth = 0
            self.add(self.pages, self.cur, resolve=True)
            if self.seen >= self.max_urls:
                self._count_only()
        elif self.field is not None and depth == self.entry_depth + 1:
            self.cur.setdefault(self.field, "".join(self.buf))
            self.field = None

    def _atom_link(self, attrs: dict[str, str]) -> None:
        href = attrs.get("href")
        rel = attrs.get("rel", "alternate").strip().lower()
        if href is not None and rel in ("alternate", "") and "loc" not in self.cur:
            self.cur["loc"] = href

    # -- expat callbacks: over the limit (count only) -------------------------

    def count_start(self, name: str, attrs: dict[str, str]) -> None:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _TooComplex
        if attrs:
            self._check_attrs(attrs)
        if name not in self.names:
            self._local(name)

    def count_end(self, name: str) -> None:
        self.depth -= 1
        if self.names.get(name) in self.entries:
            self.skipped += 1
            self.resume = self.parser.CurrentByteIndex
            self.fail(TOO_MANY_URLS)

    def _count_only(self) -> None:
        parser = self.parser
        parser.StartElementHandler = self.count_start
        parser.EndElementHandler = self.count_end
        parser.CharacterDataHandler = None

    def _root(self, name: str, local: str) -> None:
        """Decide the document kind from the root element; switch to its callbacks."""
        self.kind = local
        if local in ("urlset", "sitemapindex"):
            self.prefix = name.rpartition(":")[0]
            self.entries = {"url": self.pages, "sitemap": self.children}
            self.parser.StartElementHandler = self.sitemap_start
            self.parser.EndElementHandler = self.sitemap_end
        elif local in ("rss", "rdf"):
            self.feed = True
            self.fields = _RSS_FIELDS
            self.entries = {"item": self.pages}
        elif local == "feed":
            self.feed = True
            self.fields = _ATOM_FIELDS
            self.entries = {"entry": self.pages}
        else:
            raise _NotSitemap

    # -- drivers -------------------------------------------------------------

    def parse_xml(self, data: bytes) -> None:
        parser = self.parser
        parser.buffer_text = True
        parser.buffer_size = 1 << 16
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.EntityDeclHandler = _refuse
        parser.UnparsedEntityDeclHandler = _refuse
        parser.ExternalEntityRefHandler = _refuse
        parser.StartElementHandler = self.start
        parser.EndElementHandler = self.end
        parser.CharacterDataHandler = self.buf.append
        crowded = _MANY_ATTRS(data)
        if crowded is not None:  # parse up to it: entries before it are still good
            self.fail(TOO_COMPLEX)
            data = data[: crowded.start()]
        try:
            parser.Parse(data, True)
        except _Refused:
            self.fail(ENTITIES_REFUSED)
        except _NotSitemap:
            self.fail(NOT_A_SITEMAP)
        except _TooComplex:
            self.fail(TOO_COMPLEX)
        except (LookupError, ValueError):  # an XML declaration naming an encoding expat lacks
            self.fail(MALFORMED_XML)
        except expat.ExpatError as exc:
            if self.kind is None:
                self.fail(NOT_A_SITEMAP)
                return
            self.fail(TRUNCATED_XML if exc.code in _TRUNCATION_CODES else MALFORMED_XML)
            if not self.feed:  # sitemap: rescan from the last entry expat finished
                self.salvage(data, self.resume)

    def salvage(self, data: bytes, pos: int) -> None:
        """Recover ``<url>``/``<sitemap>`` entries after a well-formedness error; linear time."""
        open_at = -1
        open_key = (b"", b"")
        for tag in _SALVAGE_ENTRY.finditer(data, pos):
            closing, prefix, name = tag.groups()
            key = (prefix.lower(), name.lower())
            if not closing:
                open_at = -1 if tag.group().endswith(b"/>") else tag.end()
                open_key = key
            elif open_at >= 0 and key == open_key:
                if self.seen < self.max_urls:
                    self._salvage_entry(data[open_at : tag.start()], key[0], key[1])
                else:  # over the limit: count only, as count_end does
                    self.skipped += 1
                    self.fail(TOO_MANY_URLS)
                open_at = -1

    def _salvage_entry(self, block: bytes, prefix: bytes, name: bytes) -> None:
        cur: dict[str, str] = {}
        for field in _SALVAGE_FIELD.finditer(block):
            if field.group(1).lower() == prefix:
                cur.setdefault(field.group(2).lower().decode(), _salvage_text(field.group(3)))
        self.add(self.pages if name == b"url" else self.children, cur, resolve=False)

    def parse_text(self, data: bytes) -> None:
        """One URL per line (Google's text sitemap); UTF-8, undecodable lines skipped."""
        if b"\x00" in data[:4096]:  # binary, or UTF-16 text (sitemaps must be UTF-8)
            self.fail(NOT_A_SITEMAP)
            return
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = _URL_LINE.finditer(data)
        found = False
        for line in lines:
            found = True
            if self.seen >= self.max_urls:  # the rest are only counted
                self.skipped += 1 + sum(1 for _ in lines)
                self.fail(TOO_MANY_URLS)
                break
            loc = line.group(1).decode("utf-8", "surrogateescape")
            self.add(self.pages, {"loc": loc}, resolve=False)
        if not found:
            self.fail(NOT_A_SITEMAP)
