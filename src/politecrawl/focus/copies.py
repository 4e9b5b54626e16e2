"""Folders that hold copies of another folder's pages, learned from duplicates: taken last.

Sites serve whole folders twice. Debian's Apache manual ships each language folder with the
untranslated pages as links to the English ones: ``/pt-br/mod/mod_ssl.html`` is the very bytes
of ``/en/mod/mod_ssl.html`` for 240 of pt-br's 244 pages, and da, ru, zh-cn... alike (1,857 of
the manual's 2,685 pages). The crawler knows such a page only once it has fetched it (the same
payload as a page stored before: a duplicate, its links not followed, ``continuity.tracker``),
so each one is a request the site did not need and a fetch that found nothing new. A replayed
focused crawl of the admin bed's tls topic spent 112 of its 300 fetches on them.

``CopyFolders`` reads the duplicates as they come: a pair of URLs of one site that differ in
one folder only (``urls.variants.folder_swap``) is evidence that the copy's folder mirrors the
original's. Once a folder held the copy ``min_support`` times, and more often than it held the
original (whichever folder the crawl reached first is the one it keeps), every URL under it is
queued at ``COPY_SHARE`` (1 %) of its priority. Not dropped: the folder holds the site's few real
translations too, so a rewrite rule (``continuity.duprules``, which needs no counter-example)
would lose them; they are fetched when little else is left. This is the DUST idea (Bar-Yossef,
Keidar and Schonfeld, "Do not crawl in the DUST", 2007), learned softly.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from politecrawl.urls.variants import folder_swap, split_url

__all__ = ["COPY_SHARE", "CopyFolders"]

# A queued URL in a copy folder keeps this share of its priority: below a translation
# (prioritizer.TRANSLATION_SHARE, 0.05: the text at least in another language) and below the
# pages the model thinks off the topic (a test manual's FAQ, learned at 0.03, came after the
# copies at 0.05), since a copy most likely holds nothing new at all.
COPY_SHARE = 0.01


class CopyFolders:
    """Per site, the folders found to mirror another folder, and the evidence for them."""

    def __init__(self, min_support: int = 2, max_folders: int = 100_000) -> None:
        self.min_support = min_support
        self.max_folders = max_folders  # folders with evidence kept; more are not counted
        self._held_copy: Counter[str] = Counter()  # "site folder" -> pairs it held the copy in
        self._held_original: Counter[str] = Counter()
        self._active: dict[str, set[str]] = {}  # site -> copy folders

    def observe(self, copy_url: str, original_url: str) -> bool:
        """A page fetched at ``copy_url`` was the very page of ``original_url``. True when
        this made a folder a copy folder (queued URLs are then worth re-scoring)."""
        a, b = split_url(copy_url), split_url(original_url)
        if a is None or b is None:
            return False
        swap = folder_swap(a, b)
        if swap is None:
            return False
        site = a.prefix + a.host + a.port
        copy_key, original_key = f"{site} {swap[0]}", f"{site} {swap[1]}"
        if len(self._held_copy) + len(self._held_original) >= self.max_folders and not (
            copy_key in self._held_copy and original_key in self._held_original
        ):
            return False
        self._held_copy[copy_key] += 1
        self._held_original[original_key] += 1
        was = self.is_copy_folder(site, swap[0])
        self._judge(site, swap[0])
        self._judge(site, swap[1])
        return not was and self.is_copy_folder(site, swap[0])

    def _judge(self, site: str, folder: str) -> None:
        key = f"{site} {folder}"
        copies, originals = self._held_copy[key], self._held_original[key]
        folders = self._active.setdefault(site, set())
        if copies >= self.min_support and copies > originals:
            folders.add(folder)
        else:
            folders.discard(folder)
        if not folders:
            del self._active[site]

    def is_copy_folder(self, site: str, folder: str) -> bool:
        return folder in self._active.get(site, ())

    def covers(self, url: str) -> bool:
        """Whether ``url`` lies in a folder found to be a copy (microseconds: most sites have
        none, and the test is skipped while no site has any)."""
        if not self._active:
            return False
        parts = split_url(url)
        if parts is None:
            return False
        folders = self._active.get(parts.prefix + parts.host + parts.port)
        if not folders:
            return False
        return any(parts.path.startswith(f) for f in folders)

    @property
    def folders(self) -> list[str]:
        """Every copy folder, as ``site folder``."""
        return sorted(f"{site} {f}" for site, fs in self._active.items() for f in fs)

    # -- persistence --------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {"copy": dict(self._held_copy), "original": dict(self._held_original)}

    def load_state(self, state: dict[str, Any]) -> None:
        self._held_copy = Counter({str(k): int(v) for k, v in state.get("copy", {}).items()})
        self._held_original = Counter(
            {str(k): int(v) for k, v in state.get("original", {}).items()}
        )
        self._active = {}
        for key in self._held_copy:
            site, _, folder = key.rpartition(" ")
            self._judge(site, folder)
