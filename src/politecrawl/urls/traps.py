"""URL spaces that grow without end: calendars, endless pagination, generated query strings.

A trap is a URL space with no end, not a site with many real pages: a forum's 1,500 reply
pages, a catalogue's 3,000 numbered pages are crawled whole and named nothing. Three rules,
cheapest first (the first is ``filters.trap_reason``, Heritrix's path rules), the third
with the evidence of the pages fetched:

1. **Shape** (``filters.TrapLimits``): URL length, path depth, a segment repeated, too many
   query parameters: relative-link loops and ever-growing query strings.
2. **Calendars**: a page of a dated URL space that links a neighbouring date (within two
   months of its own) is walking a calendar. A site that ends has no pages far in the future:
   walks more than ``HORIZON_DAYS`` beyond today and beyond the latest date the family was
   linked at from outside it (an index, a seed) are a calendar's; the ``DATE_STRIKES``-th
   names the pattern a trap. A calendar with next-day and next-month links is stopped after a
   few hundred requests. Walks into the past are not counted (a blog's archive, walked back
   from its latest post, ends): a calendar that only goes back meets the budget.
3. **Budget** (IRLbot-style: it grows with the links coming in): URLs of one pattern found
   from pages of its own family, per host, at most ``max_urls`` (``--max-urls-per-pattern``),
   raised by ``max_urls`` for every ``CREDIT_LINKS`` links into the family from outside it
   (other pages of the site, other hosts). A space entered once that feeds itself (endless
   pagination, session ids) ends there; a forum whose every thread is linked from a listing
   page does not. A pattern at its budget whose own pages, fetched since it was half spent,
   were real pages gets ``max_urls`` more instead (``page``, ``_proven``; judged afresh for
   each raise, and from its last ``2 * EVIDENCE_PAGES`` URLs if the budget is small): at least
   ``EVIDENCE_PAGES`` of them, at most ``BAD_SHARE`` bad: a duplicate payload, a page with
   less than ``MIN_TEXT`` of visible text, an error or a 4xx, a URL grown ``GROWTH_CHARS``
   past the pattern's shortest, or a text within ``NEAR_BITS`` of one of its ``RECENT``
   predecessors (SimHash with numbers kept: the same page but for its number, as the empty
   pages of an endless listing are). A webcomic's 6,000 strips are crawled whole; an endless
   listing, a session-id space, a growing URL still end at the budget.

A URL's *pattern* is its host and path with every run of digits written ``N`` and every query
value written ``*`` (``/cal/2024/05/17`` is ``/cal/N/N/N``); its *family* is the pattern's first
path segment (day and month pages of a calendar are one family). A URL with no digits and no
query has no pattern: hand-written pages are never counted. What marks a trap is how its URLs
are found (from pages of the same family); what its pages are only buys a pattern more
budget, never names one. A named pattern takes no
more URLs, and the crawl names it (``on_trap``: a warning and ``log/traps.jsonl``, which
``log-stats`` reads; the URLs it refused are counted under ``cut_counter``, which the summary
lists as ``traps``). Memory: a counter and a shortest URL length per pattern, per family its
links in and the latest date linked in (singletons cleared past ``_MAX_PATTERNS``), and a
few counts and fingerprints per pattern past half its budget.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from politecrawl.continuity.fingerprint import hamming, simhash

_DIGITS = re.compile(r"[0-9]+")
_QUERY_VALUE = re.compile(r"=[^&]*")
_MAX_PATTERNS = 500_000
# a date in a URL: 2024/05/17, 2024-05, 20240517, 2024_05_17 (a zero-padded month: ids rarely)
_DATE = re.compile(
    r"(?<![0-9])(1[6-9][0-9]{2}|2[0-9]{3})([-/_.]?)(0[1-9]|1[0-2])"
    r"(?:\2(0[1-9]|[12][0-9]|3[01]))?(?![0-9])"
)
_QUERY_YEAR = re.compile(r"(?:^|&)(?:year|yr|y)=([12][0-9]{3})(?=&|$)", re.IGNORECASE)
_QUERY_MONTH = re.compile(r"(?:^|&)(?:month|mon|m)=(0?[1-9]|1[0-2])(?=&|$)", re.IGNORECASE)
NEIGHBOUR_DAYS = 62  # a link from one date to another this close is a calendar's step
HORIZON_DAYS = 366  # how far beyond the family's entry dates (and today) a walk may run
DATE_STRIKES = 5  # walks beyond the horizon that name a pattern a calendar trap
CREDIT_LINKS = 10  # links into a family from outside it that raise its budget by ``max_urls``
MAX_FUTURE_YEARS = 25  # later "dates" are numbers (ids), not a calendar
EVIDENCE_PAGES = 20  # pages of a pattern judged, at least, before its budget is raised
BAD_SHARE = 0.1  # of them, at most this share bad (duplicates, empty, errors, grown URLs)
MIN_TEXT = 64  # characters of visible text a real page has (as continuity's duplicates)
GROWTH_CHARS = 12  # a URL this much longer than its pattern's shortest is growing
RECENT, NEAR_BITS = 8, 5  # a page this close to one of the last few of its pattern: the same
# page but its number (numbers kept, so wider than continuity's 3; two unrelated texts: ~1e-12)
CUT = "trap_cut:"  # counter: URLs of a named pattern refused, "trap_cut:WHY HOST PATTERN"

# called once per (host, pattern) that became a trap: host, pattern, an example URL, why
TrapHook = Callable[[str, str, str, str], None]
CALENDAR, BUDGET = "calendar", "budget"


def pattern_of(url: str) -> tuple[str, str] | None:
    """(host, pattern) of a canonical URL, or None when the URL has no variable part; the
    focused crawl tells a listing's numbered pages by it too (``Focus._series_floor``)."""
    start = url.find("//") + 2
    slash = url.find("/", start)
    if slash < 0:
        return None
    rest = url[slash:]
    path, sep, query = rest.partition("?")
    if not sep and not any(c.isdigit() for c in path):
        return None
    pattern = _DIGITS.sub("N", path)
    if sep:
        pattern += "?" + _QUERY_VALUE.sub("=*", query)
    return url[start:slash], pattern


def cut_counter(host: str, pattern: str, why: str) -> str:
    """The counter of a named pattern's refused URLs: summed over processes and runs with the
    crawl's counters, and read back by the summary (``journal.summary_of``)."""
    return f"{CUT}{why} {host} {pattern}"


@dataclass(slots=True)
class _Evidence:
    """What the pages of one pattern were, since it was half spent or its budget last raised."""

    good: int = 0
    bad: int = 0
    recent: deque[int] = field(default_factory=lambda: deque(maxlen=RECENT))


def _family(pattern: str) -> str:
    """The first path segment of a pattern: day and month pages of a calendar are one family."""
    end = pattern.find("/", 1)
    first = pattern[: end if end > 0 else len(pattern)]
    return first.partition("?")[0]


def date_of(url: str, *, today: int | None = None) -> int | None:
    """The date a URL names (a proleptic ordinal), or None: the path's or a query value's
    ``YYYY-MM[-DD]`` in any of the usual spellings, or ``year=`` with ``month=``. Years more
    than ``MAX_FUTURE_YEARS`` ahead are numbers, not dates."""
    start = url.find("/", url.find("//") + 2)
    if start < 0:
        return None
    rest = url[start:]
    y = m = None
    d = 1
    found = _DATE.search(rest)
    if found is not None:
        y, m = int(found.group(1)), int(found.group(3))
        d = int(found.group(4) or 1)
    else:
        query = rest.partition("?")[2]
        if query:
            qy, qm = _QUERY_YEAR.search(query), _QUERY_MONTH.search(query)
            if qy is not None and qm is not None:
                y, m = int(qy.group(1)), int(qm.group(1))
    if y is None or m is None:
        return None
    now = today if today is not None else dt.date.today().toordinal()
    if y > dt.date.fromordinal(now).year + MAX_FUTURE_YEARS:
        return None
    try:
        return dt.date(y, m, d).toordinal()
    except ValueError:
        return None


class UrlSpaces:
    """The calendar and budget rules (module docstring); ``full`` says a pattern is a trap."""

    def __init__(
        self,
        max_urls: int | None,
        on_trap: TrapHook | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.max_urls = max_urls
        self.on_trap = on_trap
        self.clock = clock
        self._fed: Counter[tuple[str, str]] = Counter()
        self._entries: Counter[tuple[str, str]] = Counter()  # links in from outside, per family
        self._entered: dict[tuple[str, str], int] = {}  # family -> latest date linked in
        self._strikes: Counter[tuple[str, str]] = Counter()
        self.traps: dict[tuple[str, str], str] = {}  # (host, pattern) -> why it was named
        self._shortest: dict[tuple[str, str], int] = {}  # pattern -> its shortest URL's length
        self._raised: Counter[tuple[str, str]] = Counter()  # budget its pages earned
        self._evidence: dict[tuple[str, str], _Evidence] = {}  # patterns past half a budget
        self._source: str | None = None  # the last source's split, kept: links come in batches
        self._source_split: tuple[str, str] | None = None
        self._source_date: int | None = None

    def full(self, url: str) -> bool:
        """Whether ``url`` belongs to a pattern already declared a trap."""
        if self.max_urls is None or not self.traps:
            return False
        split = pattern_of(url)
        return split is not None and split in self.traps

    def admitted(self, url: str, source: str | None) -> None:
        """Count ``url`` against its pattern if ``source`` (the page linking to it) is of its
        family; note where the family was entered otherwise."""
        if self.max_urls is None:
            return
        split = pattern_of(url)
        if split is None:
            return
        if source is not self._source:
            self._source = source
            self._source_split = None if source is None else pattern_of(source)
            self._source_date = None if source is None else date_of(source)
        src = self._source_split
        family = (split[0], _family(split[1]))
        if src is None or src[0] != split[0] or _family(src[1]) != family[1]:
            self._entries[family] += 1
            self._enter(family, url)
            if len(self._entries) > _MAX_PATTERNS:  # families linked in once: forgotten
                for fam in [k for k, v in self._entries.items() if v == 1]:
                    del self._entries[fam]
                    self._entered.pop(fam, None)
            return
        if self._calendar_walk(family, url):
            self._name(split, url, CALENDAR)
        self._fed[split] = n = self._fed[split] + 1
        if len(url) < self._shortest.get(split, len(url) + 1):
            self._shortest[split] = len(url)
        budget = self.max_urls * (1 + self._entries[family] // CREDIT_LINKS) + self._raised[split]
        # judged from half its budget on (or the last pages enough to judge, if it is small)
        if (2 * n >= budget or n + 2 * EVIDENCE_PAGES >= budget) and split not in self.traps:
            ev = self._evidence.setdefault(split, _Evidence())
            if n < budget:
                pass
            elif self._proven(ev):  # real pages so far: another budget, judged afresh
                self._raised[split] += self.max_urls
                self._evidence[split] = _Evidence(recent=ev.recent)
            else:
                self._name(split, url, BUDGET)
        if len(self._fed) > _MAX_PATTERNS:
            for key in [k for k, v in self._fed.items() if v == 1]:
                del self._fed[key]
                self._shortest.pop(key, None)

    def page(self, url: str, text: str | None, *, duplicate: bool = False) -> None:
        """What a fetched page turned out to be, for its pattern's budget (``_proven``):
        ``text`` its visible text (None: an error, a 4xx, not a page), ``duplicate`` its
        payload one stored under another URL. Patterns below half their budget: nothing."""
        if not self._evidence:
            return
        split = pattern_of(url)
        ev = None if split is None else self._evidence.get(split)
        if ev is None or split is None:
            return
        good = (
            text is not None
            and not duplicate
            and len(text) >= MIN_TEXT
            and len(url) <= self._shortest.get(split, len(url)) + GROWTH_CHARS
        )
        if good and text is not None:
            sim = simhash(text, digits=True)  # numbers kept: "Strip 7" is not "Strip 8"
            good = all(hamming(sim, old) > NEAR_BITS for old in ev.recent)
            ev.recent.append(sim)
        if good:
            ev.good += 1
        else:
            ev.bad += 1

    @staticmethod
    def _proven(ev: _Evidence) -> bool:
        """Enough of the pattern's pages judged, and nearly all of them real pages."""
        judged = ev.good + ev.bad
        return judged >= EVIDENCE_PAGES and ev.bad <= BAD_SHARE * judged

    def cut_counter(self, url: str) -> str | None:
        """The counter of the named pattern ``url`` belongs to (None: not named)."""
        split = pattern_of(url)
        why = None if split is None else self.traps.get(split)
        return None if split is None or why is None else cut_counter(split[0], split[1], why)

    def _enter(self, family: tuple[str, str], url: str) -> None:
        day = date_of(url)
        if day is not None and day > self._entered.get(family, day - 1):
            self._entered[family] = day

    def _calendar_walk(self, family: tuple[str, str], url: str) -> bool:
        """A step to a neighbouring date beyond the horizon; True at the ``DATE_STRIKES``-th."""
        if self._source_date is None:
            return False
        day = date_of(url)
        if day is None or abs(day - self._source_date) > NEIGHBOUR_DAYS:
            return False
        today = dt.date.fromtimestamp(self.clock()).toordinal()
        high = max(self._entered.get(family, today), today)
        if day <= high + HORIZON_DAYS:
            return False  # the past ends (a blog's archive, walked back): the budget's
        self._strikes[family] = n = self._strikes[family] + 1
        return n >= DATE_STRIKES

    def remember(self, named: Iterable[dict[str, Any]]) -> list[tuple[str, str, str]]:
        """The patterns an earlier run named (``log/traps.jsonl``'s records) named again,
        unsaid: a resume that judged each from zero gave every trap another budget. Returns
        those taken (host, pattern, why); records not of that shape are passed over."""
        taken = []
        for rec in named:
            host, pattern, why = rec.get("host"), rec.get("pattern"), rec.get("why")
            if self.max_urls is None or not all(isinstance(x, str) for x in (host, pattern, why)):
                continue
            split = (str(host), str(pattern))
            if split not in self.traps:
                self.traps[split] = str(why)
                taken.append((str(host), str(pattern), str(why)))
        return taken

    def _name(self, split: tuple[str, str], url: str, why: str) -> None:
        if split in self.traps:
            return
        self.traps[split] = why
        self._evidence.pop(split, None)
        if self.on_trap is not None:
            self.on_trap(split[0], split[1], url, why)
