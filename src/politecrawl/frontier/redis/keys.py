"""The shared frontier's keys and wire formats: prefixes and shards, the seen-set's
digests and Bloom positions, entry and robots.txt encodings, the Lua scripts, and the client
(plain or Cluster). See ``frontier.redis`` for the layout."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from importlib import resources
from typing import Any

import orjson
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError

from politecrawl.errors import FrontierError
from politecrawl.frontier import RobotsRecord, UrlEntry

_CRAWL_ID = re.compile(r"[A-Za-z0-9._:-]{1,100}")
_MAX_BLOOM_BITS = 2**32  # a Redis string holds at most 512 MiB
DEFAULT_SHARDS = 16  # a crawl's shards (fixed when it starts): see the module docstring
MAX_CONNECTIONS = 256  # per server (per node of a cluster): commands in flight at once
BATCH = 10_000  # URLs per reprioritize/trim script: one script blocks the server meanwhile

SCRIPT_NAMES = (
    "add", "bloom", "lease", "pop", "push", "begin", "release", "renew", "give_back", "finish",
    "drop", "reprioritize", "trim", "save_robots", "dir", "reclaim", "asking_long", "ipmove",
    "ipguest",
)  # fmt: skip
SCRIPTS = (*SCRIPT_NAMES, "release_take")  # what a store loads (release_take: composed below)


def _lua(name: str) -> str:
    lua = resources.files("politecrawl.frontier.redis") / f"{name}.lua"
    return lua.read_text(encoding="utf-8")


# Shared helpers (lib.lua), prepended to every script. ARGV[1] is the key prefix (one shard's);
# KEYS[1] (a key under the same hash tag) only routes the call. Scores computed there are
# written with %.17g, which round-trips a double exactly (Lua's tostring keeps 14 digits).
LIB = _lua("lib")
BODIES = {name: _lua(name) for name in (*SCRIPT_NAMES, "conf")}
# release.lua, then lease.lua's take on the same shard: one round trip ends a turn and leases
# the next key. ARGV: P, the count n of release.lua's own arguments, them, then lease.lua's
# (P omitted). Returns {what release.lua returns, what lease.lua returns}.
BODIES["release_take"] = (
    "local n = tonumber(ARGV[2])\n"
    "local RA, LA = {ARGV[1]}, {ARGV[1]}\n"
    "for i = 3, n + 2 do RA[#RA + 1] = ARGV[i] end\n"
    "for i = n + 3, #ARGV do LA[#LA + 1] = ARGV[i] end\n"
    f"local released = (function()\nlocal ARGV = RA\n{BODIES['release']}\nend)()\n"
    f"local taken = (function()\nlocal ARGV = LA\n{BODIES['lease']}\nend)()\n"
    "return {released, taken}\n"
)


def prefix(crawl_id: str) -> str:
    """The key prefix of one crawl: its hash tag keeps it in one Cluster slot."""
    if not _CRAWL_ID.fullmatch(crawl_id):
        raise FrontierError(
            f"crawl id must be 1-100 characters of A-Z a-z 0-9 . _ : -, got {crawl_id!r}"
        )
    return f"pc:{{{crawl_id}}}:"


def bloom_sizing(expected: int, fp_rate: float) -> tuple[int, int]:
    """Bits and hash count of a Bloom filter for ``expected`` items at ``fp_rate``."""
    n = max(1, expected)
    m = math.ceil(-n * math.log(fp_rate) / math.log(2) ** 2)
    m = max(64, min(m, _MAX_BLOOM_BITS))
    k = max(1, round(m / n * math.log(2)))
    return m, k


def bloom_positions(url: str, m: int, k: int) -> list[int]:
    """k bit positions by double hashing (Kirsch-Mitzenmacher) of one 16-byte digest."""
    d = hashlib.blake2b(url.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    h1 = int.from_bytes(d[:8], "little")
    h2 = int.from_bytes(d[8:], "little") | 1
    return [(h1 + i * h2) % m for i in range(k)]


def url_digest(url: str) -> bytes:
    """What the exact seen-set stores for a URL (see the module docstring for the odds)."""
    return hashlib.blake2b(url.encode("utf-8", "surrogatepass"), digest_size=8).digest()


def entry_json(e: UrlEntry, *, new: bool = False) -> str:
    """A queued URL's metadata. ``new``: queued by ``add`` (it passed the seen test, so it was
    never fetched in this crawl and has no validators); a URL pushed back is not."""
    d: dict[str, Any] = {
        "k": e.key,
        "d": e.depth,
        "h": e.hops,
        "a": e.attempt,
        "n": float(e.not_before),
        "t": e.kind,
    }
    if new:
        d["f"] = 1
    d["p"] = float(e.priority)  # last: reprioritize.lua rewrites it in place
    if math.isfinite(d["p"]) and math.isfinite(d["n"]):
        return orjson.dumps(d).decode()  # (the same text as json's, in a fifth of the time)
    return json.dumps(d, separators=(",", ":"))  # (orjson writes an infinity as null)


def entry_from(url: str, meta: bytes, refetch: bool) -> tuple[UrlEntry, bool]:
    """The entry, and whether it is new (see ``entry_json``; a re-fetch is not)."""
    d = loads(meta[16:])
    e = UrlEntry(url, d["k"], d["d"], d["h"], d["a"], d["n"], d["p"], d["t"], refetch=refetch)
    return e, "f" in d and not refetch


def loads(data: bytes | str) -> Any:
    """JSON this module wrote: orjson's reading, or json's where a number is infinite."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def pack_robots(r: RobotsRecord) -> bytes:
    head = {
        "fetched_at": r.fetched_at,
        "status": r.status,
        "failing_since": r.failing_since,
        "body": len(r.body),
        "good": -1 if r.good_body is None else len(r.good_body),
        "failures": r.failures,
        "redirect_to": r.redirect_to,
        "hops": r.hops,
    }
    return json.dumps(head).encode() + b"\n" + r.body + (r.good_body or b"")


def unpack_robots(origin: str, data: bytes) -> RobotsRecord:
    head_raw, _, rest = data.partition(b"\n")
    head = json.loads(head_raw)
    n = head["body"]
    good = None if head["good"] < 0 else rest[n : n + head["good"]]
    return RobotsRecord(
        origin,
        head["fetched_at"],
        head["status"],
        rest[:n],
        head["failing_since"],
        good,
        head.get("failures", 0),
        head.get("redirect_to", ""),
        head.get("hops", 0),
    )


def fnum(x: float) -> str:
    """A float as Redis reads it back exactly."""
    return repr(float(x))


def text(v: bytes | str) -> str:
    return v.decode() if isinstance(v, bytes) else v


Client = Any  # redis.asyncio.Redis, or redis.asyncio.RedisCluster on a cluster


_OWN_PARAMS = ("shards", "lease_ttl")


def split_url(url: str) -> tuple[str, dict[str, str]]:
    """The server URL and this crawler's own settings in its query (``?shards=64&lease_ttl=20``,
    which the Redis client would refuse)."""
    base, sep, query = url.partition("?")
    if not sep:
        return url, {}
    own: dict[str, str] = {}
    rest = []
    for part in query.split("&"):
        name, _, value = part.partition("=")
        if name in _OWN_PARAMS:
            own[name] = value
        elif part:
            rest.append(part)
    return (base + "?" + "&".join(rest) if rest else base), own


async def connect(url: str) -> Client:
    """A client for ``url``: a ``RedisCluster`` when the named server runs in cluster mode
    (any node will do: the others are found from it), else a plain one."""
    url = split_url(url.replace("valkey://", "redis://", 1))[0]
    # one connection per command in flight; redis-py 8 fails a command beyond 100 of them
    # ("Too many connections"): a crawl's turns wait for a free one instead
    # a command whose connection broke is sent again on a new one while the server restarts
    # (as the batcher's calls are: ``batch.RECONNECT_WAITS_S``); redis-py's default retried
    # too little for a restart, and every worker stopped on a 0.5 s one
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=MAX_CONNECTIONS,
        timeout=None,
        retry=Retry(ExponentialBackoff(cap=8.0, base=0.2), 7),
        retry_on_error=[RedisConnectionError],
    )
    r: aioredis.Redis = aioredis.Redis.from_pool(pool)
    try:
        info = await r.info("cluster")
    except (RedisError, OSError) as exc:
        await r.aclose()
        raise FrontierError(f"cannot reach the frontier at {url}: {exc}") from exc
    if not int(info.get("cluster_enabled", 0) or 0):
        return r
    await r.aclose()
    # (the cluster client has no waiting pool: per node, a bound no crawl's turns reach)
    cluster = aioredis.RedisCluster.from_url(url, max_connections=10_000)
    try:
        await cluster.initialize()
    except (RedisError, OSError) as exc:
        await cluster.aclose()
        raise FrontierError(f"cannot use the cluster at {url}: {exc}") from exc
    return cluster


def shard_index(name: str, n: int) -> int:
    """Which of ``n`` shards a politeness key, IP, origin or URL hashes to."""
    d = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(d, "little") % n


def shard_prefix(crawl_id: str, shard: int) -> str:
    """The key prefix of one shard of a crawl: its own hash tag, hence its own slot."""
    prefix(crawl_id)  # validates the id
    return f"pc:{{{crawl_id}:{shard}}}:"


class Script:
    """One Lua script, run by EVALSHA (loaded by EVAL on a node that lacks it)."""

    def __init__(self, body: str) -> None:
        self.body = body
        self.sha = hashlib.sha1(body.encode()).hexdigest()

    async def __call__(self, r: Client, p: str, args: Sequence[Any]) -> Any:
        try:
            return await r.evalsha(self.sha, 1, p + "box", p, *args)
        except NoScriptError:
            return await r.eval(self.body, 1, p + "box", p, *args)
