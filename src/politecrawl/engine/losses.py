"""Every site the crawl lost, named: parked (asked again later), given up (its URLs dropped)
or failed (every URL it was asked dropped after its retries, and never an answer).

A crawl that ends with sites parked or given up has not done all it was asked, and must say
so: the summary (printed and ``summary.json``'s ``sites_lost``) lists each such site with its
reason, the URLs it left behind and when a resume will try it again, and the command's exit
code is 3 (README, "Exit codes"). A parked site that answers again is no longer lost.

A URL pattern the trap guard stopped following (``urls.traps``) is named too, in the
summary's ``traps`` (``traps_cut``): its site, pattern, why and the URLs refused. It is not a
site lost (the site's other pages are crawled, and cutting an endless space is the guard's
job), so it does not make the exit code 3; a guard that cut a real site shows there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from politecrawl.storage import log_time
from politecrawl.urls.traps import CUT
from politecrawl.wording import counted

PARKED, GIVEN_UP, FAILED = "parked", "given_up", "failed"
# the request log's outcomes of URLs dropped with their site, and what they say about it
ROBOTS_UNAVAILABLE = "dropped:robots_unavailable"
TLS_CERTIFICATE, TLS_HANDSHAKE = "dropped:tls:certificate", "dropped:tls:handshake"
GIVEN_UP_OUTCOMES = {
    ROBOTS_UNAVAILABLE: "robots.txt unreachable",
    "dropped:site_refused": "refused request after request",
    # nothing of the origin can be fetched (``RobotsCache.unfetchable``): its URLs dropped
    # as they come up. (An address on the never-crawl list is the operator's choice: no loss.)
    "dropped:no_such_host": "no such host: the name does not exist in DNS",
    "dropped:address_refused": "its address is loopback, private or reserved "
    "(--allow-private-addresses crawls it)",
    "dropped:invalid_url": "not a fetchable URL",
    TLS_CERTIFICATE: "its TLS certificate does not verify (--tls-insecure crawls it)",
    TLS_HANDSHAKE: "its TLS handshake fails",
}
# what a resume does with a site given up so (``engine.readmit``), as the summary says it:
# a robots.txt unreachable and a handshake that failed may pass, and are asked again; what
# an option lifts, when the same command is given it; the rest never
RESUMES = {
    ROBOTS_UNAVAILABLE: "a resume asks its robots.txt again and queues them once more",
    TLS_HANDSHAKE: "a resume asks it again (a handshake that failed may pass) and queues "
    "them once more",
    TLS_CERTIFICATE: "never, unless the same command is given --tls-insecure: then a resume "
    "queues them once more",
    "dropped:address_refused": "never, unless the same command is given "
    "--allow-private-addresses: then a resume queues them once more",
}
NEVER = "never: its queued URLs were dropped"


_ORIGIN_ERRORS = 10_000  # origins whose last failure is kept (the latest stay)
MAX_REASONS = 4  # reasons a site's loss names (two dead origins of one host), then a count


@dataclass(slots=True)
class Loss:
    key: str
    state: str  # PARKED or GIVEN_UP
    reason: str
    retry_at: float | None  # parked: when the site is asked again; given up: never
    dropped: int = 0  # given up: the URLs dropped with it
    # given up while its robots.txt could not be reached or its TLS handshake failed: a
    # resume asks again and queues the URLs once more (``readmit``), and says so (``RESUMES``);
    # a site that refused is not asked again
    resume: str = NEVER


class Losses:
    """The sites lost so far in this run, by politeness key. A site may be both parked (its
    own pages failing) and given up for one of its origins (a dead port, a name that does not
    exist): each is named, so neither hides the other."""

    def __init__(self) -> None:
        self._parked: dict[str, Loss] = {}
        self._given_up: dict[str, Loss] = {}
        self._reasons: dict[str, list[str]] = {}  # a given-up site's reasons, each once
        self._more_reasons: dict[str, int] = {}  # and how many more it had
        self._origin_error: dict[str, str] = {}  # each origin's last failure
        self._last_error: dict[str, str] = {}
        # sites whose URLs were dropped after their retries, and sites that answered: a site
        # with the first and not the second lost every URL it was asked (named as FAILED)
        self._failed_urls: dict[tuple[str, str], int] = {}  # (site, origin) -> URLs failed
        self._failing: set[str] = set()  # origins whose last page failed after its retries
        self._alone: set[str] = set()  # origins that failed while another answered
        self._answered: set[str] = set()

    def note_error(self, key: str, error: str, origin: str = "") -> None:
        """The site's last failure (``FetchResult.error``), and its origin's: named in its
        reason if it is lost (an origin's loss with that origin's, not another's)."""
        self._last_error[key] = error
        if origin:
            self._origin_error[origin] = error
            while len(self._origin_error) > _ORIGIN_ERRORS:
                del self._origin_error[next(iter(self._origin_error))]

    def _why(self, key: str, reason: str, origin: str = "") -> str:
        err = self._origin_error.get(origin) if origin else self._last_error.get(key)
        return reason if err is None or err in reason else f"{reason}; last error {err}"

    def parked(self, key: str, reason: str, until: float) -> None:
        self._parked[key] = Loss(key, PARKED, self._why(key, reason), until)

    def given_up(
        self, key: str, reason: str, dropped: int, *, outcome: str = "", origin: str = ""
    ) -> None:
        """URLs of the site given up for ``reason`` (its URLs dropped as ``outcome``; of its
        ``origin``, when one origin's); a site that lost URLs for several (two dead origins
        of one host) names each, up to ``MAX_REASONS``, and what a resume does for the first
        a resume asks again."""
        old = self._given_up.get(key)
        before = old.dropped if old is not None else 0
        resume = old.resume if old is not None and old.resume != NEVER else _resume(outcome)
        reasons = self._reasons.setdefault(key, [old.reason] if old is not None else [])
        if not any(r.startswith(reason) for r in reasons):
            if len(reasons) < MAX_REASONS:
                reasons.append(self._why(key, reason, origin))
            else:  # (only counted: a host with a thousand dead ports keeps four lines)
                self._more_reasons[key] = self._more_reasons.get(key, 0) + 1
        more = self._more_reasons.get(key, 0)
        why = " | ".join(reasons + ([f"and {more} more"] if more else []))
        self._given_up[key] = Loss(key, GIVEN_UP, why, None, before + dropped, resume)

    def page_answered(self, key: str, origin: str = "") -> None:
        """A page of the site came to an end other than a failure (kept, a redirect, a 404):
        the site is not one that failed throughout (its robots.txt answering is not that),
        nor is that origin of it."""
        self._answered.add(key)
        if origin:
            self._answered.add(origin)
            self._failing.discard(origin)

    def failed_alone(self, origin: str) -> None:
        """A failure of ``origin`` did not count towards parking its site, as another origin
        answered (``politeness.failing_alone``): if it never answers again, it is named
        (the parking that would have named it never comes)."""
        self._alone.add(origin)

    def url_failed(self, key: str, detail: str, origin: str = "") -> None:
        """A URL of the site (of its ``origin``) was dropped after its retries (5xx, 429, a
        broken answer)."""
        where = (key, origin)
        self._failed_urls[where] = self._failed_urls.get(where, 0) + 1
        if origin:
            self._failing.add(origin)  # (until one of its pages answers again)
        if detail:
            self._last_error[key] = detail
            if origin:
                self._origin_error[origin] = detail

    def recovered(self, key: str) -> None:
        """The site answered normally: a parked site is back (a given-up one stays lost)."""
        self._last_error.pop(key, None)
        self._parked.pop(key, None)

    def __len__(self) -> int:
        return len(self._parked.keys() | self._given_up.keys())

    def parked_keys(self) -> list[str]:
        """The sites parked now: the report counts the URLs each left queued."""
        return list(self._parked)

    def remember(self, dropped: list[tuple[str, str, int]]) -> None:
        """Sites given up before this run (a resume, a crash): ``(key, outcome, URLs)`` as
        the frontier recorded them (``SqliteFrontier.dropped_sites``)."""
        for key, outcome, n in dropped:
            old = self._given_up.get(key)
            if old is not None:
                old.dropped = max(old.dropped, n)
                if old.resume == NEVER:
                    old.resume = _resume(outcome)
            else:
                why = GIVEN_UP_OUTCOMES.get(outcome, outcome)
                self._given_up[key] = Loss(key, GIVEN_UP, why, None, n, _resume(outcome))

    def remember_parked(self, parked: list[tuple[str, float, int]]) -> None:
        """Sites parked before this run and still parked: ``(key, until, failures in a
        row)``. A resume that ran while they waited named none (exit 0), and its summary
        replaced the one that had named them."""
        for key, until, failures in parked:
            if key not in self._parked:
                why = "parked in an earlier run" + (
                    f" after {failures} failures in a row" if failures else ""
                )
                self._parked[key] = Loss(key, PARKED, self._why(key, why), until)

    def report(self, queued_of: Callable[[str], int | None], now: float) -> list[dict[str, Any]]:
        """One entry per site lost and state, as the summary lists it. A parked site with
        nothing left queued lost nothing, and is left out."""
        out: list[dict[str, Any]] = []
        for key in sorted(self._parked.keys() | self._given_up.keys()):
            parked, gone = self._parked.get(key), self._given_up.get(key)
            left = queued_of(key) if parked is not None else 0
            if parked is not None and left != 0:
                out.append(
                    {
                        "site": key,
                        "state": PARKED,
                        "reason": parked.reason,
                        "urls_left": left,
                        "retry_at": log_time(parked.retry_at or now),
                        "resume": "a resume asks it again from retry_at on",
                    }
                )
            if gone is not None:
                out.append(
                    {
                        "site": key,
                        "state": GIVEN_UP,
                        "reason": gone.reason,
                        "urls_left": gone.dropped,
                        "retry_at": None,
                        "resume": gone.resume,
                    }
                )
        for (key, origin), n in sorted(self._failed_urls.items()):
            if key in self._parked or key in self._given_up:
                continue
            if (origin or key) in self._answered and not (
                origin in self._failing and origin in self._alone
            ):  # it answered after its last failure, or its site would have been parked
                continue  # (``failed_alone``): URLs lost, not the site
            if origin in self._answered:  # it answered, then stopped (a server gone)
                what, err = f"{origin} stopped answering", self._origin_error.get(origin)
            elif key in self._answered:  # another origin of the site answered: this one failed
                what, err = f"every request to {origin} failed", self._origin_error.get(origin)
            else:
                what, err = "every request failed", self._last_error.get(key)
            out.append(
                {
                    "site": key,
                    "state": FAILED,
                    "reason": f"{what}; its URLs were dropped after their retries"
                    + (f"; last error {err}" if err else ""),
                    "urls_left": n,
                    "retry_at": None,
                    "resume": "never: its URLs were dropped",
                }
            )
        return out


def _resume(outcome: str) -> str:
    return RESUMES.get(outcome, NEVER)


def describe(lost: list[dict[str, Any]], limit: int = 20) -> list[str]:
    """The printed summary's lines for the sites lost (at most ``limit``, then a count)."""
    lines = []
    for item in lost[:limit]:
        resume = item.get("resume", "")
        when = (
            f"asked again from {item['retry_at']}"
            if item["retry_at"]
            else "asked again on a resume"
            if resume.startswith("a resume")
            else f"not asked again{resume[5:resume.index(':')]}"
            if resume.startswith("never, unless")
            else "not asked again"
        )
        left = item["urls_left"]
        left_s = "? URLs" if left is None else counted(left, "URL")
        lines.append(
            f"    {item['site']}: {item['state']}, {item['reason']}; {left_s} left, {when}"
        )
    if len(lost) > limit:
        lines.append(f"    ... and {len(lost) - limit} more (summary.json: sites_lost)")
    return lines


_WHY_CUT = {
    "calendar": "its pages walk dates ever further away (a calendar)",
    "budget": "its pages kept linking new ones past --max-urls-per-pattern, and were not "
    "all distinct pages",
}


def traps_cut(counters: Mapping[str, int]) -> list[dict[str, Any]]:
    """The patterns the trap guard named, from the crawl's counters (``traps.cut_counter``:
    summed over ``--processes`` and resumes like every counter), most URLs refused first."""
    out = []
    for name, n in counters.items():
        if name.startswith(CUT):
            why, site, pattern = name[len(CUT) :].split(" ", 2)
            out.append(
                {
                    "site": site,
                    "pattern": pattern,
                    "why": why,
                    "reason": _WHY_CUT.get(why, why),
                    "urls_not_followed": n,
                }
            )
    return sorted(out, key=lambda t: (-t["urls_not_followed"], t["site"], t["pattern"]))


def describe_traps(traps: list[dict[str, Any]], limit: int = 20) -> list[str]:
    """The printed summary's lines for the patterns cut (at most ``limit``, then a count)."""
    lines = [
        f"    {t['site']} {t['pattern']}: {t['why']}, {t['reason']}; "
        f"{counted(t['urls_not_followed'], 'URL')} found and not followed"
        for t in traps[:limit]
    ]
    if len(traps) > limit:
        lines.append(f"    ... and {len(traps) - limit} more (summary.json: traps)")
    return lines
