"""duprules: per-site URL rewrite rules learned from duplicate pages; dupweb, the web of them."""

from __future__ import annotations

import json
from collections import deque

import aiohttp
import pytest
from dupweb import DupWeb, FakeClock, PageRef
from hypothesis import given, settings
from hypothesis import strategies as st

from politecrawl.content.parse import parse_page
from politecrawl.continuity.duprules import Rule, RuleLearner
from politecrawl.continuity.fingerprint import exact_fingerprint, simhash
from politecrawl.focus.relevance import extract_document
from politecrawl.urls.canonical import canonicalize
from politecrawl.urls.variants import site_key

H = "http://shop.example"


def dup_pairs(learner: RuleLearner, variant: str, pages: int = 3, section: str = "item") -> None:
    """``pages`` different pages of one section, each seen plain and with ``variant``."""
    for i in range(pages):
        url = f"{H}/{section}/{i}/"
        learner.observe_duplicate(url, url + variant)


@pytest.mark.unit
def test_learns_a_parameter_from_different_pages_only() -> None:
    learner = RuleLearner(min_support=3)
    for _ in range(5):  # five pairs, but all of one page: could be that page's quirk
        learner.observe_duplicate(f"{H}/item/a/", f"{H}/item/a/?utm_source=x")
    assert learner.rules_for("shop.example") == [] and learner.new_rules() == []
    dup_pairs(learner, "?utm_source=feed", pages=1)  # a second page
    assert learner.apply(f"{H}/item/b/?utm_source=y") == f"{H}/item/b/?utm_source=y"
    dup_pairs(learner, "?utm_source=mail", pages=3)
    (rule,) = learner.new_rules()
    assert rule == Rule("shop.example", "drop_param", "utm_source", rule.support, "/item/")
    assert rule.support >= 3 and learner.new_rules() == []
    assert rule.describe() == (
        "shop.example: drop query parameter 'utm_source' under /item/ (8 duplicate pairs)"
    )
    assert learner.apply(f"{H}/item/b/?id=3&utm_source=y&x=1") == f"{H}/item/b/?id=3&x=1"
    assert learner.apply(f"{H}/ITEM/b/?utm_source=y") == f"{H}/ITEM/b/"
    assert learner.apply("http://www.shop.example/item/?utm_source=y") == (
        "http://www.shop.example/item/"  # the site is shop.example with or without www.
    )
    # only in that section, until it holds in a second one too
    assert learner.apply(f"{H}/news/?utm_source=y") == f"{H}/news/?utm_source=y"
    dup_pairs(learner, "?utm_source=feed", pages=3, section="news")
    assert [(r.param, r.scope) for r in learner.new_rules()] == [
        ("utm_source", "/news/"), ("utm_source", None)]  # fmt: skip
    assert learner.apply(f"{H}/?utm_source=y") == f"{H}/"
    assert learner.apply("http://other.example/b/?utm_source=y").endswith("utm_source=y")
    (site_wide,) = learner.rules_for("shop.example")
    assert site_wide.scope is None and site_wide.support == 8 + 3


@pytest.mark.unit
def test_counter_evidence_blocks_and_revokes() -> None:
    learner = RuleLearner(min_support=3)
    learner.observe_distinct(f"{H}/item/list/", f"{H}/item/list/?page=2")  # page matters here
    dup_pairs(learner, "?page=1", pages=5)
    assert learner.rules_for("shop.example") == []
    dup_pairs(learner, "?sort=asc", pages=3)
    assert [r.param for r in learner.new_rules()] == ["sort"]
    learner.observe_distinct(f"{H}/item/list/", f"{H}/item/list/?sort=desc")
    (revoked,) = learner.revoked_rules()
    assert revoked.param == "sort" and learner.rules_for("shop.example") == []
    assert learner.apply(f"{H}/item/x/?sort=asc") == f"{H}/item/x/?sort=asc"
    dup_pairs(learner, "?sort=asc", pages=6)  # revoked for good
    assert learner.rules_for("shop.example") == []
    # harmless elsewhere, but it mattered once: never site-wide
    dup_pairs(learner, "?sort=asc", pages=3, section="a")
    dup_pairs(learner, "?sort=asc", pages=3, section="b")
    assert [(r.param, r.scope) for r in learner.new_rules()] == [("sort", "/a/"), ("sort", "/b/")]
    # several unexplained differences in a distinct pair: nobody is blamed
    learner.observe_distinct(f"{H}/item/n/?a=1&b=1", f"{H}/item/n/?a=2&b=2")
    dup_pairs(learner, "?a=9", pages=3)
    assert [r.param for r in learner.new_rules()] == ["a"]


@pytest.mark.unit
def test_www_index_and_case_rules() -> None:
    learner = RuleLearner(min_support=2)
    for i in range(2):
        learner.observe_duplicate(f"http://www.a.example/p{i}/", f"http://a.example/p{i}/")
        learner.observe_duplicate(f"http://a.example/D{i}/", f"http://a.example/D{i}/index.php")
        learner.observe_duplicate(f"http://a.example/Q{i}/", f"http://a.example/q{i}/")
    kinds = {(r.kind, r.param) for r in learner.new_rules()}
    assert kinds == {("www", "www"), ("strip_index", "index.php"), ("lower_path", None)}
    assert learner.apply("http://a.example/Docs/Index.PHP?x=%2F") == (
        "http://www.a.example/docs/?x=%2F"  # lower-cased first, then the index file goes
    )
    assert learner.apply("http://a.example:8080/A%2fB/") == "http://www.a.example:8080/a%2Fb/"
    assert [r.kind for r in learner.rules_for("WWW.A.example")] == [
        "lower_path", "strip_index", "www"]  # fmt: skip
    www = next(r for r in learner.rules_for("a.example") if r.kind == "www")
    assert www.describe().startswith("a.example: www.a.example and a.example serve")
    assert "use www.a.example" in www.describe()
    assert site_key("www.a.example") == "a.example" == site_key("a.example")


@pytest.mark.unit
def test_ambiguous_pairs_are_resolved_once_a_rule_is_known() -> None:
    learner = RuleLearner(min_support=2)
    for i in range(3):  # www and utm_source differ together: ambiguous
        url = f"/item/c{i}/"
        learner.observe_duplicate(H + url, f"http://www.shop.example{url}?utm_source=z")
    assert learner.new_rules() == []
    dup_pairs(learner, "?utm_source=q", pages=2)
    assert {r.kind for r in learner.new_rules()} == {"drop_param", "www"}
    assert learner.apply("http://www.shop.example/item/x/?utm_source=1") == f"{H}/item/x/"


@pytest.mark.unit
def test_unrelated_pairs_teach_nothing() -> None:
    learner = RuleLearner(min_support=1)
    learner.observe_duplicate(f"{H}/a/", f"{H}/b/")  # different paths
    learner.observe_duplicate(f"{H}/a/", "http://other.example/a/")  # different sites
    learner.observe_duplicate(f"{H}/a/", "https://shop.example/a/")  # different schemes
    learner.observe_duplicate(f"{H}/a/?x=1&y=2", f"{H}/a/?y=2&x=1")  # order only
    learner.observe_duplicate("not a url", f"{H}/a/")
    assert learner.new_rules() == [] and learner.state_dict()["sites"].get("other.example") is None


@pytest.mark.unit
def test_observe_page_pairs_variants_and_respects_time() -> None:
    learner = RuleLearner(min_support=2, max_pair_age_s=3600)
    for i in range(2):
        url = f"{H}/p/{i}/"
        learner.observe_page(url, "same", 1, now=0)
        learner.observe_page(url + "?ref=a", "same", 1, now=10)
    assert [r.param for r in learner.new_rules()] == ["ref"]
    # a page that changed between two visits a day apart says nothing about ?lang=
    learner.observe_page(f"{H}/q/", "v1", 0, now=0)
    learner.observe_page(f"{H}/q/?lang=en", "v2", 2**64 - 1, now=86400)
    for i in range(2):
        learner.observe_page(f"{H}/q/{i}/", "x", now=90000)
        learner.observe_page(f"{H}/q/{i}/?lang=en", "x", now=90001)
    assert [r.param for r in learner.new_rules()] == ["lang"]
    # near-duplicates count as the same when both simhashes are known
    learner.observe_page(f"{H}/s/0/", "e1", 0b1011, now=0)
    learner.observe_page(f"{H}/s/0/?v=2", "e2", 0b0000, now=1)
    learner.observe_page(f"{H}/s/1/", "e3", 0, now=0)
    learner.observe_page(f"{H}/s/1/?v=3", "e4", 1, now=1)
    assert [r.param for r in learner.new_rules()] == ["v"]
    # a refetch replaces the old entry instead of being compared with it
    learner.observe_page(f"{H}/p/0/", "changed", 99, now=20)
    assert learner.revoked_rules() == []


@pytest.mark.unit
def test_state_round_trip() -> None:
    learner = RuleLearner(min_support=2)
    dup_pairs(learner, "?utm_source=a", pages=2)
    for i in range(2):
        learner.observe_duplicate(f"http://www.shop.example/w/{i}/", f"{H}/w/{i}/")
    learner.observe_distinct(f"{H}/item/l/", f"{H}/item/l/?page=2")
    again = RuleLearner(min_support=2)
    again.load_state(json.loads(json.dumps(learner.state_dict())))
    url = f"{H}/item/z/?utm_source=b&page=3"
    assert again.apply(url) == learner.apply(url) == "http://www.shop.example/item/z/?page=3"
    assert again.rules_for("shop.example") == learner.rules_for("shop.example")
    dup_pairs(again, "?page=1", pages=4)  # counter-evidence survived the round trip
    assert again.rules_for("shop.example") == learner.rules_for("shop.example")


def _learner_with_every_rule() -> RuleLearner:
    learner = RuleLearner(min_support=1)
    for host in ("a.example", "b.example:8080"):
        learner.observe_duplicate(f"http://{host}/x/", f"http://{host}/x/?utm=1")
        learner.observe_duplicate(f"http://{host}/x/", f"http://{host}/X/")
        learner.observe_duplicate(f"http://{host}/x/", f"http://{host}/x/index.html")
        learner.observe_duplicate(f"http://{host}/x/", f"http://www.{host}/x/")
    assert len(learner.new_rules()) == 8
    return learner


RULED = _learner_with_every_rule()
_segment = st.sampled_from(["x", "X", "Docs", "index.html", "Index.html", "a%2fb", "%C3%A9", ""])
_param = st.sampled_from(["utm", "utm=", "utm=1", "id=2", "a=b=c", "", "=x", "UTM=2"])
_urls = st.builds(
    lambda scheme, host, segs, params, frag: (
        f"{scheme}://{host}/" + "/".join(segs) + ("?" + "&".join(params) if params else "") + frag
    ),
    st.sampled_from(["http", "https"]),
    st.sampled_from(
        [
            "a.example",
            "www.a.example",
            "b.example:8080",
            "www.b.example:8080",
            "c.example",
            "[::1]:80",
        ]
    ),
    st.lists(_segment, max_size=4),
    st.lists(_param, max_size=4),
    st.sampled_from(["", "#frag"]),
)


@pytest.mark.unit
@settings(max_examples=300, deadline=None)
@given(st.one_of(_urls, st.text(max_size=60)))
def test_apply_never_raises_and_is_idempotent(url: str) -> None:
    once = RULED.apply(url)
    assert RULED.apply(once) == once
    assert RuleLearner().apply(url) is url  # no rules: the very same string back


@pytest.mark.unit
@settings(max_examples=200, deadline=None)
@given(_urls)
def test_apply_keeps_canonical_urls_canonical(url: str) -> None:
    try:
        canonical = canonicalize(url)
    except ValueError:
        return
    rewritten = RULED.apply(canonical)
    assert canonicalize(rewritten) == rewritten


# -- dupweb ------------------------------------------------------------------------------------


def crawl(dw: DupWeb, learner: RuleLearner | None, budget: int) -> tuple[int, set[PageRef]]:
    """Offline BFS; returns (fetches, pages found)."""
    queue = deque(dw.seed_urls())
    seen = set(queue)
    found: set[PageRef] = set()
    fetches = 0
    while queue and fetches < budget:
        url = queue.popleft()
        if learner is not None and (canonical := learner.apply(url)) != url:
            if canonical in seen:  # a rule learned since it was queued
                continue
            seen.add(canonical)
            url = canonical
        body = dw.page(url)
        ref = dw.locate(url)
        fetches += 1
        assert body is not None and ref is not None, url  # every linked spelling exists
        found.add(ref)
        text = extract_document(body, url, "text/html").text
        if learner is not None:
            learner.observe_page(url, exact_fingerprint(text), simhash(text))
        for link in parse_page(body, url, "testbot").links:
            target = link.url if learner is None else learner.apply(link.url)
            if target not in seen:
                seen.add(target)
                queue.append(target)
    return fetches, found


@pytest.mark.unit
def test_dupweb_spellings_are_one_page() -> None:
    dw = DupWeb(n_sites=3, articles_per_site=6, clock=FakeClock(), port=8000)
    iis, apache, php = (s.name for s in dw.sites)
    art = dw.canonical_path(PageRef(0, "article/2"))
    same = [f"http://{iis}:8000{art}", f"http://www.{iis}:8000{art}",
            f"http://{iis}:8000{art.upper()}default.aspx?utm_source=x&sort=title",
            f"http://{iis}:8000{art}?vid=abc"]  # fmt: skip
    texts = set()
    for url in same:
        assert dw.locate(url) == PageRef(0, "article/2")
        body = dw.page(url)
        assert body is not None
        texts.add(extract_document(body, url, "text/html").text)
    assert len(texts) == 1
    assert b"vid=abc" in (dw.page(same[3]) or b"") and b"vid=" not in (dw.page(same[0]) or b"")
    a_art = dw.canonical_path(PageRef(1, "article/2"))
    assert dw.locate(f"http://{apache}:8000{a_art.lower()}") is None  # case-sensitive
    assert dw.locate(f"http://{apache}:8000{a_art}index.html") == PageRef(1, "article/2")
    assert dw.locate(f"http://{apache}:8000/news/?sort=title") == PageRef(1, "news/1/title")
    assert dw.locate(f"http://{php}:8000/news/?sort=title&page=1") == PageRef(2, "news/1")
    assert dw.locate(f"http://{apache}:8000/tags/Mercury/") != dw.locate(
        f"http://{apache}:8000/tags/mercury/")  # fmt: skip
    assert dw.locate(f"http://{php}:8000/news/?page=9") is None
    assert dw.locate("http://unknown.dup:8000/") is None


@pytest.mark.unit
def test_rules_learned_on_dupweb_cut_the_waste() -> None:
    dw = DupWeb(n_sites=6, articles_per_site=15, clock=FakeClock(), port=8000)
    total = len(dw.pages())
    plain_fetches, plain_found = crawl(dw, None, budget=1500)
    learner = RuleLearner()
    fetches, found = crawl(dw, learner, budget=1500)
    assert plain_fetches == 1500  # without rules it never ends (session ids, combinations)
    assert fetches < 700 and len(found) >= len(plain_found) >= 0.9 * total
    rules: dict[str, set[tuple[str, str | None, str | None]]] = {s.kind: set() for s in dw.sites}
    for site in dw.sites:
        rules[site.kind] |= {(r.kind, r.param, r.scope) for r in learner.rules_for(site.name)}
    assert {("lower_path", None, None), ("strip_index", "default.aspx", None),
            ("drop_param", "vid", None)} <= rules["iis"]  # fmt: skip
    for param in ("utm_source", "sort"):  # site-wide, or at least for the articles
        assert {("drop_param", param, None), ("drop_param", param, "/articles/")} & rules["iis"]
    assert ("strip_index", "index.html", None) in rules["apache"]
    assert ("strip_index", "index.php", None) in rules["php"]
    for kind in ("apache", "php"):  # case-sensitive sites
        assert ("lower_path", None, None) not in rules[kind]
    assert all(www[0] != "www" or www[1] in ("www", "bare") for www in rules["php"])
    # on apache sort=title is another news page: never dropped there or site-wide
    assert not {("drop_param", "sort", None), ("drop_param", "sort", "/news/")} & rules["apache"]
    assert all(r[1] != "page" for kind_rules in rules.values() for r in kind_rules)


@pytest.mark.e2e
async def test_dupweb_serves_over_http() -> None:
    dw = DupWeb(n_sites=3, articles_per_site=4, clock=FakeClock())
    async with dw:
        assert dw.resolve_arg() == f"*.dup:{dw.port}:127.0.0.1"
        host = dw.sites[0].name
        base = f"http://127.0.0.1:{dw.port}"
        async with aiohttp.ClientSession() as s:
            async with s.get(f"{base}/robots.txt", headers={"Host": host}) as r:
                assert r.status == 200 and "Sitemap:" in await r.text()
            async with s.get(f"{base}/", headers={"Host": "www." + host}) as r:
                assert r.status == 200 and r.headers["Content-Type"].startswith("text/html")
                assert await r.read() == dw.page(dw.seed_urls(1)[0])
                etag = r.headers["ETag"]
            async with s.get(f"{base}/", headers={"Host": host, "If-None-Match": etag}) as r:
                assert r.status == 304
            async with s.get(f"{base}/sitemap.xml", headers={"Host": host}) as r:
                assert r.status == 200 and b"<changefreq>" in await r.read()
            async with s.get(f"{base}/nope/", headers={"Host": host}) as r:
                assert r.status == 404
        assert [(e.host, e.path, e.status) for e in dw.access_log] == [
            (host, "/robots.txt", 200), ("www." + host, "/", 200), (host, "/", 304),
            (host, "/sitemap.xml", 200), (host, "/nope/", 404)]  # fmt: skip


@pytest.mark.unit
def test_rules_transfer_to_new_sites_until_contradicted() -> None:
    learner = RuleLearner(min_support=3, prior_sites=2)
    for site in ("a", "b"):
        for i in range(3):
            url = f"http://{site}.example/p/{i}/"
            learner.observe_duplicate(url, url + "?fbclid=1")
    assert len(learner.new_rules()) == 2
    learner.observe_duplicate("http://c.example/p/1/", "http://c.example/p/1/?fbclid=2")
    (rule,) = learner.new_rules()  # one pair was enough on the third site
    assert (rule.host, rule.param, rule.support) == ("c.example", "fbclid", 1)
    learner.observe_distinct("http://d.example/q/", "http://d.example/q/?fbclid=3")
    learner.observe_duplicate("http://e.example/p/1/", "http://e.example/p/1/?fbclid=2")
    assert learner.new_rules() == []  # contradicted somewhere: back to min_support
    again = RuleLearner(min_support=3, prior_sites=2)
    again.load_state(json.loads(json.dumps(learner.state_dict())))
    assert again._needed("param:fbclid@/p/") == 3 and again._needed("param:utm@/p/") == 3


@pytest.mark.unit
def test_memory_is_bounded() -> None:
    learner = RuleLearner(min_support=1, max_sites=20, max_groups=50)
    learner.observe_duplicate("http://keep.example/a/", "http://keep.example/a/?x=1")
    for i in range(200):  # evidence on many sites, no rules
        learner.observe_distinct(f"http://s{i}.example/a/", f"http://s{i}.example/a/?p=1")
        learner.observe_page(f"http://s{i}.example/p/{i}/", "fp")
    assert len(learner._sites) <= 21 and len(learner._groups) <= 50
    assert learner.apply("http://keep.example/a/?x=2") == "http://keep.example/a/"
