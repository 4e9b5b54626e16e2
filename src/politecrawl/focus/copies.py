"""Folders that hold copies of another folder's pages, or links to missing pages: taken last.

Sites serve whole folders twice. Debian's Apache manual ships each language folder with the
untranslated pages as links to the English ones: ``/pt-br/mod/mod_ssl.html`` is the very bytes
of ``/en/mod/mod_ssl.html`` for 240 of pt-br's 244 pages, and da, ru, zh-cn... alike (1,857 of
the manual's 2,685 pages). The crawler knows such a page only once it has fetched it (the same
payload as a page stored before: a duplicate, its links not followed, ``continuity.tracker``),
so each one is a request the site did not need and a fetch that found nothing new. A replayed
focused crawl of the admin bed's tls topic spent 112 of its 300 fetches on them.

``CopyFolders`` reads the pages as they are stored: a duplicate whose URL differs from its
original's in one folder only (``urls.variants.folder_swap``) is evidence that the copy's
folder mirrors the original's; a page that is no duplicate is evidence against every folder it
lies in. Once a folder held the copy ``min_support`` times, more often than it held the
original (whichever folder the crawl reached first is the one it keeps), and more often than it
held a page of its own (the French folder of that manual has 230 translations and 14 copies:
not a copy), every URL under it is queued at ``COPY_SHARE`` (1 %) of its priority. Not
dropped: the folder holds the site's few real translations too, so a rewrite rule
(``continuity.duprules``, which needs no counter-example) would lose them; they are fetched
when little else is left. This is the DUST idea (Bar-Yossef, Keidar and Schonfeld, "Do not
crawl in the DUST", 2007), learned softly.

A folder is barren in the same way when its links lead to no page: a 404 (or 410, or no HTML)
counts for every folder its URL lies in (``observe_missing``), a page of its own against, and
after more than ``min_support`` of them, and more than twice the pages it held, its queued URLs
go last too (a folder that holds a whole site has dead links as well, and its first ones may
come before its pages). Django's documentation, as Debian ships it, links Python's under
``/usr/share/doc/python3-doc/`` on its own host: every one is a 404, with an anchor that names
a topic.

Memory: the evidence of the ``max_sites`` (2,000) sites stored to most recently, at most
``max_folders`` (500) folders each; a site forgotten learns its folders again from two copies.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any

from politecrawl.urls.variants import folder_swap, split_url

__all__ = ["COPY_SHARE", "CopyFolders"]

# A queued URL in a copy folder keeps this share of its priority: below a translation
# (prioritizer.TRANSLATION_SHARE, 0.05: the text at least in another language) and below the
# pages the model thinks off the topic (a test manual's FAQ, learned at 0.03, came after the
# copies at 0.05), since a copy most likely holds nothing new at all.
COPY_SHARE = 0.01
MAX_DEPTH = 4  # folder levels counted for a page of its own: /a/, /a/b/, /a/b/c/, /a/b/c/d/


def _folders(path: str) -> list[str]:
    """The folders ``path`` lies in, outermost first, ``MAX_DEPTH`` at most: ``/a/``, ``/a/b/``."""
    out = []
    end = 0
    for _ in range(MAX_DEPTH):
        end = path.find("/", end + 1)
        if end < 0:
            break
        out.append(path[: end + 1])
    return out


@dataclass(slots=True)
class _Site:
    """One site's evidence, by folder (``/pt-br/``)."""

    site: str  # "http://h:8080"
    host: str  # "h", as ``LinkFeatures.host``
    held_copy: Counter[str] = field(default_factory=Counter)
    held_original: Counter[str] = field(default_factory=Counter)
    held_own: Counter[str] = field(default_factory=Counter)  # pages of its own (no duplicate)
    held_missing: Counter[str] = field(default_factory=Counter)  # links that led to no page
    active: set[str] = field(default_factory=set)  # the copy folders


class CopyFolders:
    """Per site, the folders found to mirror another folder, and the evidence for them."""

    def __init__(
        self, min_support: int = 2, max_sites: int = 2_000, max_folders: int = 500
    ) -> None:
        self.min_support = min_support
        self.max_sites, self.max_folders = max_sites, max_folders
        self._sites: OrderedDict[str, _Site] = OrderedDict()
        # host -> its copy folders as URL prefixes ("http://h:8080/pt-br/"): what ``covers``
        # asks for every link scored, a dict lookup for hosts without any
        self._prefixes: dict[str, set[str]] = {}

    def _site(self, site: str, host: str) -> _Site:
        state = self._sites.get(site)
        if state is None:
            state = self._sites[site] = _Site(site, host)
            if len(self._sites) > self.max_sites:
                _, gone = self._sites.popitem(last=False)
                for folder in list(gone.active):
                    self._deactivate(gone, folder)
        else:
            self._sites.move_to_end(site)
        return state

    def observe_own(self, url: str) -> None:
        """A page stored at ``url`` was no duplicate: one more for each folder it lies in
        (``MAX_DEPTH`` levels)."""
        parts = split_url(url)
        if parts is None:
            return
        state = self._site(parts.prefix + parts.host + parts.port, parts.host)
        for folder in _folders(parts.path):
            if self._count(state.held_own, folder) and folder in state.active:
                self._judge(state, folder)

    def observe_missing(self, url: str) -> str | None:
        """The link to ``url`` led to no page (404, 410): one more for each folder it lies in
        (``MAX_DEPTH`` levels). When this made a folder barren, the folder as a URL prefix."""
        parts = split_url(url)
        if parts is None:
            return None
        state = self._site(parts.prefix + parts.host + parts.port, parts.host)
        found = None
        for folder in _folders(parts.path):
            if self._count(state.held_missing, folder):
                was = folder in state.active
                self._judge(state, folder)
                if found is None and not was and folder in state.active:
                    found = state.site + folder
        return found

    def observe(self, copy_url: str, original_url: str) -> str | None:
        """A page fetched at ``copy_url`` was the very page of ``original_url``. When this
        made a folder a copy folder, the folder as a URL prefix (``http://h/pt-br/``: the
        URLs queued under it are worth re-scoring); else None."""
        a, b = split_url(copy_url), split_url(original_url)
        if a is None or b is None:
            return None
        swap = folder_swap(a, b)
        if swap is None:
            return None
        copy, original = swap
        state = self._site(a.prefix + a.host + a.port, a.host)
        if not self._count(state.held_copy, copy):
            return None
        state.held_original[original] += 1
        was = copy in state.active
        self._judge(state, copy)
        self._judge(state, original)
        return state.site + copy if not was and copy in state.active else None

    def _count(self, table: Counter[str], folder: str) -> bool:
        """One more for ``folder`` in ``table``, unless the table is full (``max_folders``)
        and does not know it; whether it was counted."""
        if folder not in table and len(table) >= self.max_folders:
            return False
        table[folder] += 1
        return True

    def _judge(self, state: _Site, folder: str) -> None:
        copies, own = state.held_copy[folder], state.held_own[folder]
        missing = state.held_missing[folder]
        against = max(state.held_original[folder], own)
        # Missing pages need more: a folder that holds a whole site (``/wiki/``, ``/docs/``)
        # has a few dead links too, and the first ones may be fetched before its pages.
        copy_folder = copies >= self.min_support and copies > against
        dead_folder = missing > self.min_support and missing > 2 * own
        if copy_folder or dead_folder:
            state.active.add(folder)
            self._prefixes.setdefault(state.host, set()).add(state.site + folder)
        elif folder in state.active:
            self._deactivate(state, folder)

    def _deactivate(self, state: _Site, folder: str) -> None:
        state.active.discard(folder)
        prefixes = self._prefixes.get(state.host)
        if prefixes is not None:
            prefixes.discard(state.site + folder)
            if not prefixes:
                del self._prefixes[state.host]

    def covers(self, url: str, host: str | None = None) -> bool:
        """Whether ``url`` lies in a folder found to be a copy. ``host``: the URL's host when
        the caller has it (``LinkFeatures.host``): then a dict lookup for most links."""
        if not self._prefixes:
            return False
        if host is None:
            parts = split_url(url)
            if parts is None:
                return False
            host = parts.host
        prefixes = self._prefixes.get(host)
        return prefixes is not None and any(url.startswith(p) for p in prefixes)

    @property
    def folders(self) -> list[str]:
        """Every copy folder, as ``site folder``."""
        return sorted(f"{site} {f}" for site, st in self._sites.items() for f in st.active)

    # -- persistence --------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            site: {
                "copy": st.held_copy,
                "original": st.held_original,
                "own": st.held_own,
                "missing": st.held_missing,
            }
            for site, st in self._sites.items()
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self._sites.clear()
        self._prefixes.clear()
        for site, saved in state.items():
            parts = split_url(f"{site}/")
            if not isinstance(saved, dict) or parts is None:
                continue
            st = self._site(str(site), parts.host)
            for name, table in (
                ("copy", st.held_copy),
                ("original", st.held_original),
                ("own", st.held_own),
                ("missing", st.held_missing),
            ):
                table.update({str(k): int(v) for k, v in saved.get(name, {}).items()})
            for folder in {*st.held_copy, *st.held_missing}:
                self._judge(st, folder)
