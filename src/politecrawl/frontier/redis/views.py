"""What each shard of the shared frontier last reported (a lease script's "view"), reused for
``peek_cache_s`` unless this worker changed that shard, and the crawl-wide order over them:
the longest-overdue key first, then the best URL, with the budget policy (``--defer-ratio``)
applied across every shard. ``RedisFrontier`` asks the shards; this decides from what they
said."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from redis.exceptions import RedisError

from politecrawl.frontier import not_worth_it
from politecrawl.frontier.redis.keys import fnum, text
from politecrawl.frontier.redis.store import RedisStore

# (best ready key or None, its score, the longest-waiting key's due time, the shard's next
# time (box or lease expiry), the best score over the keys that can be asked now or soon:
# ready, or in ``soon``). Scores are -priority: lower is better.
View = tuple[str | None, float, float | None, float | None, float | None]


class ShardViews:
    """The views of ``store``'s shards (its ``touch``: per shard, the changes this worker
    made there, which make a cached view stale)."""

    def __init__(
        self, store: RedisStore, peek_cache_s: float, max_wait_s: float, defer_ratio: float
    ) -> None:
        self.store = store
        self.peek_cache_s = peek_cache_s
        self.max_wait_s = max_wait_s
        self.defer_ratio = defer_ratio
        self.cached: dict[int, tuple[float, int, View]] = {}  # shard -> (at, touch, view)

    def remember(self, s: int, peek: Sequence[Any]) -> View:
        """A shard's view as a peek (or the end of a take) reported it; cached."""
        _, key, score, oldest, box, leases, soon = peek
        times = [float(t) for t in (box, leases) if t is not None]
        refs = [float(x) for x in (score, soon) if x is not None]
        view = (
            None if key is None else text(key),
            0.0 if score is None else float(score),
            None if oldest is None else float(oldest),
            min(times) if times else None,
            min(refs) if refs else None,
        )
        self.cached[s] = (time.monotonic(), self.store.touch[s], view)
        return view

    def fresh(self, s: int, mono: float) -> View | None:
        """Shard ``s``'s view if it may be reused now (None: ask the shard)."""
        c = self.cached.get(s)
        if c is None or c[1] != self.store.touch[s] or mono - c[0] >= self.peek_cache_s:
            return None
        return c[2]

    def all_fresh(self) -> list[View] | None:
        """Every shard's view, if each may be reused now."""
        if self.peek_cache_s <= 0:
            return None
        mono = time.monotonic()
        views = [self.fresh(s, mono) for s in range(self.store.shards)]
        return None if any(v is None for v in views) else [v for v in views if v is not None]

    async def next_wake(self, cached: tuple[float, int, float | None] | None) -> float | None:
        """0 if a key is due; else the earliest box time or lease expiry (a lease held
        anywhere may bring URLs back), or None when the crawl has nothing left anywhere.
        With ``peek_cache_s``, what a ``lease`` that found nothing just saw (``cached``: when,
        the store's call count then, what it found) is reused."""
        store = self.store
        await store.ensure()
        if (
            cached is not None
            and cached[1] == store.calls
            and time.monotonic() - cached[0] < self.peek_cache_s
            and cached[2] is not None  # "nothing left" is always asked of the shards
        ):
            return cached[2]
        fresh = self.all_fresh()
        if fresh is not None:  # every shard peeked just now: no round trip
            if any(v[0] is not None for v in fresh):
                return 0.0
            soon = [v[3] for v in fresh if v[3] is not None]
            if soon:
                return float(min(soon))
        try:
            pipe = store.r.pipeline(transaction=False)
            for p in store.sp:
                pipe.zcard(p + "ready")
                pipe.zrange(p + "box", 0, 0, withscores=True)
                pipe.zrange(p + "leases", 0, 0, withscores=True)
            res = await pipe.execute()
        except RedisError as exc:
            raise store.fail("next_wake", exc) from exc
        times: list[float] = []
        for i in range(0, len(res), 3):
            n_ready, box, leases = res[i : i + 3]
            if n_ready:
                return 0.0
            times += [float(sc) for _, sc in (*box, *leases)]
        return min(times) if times else None

    def released(self, shard: int, soonest: float) -> None:
        """A key of ``shard`` (or the next one of its IP) is back in the box from ``soonest``."""
        cached = self.cached.get(shard)
        if cached is not None:
            at, touch, (top, score, oldest, nxt, ref) = cached
            nxt = soonest if nxt is None else min(nxt, soonest)
            self.cached[shard] = (at, touch, (top, score, oldest, nxt, ref))

    def best(self, views: Iterable[View]) -> float | None:
        """The best priority over every shard's keys that can be asked now or soon (see
        ``soon`` in lib.lua): the budget policy's reference (``not_worth_it``)."""
        refs = [v[4] for v in views if v[4] is not None]
        return -min(refs) if refs else None

    def floor(self, best: float | None) -> str:
        """The lease script's floor for ``best`` (a take decides again, in the shard): the
        score above which, and not above 0, a ready key is not worth a request now."""
        if not self.defer_ratio or best is None or best <= 0:
            return ""
        return fnum(-self.defer_ratio * best)

    def deferred(self, view: View, now: float, best: float | None) -> bool:
        """Whether the view's ready key is not worth a request now (``not_worth_it`` against
        ``best``), unless it is overdue (``max_wait_s``)."""
        if view[0] is None or self._overdue(view, now):
            return False
        return not_worth_it(-view[1], best, self.defer_ratio)

    def ranked(
        self, views: dict[int, View], now: float, best: float | None
    ) -> tuple[list[int], bool]:
        """The shards to ask to lease, best first (longest-overdue, then best URL, then the
        key), and whether a ready key was deferred."""
        ranked: list[tuple[tuple[int, float, float], str, int]] = []
        deferred = False
        for s, view in views.items():
            if view[0] is None:
                continue
            if self.deferred(view, now, best):
                deferred = True
                continue
            ranked.append((self._rank(view, now), view[0], s))
        return [r[-1] for r in sorted(ranked)], deferred

    def take_after(self, shard: int, now: float) -> str | None:
        """Whether a release on ``shard`` should lease that shard's best key in the same
        script: only while every shard's view is fresh (as ``lease`` would reuse it), the
        shard's best key is not deferred, and none ranks before it (longest-overdue, then
        best URL; the key name, which only breaks ties, is not weighed: so a tie goes to the
        shard at hand). The take's floor (``floor``) if so, else None."""
        views = self.all_fresh()
        if views is None:
            return None
        if any(key is None and nxt is not None and nxt <= now for key, _, _, nxt, _ in views):
            return None  # a shard's next time has come: lease would ask it
        best = self.best(views)
        order, _ = self.ranked(dict(enumerate(views)), now, best)
        if shard not in order:
            return None
        mine = self._rank(views[shard], now)
        if any(self._rank(views[s], now) < mine for s in order):
            return None
        return self.floor(best)

    def _overdue(self, view: View, now: float) -> bool:
        oldest = view[2]
        return oldest is not None and oldest <= now - self.max_wait_s

    def _rank(self, view: View, now: float) -> tuple[int, float, float]:
        oldest, score = view[2], view[1]
        if oldest is not None and self._overdue(view, now):
            return (0, oldest, score)
        return (1, 0.0, score)
