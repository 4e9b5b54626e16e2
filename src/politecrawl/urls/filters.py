"""Which canonical URLs a crawl may visit, judged from the URL alone (before any fetch).

The scope of a crawl (the seeds' hosts or registered domains, narrowed by an allow-list of
domains and ``re:`` patterns), the never-crawl and allow-list files, the extension filter
(``.jpg``, ``.pdf``... never fetched) and the shapes of URL that come from crawler traps
(too long, too deep, repeated segments, too many parameters). ``admission`` applies them at
the one gate. Kept apart from ``urls``, which says what a URL *is* (its canonical form,
host, origin, registered domain); this module says which ones are wanted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from politecrawl.errors import ConfigError, UrlError
from politecrawl.urls.canonical import (
    canonical_host,
    canonical_seeds,
    canonicalize,
    host_of,
    origin_of,
    registered_domain,
)

__all__ = [
    "DEFAULT_BLOCKED_EXTENSIONS",
    "ExtensionFilter",
    "Scope",
    "TrapLimits",
    "parse_allow_file",
    "parse_domain_list",
    "path_extension",
    "trap_reason",
]

DEFAULT_BLOCKED_EXTENSIONS: frozenset[str] = frozenset(
    (
        # From the seed crawler's list...
        *(".asx", ".bmp", ".css", ".doc", ".docx", ".flv", ".gif", ".jpeg", ".jpg", ".mid"),
        *(".mov", ".mp3", ".ogg", ".pdf", ".png", ".ppt", ".ra", ".ram", ".rm", ".swf"),
        *(".txt", ".wav", ".wma", ".wmv", ".xml", ".zip", ".m4a", ".m4v", ".mp4", ".m4b"),
        # ...plus the obvious other non-HTML media, archives, binaries, fonts, feeds.
        *(".ico", ".svg", ".webp", ".tif", ".tiff", ".js", ".json", ".gz", ".tgz", ".bz2"),
        *(".7z", ".rar", ".tar", ".exe", ".dmg", ".iso", ".apk", ".msi", ".woff", ".woff2"),
        *(".ttf", ".eot", ".avi", ".mkv", ".webm", ".mpg", ".mpeg", ".xls", ".xlsx", ".pptx"),
        *(".odt", ".ods", ".csv", ".rss", ".atom", ".epub"),
    )
)


def path_extension(url: str) -> str:
    """Lower-case extension of the last path segment (".jpg"), "" when none.

    Path parameters (";v=2") are ignored; a leading dot (".htaccess") is not an extension.
    """
    start = url.find("://")
    start = url.find("/", start + 3) if start >= 0 else 0
    if start < 0:
        return ""
    end = len(url)
    for mark in "?#":
        pos = url.find(mark, start)
        if 0 <= pos < end:
            end = pos
    segment = url[url.rfind("/", start, end) + 1 : end]
    if ";" in segment:
        segment = segment.partition(";")[0]
    dot = segment.rfind(".")
    return segment[dot:].lower() if dot > 0 else ""


class ExtensionFilter:
    """Blocks URLs whose path ends in a non-HTML extension, so they are never fetched."""

    __slots__ = ("_compound", "_extensions")

    def __init__(self, extensions: Iterable[str] = DEFAULT_BLOCKED_EXTENSIONS) -> None:
        exts = set()
        for ext in extensions:
            ext = ext.strip().lower()
            if ext:
                exts.add(ext if ext.startswith(".") else "." + ext)
        self._extensions = frozenset(exts)
        # ".tar.gz" style entries cannot be found by path_extension alone.
        self._compound = tuple(e for e in exts if "." in e[1:])

    def blocks(self, url: str) -> bool:
        ext = path_extension(url)
        if not ext:
            return False
        if ext in self._extensions:
            return True
        if self._compound:
            path = url.partition("?")[0].partition("#")[0].partition(";")[0].lower()
            return path.endswith(self._compound)
        return False


@dataclass(frozen=True, slots=True)
class TrapLimits:
    """Shapes of URL that in practice come from crawler traps (calendars, loops)."""

    max_url_length: int = 2048
    max_path_depth: int = 20
    max_segment_repeats: int = 3
    max_query_params: int = 20


def trap_reason(url: str, limits: TrapLimits) -> str | None:
    """Why a canonical URL looks like a crawler trap, or None.

    Depth counts path segments, a trailing "/" not opening a new one ("/a/b/" is 2);
    empty segments ("//") count, since repeated slashes are a common loop.
    """
    if len(url) > limits.max_url_length:
        return "url_too_long"
    path, _, query = url[len(origin_of(url)) :].partition("?")
    if path.count("/") > min(limits.max_path_depth, limits.max_segment_repeats):
        segments = path[1:].split("/")
        if segments and segments[-1] == "":
            segments.pop()
        if len(segments) > limits.max_path_depth:
            return "path_too_deep"
        if len(segments) > limits.max_segment_repeats:
            counts: dict[str, int] = {}
            for seg in segments:
                counts[seg] = n = counts.get(seg, 0) + 1
                if n > limits.max_segment_repeats:
                    return "repeated_segments"
    if (
        query
        and query.count("&") >= limits.max_query_params
        and sum(1 for p in query.split("&") if p) > limits.max_query_params
    ):
        return "too_many_params"
    return None


def _domain_entry(entry: str) -> str:
    """A list entry as a canonical host: "Example.COM", "*.example.com", a URL..."""
    if "/" in entry or ":" in entry:
        url = entry if "://" in entry else "http://" + entry.lstrip("/")
        return host_of(canonicalize(url))
    if entry.startswith("*."):
        entry = entry[2:]
    try:
        return canonical_host(entry.lstrip("."))
    except UrlError:
        raise
    except ValueError as exc:
        raise UrlError("bad host") from exc


_SCOPE_REJECT, _SCOPE_ADMIT, _SCOPE_REGEX = 0, 1, 2


class Scope:
    """Which hosts a crawl may visit.

    mode "host": exactly the seeds' hosts; "domain": hosts under the seeds'
    registered domains; "any": every host.  A non-empty allow-list further
    restricts: a URL must be under one of its domains or match (re.search) one of
    its "re:REGEX" entries.  The per-host part of the decision is cached.
    """

    __slots__ = ("_allow_domains", "_cache", "_domains", "_hosts", "_mode", "_regexes")

    _CACHE_LIMIT = 1 << 17

    def __init__(
        self,
        mode: Literal["host", "domain", "any"],
        seed_urls: Iterable[str],
        allow: Iterable[str] = (),
    ) -> None:
        if mode not in ("host", "domain", "any"):
            raise ConfigError(f"unknown scope mode {mode!r}")
        self._mode = mode
        self._hosts = frozenset(host_of(u) for u in canonical_seeds(seed_urls))
        self._domains = frozenset(registered_domain(h) for h in self._hosts)
        domains: set[str] = set()
        regexes: list[re.Pattern[str]] = []
        for entry in allow:
            entry = entry.strip()
            if entry.startswith("re:"):
                try:
                    regexes.append(re.compile(entry[3:]))
                except re.error as exc:
                    raise ConfigError(f"bad allow regex {entry!r}: {exc}") from None
            elif entry:
                try:
                    domains.add(_domain_entry(entry))
                except UrlError as exc:
                    raise ConfigError(f"bad allow domain {entry!r}: {exc}") from None
        self._allow_domains = frozenset(domains)
        self._regexes = tuple(regexes)
        self._cache: dict[str, int] = {}

    def _decide_host(self, host: str) -> int:
        if self._mode == "host":
            in_mode = host in self._hosts
        elif self._mode == "domain":
            in_mode = registered_domain(host) in self._domains
        else:
            in_mode = True
        if not in_mode:
            return _SCOPE_REJECT
        if not self._allow_domains and not self._regexes:
            return _SCOPE_ADMIT
        name = host
        while True:  # host or any parent domain on the allow-list
            if name in self._allow_domains:
                return _SCOPE_ADMIT
            dot = name.find(".")
            if dot < 0:
                break
            name = name[dot + 1 :]
        return _SCOPE_REGEX if self._regexes else _SCOPE_REJECT

    def admits(self, url: str) -> bool:
        """True if the crawl may visit this canonical URL."""
        host = host_of(url)
        verdict = self._cache.get(host)
        if verdict is None:
            if len(self._cache) >= self._CACHE_LIMIT:
                self._cache.clear()
            verdict = self._cache[host] = self._decide_host(host)
        if verdict == _SCOPE_REGEX:
            return any(r.search(url) for r in self._regexes)
        return verdict == _SCOPE_ADMIT


def _lines(text: str) -> Iterable[tuple[int, str]]:
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if line and not line.startswith("#"):
            yield number, line


def parse_allow_file(text: str) -> list[str]:
    """Allow-list entries from a file: domains (normalised) and "re:REGEX" lines.

    "#" starts a comment, except on "re:" lines which are taken whole (a regex may
    contain "#").  A malformed entry raises ConfigError naming the line, since a
    silently dropped entry would change what the crawl may visit.
    """
    entries: list[str] = []
    for number, line in _lines(text):
        if line.startswith("re:"):
            try:
                re.compile(line[3:])
            except re.error as exc:
                raise ConfigError(f"line {number}: bad regex: {exc}") from None
            entries.append(line)
            continue
        line = line.partition("#")[0].strip()
        if any(c.isspace() for c in line):
            raise ConfigError(f"line {number}: spaces inside entry {line!r}")
        try:
            entries.append(_domain_entry(line))
        except UrlError as exc:
            raise ConfigError(f"line {number}: bad domain {line!r}: {exc}") from None
    return entries


def parse_domain_list(text: str) -> tuple[list[str], list[tuple[int, str]]]:
    """Parse a never-crawl file: one domain a line, "#" comments, blank lines.

    Returns (domains lower-cased and punycoded, in order, without duplicates;
    errors as (line number, message)).  A URL is accepted by taking its host.
    Bad lines are reported rather than fatal so one typo does not stop a crawl.
    """
    domains: list[str] = []
    seen: set[str] = set()
    errors: list[tuple[int, str]] = []
    for number, line in _lines(text):
        line = line.partition("#")[0].strip()
        if any(c.isspace() for c in line):
            errors.append((number, f"spaces inside entry {line!r}"))
            continue
        try:
            domain = _domain_entry(line)
        except UrlError as exc:
            errors.append((number, f"not a domain {line!r}: {exc}"))
            continue
        if domain not in seen:
            seen.add(domain)
            domains.append(domain)
    return domains, errors
