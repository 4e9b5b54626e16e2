"""What ``crawl``, ``worker``, ``fetch`` and ``demo`` print when a crawl ends: its summary,
and the one line that says why a crawl fetched nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "lost_line", "nothing_fetched", "nothing_fetched_at_all", "print_summary", "time_ran_out"
]


# counters of pages on which a function of the user's raised: (counter, what it is)
_USER_CODE = (("handler_errors", "--handler"), ("relevance_errors", "--relevance"))


def print_summary(summary: dict[str, Any], out: Path) -> None:
    """The summary's figures, the user's code that failed, every site lost, where it went."""
    print(f"crawl finished ({summary['stopped_by']}) in {summary['seconds']:.1f} s")
    for name in (
        "pages_fetched",
        "requests",
        "stored",
        "robots_disallowed",
        "excluded",
        "extension_filtered",
        "redirects",
        "hosts",
        "queued_left",
    ):
        print(f"  {name.replace('_', ' '):20} {summary[name]}")
        if name == "stored" and (summary.get("counters") or {}).get("noarchive"):
            n = summary["counters"]["noarchive"]  # fetched, read, its links followed, not kept
            print(f"  {'no copy kept':20} {n} (noarchive: as the page{'s' * (n != 1)} asked)")
        if name == "robots_disallowed" and summary.get("robots_absent"):
            print(f"  {'robots.txt absent':20} {summary['robots_absent']} (404: all allowed)")
    if summary["errors"]:
        print(
            "  errors               " + ", ".join(f"{k} {v}" for k, v in summary["errors"].items())
        )
    counters = summary.get("counters") or {}
    failed = [f"{what} on {n} page{'s' * (n != 1)}" for key, what in _USER_CODE
              if (n := counters.get(key, 0))]  # fmt: skip
    if failed:  # the user's own code failed: each page's traceback is in the log
        print(f"  {'your code failed':20} " + ", ".join(failed) + " (each a warning on stderr)")
    lost = summary.get("sites_lost") or []
    if lost:
        from politecrawl.engine.losses import describe

        print(f"  sites lost           {len(lost)} (parked, given up or failed):")
        for line in describe(lost):
            print(line)
    traps = summary.get("traps") or []
    if traps:  # the trap guard's cuts: not sites lost, but pages the crawl did not follow
        from politecrawl.engine.losses import describe_traps

        print(f"  traps cut            {len(traps)} (URL patterns no longer followed):")
        for line in describe_traps(traps):
            print(line)
    print(f"  output               {out} (summary.json, warc/, log/, state.sqlite)")


_WHY_NOTHING = (  # counter, what it means to someone who just ran the crawl
    (
        "error:address_refused",
        "refused: a loopback/private address (add --allow-private-addresses)",
    ),
    ("error:no_such_host", "no such host: the name does not exist in DNS (a typo?)"),
    ("error:dns", "the host name did not resolve"),
    (
        "error:tls:certificate",
        "TLS certificate did not verify (--tls-insecure crawls such sites anyway)",
    ),
    ("error:tls:handshake", "TLS handshake failed"),
    ("error:too_slow", "too slow (below --min-rate)"),
    ("error:connect", "no connection (nothing listening, or unreachable)"),
    ("error:timeout", "timed out"),
    ("error:invalid_url", "not a fetchable URL"),
    ("robots_unavailable", "dropped: robots.txt unreachable"),
    ("robots_disallowed", "disallowed by robots.txt"),
    ("excluded", "on the never-crawl list"),
    ("out_of_scope", "out of --scope / --allow"),
)


def _reasons(counters: dict[str, int]) -> list[str]:
    """What failed or was refused, counted; a request cut by the crawl's stop is no failure
    (``time_ran_out`` says it)."""
    reasons = [f"{counters[k]} {why}" for k, why in _WHY_NOTHING if counters.get(k)]
    if not reasons:
        other = sorted(k for k, v in counters.items()
                       if k.startswith("error:") and k != _CUT and v)  # fmt: skip
        reasons = [f"{counters[k]} {k[6:]}" for k in other]
    return reasons


def nothing_fetched(counters: dict[str, int], out: Path) -> str | None:
    """One line saying why a crawl fetched no page, from its counters (None: nothing failed
    or was refused)."""
    reasons = _reasons(counters)
    if not reasons:
        return None
    return (
        f"nothing could be fetched: {'; '.join(reasons)} "
        f"(every request is in {out / 'log' / 'requests.jsonl'})"
    )


_CUT = "error:cut"  # a request still running when the crawl stopped (--max-time)


def time_ran_out(counters: dict[str, int], queued_left: int) -> str | None:
    """The line of a crawl that ``--max-time`` stopped before its first page, when that is
    why it has none: nothing failed, or a request was still running, cut (a site that
    answers slowly is no site that could not be reached: a resume asks it again). None when
    only failures and refusals are to blame (``nothing_fetched``)."""
    cut = counters.get(_CUT, 0)
    reasons = _reasons(counters)
    urls = f"{queued_left} URL{'s' * (queued_left != 1)} queued"
    if cut:
        running = f"{cut} request{'s were' if cut != 1 else ' was'} still running and cut"
        besides = f" (besides: {'; '.join(reasons)})" if reasons else ""
        return (
            f"--max-time ran out before the first page: {running}{besides}; {urls}, the "
            "same command again resumes and asks again"
        )
    if reasons:
        return None
    return (
        "--max-time ran out before the first page (robots.txt goes first, then each site's "
        f"delay): {urls}; the same command again resumes"
    )


def nothing_fetched_at_all(out: Path) -> str:
    """A crawl that ended with no page, no failure and no refusal: no seed was queued."""
    return (
        "nothing could be fetched: no seed URL was admitted "
        f"(every request is in {out / 'log' / 'requests.jsonl'})"
    )


def lost_line(lost: list[dict[str, Any]], summary_json: Path) -> str:
    """The line on stderr of a crawl that lost sites (exit 3): how many, in which state."""
    parked = sum(1 for x in lost if x["state"] == "parked")
    failed = sum(1 for x in lost if x["state"] == "failed")
    n = len(lost)
    return (
        f"{n} site{'s' * (n != 1)} lost: {parked} parked (the same command again asks them "
        f"from their retry time), {n - parked - failed} given up"
        + (f", {failed} failed (every page after its retries)" if failed else "")
        + f"; listed above and in {summary_json}"
    )
