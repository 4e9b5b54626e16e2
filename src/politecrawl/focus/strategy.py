"""The crawl's strategy: which of the links found should be fetched first.

``bfs`` (shallower first), ``random``, ``keyword`` or ``focused``: each fetched page is scored
by a nugget function (``--topic`` keyword scorer, or a user's callable via ``--relevance``), the
link that led to it is a training example for the online prioritiser (``prioritizer``), and
every new link is queued with the prioritiser's score. A link's score starts from the topic
prior (how much of the topic its anchor and URL words cover, judged by the keyword scorer's
own terms), so the first pages are chosen by the topic, not at random; ``keyword`` keeps that
prior and never learns (the baseline the learning has to beat). The frontier serves the ready
site with the best URL first, so politeness is never traded for priority: a site in the
penalty box keeps its best URL waiting, and with ``--defer-ratio`` a site whose best URL is
much worse than the best queued at a site that can be asked now or soon is not leased while
the better one waits on its delay (``frontier.not_worth_it``, on either frontier).

The features of queued links are kept (bounded) so that the page they lead to can teach the
model, and so queued URLs can be re-scored as the model changes (``rescore``). A listing's link
to the next listing keeps a floor under its priority (``_series_floor``): a listing is never a
nugget itself, so the model alone would learn the way to the next one as a miss.
"""

from __future__ import annotations

import logging
import random
import re
from collections import Counter, OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from politecrawl.content.parse import Link
from politecrawl.focus.copies import COPY_SHARE, CopyFolders
from politecrawl.focus.prioritizer import LinkFeatures, Prioritizer, link_features, section_of
from politecrawl.focus.relevance import (
    Document,
    KeywordScorer,
    NuggetFunction,
    path_words,
    tokens,
)
from politecrawl.focus.relevance import load_callable as load_nugget
from politecrawl.focus.siblings import SectionIndex
from politecrawl.urls.canonical import host_of, registered_domain
from politecrawl.urls.traps import pattern_of

log = logging.getLogger("politecrawl")

_MAX_FEATURES = 2_000_000  # queued links whose features are kept for learning/re-scoring
_RESCORE_MIN, _RESCORE_MAX = 20, 500  # pages learned between re-scorings: a quarter of the
# pages learned so far, within these bounds (often early, when the model changes most)


# A listing's link to the next listing keeps this share of the best item it lists
# (``Focus._series_floor``); a listing lists at least ``_LISTING_ITEMS`` items of one pattern.
SERIES_SHARE = 0.5
SERIES_KEEP = 0.8
_LISTING_ITEMS = 5
_NEXT_PAGE = re.compile(r"[/?&;](?:[a-z_-]+[/=])?[0-9]+/?", re.IGNORECASE)


def _first_page_series(source_url: str, links: list[Link]) -> tuple[str, str] | None:
    """The pattern of a listing's second page when the first has no number (``/forum/``
    links ``/forum/page/2`` or ``/forum?page=2``): a link that adds one number to the URL."""
    base = source_url.partition("#")[0].rstrip("/")
    for link in links:
        url = link.url
        if url.startswith(base) and _NEXT_PAGE.fullmatch(url, len(base)):
            return pattern_of(url)
    return None


def choose_strategy(
    strategy: str | None, topic: str | None, relevance: str | NuggetFunction | None
) -> tuple[str, NuggetFunction | None]:
    """The strategy and nugget function the options ask for; ``ConfigError`` when they say
    nothing to look for (a topic without keywords, a nugget that does not import, a focused
    or keyword crawl with neither). Cheap: the CLI asks it before the crawl says anything."""
    nugget: NuggetFunction | None = None
    if isinstance(relevance, str) and relevance:
        nugget = load_nugget(relevance)
    elif callable(relevance):
        nugget = relevance
    elif topic:
        nugget = KeywordScorer(topic)
    chosen = strategy or ("focused" if nugget is not None else "bfs")
    if chosen in ("focused", "keyword") and nugget is None:
        from politecrawl.errors import ConfigError

        raise ConfigError(f"--strategy {chosen} needs --topic or --relevance")
    return chosen, nugget


@dataclass(frozen=True, slots=True)
class PageScore:
    relevance: float | None
    charset: str | None
    relevant: bool
    distance: int  # hops since the last relevant page, for the links found on this one
    floor: float = 0.0  # the page's own floor as a listing of a series (Focus._series_floor)
    error: str | None = None  # the nugget function failed on the page (scored 0)


class Focus:
    """Priorities for links, relevance for pages; state saved with the crawl."""

    def __init__(
        self,
        strategy: str,
        nugget: NuggetFunction | None,
        *,
        seed: int = 0,
        relevant_at: float = 0.5,
        max_features: int = _MAX_FEATURES,
    ) -> None:
        self.strategy = strategy
        self.nugget = nugget
        self.relevant_at = relevant_at
        self.model = (
            Prioritizer(relevant_at=relevant_at, seed=seed, learning=strategy == "focused")
            if strategy in ("focused", "keyword")
            else None
        )
        self._topic = nugget if isinstance(nugget, KeywordScorer) else None
        self._features: OrderedDict[str, LinkFeatures] = OrderedDict()
        self._max = max_features
        self._rng = random.Random(seed)
        self.relevant_pages = 0
        self.scored_pages = 0
        self._said_range = False  # a score outside [0, 1] said once
        self.learned_since_rescore = 0
        self.copies = CopyFolders()
        self.sections = SectionIndex()

    @classmethod
    def from_options(
        cls,
        strategy: str | None,
        topic: str | None,
        relevance: str | NuggetFunction | None,
        seed: int = 0,
    ) -> Focus:
        """``relevance``: a nugget function, or its import string ``"pkg.module:function"``."""
        chosen, nugget = choose_strategy(strategy, topic, relevance)
        return cls(chosen, nugget, seed=seed)

    # -- pages ----------------------------------------------------------------------------
    def score_page(self, url: str, doc: Document | None) -> PageScore:
        """Relevance of a fetched page (None without a nugget function); teaches the model.

        ``doc`` is the page as ``page.read_page`` decoded and parsed it (no second parse).
        """
        if self.nugget is None or doc is None:
            return PageScore(None, None, False, 0)
        error = None
        try:
            rel = float(self.nugget(doc))
        except (Exception, SystemExit, KeyboardInterrupt) as exc:  # a user's nugget function
            # failing must not stop the crawl (nor its sys.exit(): Ctrl-C reaches the crawl by
            # its signal handler, never as an exception in user code); it is said and counted,
            # as a page handler's failure
            rel, error = 0.0, repr(exc)
            log.warning("nugget function failed on %s (scored 0): %s", url, error, exc_info=True)
        if rel != rel:  # NaN: no judgement either
            rel, error = 0.0, "returned NaN"
            log.warning("nugget function returned NaN on %s (scored 0)", url)
        if not 0.0 <= rel <= 1.0 and not self._said_range:  # (a count of nuggets, say)
            self._said_range = True
            log.warning(
                "nugget function returned %g on %s, outside [0, 1]: read as %g (said once)",
                rel, url, min(1.0, max(0.0, rel)),
            )  # fmt: skip
        rel = min(1.0, max(0.0, rel))
        relevant = rel >= self.relevant_at
        self.scored_pages += 1
        self.relevant_pages += relevant
        feats = self._features.pop(url, None)
        if self.model is not None:
            if feats is not None:
                self.model.learn(feats, rel)
                self.learned_since_rescore += 1
            else:
                host = host_of(url)
                self.model.observe(host, registered_domain(host), rel, section_of(url))
        parent_distance = feats.distance if feats is not None else 0
        distance = 0 if relevant else parent_distance + 1
        floor = feats.floor if feats is not None else 0.0
        return PageScore(rel, doc.charset, relevant, distance, floor, error)

    def saw_stored(
        self, url: str, duplicate_of: str | None, relevant: bool = False
    ) -> list[tuple[str, float]]:
        """The page fetched at ``url`` was stored, as the very page of ``duplicate_of`` or as
        a page of its own (``relevant``: as ``score_page`` judged it). New priorities of
        queued URLs, to apply at once: those of a folder this page showed to be a copy of
        another (``copies``; a fast site would serve the rest of the folder before the next
        re-scoring), or, after a relevant page of its own, those of its section
        (``siblings``), re-scored with what the page taught."""
        model = self.model
        if model is None:
            return []
        if duplicate_of is None:
            self.copies.observe_own(url)
            if not (relevant and model.learning):
                return []
            features = self._features
            siblings = self.sections.queued(section_of(url), features.__contains__)
            return [(u, self._priority(model, features[u])) for u in siblings]
        return self._rescore_folder(model, self.copies.observe(url, duplicate_of))

    def saw_no_page(self, url: str) -> list[tuple[str, float]]:
        """The link to ``url`` led to no page: a 404 or 410, or something other than HTML. It
        counts against the URL's folders: after three such, and more than twice the pages of
        its own the folder held, its queued URLs go last (``copies``). Returns their new
        priorities, to apply at once. Django's documentation, as Debian ships it, links
        Python's as ``/usr/share/doc/python3-doc/...`` on its own host, every one a 404 whose
        anchor names a topic (``datetime``): a focused crawl asked for nine in its first 33
        fetches. Not a lesson for the model: taught as a miss of the link's words, or counted
        in its host's harvest, it lost on some beds (docs/focus.md, section 15)."""
        if self.model is None:
            return []
        self._features.pop(url, None)
        return self._rescore_folder(self.model, self.copies.observe_missing(url))

    def _rescore_folder(self, model: Prioritizer, folder: str | None) -> list[tuple[str, float]]:
        """New priorities of the URLs queued under ``folder`` (a URL prefix) just found barren."""
        if folder is None:
            return []
        queued = self._features.items()  # up to 2 million: 0.2 s, once per folder found
        return [(u, self._priority(model, f)) for u, f in queued if u.startswith(folder)]

    # -- links ----------------------------------------------------------------------------
    def link_items(
        self,
        source_url: str,
        links: list[Link],
        depth: int,
        score: PageScore,
        contexts: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        """(url, priority) for the links of a page that are to be followed. ``contexts``: the
        text around each link (``relevance.extract_page``), as learned words of their own
        (``link_features``); the real crawl gives none: measured in bench/focus_sim.py, they
        gained nothing on the tuning beds (docs/focus.md)."""
        links = [link for link in links if not link.nofollow]
        if self.strategy == "random":
            return [(link.url, self._rng.random()) for link in links]
        if self.model is None:
            return [(link.url, float(-depth)) for link in links]
        items = []
        src_rel = score.relevance or 0.0
        model = self.model
        topic = self._topic
        own = pattern_of(source_url) or _first_page_series(source_url, links)
        patterns: list[tuple[str, str] | None] = []
        for link in links:
            if link.url in self._features:
                continue  # queued already with features; the seen-set will drop it
            a_match = u_match = 0.0
            if topic is not None:
                a_match = topic.match(tokens(link.anchor)) if link.anchor else 0.0
                u_match = topic.match(path_words(link.url))
            f = link_features(
                link.url,
                link.anchor,
                contexts.get(link.url) if contexts is not None else None,
                source_url=source_url,
                source_relevance=src_rel,
                distance=score.distance,
                anchor_match=a_match,
                url_match=u_match,
                translation=link.translation,
            )
            if own is not None:
                patterns.append(pattern_of(link.url))
            items.append((link.url, self._priority(model, f)))
            self._remember(link.url, f)
        if own is not None and own in patterns:
            self._series_floor(items, patterns, own, score.floor)
        return items

    def _series_floor(
        self,
        items: list[tuple[str, float]],
        patterns: list[tuple[str, str] | None],
        own: tuple[str, str],
        inherited: float,
    ) -> None:
        """A listing's link to the next listing (``/forum/page/2`` on ``/forum/page/1``, both
        of one numbered pattern) keeps a share of the best item it lists: the next listing
        lists items like these, while it is no nugget itself, so the model learns the links
        to listings as misses. A listing without a good item passes most of its own floor on
        (``SERIES_KEEP``): a forum's topic is not on every listing page. A page is a listing
        when most of its new links are items of one other numbered pattern (``/t/N``); release
        notes that link their numbered neighbours and prose pages are not (a floor on every
        numbered neighbour cost the `fifth` bed 0.007 of harvest at 300 fetches,
        docs/focus.md section 14)."""
        counts = Counter(p for p in patterns if p is not None and p != own)
        if not counts:
            return
        item, n = counts.most_common(1)[0]
        others = sum(1 for p in patterns if p != own)
        if n < _LISTING_ITEMS or 2 * n < others:
            return
        best = max(p for (_, p), pat in zip(items, patterns, strict=True) if pat == item)
        floor = max(SERIES_SHARE * best, SERIES_KEEP * inherited)
        for i, pat in enumerate(patterns):
            url, p = items[i]
            if pat == own and p < floor:
                items[i] = (url, floor)
                self._features[url] = replace(self._features[url], floor=floor)

    def _priority(self, model: Prioritizer, f: LinkFeatures) -> float:
        p = max(model.score(f), f.floor)
        return p * COPY_SHARE if self.copies.covers(f.url, f.host) else p

    def default_priority(self, depth: int) -> float:
        """Priority of a URL no link features describe (sitemap entries)."""
        if self.strategy == "random":
            return self._rng.random()
        return 0.5 if self.model is not None else float(-depth)

    def forget(self, urls: list[str]) -> None:
        """Links that were not queued (seen or refused): no page will teach from them."""
        for u in urls:
            self._features.pop(u, None)

    def _remember(self, url: str, f: LinkFeatures) -> None:
        features = self._features
        features[url] = f
        if len(features) > self._max:
            features.popitem(last=False)
        if self.model is not None and self.model.learning:
            self.sections.add(f.section, url)
            if len(self.sections) > 2 * len(features) + 1_000:
                self.sections.rebuild((u, g.section) for u, g in features.items())

    def rescore_due(self) -> bool:
        """Whether the model learned enough since the last ``rescore`` to re-rank the queue."""
        if self.model is None or not self.model.learning:
            return False
        due = min(_RESCORE_MAX, max(_RESCORE_MIN, self.model.updates // 4))
        return self.learned_since_rescore >= due

    def rescore(self) -> list[tuple[str, float]]:
        """New priorities of every queued link with features, as the model has changed."""
        self.learned_since_rescore = 0
        model = self.model
        if model is None:
            return []
        return [(u, self._priority(model, f)) for u, f in self._features.items()]

    def harvest_rate(self) -> float:
        return self.relevant_pages / self.scored_pages if self.scored_pages else 0.0

    # -- persistence --------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "relevant_pages": self.relevant_pages,
            "scored_pages": self.scored_pages,
            "model": self.model.state_dict() if self.model is not None else None,
            "copies": self.copies.state_dict(),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        # (``own_``: a partitioned crawl's focus.json says the crawl's beside this process's)
        self.relevant_pages = int(state.get("own_relevant_pages", state.get("relevant_pages", 0)))
        self.scored_pages = int(state.get("own_scored_pages", state.get("scored_pages", 0)))
        if self.model is not None and state.get("model"):
            self.model.load_state(state["model"])
        if isinstance(state.get("copies"), dict):
            self.copies.load_state(state["copies"])

    def save(self, path: Path) -> None:
        import json

        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state_dict()))
        tmp.replace(path)

    def load(self, path: Path) -> None:
        import json

        try:
            self.load_state(json.loads(path.read_text()))
        except (OSError, ValueError):
            return
