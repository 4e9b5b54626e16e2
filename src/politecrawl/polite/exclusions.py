"""The never-crawl list: one domain a line (subdomains included), re-read when the file changes.

The seeds' NeverCrawl.txt: an operator adds a domain after a complaint and can promise "it
takes effect within the half hour". We check the file's mtime every ``check_s`` seconds
(default 60), so it takes effect within a minute. A malformed line is reported with its line
number and skipped; it never stops the crawl.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from politecrawl.urls.filters import parse_domain_list

log = logging.getLogger("politecrawl.polite.exclusions")


class NeverCrawlList:
    def __init__(self, path: Path | None, check_s: float = 60.0) -> None:
        self.path = path
        self.check_s = check_s
        self.domains: frozenset[str] = frozenset()
        self.errors: list[tuple[int, str]] = []
        self._mtime: float | None = None
        self._next_check = 0.0
        self._cache: dict[str, bool] = {}
        self.generation = 0
        if path is not None:
            self.reload()

    def reload(self) -> bool:
        """Read the file again if it changed; True when the list changed."""
        if self.path is None:
            return False
        try:
            st = os.stat(self.path)
        except OSError as exc:
            if self._mtime is not None:
                log.warning(
                    "never-crawl list %s unreadable (%s); keeping the last copy", self.path, exc
                )
            return False
        mtime = st.st_mtime_ns + st.st_size
        if mtime == self._mtime:
            return False
        self._mtime = mtime
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            log.warning("never-crawl list %s unreadable (%s)", self.path, exc)
            return False
        domains, errors = parse_domain_list(text)
        for lineno, msg in errors:
            log.warning("%s:%d: %s (line skipped)", self.path, lineno, msg)
        self.errors = errors
        new = frozenset(domains)
        changed = new != self.domains
        self.domains = new
        self._cache.clear()
        if changed:
            self.generation += 1
            log.info("never-crawl list %s: %d domains", self.path, len(new))
        return changed

    def maybe_reload(self, now: float) -> bool:
        if self.path is None or now < self._next_check:
            return False
        self._next_check = now + self.check_s
        return self.reload()

    def excludes(self, host: str) -> bool:
        """True when ``host`` or any parent domain of it is listed."""
        if not self.domains:
            return False
        hit = self._cache.get(host)
        if hit is None:
            hit = False
            name = host
            while True:
                if name in self.domains:
                    hit = True
                    break
                dot = name.find(".")
                if dot < 0:
                    break
                name = name[dot + 1 :]
            if len(self._cache) > 100_000:
                self._cache.clear()
            self._cache[host] = hit
        return hit
