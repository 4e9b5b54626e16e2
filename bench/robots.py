"""Benchmark politecrawl.robots.rules against protego on identical inputs.

Run: ``python bench/robots.py`` (about 30-45 s). Prints, for both parsers:

* parses/s over a set of small realistic robots.txt files and over one large
  file (thousands of rules, a third of them wildcards);
* URL checks/s against the same files (steady state, after the first check);
* conformance: how many of the 145 ``IsUserAgentAllowed`` assertions of
  Google's robots_test.cc each passes (the table lives in
  tests/test_robots_conformance.py), strictly and with our four documented
  RFC 9309 deviations;
* a pathological 5 MiB file (parse + queries);
* how often the two parsers disagree on the benchmark URLs.

Everything is generated from a fixed seed, so runs are comparable.
"""

from __future__ import annotations

import importlib.util
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from protego import Protego

from politecrawl.robots.rules import RobotsRules

ROOT = Path(__file__).resolve().parent.parent
UA = "acmebot/1.0 (+https://acme.example/bot)"
BUDGET = 1.5  # seconds per timed section


# --- inputs -------------------------------------------------------------------

SMALL_FILES: list[str] = [
    # WordPress default
    "User-agent: *\nDisallow: /wp-admin/\nAllow: /wp-admin/admin-ajax.php\n\n"
    "Sitemap: https://blog.example/wp-sitemap.xml\n",
    # empty / allow all / disallow all
    "",
    "User-agent: *\nDisallow:\n",
    "User-agent: *\nDisallow: /\n",
    # shop with faceted navigation
    "User-agent: *\nDisallow: /cart\nDisallow: /checkout\nDisallow: /account/\n"
    "Disallow: /*?sort=\nDisallow: /*&sort=\nDisallow: /*?filter=\nDisallow: /*&filter=\n"
    "Disallow: /search\nAllow: /search/help\nDisallow: /*.json$\nCrawl-delay: 2\n"
    "Sitemap: https://shop.example/sitemap_index.xml\n",
    # news site, several crawlers
    "User-agent: Googlebot\nDisallow: /preview/\n\nUser-agent: Bingbot\nCrawl-delay: 5\n"
    "Disallow: /preview/\nDisallow: /api/\n\nUser-agent: GPTBot\nUser-agent: CCBot\nDisallow: /\n\n"
    "User-agent: *\nDisallow: /preview/\nDisallow: /api/\nDisallow: /*/amp$\nDisallow: /*?utm_\n"
    "Allow: /api/public/\nSitemap: https://news.example/sitemap.xml\n"
    "Sitemap: https://news.example/news-sitemap.xml\n",
    # MediaWiki-like
    "User-agent: *\nAllow: /w/load.php?\nDisallow: /w/\nDisallow: /api/\nDisallow: /trap/\n"
    "Disallow: /wiki/Special:\nDisallow: /wiki/Special%3A\nDisallow: /wiki/Spezial:\n"
    "Disallow: /*action=edit\nDisallow: /*action=history\nDisallow: /*oldid=\n",
    # our bot named explicitly, comments, mixed case, CRLF
    "# robots for example.org\r\nUser-Agent: AcmeBot # us\r\nDisallow: /private/\r\n"
    "Allow: /private/press/\r\nCrawl-delay: 0.5\r\n\r\nUser-agent: *\r\nDisallow: /\r\n",
    # Drupal default (abridged)
    "User-agent: *\nAllow: /core/*.css$\nAllow: /core/*.js$\nAllow: /profiles/*.png$\n"
    "Disallow: /core/\nDisallow: /profiles/\nDisallow: /README.md\nDisallow: /admin/\n"
    "Disallow: /comment/reply/\nDisallow: /filter/tips\nDisallow: /node/add/\n"
    "Disallow: /search/\nDisallow: /user/register\nDisallow: /user/password\n"
    "Disallow: /user/login\nDisallow: /user/logout\nDisallow: /index.php/admin/\n"
    "Disallow: /index.php/comment/reply/\n",
    # forum
    "User-agent: *\nDisallow: /memberlist.php\nDisallow: /posting.php\nDisallow: /search.php\n"
    "Disallow: /ucp.php\nDisallow: /viewtopic.php?p=\nDisallow: /*&sid=\nDisallow: /*?sid=\n"
    "Disallow: /*&view=print\nHost: forum.example\n",
    # unknown lines inside groups, typos, no colon
    "User-agent: acmebot\nHost: example.com\nNoindex: /x\nDissallow: /tmp\n"
    "Disallow /old\nClean-param: ref /articles/\nAllow: /tmp/public\n",
    # wildcard heavy
    "User-agent: *\nDisallow: /*/print/\nDisallow: /*/feed/$\nDisallow: /*.pdf$\n"
    "Disallow: /*/*/comments\nDisallow: /*?*replytocom\nAllow: /*/print/*.css$\n",
]


def large_file(rng: random.Random) -> str:
    """A big e-commerce-style file: ~4000 rules in four groups, a third wildcards."""
    words = [
        "shoes",
        "bags",
        "kids",
        "sale",
        "men",
        "women",
        "home",
        "garden",
        "toys",
        "books",
        "music",
        "sport",
        "outdoor",
        "beauty",
        "tech",
        "audio",
    ]
    params = ["sort", "filter", "color", "size", "page", "sessionid", "ref", "utm_source", "view"]
    exts = ["pdf", "json", "xml", "csv", "zip", "php", "asp"]
    out: list[str] = []
    for agent in ("Googlebot", "Bingbot", "acmebot", "*"):
        out.append(f"User-agent: {agent}")
        for i in range(1000):
            w = rng.choice(words)
            r = rng.random()
            if r < 0.6:
                kind = "Allow" if rng.random() < 0.2 else "Disallow"
                out.append(f"{kind}: /{w}/{rng.choice(words)}-{i}/")
            elif r < 0.8:
                out.append(f"Disallow: /*?{rng.choice(params)}={i}")
            elif r < 0.9:
                out.append(f"Disallow: /{w}/*.{rng.choice(exts)}$")
            else:
                out.append(f"Disallow: /{w}/*/{rng.choice(params)}/*{i}")
        out.append("Crawl-delay: 1")
        out.append("")
    out.append("Sitemap: https://big.example/sitemap.xml")
    return "\n".join(out) + "\n"


def urls(rng: random.Random, n: int) -> list[str]:
    """Realistic URLs: nested paths, ids, extensions, tracking and facet parameters."""
    segs = [
        "shoes",
        "bags",
        "sale",
        "wp-admin",
        "search",
        "wiki",
        "w",
        "private",
        "api",
        "core",
        "user",
        "blog",
        "2024",
        "news",
        "print",
        "feed",
        "kids",
        "tech",
    ]
    exts = ["", "", "", ".html", ".php", ".pdf", ".json", ".css", ".js"]
    params = ["sort", "filter", "ref", "utm_source", "sid", "page", "action", "oldid", "id"]
    out = []
    for _ in range(n):
        depth = rng.randint(1, 4)
        path = "/" + "/".join(
            rng.choice(segs) if rng.random() < 0.7 else f"item-{rng.randint(1, 5000)}"
            for _ in range(depth)
        )
        path += rng.choice(exts)
        if rng.random() < 0.3:
            path += "/"
        if rng.random() < 0.4:
            path += "?" + "&".join(
                f"{rng.choice(params)}={rng.randint(1, 999)}" for _ in range(rng.randint(1, 3))
            )
        out.append("https://www.example.com" + path)
    return out


# --- timing -----------------------------------------------------------------


def rate(fn: Callable[[], int], budget: float = BUDGET) -> float:
    """Operations per second: call ``fn`` (which returns how many ops it did) for ``budget`` s."""
    fn()  # warm-up
    done = 0
    start = time.perf_counter()
    while True:
        done += fn()
        elapsed = time.perf_counter() - start
        if elapsed >= budget:
            return done / elapsed


def fmt(x: float) -> str:
    return f"{x:>12,.0f}"


def row(label: str, ours: float, theirs: float) -> None:
    print(f"  {label:<34}{fmt(ours)}{fmt(theirs)}   x{ours / theirs:5.1f}")


# --- conformance --------------------------------------------------------------


def load_google_cases() -> dict[str, Any]:
    path = ROOT / "tests" / "test_robots_conformance.py"
    spec = importlib.util.spec_from_file_location("_robots_conformance", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    cases: dict[str, Any] = module.GOOGLE_CASES
    return cases


def protego_allowed(body: str, agent: str, url: str) -> bool | None:
    try:
        return bool(Protego.parse(body).can_fetch(url, agent))
    except Exception:
        return None


def conformance() -> None:
    cases = load_google_cases()
    flat = [(name, c) for name, group in cases.items() for c in group]
    ours_strict = ours_doc = theirs_strict = theirs_doc = 0
    ours_miss: list[str] = []
    theirs_miss: dict[str, int] = {}
    for name, c in flat:
        got = RobotsRules.parse(c.robotstxt).is_allowed(c.agent, c.url)
        ours_strict += got == c.google
        ours_doc += got == c.expected
        if got != c.google:
            ours_miss.append(name)
        theirs = protego_allowed(c.robotstxt, c.agent, c.url)
        theirs_strict += theirs == c.google
        theirs_doc += theirs == c.expected
        if theirs != c.google:
            theirs_miss[name] = theirs_miss.get(name, 0) + 1
    n = len(flat)
    print(f"\nConformance: Google robots_test.cc, {n} IsUserAgentAllowed assertions")
    print(f"  {'':<34}{'politecrawl':>12}{'protego':>12}")
    print(f"  {'strict (Google expectation)':<34}{ours_strict:>8}/{n}{theirs_strict:>8}/{n}")
    print(f"  {'with RFC 9309 deviations (x4)':<34}{ours_doc:>8}/{n}{theirs_doc:>8}/{n}")
    print(f"  politecrawl misses (deliberate): {sorted(set(ours_miss))}")
    print(f"  protego misses by TEST: {theirs_miss}")
    bom = "\ufeffUser-agent: *\nDisallow: /private/\n"
    ours_bom = not RobotsRules.parse(bom.encode()).is_allowed(UA, "/private/x")
    theirs_bom = protego_allowed(bom, UA, "https://e.example/private/x") is False
    print(f"  UTF-8 BOM file applies its rules:   politecrawl={ours_bom}  protego={theirs_bom}")
    unk = "User-agent: FooBot\nInvalid-Unknown-Line: x\nUser-agent: *\nDisallow: /\n"
    ours_unk = not RobotsRules.parse(unk).is_allowed("FooBot", "/")
    theirs_unk = protego_allowed(unk, "FooBot", "https://e.example/") is False
    print(f"  unknown line keeps the group open: politecrawl={ours_unk}  protego={theirs_unk}")


# --- main -------------------------------------------------------------------


def main() -> None:
    t0 = time.perf_counter()
    rng = random.Random(9309)
    big = large_file(rng)
    test_urls = urls(rng, 2000)
    small_bytes = [s.encode() for s in SMALL_FILES]
    big_bytes = big.encode()
    n_rules = sum(line.split(":")[0] in ("Allow", "Disallow") for line in big.splitlines())
    print(
        f"Inputs: {len(SMALL_FILES)} small files, 1 large file "
        f"({len(big_bytes) / 1024:.0f} KiB, {n_rules} rules), {len(test_urls)} URLs, UA {UA!r}"
    )
    print(f"  {'':<34}{'politecrawl':>12}{'protego':>12}   ratio (ours/protego)")

    ours_small_parse = rate(
        lambda: [RobotsRules.parse(b) for b in small_bytes] and len(small_bytes)
    )
    theirs_small_parse = rate(lambda: [Protego.parse(s) for s in SMALL_FILES] and len(SMALL_FILES))
    row("parses/s, small files", ours_small_parse, theirs_small_parse)

    ours_big_parse = rate(lambda: RobotsRules.parse(big_bytes) and 1)
    theirs_big_parse = rate(lambda: Protego.parse(big) and 1)
    row("parses/s, large file", ours_big_parse, theirs_big_parse)

    def ours_first() -> int:
        RobotsRules.parse(big_bytes).is_allowed(UA, test_urls[0])
        return 1

    def theirs_first() -> int:
        Protego.parse(big).can_fetch(test_urls[0], UA)
        return 1

    row("parse + first check/s, large file", rate(ours_first), rate(theirs_first))

    ours_small = [RobotsRules.parse(b) for b in small_bytes]
    theirs_small = [Protego.parse(s) for s in SMALL_FILES]

    def ours_small_checks() -> int:
        for r in ours_small:
            for u in test_urls[:300]:
                r.is_allowed(UA, u)
        return len(ours_small) * 300

    def theirs_small_checks() -> int:
        for p in theirs_small:
            for u in test_urls[:300]:
                p.can_fetch(u, UA)
        return len(theirs_small) * 300

    row("checks/s, small files", rate(ours_small_checks), rate(theirs_small_checks))

    ours_big = RobotsRules.parse(big_bytes)
    theirs_big = Protego.parse(big)

    def ours_big_checks() -> int:
        for u in test_urls:
            ours_big.is_allowed(UA, u)
        return len(test_urls)

    def theirs_big_checks() -> int:
        for u in test_urls[:200]:
            theirs_big.can_fetch(u, UA)
        return 200

    row("checks/s, large file", rate(ours_big_checks), rate(theirs_big_checks))

    disagree = total = 0
    for body, r, p in [
        (big, ours_big, theirs_big),
        *zip(SMALL_FILES, ours_small, theirs_small, strict=True),
    ]:
        del body
        for u in test_urls[:500]:
            total += 1
            disagree += r.is_allowed(UA, u) != p.can_fetch(u, UA)
    print(f"  verdicts differing on bench URLs: {disagree}/{total}")

    conformance()

    print("\nPathological: 5 MiB file, 100k+ lines, patterns like /p1/*x*y*z$, 2 KB paths")
    lines = ["User-agent: *"]
    lines += [f"Disallow: /p{i}/*x*y*z$" if i % 3 else f"Allow: /p{i}/" for i in range(100_000)]
    huge = ("\n".join(lines) + "\n") * 3
    long_paths = [f"https://e.example/p{i}/" + "x" * 2000 for i in range(100)]
    start = time.perf_counter()
    r = RobotsRules.parse(huge.encode())
    parse_s = time.perf_counter() - start
    r.is_allowed(UA, long_paths[0])
    start = time.perf_counter()
    for u in long_paths:
        r.is_allowed(UA, u)
    per_q = (time.perf_counter() - start) / len(long_paths)
    print(f"  politecrawl: parse {parse_s:.2f} s (500 KiB cap), {per_q * 1e3:.3f} ms/query")
    start = time.perf_counter()
    p = Protego.parse(huge)
    parse_s = time.perf_counter() - start
    start = time.perf_counter()
    for u in long_paths[:3]:
        p.can_fetch(u, UA)
    per_q = (time.perf_counter() - start) / 3
    print(f"  protego:     parse {parse_s:.2f} s (no cap),       {per_q * 1e3:.3f} ms/query")
    print(f"\nTotal bench time {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
