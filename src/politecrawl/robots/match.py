"""robots.txt matching: which rule of a group decides a request path (RFC 9309 §2.2.2, §2.2.3).

The other half of ``robots``: ``robots.RobotsRules.parse`` reads the file into ``Rule``
values, and ``Matcher`` compiles the rules that apply to one product token so that every
URL the crawler discovers is checked at a bounded cost (no regex, no backtracking). Kept
apart because this is the hot path, tuned on its own (``bench/robots.py``), while the
parser is the part that follows the file format.

Also here: the canonical forms both sides are compared in (``normalise_path``,
``normalise_pattern``), the request path of a URL (``request_path``, as Google's
GetPathParamsQuery) and the ``Verdict`` a check returns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = [
    "NO_RULE",
    "Matcher",
    "Rule",
    "Verdict",
    "display_text",
    "normalise_path",
    "normalise_pattern",
    "request_path",
]

_PATH_START: Final = re.compile(r"[/?;]")
_PATH_OR_HASH: Final = re.compile(r"[/?;#]")
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_UNRESERVED: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# The normalisers rewrite %XX escapes, non-ASCII, and the characters that are
# special in patterns ('*', '$') or commonly escaped in URLs (space). Paths with
# none of these are already canonical: that test is a few ``in`` scans.
_URL_PIECE: Final = re.compile(r"%[0-9A-Fa-f]{2}|[^\x00-\x7f]+|[ *$]")
_PATTERN_PIECE: Final = re.compile(r"%[0-9A-Fa-f]{2}|[^\x00-\x7f]+|[ $]")

_LINE_BITS: Final = 20  # a 512000-byte file has at most 512001 lines < 2**20
_LINE_MASK: Final = (1 << _LINE_BITS) - 1


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of one check, with the rule that decided it (for logs and audits)."""

    allowed: bool
    rule: str | None
    line: int | None


NO_RULE: Final = Verdict(True, None, None)


def _quote_bytes(data: bytes) -> str:
    return "".join(f"%{b:02X}" for b in data)


def _url_piece(m: re.Match[str]) -> str:
    s = m.group()
    if s[0] == "%" and len(s) == 3 and s[1] in _HEX and s[2] in _HEX:
        c = chr(int(s[1:], 16))
        return c if c in _UNRESERVED else s.upper()
    return _quote_bytes(s.encode("utf-8", "surrogatepass"))


def _pattern_piece(m: re.Match[str]) -> str:
    s = m.group()
    if s[0] == "%" and len(s) == 3 and s[1] in _HEX and s[2] in _HEX:
        c = chr(int(s[1:], 16))
        return c if c in _UNRESERVED else s.upper()
    # The file was decoded as latin-1, so each char is one byte of the original.
    return _quote_bytes(s.encode("latin-1"))


def normalise_path(path: str) -> str:
    """Canonical form of a request path (RFC 9309 §2.2.2, §2.2.3)."""
    clean = path.isascii() and "%" not in path and "*" not in path
    if clean and "$" not in path and " " not in path:
        return path
    return _URL_PIECE.sub(_url_piece, path)


def normalise_pattern(body: str) -> str:
    """Canonical form of a pattern body (no final '$'); '*' stays a wildcard."""
    if body.isascii() and "%" not in body and "$" not in body and " " not in body:
        return body
    return _PATTERN_PIECE.sub(_pattern_piece, body)


def request_path(url: str) -> str:
    """Path, params and query of ``url``, always starting with '/'.

    Mirrors Google's GetPathParamsQuery: scheme, authority and fragment removed;
    "/" if there is no path.
    """
    if url.startswith("https://"):
        return _after_authority(url, 8)
    if url.startswith("http://"):
        return _after_authority(url, 7)
    if url[:1] == "/" and url[1:2] != "/":
        cut = url.find("#")
        return url if cut < 0 else url[:cut]
    start = 2 if url.startswith("//") else 0
    m = _PATH_START.search(url, start)
    early = m.start() if m else -1
    proto = url.find("://", start)
    if proto < 0 or (0 <= early < proto):
        proto = start
    else:
        proto += 3
    m = _PATH_START.search(url, proto)
    if m is None:
        return "/"
    begin = m.start()
    cut = url.find("#", start)
    if 0 <= cut < begin:
        return "/"
    end = len(url) if cut < 0 else cut
    if url[begin] != "/":
        return "/" + url[begin:end]
    return url[begin:end]


def _after_authority(url: str, start: int) -> str:
    """Fast path of ``request_path`` once the scheme is known to end at ``start``."""
    m = _PATH_OR_HASH.search(url, start)
    if m is None:
        return "/"
    begin = m.start()
    first = url[begin]
    if first == "#":
        return "/"
    cut = url.find("#", begin)
    path = url[begin:] if cut < 0 else url[begin:cut]
    return path if first == "/" else "/" + path


@dataclass(frozen=True, slots=True)
class Rule:
    """One Allow/Disallow line, pattern already normalised."""

    allow: bool
    pattern: str  # normalised, final '$' included when anchored
    line: int
    value: str  # as written (latin-1 decoded bytes), for Verdict.rule


_CONTAINS: Final = 1  # head*lit: one literal after the head, anywhere
_ENDS_WITH: Final = 2  # head*lit$: one literal that ends the path
_GENERAL: Final = 3  # several literals: _wild_match


@dataclass(frozen=True, slots=True)
class _Hit:
    """A compiled pattern: ``rank`` orders by length, then Allow, then earlier line."""

    rank: int
    verdict: Verdict
    parts: tuple[str, ...]  # literals after the first '*' (wildcard rules only)
    anchored: bool
    kind: int = 0
    last: str = ""  # the single literal of _CONTAINS / _ENDS_WITH rules


def _rank(priority: int, allow: bool, line: int) -> int:
    return (((priority << 1) | allow) << _LINE_BITS) | (_LINE_MASK - min(line, _LINE_MASK))


def _wild_match(path: str, pos: int, parts: tuple[str, ...], anchored: bool) -> bool:
    """Greedy leftmost match of '*'-separated literals: linear, no backtracking.

    Leftmost placement of each literal is optimal, so no alternative needs
    exploring; with '$' the last literal must also be a suffix after ``pos``.
    """
    find = path.find
    if anchored:
        for p in parts[:-1]:
            i = find(p, pos)
            if i < 0:
                return False
            pos = i + len(p)
        tail = parts[-1]
        return len(path) - len(tail) >= pos and path.endswith(tail)
    for p in parts:
        i = find(p, pos)
        if i < 0:
            return False
        pos = i + len(p)
    return True


_GRAM: Final = 3  # key length of the gram index of _CONTAINS rules
_GRAM_MIN_RULES: Final = 16  # below this, a linear scan is as fast


@dataclass(frozen=True, slots=True)
class _Bucket:
    """Wildcard rules sharing one literal head.

    ``scan`` is tried in rank order. ``grams`` indexes the many ``head*lit``
    rules of big buckets by the first three characters of ``lit``, so a query
    costs one dict probe per path position instead of one ``find`` per rule.
    """

    scan: tuple[_Hit, ...]
    grams: dict[str, tuple[_Hit, ...]] | None


def _bucket(hits: list[_Hit]) -> _Bucket:
    hits = sorted(hits, key=lambda h: h.rank, reverse=True)
    indexable = [h for h in hits if h.kind == _CONTAINS and len(h.last) >= _GRAM]
    if len(indexable) < _GRAM_MIN_RULES:
        return _Bucket(tuple(hits), None)
    grams: dict[str, list[_Hit]] = {}
    for h in indexable:
        grams.setdefault(h.last[:_GRAM], []).append(h)  # stays in rank order
    scan = tuple(h for h in hits if not (h.kind == _CONTAINS and len(h.last) >= _GRAM))
    return _Bucket(scan, {k: tuple(v) for k, v in grams.items()})


class Matcher:
    """The merged rules of the groups that apply to one product token.

    Literal prefixes are looked up by length in dicts (longest first), exact
    ``lit$`` rules in one dict, wildcard rules are bucketed by their literal
    head and tried in rank order, stopping once no remaining rule can win.
    """

    __slots__ = ("_exact", "_lit", "_lit_lengths", "_wild", "_wild_lengths")

    def __init__(self, rules: list[Rule]) -> None:
        exact: dict[str, _Hit] = {}
        lit: dict[str, _Hit] = {}
        wild: dict[str, list[_Hit]] = {}
        for rule in rules:
            for pattern in _expanded(rule):
                self._add(rule, pattern, exact, lit, wild)
        self._exact = exact
        self._lit = lit
        self._lit_lengths = tuple(sorted({len(k) for k in lit}, reverse=True))
        self._wild = {head: _bucket(hits) for head, hits in wild.items()}
        self._wild_lengths = tuple(sorted({len(k) for k in wild}, reverse=True))

    @staticmethod
    def _add(
        rule: Rule,
        pattern: str,
        exact: dict[str, _Hit],
        lit: dict[str, _Hit],
        wild: dict[str, list[_Hit]],
    ) -> None:
        anchored = pattern.endswith("$")
        body = pattern[:-1] if anchored else pattern
        priority = len(pattern)
        if priority == 0 or (anchored and not body):
            return  # RFC 9309 §2.2.2: an empty pattern is no rule.
        text = f"{'Allow' if rule.allow else 'Disallow'}: {display_text(rule.value)}"
        verdict = Verdict(rule.allow, text, rule.line)
        rank = _rank(priority, rule.allow, rule.line)
        if "*" not in body:
            table = exact if anchored else lit
            old = table.get(body)
            if old is None or rank > old.rank:
                table[body] = _Hit(rank, verdict, (), anchored)
            return
        head, *rest = body.split("*")
        kind = _GENERAL if len(rest) > 1 else _ENDS_WITH if anchored else _CONTAINS
        hit = _Hit(rank, verdict, tuple(rest), anchored, kind, rest[-1])
        wild.setdefault(head, []).append(hit)

    def decide(self, path: str) -> Verdict:
        best: _Hit | None = self._exact.get(path)
        best_rank = -1 if best is None else best.rank
        plen = len(path)
        lit = self._lit
        for n in self._lit_lengths:
            if n <= plen:
                hit = lit.get(path[:n])
                if hit is not None:  # the longest literal prefix: no shorter one can win
                    if hit.rank > best_rank:
                        best, best_rank = hit, hit.rank
                    break
        wild = self._wild
        for n in self._wild_lengths:
            if n > plen:
                continue
            bucket = wild.get(path[:n])
            if bucket is None:
                continue
            for hit in bucket.scan:  # by rank, best first: the first match is the best
                if hit.rank <= best_rank:
                    break
                kind = hit.kind
                if kind == _CONTAINS:
                    ok = path.find(hit.last, n) >= 0
                elif kind == _ENDS_WITH:
                    ok = plen - len(hit.last) >= n and path.endswith(hit.last)
                else:
                    ok = _wild_match(path, n, hit.parts, hit.anchored)
                if ok:
                    best, best_rank = hit, hit.rank
                    break
            grams = bucket.grams
            if grams is not None:
                for i in range(n, plen - _GRAM + 1):
                    found = grams.get(path[i : i + _GRAM])
                    if found is None:
                        continue
                    for hit in found:  # by rank: the first that matches here is the best here
                        if hit.rank <= best_rank:
                            break
                        if path.startswith(hit.last, i):
                            best, best_rank = hit, hit.rank
                            break
        return NO_RULE if best is None else best.verdict


def _expanded(rule: Rule) -> tuple[str, ...]:
    """The rule's pattern, plus Google's "index.html means the directory" twin.

    Google (robots.cc HandleAllow): an Allow whose last segment starts with
    ``index.htm`` also allows the directory itself, as ``<dir>/$``.
    """
    pattern = rule.pattern
    if rule.allow:
        slash = pattern.rfind("/")
        if slash >= 0 and pattern.startswith("/index.htm", slash):
            return (pattern, pattern[: slash + 1] + "$")
    return (pattern,)


def display_text(latin: str) -> str:
    """Latin-1 decoded bytes back to text, for display and URLs."""
    if latin.isascii():
        return latin
    return latin.encode("latin-1").decode("utf-8", "replace")
