"""Throughput of politecrawl.urls.canonical.join (resolve + canonicalise) on a realistic link mix.

Run as ``python bench/urls.py [N]``.  Builds ~200k (base, href) pairs shaped like the
links of real pages (mostly relative and same-site, some off-site, fragments,
javascript:/mailto:, whitespace, percent-encoding, IDN hosts, session ids) from a
fixed seed, then times, in the same run:

* ``politecrawl.urls.canonical.join(base, href)``
* baseline: ``w3lib.url.canonicalize_url(urllib.parse.urljoin(base, href))``, what a
  Scrapy-style crawler does per link;
* canonicalisation alone on the resolved absolute URLs, ours vs
  ``w3lib.url.canonicalize_url``.
"""

from __future__ import annotations

import gc
import random
import sys
import time
from collections.abc import Callable, Sequence
from urllib.parse import urljoin

from w3lib.url import canonicalize_url

from politecrawl.urls.canonical import canonicalize, join

WORDS = (
    *("news", "sport", "about", "contact", "products", "item", "page", "article", "blog"),
    *("archive", "2024", "2023", "search", "tag", "category", "user", "profile", "help"),
    *("faq", "docs", "api", "en", "de", "fr", "index", "list", "view", "detail", "show", "edit"),
)
TLDS = ("com", "org", "net", "de", "co.uk", "fr", "io", "test")


def _word(rng: random.Random) -> str:
    return rng.choice(WORDS)


def _path(rng: random.Random, depth: int | None = None) -> str:
    depth = rng.randint(1, 4) if depth is None else depth
    parts = [_word(rng) for _ in range(depth - 1)]
    leaf = rng.random()
    if leaf < 0.4:
        parts.append(f"{_word(rng)}-{rng.randint(1, 10**6)}.html")
    elif leaf < 0.6:
        parts.append(f"{rng.randint(1, 10**7)}")
    elif leaf < 0.75:
        parts.append(f"{_word(rng)}.php")
    else:
        parts.append("")
    return "/".join(parts)


def _query(rng: random.Random) -> str:
    n = rng.choice((1, 1, 2, 3))
    return "&".join(f"{_word(rng)}={rng.randint(0, 999)}" for _ in range(n))


def make_links(n: int, seed: int = 20240501) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    hosts = [
        f"{rng.choice(('www.', '', 'blog.', 'shop.'))}site{i}.{rng.choice(TLDS)}"
        for i in range(300)
    ]
    bases = []
    for _ in range(2500):
        host = rng.choice(hosts)
        q = f"?{_query(rng)}" if rng.random() < 0.2 else ""
        bases.append(f"{rng.choice(('http', 'https'))}://{host}/{_path(rng)}{q}")
    pairs: list[tuple[str, str]] = []
    while len(pairs) < n:
        base = rng.choice(bases)
        host = base.split("/")[2]
        for _ in range(rng.randint(20, 150)):
            r = rng.random()
            if r < 0.25:
                href = _path(rng)  # relative
            elif r < 0.50:
                href = "/" + _path(rng) + (f"?{_query(rng)}" if rng.random() < 0.3 else "")
            elif r < 0.62:
                href = f"https://{host}/{_path(rng)}"  # absolute, same host
            elif r < 0.72:
                other = rng.choice(hosts)
                if rng.random() < 0.2:
                    other = other.upper()
                port = ":80" if rng.random() < 0.05 else ""
                href = f"http://{other}{port}/{_path(rng)}"
            elif r < 0.75:
                href = f"//{rng.choice(hosts)}/{_path(rng)}"
            elif r < 0.78:
                href = rng.choice(("#", "#top", "#content", f"#s{rng.randint(1, 99)}"))
            elif r < 0.83:
                href = "../" * rng.randint(1, 3) + _path(rng, 2)
            elif r < 0.86:
                sess = f"{rng.getrandbits(64):016X}"
                href = f"/{_path(rng)};jsessionid={sess}?PHPSESSID={sess}&id={rng.randint(1, 999)}"
            elif r < 0.90:
                href = rng.choice(
                    (
                        f"/search?q={_word(rng)}%20{_word(rng)}&lang=de",
                        f"/wiki/Caf%c3%a9_{rng.randint(1, 9999)}",
                        f"/stra\u00dfe/{rng.randint(1, 9999)}?ort=M\u00fcnchen",
                        f"/a%2fb/{_word(rng)} {_word(rng)}.html",
                    )
                )
            elif r < 0.93:
                href = f"  \n\t/{_path(rng)}\n  "
            elif r < 0.97:
                href = rng.choice(
                    (
                        "javascript:void(0)",
                        "mailto:info@example.com",
                        "tel:+4912345",
                        "javascript:history.back()",
                    )
                )
            elif r < 0.98:
                href = f"https://b\u00fccher-{rng.randint(1, 50)}.de/{_path(rng)}"
            else:
                href = f"{_path(rng)}#frag-{rng.randint(1, 99)}"
            pairs.append((base, href))
    return pairs[:n]


def _time(fn: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def run_ours(pairs: Sequence[tuple[str, str]]) -> list[str | None]:
    return [join(b, h) for b, h in pairs]


def run_w3lib(pairs: Sequence[tuple[str, str]]) -> list[str | None]:
    out: list[str | None] = []
    for b, h in pairs:
        try:
            out.append(canonicalize_url(urljoin(b, h.strip())))
        except ValueError:
            out.append(None)
    return out


def _canon_ours(urls: Sequence[str]) -> None:
    for u in urls:
        canonicalize(u)


def _canon_w3lib(urls: Sequence[str]) -> None:
    for u in urls:
        canonicalize_url(u)


def main(argv: list[str]) -> None:
    n = int(argv[1]) if len(argv) > 1 else 200_000
    pairs = make_links(n)
    ours_out = run_ours(pairs)
    valid = sum(1 for u in ours_out if u is not None)
    absolute = [urljoin(b, h.strip()) for b, h in pairs]
    absolute = [u for u in absolute if u.startswith("http")]
    print(f"{n} links ({valid} crawlable), {len({b for b, _ in pairs})} distinct pages")

    t_ours = _time(lambda: run_ours(pairs))
    t_w3 = _time(lambda: run_w3lib(pairs))
    for label, t in (
        ("join+canonicalize  politecrawl", t_ours),
        ("urljoin+w3lib.canonicalize_url", t_w3),
    ):
        print(f"{label}: {n / t:>9,.0f} links/s  {t / n * 1e6:5.2f} µs/link")
    print(f"ratio: politecrawl is {t_w3 / t_ours:.1f}x faster")

    m = len(absolute)
    t_c = _time(lambda: _canon_ours(absolute))
    t_cw = _time(lambda: _canon_w3lib(absolute))
    print(
        f"canonicalize alone ({m} absolute URLs): politecrawl {t_c / m * 1e6:.2f} µs/url, "
        f"w3lib {t_cw / m * 1e6:.2f} µs/url, ratio {t_cw / t_c:.1f}x"
    )


if __name__ == "__main__":
    main(sys.argv)
