"""A local test web of duplicates: every page under ~10 URLs, pages that change on a fake clock.

For continuous crawling (``fingerprint``, ``duprules``, ``revisit``): like ``testweb.TestWeb``
it serves virtual hosts by Host header on 127.0.0.1 (``--resolve "*.dup:PORT:127.0.0.1"``),
deterministic from ``seed``; ``fetch(url)`` answers without HTTP for offline simulation
(``bench/dedup.py``) and ``locate(url)`` is the ground truth: which page a URL really is.

Sites ``{word}{i}.dup`` answer on the bare host and on ``www.``; three server kinds by
``i % 3`` decide which spellings are the same page:

==  =======  ================  ==============  ==============================================
 i  kind     index file        path case       ``sort=`` / special pages
==  =======  ================  ==============  ==============================================
 0  iis      ``default.aspx``  insensitive     ignored
 1  apache   ``index.html``    sensitive       ``/news/?sort=title`` is a different page;
                                               on articles it reorders the comments
                                               (a near-duplicate); ``/tags/Mercury/`` and
                                               ``/tags/mercury/`` are different pages
 2  php      ``index.php``     sensitive       ignored
==  =======  ================  ==============  ==============================================

Pages: ``/`` (home), ``/news/`` with ``?page=1..3`` (``page=1`` is ``/news/``), and
``/articles/{Title-Words}-{k}/``. Every link picks one spelling of its target (seeded, so a
page's bytes do not depend on which spelling fetched it): canonical, ``www.``, the index file,
a case variant (case-insensitive sites), ``utm_source``/``utm_medium``, ``ref``, ``sort``, a
session-like ``vid`` and combinations. A page fetched with ``?vid=X`` carries ``vid=X`` on all
its root-relative links (PHP ``trans_sid`` style), so sessions spread like on real sites. Query
parameters a site does not use are ignored, as real servers do.

Time: ``clock`` (default ``time.time``; ``FakeClock`` for tests) drives content. Home and
news pages change every day; articles are ``static``, ``counter`` (only a reader count
changes daily: a near-duplicate change), ``daily`` or ``weekly`` (``change_kind``). Responses
carry ``ETag`` and ``Last-Modified`` (the start of the current version) and answer 304 to
matching ``If-None-Match`` / ``If-Modified-Since``. ``/sitemap.xml`` lists canonical URLs with
``<lastmod>`` and ``<changefreq>``; robots.txt allows everything and names the sitemap.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import html
import random
import sys
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime
from typing import Literal

from aiohttp import web
from loopbackweb import LoopbackWeb

from politecrawl.demo.accesslog import AccessEntry
from politecrawl.demo.web import serve_until_signal

__all__ = ["EPOCH", "ChangeKind", "DupWeb", "FakeClock", "PageRef", "SiteKind", "main"]

EPOCH = 1_704_067_200.0  # 2024-01-01T00:00:00Z: day 0 of the fake calendar
DAY = 86400.0
SiteKind = Literal["iis", "apache", "php"]
ChangeKind = Literal["static", "counter", "daily", "weekly"]

_KINDS: tuple[SiteKind, ...] = ("iis", "apache", "php")
_INDEX_FILE: dict[SiteKind, str] = {"iis": "default.aspx", "apache": "index.html",
                                    "php": "index.php"}  # fmt: skip
_NEWS_PAGES = 3
_TAGS = ("Mercury", "mercury", "Java", "java")  # apache: case-only different pages
_HTML = "text/html; charset=utf-8"

_SITE_WORDS_TEXT = (
    "harbor lantern meadow orchard pebble quarry ribbon saddle timber valley willow anchor "
    "beacon canyon delta ember falcon glacier hollow island jasmine kettle ledger marble"
)
_SITE_WORDS = _SITE_WORDS_TEXT.split()
_NOUNS_TEXT = (
    "harbour lantern meadow orchard river bridge market garden village tower ferry station "
    "castle chapel mill quarry forest valley island beacon library museum theatre bakery "
    "school square fountain pier lighthouse railway canal orchard barn vineyard harbourside "
    "cathedral allotment reservoir footpath marina boathouse gallery bandstand windmill"
)
_NOUNS = _NOUNS_TEXT.split()
_ADJS_TEXT = (
    "old quiet busy narrow ancient bright windy green hidden famous small restored grand "
    "crooked sunny misty northern southern lively empty historic modest colourful"
)
_ADJS = _ADJS_TEXT.split()
_VERBS_TEXT = (
    "opened closed reopened visited restored painted rebuilt celebrated explored mapped "
    "photographed renamed extended repaired surveyed"
)
_VERBS = _VERBS_TEXT.split()
_PEOPLE_TEXT = "Anna Ben Clara Dev Erin Femi Gita Hugo Ines Jon Kai Lena Milo Nora Omar Pia"
_PEOPLE = _PEOPLE_TEXT.split()
_WHEN = ("spring", "summer", "autumn", "winter", "month", "week", "year")
_TEMPLATES = (
    "The {a} {n} was {v} by local volunteers last {w}.",
    "Visitors to the {n} often walk on to the {a} {m}.",
    "According to {p}, the {n} has not looked this {a} in years.",
    "A new guide to the {n} and the {m} is due out next {w}.",
    "Residents say the {a} {n} deserves more attention than it gets.",
    "{p} {v} the {n} with friends and wrote about the {a} {m} afterwards.",
    "There is a {a} path from the {n} down to the {m}.",
    "Plans for the {n} were {v} at a meeting in the {a} {m}.",
    "Nobody remembers who first {v} the {n}, but {p} has a theory.",
    "On a {a} morning the {n} and the {m} are at their best.",
    "The council {v} the {m} but left the {a} {n} as it was.",
    "{p} says the {n} is the most {a} place in the whole district.",
)
_COMMENTS = (
    "Great piece, thank you", "I walked there last {w} and loved it",
    "Does anyone know when the {n} opens", "My grandmother grew up near the {n}",
    "Lovely photos of the {n}", "The {m} is worth a visit too",
    "Please write more about the {a} {n}", "We should organise a trip to the {m}",
)  # fmt: skip
_MONTHS_TEXT = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec"
_MONTHS = _MONTHS_TEXT.split()
_WEEKDAYS_TEXT = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday"
_WEEKDAYS = _WEEKDAYS_TEXT.split()
# spelling -> weight; the first is the canonical form
_VARIANTS: tuple[tuple[str, float], ...] = (
    ("canonical", 0.34), ("www", 0.10), ("index", 0.08), ("case", 0.08), ("utm_feed", 0.08),
    ("utm_mail", 0.06), ("ref", 0.06), ("vid", 0.05), ("sort", 0.07), ("combo", 0.08),
)  # fmt: skip
_VARIANT_NAMES = tuple(v for v, _ in _VARIANTS)
_VARIANT_WEIGHTS = tuple(w for _, w in _VARIANTS)
_MAX_CACHED = 20_000


class FakeClock:
    """A clock that only moves when told to: ``DupWeb(clock=FakeClock())``."""

    def __init__(self, start: float = EPOCH) -> None:
        self.now = float(start)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float = 0.0, *, days: float = 0.0) -> float:
        """Move forward; returns the new time."""
        self.now += seconds + days * DAY
        return self.now


@dataclass(frozen=True, slots=True)
class PageRef:
    """One page (ground truth): site index and page id (``home``, ``news/2``,
    ``news/2/title``, ``article/7``, ``tag/Mercury``)."""

    site: int
    page: str


@dataclass(frozen=True, slots=True)
class _Request:
    ref: PageRef
    sort_title: bool  # apache articles: comments in the other order
    vid: str | None


@dataclass(frozen=True, slots=True)
class _Site:
    index: int
    name: str  # bare host
    title: str
    kind: SiteKind
    articles: tuple[str, ...]  # title of article k at k - 1
    blurb: str


def _slug(title: str) -> str:
    return "-".join(title.split())


class DupWeb(LoopbackWeb):
    """Sites whose pages answer under many URLs and change on a (fake) clock."""

    __test__ = False

    def __init__(
        self,
        n_sites: int = 12,
        articles_per_site: int = 20,
        seed: int = 1,
        *,
        suffix: str = "dup",
        clock: Callable[[], float] = time.time,
        port: int = 0,
        latency_s: float = 0.0,
    ) -> None:
        if n_sites < 1 or articles_per_site < 2:
            raise ValueError("need n_sites >= 1 and articles_per_site >= 2")
        self.n_sites, self.articles_per_site, self.seed = n_sites, articles_per_site, seed
        self.suffix, self.clock, self.port, self.latency_s = suffix, clock, port, latency_s
        self.access_log: list[AccessEntry] = []
        self._cache: dict[tuple[PageRef, bool, int], str] = {}
        self.sites = [self._make_site(i) for i in range(n_sites)]
        self._by_host = {s.name: s.index for s in self.sites}

    def _make_site(self, i: int) -> _Site:
        rng = random.Random(f"dupweb/{self.seed}/site/{i}")
        word = _SITE_WORDS[i % len(_SITE_WORDS)]
        titles: list[str] = []
        used: set[str] = set()
        while len(titles) < self.articles_per_site:
            t = f"{rng.choice(_ADJS).title()} {rng.choice(_NOUNS).title()} {rng.choice(_NOUNS)}"
            if t.lower() not in used:
                used.add(t.lower())
                titles.append(t)
        title = f"The {word.title()} {rng.choice(('Gazette', 'Journal', 'Notes', 'Post'))}"
        blurb = (
            f"{title} is an independent local site about the {rng.choice(_NOUNS)}s and "
            f"{rng.choice(_NOUNS)}s of the {rng.choice(_ADJS)} {word} district, written by "
            f"{rng.choice(_PEOPLE)} and {rng.choice(_PEOPLE)} since {rng.randint(1998, 2015)}."
        )
        return _Site(i, f"{word}{i}.{self.suffix}", title, _KINDS[i % 3], tuple(titles), blurb)

    # -- addresses -----------------------------------------------------------------------------

    def url(self, host: str, path: str = "/") -> str:
        """``http://HOST:PORT/path``."""
        return f"http://{host}:{self.port}{path}"

    def resolve_arg(self) -> str:
        """The curl-style ``--resolve`` override: ``*.SUFFIX:PORT:127.0.0.1``."""
        return f"*.{self.suffix}:{self.port}:127.0.0.1"

    def seed_urls(self, n: int | None = None) -> list[str]:
        """Home pages of the first ``n`` sites (all by default), bare hosts."""
        return [self.url(s.name) for s in self.sites[: self.n_sites if n is None else n]]

    def pages(self) -> list[PageRef]:
        """Every distinct page of the web."""
        out: list[PageRef] = []
        for s in self.sites:
            out.append(PageRef(s.index, "home"))
            for n in range(1, _NEWS_PAGES + 1):
                out.append(PageRef(s.index, f"news/{n}"))
                if s.kind == "apache":
                    out.append(PageRef(s.index, f"news/{n}/title"))
            out += [PageRef(s.index, f"article/{k}") for k in range(1, len(s.articles) + 1)]
            if s.kind == "apache":
                out += [PageRef(s.index, f"tag/{t}") for t in _TAGS]
        return out

    def canonical_path(self, ref: PageRef) -> str:
        """The path (and query) of a page's canonical spelling."""
        site = self.sites[ref.site]
        kind, _, rest = ref.page.partition("/")
        if kind == "home":
            return "/"
        if kind == "news":
            num, _, sort = rest.partition("/")
            query = [] if num == "1" else [f"page={num}"]
            if sort:
                query.append("sort=title")
            return "/news/" + ("?" + "&".join(query) if query else "")
        if kind == "article":
            k = int(rest)
            return f"/articles/{_slug(site.articles[k - 1])}-{k}/"
        return f"/tags/{rest}/"

    def canonical_url(self, ref: PageRef) -> str:
        return self.url(self.sites[ref.site].name, self.canonical_path(ref))

    # -- ground truth --------------------------------------------------------------------------

    def locate(self, url: str) -> PageRef | None:
        """The page ``url`` really is (any spelling, any port), or None for a 404."""
        req = self._parse(url)
        return None if req is None else req.ref

    def _parse(self, url: str) -> _Request | None:
        rest = url.split("://", 1)[-1].partition("#")[0]
        slash = min((p for p in (rest.find("/"), rest.find("?")) if p >= 0), default=len(rest))
        host = rest[:slash].partition(":")[0].lower().rstrip(".")
        path, _, query = rest[slash:].partition("?")
        return self._parse_parts(host, path or "/", query)

    def _parse_parts(self, host: str, path: str, query: str) -> _Request | None:
        idx = self._by_host.get(host[4:] if host.startswith("www.") else host)
        if idx is None:
            return None
        site = self.sites[idx]
        insensitive = site.kind == "iis"
        if insensitive:
            path = path.lower()
        index_file = _INDEX_FILE[site.kind]
        if path.endswith("/" + index_file):
            path = path[: -len(index_file)]
        params: dict[str, str] = {}
        for item in query.split("&"):
            name, _, value = item.partition("=")
            params.setdefault(name, value)
        vid = params.get("vid") or None
        sort_title = site.kind == "apache" and params.get("sort") == "title"
        if path == "/":
            return _Request(PageRef(idx, "home"), False, vid)
        if path == "/news/":
            num = params.get("page", "1")
            if num not in {str(n) for n in range(1, _NEWS_PAGES + 1)}:
                return None
            page = f"news/{num}/title" if sort_title else f"news/{num}"
            return _Request(PageRef(idx, page), False, vid)
        if path.startswith("/articles/") and path.endswith("/"):
            slug, _, num = path[10:-1].rpartition("-")
            if not num.isdigit() or not 1 <= int(num) <= len(site.articles):
                return None
            k = int(num)
            want = _slug(site.articles[k - 1])
            if (slug.lower() if insensitive else slug) != (want.lower() if insensitive else want):
                return None
            return _Request(PageRef(idx, f"article/{k}"), sort_title, vid)
        if site.kind == "apache" and path.startswith("/tags/") and path[6:-1] in _TAGS:
            return _Request(PageRef(idx, f"tag/{path[6:-1]}"), False, vid)
        return None

    def change_kind(self, ref: PageRef) -> ChangeKind:
        """How a page changes with the clock (home and news: daily)."""
        kind = ref.page.partition("/")[0]
        if kind in ("home", "news"):
            return "daily"
        if kind == "tag":
            return "static"
        r = random.Random(f"dupweb/{self.seed}/{ref.site}/{ref.page}/change").random()
        return "static" if r < 0.4 else "counter" if r < 0.6 else "daily" if r < 0.8 else "weekly"

    def version(self, ref: PageRef, now: float | None = None) -> tuple[int, float]:
        """(content version, when it started) of a page at ``now`` (default: the clock).

        ``counter`` pages get a new version daily too (their bytes change), though only the
        reader count does.
        """
        t = self.clock() if now is None else now
        kind = self.change_kind(ref)
        if kind == "static":
            return 0, EPOCH - 30 * DAY
        period = 7 * DAY if kind == "weekly" else DAY
        v = max(0, int((t - EPOCH) // period))
        return v, EPOCH + v * period

    # -- content -------------------------------------------------------------------------------

    def fetch(
        self, url: str, headers: Mapping[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) that the server would send for a GET of ``url``."""
        rest = url.split("://", 1)[-1].partition("#")[0]
        slash = min((p for p in (rest.find("/"), rest.find("?")) if p >= 0), default=len(rest))
        host = rest[:slash].partition(":")[0].lower().rstrip(".")
        path, _, query = rest[slash:].partition("?")
        return self._respond(host, path or "/", query, headers or {})

    def page(self, url: str) -> bytes | None:
        """The HTML of ``url`` now, or None when it is not a page (404)."""
        status, headers, body = self.fetch(url)
        return body if status == 200 and headers["Content-Type"] == _HTML else None

    def _respond(
        self, host: str, path: str, query: str, req_headers: Mapping[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        idx = self._by_host.get(host[4:] if host.startswith("www.") else host)
        if idx is None:
            return 404, {"Content-Type": "text/plain"}, b"unknown host\n"
        if path == "/robots.txt":
            robots = f"User-agent: *\nDisallow:\nSitemap: {self.url(host, '/sitemap.xml')}\n"
            return 200, {"Content-Type": "text/plain; charset=utf-8"}, robots.encode()
        if path == "/sitemap.xml":
            return 200, {"Content-Type": "application/xml"}, self._sitemap(idx, host)
        req = self._parse_parts(host, path, query)
        if req is None:
            return 404, {"Content-Type": _HTML}, b"<html><body>not found</body></html>\n"
        version, since = self.version(req.ref)
        body = self._html(req, version).encode("utf-8")
        etag = f'"{zlib.crc32(body):08x}-{len(body):x}"'
        last_modified = format_datetime(datetime.fromtimestamp(since, UTC), usegmt=True)
        headers = {"Content-Type": _HTML, "ETag": etag, "Last-Modified": last_modified}
        if _not_modified(req_headers, etag, since):
            return 304, {"ETag": etag, "Last-Modified": last_modified}, b""
        return 200, headers, body

    def _sitemap(self, idx: int, host: str) -> bytes:
        rows: list[str] = []
        for ref in self.pages():
            if ref.site != idx:
                continue
            _, since = self.version(ref)
            lastmod = datetime.fromtimestamp(since, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            freq = "daily" if self.change_kind(ref) != "static" else "monthly"
            loc = html.escape(self.url(host, self.canonical_path(ref)))
            rows.append(f"<url><loc>{loc}</loc><lastmod>{lastmod}</lastmod>"
                        f"<changefreq>{freq}</changefreq></url>")  # fmt: skip
        xml = ('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns='
               '"http://www.sitemaps.org/schemas/sitemap/0.9">\n' + "\n".join(rows)
               + "\n</urlset>\n")  # fmt: skip
        return xml.encode()

    def _html(self, req: _Request, version: int) -> str:
        key = (req.ref, req.sort_title, version)
        text = self._cache.get(key)
        if text is None:
            if len(self._cache) >= _MAX_CACHED:
                self._cache.clear()
            text = self._cache[key] = self._render(req.ref, req.sort_title, version)
        if req.vid is not None:  # the session rides on every root-relative link
            vid = html.escape(req.vid)
            text = text.replace('?@@"', f'?vid={vid}"').replace('&amp;@@"', f'&amp;vid={vid}"')
        return text.replace('?@@"', '"').replace('&amp;@@"', '"')

    def _sentence(self, rng: random.Random) -> str:
        n, m = rng.sample(_NOUNS, 2)
        template = rng.choice(_TEMPLATES)
        return template.format(
            a=rng.choice(_ADJS), n=n, m=m, v=rng.choice(_VERBS), p=rng.choice(_PEOPLE),
            w=rng.choice(_WHEN),
        )  # fmt: skip

    def _paragraphs(self, rng: random.Random, count: int) -> list[str]:
        return [" ".join(self._sentence(rng) for _ in range(rng.randint(4, 6)))
                for _ in range(count)]  # fmt: skip

    def _href(self, rng: random.Random, ref: PageRef) -> str:
        """One spelling of a link to ``ref``, HTML-escaped; a root-relative one ends in a
        marker (``?@@`` / ``&amp;@@``) where the page's session id goes, if it has one."""
        site = self.sites[ref.site]
        base, _, query = self.canonical_path(ref).partition("?")
        params = [query] if query else []
        variant = rng.choices(_VARIANT_NAMES, _VARIANT_WEIGHTS)[0]
        host = ""
        if variant in ("www", "combo"):
            host = f"http://www.{site.name}:{self.port}"
        if variant in ("index", "combo"):
            base += _INDEX_FILE[site.kind]
        if variant == "case":
            if site.kind == "iis":
                base = base.lower() if rng.random() < 0.5 else base.upper()
                if base == "/":
                    base = "/Default.aspx"
            elif ref.page == "news/1":
                params.append("page=1")  # the same page spelled with its default
        if variant == "utm_feed":
            params += ["utm_source=feed", "utm_medium=rss"]
        elif variant in ("utm_mail", "combo"):
            params.append("utm_source=newsletter")
        elif variant == "ref":
            params.append(f"ref={rng.choice(('sidebar', 'footer', 'related'))}")
        elif variant == "vid":
            params.append(f"vid={rng.getrandbits(40):010x}")
        elif variant == "sort":
            params.append(f"sort={rng.choice(('date', 'title'))}")
        href = html.escape(host + base + ("?" + "&".join(params) if params else ""))
        if host or variant == "vid":
            return href
        return href + ("&amp;@@" if params else "?@@")

    def _link(self, rng: random.Random, ref: PageRef, text: str) -> str:
        return f'<a href="{self._href(rng, ref)}">{html.escape(text)}</a>'

    def _article_link(self, rng: random.Random, site: _Site, k: int) -> str:
        return self._link(rng, PageRef(site.index, f"article/{k}"), site.articles[k - 1])

    def _render(self, ref: PageRef, sort_title: bool, version: int) -> str:
        site = self.sites[ref.site]
        kind, _, rest = ref.page.partition("/")
        # links and text depend on the page and its version only, never on the spelling; a
        # "counter" page's new versions differ in the count alone
        text_version = 0 if self.change_kind(ref) == "counter" else version
        rng = random.Random(f"dupweb/{self.seed}/{ref.site}/{ref.page}/{text_version}/links")
        home = self._link(rng, PageRef(site.index, "home"), "Home")
        news = self._link(rng, PageRef(site.index, "news/1"), "News")
        if kind == "home":
            title, parts = site.title, self._home(rng, site, version)
        elif kind == "news":
            title = f"News from {site.title}, page {rest.partition('/')[0]}"
            parts = self._news(rng, site, rest, version)
        elif kind == "article":
            title = site.articles[int(rest) - 1]
            parts = self._article(rng, site, int(rest), sort_title, version)
        else:  # tag page (apache): the two spellings list different articles
            title = f"Articles tagged {rest}"
            tag_rng = random.Random(f"dupweb/{self.seed}/{ref.site}/tag/{rest}")
            chosen = tag_rng.sample(range(1, len(site.articles) + 1), min(len(site.articles), 5))
            items = [f"<li>{self._article_link(rng, site, j)} "
                     f"{html.escape(self._sentence(tag_rng))}</li>" for j in chosen]  # fmt: skip
            parts = [f"<p>{html.escape(self._sentence(tag_rng))}</p><ul>{''.join(items)}</ul>"]
        parts.append(f"<p>{html.escape(site.blurb)}</p>")
        t = html.escape(title)
        return (
            f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{t}</title>'
            f"</head><body><nav>{home} | {news}</nav>\n<h1>{t}</h1>\n"
            + "\n".join(parts)
            + f"\n<footer>&copy; {html.escape(site.title)}</footer></body></html>\n"
        )

    def _home(self, rng: random.Random, site: _Site, version: int) -> list[str]:
        when = datetime.fromtimestamp(EPOCH + version * DAY, UTC)
        today = f"{_WEEKDAYS[when.weekday()]} {when.day} {_MONTHS[when.month - 1]} {when.year}"
        n_art = len(site.articles)
        latest = [(version * 3 + j) % n_art + 1 for j in range(min(6, n_art))]
        items = "".join(f"<li>{self._article_link(rng, site, k)}</li>" for k in latest)
        news_rng = random.Random(f"dupweb/{self.seed}/{site.index}/home/{version}")
        return [
            f"<p>Today is {today}.</p>",
            f"<h2>Latest</h2><ul>{items}</ul>",
            f"<p>{html.escape(self._sentence(news_rng))}</p>",
        ]

    def _news(self, rng: random.Random, site: _Site, rest: str, version: int) -> list[str]:
        num, _, sort = rest.partition("/")
        n_art = len(site.articles)
        order = list(range(1, n_art + 1))
        random.Random(f"dupweb/{self.seed}/{site.index}/news/{version}/{sort}").shuffle(order)
        per = max(1, n_art // _NEWS_PAGES)
        items: list[str] = []
        for k in order[(int(num) - 1) * per : int(num) * per]:
            teaser = self._sentence(random.Random(f"dupweb/{self.seed}/{site.index}/{k}/teaser"))
            items.append(f"<li>{self._article_link(rng, site, k)} {html.escape(teaser)}</li>")
        pager = [self._link(rng, PageRef(site.index, f"news/{n}"), f"page {n}")
                 for n in range(1, _NEWS_PAGES + 1) if str(n) != num]  # fmt: skip
        return [f"<ul>{''.join(items)}</ul>", f"<p>More news: {', '.join(pager)}</p>"]

    def _article(
        self, rng: random.Random, site: _Site, k: int, sort_title: bool, version: int
    ) -> list[str]:
        ref = PageRef(site.index, f"article/{k}")
        text_rng = random.Random(f"dupweb/{self.seed}/{site.index}/{k}/text")
        published = datetime.fromtimestamp(EPOCH - text_rng.randint(5, 900) * DAY, UTC)
        readers = 100 + 37 * version + text_rng.randint(0, 5000)
        paras = self._paragraphs(text_rng, text_rng.randint(3, 5))
        if self.change_kind(ref) in ("daily", "weekly") and version > 0:
            update_rng = random.Random(f"dupweb/{self.seed}/{site.index}/{k}/v{version}")
            update = " ".join(self._sentence(update_rng) for _ in range(3))
            paras.insert(1, "Update: " + update)
            paras[-1] = " ".join(self._sentence(update_rng) for _ in range(4))
        n_art = len(site.articles)
        others = [j for j in rng.sample(range(1, n_art + 1), min(7, n_art)) if j != k][:6]
        links = [self._article_link(rng, site, j) for j in others]
        parts = [
            f"<p>Published {published.day} {_MONTHS[published.month - 1]} {published.year}"
            f" · {readers:,} readers</p>"
        ]
        for i, para in enumerate(paras):
            see = f" See also {links[i]}." if i < len(links) else ""
            parts.append(f"<p>{html.escape(para)}{see}</p>")
        if len(links) > len(paras):
            related = "".join(f"<li>{x}</li>" for x in links[len(paras) :])
            parts.append(f"<h2>Related</h2><ul>{related}</ul>")
        if site.kind == "apache":
            tag = _TAGS[k % len(_TAGS)]
            parts.append(f"<p>Tagged {self._link(rng, PageRef(site.index, f'tag/{tag}'), tag)}</p>")
        comments: list[str] = []
        for _ in range(text_rng.randint(3, 5)):
            line = text_rng.choice(_COMMENTS).format(
                a=text_rng.choice(_ADJS), n=text_rng.choice(_NOUNS), m=text_rng.choice(_NOUNS),
                w=text_rng.choice(_WHEN),
            )  # fmt: skip
            comments.append(f"<li>{html.escape(line)}. ({text_rng.choice(_PEOPLE)})</li>")
        if sort_title:
            comments.reverse()
        parts.append(f"<h2>Comments</h2><ol>{''.join(comments)}</ol>")
        return parts

    # -- serving -------------------------------------------------------------------------------

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        start = time.time()
        host = request.headers.get("Host", "").lower().partition(":")[0].rstrip(".")
        status = 0
        try:
            if self.latency_s > 0:
                await asyncio.sleep(self.latency_s)
            status, headers, body = self._respond(
                host, request.path, request.query_string, request.headers
            )
            return web.Response(status=status, headers=headers, body=body or None)
        finally:
            self.access_log.append(AccessEntry(
                host, request.raw_path, request.method, status, start, time.time(),
                request.headers.get("User-Agent", ""), dict(request.headers),
            ))  # fmt: skip


def _not_modified(req_headers: Mapping[str, str], etag: str, since: float) -> bool:
    """Whether a conditional request's validators still match."""
    inm = req_headers.get("If-None-Match")
    if inm is not None:
        tags = {t.strip().removeprefix("W/") for t in inm.split(",")}
        return "*" in tags or etag in tags
    ims = req_headers.get("If-Modified-Since")
    if ims is not None:
        try:
            return parsedate_to_datetime(ims).timestamp() >= since
        except (TypeError, ValueError, IndexError):
            return False
    return False


async def _serve(args: argparse.Namespace) -> None:
    dw = DupWeb(args.sites, args.articles, args.seed, port=args.port, latency_s=args.latency)
    await serve_until_signal(
        dw,
        lambda: [
            f"serving {len(dw.sites)} sites ({len(dw.pages())} pages) on 127.0.0.1:{dw.port}",
            f"--resolve '{dw.resolve_arg()}'; seeds: {' '.join(dw.seed_urls(3))} ...",
        ],
    )


def main(argv: list[str] | None = None) -> int:
    """``python tests/dupweb.py``: serve the duplicate web until SIGINT/SIGTERM."""
    p = argparse.ArgumentParser(prog="python tests/dupweb.py")
    p.add_argument("--sites", type=int, default=12)
    p.add_argument("--articles", type=int, default=20, help="articles per site")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--latency", type=float, default=0.0, help="seconds before each response")
    args = p.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
