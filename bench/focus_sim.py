"""Offline replay of focused crawling on the real-page bed (bench/docbed.py): no HTTP, no delays.

    python bench/focus_sim.py [--bed tune|heldout] [--topics a,b] [--fetches 1000] [--contexts]

For tuning in seconds, not minutes. Every page of the bed is read from disk once (served bytes,
links rewritten as the server does) and parsed with ``parse.parse_page``; each strategy then
replays a crawl from the portal page with one global best-first queue, i.e. the order the
frontier gives when nothing waits on politeness (``--defer-ratio 1``). The crawler-side work is
the real one: ``Focus.score_page`` (extraction + nugget function), ``Focus.link_items``
(features, priorities), the rescoring of the queue as the model learns. Labels
(``docbed.Topic``) are only used to count.

Strategies: bfs, random, keyword (best-first by the topic prior, no learning), focused
(prior + learning) and the oracle (greedy by the true labels, following links only: a known
relevant URL first, else the known URL nearest to an unfetched relevant page).
"""

from __future__ import annotations

import argparse
import heapq
import random
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import docbed

from politecrawl.content.parse import ParsedPage, parse_page
from politecrawl.focus import prioritizer
from politecrawl.focus.relevance import Document, extract_page
from politecrawl.focus.strategy import Focus

PORT = 8  # URLs carry a port, as in a real crawl of the bed; its value does not matter
TOKEN = "simbot"
CHECKPOINTS = (100, 300, 1000)


@dataclass
class Bed:
    """The bed's pages by URL: body and parsed page (links in scope only)."""

    portal: str
    bodies: dict[str, bytes] = field(default_factory=dict)
    parsed: dict[str, ParsedPage] = field(default_factory=dict)
    docs: dict[str, Document] = field(default_factory=dict)
    contexts: dict[str, dict[str, str]] = field(default_factory=dict)  # page -> link -> text

    def links(self, url: str) -> list[str]:
        page = self.parsed.get(url)
        return [link.url for link in page.links] if page is not None else []


def load(bed: str) -> Bed:
    present = set(docbed.BEDS[bed])
    hosts = {f"{n}.{docbed.TLD}:{PORT}" for n in present} | {f"portal.{docbed.TLD}:{PORT}"}
    portal = f"http://portal.{docbed.TLD}:{PORT}/"
    b = Bed(portal)
    b.bodies[portal] = docbed.portal(bed, PORT)
    for site, path in docbed.pages(bed):
        url = f"http://{site.host}:{PORT}/{path}"
        b.bodies[url] = docbed.rewrite((site.path / path).read_bytes(), PORT, present)
    for url, body in b.bodies.items():
        page = parse_page(body, url, TOKEN)
        b.docs[url], b.contexts[url] = extract_page(body, url, "text/html")
        page.links = [
            link for link in page.links if link.url.split("/")[2] in hosts and "#" not in link.url
        ]
        b.parsed[url] = page
    return b


@dataclass
class Run:
    name: str
    order: list[str] = field(default_factory=list)
    cpu_s: float = 0.0

    def hits(self, topic: docbed.Topic) -> list[int]:
        return [int(docbed.is_relevant(topic, u)) for u in self.order]


def crawl(
    bed: Bed, topic: docbed.Topic, strategy: str, budget: int, seed: int = 0, contexts: bool = False
) -> Run:
    """One replayed crawl: ``strategy`` is bfs, random, keyword or focused; ``contexts``: the
    text around each link is also given to the prioritiser. The real crawl gives none (wired
    in and measured in real crawls, it gained nothing: docs/focus.md, section 10), so the
    replay leaves them out unless asked: until then it replayed a learner the crawl did not
    run (fifth: 0.124 at 300 with them, 0.110 without)."""
    run = Run(strategy)
    focus = Focus.from_options(strategy, topic.query, None, seed=seed)
    heap: list[tuple[float, int, str, int]] = []
    queued: dict[str, float] = {}  # URL -> its priority now; heap entries of another are stale
    seen = {bed.portal}
    stored: dict[bytes, str] = {}  # payload -> the URL it was first fetched at
    tick = 0
    heapq.heappush(heap, (-1e9, 0, bed.portal, 0))
    queued[bed.portal] = 1e9
    rng = random.Random(seed)
    depths: dict[str, int] = {}  # URL -> its depth when found
    t0 = time.process_time()

    def requeue(items: list[tuple[str, float]]) -> None:
        """New priorities for URLs still queued (an entry pushed again; the old one is stale)."""
        nonlocal tick
        for u, prio in items:
            if u in queued:
                queued[u] = prio
                tick += 1
                heapq.heappush(heap, (-prio, tick, u, depths.get(u, 0)))

    while heap and len(run.order) < budget:
        if strategy == "random":
            i = rng.randrange(len(heap))
            heap[i], heap[-1] = heap[-1], heap[i]
            neg, _, url, depth = heap.pop()
            heapq.heapify(heap) if i < len(heap) else None
        else:
            neg, _, url, depth = heapq.heappop(heap)
        if queued.get(url) != -neg:
            continue  # fetched already, or queued since at another priority
        del queued[url]
        run.order.append(url)
        body = bed.bodies.get(url)
        if body is None:  # a 404 on the bed: a fetch that found nothing
            requeue(focus.saw_no_page(url))
            continue
        score = focus.score_page(url, bed.docs[url])
        first = stored.setdefault(body, url)
        requeue(focus.saw_stored(url, first if first != url else None, score.relevant))
        if first != url:  # the bytes of a page taken before: a duplicate, links not followed
            continue
        page = bed.parsed[url]
        fresh = [lk for lk in page.links if lk.url not in seen]
        if url == bed.portal and seed:  # replays differ by the order the sites are listed in
            random.Random(seed).shuffle(fresh)
        around = bed.contexts[url] if contexts else None
        items = focus.link_items(url, fresh, depth + 1, score, around)
        for u, prio in items:
            if u in seen:
                continue
            seen.add(u)
            tick += 1
            queued[u] = prio
            depths[u] = depth + 1
            heapq.heappush(heap, (-prio, tick, u, depth + 1))
        if focus.rescore_due():
            requeue(focus.rescore())
    run.cpu_s = time.process_time() - t0
    return run


def oracle(bed: Bed, topic: docbed.Topic, budget: int) -> Run:
    """Greedy by the labels: a known relevant URL first, else the known URL nearest (in links)
    to a relevant page not yet fetched; distances recomputed as relevant pages are taken."""
    run = Run("oracle")
    graph = {u: bed.links(u) for u in bed.parsed}
    reverse: dict[str, list[str]] = {}
    for u, outs in graph.items():
        for v in outs:
            reverse.setdefault(v, []).append(u)
    fetched: set[str] = set()
    known = {bed.portal: 0}
    dist: dict[str, int] = {}

    def distances() -> dict[str, int]:
        targets = [u for u in bed.parsed if u not in fetched and docbed.is_relevant(topic, u)]
        d = dict.fromkeys(targets, 0)
        q = deque(targets)
        while q:
            v = q.popleft()
            for u in reverse.get(v, ()):
                if u not in d:
                    d[u] = d[v] + 1
                    q.append(u)
        return d

    stale = True
    while known and len(run.order) < budget:
        if stale:
            dist, stale = distances(), False
        url = min(known, key=lambda u: (dist.get(u, 1 << 30), known[u]))
        del known[url]
        fetched.add(url)
        run.order.append(url)
        if docbed.is_relevant(topic, url):
            stale = True
        for v in graph.get(url, ()):
            if v not in fetched and v not in known:
                known[v] = len(run.order)
    return run


def harvest(hits: list[int], n: int) -> float:
    return sum(hits[:n]) / n


def show(topic: docbed.Topic, name: str, runs: list[Run]) -> None:
    hits = [r.hits(topic) for r in runs]
    cells = " ".join(f"{sum(harvest(h, n) for h in hits) / len(hits):6.3f}" for n in CHECKPOINTS)
    cpu = sum(r.cpu_s for r in runs) / max(1, sum(len(r.order) for r in runs)) * 1000
    print(f"{topic.name:18} {name:8} {cells} {cpu:11.2f}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("--bed", choices=tuple(docbed.BEDS), default="tune")
    ap.add_argument("--topics", default="")
    ap.add_argument("--fetches", type=int, default=1000)
    ap.add_argument("--strategies", default="bfs,random,keyword,focused")
    ap.add_argument("--replays", type=int, default=1, help="mean of N portal orders")
    ap.add_argument("--contexts", action="store_true",
                    help="also the text around each link (the real crawl uses none)")  # fmt: skip
    ap.add_argument("--prior", default="", help="PRIOR_WEIGHTS to try, comma-separated")
    args = ap.parse_args()
    if args.prior:
        prioritizer.PRIOR_WEIGHTS = tuple(float(w) for w in args.prior.split(","))
    t0 = time.perf_counter()
    bed = load(args.bed)
    print(f"{len(bed.bodies)} pages loaded in {time.perf_counter() - t0:.1f} s")
    wanted = set(args.topics.split(",")) - {""}
    strategies = args.strategies.split(",")
    print(f"{'topic':18} {'strategy':8} {'@100':>6} {'@300':>6} {'@1000':>6} {'CPU ms/page':>11}")
    for topic in docbed.topics_for(args.bed):
        if wanted and topic.name not in wanted:
            continue
        for s in strategies:
            runs = [
                crawl(bed, topic, s, args.fetches, seed, args.contexts)
                for seed in range(args.replays)
            ]
            show(topic, s, runs)
        show(topic, "oracle", [oracle(bed, topic, args.fetches)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
