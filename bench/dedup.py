"""Duplicates, offline: fingerprint cost and accuracy, rule cost, and fetches saved by rules.

    python bench/dedup.py [--sites 30] [--articles 40] [--fetches 15000] [--distinct 20000]
                          [--index-size 2000000] [--real DIR] [--quick]

No HTTP: pages come from the generators (``DupWeb.fetch``, ``TopicWeb.page``, ``TestWeb``'s
renderer) and every URL's true page is known (``DupWeb.locate``). Sections:

1. **Fingerprint cost**: ``simhash`` and ``exact_fingerprint`` in µs per 10 KB of visible text
   and per typical page, generated and real (the HTML under ``--real``, by default the Python
   documentation of the python3.11-doc package, its visible text read as the crawler does).
2. **False positives on distinct pages**: ``--distinct`` different pages (DupWeb canonical
   pages of many sites, which share each site's boilerplate and a template language, plus
   TopicWeb and TestWeb pages), visible text by ``relevance.extract_document``; every pair
   the index calls near-duplicates (distance <= 3: all of them, banding misses none) though
   the texts differ. Also real English: docstrings of the standard library.
3. **True positives on near-duplicates**: small edits of sampled pages (a changed date, a
   changed counter, a swapped ad block, a reordered "related" list, all four), by page length.
4. **NearDupIndex**: lookup µs and bytes per entry at ``--index-size`` entries.
5. **RuleLearner.apply**: µs per URL with no rules at all, rules on other hosts only, and
   rules on the URL's host.
6. **Crawl simulation** on DupWeb: BFS with no rules, with rules learned online (applied to
   links before queueing and again at dequeue), and with rules plus not following the links
   of pages whose text duplicates an earlier page's. Printed: fetches, distinct pages found,
   share of fetches wasted on a page already fetched under another URL, and the wasted share
   per slice of the crawl (rules are learned as it goes).
"""

from __future__ import annotations

import argparse
import ast
import gc
import itertools
import os
import random
import sys
import sysconfig
import time
import tracemalloc
from collections import Counter, deque
from collections.abc import Callable
from pathlib import Path

from politecrawl.content.page import read_page
from politecrawl.content.parse import parse_page
from politecrawl.continuity.duprules import RuleLearner
from politecrawl.continuity.fingerprint import (
    DEFAULT_SHINGLE,
    NearDupIndex,
    exact_fingerprint,
    hamming,
    simhash,
)
from politecrawl.demo.pages import render_page
from politecrawl.demo.web import TestWeb
from politecrawl.focus.relevance import extract_document

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test webs
from dupweb import DupWeb, FakeClock, PageRef
from topicweb import TopicWeb

PORT = 8000
UA = "dedupbench"


def text_of(body: bytes, url: str) -> str:
    return extract_document(body, url, "text/html; charset=utf-8").text


def best_us(
    fn: Callable[[str], object] | Callable[[int], object], items: list, repeats: int = 3
) -> float:
    """CPU µs per item, best of ``repeats`` passes (CPU time: the machine may be shared)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for item in items:
            fn(item)
        best = min(best, time.process_time() - start)
    return best / len(items) * 1e6


# -- corpora -----------------------------------------------------------------------------------


def dupweb_texts(n: int, seed: int = 11) -> list[str]:
    """Canonical pages of enough DupWeb sites: different pages sharing site boilerplate."""
    per_site = 60
    dw = DupWeb(max(1, n // (per_site + 5) + 1), per_site, seed, clock=FakeClock(), port=PORT)
    out: list[str] = []
    for ref in dw.pages():
        if len(out) >= n:
            break
        url = dw.canonical_url(ref)
        body = dw.page(url)
        if body is not None:
            out.append(text_of(body, url))
    return out


def topicweb_texts(n: int, seed: int = 5) -> list[str]:
    tw = TopicWeb(n_hosts=max(20, n // 9 + 20), pages_per_host=10, seed=seed, port=PORT)
    out: list[str] = []
    for h in tw.hosts:
        for j in range(h.n_pages):
            if len(out) >= n:
                return out
            url = tw.page_url(h.index, j)
            body = tw.page(url)
            if body is not None:
                out.append(text_of(body, url))
    return out


def testweb_texts(n: int, seed: int = 2) -> list[str]:
    tw = TestWeb(n_hosts=n // 10 + 1, pages_per_host=10, seed=seed, port=PORT)
    out: list[str] = []
    for i, host in enumerate(tw.hosts):
        for num in range(10):
            if len(out) >= n:
                return out
            path = "/" if num == 0 else f"/p/{num}.html"
            out.append(text_of(render_page(tw, i, num).encode(), tw.url(host, path)))
    return out


def real_texts(root: Path) -> list[str]:
    """The visible text of every HTML file under ``root`` (``page.read_page``, as crawled)."""
    out: list[str] = []
    for path in sorted(root.rglob("*.html")):
        page = read_page(path.read_bytes(), path.as_uri(), product_token=UA,
                         headers=[("content-type", "text/html")])  # fmt: skip
        out.append(page.visible_text)
    return out


_SKIP_DIRS = frozenset({"site-packages", "test", "tests", "idlelib", "__pycache__"})


def stdlib_docstrings(min_words: int = 40) -> list[str]:
    """Docstrings of the standard library (real English, all different), tests excluded."""
    root = sysconfig.get_paths()["stdlib"]
    out: list[str] = []
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            try:
                with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                    tree = ast.parse(f.read())
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(
                    node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
                ):
                    doc = ast.get_docstring(node)
                    if doc and len(doc.split()) >= min_words:
                        key = " ".join(doc.casefold().split())
                        if key not in seen:
                            seen.add(key)
                            out.append(doc)
    return out


# -- 1. cost -----------------------------------------------------------------------------------


def bench_cost(texts: list[str], real: list[str]) -> None:
    print("\n1. fingerprint cost")
    joined = " ".join(texts)
    chunks = [joined[i : i + 10_000] for i in range(0, len(joined) - 10_000, 10_000)][:200]
    sample = texts[:3000]
    avg = sum(map(len, sample)) / len(sample)
    for name, fn in (("simhash", simhash), ("exact_fingerprint", exact_fingerprint)):
        for c in chunks:  # warm the word-hash cache as a crawl would
            fn(c)
        per_10k = best_us(fn, chunks)
        per_page = best_us(fn, sample)
        line = f"   {name:18s} {per_10k:7.0f} µs per 10 KB of text; "
        line += f"{per_page:5.0f} µs per page (mean {avg:.0f} chars)"
        if real:
            words = sum(len(t.split()) for t in real) / len(real)
            line += f"; {best_us(fn, real):5.0f} µs per real page (mean {words:.0f} words)"
        print(line)


# -- 2. false positives ------------------------------------------------------------------------


def false_positives(texts: list[str], label: str, max_distance: int = 3) -> tuple[int, int]:
    """(pairs within max_distance whose texts differ, pages in such a pair); prints them."""
    fps = [simhash(t) for t in texts]
    exact = [exact_fingerprint(t) for t in texts]
    index = NearDupIndex(max_distance, capacity=len(texts) + 1)
    pairs = 0
    pages: set[int] = set()
    same = 0
    by_distance: Counter[int] = Counter()
    examples: list[tuple[int, int, int]] = []
    for i, fp in enumerate(fps):
        for doc, d in index.near(fp):
            assert isinstance(doc, int)
            if exact[doc] == exact[i]:
                same += 1
                continue
            pairs += 1
            by_distance[d] += 1
            pages.update((doc, i))
            if len(examples) < 2:
                examples.append((doc, i, d))
        index.add(fp, i)
    n = len(texts)
    total = n * (n - 1) // 2
    dist = dict(sorted(by_distance.items()))
    print(
        f"   {label}: {n} pages, {total:.2e} pairs: {pairs} near-duplicate pairs of different "
        f"text ({pairs / total:.1e} of pairs; {len(pages)} pages = {len(pages) / n:.3%}) "
        f"by distance {dist}; {same} exact duplicates skipped"
    )
    for a, b, d in examples:
        print(f"      d={d}: {texts[a][:90]!r}\n           {texts[b][:90]!r}")
    return pairs, len(pages)


# -- 3. true positives -------------------------------------------------------------------------

_MONTHS_TEXT = "January February March April May June July August September October November"
_MONTHS = _MONTHS_TEXT.split()
_ADS = (
    "Subscribe now and save 20% on your first order with code SPRING today only",
    "Win a weekend break for two: enter our free prize draw before Friday midnight",
    "Advertisement: fast broadband from only 19.99 a month, switch in minutes, no fees",
    "Sponsored: the new electric hatchback, book a test drive at your local dealer now",
    "Download our app for offers, alerts and exclusive members-only discounts every week",
)
EDITS = ("date", "counter", "ad", "reorder", "all")


def near_dup_pair(rng: random.Random, text: str) -> tuple[str, dict[str, str]]:
    """A page (text with a date, a counter, an ad and a related list) and its edited copies."""
    words = text.split()

    def date() -> str:
        return f"Updated {rng.randint(1, 28)} {rng.choice(_MONTHS)} {rng.randint(2015, 2025)}"

    def counter() -> str:
        return f"{rng.randint(100, 99_999):,} views"

    related = [
        " ".join(rng.choice(words) for _ in range(rng.randint(3, 5))).capitalize() for _ in range(6)
    ]
    cut = rng.randrange(len(words) + 1)
    base = [
        date(),
        counter(),
        " ".join(words[:cut]),
        _ADS[0],
        " ".join(words[cut:]),
        "Related: " + "; ".join(related),
    ]

    def edited(*what: str) -> str:
        parts = list(base)
        if "date" in what:
            parts[0] = date()
        if "counter" in what:
            parts[1] = counter()
        if "ad" in what:
            parts[3] = rng.choice(_ADS[1:])
        if "reorder" in what:
            shuffled = related[:]
            while shuffled == related:
                rng.shuffle(shuffled)
            parts[5] = "Related: " + "; ".join(shuffled)
        return " ".join(parts)

    return " ".join(base), {e: edited(*(EDITS[:4] if e == "all" else (e,))) for e in EDITS}


def bench_true_positives(texts: list[str], samples: int, shingles: tuple[int, ...]) -> None:
    print(f"\n3. near-duplicates found (distance <= 3) after small edits, {samples} pages each")
    print("   (in brackets: ad, reorder, all at distance <= 6, which would need 7 bands)")
    for mult, label in ((1, "one page"), (2, "two pages"), (4, "four pages")):
        rng = random.Random(7)
        bases = [" ".join(rng.choice(texts) for _ in range(mult)) for _ in range(samples)]
        words = sorted(len(b.split()) for b in bases)[len(bases) // 2]
        for k in shingles:
            rng = random.Random(11)
            hits: Counter[str] = Counter()
            loose: Counter[str] = Counter()
            for b in bases:
                base, edits = near_dup_pair(rng, b)
                fb = simhash(base, shingle=k)
                for name, t in edits.items():
                    d = hamming(fb, simhash(t, shingle=k))
                    hits[name] += d <= 3
                    loose[name] += d <= 6
            rates = "  ".join(f"{e} {hits[e] / samples:4.0%}" for e in EDITS)
            wider = " ".join(f"{loose[e] / samples:4.0%}" for e in EDITS[2:])
            print(f"   {label:10s} (~{words:4d} words) shingle={k}: {rates}   (<= 6: {wider})")


# -- 4. index ----------------------------------------------------------------------------------


def bench_index(size: int) -> None:
    print(f"\n4. NearDupIndex (4 bands of 16 bits): memory at {size:,} entries")
    rng = random.Random(3)
    fps = [rng.getrandbits(64) for _ in range(size)]
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    index = NearDupIndex(3, capacity=size)
    for i, fp in enumerate(fps):
        index.add(fp, i)
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    queries = [fp ^ (1 << rng.randrange(64)) ^ (1 << rng.randrange(64)) for fp in fps[:20_000]]
    misses = [rng.getrandbits(64) for _ in range(20_000)]
    found = sum(index.find(q) is not None for q in queries)
    hit_us = best_us(index.find, queries)
    miss_us = best_us(index.find, misses)
    del index
    gc.collect()
    small = fps[:200_000]
    start = time.process_time()
    grow = NearDupIndex(3, capacity=len(small))
    for i, fp in enumerate(small):
        grow.add(fp, i)
    add_us = (time.process_time() - start) / len(small) * 1e6
    start = time.process_time()
    full = NearDupIndex(3, capacity=len(small) // 2)
    for i, fp in enumerate(small):
        full.add(fp, i)
    evict_us = (time.process_time() - start) / len(small) * 1e6
    print(
        f"   {used / 2**20:.0f} MiB ({used / size:.0f} bytes per entry, int doc ids); find "
        f"{hit_us:.1f} µs (near hit, {found}/{len(queries)} found), {miss_us:.1f} µs (miss); "
        f"add {add_us:.1f} µs, {evict_us:.1f} µs when full (eviction)"
    )


# -- 5. apply ----------------------------------------------------------------------------------


def bench_apply() -> None:
    print("\n5. RuleLearner.apply per URL")
    rng = random.Random(5)
    urls = [
        f"http://site{rng.randrange(5000)}.example/articles/Item-{rng.randrange(10**6)}/"
        f"?id={rng.randrange(100)}&utm_source=x"
        for _ in range(50_000)
    ]
    empty = RuleLearner()
    other = RuleLearner(min_support=1)
    for i in range(200):  # rules on 200 hosts that the URLs never use
        host = f"other{i}.example"
        for k in range(3):
            other.observe_duplicate(f"http://{host}/p{k}/", f"http://{host}/p{k}/?utm_source=a")
    ruled = RuleLearner(min_support=1)
    for i in range(5000):
        h = f"site{i}.example"
        a = f"http://{h}/articles/a/"
        ruled.observe_duplicate(a, a + "?utm_source=x")
        ruled.observe_duplicate(a, a.replace("://", "://www."))
        ruled.observe_duplicate(a, f"http://{h}/ARTICLES/A/")
        ruled.observe_duplicate(a, a + "index.html")
    for label, learner in (
        ("no rules at all", empty),
        ("rules on other hosts", other),
        ("4 rules on the URL's host", ruled),
    ):
        us = best_us(learner.apply, urls)
        print(f"   {label:26s} {us:5.2f} µs/URL")
    print(f"   e.g. {urls[0]} -> {ruled.apply(urls[0])}")


# -- 6. crawl simulation -----------------------------------------------------------------------


def crawl(dw: DupWeb, fetches: int, mode: str) -> tuple[list[bool], int, RuleLearner | None]:
    """BFS over DupWeb; returns (wasted? per fetch, distinct pages fetched, the learner)."""
    learner = RuleLearner() if mode != "none" else None
    queue: deque[str] = deque(dw.seed_urls())
    seen: set[str] = set(queue)
    fetched_pages: set[PageRef] = set()
    texts: dict[str, str] = {}  # exact fingerprint -> first URL with that text
    wasted: list[bool] = []
    while queue and len(wasted) < fetches:
        url = queue.popleft()
        if learner is not None:
            canonical = learner.apply(url)
            if canonical != url:  # a rule learned since this URL was queued
                if canonical in seen:
                    continue
                seen.add(canonical)
                url = canonical
        body = dw.page(url)
        ref = dw.locate(url)
        if body is None or ref is None:
            wasted.append(True)
            continue
        wasted.append(ref in fetched_pages)
        fetched_pages.add(ref)
        text = text_of(body, url)
        exact = exact_fingerprint(text)
        first = texts.setdefault(exact, url)
        if learner is not None:
            learner.observe_page(url, exact, simhash(text))
            if mode == "rules+skip" and first != url:
                continue  # the same text was fetched before: its links were followed then
        for link in parse_page(body, url, UA).links:
            target = link.url if learner is None else learner.apply(link.url)
            if target not in seen:
                seen.add(target)
                queue.append(target)
    return wasted, len(fetched_pages), learner


def bench_crawl(sites: int, articles: int, fetches: int) -> None:
    dw = DupWeb(sites, articles, seed=3, clock=FakeClock(), port=PORT)
    total = len(dw.pages())
    print(
        f"\n6. BFS crawl simulation: DupWeb {sites} sites, {total} distinct pages, "
        f"budget {fetches} fetches"
    )
    slices = 5
    for mode, label in (
        ("none", "no rules"),
        ("rules", "rules learned online"),
        ("rules+skip", "rules + skip links of dup text"),
    ):
        start = time.process_time()
        wasted, found, learner = crawl(dw, fetches, mode)
        cpu = time.process_time() - start
        n = len(wasted)
        share = sum(wasted) / n if n else 0.0
        bounds = [n * k // slices for k in range(slices + 1)]
        parts = " ".join(
            f"{sum(wasted[lo:hi]) / (hi - lo):4.0%}"
            for lo, hi in itertools.pairwise(bounds)
            if hi > lo
        )
        to95 = next(
            (i + 1 for i, _ in enumerate(wasted) if i + 1 - sum(wasted[: i + 1]) >= 0.95 * total),
            None,
        )
        print(
            f"   {label:32s} fetches {n:6d}  pages found {found:5d}/{total} "
            f"wasted {share:6.1%}  by fifths: {parts}  fetches to 95% of pages: "
            f"{to95 if to95 is not None else '-'}  ({cpu:.1f} CPU s)"
        )
        if learner is not None and mode == "rules":
            rules = learner.new_rules()
            revoked = learner.revoked_rules()
            kinds = Counter(r.kind for r in rules)
            print(f"      {len(rules)} rules learned ({dict(kinds)}), {len(revoked)} revoked; e.g.")
            for r in rules[:6]:
                print(f"        {r.describe()}")
            for r in revoked[:3]:
                print(f"        revoked: {r.describe()}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sites", type=int, default=30)
    p.add_argument("--articles", type=int, default=40)
    p.add_argument("--fetches", type=int, default=15_000)
    p.add_argument("--distinct", type=int, default=20_000)
    p.add_argument("--index-size", type=int, default=2_000_000)
    p.add_argument("--samples", type=int, default=1000, help="pages per near-duplicate edit")
    p.add_argument(
        "--real",
        type=Path,
        default=Path("/usr/share/doc/python3.11/html"),
        help="HTML files for the real-page cost (skipped if absent)",
    )
    p.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    args = p.parse_args(argv)
    if args.quick:
        args.sites, args.articles, args.fetches = 6, 15, 2000
        args.distinct, args.index_size, args.samples = 2000, 20_000, 100
    print(f"python {sys.version.split()[0]}, simhash shingle={DEFAULT_SHINGLE}, max distance 3")

    t0 = time.time()
    n_dup = args.distinct * 6 // 10
    n_topic = args.distinct * 3 // 10
    corpus = {
        "dupweb": dupweb_texts(n_dup),
        "topicweb": topicweb_texts(n_topic),
        "testweb": testweb_texts(args.distinct - n_dup - n_topic),
    }
    everything = [t for texts in corpus.values() for t in texts]
    print(f"(corpus: {len(everything)} pages in {time.time() - t0:.0f} s)")
    real = real_texts(args.real) if args.real.is_dir() else []
    print(f"(real pages: {len(real)} under {args.real})")
    bench_cost(everything, real)
    print("\n2. near-duplicate false positives among distinct pages (simhash, distance <= 3)")
    false_positives(everything, "all generated pages")
    false_positives(corpus["dupweb"], "dupweb only (shared site boilerplate)")
    false_positives(stdlib_docstrings(), "stdlib docstrings (real English)")
    bench_true_positives(corpus["dupweb"], args.samples, (2, 3, 4))
    bench_index(args.index_size)
    bench_apply()
    bench_crawl(args.sites, args.articles, args.fetches)
    if not args.quick:  # bigger sites: learning a site's rules costs the same, pages more
        bench_crawl(10, 200, 30_000)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
