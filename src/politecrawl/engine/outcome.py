"""The one table of HTTP outcomes: a ``FetchResult`` in, what to do next out.

Pure and table-driven, so it reads like the policy it is:

=========================================  =======================================
2xx HTML                                   Store
304 (to a conditional GET)                 NotModified: a WARC revisit record, nothing parsed
304 to a GET that asked nothing            Drop(UNEXPECTED_STATUS): no copy to refer to
2xx not HTML                               Drop(NOT_HTML) (abandoned after headers)
301 302 303 307 308 + Location             Redirect (target re-admitted, hop + 1)
400 401 403 404 406 410 451, other 4xx     Drop(HTTP_PERMANENT), never retried
408 425                                    Retry as a 5xx (the server asks to be asked again)
429 503                                    Retry after Retry-After (capped), host slowed
other 5xx, network (reset, disconnect)     Retry with exponential backoff, 3 attempts
DNS failure, refused connection, timeout   Retry, transient: 30 attempts, the wait doubling
                                           up to 15 min (hours in all, as Heritrix)
TLS: certificate does not verify           Drop(TLS_CERTIFICATE) (``--tls-insecure`` crawls it)
TLS: other handshake failure               Drop(TLS_HANDSHAKE) (passing: a resume asks again)
body slower than --min-rate                Drop(TOO_SLOW), never retried; counts against
                                           the site as a failure
cut by the crawl's own stop (--max-time)   Retry, blameless: not an attempt, back on resume
private / loopback target                  Drop(ADDRESS_REFUSED)
address on the never-crawl list            Drop(EXCLUDED)
no such host (DNS NXDOMAIN)                Drop(NO_SUCH_HOST), never retried
broken transfer coding (bad chunk size)    Drop(BAD_CHUNKING) at once, never retried
=========================================  =======================================

Most drops are the site's (or the crawl's) lasting answer about the URL: robots.txt disallows
it, a 404, not HTML, a name that does not exist. A few are passing (``PASSING_DROPS``): the
URL was never fetched for a reason a later visit may not meet (its site's robots.txt could not
be reached, or its TLS handshake failed, which a resume asks again: a server restarting, a
middlebox; it failed through all its retries, the transient rows above; the frontier's
``--max-queue`` let it go unasked). A certificate that does not verify is no passing reason
(no waiting changes it): ``--tls-insecure`` given to a resume lifts it (``engine.readmit``).
``segment build`` offers the passing ones again in the next segment, and leaves the others
out (``tools.segments``).

A failure while the crawler's own network is down (``engine.outage``) is not the site's: the
turn retries it blameless (``Retry(blame=False)``, logged ``retry:outage``) without asking
this table.

Besides what to do with the URL, a response says something about the site (``refusal``,
``answered_normally``): 401, 403, 429 and timeouts are the site saying go away; in a row they
pause the site and then give it up (``politeness.record_refusal``; the site's queued URLs are
then dropped as ``site_refused``).

robots.txt answers have their own rows (RFC 9309 2.3.1), read by ``robots_outcome`` (a
status) and ``classify_robots`` (a fetch), for the crawler, ``robotscache`` and the
``robots`` command alike:

=========================================  =======================================
2xx                                        RULES: the body's rules
3xx + Location, fewer than 5 hops          REDIRECT: the next hop at the site's next turn
3xx otherwise (too many hops, no Location) NO_RULES (stored as 404: "unavailable")
4xx but 429                                NO_RULES: allow all
429, 5xx, network failure, other           UNREACHABLE: disallow all, ask again as a page
                                           (``robots_attempts``), Retry-After honoured
private / loopback target, invalid URL,    UNFETCHABLE: nothing of the origin can be fetched
no such host (DNS NXDOMAIN), an address
on the never-crawl list, a TLS failure
=========================================  =======================================
"""

from __future__ import annotations

import email.utils
import enum
import time
from dataclasses import dataclass

from politecrawl.net.fetch import FetchResult
from politecrawl.polite import politeness
from politecrawl.urls.canonical import join


class DropReason(enum.StrEnum):
    """Why a URL was not (or no longer) crawled; written to logs and counted."""

    OUT_OF_SCOPE = "out_of_scope"
    EXCLUDED = "excluded"
    EXTENSION = "extension"
    TRAP = "trap"
    INVALID_URL = "invalid_url"
    ROBOTS = "robots_disallowed"
    ROBOTS_UNAVAILABLE = "robots_unavailable"
    NOT_HTML = "not_html"
    HTTP_PERMANENT = "http_permanent"
    UNEXPECTED_STATUS = "unexpected_status"
    TOO_MANY_REDIRECTS = "too_many_redirects"
    BAD_REDIRECT = "bad_redirect"
    RETRIES_EXHAUSTED = "retries_exhausted"
    ADDRESS_REFUSED = "address_refused"
    NO_SUCH_HOST = "no_such_host"  # DNS: the name does not exist (a typo, a dead domain)
    BAD_ENCODING = "bad_encoding"
    BAD_CHUNKING = "bad_chunking"  # a chunk-size line that is not hex (RFC 9112 7.1)
    NOINDEX = "noindex"
    DUPLICATE_URL = "duplicate_url_rule"  # a learned rule says it is a variant of another URL
    SITE_REFUSED = "site_refused"  # the site refused request after request: given up
    TLS_CERTIFICATE = "tls:certificate"  # the certificate did not verify
    TLS_HANDSHAKE = "tls:handshake"  # another TLS failure (protocol, cipher, ...)
    TOO_SLOW = "too_slow"  # the body came slower than --min-rate: a drip, cut
    # robots.txt or tdmrep.json refuses the crawl's purpose for the whole site (polite.usage)
    RESERVED_SITE = "reserved_site"
    QUEUE_FULL = "queue_full"  # the frontier's cap (--max-queue) let it go, never asked


# why an origin cannot be fetched, found before any connection was made: no request reached a
# server, so none is to be spaced (``robots.gate``)
NO_CONTACT = frozenset(
    {DropReason.NO_SUCH_HOST, DropReason.ADDRESS_REFUSED, DropReason.EXCLUDED,
     DropReason.INVALID_URL}
)  # fmt: skip

# never fetched, for a reason that passes (see the module's doc): a next segment holds them
PASSING_DROPS = frozenset(
    {DropReason.ROBOTS_UNAVAILABLE, DropReason.RETRIES_EXHAUSTED, DropReason.QUEUE_FULL,
     DropReason.TLS_HANDSHAKE}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Store:
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class NotModified:
    """The page is what we have (RFC 9110 15.4.5); the site spent a 304, not a body."""


@dataclass(frozen=True, slots=True)
class Redirect:
    location: str
    permanent: bool


@dataclass(frozen=True, slots=True)
class Retry:
    """Try the URL again no earlier than ``after_s``; ``overload`` slows the whole host.
    ``blame`` False: not the site's doing (the crawl cut it, or its own network was down):
    no attempt used, no failure counted."""

    after_s: float
    overload: bool
    error_class: str
    blame: bool = True


CUT = "cut"  # FetchResult.error of a request the crawl's own stop cut short
TRANSIENT = frozenset({"dns", "connect", "timeout"})  # retried over hours (Heritrix)
_DROPPED_ERRORS = {
    "address_refused": DropReason.ADDRESS_REFUSED,
    "excluded": DropReason.EXCLUDED,  # the never-crawl list names the server's address
    "invalid_url": DropReason.INVALID_URL,
    "no_such_host": DropReason.NO_SUCH_HOST,
    "bad_encoding": DropReason.BAD_ENCODING,
    "bad_chunking": DropReason.BAD_CHUNKING,
    "tls:certificate": DropReason.TLS_CERTIFICATE,
    "tls:handshake": DropReason.TLS_HANDSHAKE,
    "too_slow": DropReason.TOO_SLOW,
}


@dataclass(frozen=True, slots=True)
class Drop:
    reason: DropReason
    detail: str = ""


Outcome = Store | NotModified | Redirect | Retry | Drop

_PERMANENT_4XX = frozenset({400, 401, 403, 404, 406, 410, 451})
_REDIRECTS = {301: True, 308: True, 302: False, 303: False, 307: False}
_OVERLOAD = frozenset({429, 503})
# 4xx that say "ask again": 408 Request Timeout (RFC 9110 15.5.9: the client may repeat the
# request) and 425 Too Early (RFC 8470 5.2): retried as a 5xx is, not given up
_ASK_AGAIN = frozenset({408, 425})
_REFUSALS = frozenset({401, 403, 429})


def refusal(result: FetchResult) -> str | None:
    """The site said go away (401, 403, 429, a timeout): the kind, else None."""
    if result.error is not None:
        return "timeout" if result.error == "timeout" else None
    if result.status in _REFUSALS:
        return f"http_{result.status}"
    return None


def unanswered(result: FetchResult) -> bool:
    """The request reached the server (a connection was made) and the crawler gave it up
    with no answer: a timeout (``--request-time``, or no byte for the read timeout) or cut at
    ``--max-time``. The server may still be working on it (``politeness.record_unanswered``).
    A connect timeout never reached it."""
    return result.error in ("timeout", CUT) and bool(result.ip)


def partial(result: FetchResult) -> bool:
    """The body held is only part of the page: cut (``FetchResult.truncated``), or a 206 to a
    request without Range (the crawler sends none; its Content-Range says which part): kept,
    marked truncated in the request log and counted."""
    return result.truncated or result.status == 206


def answered_normally(result: FetchResult) -> bool:
    """An answer that ends a run of failures and refusals: neither a 5xx nor a refusal."""
    status = result.status
    return result.error is None and status is not None and status < 500 and refusal(result) is None


def answered_then_broke(result: FetchResult) -> bool:
    """The server sent its status line and headers (not a 5xx), then the body failed: the
    page's failure, not the server's (it does not count toward parking the site)."""
    status = result.status
    return status is not None and status < 500 and result.error is not None


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """Retry-After as seconds (``120``) or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():  # str.isdigit alone accepts '²' and '⑨'
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):  # a year like 99999999999999999999
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


_backoff = politeness.retry_backoff_s


def classify(
    result: FetchResult,
    attempt: int,
    max_attempts: int,
    *,
    max_retry_after_s: float = 3600.0,
    retry_base_s: float = 30.0,
    transient_attempts: int = 30,
    retry_max_wait_s: float = 900.0,
) -> Outcome:
    """Decide what ``result`` means. ``attempt`` counts from 1 (a blameless retry does not
    use one)."""
    can_retry = attempt < max_attempts
    error = result.error
    if error is not None:
        if error == CUT:
            return Retry(0.0, overload=False, error_class=CUT, blame=False)
        if error in _DROPPED_ERRORS:
            return Drop(_DROPPED_ERRORS[error], result.error_detail)
        if error in TRANSIENT:
            if attempt < transient_attempts:
                wait = _backoff(attempt, retry_base_s, retry_max_wait_s)
                return Retry(wait, overload=error == "timeout", error_class=error)
            return Drop(DropReason.RETRIES_EXHAUSTED, error)
        if can_retry:
            return Retry(_backoff(attempt, retry_base_s), overload=False, error_class=error)
        return Drop(DropReason.RETRIES_EXHAUSTED, error)
    status = result.status or 0
    if 200 <= status < 300:
        if result.abandoned:
            return Drop(DropReason.NOT_HTML, result.content_type)
        return Store(truncated=partial(result))
    if status == 304 and result.conditional():
        return NotModified()
    if status in _REDIRECTS:
        loc = result.location()
        if not loc or not loc.strip():
            return Drop(DropReason.BAD_REDIRECT, f"{status} without Location")
        return Redirect(loc.strip(), permanent=_REDIRECTS[status])
    if status in _OVERLOAD:
        if not can_retry:
            return Drop(DropReason.RETRIES_EXHAUSTED, f"http_{status}")
        ra = retry_after_s(result.header("retry-after"))
        after = (
            politeness.retry_after_wait_s(ra, max_retry_after_s)
            if ra is not None
            else _backoff(attempt, retry_base_s)
        )
        return Retry(after, overload=True, error_class=f"http_{status}")
    if 500 <= status < 600 or status in _ASK_AGAIN:
        if can_retry:
            error_class = f"http_{status}" if status in _ASK_AGAIN else "http_5xx"
            return Retry(_backoff(attempt, retry_base_s), overload=True, error_class=error_class)
        return Drop(DropReason.RETRIES_EXHAUSTED, f"http_{status}")
    if status in _PERMANENT_4XX or 400 <= status < 500:
        return Drop(DropReason.HTTP_PERMANENT, f"http_{status}")
    return Drop(DropReason.UNEXPECTED_STATUS, f"http_{status}")


def outcome_label(outcome: Outcome) -> str:
    """The request log's ``outcome`` field: stored / redirect / retry / dropped:reason."""
    if isinstance(outcome, Store):
        return "stored"
    if isinstance(outcome, NotModified):
        return "not_modified"
    if isinstance(outcome, Redirect):
        return "redirect"
    if isinstance(outcome, Retry):
        if outcome.error_class == CUT:
            return CUT
        return "retry" if outcome.blame else "retry:outage"
    return f"dropped:{outcome.reason.value}"


# -- robots.txt (RFC 9309 2.3.1) ----------------------------------------------------------------
ROBOTS_MAX_HOPS = 5  # RFC 9309 2.3.1.2: follow at least five redirects
# RFC 9309 2.5: parse at least 500 KiB; read that much whatever --max-size says of pages
MAX_ROBOTS_BYTES = 512_000
# a TLS failure too: a page meeting one is dropped at once (no retry fixes a certificate), so
# its robots.txt is not asked again for hours on the transient schedule either
_UNFETCHABLE = frozenset(
    {"address_refused", "excluded", "invalid_url", "no_such_host", "tls:certificate",
     "tls:handshake"}
)  # fmt: skip


class RobotsOutcome(enum.StrEnum):
    """What a robots.txt answer means; the value is the log's ``robots:<value>`` label."""

    RULES = "ok"  # 2xx: the body's rules (2.3.1.1)
    REDIRECT = "redirect"  # 3xx with hops left (2.3.1.2)
    NO_RULES = "none"  # 4xx but 429, too many redirects: "unavailable", allow all (2.3.1.3)
    UNREACHABLE = "unreachable"  # 429, 5xx, network failure: disallow all (2.3.1.4)
    UNFETCHABLE = "unfetchable"  # refused or invalid target: nothing to ask, ever


@dataclass(frozen=True, slots=True)
class RobotsAnswer:
    """``classify_robots``: the outcome, the status to store (0: network failure), and for a
    redirect its next hop."""

    outcome: RobotsOutcome
    status: int
    target: str | None = None


def robots_outcome(status: int) -> RobotsOutcome:
    """A stored robots.txt status (0: network failure) as RULES, NO_RULES or UNREACHABLE."""
    if 200 <= status < 300:
        return RobotsOutcome.RULES
    if 400 <= status < 500 and status != 429:
        return RobotsOutcome.NO_RULES
    return RobotsOutcome.UNREACHABLE


def robots_usable(status: int) -> bool:
    """True when the answer settles the rules (RULES or NO_RULES): cached for the TTL."""
    return robots_outcome(status) is not RobotsOutcome.UNREACHABLE


# A robots.txt that never answered (a dead link's host, a dead port of a live host: nothing
# listening, a connection never made) gets this many asks, not the transient failures' many: on the
# retry schedule about 15 minutes at the defaults (30 s, doubling), not hours. With hours,
# `crawl http://a-typo:8080/` ran for six hours before saying nothing could be fetched, and
# every dead link's host kept a finished crawl alive as long. A site that answered before and
# fails now (a server down for a while) is asked for hours.
ROBOTS_FIRST_ASKS = 6


def robots_attempts(
    status: int, max_attempts: int, transient_attempts: int, answered: bool = True
) -> int:
    """How many asks an unreachable robots.txt gets before its origin's URLs are dropped,
    as a page's retries: no answer at all (status 0: a name not resolving, a connection
    refused or timing out) the transient failures' many (``--transient-attempts``: hours),
    or ``ROBOTS_FIRST_ASKS`` if it never ``answered``; a 429 or 5xx answer
    3 (``max_attempts``, not an option)."""
    if status != 0:
        return max_attempts
    return transient_attempts if answered else min(transient_attempts, ROBOTS_FIRST_ASKS)


def robots_answer_settles(result: FetchResult) -> bool:
    """A robots.txt answer that holds for the TTL (rules, none, a redirect), not a failure
    to ask again at the retry time (429, 5xx, no answer): how long a hop's is shared."""
    if result.error is not None or result.status is None:
        return False
    return 300 <= result.status < 400 or robots_usable(result.status)


def classify_robots(result: FetchResult, url: str, hops: int) -> RobotsAnswer:
    """One robots.txt fetch of ``url`` (``hops`` redirects into its chain) read by the table."""
    if result.error in _UNFETCHABLE:
        return RobotsAnswer(RobotsOutcome.UNFETCHABLE, 0)
    status = result.status if result.error is None and result.status is not None else 0
    if 300 <= status < 400:
        location = result.location()
        target = join(url, location) if location and hops < ROBOTS_MAX_HOPS else None
        if target is not None:
            return RobotsAnswer(RobotsOutcome.REDIRECT, status, target)
        status = 404  # too many hops: RFC 9309 2.3.1.2 treats it as unavailable
    return RobotsAnswer(robots_outcome(status), status)
