"""URL rewrite rules learned per site from pages that turned out to be the same.

Canonicalisation (``urls.canonicalize``) removes what is the same on every server; what is
the same on *one* server (``?utm_source=`` ignored, ``www.`` and the bare host both serving,
``/index.html`` and ``/`` the same page, paths case-insensitive) only shows in the content.
``RuleLearner`` watches pairs of URLs of one site whose content was the same
(``observe_duplicate``) or different (``observe_distinct``), explains each pair by the one way
the two URLs differ, and once a difference was seen often enough on different pages and never
between pages with different content, rewrites every later URL of that site before it is
queued (``apply``), so the variants are never fetched.

Rule kinds (``Rule.kind``):

* ``"drop_param"``: the query parameter ``Rule.param`` never changes the content, in one
  section of the site (``Rule.scope``: the first path segment, ``/articles/``) or, once that
  holds in two sections and nowhere was contradicted, on the whole site (``scope`` None).
  Parameters mean different things in different parts of a site: ``sort`` may reorder the
  comments of an article (the same page) but choose other items on ``/news/`` (another page),
  and once a rule is active its variants are no longer fetched, so no counter-example would
  ever arrive to correct a site-wide rule learned from articles alone.
* ``"www"``: ``www.HOST`` and ``HOST`` serve the same pages; ``Rule.param`` is the form kept
  (``"www"`` or ``"bare"``: the form of the first-fetched URL in most pairs).
* ``"strip_index"``: ``/dir/FILE`` (``Rule.param``: ``index.html``, ``index.php``,
  ``default.aspx``...) is ``/dir/``.
* ``"lower_path"``: paths differing in letter case only are the same page.

Evidence rules: a pair counts for a difference only when that is the pair's only difference
not already explained by an active rule (pairs with several unexplained differences are kept
in a short per-site list and looked at again when a rule is learned). A rule needs
``min_support`` pairs from ``min_support`` different pages (what the two URLs have in common)
and no counter-example. A pair with different content whose only unexplained difference is
that one (or whose differences are all active rules) blocks or revokes it for good: a wrong
rule loses pages, a missing one only costs fetches.

``observe_page(url, exact, simhash)`` produces the pairs itself: it groups recent fetches by
site and case-folded path (index file dropped, query ignored) and compares each new page with
the group, so the crawler makes one call per stored page.

Transfer between sites: a difference that became a rule on ``prior_sites`` sites and was never
contradicted on any needs a single supporting pair on the next site (still per section for
parameters): ``utm_source`` is learned once per crawl, not once per site at three wasted
fetches each. One counter-example anywhere withdraws the prior.

Memory: at most ``max_groups`` recent paths (8 fetches each) and ``max_sites`` sites with
evidence; sites without rules are forgotten first.

Cost (``bench/dedup.py``): ``apply`` takes 0.1 µs per URL while no site has rules, 1.3-1.5 µs
when other sites have rules (host lookup), 5-6 µs when the URL's site has four.

This module weighs evidence; the URL anatomy it works on (splitting a URL, how two URLs
differ, the rewrite itself) is ``urlvariants``.
"""

from __future__ import annotations

import itertools
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any, Literal

from politecrawl.errors import ConfigError, StateError
from politecrawl.urls.variants import (
    CASE,
    INDEX,
    PARAM,
    WWW,
    CompiledRules,
    differences,
    folded_path,
    group_key,
    rewrite,
    section_of,
    site_key,
    split_url,
    witness_of,
)

__all__ = ["Rule", "RuleKind", "RuleLearner"]

RuleKind = Literal["drop_param", "www", "strip_index", "lower_path"]

_PENDING_PER_SITE = 32
_GROUP_SIZE = 8


@dataclass(frozen=True, slots=True)
class Rule:
    """One learned rewrite: for ``host`` (the site, ``www.`` removed), of one ``kind``."""

    host: str
    kind: RuleKind
    param: str | None = None
    support: int = 0
    scope: str | None = None  # drop_param only: the section ("/articles/"), None = whole site

    def describe(self) -> str:
        """One line for the log: what is rewritten, on how much evidence."""
        pairs = f"{self.support} duplicate pair{'s' if self.support != 1 else ''}"
        if self.kind == "drop_param":
            where = "" if self.scope is None else f" under {self.scope}"
            what = f"drop query parameter {self.param!r}{where}"
        elif self.kind == "www":
            keep = "www." + self.host if self.param == "www" else self.host
            what = f"www.{self.host} and {self.host} serve the same pages; use {keep}"
        elif self.kind == "strip_index":
            what = f"strip trailing {self.param!r} from paths"
        else:
            what = "paths are case-insensitive; lower-case them"
        return f"{self.host}: {what} ({pairs})"


@dataclass(slots=True)
class _Evidence:
    support: int = 0
    contra: int = 0
    pages: list[str] = field(default_factory=list)  # distinct witnesses, up to min_support


@dataclass(slots=True)
class _Site:
    evidence: dict[str, _Evidence] = field(default_factory=dict)
    active: set[str] = field(default_factory=set)
    revoked: set[str] = field(default_factory=set)
    www_votes: list[int] = field(default_factory=lambda: [0, 0])  # [bare first, www first]
    www_keep: str | None = None  # "www" / "bare", fixed when the www rule is learned
    counted: set[str] = field(default_factory=set)  # base dims counted in the global tallies
    pending: deque[tuple[frozenset[str], str, str]] = field(
        default_factory=lambda: deque(maxlen=_PENDING_PER_SITE)
    )


_Seen = tuple[str, str, int | None, float | None]  # (url, exact fingerprint, simhash, time)


class RuleLearner:
    """Learns per-site URL rewrite rules from duplicate and distinct page pairs."""

    def __init__(
        self,
        min_support: int = 3,
        *,
        near_distance: int = 3,
        max_groups: int = 100_000,
        max_pair_age_s: float = 6 * 3600.0,
        max_sites: int = 200_000,
        prior_sites: int = 3,
    ) -> None:
        if min_support < 1:
            raise ConfigError("min_support must be >= 1")
        self.min_support = min_support
        self.near_distance = near_distance
        self.max_groups = max_groups
        self.max_pair_age_s = max_pair_age_s
        self.max_sites = max_sites
        self.prior_sites = prior_sites
        # base dimension ("param:utm_source", "www") -> sites where it became a rule / was
        # contradicted
        self._rule_sites: Counter[str] = Counter()
        self._contra_sites: Counter[str] = Counter()
        self._sites: OrderedDict[str, _Site] = OrderedDict()  # least recently observed first
        self._compiled: dict[str, CompiledRules] = {}  # site key -> rules, only sites with rules
        self._new: list[Rule] = []
        self._revoked: list[Rule] = []
        self._groups: OrderedDict[str, list[_Seen]] = OrderedDict()

    # -- evidence ------------------------------------------------------------------------------

    def observe_duplicate(self, url_a: str, url_b: str) -> None:
        """``url_a`` (fetched first) and ``url_b`` of one site had the same content."""
        self._observe(url_a, url_b, same=True)

    def observe_distinct(self, url_a: str, url_b: str) -> None:
        """``url_a`` and ``url_b`` of one site had different content: counter-evidence."""
        self._observe(url_a, url_b, same=False)

    def observe_page(
        self, url: str, exact: str, simhash: int | None = None, *, now: float | None = None
    ) -> None:
        """A fetched page and its fingerprints; compared with earlier variants of its path.

        Same content means equal ``exact`` fingerprints or, when both pages have a simhash,
        at most ``near_distance`` differing bits. Different content counts against a rule only
        if the two fetches were at most ``max_pair_age_s`` apart (when ``now`` is given): a
        page that changed between two visits says nothing about its URL variants. A variant
        that the current rules already rewrite to this URL (or the URL itself, refetched) is
        replaced rather than compared.
        """
        parts = split_url(url)
        if parts is None:
            return
        key = group_key(parts)
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = []
            if len(self._groups) > self.max_groups:
                self._groups.popitem(last=False)
        else:
            self._groups.move_to_end(key)
        target = self.apply(url)
        kept: list[_Seen] = []
        for seen in group:
            other_url, other_exact, other_sim, other_time = seen
            if other_url == url or self.apply(other_url) == target:
                continue
            kept.append(seen)
            same = other_exact == exact or (
                simhash is not None
                and other_sim is not None
                and ((simhash ^ other_sim) & 0xFFFFFFFFFFFFFFFF).bit_count() <= self.near_distance
            )
            if same:
                self._observe(other_url, url, same=True)
            elif now is None or other_time is None or abs(now - other_time) <= self.max_pair_age_s:
                self._observe(other_url, url, same=False)
        kept.append((url, exact, simhash, now))
        group[:] = kept[-_GROUP_SIZE:]

    def _observe(self, url_a: str, url_b: str, *, same: bool) -> None:
        a, b = split_url(url_a), split_url(url_b)
        if a is None or b is None:
            return
        dims = differences(a, b)
        if not dims:
            return
        key = site_key(a.host)
        site = self._sites.get(key)
        if site is None:
            site = self._sites[key] = _Site()
            if len(self._sites) > self.max_sites:
                self._forget_sites()
        else:
            self._sites.move_to_end(key)
        section = section_of(folded_path(a.path))
        if same:
            if WWW in dims:
                site.www_votes[1 if a.host.startswith("www.") else 0] += 1
            self._support(key, site, dims, section, witness_of(a, b))
        else:
            self._contradict(key, site, dims, section)

    def _forget_sites(self) -> None:
        """Drop the evidence of the least recently observed tenth of the sites without rules."""
        oldest = list(itertools.islice(self._sites, max(1, len(self._sites) // 10)))
        for key in oldest:
            if not self._sites[key].active:
                del self._sites[key]

    @staticmethod
    def _evidence_dim(dim: str, section: str) -> str:
        """Parameters are judged per section ("param:sort@/news/"), the rest per site."""
        return f"{dim}@{section}" if dim.startswith(PARAM) else dim

    @staticmethod
    def _explained(site: _Site, dim: str, section: str) -> bool:
        return dim in site.active or (dim.startswith(PARAM) and f"{dim}@{section}" in site.active)

    def _support(
        self, key: str, site: _Site, dims: frozenset[str], section: str, page: str
    ) -> None:
        open_dims = [d for d in dims if not self._explained(site, d, section)]
        if len(open_dims) > 1:
            site.pending.append((dims, section, page))
            return
        if not open_dims:
            return
        dim = self._evidence_dim(open_dims[0], section)
        if dim in site.revoked:
            return
        ev = site.evidence.get(dim)
        if ev is None:
            ev = site.evidence[dim] = _Evidence()
        ev.support += 1
        if page not in ev.pages and len(ev.pages) < self.min_support:
            ev.pages.append(page)
        needed = self._needed(dim)
        if ev.contra == 0 and ev.support >= needed and len(ev.pages) >= needed:
            self._activate(key, site, dim)

    def _needed(self, dim: str) -> int:
        """Pairs (from as many pages) a rule needs: fewer once other sites agree."""
        base = dim.partition("@")[0]
        if self._rule_sites[base] >= self.prior_sites and not self._contra_sites[base]:
            return 1
        return self.min_support

    def _tally(self, site: _Site, dim: str, tally: Counter[str]) -> None:
        base = dim.partition("@")[0]
        mark = ("+" if tally is self._rule_sites else "-") + base
        if mark not in site.counted:
            site.counted.add(mark)
            tally[base] += 1

    def _contradict(self, key: str, site: _Site, dims: frozenset[str], section: str) -> None:
        open_dims = [d for d in dims if not self._explained(site, d, section)]
        if len(open_dims) == 1:
            blamed = open_dims
        elif not open_dims:
            blamed = list(dims)  # every difference was declared harmless, yet the pages differ
        else:
            return  # several unexplained differences: no telling which one matters
        changed = False
        for dim in blamed:
            scoped = self._evidence_dim(dim, section)
            ev = site.evidence.get(scoped)
            if ev is None:
                ev = site.evidence[scoped] = _Evidence()
            ev.contra += 1
            self._tally(site, dim, self._contra_sites)
            # a parameter that matters in one section may not be dropped site-wide
            for name in {scoped, dim}:
                if name in site.active:
                    self._revoked.append(self._rule(key, site, name))
                    site.active.discard(name)
                    changed = True
                site.revoked.add(name)
        if changed:
            self._compile(key, site)

    def _activate(self, key: str, site: _Site, dim: str) -> None:
        site.active.add(dim)
        self._tally(site, dim, self._rule_sites)
        self._new.append(self._rule(key, site, dim))
        param, at, _ = dim.partition("@")
        if at and param not in site.active and param not in site.revoked:
            sections = [d for d in site.active if d.startswith(param + "@")]
            if len(sections) >= 2:  # harmless in two sections, contradicted nowhere
                site.active.add(param)
                self._new.append(self._rule(key, site, param))
        self._compile(key, site)
        # pairs that were ambiguous may now have a single open difference
        pending = list(site.pending)
        site.pending.clear()
        for dims, section, page in pending:
            self._support(key, site, dims, section, page)

    # -- rules ---------------------------------------------------------------------------------

    def _rule(self, key: str, site: _Site, dim: str) -> Rule:
        ev = site.evidence.get(dim)
        support = 0 if ev is None else ev.support
        if dim == WWW:
            return Rule(key, "www", site.www_keep or _www_keep(site.www_votes), support)
        if dim == CASE:
            return Rule(key, "lower_path", None, support)
        if dim.startswith(INDEX):
            return Rule(key, "strip_index", dim[len(INDEX) :], support)
        param, at, section = dim[len(PARAM) :].partition("@")
        if not at:  # site-wide: the evidence is its sections'
            prefix = dim + "@"
            support = sum(e.support for d, e in site.evidence.items() if d.startswith(prefix))
        return Rule(key, "drop_param", param, support, section if at else None)

    def _compile(self, key: str, site: _Site) -> None:
        if not site.active:
            self._compiled.pop(key, None)
            return
        if WWW in site.active and site.www_keep is None:
            site.www_keep = _www_keep(site.www_votes)
        by_section: dict[str, set[str]] = {}
        site_params: set[str] = set()
        for dim in site.active:
            if dim.startswith(PARAM):
                param, at, section = dim[len(PARAM) :].partition("@")
                if at:
                    by_section.setdefault(section, set()).add(param)
                else:
                    site_params.add(param)
        self._compiled[key] = CompiledRules(
            site.www_keep if WWW in site.active else None,
            CASE in site.active,
            frozenset(d[len(INDEX) :] for d in site.active if d.startswith(INDEX)),
            frozenset(site_params),
            {
                sec: frozenset(ps - site_params)
                for sec, ps in by_section.items()
                if ps - site_params
            },
        )

    def rules_for(self, host: str) -> list[Rule]:
        """The active rules of ``host``'s site (``www.`` or not), sorted by kind and param.

        A section's parameter rule is left out once the same rule holds site-wide.
        """
        key = site_key(host.lower())
        site = self._sites.get(key)
        if site is None:
            return []
        rules = [
            self._rule(key, site, d)
            for d in site.active
            if d.partition("@")[0] not in site.active or "@" not in d
        ]
        return sorted(rules, key=lambda r: (r.kind, r.param or "", r.scope or ""))

    def new_rules(self) -> list[Rule]:
        """Rules activated since the last call (for the log)."""
        out, self._new = self._new, []
        return out

    def revoked_rules(self) -> list[Rule]:
        """Rules revoked by counter-evidence since the last call (for the log)."""
        out, self._revoked = self._revoked, []
        return out

    def apply(self, url: str) -> str:
        """``url`` rewritten by its site's rules (unchanged if none); idempotent, never raises.

        Order: host form, path case, index file, query parameters.
        """
        compiled = self._compiled
        if not compiled:
            return url
        start = url.find("://") + 3
        if start < 3:
            return url
        end = url.find("/", start)
        if end < 0:
            return url  # canonical URLs always have a path
        host = url[start:end].partition(":")[0]
        rules = compiled.get(host[4:] if host.startswith("www.") else host)
        if rules is None or "?" in host or "#" in host:
            return url
        return rewrite(url, start, end, rules)

    # -- persistence ---------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """JSON-ready state (evidence and rules; the recent-page groups are not kept)."""
        sites: dict[str, Any] = {}
        for key, site in self._sites.items():
            sites[key] = {
                "evidence": {
                    d: [e.support, e.contra, list(e.pages)] for d, e in site.evidence.items()
                },
                "active": sorted(site.active),
                "revoked": sorted(site.revoked),
                "www_votes": list(site.www_votes),
                "www_keep": site.www_keep,
                "counted": sorted(site.counted),
            }
        return {
            "version": 1,
            "min_support": self.min_support,
            "sites": sites,
            "rule_sites": dict(self._rule_sites),
            "contra_sites": dict(self._contra_sites),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """Replace evidence and rules with a ``state_dict``'s."""
        if state.get("version") != 1:
            raise StateError("unknown RuleLearner state version")
        self._sites.clear()
        self._compiled.clear()
        self._rule_sites = Counter({str(k): int(v) for k, v in state["rule_sites"].items()})
        self._contra_sites = Counter({str(k): int(v) for k, v in state["contra_sites"].items()})
        for key, data in state["sites"].items():
            site = _Site()
            for dim, (support, contra, pages) in data["evidence"].items():
                site.evidence[str(dim)] = _Evidence(int(support), int(contra), list(pages))
            site.active = {str(d) for d in data["active"]}
            site.revoked = {str(d) for d in data["revoked"]}
            site.www_votes = [int(v) for v in data["www_votes"]]
            keep = data.get("www_keep")
            site.www_keep = None if keep is None else str(keep)
            site.counted = {str(c) for c in data.get("counted", ())}
            self._sites[str(key)] = site
            self._compile(str(key), site)


def _www_keep(votes: list[int]) -> str:
    """The host form kept: the one fetched first in most pairs (ties: the bare host)."""
    bare, www = votes
    return "www" if www > bare else "bare"
