"""What a worker remembers of the crawl's shared seen-set (``RedisStore.unseen``)."""

from __future__ import annotations

from collections.abc import Iterable

# URLs a worker remembers as seen (about 100 bytes each: 20 MB at this bound)
SEEN_CACHE = 200_000


class KnownSeen:
    """URLs this worker knows are in the crawl's seen-set (the server said so, or this
    worker put them there): ``unseen`` need not ask about them again, since nothing is ever
    taken out of the set. A page's links repeat across a site's pages (its menus), so most
    of them are known. Bounded: two generations of at most ``cap / 2`` each; when the newer
    fills, the older is dropped (a URL forgotten is only asked about again)."""

    def __init__(self, cap: int = SEEN_CACHE) -> None:
        self._half = max(1, cap // 2)
        self._new: set[str] = set()
        self._old: set[str] = set()

    def __contains__(self, url: object) -> bool:
        if url in self._new:
            return True
        if url in self._old:
            self.add(url)
            return True
        return False

    def __len__(self) -> int:
        return len(self._new) + len(self._old)

    def add(self, url: str) -> None:
        new = self._new
        new.add(url)
        if len(new) >= self._half:
            self._old, self._new = new, set()

    def update(self, urls: Iterable[str]) -> None:
        for u in urls:
            self.add(u)
