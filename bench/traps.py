"""The trap guard's precision and recall: documentation bed, test webs, calendars and traps.

    python bench/traps.py [--max-pages 20000] [--bed all] [--json]

Each web is crawled breadth-first, in this process, through the crawler's own gate
(``admission.Gate``: the shape rules, then ``traps.UrlSpaces`` with the crawl's defaults) and
its own link extraction (``page.read_page``); pages come from the files of the documentation
bed (``bench/docbed.py``: Debian doc packages, one host each), from the test web
(``demo.web.TestWeb``: numbered pages linking one another and other hosts) and from the
sites of ``tests/originweb.py`` (a forum, a numbered site, a webcomic, calendars and traps).
No network: what a crawl would fetch is read from the web's own code; the guard is told what
each page was (``UrlSpaces.page``: its text, a duplicate payload, no page), as the crawl does.
Ground truth: every site of the bed and the
test webs ends, so each pattern named there is a false positive and each page the guard
refused is lost; the calendars and the trap sites are endless, and are counted caught when
the guard named them before ``--max-pages``. Printed: per web, pages fetched, pages of the
web refused by the guard, patterns named (and why), requests until the trap was named; then
precision (named patterns that are traps) and recall (traps named). The guard before issue 28
in the same conditions: ``PYTHONPATH=<a checkout of it>/src python bench/traps.py``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test webs

import docbed
from originweb import calendar, empty_listing, forum, numbered, session_ids, webcomic

from politecrawl.config import CrawlConfig, FetchConfig
from politecrawl.content.page import read_page
from politecrawl.demo.site import build_reply
from politecrawl.demo.web import TestWeb
from politecrawl.engine.admission import Gate
from politecrawl.urls.canonical import canonicalize, host_of

Fetch = Callable[[str], bytes | None]


@dataclass
class Run:
    """One web crawled through the gate."""

    web: str
    endless: bool
    fetched: int = 0
    refused: int = 0  # URLs the trap guard refused (on a web that ends: pages lost)
    named: list[tuple[str, str, str, int]] = field(default_factory=list)  # host, pattern, why, n
    seconds: float = 0.0


def crawl(name: str, seeds: list[str], fetch: Fetch, max_pages: int, *, endless: bool) -> Run:
    """Breadth-first through the real gate; a page's links are admitted as the crawler does."""
    cfg = CrawlConfig(
        seeds=tuple(seeds),
        out_dir=Path("unused"),
        fetch=FetchConfig(user_agent="benchbot/1.0 (+http://bot.example/)"),
        scope="host",
    )
    gate = Gate.from_config(cfg)
    run = Run(name, endless)

    def named(host: str, pattern: str, _url: str, why: str = "count") -> None:
        run.named.append((host, pattern, why, run.fetched))  # (before issue 28: no why)

    gate.spaces.on_trap = named
    # what the crawl tells the guard of each page (a guard before it was told: nothing)
    told = getattr(gate.spaces, "page", lambda *_a, **_k: None)
    queue = deque(canonicalize(s) for s in seeds)
    seen = set(queue)
    payloads: set[bytes] = set()  # the crawl's duplicates: a payload stored before
    t0 = time.perf_counter()
    while queue and run.fetched < max_pages:
        url = queue.popleft()
        body = fetch(url)
        run.fetched += 1
        if body is None:
            told(url, None)
            continue
        page = read_page(body, url, product_token="benchbot")
        digest = hashlib.blake2b(body, digest_size=16).digest()
        told(url, page.visible_text, duplicate=digest in payloads)
        payloads.add(digest)
        for link in page.links_to_follow():
            u = link.url
            if u in seen:
                continue
            seen.add(u)
            why = gate.refusal(u)
            if why is not None:
                if why[0].value == "trap":
                    run.refused += 1
                continue
            gate.admitted(u, None, url)
            queue.append(u)
    run.seconds = time.perf_counter() - t0
    return run


def _path(url: str) -> str:
    rest = url.split("://", 1)[1]
    return "/" + rest.partition("/")[2]


def docbed_runs(bed: str, max_pages: int) -> Iterator[Run]:
    present = {s.name for s in docbed.SITES if s.path.is_dir()}
    for name in docbed.BEDS[bed]:
        site = docbed.site_by_name(name)
        if name not in present:
            continue
        root = site.path.resolve()

        def fetch(url: str, site: docbed.Site = site, root: Path = root) -> bytes | None:
            _, rel = docbed.split_url(url)
            f = (root / rel).resolve()
            if f.is_dir():
                f = f / "index.html"
            if not f.is_file() or f.suffix != ".html" or not f.is_relative_to(root):
                return None
            return docbed.rewrite(f.read_bytes(), 80, present)

        yield crawl(f"docbed {name}", [f"http://{site.host}/{site.start}"], fetch, max_pages,
                    endless=False)  # fmt: skip


def testweb_run(n_hosts: int, pages: int, max_pages: int, *, rich: bool) -> Run:
    web = TestWeb(n_hosts=n_hosts, pages_per_host=pages, seed=7, plain=True, rich=rich, port=80)

    def fetch(url: str) -> bytes | None:
        host = host_of(url)
        idx = web.hosts.index(host) if host in web.hosts else -1
        reply = build_reply(web, idx, _path(url)) if idx >= 0 else None
        ok = reply is not None and reply.status == 200
        return reply.body if ok and "html" in reply.headers.get("Content-Type", "") else None

    kind = "rich" if rich else "plain"
    seeds = [web.url(h) for h in web.hosts[:n_hosts]]
    cfg_scope = f"test web {n_hosts} x {pages} ({kind})"
    return crawl(cfg_scope, seeds, fetch, max_pages, endless=False)


def origin_runs(max_pages: int) -> Iterator[Run]:
    def served(site: Callable[[str], str | None]) -> Fetch:
        def fetch(url: str) -> bytes | None:
            text = site(_path(url))
            return None if text is None else text.encode()

        return fetch

    board, _ = forum()
    yield crawl("forum 2,025 pages", ["http://forum.test/forum/page/1"], served(board), max_pages,
                endless=False)  # fmt: skip
    site, _ = numbered(3000)
    yield crawl("numbered 3,000 pages", ["http://num.test/"], served(site), max_pages,
                endless=False)  # fmt: skip
    yield crawl("calendar from today", ["http://cal.test/"], served(calendar()), max_pages,
                endless=True)  # fmt: skip
    past = calendar(dt.date(2024, 5, 17))
    yield crawl("calendar from 2024-05-17", ["http://cal.test/"], served(past), max_pages,
                endless=True)  # fmt: skip
    comic, _ = webcomic(6000)
    yield crawl("webcomic 6,000 chained strips", ["http://comic.test/"], served(comic),
                max_pages, endless=False)  # fmt: skip
    yield crawl("endless ?page=N", ["http://list.test/list?page=1"], served(_endless_list),
                max_pages, endless=True)  # fmt: skip
    yield crawl("endless empty listing", ["http://shop.test/s?page=1"], served(empty_listing()),
                max_pages, endless=True)  # fmt: skip
    yield crawl("session ids", ["http://sid.test/s/1/home"], served(session_ids()), max_pages,
                endless=True)  # fmt: skip
    yield crawl("relative-link loop", ["http://loop.test/a/"], served(_loop), max_pages,
                endless=True)  # fmt: skip


def _endless_list(path: str) -> str | None:
    """Pagination with no last page: each page links the next."""
    if not path.startswith("/list?page="):
        return None
    n = int(path.split("=")[1])
    return f'<html><body><a href="/list?page={n + 1}">next</a> item {n}</body></html>'


def _loop(path: str) -> str | None:
    """A page that links a relative folder of itself: /a/b/, /a/b/b/, ... (a Heritrix classic)."""
    if not path.startswith("/a/"):
        return None
    return '<html><body><a href="b/">more</a><a href="b/1.html">x</a></body></html>'


def table(runs: list[Run]) -> str:
    head = f"{'web':<34}{'fetched':>9}{'refused':>9}  named (why, at request)"
    lines = [head, "-" * len(head)]
    for r in runs:
        named = "; ".join(f"{p} ({why}, {n})" for _, p, why, n in r.named) or "-"
        lines.append(f"{r.web:<34}{r.fetched:>9}{r.refused:>9}  {named}")
    finite = [r for r in runs if not r.endless]
    endless = [r for r in runs if r.endless]
    false_named = sum(len(r.named) for r in finite)
    loops = [r for r in endless if r.refused > 0 and not r.named]  # stopped by a shape rule
    true_named = sum(1 for r in endless if r.named) + len(loops)
    caught = sum(1 for r in endless if r.named or r.refused)
    precision = true_named / (true_named + false_named) if true_named + false_named else 1.0
    recall = caught / len(endless) if endless else 1.0
    lost = sum(r.refused for r in finite)
    lines += [
        "",
        f"finite webs: {len(finite)}, {sum(r.fetched for r in finite)} pages fetched, "
        f"{false_named} patterns named (false), {lost} URLs refused as traps",
        f"endless webs: {len(endless)}, {caught} stopped",
        f"precision {precision:.3f}  recall {recall:.3f}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-pages", type=int, default=20_000, help="per web (default 20000)")
    ap.add_argument("--bed", default="all", choices=sorted(docbed.BEDS), help="docbed half")
    ap.add_argument("--json", action="store_true", help="the runs as JSON too")
    args = ap.parse_args(argv)
    runs = [*docbed_runs(args.bed, args.max_pages)]
    runs.append(testweb_run(20, 300, args.max_pages, rich=True))
    runs.append(testweb_run(3, 3000, args.max_pages, rich=False))
    runs += origin_runs(args.max_pages)
    print(table(runs))
    if args.json:
        print(json.dumps([r.__dict__ for r in runs], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
