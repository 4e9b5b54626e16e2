"""The URLs queued in each section, so a relevant page can raise its siblings at once.

A section is a folder and a file-name stem (``prioritizer.section_of``: ``sql-select.html`` and
``sql-truncate.html`` are both in ``sql``); documentation and many sites keep a chapter's pages
together, and the prioritiser learns each section's harvest. Without this index the queued
siblings of a relevant page kept the priority they were queued with until the next re-scoring
of the whole queue (after a quarter of the pages learned so far): a page at a time, the crawl
went on with what it believed before. Real crawls, harvest at 300 fetches, index off -> on:
fifth 0.117 -> 0.134 (four runs a topic), second 0.088 -> 0.099, admin 0.142 -> 0.140 (two);
measured again later, fifth 0.129 -> 0.132 (eight runs each, alternated). The replay
(``bench/focus_sim.py``) that chose it gave the learner the text around links, which the
crawl does not use; replaying the crawl's own learner, fifth 0.117 -> 0.110, second 0.093 ->
0.097 (docs/focus.md, sections 9 and 10).

Raising only the first three hits of a section, or only when the section's harvest moved by
0.05, lost the gain on ``fifth`` in that replay: the tail of a big chapter is where it paid.
The cost is bounded instead: a section with more than ``max_queued`` URLs queued (a forum's
``view?id=``, all one section) is left to the periodic re-scoring, and the index, which only
grows as links are queued (a stale entry is dropped when its section is next read), is rebuilt
from the live URLs once it holds twice as many entries as there are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

__all__ = ["SectionIndex"]


class SectionIndex:
    """Section -> URLs queued in it (entries of URLs since fetched or forgotten linger until
    their section is read, or the next rebuild)."""

    def __init__(self, max_queued: int = 1_000) -> None:
        self.max_queued = max_queued
        self._urls: dict[str, str | list[str]] = {}  # a lone URL as itself
        self._entries = 0

    def __len__(self) -> int:
        return self._entries

    def add(self, section: str, url: str) -> None:
        urls = self._urls.get(section)
        if urls is None:  # a lone URL as itself (a numbered site: a stem a page): 38 B, not 102
            self._urls[section] = url
        elif isinstance(urls, str):
            self._urls[section] = [urls, url]
        else:
            urls.append(url)
        self._entries += 1

    def queued(self, section: str, alive: Callable[[str], bool]) -> list[str]:
        """The URLs of ``section`` for which ``alive`` holds (stale ones are dropped); none if
        more than ``max_queued`` are alive."""
        urls = self._urls.get(section)
        if urls is None:
            return []
        if isinstance(urls, str):
            urls = [urls]
        live = [u for u in dict.fromkeys(urls) if alive(u)]
        self._entries -= len(urls) - len(live)
        if live:
            self._urls[section] = live if len(live) > 1 else live[0]
        else:
            del self._urls[section]
        return live if len(live) <= self.max_queued else []

    def rebuild(self, live: Iterable[tuple[str, str]]) -> None:
        """Start again from the live ``(url, section)`` pairs."""
        self._urls.clear()
        self._entries = 0
        for url, section in live:
            self.add(section, url)
