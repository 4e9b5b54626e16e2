"""What the request log teaches: errors, wasted fetches, traps and slow sites.

The seeds' second reason to log everything: "analyze the logs to find link farms, crawler traps,
and other unproductive sites, errors, and to find file extensions that are (almost) always
unproductive". ``compute`` reads the whole request log (rotated files included) once.
"""

from __future__ import annotations

import argparse
import json
import posixpath
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from politecrawl.errors import ConfigError
from politecrawl.storage.logs import LogDamage, iter_log_records
from politecrawl.storage.records import REQUESTS, RULES, TRAPS
from politecrawl.tools.textout import printable, warn

__all__ = ["compute", "format_text", "main_args", "url_extension"]

BLOCKLIST_MIN_REQUESTS = 5
BLOCKLIST_MAX_STORED_SHARE = 0.10
TRAP_MIN_DROPS = 5
DEEP_PATH_SEGMENTS = 8
LONG_URL_CHARS = 256
TRAP_MIN_DEEP_URLS = 5
TRAP_MIN_QUERY_VARIANTS = 20
TOP = 20


def url_extension(url: str) -> str:
    """The lower-case extension of a URL's last path segment, '' when it has none."""
    path = urlsplit(url).path
    base = posixpath.basename(path)
    _, dot, ext = base.rpartition(".")
    if not dot or not ext or len(ext) > 10 or not ext.isalnum():
        return ""
    return ext.lower()


@dataclass(slots=True)
class _Host:
    requests: int = 0
    errors: int = 0
    redirects: int = 0
    trap_drops: int = 0
    deep_urls: int = 0
    duration_ms: float = 0.0
    timed: int = 0
    queries: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))


def _hostname(url: str) -> str:
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""


def compute(out_dir: Path, damage: LogDamage | None = None) -> dict[str, Any]:
    """Every figure ``format_text`` prints, as plain JSON-able data; what the logs held but
    could not be read is counted in ``damage`` (and listed under ``"damage"``)."""
    damage = LogDamage() if damage is None else damage
    status: Counter[str] = Counter()
    classes: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    reserved: Counter[str] = Counter()  # pages not kept: the owner refuses the purpose
    purposes: Counter[str] = Counter()
    ext_req: Counter[str] = Counter()
    ext_html: Counter[str] = Counter()
    ext_stored: Counter[str] = Counter()
    hosts: dict[str, _Host] = defaultdict(_Host)
    total, first, last = 0, None, None
    log_dir = out_dir / "log"
    for rec in iter_log_records(log_dir, "requests", headers=True, shape=REQUESTS, damage=damage):
        if rec.get("record") == "header":  # a run's header: what it was for
            purposes[str(rec.get("purpose", "search"))] += 1
            continue
        url = str(rec["url"])
        code = rec.get("status")
        outcome = str(rec.get("outcome", ""))
        total += 1
        t = str(rec["time"])
        first = t if first is None else min(first, t)
        last = t if last is None else max(last, t)
        status[str(code) if code is not None else f"error:{rec.get('error', 'none')}"] += 1
        classes[f"{code // 100}xx" if isinstance(code, int) else "no response"] += 1
        outcomes[outcome] += 1
        if outcome.startswith("reserved:"):
            for source in outcome[9:].split("+"):
                reserved[source] += 1
        h = hosts[_hostname(url)]
        h.requests += 1
        if not isinstance(code, int) or code >= 400 or rec.get("error"):
            h.errors += 1
        if isinstance(code, int) and 300 <= code < 400:
            h.redirects += 1
        if outcome.startswith("dropped:trap"):
            h.trap_drops += 1
        if rec.get("duration_ms") is not None and isinstance(code, int):
            h.duration_ms += float(rec["duration_ms"])
            h.timed += 1
        parts = urlsplit(url)
        if parts.path.count("/") > DEEP_PATH_SEGMENTS or len(url) > LONG_URL_CHARS:
            h.deep_urls += 1
        if parts.query:
            h.queries[parts.path].add(parts.query)
        if outcome.startswith("robots:"):
            continue  # robots.txt is not a page: it says nothing about extensions
        ext = url_extension(url)
        ext_req[ext] += 1
        if str(rec.get("content_type") or "").split(";")[0].strip().lower() == "text/html":
            ext_html[ext] += 1
        if outcome == "stored":
            ext_stored[ext] += 1
    extensions = {
        (e or "(none)"): {
            "requests": n,
            "html_share": round(ext_html[e] / n, 3),
            "stored_share": round(ext_stored[e] / n, 3),
        }
        for e, n in ext_req.most_common()
    }
    suggest = [
        e
        for e, n in ext_req.most_common()
        if e and n >= BLOCKLIST_MIN_REQUESTS and ext_stored[e] / n < BLOCKLIST_MAX_STORED_SHARE
    ]
    rules = [str(r["rule"]) for r in iter_log_records(log_dir, "rules", shape=RULES, damage=damage)]
    traps = _traps(hosts, _gate_traps(log_dir, damage))
    return {
        "learned_rules": rules,
        "requests": total,
        "first": first,
        "last": last,
        "hosts": len(hosts),
        "status_classes": dict(sorted(classes.items())),
        "status": dict(sorted(status.items())),
        "outcomes": dict(outcomes.most_common()),
        "purposes": dict(purposes.most_common()),
        "reserved": sum(n for o, n in outcomes.items() if o.startswith("reserved:")),
        "reserved_by": dict(reserved.most_common()),
        "extensions": extensions,
        "suggested_blocklist_additions": suggest,
        "top_error_hosts": _top(hosts, "errors"),
        "redirects": sum(h.redirects for h in hosts.values()),
        "top_redirect_hosts": _top(hosts, "redirects"),
        "suspected_traps": traps,
        "slowest_hosts": _slowest(hosts),
        "damage": damage.to_json(out_dir),
    }


def _top(hosts: dict[str, _Host], attr: str) -> list[dict[str, Any]]:
    ranked = sorted(
        ((getattr(h, attr), name, h.requests) for name, h in hosts.items() if getattr(h, attr) > 0),
        key=lambda x: (-x[0], x[1]),
    )
    return [{"host": name, attr: n, "requests": req} for n, name, req in ranked[:TOP]]


def _gate_traps(log_dir: Path, damage: LogDamage) -> dict[str, list[str]]:
    """URL patterns the gate stopped following (``log/traps.jsonl``), by host."""
    found: dict[str, list[str]] = {}
    for rec in iter_log_records(log_dir, "traps", shape=TRAPS, damage=damage):
        host, pattern, why = rec["host"], rec["pattern"], rec.get("why")
        named = f"{pattern} ({why})" if isinstance(why, str) else pattern
        found.setdefault(_hostname(f"http://{host}/"), []).append(named)
    return found


def _traps(hosts: dict[str, _Host], gate: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Hosts whose URLs look generated rather than written: URL spaces that fed themselves
    (the gate's trap guard), trap drops, very deep or long URLs, or one path asked with many
    different query strings (calendars, session ids)."""
    out = []
    for name in sorted(set(hosts) | set(gate)):
        h = hosts.get(name) or _Host()
        path, variants = max(
            ((p, len(q)) for p, q in h.queries.items()), key=lambda x: x[1], default=("", 0)
        )
        why = []
        patterns = gate.get(name, [])
        if patterns:
            why.append("URL space stopped: " + ", ".join(patterns[:3]))
        if h.trap_drops >= TRAP_MIN_DROPS:
            why.append(f"{h.trap_drops} URLs dropped as traps")
        if h.deep_urls >= TRAP_MIN_DEEP_URLS:
            why.append(
                f"{h.deep_urls} URLs deeper than {DEEP_PATH_SEGMENTS} segments "
                f"or longer than {LONG_URL_CHARS} characters"
            )
        if variants >= TRAP_MIN_QUERY_VARIANTS:
            why.append(f"{variants} query variants of {path}")
        if why:
            out.append(
                {
                    "host": name,
                    "requests": h.requests,
                    "trap_drops": h.trap_drops,
                    "deep_or_long_urls": h.deep_urls,
                    "max_query_variants": variants,
                    "path_with_most_variants": path,
                    "patterns": patterns,
                    "why": "; ".join(why),
                }
            )
    return sorted(out, key=lambda t: -int(t["requests"]))


def _slowest(hosts: dict[str, _Host]) -> list[dict[str, Any]]:
    ranked = sorted(
        ((h.duration_ms / h.timed, name, h.timed) for name, h in hosts.items() if h.timed),
        key=lambda x: (-x[0], x[1]),
    )
    return [{"host": name, "mean_ms": round(ms, 1), "responses": n} for ms, name, n in ranked[:TOP]]


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def format_text(stats: dict[str, Any]) -> str:
    """The figures as a short plain-text report, one section each; each name the logs gave
    (hosts, paths, errors: a server's words) with its control characters escaped."""
    p = printable
    n = max(1, int(stats["requests"]))
    out = [
        f"{stats['requests']} requests to {stats['hosts']} hosts, "
        f"{p(stats['first'] or '-')} .. {p(stats['last'] or '-')}",
        "",
        "Status classes:",
    ]
    out += [f"  {k:<12} {v:>8}  {_pct(v / n):>4}" for k, v in stats["status_classes"].items()]
    out += ["", "Status codes:"]
    out += [f"  {p(k):<12} {v:>8}" for k, v in stats["status"].items()]
    out += ["", "By URL extension:      requests  text/html  stored"]
    for ext, e in list(stats["extensions"].items())[:40]:
        out.append(
            f"  {p(ext):<20} {e['requests']:>8}  {_pct(e['html_share']):>9}  "
            f"{_pct(e['stored_share']):>6}"
        )
    sugg = stats["suggested_blocklist_additions"]
    out += [
        "",
        f"Suggested additions to the extension blocklist (>= {BLOCKLIST_MIN_REQUESTS} "
        f"requests, < {_pct(BLOCKLIST_MAX_STORED_SHARE)} stored): "
        + (", ".join(map(p, sugg)) if sugg else "none"),
    ]
    purposes = ", ".join(map(p, stats.get("purposes", {}))) or "search"
    out += ["", f"Pages fetched but not kept, the owner refusing the purpose ({purposes}): "
            f"{stats.get('reserved', 0)}"]  # fmt: skip
    out += [f"  {p(k):<28} {v:>8}" for k, v in stats.get("reserved_by", {}).items()]
    out += ["", "Hosts with the most errors (4xx, 5xx, no response):"]
    out += [
        f"  {p(h['host']):<40} {h['errors']:>6} of {h['requests']}"
        for h in stats["top_error_hosts"]
    ] or ["  none"]
    out += ["", f"Redirects: {stats['redirects']}; top redirecting hosts:"]
    out += [
        f"  {p(h['host']):<40} {h['redirects']:>6} of {h['requests']}"
        for h in stats["top_redirect_hosts"]
    ] or ["  none"]
    out += ["", "Suspected crawler traps:"]
    out += [f"  {p(t['host']):<40} {p(t['why'])}" for t in stats["suspected_traps"]] or ["  none"]
    out += ["", f"Slowest hosts (mean response time, top {TOP}):"]
    out += [
        f"  {p(h['host']):<40} {h['mean_ms']:>9.1f} ms  ({h['responses']} responses)"
        for h in stats["slowest_hosts"]
    ] or ["  none"]
    out += ["", "Learned duplicate-URL rules (applied in the admission gate):"]
    out += [f"  {p(r)}" for r in stats.get("learned_rules", [])] or ["  none"]
    return "\n".join(out) + "\n"


def main_args(args: argparse.Namespace) -> int:
    """``politecrawl log-stats DIR [--json]``."""
    out_dir = Path(args.dir)
    if not (out_dir / "log").is_dir():
        raise ConfigError(f"{out_dir} is not a crawl output folder (no log/ in it)")
    damage = LogDamage()
    stats = compute(out_dir, damage)
    warn(damage.lines(out_dir))
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        print(format_text(stats), end="")
    return 0
