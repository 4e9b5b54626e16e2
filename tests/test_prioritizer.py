"""prioritizer: features, online learning, exploration, persistence, and a crawl that learns."""

from __future__ import annotations

import heapq
import json
from collections import deque

import pytest
from topicweb import TopicWeb

from politecrawl.content.parse import parse_page
from politecrawl.focus.prioritizer import (
    TRANSLATION_SHARE,
    LinkFeatures,
    Prioritizer,
    link_features,
    section_of,
    url_tokens,
)
from politecrawl.focus.relevance import KeywordScorer, extract_document

pytestmark = pytest.mark.unit

SRC = "http://hub.test/"


def feats(url: str, anchor: str = "", **kw: float) -> LinkFeatures:
    return link_features(url, anchor, source_url=SRC, **kw)  # type: ignore[arg-type]


def test_url_tokens() -> None:
    path, host = url_tokens(
        "http://Steam-Society-17.example.org:8000/Locos/castle_class-3.html?id=5"
    )
    assert path == ["loco", "castle", "class", "#", "id", "#"]
    assert host == ("steam", "society", "#", "example")


def test_link_features_are_deterministic_and_namespaced() -> None:
    a = link_features("http://a.test/x/locomotive.html", "Locomotive", "about trains")
    b = link_features("http://a.test/x/locomotive.html", "Locomotive", "about trains")
    assert a == b and a.host == "a.test" and a.domain == "a.test"
    no_ctx = link_features("http://a.test/x/locomotive.html", "Locomotive")
    assert set(no_ctx.hashed) < set(a.hashed)  # context words add features, same word or not
    same = link_features("http://a.test/y", "", source_url="http://a.test/")
    cross = link_features("http://a.test/y", "", source_url="http://b.test/")
    assert same.hashed != cross.hashed


def test_learns_which_anchors_lead_to_relevant_pages() -> None:
    p = Prioritizer(optimism=0.0)
    for i in range(60):
        p.learn(feats(f"http://h{i}.test/a", "steam locomotive gallery"), 1.0)
        p.learn(feats(f"http://h{i}.test/b", "pasta recipes"), 0.0)
    good = p.score(feats("http://new1.test/p", "the locomotive gallery"))
    bad = p.score(feats("http://new2.test/p", "quick recipes"))
    assert good > 0.5 > bad
    assert p.updates == 120
    top = p.top_features(["a:recipe", "a:locomotive", "a:pasta", "a:gallery"], n=2)
    assert {name for name, _ in top} == {"a:locomotive", "a:gallery"}


def test_host_harvest_raises_priority_of_unknown_links_there() -> None:
    p = Prioritizer(optimism=0.0)
    for i in range(40):  # rich.test is a goldmine; poor.test never is
        p.learn(feats(f"http://rich.test/{i}", f"page {i}"), 1.0 if i % 2 else 0.9)
        p.learn(feats(f"http://poor.test/{i}", f"page {i}"), 0.0)
    assert p.harvest("rich.test") > 0.6 > 0.02 > p.harvest("poor.test")
    rich = p.score(feats("http://rich.test/new", "misc"))
    poor = p.score(feats("http://poor.test/new", "misc"))
    assert rich > poor


def test_source_relevance_and_distance_are_learned() -> None:
    p = Prioritizer(optimism=0.0)
    for i in range(80):
        p.learn(feats(f"http://h{i}.test/", "x", source_relevance=0.9, distance=0), 0.8)
        p.learn(feats(f"http://g{i}.test/", "x", source_relevance=0.0, distance=4), 0.0)
    near = p.score(feats("http://n.test/", "x", source_relevance=0.9, distance=0))
    far = p.score(feats("http://m.test/", "x", source_relevance=0.0, distance=4))
    assert near > far


def test_optimism_favours_little_known_hosts() -> None:
    p = Prioritizer(optimism=0.1)
    for _ in range(30):
        p.observe("known.test", "known.test", 0.0)
    assert p.score(feats("http://fresh.test/", "x")) > p.score(feats("http://known.test/", "x"))


def test_epsilon_gives_random_priorities_reproducibly() -> None:
    f = feats("http://a.test/", "x")
    a = [Prioritizer(epsilon=0.5, seed=7).score(f) for _ in range(1)]
    p1, p2 = Prioritizer(epsilon=0.5, seed=7), Prioritizer(epsilon=0.5, seed=7)
    s1 = [p1.score(f) for _ in range(50)]
    assert s1 == [p2.score(f) for _ in range(50)]
    assert len(set(s1)) > 10  # the exploring share varies
    assert a[0] == s1[0]
    plain = Prioritizer(epsilon=0.0)
    assert len({plain.score(f) for _ in range(20)}) == 1


def test_state_round_trips_through_json() -> None:
    p = Prioritizer()
    for i in range(30):
        p.learn(feats(f"http://h{i % 3}.test/{i}", "steam engine" if i % 2 else "cake"), i % 2)
    saved = json.loads(json.dumps(p.state_dict()))
    q = Prioritizer()
    q.load_state(saved)
    probe = feats("http://h1.test/new", "steam engine")
    assert q.score(probe) == pytest.approx(p.score(probe))
    assert q.harvest("h1.test") == p.harvest("h1.test") and q.updates == p.updates
    q.learn(probe, 1.0)  # keeps learning after a resume
    assert q.updates == p.updates + 1
    with pytest.raises(ValueError):
        Prioritizer().load_state({**saved, "version": 999})


@pytest.mark.parametrize(
    "kw",
    [{"lr": 0.0}, {"relevant_at": 0.0}, {"prior": (0.0, 1.0)}, {"epsilon": 1.0},
     {"optimism": -1.0}],
)  # fmt: skip
def test_bad_settings(kw: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Prioritizer(**kw)  # type: ignore[arg-type]


def _crawl(web: TopicWeb, budget: int, prio: Prioritizer | None) -> int:
    """Relevant pages (ground truth) among ``budget`` fetches; bfs when ``prio`` is None."""
    scorer = KeywordScorer("steam locomotive, steam railway, heritage railway")
    seeds = web.seed_urls(40)
    found = fetched = seq = 0
    seen = set(seeds)
    fifo = deque(seeds)
    heap = [(-1.0, i, u, link_features(u, "", distance=3)) for i, u in enumerate(seeds)]
    while fetched < budget and (heap if prio else fifo):
        if prio is None:
            url, via = fifo.popleft(), None
        else:
            _, _, url, via = heapq.heappop(heap)
        body = web.page(url)
        assert body is not None
        fetched += 1
        found += web.is_relevant(url)
        links = parse_page(body, url, "testbot").links
        if prio is None or via is None:
            relevance, dist = 0.0, 3
        else:
            relevance = scorer(extract_document(body, url, "text/html"))
            prio.learn(via, relevance)
            dist = 0 if prio.is_relevant(relevance) else via.distance + 1
        for link in links:
            if link.url in seen:
                continue
            seen.add(link.url)
            if prio is None:
                fifo.append(link.url)
                continue
            f = link_features(link.url, link.anchor, source_url=url, source_relevance=relevance,
                              distance=dist)  # fmt: skip
            seq += 1
            heapq.heappush(heap, (-prio.score(f), seq, link.url, f))
    return found


def test_learned_priorities_find_far_more_than_bfs() -> None:
    """A small topical web: learning from the scorer's verdicts alone beats bfs by >= 5x."""
    web = TopicWeb(n_hosts=1500, pages_per_host=8, seed=5, port=8000)
    bfs = _crawl(web, 1200, None)
    focused = _crawl(web, 1200, Prioritizer(seed=1))
    assert focused >= 5 * max(bfs, 4), (bfs, focused)


def test_section_of() -> None:
    assert section_of("http://h.test/library/asyncio-task.html") == "h.test/library/asyncio"
    assert section_of("http://h.test/indexes_types.html?x=1") == "h.test/indexes"
    assert section_of("http://h.test/library/email.mime.html") == "h.test/library/email"
    assert section_of("http://h.test") == "h.test"


def test_section_yield_is_learned_and_saved() -> None:
    """A chapter's pages (a shared folder and file-name stem) that keep being relevant raise
    its other pages; a page between half of relevant_at and relevant_at is part of a hit."""
    p = Prioritizer(optimism=0.0)
    for i in range(20):
        p.learn(feats(f"http://docs.test/indexes-{i}.html", "11.1"), 0.8)
        p.learn(feats(f"http://docs.test/sql-{i}.html", "11.1"), 0.0)
    p.observe("docs.test", "docs.test", 0.375, "docs.test/half")  # between 0.25 and 0.5
    p.observe("docs.test", "docs.test", 0.2, "docs.test/faint")
    assert p.sections["docs.test/half"][1] == 0.5 and p.sections["docs.test/faint"][1] == 0.0
    good = p.score(feats("http://docs.test/indexes-new.html", "11.9"))
    bad = p.score(feats("http://docs.test/sql-new.html", "11.9"))
    assert good > bad
    q = Prioritizer(optimism=0.0)
    q.load_state(json.loads(json.dumps(p.state_dict())))
    assert q.score(feats("http://docs.test/indexes-new.html", "11.9")) == pytest.approx(good)


def test_topic_prior_and_no_learning() -> None:
    p = Prioritizer(optimism=0.0, learning=False)
    on = p.score(feats("http://d.test/a", "x", anchor_match=1.0, url_match=1.0))
    half = p.score(feats("http://d.test/b", "x", anchor_match=0.5))
    off = p.score(feats("http://d.test/c", "x"))
    assert on > 0.8 and 0.15 < half < 0.5 and off < 0.1
    p.learn(feats("http://d.test/c", "x"), 1.0)
    p.observe("d.test", "d.test", 1.0)
    assert p.updates == 0 and p.hosts == {} and p.score(feats("http://d.test/c", "x")) == off


def test_a_link_to_the_page_in_another_language_is_a_translation() -> None:
    """``hreflang`` naming a language other than the page's own marks a translation; a region
    of the same language (en-GB on an en-US page) does not, nor does a page without ``lang``."""
    body = (
        b'<html lang="en-US"><body><a href="/fr/a.html" hreflang="fr">fr</a>'
        b'<a href="/gb/a.html" hreflang="en-GB">en</a><a href="/b.html">b</a></body></html>'
    )
    links = {k.url.rsplit("/", 2)[-2:][0]: k.translation for k in parse_page(
        body, "http://x.test/en/a.html", "testbot").links}  # fmt: skip
    assert links == {"fr": True, "gb": False, "x.test": False}
    bare = body.replace(b' lang="en-US"', b"")
    assert not any(k.translation for k in parse_page(bare, "http://x.test/", "testbot").links)


def test_a_translation_is_queued_at_a_small_share_of_its_priority() -> None:
    model = Prioritizer()
    same = link_features("http://x.test/fr/ssl.html", "ssl", anchor_match=1.0)
    other = link_features("http://x.test/fr/ssl.html", "ssl", anchor_match=1.0, translation=True)
    # the estimate itself is the same (the same words): only the priority is scaled
    assert model.probability(other) == model.probability(same)
    assert model.score(other) == pytest.approx(model.probability(same) * TRANSLATION_SHARE)
    assert model.score(other) < model.score(same) * 0.1
