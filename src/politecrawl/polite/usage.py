"""The crawl's declared purpose against what the site's owner says about use: one place decides.

A crawl states what it is for (``--purpose search|ai-input|ai-train|archive``). Owners state
what their pages may be used for in robots.txt (``Content-Usage``, ``Content-Signal``), in
``/.well-known/tdmrep.json``, in response headers (``Content-Usage``, ``tdm-reservation``,
``X-Robots-Tag: noai``) and in the page (``<meta name="tdm-reservation">``, ``<meta
name="robots" content="noai">``). ``statements`` reads each form; this module turns each into
a ``Statement`` (which purposes it allows or refuses) and decides, in ``decide``:

* most restrictive wins (draft-ietf-aipref-vocab-07 §5.1): one statement refusing the purpose
  refuses the page, whatever the others allow;
* TDMRep is resolved first, in its own order (TDMRep §6.7): the file, then the headers, then
  the meta element, each later one superseding; the result is one statement;
* robots.txt rules apply by longest path match (attach-04 §3.1), rules of equal path combined.

These statements govern use, not crawling: a refused page is fetched (its links are followed)
but not kept. Where a refusal comes from robots.txt or tdmrep.json at ``/`` (the whole site),
the URL is not fetched at all (``site_refusal``). The table is in docs/politeness.md.
"""

from __future__ import annotations

import enum
import functools
import logging
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from multidict import MultiMapping

from politecrawl.polite import statements as st
from politecrawl.robots.match import (
    Matcher,
    Rule,
    display_text,
    normalise_path,
    normalise_pattern,
    request_path,
)
from politecrawl.robots.rules import RobotsRules, UsageLine

__all__ = [
    "PURPOSES",
    "Purpose",
    "RobotsUsage",
    "Statement",
    "TdmFile",
    "Usage",
    "UsageBook",
    "covers_every_path",
    "decide",
    "statement_of_labels",
    "statement_of_signals",
]

log = logging.getLogger("politecrawl")


class Purpose(enum.StrEnum):
    """What the crawl's pages will be used for (``--purpose``)."""

    SEARCH = "search"
    AI_INPUT = "ai-input"
    AI_TRAIN = "ai-train"
    ARCHIVE = "archive"


PURPOSES: Final = tuple(p.value for p in Purpose)
TDM_PURPOSES: Final = frozenset({Purpose.AI_TRAIN, Purpose.AI_INPUT})  # text and data mining
_TDM_KEYS: Final = tuple(sorted(p.value for p in TDM_PURPOSES))

# aipref labels for each purpose, most specific level first; the first level that states a
# preference decides (a category without one takes its parent's, as drafts -02..-04 nested
# them under "Automated Processing"). vocab-07 defines train-ai and search only.
_AIPREF_LEVELS: Final[dict[Purpose, tuple[frozenset[str], ...]]] = {
    Purpose.AI_TRAIN: (frozenset({"train-ai", "train-genai"}), frozenset({"bots", "all"})),
    Purpose.AI_INPUT: (frozenset({"ai-use", "ai-output"}), frozenset({"bots", "all"})),
    Purpose.SEARCH: (frozenset({"search"}), frozenset({"bots", "all"})),
    Purpose.ARCHIVE: (frozenset({"bots", "all"}),),
}
_LEVELS: Final = tuple((p.value, levels) for p, levels in _AIPREF_LEVELS.items())
_SIGNALS: Final = {"search": Purpose.SEARCH, "ai-input": Purpose.AI_INPUT,
                   "ai-train": Purpose.AI_TRAIN}  # fmt: skip
ROOT: Final = "/"  # a robots rule without a path, or tdmrep.json's "/": the whole site
_CACHE: Final = 10_000


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement in force for a URL: where it was read, as written, and what it says
    per purpose (True allowed, False refused; a purpose left out is not spoken of)."""

    source: str  # robots:content-usage, robots:content-signal, tdmrep, header:..., meta:...
    text: str
    prefs: Mapping[str, bool]
    where: str | None = None  # the robots.txt / tdmrep.json path the statement is bound to

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "text": self.text, "prefs": dict(self.prefs)}
        if self.where is not None:
            out["where"] = self.where
        return out


@dataclass(frozen=True, slots=True)
class Usage:
    """The decision for one URL: the statements in force and those refusing the purpose."""

    purpose: Purpose
    statements: tuple[Statement, ...] = ()
    refused_by: tuple[Statement, ...] = ()
    # the page's own statements that could not be read (source, text): ignored, as the
    # specifications say, but kept with the page, so a mistyped refusal is on record
    unreadable: tuple[tuple[str, str], ...] = ()

    @property
    def refused(self) -> bool:
        return bool(self.refused_by)

    @property
    def sources(self) -> list[str]:
        """The sources that refuse, each once, in order (the log's ``reserved:`` reason)."""
        return list(dict.fromkeys(s.source for s in self.refused_by))

    def to_json(self) -> dict[str, Any]:
        """What ``pages.jsonl``, the items and the WARC metadata record keep."""
        out: dict[str, Any] = {
            "purpose": self.purpose.value,
            "allowed": not self.refused,
            "refused_by": self.sources,
            "statements": [s.to_json() for s in self.statements],
        }
        if self.unreadable:
            out["unreadable"] = [{"source": src, "text": text} for src, text in self.unreadable]
        return out


def decide(
    purpose: Purpose, found: Iterable[Statement], unreadable: Iterable[tuple[str, str]] = ()
) -> Usage:
    """Most restrictive wins (vocab-07 §5.1): any statement refusing ``purpose`` refuses."""
    statements = tuple(found)
    refused = tuple(s for s in statements if s.prefs.get(purpose.value) is False)
    return Usage(purpose, statements, refused, tuple(unreadable))


def statement_of_labels(source: str, text: str, labels: Mapping[str, bool],
                        where: str | None = None) -> Statement:  # fmt: skip
    """An aipref statement: per purpose, the first level of labels that states a preference,
    a refusal winning within a level."""
    prefs: dict[str, bool] = {}
    for purpose, levels in _LEVELS:
        for level in levels:
            said = [labels[label] for label in level if label in labels]
            if said:
                prefs[purpose] = all(said)
                break
    return Statement(source, text, prefs, where)


def statement_of_signals(source: str, text: str, signals: Mapping[str, bool],
                         where: str | None = None) -> Statement:  # fmt: skip
    """A content signal: ``search``, ``ai-input``, ``ai-train``, each its own purpose."""
    prefs = {_SIGNALS[k].value: v for k, v in signals.items() if k in _SIGNALS}
    return Statement(source, text, prefs, where)


@functools.lru_cache(maxsize=1024)
def _header_statement(text: str) -> Statement | None:
    """A Content-Usage header's statement (a site sends the same few values again and again:
    parsed once each). Statements are never changed once made, so one may be shared."""
    labels = st.vocabulary(text)
    return None if labels is None else statement_of_labels("header:content-usage", text, labels)


def _tdm_statement(source: str, text: str, reserved: bool, where: str | None = None) -> Statement:
    """A TDMRep reservation refuses (or, at 0, allows) text and data mining: ai-train and
    ai-input; search and archive are not mining."""
    return Statement(source, text, dict.fromkeys(_TDM_KEYS, not reserved), where)


def _pattern(path: str) -> str:
    """A path pattern as robots.txt's are compared (``path``: latin-1 decoded bytes)."""
    anchored = path.endswith("$")
    body = normalise_pattern(path[:-1] if anchored else path)
    return body + "$" if anchored else body


def covers_every_path(pattern: str | None) -> bool:
    """Whether a path pattern (a robots.txt rule's path, a tdmrep.json ``location``: ``*``
    any sequence, a final ``$`` the end, as RFC 9309 §2.2.3 which TDMRep §6.1 borrows) matches
    every request path, as ``/`` does: ``/*``, ``*``, ``/*$``, ``*/`` (every path starts with
    ``/``). A refusal there is a refusal of the whole site."""
    if pattern is None:
        return False
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    if not body or body.replace("*", "") not in ("", "/"):
        return False
    return not anchored or body.endswith("*")


class RobotsUsage:
    """The Content-Usage and Content-Signal rules of one robots.txt that apply to us, matched
    by path as Allow/Disallow are (RFC 9309 §2.2.2 longest match; attach-04 §3.1)."""

    def __init__(
        self, lines: Iterable[UsageLine], origin: str = "", outside: Iterable[UsageLine] = ()
    ) -> None:
        self.bad: list[UsageLine] = []
        for line in outside:  # before any User-agent line: a group rule of no group
            self.bad.append(line)
            log.warning(
                "robots.txt of %s, line %d: %s %r outside any group (before the first "
                "User-agent line; a group rule, aipref-attach §3): ignored",
                origin or "?", line.line, line.key, display_text(line.value[:200]),
            )  # fmt: skip
        by_key: dict[str, list[tuple[Rule, Statement]]] = {}
        for line in lines:
            # (a line's value is latin-1 decoded bytes, as robots.txt is read: its path is
            # matched so, and what is shown or kept is the UTF-8 text the owner wrote)
            path, text = st.robots_rule(line.value)
            made = self._statement(line.key, path, text)
            if made is None:
                self.bad.append(line)
                log.warning(
                    "robots.txt of %s, line %d: %s value %r not understood: ignored",
                    origin or "?", line.line, line.key, display_text(line.value[:200]),
                )  # fmt: skip
                continue
            rule = Rule(True, _pattern(path or ROOT), line.line, line.value)
            by_key.setdefault(line.key, []).append((rule, made))
        # per kind: a matcher of its paths, and each matching line's statements (all those
        # of the same path: attach-04 §3.1 combines them)
        self._kinds: list[tuple[Matcher, dict[int, list[Statement]]]] = []
        for found in by_key.values():
            same: dict[str, list[Statement]] = {}
            for rule, made in found:
                same.setdefault(rule.pattern, []).append(made)
            by_line = {rule.line: same[rule.pattern] for rule, _ in found}
            self._kinds.append((Matcher([r for r, _ in found]), by_line))

    @staticmethod
    def _statement(key: str, path: str | None, text: str) -> Statement | None:
        where = display_text(path) if path else ROOT
        source = f"robots:{key}"
        if key == "content-usage":
            labels = st.vocabulary(text) if text else None
            shown = display_text(text)
            return None if labels is None else statement_of_labels(source, shown, labels, where)
        signals = st.content_signal(text)
        shown = display_text(text)
        return None if signals is None else statement_of_signals(source, shown, signals, where)

    def statements_for(self, url: str) -> list[Statement]:
        """The statements of the longest matching path, per kind (rules of that very path
        all apply: attach-04 §3.1 combines them by vocab §5.1)."""
        path = normalise_path(request_path(url))
        out: list[Statement] = []
        for matcher, by_line in self._kinds:
            line = matcher.decide(path).line
            if line is not None:
                out += by_line[line]
        return out


@dataclass(frozen=True, slots=True)
class TdmFile:
    """An origin's tdmrep.json: its rules in file order (None: no usable file)."""

    # each rule: the literal head of its pattern (a cheap first test), its matcher, itself
    rules: tuple[tuple[str, Matcher, st.TdmRule], ...] = ()

    @classmethod
    def of(cls, rules: Iterable[st.TdmRule]) -> TdmFile:
        made = []
        for r in rules:
            # (a location is text, its path's bytes UTF-8: compared as a robots.txt line is)
            latin = r.location.encode("utf-8", "surrogatepass").decode("latin-1")
            pattern = _pattern(latin)
            head = pattern.split("*", 1)[0].removesuffix("$")
            made.append((head, Matcher([Rule(True, pattern, 1, latin)]), r))
        return cls(tuple(made))

    def statement_for(self, url: str) -> Statement | None:
        """The first rule whose location matches (TDMRep §6.1: the first is the most
        specific), as a statement; None when none matches (reservation unset)."""
        path = normalise_path(request_path(url))
        for head, matcher, rule in self.rules:
            if path.startswith(head) and matcher.decide(path).line is not None:
                text = f"location={rule.location} tdm-reservation={int(rule.reserved)}"
                if rule.policy:
                    text += f" tdm-policy={rule.policy}"
                return _tdm_statement("tdmrep", text, rule.reserved, rule.location)
        return None


@dataclass(slots=True)
class UsageBook:
    """Per crawl: the purpose, each origin's tdmrep.json, each robots.txt's usage rules."""

    purpose: Purpose
    product_token: str
    _tdm: OrderedDict[str, TdmFile] = field(default_factory=OrderedDict)
    _robots: OrderedDict[str, tuple[RobotsRules, RobotsUsage]] = field(default_factory=OrderedDict)
    bad_lines: int = 0
    _said: set[tuple[str, str]] = field(default_factory=set)  # (origin, source) warned of

    @property
    def needs_tdmrep(self) -> bool:
        """tdmrep.json speaks of mining only: a search or archive crawl does not ask."""
        return self.purpose in TDM_PURPOSES

    def tdmrep_known(self, origin: str) -> bool:
        return not self.needs_tdmrep or origin in self._tdm

    def record_tdmrep(self, origin: str, status: int | None, body: bytes) -> str:
        """A tdmrep.json answer (fetched once per origin); the request log's label. Anything
        but a 2xx JSON array means the site does not use TDMRep (§6.1)."""
        file, label = TdmFile(), "tdmrep:none"
        if status is not None and 200 <= status < 300:
            parsed = st.tdmrep_file(body)
            if parsed is None:
                label = "tdmrep:invalid"
                log.warning("tdmrep.json of %s is not a JSON array of rules: ignored", origin)
            else:
                rules, bad = parsed
                file, label = TdmFile.of(rules), "tdmrep:rules"
                if bad:
                    self.bad_lines += bad
                    log.warning("tdmrep.json of %s: %d malformed rule(s) ignored", origin, bad)
                odd = [r for r in rules if r.spelled is not None]
                if odd:  # read, and said: the file is not as TDMRep writes it
                    log.warning(
                        "tdmrep.json of %s: tdm-reservation written %s (TDMRep: 0 or 1): "
                        "read as %s", origin, ", ".join(r.spelled or "" for r in odd[:4]),
                        ", ".join(str(int(r.reserved)) for r in odd[:4]),
                    )  # fmt: skip
        self._tdm[origin] = file
        while len(self._tdm) > _CACHE:
            self._tdm.popitem(last=False)
        return label

    def _robots_usage(self, origin: str, rules: RobotsRules | None) -> RobotsUsage | None:
        if rules is None:
            return None
        hit = self._robots.get(origin)
        if hit is None or hit[0] is not rules:  # a new copy of robots.txt: read it again
            usage = RobotsUsage(rules.usage_lines(self.product_token), origin,
                                rules.usage_outside_groups)  # fmt: skip
            self.bad_lines += len(usage.bad)
            hit = (rules, usage)
            self._robots[origin] = hit
            while len(self._robots) > _CACHE:
                self._robots.popitem(last=False)
        return hit[1]

    def _site_statements(self, origin: str, url: str, rules: RobotsRules | None
                         ) -> tuple[list[Statement], Statement | None]:  # fmt: skip
        robots = self._robots_usage(origin, rules)
        found = robots.statements_for(url) if robots is not None else []
        tdm = self._tdm.get(origin)
        return found, tdm.statement_for(url) if tdm is not None else None

    def site_refusal(self, origin: str, url: str, rules: RobotsRules | None) -> Usage | None:
        """The decision before fetching, when robots.txt or tdmrep.json refuses the purpose
        for the whole site (a statement at ``/``, or at a pattern matching every path as
        ``/`` does: ``/*``, ``*``): the URL is then not fetched at all."""
        found, tdm = self._site_statements(origin, url, rules)
        usage = decide(self.purpose, [*found, *([tdm] if tdm is not None else [])])
        if usage.refused and any(covers_every_path(s.where) for s in usage.refused_by):
            return usage
        return None

    def for_page(
        self,
        origin: str,
        url: str,
        rules: RobotsRules | None,
        headers: MultiMapping[str],
        metas: Iterable[tuple[str, str]],
    ) -> Usage:
        """Every statement in force for a fetched page, decided. ``headers``: the response's
        (a multidict: ``getall``); ``metas``: the page's (name, content) meta pairs."""
        found, tdm = self._site_statements(origin, url, rules)
        unreadable: list[tuple[str, str]] = []
        cu = headers.getall("content-usage", [])
        if cu:
            text = ", ".join(cu)
            said = _header_statement(text)
            if said is None:
                unreadable.append(self._bad_header(origin, "header:content-usage", text))
            else:
                found.append(said)
        meta_robots: list[str] = []
        meta_tdm: str | None = None
        token = self.product_token.lower()
        for name, content in metas:
            key = name.strip().lower()
            if key in ("robots", token):
                meta_robots.append(content)
            elif key == "tdm-reservation":
                meta_tdm = content
        # TDMRep §6.7: the file, then the header, then the meta element, each superseding
        for source, value in (("header:tdm-reservation", headers.get("tdm-reservation")),
                              ("meta:tdm-reservation", meta_tdm)):  # fmt: skip
            if value is None:
                continue
            reserved = st.tdm_reservation(value)
            if reserved is None:
                unreadable.append(self._bad_header(origin, source, value))
            else:
                tdm = _tdm_statement(source, f"tdm-reservation={value.strip()}", reserved)
        if tdm is not None:
            found.append(tdm)
        xrt = headers.getall("x-robots-tag", [])
        for source, words in (("meta:robots", st.ai_tokens(meta_robots, [], token)),
                              ("header:x-robots-tag", st.ai_tokens([], xrt, token))):  # fmt: skip
            for word in sorted(words):
                # noimageai speaks of the page's images, which are not kept here: recorded
                prefs = dict.fromkeys(_TDM_KEYS, False) if word == "noai" else {}
                found.append(Statement(source, word, prefs))
        return decide(self.purpose, found, unreadable)

    def first_time(self, origin: str, what: str) -> bool:
        """Whether ``what`` of the site is said now for the first time (a site sends the same
        header on every page: said once a site and kind)."""
        said = (origin, what)
        if said in self._said:
            return False
        if len(self._said) >= _CACHE:
            self._said.clear()
        self._said.add(said)
        return True

    def _bad_header(self, origin: str, source: str, value: str) -> tuple[str, str]:
        """A page's statement that could not be read: counted, said once per site and kind
        (a site sends the same header on every page), and returned to go with the page."""
        self.bad_lines += 1
        if self.first_time(origin, source):
            log.warning(
                "%s: a %s value %r was not understood: ignored (as the specifications say), "
                "recorded with each page as usage.unreadable",
                origin, source, value[:200],
            )  # fmt: skip
        return source, value[:1000]
