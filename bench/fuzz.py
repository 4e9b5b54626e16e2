"""Fuzz every parser that reads what a server or a user sends: no crash, bounded time per input.

    python bench/fuzz.py [--inputs 100000] [--only NAME[,NAME...]] [--seed N]
                         [--engine random|atheris|both] [--no-save] [--json FILE]
    python bench/fuzz.py --write-regressions     # (re)write the bug-* reproducers

Engine ``random`` (default): a seeded, structure-aware generator per target (robots.txt lines,
URLs, HTML, charsets, headers, compressed streams, sitemaps) plus a byte-level mutator (bit
flips, token insertion from a per-target dictionary, chunk duplication and long repetition,
splicing, truncation) fed back with every input that showed a new outcome. About 60% of the
inputs come straight from the grammar, 30% are mutated, the rest are mutated corpus entries or
raw random bytes; one in 400 is blown up to 64-512 KiB by repeating a chunk, to find costs
that grow faster than the input (each slow input is re-timed at half its size: x2 time for x2
size is linear, x4 quadratic). Engine ``atheris`` (``pip install atheris``, a bench-only
tool): libFuzzer, coverage-guided, the politecrawl modules instrumented, one child process per
target, seeded with the grammar's output and the corpus; the same harness counts and times.

Every input is bytes, so it can be saved and replayed: multi-argument targets split it on
``SEP`` (see ``fields``); strings are the input's UTF-8 (lone surrogates allowed), or its
``surrogateescape`` decoding when it is not valid UTF-8.

Per target it prints: inputs run, uncaught exceptions (must be 0; only the documented
exception types are allowed), property violations (canonicalize not idempotent, the link cap
not bounding the work, a Python-only codec taken for a charset...), hangs (an input still
running after 20 s is interrupted), the max and p99 time per input, inputs/s, and the distinct
outcome classes seen. Inputs slower than 1 s are flagged. Into ``tests/fuzz_corpus/<target>/``
it saves the smallest input of each failure class (``crash-*``), inputs of at most 64 KiB
slower than 100 ms (``slow-*``: bigger ones are slow because of their size, and are only
reported), and the first small input of each new outcome class (``new-*``); files over 16 KiB
are stored gzip-compressed. ``tests/test_fuzz_corpus.py`` replays them all, with the bugs not
fixed yet as strict xfails.

Exit status: 0 when no target had an uncaught exception, a property violation or a hang.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import gzip
import hashlib
import importlib.util
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, ClassVar

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fuzz_corpus"
SEP = b"\x1e\x1d"
"""Field separator inside one input (multi-argument targets)."""

SLOW_SAVE_S = 0.1  # inputs slower than this are saved
SLOW_FLAG_S = 1.0  # ...and slower than this are flagged in the report
HANG_S = 20.0  # the watchdog gives up on an input after this long (counted as a failure)
MAX_NEW_PER_TARGET = 30  # "new outcome" inputs saved per target
MAX_NEW_BYTES = 2048  # ...and only small ones
MAX_SLOW_PER_TARGET = 4
MAX_SLOW_BYTES = 64 * 1024  # a slow input this small is slow for a reason other than its size
GZIP_ABOVE = 16 * 1024
TESTBOT = "testbot"
NOT_WEB_CODECS = frozenset(
    {"unicode-escape", "raw-unicode-escape", "punycode", "idna", "utf-7", "undefined"}
)
"""Python codecs no browser decodes a page with: they interpret escapes or are not charsets."""


# -- inputs <-> arguments --------------------------------------------------------------------


def fields(data: bytes, n: int) -> list[bytes]:
    """The first ``n`` fields of an input (missing ones are empty)."""
    parts = data.split(SEP, n - 1)
    return parts + [b""] * (n - len(parts))


def pack(*parts: bytes | str) -> bytes:
    return SEP.join(p if isinstance(p, bytes) else enc(p) for p in parts)


def text(data: bytes) -> str:
    """Bytes to str without losing anything: UTF-8 (surrogates allowed) else surrogateescape."""
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return data.decode("utf-8", "surrogateescape")


def enc(s: str) -> bytes:
    return s.encode("utf-8", "surrogatepass")


class PropertyViolation(AssertionError):
    """The target returned, but broke one of its documented guarantees."""


def check(ok: bool, what: str) -> None:
    if not ok:
        raise PropertyViolation(what)


# -- targets ---------------------------------------------------------------------------------


@dataclass
class Target:
    """One function under test: ``run`` raises on a failure and returns an outcome class."""

    name: str
    run: Callable[[bytes], str]
    gen: Callable[[random.Random], bytes]
    tokens: list[bytes]
    allowed: str  # the documented exceptions, for the report
    seeds: list[bytes] = field(default_factory=list)


def load_targets() -> dict[str, Target]:
    """Import the modules under test (late: the atheris child instruments them first)."""
    from politecrawl.config import validate_user_agent
    from politecrawl.content import decoding as textdecode
    from politecrawl.content import directives as page_directives
    from politecrawl.content import parse as parse_module
    from politecrawl.content.parse import parse_page
    from politecrawl.content.sitemaps import read as sitemaps
    from politecrawl.content.sitemaps import result as sitemapresult
    from politecrawl.engine import outcome
    from politecrawl.errors import ConfigError, UrlError
    from politecrawl.net.coding import decompress
    from politecrawl.robots.rules import RobotsRules
    from politecrawl.urls.canonical import canonicalize, join

    def run_robots(data: bytes) -> str:
        body, ua, paths = fields(data, 3)
        rules = RobotsRules.parse(body)
        agent = text(ua)
        verdicts = []
        for p in paths.split(b"\n")[:8]:
            path = text(p)
            allowed = rules.is_allowed(agent, path)
            check(isinstance(allowed, bool), "is_allowed returned a non-bool")
            v = rules.decide("testbot/1.0 (+http://bot.example/info)", path)
            verdicts.append(f"{int(allowed)}{int(v.allowed)}{int(v.rule is None)}")
        check(rules.is_allowed(agent, "/robots.txt"), "/robots.txt disallowed")
        delay = rules.crawl_delay(agent)
        check(delay is None or (math.isfinite(delay) and delay >= 0), f"crawl delay {delay!r}")
        maps = rules.sitemaps
        check(all(isinstance(u, str) for u in maps), "sitemap not a str")
        bucket = "-" if delay is None else "0" if delay == 0 else "big" if delay > 1e6 else "d"
        return f"{bucket}|{min(len(maps), 2)}|{','.join(sorted(set(verdicts)))}"

    def run_canonicalize(data: bytes) -> str:
        url = text(data)
        try:
            c = canonicalize(url)
        except UrlError as exc:
            return "err:" + str(exc).split("'")[0][:30]
        check(isinstance(c, str) and c.startswith(("http://", "https://")), f"bad result {c!r}")
        check(c.isascii(), f"non-ASCII canonical URL {c!r}")
        check(not any(ch <= " " or ch == "\x7f" for ch in c), f"control/space in {c!r}")
        try:
            again = canonicalize(c)
        except UrlError as exc:
            raise PropertyViolation(f"canonical URL {c!r} refused: {exc}") from None
        check(again == c, f"not idempotent: {url!r} -> {c!r} -> {again!r}")
        port = c.split("/", 3)[2].rpartition("]")[2].rpartition(":")
        return f"ok:{c[:5]}:{'port' if port[1] else ''}:{'q' if '?' in c else ''}"

    def run_join(data: bytes) -> str:
        base, href = fields(data, 2)
        r = join(text(base), text(href))
        if r is None:
            return "none"
        check(isinstance(r, str), "join returned a non-str")
        try:
            again = canonicalize(r)
        except UrlError as exc:
            raise PropertyViolation(f"joined URL {r!r} refused by canonicalize: {exc}") from None
        check(again == r, f"joined URL not canonical: {r!r} -> {again!r}")
        return "ok:" + ("q" if "?" in r else "") + ("same" if r == text(base) else "")

    def counting_join(base: str, href: str) -> str | None:
        joins[0] += 1
        return join(base, href)

    joins = [0]

    def run_parse_page(data: bytes) -> str:
        body, url = fields(data, 2)
        joins[0] = 0
        parse_module.join = counting_join  # parse_page's joins, counted: the link cap bounds them
        try:
            page = parse_page(body, text(url) or "http://h.test/a/b.html", TESTBOT)
        finally:
            parse_module.join = join
        cap = 2 * parse_module._MAX_LINKS + 2
        check(joins[0] <= cap, f"link cap bypassed: {joins[0]} joins (> {cap})")
        check(len(page.links) <= 10_000, "link cap exceeded")
        check(len(page.title) <= 500, "title cap exceeded")
        d = page.directives
        n = len(page.links)
        return (
            f"{'t' if page.title else ''}|{n if n < 3 else 'many'}|"
            f"{int(d.noindex)}{int(d.nofollow)}"
            f"{int(d.noarchive)}|{'c' if page.canonical else ''}|"
            f"{'cut' if page.depth_cut_at is not None else ''}|"
            f"{'nf' if any(x.nofollow for x in page.links) else ''}"
        )

    def run_decode_html(data: bytes) -> str:
        ctype, body = fields(data, 2)
        header = None if not ctype else "" if ctype == b"\x00" else text(ctype)
        d = textdecode.decode_html(body, header)
        check(isinstance(d.text, str), "text not a str")
        check(d.source in ("header", "bom", "meta", "detected", "default"), f"source {d.source}")
        name = codecs.lookup(d.charset).name  # a real codec...
        check(name not in NOT_WEB_CODECS, f"Python-only codec {name!r} chosen")  # ...of the web
        return f"{d.charset}|{d.source}|{int(d.repaired)}"

    def run_retry_after(data: bytes) -> str:
        r = outcome.retry_after_s(text(data))
        check(r is None or (isinstance(r, float) and r >= 0), f"retry-after {r!r}")
        return "none" if r is None else "inf" if math.isinf(r) else "zero" if r == 0 else "s"

    def run_x_robots_tag(data: bytes) -> str:
        values = [text(v) for v in data.split(b"\n")[:128]]  # fetch keeps <= 128 headers
        d = page_directives.from_x_robots_tag(values, TESTBOT)
        return f"{int(d.noindex)}{int(d.nofollow)}{int(d.noarchive)}"

    def run_meta(data: bytes) -> str:
        items = [text(v) for v in data.split(b"\n")[:16]]
        pairs = list(zip(items[::2], items[1::2], strict=False))
        d = page_directives.from_meta(pairs, TESTBOT)
        return f"{int(d.noindex)}{int(d.nofollow)}{int(d.noarchive)}"

    def run_decompress(data: bytes) -> str:
        raw, encoding, cap = fields(data, 3)
        max_bytes = int.from_bytes(cap[:3], "big") if cap else 4096
        try:
            body, truncated = decompress(raw, text(encoding), max_bytes)
        except ValueError as exc:  # documented: corrupt stream, unsupported encoding
            return "err:" + str(exc)[:24]
        check(isinstance(body, bytes) and len(body) <= max_bytes, "cap exceeded")
        check(isinstance(truncated, bool), "truncated not a bool")
        size = "empty" if not body else "full" if len(body) == max_bytes else ""
        return f"ok:{int(truncated)}:{size}"

    def run_user_agent(data: bytes) -> str:
        ua = text(data)
        try:
            token = validate_user_agent(ua)
        except ConfigError as exc:
            msg = str(exc)
            why = ("blank", "browser", "no info URL", "bot name")
            return "err:" + next((w for w in why if w in msg), "other")
        check(bool(token) and ua.strip().startswith(token), f"token {token!r} of {ua!r}")
        return "ok"

    def run_sitemap(data: bytes) -> str:
        body, url, ctype, limit = fields(data, 4)
        max_urls = 1 + limit[0] % 5 if limit else sitemaps.MAX_URLS
        sm = sitemaps.parse_sitemap(
            body, url=text(url), content_type=text(ctype), max_urls=max_urls
        )
        check(sm.error is None or sm.error in sitemapresult.ERROR_RANK, f"error {sm.error!r}")
        check(len(sm.pages) + len(sm.children) <= max_urls, "max_urls exceeded")
        for e in sm.pages + sm.children:
            check(canonicalize(e.url) == e.url, f"entry URL not canonical: {e.url!r}")
            check(e.priority is None or 0.0 <= e.priority <= 1.0, f"priority {e.priority!r}")
        n = len(sm.pages)
        return (
            f"{sm.error}|{n if n < 2 else 'n'}|{'c' if sm.children else ''}|"
            f"{'s' if sm.skipped else ''}|{'lm' if any(e.lastmod for e in sm.pages) else ''}"
        )

    g = Grammar
    common = g.COMMON_TOKENS
    targets = [
        Target("robots", run_robots, g.robots, g.ROBOTS_TOKENS + common, "none"),
        Target("canonicalize", run_canonicalize, g.url_input, g.URL_TOKENS + common, "UrlError"),
        Target("join", run_join, g.join_input, g.URL_TOKENS + common, "none"),
        Target("parse_page", run_parse_page, g.html_input, g.HTML_TOKENS + common, "none"),
        Target("decode_html", run_decode_html, g.charset_input, g.CHARSET_TOKENS + common, "none"),
        Target("retry_after", run_retry_after, g.retry_after, g.DATE_TOKENS + common, "none"),
        Target("x_robots_tag", run_x_robots_tag, g.x_robots, g.DIRECTIVE_TOKENS + common, "none"),
        Target("meta_robots", run_meta, g.meta_pairs, g.DIRECTIVE_TOKENS + common, "none"),
        Target(
            "decompress", run_decompress, g.compressed, g.COMPRESS_TOKENS + common, "ValueError"
        ),
        Target("user_agent", run_user_agent, g.user_agent, g.UA_TOKENS + common, "ConfigError"),
        Target("sitemap", run_sitemap, g.sitemap_input, g.SITEMAP_TOKENS + common, "none"),
    ]
    for t in targets:  # a few fixed seeds: grammar output from a fixed generator
        rng = random.Random(t.name)
        t.seeds = [t.gen(rng) for _ in range(32)]
    return {t.name: t for t in targets}


# -- the grammars ----------------------------------------------------------------------------


def _b(*items: str) -> list[bytes]:
    return [enc(s) for s in items]


class Grammar:
    """Structure-aware generators: realistic inputs, with the odd things servers really send."""

    COMMON_TOKENS: ClassVar[list[bytes]] = [
        b"\x00", b"\xff", b"\xfe", b"\x80", b"\xc3", b"\xc3\xa9", b"\xed\xa0\x80", b"\xef\xbb\xbf",
        b"\xf0\x9f\x98\x80", b"\xf4\x90\x80\x80", b"%", b"%00", b"%zz", b"%C3%A9", b"\r\n", b"\r",
        b"\n", b"\t", b" ", b"\\", b"\x0b", b"\x0c", b"\x7f", b"\xe2\x80\xa8", b"\xc2\xa0",
        enc("²"), enc("٣"), enc("８"), enc("ﬁ"), enc("K"), enc("İ"), enc("ß"), b"9" * 40,
        b"-1", b"0", b"1e309", b"nan", b"inf",
    ]  # fmt: skip

    # robots.txt -------------------------------------------------------------------------
    RB_UA_KEYS = ("User-agent", "user-agent", "USER-AGENT", "useragent", "user agent",
                  "User-Agent ", "user-agents", "Useragent")  # fmt: skip
    RB_RULE_KEYS = ("Disallow", "disallow", "DISALLOW", "dissallow", "disalow", "Allow",
                    "allow", "ALLOW", "allowed", "Disallowed")  # fmt: skip
    RB_OTHER_KEYS = ("Sitemap", "sitemap", "site-map", "Crawl-delay", "crawl-delay",
                     "crawldelay", "crawl delay", "crawl_delay", "Host", "Clean-param",
                     "Noindex", "Request-rate", "junk", "", "#", "Visit-time")  # fmt: skip
    RB_SEPS = (": ", ":", " : ", " ", "\t", ":\t", "  :  ", "", "::", ": :")
    RB_AGENTS = ("*", "testbot", "TestBot", "testbot/1.0", "* testbot", "*testbot", "Googlebot",
                 "googlebot-news", "test bot", "testbot_x", "-", "", "tést", "testbot\x00x",
                 "*/*", "Mozilla/5.0")  # fmt: skip
    RB_PIECES = ("/", "/", "/", "private", "p", "*", "*", "$", ".html", "?", "=", "&", "%2F",
                 "%2f", "%2a", "%2A", "%24", "%41", "%7E", "%e9", "%C3%A9", "é", "%", "%zz",
                 "a", ";", "index.html", "index.htm", "#", "**", " ", "~", "%25", "ツ",
                 "robots.txt", "..", ".", "//", "\x00")  # fmt: skip
    RB_DELAYS = ("1", "0.5", ".5", "5.", "0", "10", "1e3", "-1", "inf", "nan", "1,5", "10 s",
                 "99999999999999999999999999", "0x10", "", " 2 ", "٣", "1.5.5",
                 "9" * 400)  # fmt: skip
    ROBOTS_TOKENS = _b(
        "User-agent: *\n",
        "User-agent: testbot\n",
        "Disallow: /\n",
        "Allow: /\n",
        "Disallow: /*",
        "Allow: /$",
        "Crawl-delay: 5\n",
        "Sitemap: http://h.test/s.xml\n",
        "*",
        "$",
        "/",
        "#",
        ":",
        "%2A",
        "%24",
        "index.html",
        "testbot",
        "\n\n",
        "*" * 64,
        "a*" * 32,
    )

    @classmethod
    def robots_pattern(cls, rng: random.Random) -> str:
        n = rng.choice((0, 1, 1, 2, 3, 4, 6, 10))
        s = "".join(rng.choice(cls.RB_PIECES) for _ in range(n))
        if rng.random() < 0.7 and not s.startswith("/"):
            s = "/" + s
        if rng.random() < 0.02:
            s = s * rng.randint(2, 200)
        return s

    @classmethod
    def robots_path(cls, rng: random.Random) -> str:
        p = cls.robots_pattern(rng).replace("$", rng.choice(("", "$", "x")))
        r = rng.random()
        if r < 0.2:
            p = "http://h.test" + p
        elif r < 0.25:
            p = "https://H.test:8080" + p + "#frag"
        elif r < 0.3:
            p = "//h.test" + p
        elif r < 0.33:
            p = p.lstrip("/")
        elif r < 0.36:
            p = rng.choice(("/robots.txt", "/robots.txt?x=1", "/robots.txtx", "robots.txt"))
        return p

    @classmethod
    def robots_body(cls, rng: random.Random) -> bytes:
        lines: list[str] = []
        for _ in range(rng.choice((0, 1, 3, 5, 8, 12, 20, 40))):
            r = rng.random()
            if r < 0.25:
                key, value = rng.choice(cls.RB_UA_KEYS), rng.choice(cls.RB_AGENTS)
            elif r < 0.7:
                key, value = rng.choice(cls.RB_RULE_KEYS), cls.robots_pattern(rng)
            elif r < 0.8:
                key = rng.choice(("Crawl-delay", "crawl-delay", "crawldelay", "crawl_delay"))
                value = rng.choice(cls.RB_DELAYS)
            elif r < 0.9:
                key = rng.choice(("Sitemap", "sitemap", "site-map"))
                value = Grammar.url(rng)
            else:
                key, value = rng.choice(cls.RB_OTHER_KEYS), cls.robots_pattern(rng)
            line = key + rng.choice(cls.RB_SEPS) + value
            if rng.random() < 0.08:
                line += rng.choice((" # comment", "#", " #x: y", "\t#"))
            if rng.random() < 0.05:
                line = rng.choice(("  ", "\t", "#")) + line
            lines.append(line)
        eol = rng.choice(("\n", "\n", "\r\n", "\r", None))
        out = "".join(ln + (eol or rng.choice(("\n", "\r\n", "\r"))) for ln in lines)
        if rng.random() < 0.2:
            out = out.rstrip("\r\n")
        data = out.encode(rng.choice(("utf-8", "utf-8", "latin-1")), "replace")
        if rng.random() < 0.06:
            data = b"\xef\xbb\xbf"[: rng.randint(1, 3)] + data
        return data

    @classmethod
    def robots(cls, rng: random.Random) -> bytes:
        agent = rng.choice(
            (*cls.RB_AGENTS, "testbot/1.0 (+http://bot.example/info)", " testbot ", "TESTBOT")
        )
        paths = "\n".join(cls.robots_path(rng) for _ in range(rng.randint(1, 5)))
        return pack(cls.robots_body(rng), agent, paths)

    # URLs -------------------------------------------------------------------------------
    SCHEMES = ("http", "https", "HTTP", "HtTpS", "ftp", "javascript", "mailto", "data", "file",
               "h ttp", " http", "http+x", "ws", "")  # fmt: skip
    SCHEME_SEPS = ("://", "://", "://", ":/", ":", ":///", ":\\\\", "//", ":\\/", ": //")
    HOSTS = ("h.test", "example.com", "EXAMPLE.COM", "example.com.", "a.b.c.example.co.uk",
             "xn--bcher-kva.de", "bücher.de", "ÄÖÜ.de", "例え.テスト", "127.0.0.1", "0x7f.1",
             "1.2.3.999", "1.2.3", "08.1.1.1", "[::1]", "[fe80::1%25eth0]", "[::ffff:1.2.3.4]",
             "[v1.x]", "[::1", "::1]", "a..b", "-a.com", "a-.com", "a" * 63 + ".com",
             "a" * 64 + ".com", ("a" * 60 + ".") * 5 + "com", "a_b.test", "a b.test",
             "a%2Eb.test", "%41.test", "%zz.test", "%C3%A9.test", "%FF.test", "", ".", "..",
             "*.test", "a*b.test", "xn--.test", "xn--zz.test", "ＡＢＣ.com", "a\u200db.com",
             "ﬁ.com", "a\u0301.com", "1.2.3.4.5", "4294967295", "[::]", "[1:2:3:4:5:6:7:8:9]",
             "ß.de", "İ.com", "\u00ad.com", "a.。b", "h.test\\x", "⒈.com")  # fmt: skip
    USERINFO = ("", "", "", "user@", "user:pw@", "@", "@@", ":@", "a@b@", "us%40er@", "u:p:q@")
    PORTS = ("", "", "", ":80", ":443", ":8080", ":0", ":65535", ":65536", ":99999999999999",
             ":+80", ":", ": 80", ":８０", ":٨٠", ":-1", ":80:80", ":0080", ":1e3")  # fmt: skip
    PATH_PIECES = ("/", "/", "/", "a", "b", "..", ".", "%2e", "%2E%2e", "%2F", "//", "\\",
                   ";jsessionid=ABC", ";JSESSIONID=1;x=2", ";v=2", "%zz", "%", "%4", "é", "%C3%A9",
                   "%e9", " ", "%20", "\x00", "\t", "\n", "<>", '"', "`", "{}", "|", "^",
                   "index.html", "p.jpg", "%7E", "~", "@", "!$&'()*+,;=:", "\ud800", "\udcff",
                   "\U0001f600", "\u2028", "%u0041", "?")  # fmt: skip
    QUERY_PIECES = ("a=b", "&", "&", "sid=1", "PHPSESSID=2", "sessionid", "x", "=", "%20", "+",
                    " ", "%zz", "é", "?", "a=b&c=d", "jsessionid=", "q=%26", "&&", "#",
                    "aspsessionidabc=1", "cfid=1&cftoken=2", "\x00")  # fmt: skip
    URL_TOKENS = _b(
        "http://",
        "https://",
        "//",
        "/..",
        "/./",
        "%2e",
        ":80",
        ":443",
        "@",
        "[",
        "]",
        "::",
        "#",
        "?",
        ";jsessionid=",
        "xn--",
        ".",
        "..",
        "\\",
        "sid=",
        "localhost",
        "[::1]",
        "127.0.0.1",
    )

    @classmethod
    def url_path(cls, rng: random.Random) -> str:
        n = rng.choice((0, 1, 2, 3, 5, 8, 12))
        return "".join(rng.choice(cls.PATH_PIECES) for _ in range(n))

    @classmethod
    def url(cls, rng: random.Random) -> str:
        r = rng.random()
        scheme = "http" if r < 0.5 else "https" if r < 0.75 else rng.choice(cls.SCHEMES)
        sep = "://" if rng.random() < 0.85 else rng.choice(cls.SCHEME_SEPS)
        host = rng.choice(cls.HOSTS[:6]) if rng.random() < 0.4 else rng.choice(cls.HOSTS)
        u = scheme + sep + rng.choice(cls.USERINFO) + host + rng.choice(cls.PORTS)
        path = cls.url_path(rng)
        if path and not path.startswith("/") and rng.random() < 0.8:
            path = "/" + path
        u += path
        if rng.random() < 0.35:
            u += "?" + "".join(rng.choice(cls.QUERY_PIECES) for _ in range(rng.randint(0, 6)))
        if rng.random() < 0.15:
            u += "#" + rng.choice(("", "x", "a#b", "%zz", "é"))
        if rng.random() < 0.08:
            u = rng.choice((" ", "\t", "\n", "\x00", "\x1f", "\u3000")) + u
        if rng.random() < 0.08:
            u += rng.choice((" ", "\t\n", "\x00", "\x7f"))
        if rng.random() < 0.01:
            u = u + rng.choice(cls.PATH_PIECES) * rng.randint(100, 3000)
        return u

    @classmethod
    def url_input(cls, rng: random.Random) -> bytes:
        return enc(cls.url(rng))

    @classmethod
    def href(cls, rng: random.Random) -> str:
        r = rng.random()
        if r < 0.35:
            return cls.url(rng)
        if r < 0.55:
            return rng.choice(("", ".", "..", "./", "../", "../../..", "?", "?q=1", "#", "#x",
                               "//", "///", "//other.test/x", "\\\\other.test\\x", "g;x",
                               "http:g", "https:g", "HTTP:", "javascript:alert(1)",
                               "mailto:a@b", "data:text/html,x", " \t\n ", "g?y#s", ";x",
                               "g/../..", "/./g", "%2e%2e/", "a:b", "a b:c", "\x00",
                               "http://", "http:///x", "//[::1]:80/"))  # fmt: skip
        path = cls.url_path(rng)
        if rng.random() < 0.3:
            path += "?" + rng.choice(cls.QUERY_PIECES)
        return path

    @classmethod
    def join_input(cls, rng: random.Random) -> bytes:
        base = cls.url(rng) if rng.random() < 0.3 else "http://h.test/a/b/c.html?q=1"
        return pack(base, cls.href(rng))

    # HTML -------------------------------------------------------------------------------
    TAGS = ("a", "a", "a", "area", "base", "meta", "link", "title", "head", "body", "html",
            "script", "style", "textarea", "svg", "math", "template", "noscript", "iframe",
            "table", "tr", "td", "div", "div", "p", "li", "ul", "form", "select", "option",
            "frameset", "frame", "plaintext", "xmp", "noembed", "image", "isindex", "map",
            "object", "foreignObject", "desc", "annotation-xml", "b", "i", "nobr", "button",
            "dialog", "slot", "keygen", "A", "META", "x-y")  # fmt: skip
    ATTRS = ("href", "href", "rel", "name", "content", "charset", "http-equiv", "id", "class",
             "HREF", "src", "shape", "xlink:href", "onclick", "style", "", "=", '"')  # fmt: skip
    ATTR_VALUES = ("nofollow", "NoFollow", "nofollow noopener", "canonical", "robots",
                   "ROBOTS", "testbot", "googlebot", "noindex", "noindex, nofollow", "none",
                   "noarchive", "all", "utf-8", "shift_jis", "Content-Type",
                   "text/html; charset=koi8-r", "", " ", "javascript:x", "&amp;",
                   "&#0;", "x" * 300)  # fmt: skip
    ENTITIES = ("&amp;", "&lt;", "&gt;", "&#0;", "&#x110000;", "&#xD800;", "&#99999999999;",
                "&nbsp", "&notit;", "&notin;", "&", "&#", "&#x;", "&;", "&AMP;", "&#128;",
                "&#x80;", "&zwj;", "&lt", "&#65")  # fmt: skip
    SPECIALS = (
        "<!-- c -->",
        "<!-->",
        "<!--->",
        "<!-- <a href=/h> -->",
        "<! x>",
        "<?php ?>",
        "<![CDATA[ <a href=x> ]]>",
        "<!DOCTYPE html>",
        "<!doctype>",
        "</>",
        "</ x>",
        "<",
        ">",
        "<a",
        "<a href",
        "<a href=",
        '<a href="x',
        "</a",
        "<\x00a>",
        "<a/href=x>",
        "<a href=x/>",
        "</p></p></p>",
        "<!--",
        "]]>",
        "<svg><![CDATA[x]]>",
    )
    HTML_TOKENS = _b(
        "<a href=",
        "<a href='/x'>",
        "</a>",
        "<base href=",
        "<meta name=robots ",
        "content=",
        "<div>",
        "</div>",
        "<!--",
        "-->",
        "<script>",
        "</script>",
        "<svg>",
        "<math>",
        "<table>",
        "<template>",
        "&amp;",
        "&#",
        "<title>",
        "rel=nofollow",
        "<head>",
        "<body>",
        "<p>",
        "<li>",
        '"',
        "'",
        "=",
        "/>",
    )

    @classmethod
    def html_node(cls, rng: random.Random, depth: int, out: list[str]) -> None:
        r = rng.random()
        if r < 0.25 or depth > 12:
            if rng.random() < 0.3:
                out.append(rng.choice(cls.ENTITIES))
            out.append(rng.choice(("text ", "Ünïcode ", "ツ", " ", "\n", "a < b", "x>y", "")))
            return
        if r < 0.32:
            out.append(rng.choice(cls.SPECIALS))
            return
        tag = rng.choice(cls.TAGS)
        attrs = []
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            name = rng.choice(cls.ATTRS)
            if name in ("href", "HREF", "xlink:href", "src"):
                value = cls.href(rng)
            else:
                value = rng.choice(cls.ATTR_VALUES)
            q = rng.choice(('"', "'", "", '"'))
            if q and q in value:
                value = value.replace(q, "&quot;")
            attrs.append(f"{name}={q}{value}{q}" if name not in ("", "=", '"') else name)
        out.append(
            f"<{tag}{' ' if attrs else ''}{' '.join(attrs)}{'/' if rng.random() < 0.1 else ''}>"
        )
        for _ in range(rng.choice((0, 1, 2, 3))):
            cls.html_node(rng, depth + 1, out)
        if rng.random() < 0.75:
            out.append(f"</{tag if rng.random() < 0.95 else rng.choice(cls.TAGS)}>")

    @classmethod
    def html(cls, rng: random.Random) -> bytes:
        out: list[str] = []
        if rng.random() < 0.5:
            out.append("<!DOCTYPE html><html><head>")
            for _ in range(rng.randint(0, 4)):
                r = rng.random()
                if r < 0.25:
                    out.append(f"<title>{rng.choice(('T', '', 'Ü' * 600, '<a>'))}</title>")
                elif r < 0.5:
                    out.append(f'<base href="{cls.href(rng)}">')
                elif r < 0.75:
                    name = rng.choice(("robots", "ROBOTS", " robots", "testbot", "googlebot"))
                    content = rng.choice(cls.ATTR_VALUES)
                    out.append(f'<meta name="{name}" content="{content}">')
                else:
                    rel = rng.choice(("canonical", "Canonical x", "alternate"))
                    out.append(f'<link rel="{rel}" href="{cls.href(rng)}">')
            out.append("</head><body>")
        for _ in range(rng.choice((1, 2, 4, 8, 16))):
            cls.html_node(rng, 0, out)
        if rng.random() < 0.03:  # deep nesting or many links
            tag = rng.choice(("div", "a", "b", "table", "svg", "span", "li", "p", "font"))
            n = rng.choice((300, 1000, 2500, 6000))
            out.append(f"<{tag}>" * n)
        if rng.random() < 0.01:
            out.append('<a href="/l{}">x</a>' * rng.choice((2000, 12000)))
        data = "".join(out).encode(rng.choice(("utf-8", "utf-8", "utf-16", "latin-1")), "replace")
        if rng.random() < 0.1:  # broken UTF-8 somewhere
            i = rng.randrange(len(data) + 1)
            data = (
                data[:i] + rng.choice((b"\xc3", b"\xff", b"\xed\xa0\x80", b"\xe2\x82")) + data[i:]
            )
        return data

    @classmethod
    def html_input(cls, rng: random.Random) -> bytes:
        url = "http://h.test/a/b.html" if rng.random() < 0.8 else cls.url(rng)
        return pack(cls.html(rng), url)

    # charsets ---------------------------------------------------------------------------
    SAMPLES = ("Grüße aus Köln, déjà vu, naïve café", "Привет, мир! Съешь же ещё этих булок",
               "日本語のテキストです。東京", "中文网页内容，简体字", "한국어 텍스트",
               "Ελληνικά κείμενα",
               "Zażółć gęślą jaźń", "Příliš žluťoučký kůň", "plain ascii text only",
               "עברית ועוד", "عربي نص", "emoji 😀 text", "€ ‘quotes’ — dash")  # fmt: skip
    CODECS = (
        "utf-8",
        "utf-8",
        "cp1252",
        "latin-1",
        "koi8-r",
        "cp1251",
        "shift_jis",
        "euc-jp",
        "gb18030",
        "big5",
        "euc-kr",
        "iso-8859-2",
        "iso-8859-7",
        "cp1250",
        "utf-16-le",
        "utf-16-be",
        "utf-32",
        "iso-2022-jp",
        "mac-roman",
        "cp437",
    )
    LABELS = ("utf-8", "UTF8", "utf8mb4", "iso-8859-1", "latin1", "ascii", "us-ascii",
              "windows-1252", "koi8-r", "shift_jis", "sjis", "x-sjis", "euc-jp", "gb2312",
              "gbk", "big5", "utf-16", "utf-16le", "UTF-32", "utf-7", "unicode-1-1-utf-7",
              "x-user-defined", "replacement", "iso-2022-kr", "hz-gb-2312", "rot13", "rot_13",
              "base64", "hex", "zlib", "bz2", "uu", "quopri", "idna", "punycode",
              "unicode_escape", "raw_unicode_escape", "undefined", "mbcs", "oem", "utf-8-sig",
              "cp65001", "palmos", "unknown-8bit", "", '"', "utf-8;", "x" * 100, "\x00",
              "utf-\x00", "é", "string_escape", "tactis", "cp1125", "koi8-t")  # fmt: skip
    CHARSET_TOKENS = _b(
        '<meta charset="',
        '<meta http-equiv="Content-Type" content="text/html; charset=',
        "charset=",
        '">',
        "\xef\xbb\xbf",
        "\xff\xfe",
        "\xfe\xff",
        "utf-8",
        "shift_jis",
        "utf-16",
        "rot13",
        "x-user-defined",
    )

    @classmethod
    def charset_input(cls, rng: random.Random) -> bytes:
        textual = " ".join(rng.choice(cls.SAMPLES) for _ in range(rng.randint(1, 8)))
        codec = rng.choice(cls.CODECS)
        label = rng.choice(cls.LABELS) if rng.random() < 0.7 else codec
        head = ""
        r = rng.random()
        if r < 0.3:
            head = f'<meta charset="{label}">'
        elif r < 0.45:
            head = f'<meta http-equiv="Content-Type" content="text/html; charset={label}">'
        elif r < 0.5:
            head = f"<meta charset={label}><meta charset={rng.choice(cls.LABELS)}>"
        doc = f"<html><head>{head}<title>{textual[:20]}</title></head><body><p>{textual}</p>"
        body = doc.encode(codec, "replace")
        r = rng.random()
        if r < 0.08:
            body = rng.choice((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE,
                               codecs.BOM_UTF32_LE, b"\xef\xbb")) + body  # fmt: skip
        elif r < 0.16:  # mojibake: UTF-8 read as cp1252 then saved as UTF-8
            body = doc.encode("utf-8").decode("cp1252", "replace").encode("utf-8")
        elif r < 0.2:
            body = bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
        if rng.random() < 0.01:
            body *= rng.randint(20, 400)
        r = rng.random()
        if r < 0.25:
            ctype: bytes = b""  # None: no header
        elif r < 0.3:
            ctype = b"\x00"  # an empty header
        else:
            label2 = rng.choice(cls.LABELS) if rng.random() < 0.5 else label
            ctype = enc(rng.choice((f"text/html; charset={label2}", f'text/html;charset="{label2}"',
                                    "text/html", f"charset={label2}",
                                    f"text/html; charset='{label2}",
                                    f"text/html; charset={label2}; charset=utf-8", ";;;=",
                                    f"TEXT/HTML; CHARSET={label2.upper()}")))  # fmt: skip
        return pack(ctype, body)

    # header values --------------------------------------------------------------------------
    DATE_TOKENS = _b(
        "Mon, ",
        "GMT",
        "+0000",
        "-2359",
        "+2359",
        "Jan",
        "Feb",
        "0001",
        "9999",
        "00:00:00",
        "23:59:60",
        " ",
        ",",
        "UT",
        "EST",
        "Z",
        "-",
    )

    @classmethod
    def retry_after(cls, rng: random.Random) -> bytes:
        r = rng.random()
        if r < 0.3:
            s = rng.choice(("0", "1", "120", "3600", "86400", " 5 ", "-1", "1.5", "1e3", "+5",
                            "9" * rng.randint(10, 400), "٣", "²", "８", "0x10", "", " ",
                            "1 2", "١٢٠", "³", "⑨", "߂", "𝟗"))  # fmt: skip
        else:
            day = rng.choice(("Mon", "Tue", "Sun", "Xyz", "", "Monday"))
            dd = rng.choice(("01", "1", "31", "32", "00", "99", "0", "-1"))
            mon = rng.choice(("Jan", "Feb", "Dec", "jan", "Foo", "13", ""))
            year = rng.choice(("2024", "1970", "1969", "0001", "0000", "9999", "10000", "24",
                               "99", "00", "1", "-1", "999999999", "2038"))  # fmt: skip
            hms = rng.choice(("00:00:00", "23:59:59", "23:59:60", "24:00:00", "99:99:99", "0:0",
                              "12:00", "", "00:00:00.5", "1:2:3:4"))  # fmt: skip
            tz = rng.choice(("GMT", "UTC", "UT", "+0000", "-0000", "+2359", "-2359", "+9999",
                             "-9999", "EST", "PDT", "Z", "", "+24", "A", "+0100"))  # fmt: skip
            s = rng.choice((f"{day}, {dd} {mon} {year} {hms} {tz}",
                            f"{day} {mon} {dd} {hms} {year}",
                            f"{dd}-{mon}-{year} {hms} {tz}", f"{day}, {dd}-{mon}-{year} {hms} {tz}",
                            f"{year}-{mon}-{dd}T{hms}{tz}"))  # fmt: skip
        return enc(s)

    DIRECTIVE_WORDS = ("noindex", "nofollow", "none", "all", "index", "follow", "noarchive",
                       "nosnippet", "NOINDEX", "NoFollow",
                       "unavailable_after: 25 Jun 2010 15:00:00 PST",
                       "max-snippet: 5", "max-image-preview: large", "googlebot: noindex",
                       "testbot: nofollow", "TESTBOT:none", "testbot:", "bingbot:", ":", "",
                       " ", "noindex\x00", "no index", "testbot : noindex", "test-bot: none",
                       "testbot/1.0: noindex", "otherbot: noindex, nofollow", "\u00a0noindex",
                       "noımdex", "ＮＯＩＮＤＥＸ")  # fmt: skip
    DIRECTIVE_TOKENS = _b(
        "noindex",
        "nofollow",
        "none",
        ",",
        ":",
        " ",
        "testbot",
        "googlebot:",
        "unavailable_after:",
        "max-snippet:",
        "robots",
    )

    @classmethod
    def directives(cls, rng: random.Random) -> str:
        seps = (", ", ",", " ", ",,", " , ", "\t", ";")
        n = rng.randint(0, 6)
        return "".join(rng.choice(cls.DIRECTIVE_WORDS) + rng.choice(seps) for _ in range(n))

    @classmethod
    def x_robots(cls, rng: random.Random) -> bytes:
        return b"\n".join(enc(cls.directives(rng)) for _ in range(rng.randint(1, 4)))

    @classmethod
    def meta_pairs(cls, rng: random.Random) -> bytes:
        names = ("robots", "ROBOTS", " robots ", "testbot", "TestBot", "googlebot",
                 "description", "", "robots\x00", "testbot/1.0", "ｒobots")  # fmt: skip
        items = []
        for _ in range(rng.randint(1, 6)):
            items += [rng.choice(names), cls.directives(rng).replace("\n", " ")]
        return b"\n".join(enc(i) for i in items)

    # compressed bodies ----------------------------------------------------------------------
    _BOMBS: ClassVar[list[tuple[str, bytes]]] = []

    @classmethod
    def _bombs(cls) -> list[tuple[str, bytes]]:
        if not cls._BOMBS:
            import brotli

            zeros = b"\0" * (8 << 20)
            cls._BOMBS = [
                ("gzip", gzip.compress(zeros, 9, mtime=0)),
                ("deflate", zlib.compress(zeros, 9)),
                ("br", brotli.compress(zeros)),
            ]
        return cls._BOMBS

    COMPRESS_TOKENS = _b(
        "\x1f\x8b\x08\x00",
        "\x78\x9c",
        "\x78\x01",
        "\x03\x00",
        "gzip",
        "deflate",
        "br",
        "\x00\x00\xff\xff",
    )

    @classmethod
    def compressed(cls, rng: random.Random) -> bytes:
        import brotli

        r = rng.random()
        if r < 0.05:
            kind, data = rng.choice(cls._bombs())
            return pack(data, kind, rng.choice((1, 4096, 1 << 20, 2 << 20)).to_bytes(3, "big"))
        payload = bytes(rng.randrange(256) for _ in range(rng.randint(0, 64)))
        payload = payload * rng.choice((1, 1, 2, 30)) + enc(rng.choice(cls.SAMPLES))
        kind = rng.choice(("gzip", "x-gzip", "deflate", "deflate-raw", "br", "identity", ""))
        label = kind
        if kind in ("gzip", "x-gzip"):
            data = gzip.compress(payload, rng.randint(0, 9), mtime=0)
            if rng.random() < 0.2:  # several members
                data += gzip.compress(payload[::-1], mtime=0)
        elif kind == "deflate":
            data = zlib.compress(payload, rng.randint(0, 9))
        elif kind == "deflate-raw":
            c = zlib.compressobj(6, zlib.DEFLATED, -15)
            data = c.compress(payload) + c.flush()
            label = "deflate"
        elif kind == "br":
            data = brotli.compress(payload)
        else:
            data = payload
        r = rng.random()
        if r < 0.15:
            data = data[: rng.randint(0, len(data))]  # cut short
        elif r < 0.25:
            data += rng.choice((b"garbage", b"\x1f\x8b", b"\x1f", b"\x00" * 10, data))
        elif r < 0.3:
            label = rng.choice(
                (
                    "compress",
                    "gzip, br",
                    " GZIP ",
                    "Deflate",
                    "BR",
                    "zstd",
                    "x-compress",
                    "chunked",
                    "gzip;q=1",
                    "\x00",
                    "identity, gzip",
                )
            )
        cap = rng.choice((0, 1, 2, 10, 100, 4096, 65536, 1 << 20))
        return pack(data, label, cap.to_bytes(3, "big"))

    # User-Agent -----------------------------------------------------------------------------
    UA_TOKENS = _b(
        "bot/1.0",
        "(+http://x.example/bot)",
        "https://",
        "Mozilla/",
        "Chrome/",
        "Safari/",
        "Gecko/",
        "compatible;",
        " ",
        "/",
        "(",
        ")",
    )

    @classmethod
    def user_agent(cls, rng: random.Random) -> bytes:
        name = rng.choice(
            (
                "acmebot",
                "acme-bot",
                "acme_bot",
                "Acme.Bot",
                "1bot",
                "-bot",
                "_x",
                "",
                " acmebot",
                "acmebot ",
                "ácmebot",
                "acme bot",
                "acmebot\x00",
            )
        )
        ver = rng.choice(("/1.0", "", "/", "/1.0 ", "/ 1.0", "/1.0/2"))
        url = rng.choice(("(+https://acme.example/bot)", "(+http://a.b)", "+https://x",
                          "(https://)", "(+ftp://x)", "http:// x", "HTTPS://X.Y", "", "https://a;b",
                          "(+https://acme.example/bot"))  # fmt: skip
        extra = rng.choice(
            (
                "",
                "",
                " Mozilla/5.0",
                " compatible; Chrome/120",
                " like Gecko",
                " AppleWebKit/537",
                " edg/1",
                " Edge/1",
                " mozilla/",
                " MSIE/6",
            )
        )
        ua = f"{name}{ver} {url}{extra}"
        if rng.random() < 0.05:
            ua = ua * rng.randint(2, 500)
        return enc(ua)

    # sitemaps -------------------------------------------------------------------------------
    SITEMAP_TOKENS = _b(
        "<urlset>",
        "</urlset>",
        "<url>",
        "</url>",
        "<loc>",
        "</loc>",
        "<sitemap>",
        "<lastmod>",
        "<priority>",
        "<changefreq>",
        "<![CDATA[",
        "]]>",
        "<!ENTITY",
        "&amp;",
        "&#",
        "<?xml",
        "xmlns=",
        "<item>",
        "<link>",
        "<entry>",
        "<link href=",
        "http://h.test/",
        "\x1f\x8b",
    )
    NS = (
        'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"',
        "",
        'xmlns="urn:x"',
        'xmlns:s="http://www.sitemaps.org/schemas/sitemap/0.9"',
        "xmlns:image='x'",
    )
    DATES = ("2024-01-01", "2024-01", "2024", "2024-01-01T10:00:00+02:00", "2024-01-01T10:00:00z",
             "2024-13-01", "0000-00-00", "9999-12-31T23:59:59-23:59", "yesterday", "", " 2024 ",
             "2024-02-30", "1-1-1", "2024-01-01T25:00")  # fmt: skip

    @classmethod
    def sitemap_body(cls, rng: random.Random) -> bytes:
        r = rng.random()
        locs = [Grammar.url(rng) for _ in range(rng.choice((0, 1, 2, 4, 8)))]
        if r < 0.15:  # plain text list
            body = "\n".join([*locs, "# comment", "not a url", ""])
            data = enc(body)
        elif r < 0.25:  # feeds
            if rng.random() < 0.5:
                items = "".join(
                    f"<item><title>t</title><link>{rng.choice((u, Grammar.href(rng)))}</link>"
                    f"<pubDate>{rng.choice(('Mon, 01 Jan 2024 00:00:00 GMT', 'x', ''))}</pubDate>"
                    "</item>"
                    for u in locs
                )
                data = enc(
                    f'<?xml version="1.0"?><rss version="2.0"><channel>{items}</channel></rss>'
                )
            else:
                entries = "".join(
                    f'<entry><link rel="{rng.choice(("alternate", "", "self"))}" href="{u}"/>'
                    f"<updated>{rng.choice(cls.DATES)}</updated></entry>"
                    for u in locs
                )
                data = enc(f'<feed xmlns="http://www.w3.org/2005/Atom">{entries}</feed>')
        else:
            index = rng.random() < 0.3
            root, entry = ("sitemapindex", "sitemap") if index else ("urlset", "url")
            ns = rng.choice(cls.NS)
            prefix = "s:" if "xmlns:s" in ns and rng.random() < 0.8 else ""
            parts = []
            for u in locs:
                u = u.replace("&", rng.choice(("&amp;", "&"))).replace("<", "&lt;")
                if rng.random() < 0.1:
                    u = f"<![CDATA[{u}]]>"
                f = [f"<{prefix}loc>{u}</{prefix}loc>"]
                if rng.random() < 0.4:
                    f.append(f"<{prefix}lastmod>{rng.choice(cls.DATES)}</{prefix}lastmod>")
                if rng.random() < 0.3:
                    cf = rng.choice(("daily", "Daily", "sometimes", "", "never "))
                    f.append(f"<{prefix}changefreq>{cf}</{prefix}changefreq>")
                if rng.random() < 0.3:
                    p = rng.choice(("0.5", "1.0", "1", "0", "-1", "2", "nan", "inf", "1e999", "x"))
                    f.append(f"<{prefix}priority>{p}</{prefix}priority>")
                if rng.random() < 0.1:
                    f.append(
                        "<image:image><image:loc>http://h.test/i.png</image:loc></image:image>"
                    )
                rng.shuffle(f)
                parts.append(f"<{prefix}{entry}>{''.join(f)}</{prefix}{entry}>")
            decl = rng.choice(('<?xml version="1.0" encoding="UTF-8"?>\n', "", "\n\n  ",
                               '<?xml version="1.0" encoding="latin-1"?>',
                               '<?xml version="1.0" encoding="UTF-16"?>'))  # fmt: skip
            doctype = ""
            if rng.random() < 0.05:
                doctype = rng.choice((
                    '<!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;">]>',
                    '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>',
                    '<!DOCTYPE x SYSTEM "http://h.test/x.dtd">', "<!DOCTYPE urlset>",
                ))  # fmt: skip
            xml = f"{decl}{doctype}<{prefix}{root} {ns}>{''.join(parts)}</{prefix}{root}>"
            if rng.random() < 0.1:
                xml = xml[: rng.randrange(len(xml) + 1)]
            if rng.random() < 0.02:
                xml = xml.replace("<url>", "<url>" + "<x>" * rng.choice((60, 70, 200)), 1)
            data = xml.encode("utf-16" if "UTF-16" in decl else "utf-8", "surrogatepass")
            if rng.random() < 0.01:
                data = (
                    data.replace(b"</urlset>", enc(parts[0]) * 3000 + b"</urlset>", 1)
                    if parts
                    else data
                )
        if rng.random() < 0.15:
            data = gzip.compress(data, mtime=0)
            if rng.random() < 0.2:
                data = gzip.compress(data, mtime=0)
        if rng.random() < 0.04:
            data = b"\xef\xbb\xbf" + data
        return data

    @classmethod
    def sitemap_input(cls, rng: random.Random) -> bytes:
        url = rng.choice(("", "http://h.test/sitemap.xml", "http://h.test/feed", "not a url"))
        ctype = rng.choice(("", "application/xml", "text/html", "text/plain", "application/x-gzip"))
        limit = b"" if rng.random() < 0.8 else bytes([rng.randrange(256)])
        return pack(cls.sitemap_body(rng), url, ctype, limit)


# -- hand-made reproducers of what fuzzing found ---------------------------------------------


def regressions() -> dict[str, bytes]:
    """One small input per bug found (``--write-regressions`` saves them as ``bug-*``).

    Each stands for a class of fuzzer findings, made deterministic and a few times slower than
    the replay budget (tests/test_fuzz_corpus.py), so its test fails for sure until the bug is
    fixed and passes at once after.
    """
    text = " ".join(Grammar.SAMPLES)
    doc = f'<html><head><meta charset="cp1252"><title>t</title></head><body><p>{text}</p>'
    mojibake = doc.encode("utf-8").decode("cp1252", "replace").encode("utf-8")
    sitemap = (
        b'<?xml version="1.0" encoding="latin-9"?><urlset '
        b'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://h.test/a</loc>'
        b"</url></urlset>"
    )
    return {
        # outcome.retry_after_s: str.isdigit() is true for superscripts and circled digits
        "retry_after/bug-nondecimal-digit.bin": enc("²"),
        # outcome.retry_after_s: email.utils.parsedate_to_datetime raises OverflowError
        "retry_after/bug-huge-year.bin": b"Mon, 01 Jan 99999999999999999999 00:00:00 GMT",
        # sitemaps.parse_sitemap: expat raises LookupError for an unknown declared encoding...
        "sitemap/bug-unknown-xml-encoding.bin": pack(sitemap, "http://h.test/s.xml", ""),
        # ...and ValueError for a multi-byte one (Shift_JIS, EUC-JP, GB18030, Big5)
        "sitemap/bug-multibyte-xml-encoding.bin": pack(
            sitemap.replace(b"latin-9", b"Shift_JIS"), "http://h.test/s.xml", ""
        ),
        # textdecode.decode_html: any Python codec name is taken as a charset label
        "decode_html/bug-python-codec.bin": pack(
            "text/html; charset=unicode_escape", b"<p>C:\\new\\table \\N{SNOWMAN}</p>"
        ),
        # textdecode.decode_html: ftfy.fix_encoding runs on the whole text (about 6 us/byte)
        "decode_html/bug-ftfy-cost.bin": pack(b"", b"\xff" + mojibake * (400_000 // len(mojibake))),
        # urls.canonicalize: IDNA on an unbounded host (about 16 us/char)
        "canonicalize/bug-long-host.bin": enc("http://" + "\u00e9" * 300_000 + "/"),
        # urls.join: percent-encoding of an unbounded path (about 1.5 us/byte)
        "join/bug-long-href.bin": pack("http://h.test/a/b.html", " %zz" * 500_000),
        # page_directives.from_x_robots_tag: about 0.6 us per comma-separated item, unbounded
        # (fetch's caps, 128 headers x 16 KiB, allow 1.3 s; this is twice that)
        "x_robots_tag/bug-many-items.bin": b"\n".join([b",\x00" * 16000] * 128),
        # parse.parse_page: duplicate hrefs are joined one by one, past the 10,000-link cap
        "parse_page/bug-duplicate-links.bin": pack(b"<a href=%zz>" * 30_000, "http://h.test/"),
        # htmlguard: the tag regex backtracked cubically on "<" without ">" (16.7 s for 2 KB;
        # the guard scans pages of 5,000+ "<", so this one would take hours)
        "parse_page/bug-unclosed-tags.bin": pack(b"<a" * 6_000, "http://h.test/"),
        # urls: percent-encoding grew a URL under the 64 KiB cap past it, so the canonical
        # form was refused when canonicalised again (and join returned such URLs)
        "canonicalize/bug-grows-past-cap.bin": enc("http://h.test/" + "^" * 60_000),
        "join/bug-grows-past-cap.bin": pack("http://h.test/a/b.html", "^" * 60_000),
        # urls._base_parts: a base URL with no canonical form raised, and lru_cache does not
        # cache exceptions, so each of the page's links paid the failed canonicalisation again
        # (the crawler's page URLs are canonical; a caller's need not be)
        "parse_page/bug-uncacheable-base.bin": pack(
            b"<a href=x>" * 12_000, "http://h.test/" + "^" * 30_000
        ),
    }


# -- the mutator -----------------------------------------------------------------------------


def mutate(rng: random.Random, data: bytes, tokens: list[bytes], pool: list[bytes]) -> bytes:
    """1-8 random byte-level edits; the result stays under 64 KiB unless it started larger."""
    buf = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 3, 4, 8))):
        n = len(buf)
        op = rng.randrange(12)
        i = rng.randrange(n + 1)
        if op == 0 and n:  # flip a bit
            j = rng.randrange(n)
            buf[j] ^= 1 << rng.randrange(8)
        elif op == 1 and n:  # set a byte
            buf[rng.randrange(n)] = rng.choice((0, 0xFF, 0x7F, 0x80, 0x20, 0x0A, 0x3C, 0x25))
        elif op == 2:  # insert random bytes
            buf[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 3 and n:  # delete a range
            buf[i : i + rng.randint(1, 32)] = b""
        elif op == 4 and n:  # duplicate a range
            j = rng.randrange(n)
            buf[i:i] = buf[j : j + rng.randint(1, 64)]
        elif op == 5 and n:  # repeat a range
            j = rng.randrange(n)
            chunk = bytes(buf[j : j + rng.randint(1, 16)])
            buf[i:i] = chunk * rng.choice((2, 8, 64, 500))
        elif op in (6, 7):  # insert a token
            buf[i:i] = rng.choice(tokens)
        elif op == 8 and n:  # overwrite with a token
            t = rng.choice(tokens)
            buf[i : i + len(t)] = t
        elif op == 9 and pool:  # splice with another input
            other = rng.choice(pool)
            j = rng.randrange(len(other) + 1)
            buf = buf[:i] + other[j:]
        elif op == 10 and n:  # truncate
            del buf[i:]
        elif op == 11 and n:  # swap case of a range
            j = rng.randrange(n)
            buf[j : j + 16] = bytes(buf[j : j + 16]).swapcase()
    if len(buf) > 65536 and len(data) <= 65536:
        del buf[65536:]
    return bytes(buf)


def blow_up(rng: random.Random, data: bytes) -> bytes:
    """Repeat one chunk until the input is 64-512 KiB: finds costs that grow faster than size."""
    target = rng.choice((64, 128, 256, 512)) * 1024
    if not data:
        return b"<" * target
    j = rng.randrange(len(data))
    chunk = data[j : j + rng.randint(1, 64)]
    k = max(1, (target - len(data)) // len(chunk))
    return data[:j] + chunk * k + data[j:]


# -- running and recording -------------------------------------------------------------------


class Hang(BaseException):  # BaseException: not swallowed by a target's broad except
    """Raised by the watchdog in the middle of a target that runs too long."""


def _alarm(_sig: int, _frame: FrameType | None) -> None:
    raise Hang(f"input still running after {HANG_S:.0f} s")


@dataclass
class Stats:
    name: str
    inputs: int = 0
    exceptions: int = 0
    violations: int = 0
    hangs: int = 0
    times: list[float] = field(default_factory=list)
    wall: float = 0.0
    failures: dict[str, tuple[bytes, str]] = field(default_factory=dict)  # class -> (input, tb)
    failure_counts: dict[str, int] = field(default_factory=dict)
    slow: list[tuple[float, bytes]] = field(default_factory=list)
    signatures: dict[str, bytes] = field(default_factory=dict)
    new_saved: int = 0
    saved: list[str] = field(default_factory=list)
    replay: Stats | None = None  # the corpus files run before the generated inputs

    def report_line(self) -> str:
        ts = sorted(self.times)
        p99 = ts[min(len(ts) - 1, int(len(ts) * 0.99))] * 1000 if ts else 0.0
        mx = ts[-1] * 1000 if ts else 0.0
        over = sum(1 for t in ts if t > SLOW_FLAG_S)
        rate = self.inputs / self.wall if self.wall else 0.0
        flag = f"  FLAG: {over} inputs > 1 s" if over else ""
        return (
            f"{self.name:20} {self.inputs:8d} inputs  {self.exceptions:3d} exceptions  "
            f"{self.violations:3d} violations  {self.hangs} hangs  max {mx:8.2f} ms  "
            f"p99 {p99:6.3f} ms  {rate:7.0f} inputs/s  {len(self.signatures):3d} outcome classes"
            f"{flag}"
        )

    def summary(self) -> dict[str, Any]:
        ts = sorted(self.times)
        return {
            "target": self.name,
            "inputs": self.inputs,
            "exceptions": self.exceptions,
            "violations": self.violations,
            "hangs": self.hangs,
            "max_ms": round(ts[-1] * 1000, 3) if ts else 0.0,
            "p99_ms": round(ts[min(len(ts) - 1, int(len(ts) * 0.99))] * 1000, 3) if ts else 0.0,
            "over_1s": sum(1 for t in ts if t > SLOW_FLAG_S),
            "inputs_per_s": round(self.inputs / self.wall, 1) if self.wall else 0.0,
            "outcome_classes": len(self.signatures),
            "failure_classes": {k: self.failure_counts[k] for k in self.failure_counts},
        }


def _failure_class(exc: BaseException) -> str:
    """Type, first words of the message, and the innermost politecrawl frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = next(
        (f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames) if _in_package(f)),
        frames[-1].name if frames else "?",
    )
    # one class for every input of a kind: the message up to its first ':', digits dropped
    msg = str(exc).split(":")[0]
    msg = " ".join(re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "_", msg).split()[:6])
    return f"{type(exc).__name__}@{where}: {msg[:60]}"


def _package_dir() -> str:
    spec = importlib.util.find_spec("politecrawl")
    locations = spec.submodule_search_locations if spec is not None else None
    return str(Path(next(iter(locations or ["politecrawl"]))).resolve()) + os.sep


_PACKAGE_DIR = _package_dir()


def _in_package(frame: traceback.FrameSummary) -> bool:
    return str(Path(frame.filename).resolve()).startswith(_PACKAGE_DIR)


_WATCHDOG = False  # main process only: SIGALRM interrupts an input that runs past HANG_S


def run_one(target: Target, data: bytes, stats: Stats) -> str | None:
    """Run one input, time it, classify what happened; returns its outcome class or None."""
    t0 = time.perf_counter()
    sig: str | None = None
    try:
        if _WATCHDOG:
            signal.setitimer(signal.ITIMER_REAL, HANG_S)
        try:
            sig = target.run(data)
        finally:
            if _WATCHDOG:
                signal.setitimer(signal.ITIMER_REAL, 0)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # everything a target may not raise is a finding
        kind = _failure_class(exc)
        if isinstance(exc, Hang):
            stats.hangs += 1
        elif isinstance(exc, PropertyViolation):
            stats.violations += 1
        else:
            stats.exceptions += 1
        n = stats.failure_counts.get(kind, 0)
        stats.failure_counts[kind] = n + 1
        old = stats.failures.get(kind)
        if old is None or len(data) < len(old[0]):
            stats.failures[kind] = (data, "".join(traceback.format_exception(exc)))
    dt = time.perf_counter() - t0
    stats.inputs += 1
    stats.times.append(dt)
    if dt > SLOW_SAVE_S:
        stats.slow.append((dt, data))
        stats.slow.sort(key=lambda x: -x[0])
        del stats.slow[MAX_SLOW_PER_TARGET:]
    return sig


def scaling(target: Target, data: bytes) -> float:
    """How much longer the whole input takes than its first half (2: linear, 4: quadratic)."""

    def best(d: bytes) -> float:
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            with contextlib.suppress(Exception):
                target.run(d)
            times.append(time.perf_counter() - t0)
        return min(times)

    return best(data) / max(best(data[: len(data) // 2]), 1e-6)


def corpus_files(name: str) -> list[Path]:
    folder = CORPUS / name
    return sorted(p for p in folder.glob("*") if p.is_file()) if folder.is_dir() else []


def read_corpus_file(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def save(name: str, kind: str, data: bytes) -> str:
    folder = CORPUS / name
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1(data).hexdigest()[:12]
    existing = [p for p in folder.glob(f"*-{digest}*") if p.is_file()]
    if existing:
        return existing[0].name
    if len(data) > GZIP_ABOVE:
        path = folder / f"{kind}-{digest}.bin.gz"
        path.write_bytes(gzip.compress(data, 9, mtime=0))
    else:
        path = folder / f"{kind}-{digest}.bin"
        path.write_bytes(data)
    return path.name


def fuzz_random(target: Target, n: int, seed: int, save_files: bool) -> Stats:
    """The seeded generational + mutational engine."""
    rng = random.Random(f"{seed}/{target.name}")
    stats = Stats(target.name)
    pool = list(target.seeds)
    # Replay the existing corpus first (counted apart): its outcome classes are not "new".
    replay = stats.replay = Stats(target.name + "/corpus")
    for path in corpus_files(target.name):
        data = read_corpus_file(path)
        sig = run_one(target, data, replay)
        if sig is not None:
            stats.signatures.setdefault(sig, data)
        if len(data) <= 65536:
            pool.append(data)
    t0 = time.perf_counter()
    while stats.inputs < n:
        r = rng.random()
        if r < 0.6:
            data = target.gen(rng)
        elif r < 0.9:
            data = mutate(rng, target.gen(rng), target.tokens, pool)
        elif r < 0.97:
            data = mutate(rng, rng.choice(pool), target.tokens, pool)
        else:
            data = bytes(rng.randrange(256) for _ in range(rng.choice((0, 1, 8, 64, 512))))
        if rng.random() < 1 / 400:
            data = blow_up(rng, data)
        sig = run_one(target, data, stats)
        if sig is not None and sig not in stats.signatures:
            stats.signatures[sig] = data
            if len(data) <= 65536:
                pool.append(data)
                if len(pool) > 2000:
                    pool.pop(len(target.seeds) + rng.randrange(len(pool) - len(target.seeds)))
            if save_files and len(data) <= MAX_NEW_BYTES and stats.new_saved < MAX_NEW_PER_TARGET:
                stats.saved.append(save(target.name, "new", data))
                stats.new_saved += 1
    stats.wall = time.perf_counter() - t0
    if save_files:
        finish_saving(target, stats)
    return stats


def finish_saving(target: Target, stats: Stats) -> None:
    for kind, (data, _tb) in stats.failures.items():
        del kind
        stats.saved.append(save(target.name, "crash", data))
    for _dt, data in stats.slow:  # big inputs are slow by size: reported, not kept
        if len(data) <= MAX_SLOW_BYTES:
            stats.saved.append(save(target.name, "slow", data))


# -- atheris (coverage-guided) ---------------------------------------------------------------


def atheris_child(name: str, n: int, seed: int, result_path: str) -> None:
    """Run inside a child process: libFuzzer drives ``name`` for ``n`` inputs, then exits."""
    import atheris

    with atheris.instrument_imports(include=["politecrawl"]):
        targets = load_targets()
    target = targets[name]
    stats = Stats(name)
    t0 = time.perf_counter()

    def one(data: bytes) -> None:
        sig = run_one(target, data, stats)
        if sig is not None:
            stats.signatures.setdefault(sig, data)
        if stats.inputs >= n:
            stats.wall = time.perf_counter() - t0
            out = stats.summary()
            out["failures"] = {k: v[1] for k, v in stats.failures.items()}
            out["failure_inputs"] = {k: v[0].hex() for k, v in stats.failures.items()}
            out["slow_inputs"] = [[dt, d.hex()] for dt, d in stats.slow]
            out["times"] = [round(t, 6) for t in stats.times]
            Path(result_path).write_text(json.dumps(out))
            os._exit(0)

    seeds_dir = Path(tempfile.mkdtemp(prefix=f"pc-fuzz-{name}-"))
    rng = random.Random(seed)
    for i in range(200):
        (seeds_dir / f"g{i}").write_bytes(target.gen(rng))
    for path in corpus_files(name):
        (seeds_dir / path.name).write_bytes(read_corpus_file(path))
    args = [sys.argv[0], str(seeds_dir), f"-seed={seed}", "-max_len=8192", "-timeout=60",
            "-rss_limit_mb=4096", "-print_final_stats=0"]  # fmt: skip
    atheris.Setup(args, one)
    atheris.Fuzz()


def fuzz_atheris(target: Target, n: int, seed: int, save_files: bool) -> Stats:
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "result.json"
        proc = subprocess.run(
            [
                sys.executable,
                __file__,
                "--atheris-child",
                target.name,
                "--inputs",
                str(n),
                "--seed",
                str(seed),
                "--result",
                str(result),
            ],
            capture_output=True,
            text=True,
        )
        stats = Stats(target.name + "/atheris")
        if not result.exists():
            print(f"{target.name}: atheris child ended without a result (exit {proc.returncode})")
            print(proc.stderr[-3000:])
            stats.exceptions = 1
            stats.failure_counts["child died"] = 1
            return stats
        out = json.loads(result.read_text())
    stats.inputs = out["inputs"]
    stats.exceptions, stats.violations, stats.hangs = (
        out["exceptions"],
        out["violations"],
        out["hangs"],
    )
    stats.wall = out["inputs"] / out["inputs_per_s"] if out["inputs_per_s"] else 0.0
    stats.times = out["times"]
    stats.failure_counts = out["failure_classes"]
    stats.signatures = dict.fromkeys(range(out["outcome_classes"]), b"")  # type: ignore[arg-type]
    for kind, tb in out["failures"].items():
        stats.failures[kind] = (bytes.fromhex(out["failure_inputs"][kind]), tb)
    stats.slow = [(dt, bytes.fromhex(h)) for dt, h in out["slow_inputs"]]
    if save_files:
        finish_saving(target, stats)
    return stats


# -- main ------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=int, default=100_000, help="inputs per target (100000)")
    ap.add_argument("--only", default="", help="comma-separated target names")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--engine", choices=("random", "atheris", "both"), default="random")
    ap.add_argument("--no-save", action="store_true", help="do not write tests/fuzz_corpus/")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    ap.add_argument("--slow-dir", type=Path, help="also write every slow input (any size) here")
    ap.add_argument(
        "--write-regressions", action="store_true", help="(re)write the bug-* corpus files"
    )
    ap.add_argument("--atheris-child", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.atheris_child:
        atheris_child(args.atheris_child, args.inputs, args.seed, args.result)
        return 0
    if args.write_regressions:
        for rel, data in regressions().items():
            target, _, name = rel.partition("/")
            for old in (CORPUS / target).glob(name + "*"):
                old.unlink()
            path = CORPUS / (rel + ".gz" if len(data) > GZIP_ABOVE else rel)
            path.parent.mkdir(parents=True, exist_ok=True)
            if len(data) > GZIP_ABOVE:
                path.write_bytes(gzip.compress(data, 9, mtime=0))
            else:
                path.write_bytes(data)
            print(f"wrote {path.relative_to(ROOT)} ({len(data)} bytes)")
        return 0
    targets = load_targets()
    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(targets)
    unknown = [n for n in names if n not in targets]
    if unknown:
        ap.error(f"unknown target(s) {unknown}; known: {', '.join(targets)}")
    global _WATCHDOG
    signal.signal(signal.SIGALRM, _alarm)
    _WATCHDOG = True
    engines = ["random", "atheris"] if args.engine == "both" else [args.engine]
    results: list[Stats] = []
    print(f"{len(names)} targets x {args.inputs} inputs, seed {args.seed}, engine {args.engine}")
    for engine in engines:
        for name in names:
            target = targets[name]
            if engine == "random":
                stats = fuzz_random(target, args.inputs, args.seed, not args.no_save)
            else:
                stats = fuzz_atheris(target, args.inputs, args.seed, not args.no_save)
            results.append(stats)
            print(stats.report_line(), flush=True)
            if stats.replay is not None and stats.replay.inputs:
                r = stats.replay
                print(
                    f"    corpus replayed first: {r.inputs} files, "
                    f"{r.exceptions + r.violations + r.hangs} failing (known bugs: "
                    f"{', '.join(sorted(r.failure_counts)) or 'none'})"
                )
            for kind, count in sorted(stats.failure_counts.items()):
                data, tb = stats.failures.get(kind, (b"", ""))
                print(f"    {count:6d} x {kind}\n           smallest input {data[:200]!r}")
                if tb:
                    print("           " + tb.strip().splitlines()[-1])
            if args.slow_dir is not None:
                args.slow_dir.mkdir(parents=True, exist_ok=True)
                for dt, data in stats.slow:
                    digest = hashlib.sha1(data).hexdigest()[:12]
                    (args.slow_dir / f"{name}-{dt * 1000:.0f}ms-{digest}.bin").write_bytes(data)
            for dt, data in stats.slow[:2]:
                growth = scaling(target, data)
                print(
                    f"    slow: {dt * 1000:.0f} ms, {len(data)} bytes, time x{growth:.1f} for "
                    f"x2 size (4 = quadratic), starts {data[:60]!r}"
                )
    bad = sum(s.exceptions + s.violations + s.hangs for s in results)
    total = sum(s.inputs for s in results)
    print(f"total: {total} inputs, {bad} failures")
    if args.json:
        args.json.write_text(json.dumps([s.summary() for s in results], indent=2) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
