"""Every part of a shared crawl carries a mark; a part that lost it lost its data.

A crawl's keys live in ``shards + 1`` slots: each shard's (``pc:{CRAWL_ID:S}:``) and the
crawl's own (``pc:{CRAWL_ID}:``: ``conf``, ``counters``, ``scope``). On a Cluster those slots
sit on different nodes, and a node that restarts without its data (no persistence, or
flushed) empties only its own: the others, and the crawl's ``conf``, are still there. So the
crawl's presence cannot be told from one key: every part carries a mark of its own.

- The crawl's ``epoch``, a random token, is written in its ``conf`` when the crawl is created
  (an older crawl gets one the first time a worker of this version opens it).
- Each shard's ``P mark`` holds that epoch. The marks are written once, by the first worker,
  before ``conf`` says ``marked``; from then on nothing writes them again, so a shard found
  without its mark (or with another crawl's epoch) was lost since. A ``conf`` whose epoch is
  not the marks' was lost and made again.
- Checked: by every worker when it opens the crawl (``RedisStore.ensure``); by every shard
  script (``GUARD``, prepended to each: one ``EXISTS`` in the server, no round trip), so
  nothing is ever written into a lost shard, which ends the worker at once; after every
  reconnect, before anything is sent again (``Batcher``), and with a batch every
  ``CHECK_EVERY_S`` (the crawl's own slot has no script to guard it); and by ``status``.

What was in a lost shard (its sites' queued URLs, their states, their seen-set entries) is
not known anywhere else, so the crawl cannot name those URLs: the worker stops with one line
naming the shards and their nodes, exit 1, and says how to go on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

# the error a shard script replies when its shard has no mark (its data was lost)
LOST = "PCLOST"
# every shard script starts with this (after lib.lua, which sets P): nothing is read from or
# written into a shard that lost its data
GUARD = (
    "if redis.call('EXISTS', P .. 'mark') == 0 then "
    f"return redis.error_reply('{LOST} ' .. P) end\n"
)
# a batch carries the marks' check at most this often (it costs no round trip of its own)
CHECK_EVERY_S = 5.0


def mark_key(shard_prefix: str) -> str:
    return shard_prefix + "mark"


def is_lost_reply(reply: object) -> bool:
    """Whether a script's error reply says its shard had no mark."""
    return isinstance(reply, Exception) and str(reply).startswith(LOST)


def check_calls(global_prefix: str, shard_prefixes: Sequence[str]) -> list[tuple[Any, ...]]:
    """The commands whose replies say whether every part of the crawl is still there."""
    return [("HGET", global_prefix + "conf", "epoch")] + [
        ("GET", mark_key(p)) for p in shard_prefixes
    ]


def _text(x: object) -> str | None:
    if x is None:
        return None
    return x.decode() if isinstance(x, bytes) else str(x)


def lost_parts(epoch: str, replies: Sequence[Any]) -> tuple[bool, list[int]]:
    """From ``check_calls``' replies and the epoch this worker read from ``conf``: whether
    the crawl's own slot (``conf``) was lost, and which shards were. Marks that agree on
    another epoch than ``conf``'s outvote it: that ``conf`` was lost and made again."""
    marks = [_text(m) for m in replies[1:]]
    held = Counter(m for m in marks if m is not None)
    real = epoch if epoch in held or not held else held.most_common(1)[0][0]
    conf_lost = _text(replies[0]) != real
    return conf_lost, [i for i, m in enumerate(marks) if m != real]


def _ranges(shards: Sequence[int]) -> str:
    parts: list[str] = []
    for s in shards:
        if parts and parts[-1].rpartition("-")[2] == str(s - 1):
            parts[-1] = f"{parts[-1].partition('-')[0]}-{s}"
        else:
            parts.append(str(s))
    return ", ".join(parts)


def lost_message(
    crawl_id: str,
    url: str,
    n_shards: int,
    conf_lost: bool,
    shards: Sequence[int],
    node_of: Callable[[int | None], str | None],
) -> str | None:
    """The one line a worker stops with when parts of the crawl were lost (None: none was).
    ``node_of(shard)`` names the node serving a shard's slot (None: the crawl's own slot), or
    None on a single server."""
    if not conf_lost and not shards:
        return None
    if conf_lost and len(shards) == n_shards:  # everything: a server that came back empty
        return (
            f"crawl {crawl_id!r} is gone from the frontier at {url}: the server came back "
            "without its data (restarted without persistence, or flushed), so its queue and "
            "seen-set are lost; this worker stops. Keep Redis's data (appendonly yes) and "
            "start the crawl again (politecrawl seed)"
        )
    what = []
    if shards:
        what.append(f"shard{'s' * (len(shards) > 1)} {_ranges(shards)} of {n_shards}")
    if conf_lost:
        what.append("its settings and counters (conf)")
    nodes = sorted({n for n in [*map(node_of, shards), *([node_of(None)] * conf_lost)] if n})
    where = f" (node {', '.join(nodes)})" if nodes else ""
    return (
        f"crawl {crawl_id!r} lost part of its frontier at {url}: {' and '.join(what)}{where} "
        "came back without their data (a node restarted without persistence, or flushed). "
        "The URLs queued there, their sites' states and seen-set entries are gone, and which "
        "URLs they were cannot be known; this worker stops, as every worker of the crawl "
        "will. Keep every node's data (appendonly yes); to go on, start the crawl again "
        "under a new --crawl-id (politecrawl seed); the pages fetched so far stay in each "
        "worker's --out"
    )
