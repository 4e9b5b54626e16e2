"""A user's relevance function is called on every stored page and steers the crawl."""

from __future__ import annotations

from pathlib import Path

import nuggets
import pytest
from topicweb import TopicWeb

from politecrawl import CrawlConfig, Crawler, FetchConfig, PolitenessConfig
from politecrawl.config import DEFER_RATIO
from politecrawl.content.page import read_page
from politecrawl.content.parse import Link
from politecrawl.errors import ConfigError
from politecrawl.focus.relevance import Document, KeywordScorer
from politecrawl.focus.strategy import Focus
from politecrawl.frontier import UrlEntry
from politecrawl.frontier.sqlite import WINDOW, SqliteFrontier
from politecrawl.storage.logs import read_jsonl

UA = "testbot/1.0 (+http://bot.example/info)"


async def _crawl(web: TopicWeb, out: Path, strategy: str, fetches: int) -> list[str]:
    cfg = CrawlConfig(
        seeds=tuple(web.seed_urls(20)),
        out_dir=out,
        fetch=FetchConfig(
            user_agent=UA, resolve=(web.resolve_arg(),), allow_private_addresses=True
        ),
        politeness=PolitenessConfig(
            min_delay_s=0.02,
            jitter_s=0.0,
            response_time_factor=0.0,
            ip_min_delay_s=None,  # the test web's names on 127.0.0.1 stand for many servers
        ),
        concurrency=20,
        scope="any",
        progress=False,
        max_pages=fetches,
        strategy=strategy,  # type: ignore[arg-type]
        relevance="nuggets:railway_pages",
    )
    await Crawler(cfg).run()
    return [row["url"] for row in read_jsonl(out / "pages.jsonl")]


@pytest.mark.e2e
async def test_relevance_callable_is_called_and_steers(tmp_path: Path) -> None:
    async with TopicWeb(n_hosts=600, pages_per_host=8, seed=5) as web:
        relevant = web.relevant
        nuggets.CALLS.clear()
        focused = await _crawl(web, tmp_path / "focused", "focused", 700)
        assert len(nuggets.CALLS) == len(focused) > 0  # called once per stored page
        bfs = await _crawl(web, tmp_path / "bfs", "bfs", 700)
    found_f = sum(u in relevant for u in focused)
    found_b = sum(u in relevant for u in bfs)
    assert found_f >= 2 * max(found_b, 1), (found_f, found_b)
    pages = read_jsonl(tmp_path / "focused" / "pages.jsonl")
    assert all(p["relevance"] is not None and p["charset"] for p in pages)
    assert (tmp_path / "focused" / "focus.json").exists()  # what it learned is kept


@pytest.mark.unit
def test_focused_needs_a_nugget_and_a_bad_spec_is_one_clear_error() -> None:
    import pytest

    with pytest.raises(ConfigError, match="needs --topic or --relevance"):
        Focus.from_options("focused", None, None)
    with pytest.raises(ConfigError, match="cannot import"):
        Focus.from_options(None, None, "no_such_module_xyz:f")
    assert Focus.from_options(None, "steam trains", None).strategy == "focused"
    assert Focus.from_options(None, None, None).strategy == "bfs"


# -- the topic prior, keyword best-first, re-scoring ---------------------------------------


def _page(*links: tuple[str, str]) -> list[Link]:
    return [Link(u, a, False) for u, a in links]


def _doc(url: str, body: bytes, depth: int = 0) -> Document | None:
    """The nugget's view of a page, as the crawler reads it (``page.read_page``)."""
    return read_page(body, url, product_token="testbot", depth=depth, score=True).document


@pytest.mark.unit
def test_topic_prior_ranks_links_before_anything_is_learned() -> None:
    """The first page's links are ranked by how much of the topic their anchor and URL cover."""
    for strategy in ("focused", "keyword"):
        focus = Focus.from_options(strategy, "email messages, smtp, imap", None)
        page = _page(
            ("http://d.test/library/turtle.html", "turtle — Turtle graphics"),
            ("http://d.test/library/smtplib.html", "smtplib — SMTP protocol client"),
            ("http://d.test/library/email.message.html", "email.message: Representing an email"),
            ("http://d.test/library/misc.html", "Internet protocols"),
        )
        prio = dict(focus.link_items("http://d.test/", page, 1, focus.score_page(
            "http://d.test/", _doc("http://d.test/", b"<title>Library</title>")
        )))  # fmt: skip
        assert (
            prio["http://d.test/library/smtplib.html"]
            > 0.3
            > prio["http://d.test/library/turtle.html"]
        )
        assert (
            prio["http://d.test/library/email.message.html"]
            > prio["http://d.test/library/misc.html"]
        )


@pytest.mark.unit
def test_text_around_a_link_is_learned_when_given() -> None:
    """``contexts`` (bench/focus_sim.py --contexts gives them): the words around a link are
    features of their own, so the model learns from them; without them only anchor and URL
    count."""
    root_url = "http://d.test/"
    ctx = "see the smtp client notes for sending mail"
    for contexts, grows in ((None, False), ({"http://d.test/a.html": ctx}, True)):
        focus = Focus.from_options("focused", "email, smtp", None)
        root = focus.score_page(root_url, _doc(root_url, b"<p>hub</p>"))
        page = _page(("http://d.test/a.html", "notes"), ("http://d.test/b.html", "notes"))
        focus.link_items(root_url, page, 1, root, contexts)
        with_ctx = focus._features["http://d.test/a.html"].hashed
        plain = focus._features["http://d.test/b.html"].hashed
        assert (len(with_ctx) > len(plain)) is grows


@pytest.mark.unit
def test_keyword_strategy_never_learns_and_focused_rescores_early() -> None:
    body = b"<title>smtplib</title><body><h1>smtplib SMTP client</h1>" + b"smtp email " * 30
    for strategy, learns in (("keyword", False), ("focused", True)):
        focus = Focus.from_options(strategy, "email, smtp", None)
        assert focus.model is not None and focus.model.learning is learns
        root = focus.score_page("http://d.test/", _doc("http://d.test/", b"<p>hub</p>"))
        links = [(f"http://d.test/l/smtp-{i}.html", f"smtp {i}") for i in range(40)]
        focus.link_items("http://d.test/", _page(*links), 1, root)
        for url, _ in links[:25]:
            focus.score_page(url, _doc(url, body, 1))
        assert focus.model.updates == (25 if learns else 0)
        assert focus.rescore_due() is learns  # 25 learned >= the first threshold (20)
        assert focus.model.sections.get("d.test/l/smtp") is None or learns


@pytest.mark.unit
def test_keyword_match_is_loose_on_word_forms_and_url_words() -> None:
    k = KeywordScorer("threads, smtp, database indexes")
    assert k.match(["threading"]) == 1.0  # starts with a 4+ letter term
    assert k.match(["smtplib"]) == 1.0  # holds one
    assert k.match(["createindex"]) == 0.5  # one of the phrase's two terms
    assert k.match(["turtle", "graphics"]) == 0.0


# -- --defer-ratio: a poor URL waits while a much better one waits on its delay -------------


# (the policy itself, on every frontier backend: tests/test_frontier_contract.py)


@pytest.mark.unit
def test_defer_ratio_defaults_to_focused_crawls_only(tmp_path: Path) -> None:
    def cfg(**kw: object) -> CrawlConfig:
        fetch = FetchConfig(user_agent=UA)
        return CrawlConfig(("http://a.test/",), tmp_path, fetch, **kw)  # type: ignore[arg-type]

    assert cfg(topic="x").resolved_defer_ratio == DEFER_RATIO
    assert cfg(topic="x", strategy="keyword").resolved_defer_ratio == DEFER_RATIO
    assert cfg(topic="x", strategy="bfs").resolved_defer_ratio == 0.0
    assert cfg(topic="x", strategy="random").resolved_defer_ratio == 0.0
    assert cfg(topic="x", defer_ratio=0.0).resolved_defer_ratio == 0.0
    with pytest.raises(ConfigError):
        cfg(defer_ratio=1.5)


@pytest.mark.unit
async def test_best_tracking_pops_every_url_once(tmp_path: Path) -> None:
    """Keeping a key's best exact (window refilled as it empties, better URLs joining it)
    never hands a URL out twice nor loses one, across several windows."""
    f = SqliteFrontier.open(tmp_path / "s.sqlite", defer_ratio=0.5)
    n = 3 * WINDOW + 5
    await f.add([UrlEntry(f"http://a.test/{i}", "a.test", priority=i / n) for i in range(n)])
    assert (await f.lease(1000.0)).key == "a.test"
    popped = []
    while (entry := await f.pop_url("a.test", 1000.0)) is not None:
        popped.append(entry.url)
        await f.finish(entry.url, "stored")
        if len(popped) == 40:  # a better URL arrives mid-window
            await f.add([UrlEntry("http://a.test/late", "a.test", priority=2.0)])
    assert len(popped) == len(set(popped)) == n + 1
    assert popped[40] == "http://a.test/late"
    await f.store.close()
