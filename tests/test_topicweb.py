"""topicweb: a deterministic topical web with known ground truth, offline and over HTTP."""

from __future__ import annotations

from collections import Counter, deque

import aiohttp
import pytest
from topicweb import TopicWeb

from politecrawl.content.parse import parse_page
from politecrawl.focus.relevance import KeywordScorer, extract_document

TOPIC = "steam locomotive, steam railway, heritage railway"


@pytest.fixture(scope="module")
def web() -> TopicWeb:
    return TopicWeb(n_hosts=1000, pages_per_host=10, seed=3, port=8000)


def links_of(web: TopicWeb, url: str) -> list[str]:
    body = web.page(url)
    assert body is not None
    return [link.url for link in parse_page(body, url, "testbot").links]


@pytest.mark.unit
def test_deterministic_from_seed(web: TopicWeb) -> None:
    again = TopicWeb(n_hosts=1000, pages_per_host=10, seed=3, port=8000)
    other = TopicWeb(n_hosts=1000, pages_per_host=10, seed=4, port=8000)
    assert again.relevant == web.relevant != other.relevant
    url = web.seed_urls(1)[0]
    assert again.page(url) == web.page(url)
    assert again.seed_urls(10) == web.seed_urls(10) != other.seed_urls(10)


@pytest.mark.unit
def test_base_rate_is_low_and_ground_truth_consistent(web: TopicWeb) -> None:
    assert 0.003 < web.base_rate() <= 0.02
    assert len(web.relevant) == len(web.relevant_specs())
    kinds = Counter(web.hosts[s.host].kind for s in web.relevant_specs())
    assert set(kinds) == {"topical", "mixed"} and kinds["topical"] > kinds["mixed"]
    for url in list(web.relevant)[:50]:
        assert web.is_relevant(url) and web.page(url) is not None


@pytest.mark.unit
def test_seeds_are_never_on_topic(web: TopicWeb) -> None:
    for url in web.seed_urls(100):
        spec = web.locate(url)
        assert spec is not None and spec.num == 0
        assert web.hosts[spec.host].kind in ("hub", "ordinary")


@pytest.mark.unit
def test_pages_are_small_html(web: TopicWeb) -> None:
    sizes = [
        len(web.page(web.page_url(i, j)) or b"") for i in range(0, 1000, 37) for j in (0, 1, 2)
    ]
    assert min(sizes) > 700 and max(sizes) < 4000
    assert 1000 < sum(sizes) / len(sizes) < 2500


@pytest.mark.unit
def test_unknown_urls_are_404(web: TopicWeb) -> None:
    host = web.hosts[0].name
    paths = ("/nope.html", "/pages/999.html", "/x/wrong-slug-1.html")
    for url in ["http://nowhere.topic:8000/", *(f"http://{host}:8000{p}" for p in paths)]:
        assert web.locate(url) is None and web.page(url) is None


@pytest.mark.unit
def test_relevant_pages_hide_behind_hubs_but_are_reachable(web: TopicWeb) -> None:
    """bfs from the seeds reaches most relevant pages, nearly all of them 2+ hops in."""
    seeds = web.seed_urls(100)
    depth = dict.fromkeys(seeds, 0)
    queue = deque(seeds)
    while queue and len(depth) < 6000:
        url = queue.popleft()
        for target in links_of(web, url):
            if target not in depth and web.locate(target) is not None:
                depth[target] = depth[url] + 1
                queue.append(target)
    reached = sorted(depth[u] for u in web.relevant if u in depth)
    assert len(reached) >= 0.5 * len(web.relevant)
    # 90% are 2+ hops in: the rest hang off neighbouring topics (rail travel, model railways)
    assert reached[len(reached) // 10] >= 2
    assert sum(d <= 1 for d in reached) <= 0.1 * len(reached)


@pytest.mark.unit
def test_relevant_pages_cluster(web: TopicWeb) -> None:
    """Links from relevant pages lead to relevant pages far more often than other links do."""

    def share(urls: list[str]) -> float:
        targets = [t for u in urls for t in links_of(web, u) if web.locate(t) is not None]
        return sum(web.is_relevant(t) for t in targets) / len(targets)

    relevant = sorted(web.relevant)[:40]
    ordinary = [web.page_url(i, 1) for i in range(0, 1000, 25)
                if web.hosts[i].kind == "ordinary"]  # fmt: skip
    assert share(relevant) > 10 * max(share(ordinary), 0.005)


@pytest.mark.unit
def test_keyword_scorer_agrees_with_ground_truth(web: TopicWeb) -> None:
    """The generator and the nugget function are meant for each other: mostly, not exactly."""
    k = KeywordScorer(TOPIC)

    def score(url: str) -> float:
        return k(extract_document(web.page(url) or b"", url, "text/html; charset=utf-8"))

    rel = [score(u) for u in sorted(web.relevant)]
    irr = [score(web.page_url(i, j)) for i in range(0, 1000, 7) for j in (0, 1)]
    irr = [s for s in irr if s is not None]
    assert sum(s >= 0.5 for s in rel) >= 0.7 * len(rel)
    assert sum(s >= 0.5 for s in irr) <= 0.02 * len(irr)


@pytest.mark.e2e
async def test_serves_virtual_hosts_over_http() -> None:
    tw = TopicWeb(n_hosts=200, pages_per_host=5, seed=1)
    async with tw:
        assert tw.resolve_arg() == f"*.topic:{tw.port}:127.0.0.1"
        seed = tw.seed_urls(1)[0]
        host = seed.split("/")[2].split(":")[0]
        base = f"http://127.0.0.1:{tw.port}"
        async with aiohttp.ClientSession() as s:
            async with s.get(f"{base}/robots.txt", headers={"Host": host}) as r:
                assert r.status == 200 and "Disallow:\n" in await r.text()
            async with s.get(f"{base}/", headers={"Host": host}) as r:
                assert r.status == 200 and r.headers["Content-Type"].startswith("text/html")
                assert await r.read() == tw.page(seed)
            async with s.get(f"{base}/", headers={"Host": "unknown.topic"}) as r:
                assert r.status == 404
            async with s.get(f"{base}/missing.html", headers={"Host": host}) as r:
                assert r.status == 404
        assert [(e.host, e.path, e.status) for e in tw.access_log] == [
            (host, "/robots.txt", 200), (host, "/", 200), ("unknown.topic", "/", 404),
            (host, "/missing.html", 404)]  # fmt: skip
        assert all(u.startswith("http://") and f":{tw.port}/" in u for u in tw.relevant)
