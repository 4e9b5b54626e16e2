"""The online-learned link prioritiser of the adaptive crawler (../shared/seeds/004, "crawling
models": the nugget function's verdict on each fetched page rewards or punishes the link that
led there; random wandering found 1 relevant page in 500, the learned prioritiser 1 in 12).

A link becomes ``LinkFeatures`` once, when it is found: hashed sparse tokens (anchor words,
words around the link, URL path and host-name tokens, the target host and registered domain,
same-host or not, buckets of the source page's relevance and of the distance since the last
relevant ancestor) plus those numbers, and the topic prior: how much of the topic the anchor
and the URL's words cover (``anchor_match``, ``url_match``, from the nugget's own keywords;
0 without a keyword topic). ``Prioritizer.score`` adds, at scoring time, what the crawl has
learned about the target's host, domain and section (its folder and file-name stem:
``library/asyncio-task.html`` is in ``library/asyncio``) since: their harvest rates, smoothed as
``(relevant + a) / (fetched + a + b)`` and fed in as log-odds. A page counts (as a hit, and
as the label the model learns) 0 below half of ``relevant_at``, 1 from ``relevant_at`` up and
linearly between: pages the nugget is fairly sure of teach, faint mentions do not.

The prior is the starting point of the dense weights (``PRIOR_WEIGHTS``): before anything is
learned a link whose anchor covers the topic scores about 0.5 and one with no topic word about
0.06, so the early crawl is directed; learning moves those weights like any other. With
``learning=False`` the prioritiser is keyword best-first: the prior alone, never updated.

The model is a logistic regression trained online by AdaGrad (a per-feature step size, so rare
tokens learn fast from the few relevant pages there are); the label is the relevance of the
page the link led to. Exploration: an optimism bonus that shrinks with the observations of the
target's host (``optimism / sqrt(1 + fetched)``) and an ``epsilon`` share of uniformly random
priorities. Both cost harvest where relevant pages cluster (on the tests' generated topical
web, epsilon 0.05 found 290 instead of 581 relevant pages in the first 1k fetches;
optimism 0.02 vs 0 found 704 vs 746 by 5k), so the defaults are a small optimism and no
epsilon: insurance, not a strategy.

Why hand-written: a link has ~15-40 active features, and pure-Python sparse arithmetic over
them costs microseconds, while a library call pays fixed per-call overheads far above the
budget (score < 20 µs, learn < 50 µs per link). Measured in CPU time, best of 5-7 repeats, on
this 2-core machine while other jobs ran: ``link_features`` 15-26 µs (URL and anchor; +5-25
µs with a context), ``score`` 3-5 µs, ``learn`` 13-17 µs (``bench/focus_sim.py`` prints them
for a whole run). scikit-learn 1.9 on the same links: ``HashingVectorizer.transform`` of one
link 336 µs, ``SGDClassifier(loss="log_loss").partial_fit`` of one pre-hashed example 8.8 ms
(it updates the whole dense 2^20 coefficient vector), ``predict_proba`` of one link 610 µs
with hashing (59 µs per link in batches of 20): 20-500x over budget for one link at a time.

``state_dict()`` / ``load_state()`` round-trip through JSON so a resumed crawl keeps what it
learned. The hash is crc32 (stable across processes, unlike ``hash(str)``).
"""

from __future__ import annotations

import functools
import math
import operator
import random
import zlib
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from politecrawl.errors import ConfigError, StateError
from politecrawl.focus.relevance import tokens
from politecrawl.urls.canonical import registered_domain

__all__ = ["PRIOR_WEIGHTS", "TRANSLATION_SHARE", "LinkFeatures", "Prioritizer", "link_features",
           "section_of", "url_tokens"]  # fmt: skip

_BITS = 20
_MASK = (1 << _BITS) - 1
_MAX_CONTEXT_WORDS = 30
_MAX_TOKEN = 30
_URL_SEPARATORS = {c: " " for c in range(128) if not chr(c).isalnum()}
_URL_NOISE = frozenset({"http", "https", "www", "html", "htm", "php", "asp", "aspx", "jsp",
                        "index", "com", "org", "net"})  # fmt: skip
_STOP_TEXT = "a an and are as at be by for from in into is it its of on or the to with this that"
_STOP = frozenset(_STOP_TEXT.split())
_STATE_VERSION = 2
# bias, source relevance, host, domain and section harvest, host experience, 1/(1+distance),
# anchor and URL coverage of the topic
_N_DENSE = 9
# What a page teaches: 0 below half of relevant_at, 1 from relevant_at, linear between. The
# raw relevance taught the model that the many pages a keyword nugget finds faintly on topic
# (0.1-0.3: an index, a page naming the topic once) are good, and the crawl went to the sites
# with the most of them (tune half of the bed, real crawls: email 0 relevant pages in the first
# 100 fetches with the raw score, 20 with the ramp; concurrency 0 -> 25).
_SOFT_FROM = 0.5
PRIOR_WEIGHTS = (-2.8, 1.0, 0.5, 0.0, 1.0, 0.0, 0.3, 2.8, 2.2)
# A link to the same page in another language (``hreflang``, a language switcher) holds the
# text the crawl has, translated: its priority is this share of the link's, so a focused crawl
# keeps to the language it came in and takes translations only when little else is left. The
# Apache manual links every page to its 6-10 translations; a replayed focused crawl of the
# admin bed's tls topic spent 259 of 300 fetches on them (docs/focus.md, section 7).
TRANSLATION_SHARE = 0.05


_HASHES: dict[str, int] = {}  # token -> index; crc32 + encode cost ~5x a dict hit
_MAX_CACHED = 1 << 20


def _h(token: str) -> int:
    idx = _HASHES.get(token)
    if idx is None:
        if len(_HASHES) >= _MAX_CACHED:
            _HASHES.clear()
        idx = _HASHES[token] = zlib.crc32(token.encode("utf-8", "surrogatepass")) & _MASK
    return idx


_FOLDED: dict[str, str] = {}


def _fold(word: str) -> str:
    """Plural folding (as ``relevance.stem``) and digits to ``#``: ``trains`` = ``train``."""
    folded = _FOLDED.get(word)
    if folded is None:
        if word.isdigit():
            folded = "#"
        elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
            folded = word[:-1]
        else:
            folded = word
        if len(_FOLDED) >= _MAX_CACHED:
            _FOLDED.clear()
        _FOLDED[word] = folded
    return folded


def url_tokens(url: str) -> tuple[list[str], tuple[str, ...]]:
    """(path+query tokens, host-name tokens), split on non-alphanumerics, lower-cased."""
    rest = url.lower().split("://", 1)[-1]
    host, _, path = rest.partition("/")
    folded = _FOLDED.get
    path_toks = [folded(t) or _fold(t) for t in path.translate(_URL_SEPARATORS).split()]
    return [t for t in path_toks if t not in _URL_NOISE][:_MAX_TOKEN], _host_tokens(host)


@functools.lru_cache(maxsize=65536)
def _host_tokens(hostport: str) -> tuple[str, ...]:
    host = hostport.rsplit("@", 1)[-1].split(":", 1)[0]
    host_part = host.rpartition(".")[0] or host  # drop the TLD
    toks = [_fold(t) for t in host_part.translate(_URL_SEPARATORS).split()]
    return tuple(t for t in toks if t not in _URL_NOISE)[:_MAX_TOKEN]


def _words(text: str, limit: int) -> list[str]:
    return [_fold(w) for w in tokens(text)[: limit + limit // 2] if w not in _STOP][:limit]


@functools.lru_cache(maxsize=65536)
def _domain(host: str) -> str:
    """Registered domain, cached: the public-suffix lookup costs ~40 µs, hosts repeat."""
    try:
        return registered_domain(host)
    except (ValueError, LookupError):  # (UnicodeError is a ValueError) an odd host: as is
        return host


def _host_of(url: str) -> str:
    rest = url.split("://", 1)[-1]
    return rest.split("/", 1)[0].rsplit("@", 1)[-1].split(":", 1)[0].lower()


_STEM_CUT = str.maketrans({"-": "/", "_": "/", ".": "/"})


def section_of(url: str) -> str:
    """Host, folder and file-name stem: ``h/library/asyncio`` for ``h/library/asyncio-task.html``
    (documentation and many sites name a chapter's pages by a shared prefix)."""
    rest = url.split("://", 1)[-1].split("?", 1)[0].split("#", 1)[0]
    folder, _, name = rest.rpartition("/")
    if not folder:
        return rest.lower()
    return f"{folder}/{name.translate(_STEM_CUT).split('/', 1)[0]}".lower()


@dataclass(frozen=True, slots=True)
class LinkFeatures:
    """A found link as the prioritiser sees it; built once, scored (maybe often), learned once."""

    url: str
    host: str
    domain: str
    source_relevance: float
    distance: int  # hops since the last relevant ancestor (0: the source page was relevant)
    hashed: tuple[int, ...]  # active binary features, hashed
    section: str = ""  # section_of(url)
    anchor_match: float = 0.0  # share of the topic the anchor text covers, 0..1
    url_match: float = 0.0  # share of the topic the URL's words cover, 0..1
    translation: bool = False  # it leads to its source page in another language (hreflang)
    floor: float = 0.0  # a priority it keeps whatever the model learns (Focus._series_floor)


def link_features(
    url: str,
    anchor: str = "",
    context: str | None = None,
    *,
    source_url: str = "",
    source_relevance: float = 0.0,
    distance: int = 0,
    host: str | None = None,
    domain: str | None = None,
    anchor_match: float = 0.0,
    url_match: float = 0.0,
    translation: bool = False,
) -> LinkFeatures:
    """Features of the link to ``url`` found on ``source_url``; ``context``: text around it.

    Without a context only the anchor's words are used (they are also inside any context, so
    context words are a separate namespace: anchor words are the stronger evidence).
    """
    source_relevance = min(1.0, max(0.0, source_relevance))  # a user's nugget may stray
    distance = max(0, distance)
    host = host if host is not None else _host_of(url)
    if domain is None:
        domain = _domain(host)
    path_toks, host_toks = url_tokens(url)
    feats = [f"p:{t}" for t in path_toks]
    feats += [f"n:{t}" for t in host_toks]
    anchor_words = _words(anchor, _MAX_TOKEN)
    feats += [f"a:{w}" for w in anchor_words]
    if not anchor_words:
        feats.append("a:<empty>")
    if context:
        feats += [f"c:{w}" for w in _words(context, _MAX_CONTEXT_WORDS)]
    same = bool(source_url) and _host_of(source_url) == host
    rel_bucket = min(4, int(source_relevance * 5))
    dist_bucket = min(distance, 4)
    feats += [
        f"H:{host}",
        f"D:{domain}",
        "same" if same else "cross",
        f"src:{rel_bucket}",
        f"dist:{dist_bucket}",
        f"src:{rel_bucket}/dist:{dist_bucket}/{'same' if same else 'cross'}",
    ]
    hashed = tuple({_h(f) for f in feats})
    return LinkFeatures(
        url,
        host,
        domain,
        source_relevance,
        distance,
        hashed,
        section_of(url),
        min(1.0, max(0.0, anchor_match)),
        min(1.0, max(0.0, url_match)),
        translation,
    )


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


class Prioritizer:
    """Online logistic regression over link features; higher ``score`` = fetch sooner.

    ``relevant_at``: the page relevance that counts as a nugget for the harvest statistics.
    ``prior``: (a, b) of the harvest smoothing; a/(a+b) is the harvest assumed for an unseen
    host. ``lr``: AdaGrad step. ``l2``: weight decay applied to the features of each update.
    """

    def __init__(
        self,
        *,
        lr: float = 0.3,
        l2: float = 1e-4,
        relevant_at: float = 0.5,
        prior: tuple[float, float] = (0.5, 20.0),
        optimism: float = 0.02,
        epsilon: float = 0.0,
        seed: int = 0,
        learning: bool = True,
    ) -> None:
        if not (lr > 0 and l2 >= 0 and 0 < relevant_at <= 1 and min(prior) > 0):
            raise ConfigError("need lr > 0, l2 >= 0, 0 < relevant_at <= 1, prior > 0")
        if not (0 <= epsilon < 1 and optimism >= 0):
            raise ConfigError("need 0 <= epsilon < 1 and optimism >= 0")
        self.lr, self.l2, self.relevant_at = lr, l2, relevant_at
        self.prior_a, self.prior_b = prior
        self.optimism, self.epsilon = optimism, epsilon
        self._rng = random.Random(seed)
        # hashed weights and AdaGrad sums: flat arrays, 8 MB each whatever the crawl's size
        # (dicts cost ~100 B an entry and grow towards 2^20 entries on a big crawl)
        self._w = array("d", bytes(8 << _BITS))
        self._g = array("d", bytes(8 << _BITS))
        self.learning = learning
        self._dense = list(PRIOR_WEIGHTS)  # weights of the numeric features: the topic prior
        self._dense_g = [0.0] * _N_DENSE
        self._prior_logit = math.log(self.prior_a / self.prior_b)
        self.hosts: dict[str, list[float]] = {}  # host -> [fetched, relevant, harvest feature]
        self.domains: dict[str, list[float]] = {}
        self.sections: dict[str, list[float]] = {}
        self.updates = 0

    # -- numeric features ----------------------------------------------------------------------

    def _harvest_x(self, fetched: float, relevant: float) -> float:
        """Log-odds of the smoothed harvest, centred on the prior's and scaled to about +-1."""
        a, b = self.prior_a, self.prior_b
        rate = (relevant + a) / (fetched + a + b)
        return (math.log(rate / (1.0 - rate)) - self._prior_logit) / 4.0

    def _dense_x(self, f: LinkFeatures) -> tuple[list[float], float]:
        """Numeric features now, and the target host's fetch count (for optimism)."""
        hs = self.hosts.get(f.host)
        ds = self.domains.get(f.domain)
        ss = self.sections.get(f.section)
        h_n = hs[0] if hs is not None else 0.0
        x = [
            1.0,  # bias
            f.source_relevance,
            hs[2] if hs is not None else 0.0,  # host harvest (cached by observe)
            ds[2] if ds is not None else 0.0,  # domain harvest
            ss[2] if ss is not None else 0.0,  # section harvest
            h_n / (h_n + 5.0),
            1.0 / (1.0 + f.distance),
            f.anchor_match,
            f.url_match,
        ]
        return x, h_n

    def _z(self, f: LinkFeatures, x: list[float]) -> float:
        sparse: float = sum(map(self._w.__getitem__, f.hashed))
        dense: float = sum(map(operator.mul, self._dense, x))
        return sparse + dense

    # -- API -----------------------------------------------------------------------------------

    def probability(self, features: LinkFeatures) -> float:
        """The model's estimate of the relevance of the page behind the link (no exploration)."""
        x, _ = self._dense_x(features)
        return _sigmoid(self._z(features, x))

    def score(self, features: LinkFeatures) -> float:
        """Priority: estimated relevance + optimism for little-known hosts; epsilon: random."""
        if self.epsilon and self._rng.random() < self.epsilon:
            return self._rng.random()
        x, h_n = self._dense_x(features)
        p = _sigmoid(self._z(features, x))
        if features.translation:
            return p * TRANSLATION_SHARE
        return p + self.optimism / math.sqrt(1.0 + h_n)

    def learn(self, features: LinkFeatures, page_relevance: float) -> None:
        """One AdaGrad step towards ``page_relevance``, then count the page for its host
        (``learning=False``: nothing changes)."""
        if not self.learning:
            return
        y = self._hit(page_relevance)
        x, _ = self._dense_x(features)  # statistics before this page: no label leak
        g = _sigmoid(self._z(features, x)) - y
        lr, l2 = self.lr, self.l2
        w, acc = self._w, self._g
        for i in features.hashed:
            wi = w[i]
            grad = g + l2 * wi
            gi = acc[i] + grad * grad
            acc[i] = gi
            w[i] = wi - lr * grad / math.sqrt(gi + 1e-8)
        dense, dg, lr_d = self._dense, self._dense_g, self.lr
        for k in range(_N_DENSE):
            grad = g * x[k] + l2 * (dense[k] - PRIOR_WEIGHTS[k])
            dg[k] += grad * grad
            if dg[k] > 0:
                dense[k] -= lr_d * grad / math.sqrt(dg[k] + 1e-8)
        self.updates += 1
        self.observe(features.host, features.domain, page_relevance, features.section)

    def observe(
        self, host: str, domain: str, page_relevance: float, section: str | None = None
    ) -> None:
        """Count a fetched page for its host's, domain's and section's harvest (``learn``
        does this too; call it directly for pages no link led to, such as seeds)."""
        if not self.learning:
            return
        hit = self._hit(page_relevance)
        tables = [(self.hosts, host), (self.domains, domain)]
        if section:
            tables.append((self.sections, section))
        for table, key in tables:
            stats = table.get(key)
            if stats is None:
                stats = table[key] = [0.0, 0.0, 0.0]
            stats[0] += 1.0
            stats[1] += hit
            stats[2] = self._harvest_x(stats[0], stats[1])

    def _hit(self, page_relevance: float) -> float:
        ramp = self.relevant_at * _SOFT_FROM
        return min(1.0, max(0.0, page_relevance - ramp) / (self.relevant_at - ramp))

    def is_relevant(self, page_relevance: float) -> bool:
        """Whether a page counts as a nugget (resets the distance of the links found on it)."""
        return page_relevance >= self.relevant_at

    def harvest(self, host: str) -> float:
        """Smoothed harvest rate of ``host`` so far: (relevant + a) / (fetched + a + b)."""
        stats = self.hosts.get(host)
        fetched, relevant = (stats[0], stats[1]) if stats is not None else (0.0, 0.0)
        return (relevant + self.prior_a) / (fetched + self.prior_a + self.prior_b)

    # -- persistence ---------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Everything learned, JSON-serialisable (weights keyed by hashed index as strings)."""
        return {
            "version": _STATE_VERSION,
            "bits": _BITS,
            "weights": {str(i): v for i, v in enumerate(self._w) if v != 0.0},
            "adagrad": {str(i): v for i, v in enumerate(self._g) if v != 0.0},
            "dense": list(self._dense),
            "dense_adagrad": list(self._dense_g),
            "hosts": {k: v[:2] for k, v in self.hosts.items()},
            "domains": {k: v[:2] for k, v in self.domains.items()},
            "sections": {k: v[:2] for k, v in self.sections.items()},
            "updates": self.updates,
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore ``state_dict()`` output; ``ValueError`` if it is from an incompatible model."""
        if state.get("version") != _STATE_VERSION or state.get("bits") != _BITS:
            raise StateError("prioritizer state from an incompatible version")
        dense = [float(v) for v in state["dense"]]
        dense_g = [float(v) for v in state["dense_adagrad"]]
        if len(dense) != _N_DENSE or len(dense_g) != _N_DENSE:
            raise StateError("prioritizer state has the wrong number of numeric weights")
        w = array("d", bytes(8 << _BITS))
        g = array("d", bytes(8 << _BITS))
        for table, saved in ((w, state["weights"]), (g, state["adagrad"])):
            for k, v in saved.items():
                table[int(k) & _MASK] = float(v)
        self._w, self._g = w, g
        self._dense, self._dense_g = dense, dense_g
        self.hosts = {str(k): self._stats(v) for k, v in state["hosts"].items()}
        self.domains = {str(k): self._stats(v) for k, v in state["domains"].items()}
        self.sections = {str(k): self._stats(v) for k, v in state.get("sections", {}).items()}
        self.updates = int(state["updates"])

    def _stats(self, saved: list[float]) -> list[float]:
        fetched, relevant = float(saved[0]), float(saved[1])
        return [fetched, relevant, self._harvest_x(fetched, relevant)]

    def top_features(self, names: Iterable[str], n: int = 10) -> list[tuple[str, float]]:
        """The weights of readable feature names (e.g. ``"a:locomotive"``), largest first."""
        scored = [(name, self._w[_h(name)]) for name in names]
        return sorted(scored, key=lambda kv: -kv[1])[:n]
