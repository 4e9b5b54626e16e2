"""The URL side of learned rewrite rules: how two URLs of one site can name one page.

A site may serve one page under several spellings: ``www.`` or the bare host, paths in any
letter case, a trailing index file (``/dir/index.html`` for ``/dir/``), query parameters that
change nothing. This module only knows that anatomy: it splits canonical URLs, names the
ways two of them differ (``differences``: the dimensions a rule may cover) and rewrites a
URL by a site's active rules (``rewrite``). Deciding *which* differences are harmless, from
evidence, is ``duprules.RuleLearner``'s job; keeping the string work here lets the learner
read as bookkeeping, and the rewrite ``RuleLearner.apply`` runs on every URL sits in one place.

Dimensions are strings: ``WWW``, ``CASE``, ``INDEX + file`` and ``PARAM + name``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "CASE",
    "INDEX",
    "INDEX_FILES",
    "PARAM",
    "WWW",
    "CompiledRules",
    "UrlParts",
    "differences",
    "folded_path",
    "folder_swap",
    "group_key",
    "rewrite",
    "section_of",
    "site_key",
    "split_url",
    "witness_of",
]

INDEX_FILES: frozenset[str] = frozenset(
    {"index.html", "index.htm", "index.php", "index.asp", "index.shtml", "index.jsp",
     "default.aspx", "default.asp", "default.htm", "default.html"}
)  # fmt: skip
"""File names that servers commonly serve for a directory URL."""

WWW, CASE = "www", "case"
PARAM, INDEX = "param:", "index:"
_HEX_ESCAPE = re.compile(r"%[0-9a-f]{2}")


def site_key(host: str) -> str:
    """The host with a leading ``www.`` removed: ``www.a.com`` and ``a.com`` are one site."""
    return host[4:] if host.startswith("www.") else host


@dataclass(slots=True)
class UrlParts:
    prefix: str  # "http://"
    host: str
    port: str  # ":8080" or ""
    path: str
    query: str | None


def split_url(url: str) -> UrlParts | None:
    """A canonical absolute URL in parts, or None if it does not look like one."""
    start = url.find("://")
    if start <= 0:
        return None
    start += 3
    end = len(url)
    for mark in "/?#":
        pos = url.find(mark, start)
        if 0 <= pos < end:
            end = pos
    hostport = url[start:end]
    if hostport.startswith("["):
        close = hostport.find("]")
        host, port = hostport[: close + 1], hostport[close + 1 :]
    else:
        host, colon, port = hostport.partition(":")
        port = colon + port
    rest = url[end:].partition("#")[0]
    path, qmark, query = rest.partition("?")
    return UrlParts(url[:start], host.lower(), port, path or "/", query if qmark else None)


def _params(query: str | None) -> dict[str, list[str]]:
    """Parameter name -> its values (in order); a bare ``flag`` has the value ``""``."""
    out: dict[str, list[str]] = {}
    if query:
        for item in query.split("&"):
            if item:
                name, _, value = item.partition("=")
                out.setdefault(name, []).append(value)
    return out


def _strip_index(path: str) -> tuple[str, str | None]:
    """(path without a trailing index file, the file) — the file matched in lower case only."""
    slash = path.rfind("/")
    last = path[slash + 1 :]
    if last in INDEX_FILES:
        return path[: slash + 1], last
    return path, None


def _lower_path(path: str) -> str:
    """Lower-case a path but keep percent-escapes in canonical upper-case hex."""
    low = path.lower()
    if "%" in path:
        low = _HEX_ESCAPE.sub(lambda m: m.group().upper(), low)
    return low


def section_of(path: str) -> str:
    """A path's section: its lower-cased first segment, "/articles/" (or "/item.php", "/")."""
    slash = path.find("/", 1)
    return (path if slash < 0 else path[: slash + 1]).lower()


def folded_path(path: str) -> str:
    """Lower-cased, without a trailing index file: how variants of one path compare."""
    low = path.lower()
    slash = low.rfind("/")
    return low[: slash + 1] if low[slash + 1 :] in INDEX_FILES else low


def group_key(parts: UrlParts) -> str:
    """Where variants of one page meet: site, lower-cased path without an index file."""
    return site_key(parts.host) + parts.port + " " + folded_path(parts.path)


def witness_of(a: UrlParts, b: UrlParts) -> str:
    """What two URLs have in common (path, equal parameters): which page a pair is about."""
    qa, qb = _params(a.query), _params(b.query)
    common = sorted(f"{n}={v}" for n, vals in qa.items() if qb.get(n) == vals for v in vals)
    return folded_path(a.path) + "?" + "&".join(common)


def differences(a: UrlParts, b: UrlParts) -> frozenset[str] | None:
    """How two URLs of one site differ, as dimension names; None if not by rule kinds."""
    if a.prefix != b.prefix or a.port != b.port or site_key(a.host) != site_key(b.host):
        return None
    dims: set[str] = set()
    if a.host != b.host:
        dims.add(WWW)
    if a.path != b.path:
        pa, fa = _strip_index(a.path)
        pb, fb = _strip_index(b.path)
        if fa != fb:
            if fa is not None:
                dims.add(INDEX + fa)
            if fb is not None:
                dims.add(INDEX + fb)
        if pa != pb:
            if pa.lower() != pb.lower():
                return None  # different paths: not one page under two spellings
            dims.add(CASE)
    if a.query != b.query:
        qa, qb = _params(a.query), _params(b.query)
        for name in qa.keys() | qb.keys():
            if qa.get(name) != qb.get(name):
                dims.add(PARAM + name)
    return frozenset(dims)


def folder_swap(copy: UrlParts, original: UrlParts) -> tuple[str, str] | None:
    """The folders two URLs of one site differ by, when that is their only difference:
    ``/pt-br/mod/ssl.html`` and ``/en/mod/ssl.html`` -> (``/pt-br/``, ``/en/``). One folder
    segment (not the file name), the paths otherwise equal; None for any other pair."""
    if (copy.prefix, copy.host, copy.port) != (original.prefix, original.host, original.port):
        return None
    a, b = copy.path.split("/"), original.path.split("/")
    if len(a) != len(b) or len(a) < 3:  # "", folder, ..., file
        return None
    diff = [i for i in range(len(a) - 1) if a[i] != b[i]]
    if len(diff) != 1 or a[-1] != b[-1]:
        return None
    i = diff[0]
    return "/".join(a[: i + 1]) + "/", "/".join(b[: i + 1]) + "/"


@dataclass(slots=True)
class CompiledRules:
    """A site's active rules in the shape ``apply`` wants."""

    www: str | None = None  # "www" / "bare"
    lower: bool = False
    index: frozenset[str] = frozenset()
    params: frozenset[str] = frozenset()  # dropped everywhere on the site
    section_params: dict[str, frozenset[str]] = field(default_factory=dict)


def rewrite(url: str, start: int, end: int, rules: CompiledRules) -> str:
    """Apply a site's rules; ``url[start:end]`` is the authority."""
    hostport = url[start:end]
    if rules.www == "bare":
        if hostport.startswith("www."):
            hostport = hostport[4:]
    elif rules.www == "www" and not hostport.startswith("www."):
        hostport = "www." + hostport
    rest = url[end:]
    qmark = rest.find("?")
    if qmark < 0:
        path, query = rest, None
    else:
        path, query = rest[:qmark], rest[qmark + 1 :]
    if rules.lower:
        path = _lower_path(path)
    if rules.index:
        slash = path.rfind("/")
        if path[slash + 1 :] in rules.index:
            path = path[: slash + 1]
    if query:
        params = rules.params
        if rules.section_params:
            extra = rules.section_params.get(section_of(path))
            if extra:
                params = params | extra
        if params:
            kept = "&".join(i for i in query.split("&") if i.partition("=")[0] not in params)
            query = kept or None  # as canonicalize does: no "?" before an empty query
    if query is None:
        return url[:start] + hostport + path
    return url[:start] + hostport + path + "?" + query
