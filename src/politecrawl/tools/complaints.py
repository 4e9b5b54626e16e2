"""Answering a site operator's complaint: what exactly did we ask of their site, and when?

The seeds: "You will receive a complaint about your crawler's behavior... you'll want to verify
that it really was your crawler", and "log the entire contents of any robots.txt file ... to see
when the crawler last downloaded robots.txt and what the file said at the time". ``lookup``
joins the two logs: every request to a host (or its subdomains) in a time window, each with
the robots.txt that was in force when it was made, read across rotated, compressed files.
An operator who gives the server's IP address (all a firewall log shows) gets the requests
made to that address, whatever host names they were made under (the request log records
the IP each request connected to).
"""

from __future__ import annotations

import argparse
import bisect
import ipaddress
import itertools
import json
import re
import textwrap
from collections import Counter, defaultdict
from datetime import MAXYEAR, UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from politecrawl.errors import ConfigError
from politecrawl.storage.logs import LogDamage, iter_log_records
from politecrawl.storage.records import REQUESTS, ROBOTS, time_of
from politecrawl.tools.textout import printable, printable_lines, warn
from politecrawl.urls.canonical import host_of, origin_of

__all__ = [
    "address_of",
    "format_text",
    "host_arg",
    "host_matches",
    "lookup",
    "main_args",
    "parse_time",
    "request_matches",
]

_ROBOTS_MEANING = {
    "robots:ok": "rules applied",
    "robots:none": "no robots.txt (4xx): everything allowed, RFC 9309 2.3.1.3",
    "robots:unreachable": "unreachable (5xx/network): nothing but robots.txt fetched, "
    "RFC 9309 2.3.1.4",
}


_EARLIEST = datetime.min.replace(tzinfo=UTC)
_LATEST = datetime.max.replace(tzinfo=UTC)
_WEEK = re.compile(r"^\d{4}-?W\d\d$")  # a week with no day: 2026-W48


def parse_time(text: str, *, end_of_day: bool = False) -> datetime:
    """An ISO 8601 time from the command line, as an aware UTC datetime (naive means UTC).

    A date alone (``2024-03-01``, ``20240301``, ``2024-W09-5``) means the start of that day,
    or with ``end_of_day`` its last microsecond, so ``--since 2024-03-01 --until 2024-03-01``
    covers the whole day (a week alone, ``2024-W09``, the whole week). A time beyond what a
    datetime holds once in UTC (``9999-12-31T23:59:59-01:00``) is the last one it holds: no
    log line is later.
    """
    raw = text.strip()
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        raise ConfigError(
            f"bad time {text!r}: use ISO 8601, e.g. 2024-03-01 or 2024-03-01T14:30:00Z"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    try:
        if end_of_day and _date_only(raw):
            when += timedelta(days=7 if _WEEK.match(raw) else 1, microseconds=-1)
        return when.astimezone(UTC)
    except OverflowError:  # before year 1 or after 9999 in UTC
        return _LATEST if when.year == MAXYEAR else _EARLIEST


def _date_only(raw: str) -> bool:
    try:
        date.fromisoformat(raw)
    except ValueError:
        return False
    return True


def _as_utc(when: datetime | None) -> datetime | None:
    if when is None:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _normal_host(host: str) -> str:
    """What an operator types (``Example.COM.``, ``example.com:8080``, a URL, ``::1``) -> a
    log host."""
    h = host.strip()
    h = h.split("://", 1)[1] if "://" in h else h
    h = h.split("/")[0].split("?")[0].split("#")[0].rpartition("@")[2]
    try:
        h = f"[{ipaddress.IPv6Address(h)}]"  # a bare IPv6 address: bracketed, as in URLs
    except ValueError:
        h = h[: h.find("]") + 1] if h.startswith("[") else h.partition(":")[0]
    h = h.lower().rstrip(".")
    try:
        return h.encode("idna").decode("ascii")
    except UnicodeError:
        return h


_HOST = re.compile(r"^(\[[0-9a-f:.]+\]|[a-z0-9_-]+(\.[a-z0-9_-]+)*)$")


def host_arg(text: str) -> str:
    """``--host`` as the logs write hosts, or a ConfigError saying what is wrong with it."""
    host = _normal_host(text)
    if "*" in host:
        raise ConfigError(
            f"--host {text!r}: wildcards are not supported, and not needed: "
            f"--host {host.lstrip('*.') or 'example.com'} covers its subdomains too"
        )
    if not host:
        raise ConfigError(f"--host {text!r} names no host: give one, e.g. --host example.com")
    if not _HOST.match(host):
        raise ConfigError(f"--host {text!r} is not a host name, e.g. --host example.com")
    return host


def host_matches(url_host: str, host: str) -> bool:
    """The URL's host is ``host`` or one of its subdomains (``www.example.com`` for
    ``example.com``; not ``badexample.com``)."""
    return url_host == host or url_host.endswith("." + host)


Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def address_of(text: object) -> Address | None:
    """``text`` as an IP address (``203.0.113.7``, ``::1``, ``[::1]``, ``fe80::1%eth0``; an
    IPv4-mapped IPv6 address as its IPv4 one), or None: a host name."""
    raw = str(text or "").strip().removeprefix("[").removesuffix("]").partition("%")[0]
    try:
        addr = ipaddress.ip_address(raw)
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


def request_matches(rec: dict[str, Any], host: str, address: Address | None) -> bool:
    """A request-log record is one of the complaint's: made to ``host`` or a subdomain, or,
    when the operator gave an address, one whose recorded IP (the server connected to,
    whatever name the URL had: a ``--resolve`` pin, a shared server) or whose URL is that
    address."""
    url = str(rec["url"])
    if "://" not in url:
        return False
    if address is None:
        return host_matches(host_of(url), host)
    return address in (address_of(rec.get("ip")), address_of(host_of(url)))


def _robots_versions(
    log_dir: Path, origins: set[str], damage: LogDamage | None
) -> dict[str, tuple[list[datetime], list[dict[str, Any]]]]:
    """Per origin of the requests found: robots.txt fetch results, ordered by fetch time."""
    per: dict[str, list[tuple[datetime, dict[str, Any]]]] = defaultdict(list)
    for rec in iter_log_records(log_dir, "robots", shape=ROBOTS, damage=damage):
        if rec.get("outcome") in ("redirect", "robots:redirect") or rec["origin"] not in origins:
            continue  # a redirect hop is not a decision; the rules came from the final fetch
        when = time_of(rec["time"])
        if when is not None:
            per[str(rec["origin"])].append((when, rec))
    out = {}
    for origin, items in per.items():
        items.sort(key=lambda it: it[0])
        out[origin] = ([t for t, _ in items], [r for _, r in items])
    return out


def lookup(
    out_dir: Path,
    host: str,
    since: datetime | None,
    until: datetime | None,
    *,
    damage: LogDamage | None = None,
) -> list[dict[str, Any]]:
    """Every logged request to ``host`` or its subdomains with ``since <= time <= until``
    (either may be None; naive datetimes are UTC), oldest first, each with the robots.txt
    in force: the latest robots log entry for that origin at or before the request. A
    ``host`` that is an IP address matches by address (``request_matches``). What the
    logs held but could not be read is counted in ``damage``."""
    log_dir = out_dir / "log"
    want = _normal_host(host)
    address = address_of(want)
    lo, hi = _as_utc(since), _as_utc(until)
    rows: list[tuple[datetime, dict[str, Any]]] = []
    purpose = "search"  # what the run was for: its header line (before any of its requests)
    reqs = iter_log_records(log_dir, "requests", headers=True, shape=REQUESTS, damage=damage)
    for rec in reqs:
        if rec.get("record") == "header":
            purpose = str(rec.get("purpose") or "search")
            continue
        if not request_matches(rec, want, address):
            continue
        when = time_of(rec["time"])
        if when is None or (lo is not None and when < lo) or (hi is not None and when > hi):
            continue
        row = {
            k: rec.get(k)
            for k in ("time", "url", "status", "duration_ms", "delay_s", "outcome", "ip", "attempt")
        }
        if rec.get("error"):
            row["error"] = rec["error"]
        if rec.get("redirect_refused"):  # the target was not asked: why
            row["redirect_refused"] = rec["redirect_refused"]
        row["purpose"] = purpose
        rows.append((when, row))
    robots = _robots_versions(log_dir, {origin_of(str(r["url"])) for _, r in rows}, damage)
    for when, row in rows:
        row["robots_in_force"] = _in_force(robots.get(origin_of(str(row["url"]))), when)
    rows.sort(key=lambda it: it[0])
    return [r for _, r in rows]


def _in_force(
    versions: tuple[list[datetime], list[dict[str, Any]]] | None, when: datetime
) -> dict[str, Any] | None:
    if versions is None:
        return None
    times, recs = versions
    i = bisect.bisect_right(times, when)
    if i == 0:
        return None
    rec = recs[i - 1]
    return {
        "time": rec.get("time"),
        "origin": rec.get("origin"),
        "url": rec.get("url"),
        "status": rec.get("status"),
        "outcome": rec.get("outcome"),
        "body": rec.get("body", ""),
    }


def _outcome(row: dict[str, Any]) -> str:
    """The outcome column: a redirect whose target was refused says why it was not asked."""
    outcome = str(row.get("outcome"))
    why = row.get("redirect_refused")
    return f"{outcome} (target {why})" if why else outcome


def _short_time(iso: Any) -> str:
    return printable(str(iso).replace("T", " "))


def format_text(rows: list[dict[str, Any]], *, what: str = "host") -> str:
    """A plain-text account to paste into a reply: overview, one line per request, then
    each distinct robots.txt (per origin, status and body) once, referred to as R1, R2...
    (``what`` was asked about: ``host``, or ``address``)."""
    if not rows:
        return f"No requests to this {what} in the logs for this time window.\n"
    versions: dict[tuple[Any, ...], str] = {}
    first_seen: dict[str, dict[str, Any]] = {}
    table = []
    for row in rows:
        rif = row.get("robots_in_force")
        label = "-"
        if rif is not None:
            key = (rif.get("origin"), rif.get("status"), rif.get("body"))
            if key not in versions:
                versions[key] = f"R{len(versions) + 1}"
                first_seen[versions[key]] = rif
            label = versions[key]
        status = row.get("status")
        table.append(
            [
                printable(str(row.get("time") or "")),
                str(status) if status is not None else printable(str(row.get("error") or "-")),
                f"{row.get('duration_ms') or 0:.0f}",
                f"{row.get('delay_s') or 0:.1f}",
                printable(_outcome(row)),
                label,
                printable(str(row.get("url"))),
            ]
        )
    lines = _overview(rows)
    lines += _request_lines(table)
    if versions:
        lines += ["", "robots.txt in force (each version shown once):"]
    for label, rif in first_seen.items():
        outcome = str(rif.get("outcome"))
        meaning = printable(_ROBOTS_MEANING.get(outcome, outcome))
        lines.append(f"{label}: {printable(str(rif.get('url')))}")
        lines += textwrap.wrap(
            f"first fetched {_short_time(rif.get('time'))}, status {rif.get('status') or 'none'}"
            f" ({meaning})",
            WIDTH,
            initial_indent="    ",
            subsequent_indent="    ",
        )
        body = str(rif.get("body") or "")
        if body.strip() and rif.get("outcome") == "robots:ok":
            lines += ["    | " + ln for ln in printable_lines(body.rstrip("\n"))]
        elif body.strip():
            lines.append(f"    (body of {len(body)} characters not used as rules)")
        else:
            lines.append("    (empty)")
    return "\n".join(lines) + "\n"


WIDTH = 100  # columns the text output keeps to; --json has every field in full


def _request_lines(table: list[list[str]]) -> list[str]:
    """One line per request within ``WIDTH`` columns (unless a URL's host alone is too
    long: it is never cut): the time of day (a date line when the
    day changes), status, ms, delay, outcome, robots.txt version, then the URL, shown
    without the origin when every request went to one origin (named above), and its path
    cut in the middle with ``…`` if it still does not fit (``_fitted``: never its host)."""
    origins = {origin_of(r[-1]) for r in table if "://" in r[-1]}
    one_origin = next(iter(origins)) if len(origins) == 1 else None
    rows = []
    for when, *rest, url in table:
        if one_origin is not None and url.startswith(one_origin):
            url = url[len(one_origin) :] or "/"
        rows.append([when[:10], when[11:23] or when, *rest, url])
    head = ["", "time (UTC)", "status", "ms", "delay s", "outcome", "robots", "url"]
    widths = [max(len(r[i]) for r in [*rows, head]) for i in range(1, len(head) - 1)]
    out = [f"requests to {one_origin}:"] if one_origin else []
    day = None
    shortened = False
    for i, r in enumerate([head, *rows]):
        if i and r[0] != day:
            day = r[0]
            out.append(day)
        cells = [
            c.rjust(w) if j in (2, 3) else c.ljust(w)
            for j, (c, w) in enumerate(zip(r[1:-1], widths, strict=True))
        ]
        line = "  ".join(cells) + "  "
        url = _fitted(r[-1], WIDTH - len(line))
        shortened |= url != r[-1]
        out.append((line + url).rstrip())
    if shortened:
        out.append("(long URLs cut in the middle of their path with …, never their host: "
                   "--json has each in full)")  # fmt: skip
    return out


_MIN_PATH = 16  # columns of a cut path kept at least: its start and its end


def _fitted(url: str, room: int) -> str:
    """``url`` within ``room`` columns if it can be: its origin (scheme, host, port) whole,
    so ``a.example.org`` and ``b.example.org`` are told apart, and what follows cut in the
    middle with ``…`` (at least ``_MIN_PATH`` columns of it kept, past ``room`` if need be)."""
    if len(url) <= room:
        return url
    origin = origin_of(url) if "://" in url and not url.startswith("/") else ""
    rest = url[len(origin) :]
    keep = max(_MIN_PATH, room - len(origin))
    if len(rest) <= keep:
        return url
    return origin + rest[: keep // 2 - 1] + "…" + rest[-(keep - keep // 2) :]


def _overview(rows: list[dict[str, Any]]) -> list[str]:
    """Counts, IPs and the closest spacing per host: what a complaint usually asks about."""
    statuses = Counter(printable(str(r.get("status") or r.get("error") or "none")) for r in rows)
    ips = sorted({printable(str(r["ip"])) for r in rows if r.get("ip")})
    lines = [
        f"{len(rows)} requests from {_short_time(rows[0]['time'])} "
        f"to {_short_time(rows[-1]['time'])}",
        "status: " + ", ".join(f"{s} x{n}" for s, n in sorted(statuses.items())),
        "server addresses contacted: " + (", ".join(ips) if ips else "not recorded"),
        "the crawl's declared purpose: "
        + ", ".join(sorted({printable(str(r.get("purpose") or "search")) for r in rows})),
    ]
    reserved = sum(str(r.get("outcome", "")).startswith("reserved:") for r in rows)
    if reserved:
        lines.append(f"pages fetched but not kept, your statements refusing that use: {reserved}")
    starts: dict[str, list[datetime]] = defaultdict(list)
    for r in rows:
        when = time_of(r.get("time"))
        url = str(r.get("url", ""))
        if when is not None and "://" in url:
            starts[printable(host_of(url))].append(when)
    for h, ts in sorted(starts.items()):
        gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(ts)]
        gap = f", closest two started {min(gaps):.1f} s apart" if gaps else ""
        lines.append(f"  {h}: {len(ts)} requests{gap}")
    return [*lines, ""]


def main_args(args: argparse.Namespace) -> int:
    """``politecrawl log DIR --host H [--since T] [--until T] [--json]``."""
    out_dir = Path(args.dir)
    if not (out_dir / "log").is_dir():
        raise ConfigError(f"{out_dir} is not a crawl output folder (no log/ in it)")
    if not str(args.host or "").strip():
        raise ConfigError("--host is required, e.g. --host example.com")
    host = host_arg(args.host)
    since = parse_time(args.since) if args.since else None
    until = parse_time(args.until, end_of_day=True) if args.until else None
    if since is not None and until is not None and since > until:
        raise ConfigError(f"--since {args.since} is after --until {args.until}")
    damage = LogDamage()
    rows = lookup(out_dir, host, since, until, damage=damage)
    warn(damage.lines(out_dir))
    by = "address" if address_of(host) is not None else "host"
    if args.json:  # json.dumps escapes every control character a server may have sent
        print(json.dumps({"matched_by": by, "requests": rows, "damage": damage.to_json(out_dir)}))
    else:
        asked = f"the server address {host}" if by == "address" else f"{host} and its subdomains"
        print(
            f"Requests to {asked}"
            f" ({printable(args.since or 'start of logs')} .."
            f" {printable(args.until or 'end of logs')})"
        )
        if by == "address":
            print("matched by address: the IP each request went to, under whatever host name")
        print(format_text(rows, what=by), end="")
    return 0
