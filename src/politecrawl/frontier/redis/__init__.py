"""The shared frontier: many workers on many machines crawl as one, politeness still global.

``RedisFrontier`` keeps every promise of ``frontier.Frontier`` (checked by the same contract
suite as ``SqliteFrontier``, on one server and on a 3-node Redis Cluster) in Redis (>= 6.2)
or Valkey, one server or a Cluster, so any number of worker processes can share one crawl: a
politeness key is leased to one worker at a time across all of them, and no key is handed
out before the ``next_allowed`` time its last turn gave it. Only plain commands and Lua
``EVAL``/``EVALSHA`` are used (no Redis Functions, no modules), so Redis and Valkey both
work. Every multi-step change is one Lua script (the ``.lua`` files beside this module, each
prefixed with ``lib.lua``) on one shard, hence atomic.

Shards. A crawl is split into ``shards`` shards (16 unless the first worker's frontier URL
says ``?shards=N``; fixed when the crawl starts, stored in its ``conf``). Shard S's keys carry
the hash tag ``{CRAWL_ID:S}``, so each shard is one Cluster slot and the shards spread over
every node (use at least 4 shards per node: slots land on nodes by a hash). A shard holds
whole politeness keys: a key's queue, lease, spacing, seen-set entries and site state live
in one shard, so every step of a turn is one script in one slot, as before sharding. Which
shard holds a key is decided once, by the first ``add`` naming it, and recorded in a
directory (``dir``, itself sharded by the key's hash; first writer wins, so every worker
agrees and caches it): the shard of the key's IP address when it has one (the IP rule is
on), else of the key itself. So all the keys of one server IP share a shard, and the per-IP
rule (one request in flight per IP, its gap, its waiting line) stays inside one atomic
script: no cross-slot protocol and no second lock with its own expiry to get wrong when a
worker dies. The price: one IP's sites are one shard's load, at most one request at a time
plus their queued URLs; a hosting IP with 100,000 sites puts them all in one shard.

Keys (``P`` = ``pc:{CRAWL_ID:S}:``, one set per shard S; ``G`` = ``pc:{CRAWL_ID}:``)
    ``P box``      zset  politeness key -> when it may be leased (the penalty box)
    ``P ready``    zset  due key -> -(priority of its best URL); ``lease`` takes the lowest
    ``P due``      zset  the same keys -> when ``lease`` found each due (``max_wait_s``)
    ``P leases``   zset  leased key -> lease expiry;  ``P owner`` hash key -> lease token
    ``P q:KEY``    zset  the key's queued URLs: score -priority, member TAG+URL
    ``P d:KEY``    zset  the key's URLs waiting for ``not_before`` (retries): score not_before
    ``P f:KEY``    set   the key's URLs in flight (popped, neither finished nor pushed back)
    ``P meta``     hash  queued/in-flight URL -> TAG + JSON (key, depth, hops, attempt,
                         not_before, kind, "new" if queued by ``add``, priority)
    ``P rf``       set   URLs to be handed out marked ``refetch`` (their lease expired)
    ``P worst``    zset  queued URL -> priority: ``trim`` drops from its low end
    ``P seen``     set   8-byte blake2b digests (exact mode), or ``P bloom`` a bitmap
                         (the URLs of the shard's keys)
    ``P hosts``    hash  key -> HostState JSON (``sqlitestore.host_to_json``, the same format)
    ``P parked``   zset  parked key -> parked until (so ``stats`` counts them without a scan)
    ``P ipof``     hash  key -> the IP its requests go to (set by the first ``add`` naming it,
                         moved with its host: ``ipmove.lua``)
    ``P away``     set   keys whose IP's turn-taking lives in another shard (``moves.py``)
    ``P iphold``   hash  IP -> the one key of it leased now (``~KEY``: a guest, a key of
                         another shard, whose hold is a lease here too: ``ipguest.lua``);
                         ``P ipnext`` hash IP -> when it may be asked again (the largest
                         ``HostState.ip_next`` released)
    ``P ipcall``   hash  IP -> the key whose turn is next (called from the IP's line, or
                         the first found due while the IP was free but not yet askable)
    ``P ipq:IP``   zset  keys found due while another held the IP or had its next turn ->
                         when each was found due: first come first served (a key released
                         goes behind them; ``ipw:IP``, a list, was an older version's line);
    ``P waiting``  set   every key in such a line (scheduled only when its IP calls it)
    ``P dir``      hash  politeness key -> its shard (in the shard of hash(key))
    ``P robots``   hash  origin -> packed RobotsRecord;  ``P robots:t`` zset origin -> write
                         tick (in the shard of hash(origin), capped per shard)
    ``P pages``    hash  digest of a stored page's URL -> [ETag, Last-Modified, fetched at]
                         (in the shard of hash(URL); a digest collision only costs a full 200)
    ``P mark``     string the crawl's epoch, written once: a shard without it lost its data
                         (``marks.py``: every shard script checks it first)
    ``P stat``     hash  queued / seen_n / seq;  ``P outcomes`` stream of finished URLs
                         (MAXLEN ~ ``outcome_log_size``); ``P outcome_counts`` hash
    ``G conf``     hash  seen mode, Bloom sizing, shards, epoch (``marks.py``), marked;
                         ``G counters`` hash (HINCRBY);
    ``G scope``    string the crawl's scope and seeds (``factory.shared_scope``)

Cluster. ``connect`` asks the named server ``INFO cluster``; in cluster mode it uses
``redis.asyncio.RedisCluster`` (any node may be named: the others are found from it), else a
plain client. Scripts run by ``EVALSHA`` with one key of their shard as ``KEYS[1]`` (the
route) and the shard's prefix as ``ARGV[1]``; every key a script touches shares that hash
tag (the contract suite proves it on a 3-node cluster with the scripts marked ``#!lua``,
under which Redis refuses any access to a second slot; the shipped scripts carry no such
header, so Redis 6.2 still runs them). Reads across shards (``stats``, ``next_wake``,
``status``) are pipelines that the cluster client splits by node.

Round trips. A worker's turns run at once, each waiting on its own call; the store's
``Batcher`` (``batch.py``) keeps one batch of calls on the wire and sends those made meanwhile
as the next one, over its own connection per server (split by their slots' nodes on a
cluster, packed by hiredis, one deadline per batch): one ``send`` and one wake-up for many
calls, each caller still getting its own reply or error (a batch is not a transaction:
every script stays one atomic step, as alone). Per turn the calls are: the
lease's ``take`` (which also pops the first URL and returns the site's state), ``begin`` before
the request, the page's ``unseen`` (for links this worker does not already know are seen)
and ``add`` (one command or script per shard its links fall in) and ``release`` (with the
turn's finishes). The other reads of a turn (validators, robots.txt copies) go in the
batches too. A URL queued by ``add`` is marked new (it
passed the seen test, so it was never fetched in this crawl): the store answers
``validators`` for it without asking. The connection pool waits for a free connection past
256 (``MAX_CONNECTIONS``) rather than failing.

Choosing a key across shards. ``lease`` first "peeks" at every shard (one script each, run
concurrently: reclaim expired leases, promote due keys, and report the best ready key, its
score, the longest-waiting key's due time and the shard's next time), ranks them by the
crawl-wide rule below, and asks the best shard to lease (``take``: the same script, which
decides again inside the shard; it returns the shard's view after the lease, and the leased
site's state, so ``host`` needs no round trip). Workers (``factory``) reuse a shard's view for
0.05 s (``peek_cache_s``) unless they changed what it may have ready (an ``add`` that gave URLs
to a key not leased, ``push_back``, ``drop_queued``, ``trim``, ``reprioritize``, ``close``; a
``release`` moves the view's next time earlier instead: to the site's next time, or to when
the key it called from its IP's line may go, which ``release.lua`` reports, as
``politeness.released_soonest`` weighs it) or its next time has come; ``next_wake``
answers from the views while all are fresh. Other workers' changes are seen up to that much
later, which only delays a pick; a lease is always decided atomically by the shard. While
every view is fresh and none ranks before the releasing shard's (the key name, a tie-break,
aside), ``release`` runs ``release_take`` (``release.lua`` then ``lease.lua``'s take, one
script): the shard's next key is leased in the same round trip and the next ``lease`` returns
it at once (a key so leased and not yet turned is given back at ``close``, as any held key).

Queue order. Within a key: highest priority first, FIFO among equals. The score is exactly
``-priority`` (any float: random priorities included, no precision lost to packing) and the
member starts with a 16-digit TAG: ties between equal scores are ordered by member, so the tag
is the FIFO sequence: ``10**15 + seq`` for a normal push, ``10**15 - seq`` for ``push_back(...,
front=True)`` (the newest front push first, as in sqlite). URLs whose ``not_before`` is set
wait in ``d:KEY`` and move to ``q:KEY`` once due (at ``pop_url`` or ``lease``).
Between keys: ``lease(now)`` moves every key due by ``now`` from the box into ``ready``,
scored by its best URL, and takes the one holding the highest-priority URL (ties: key name),
unless the longest-waiting ready key has been due for ``max_wait_s``: then that one. Across
shards the same rule ranks the shards' best keys (exact without ``peek_cache_s``).

One server, many names. ``lease`` takes a key only if its IP is not held by another leased
key and its IP's next time has come: a key due while its IP is held joins the IP's line, a
key due before the IP's time goes back to the box at that time. Releasing (or reclaiming)
the key that held the IP schedules the first key of the line; O(1) per key, no scan. A key
whose host moved follows it (``moves.py``): checked after each lease against where its
first URL would connect now, corrected by the address each request connected to; to an
address of another shard it is gated there as a guest, a second script (two slots cannot
be one atomic step; the guest hold is a lease, so a worker dying between the two leaves
nothing held for good).

Leases. ``lease`` ends with one script on one shard: reclaim expired leases (below), promote due
keys, take the best ready key, record it in ``leases`` with expiry ``now + lease_ttl_s`` and a
token unique to this lease. ``pop_url`` and ``release`` act only if the token still holds (a
worker whose lease expired gets ``None`` from ``pop_url`` and its ``release`` cannot schedule
the key a second time: it only pushes the key's box time later if its late request needs that,
and writes its HostState only if nobody leased the key since). Leases are renewed by every
``pop_url`` and ``begin_request`` (each request follows both; ``begin_request`` also saves the
provisional HostState, and raises ``LeaseLost`` instead of letting a request out under a lease
that expired), by ``renew``, and by a heartbeat task every ``lease_ttl_s / 3`` while the worker
holds any lease (``heartbeat=False`` turns it off), so only a dead or frozen worker's leases
expire.

Expiry. Each peek or take of a shard first reclaims its expired leases (every shard is peeked at
least every ``peek_cache_s`` by each worker looking for work): the key's in-flight URLs go back
to its queue in their old place, marked refetch, and the key goes back to the box at ``max(last
next_allowed, now + delay)``, delay being the last saved HostState's ``next_allowed -
last_start`` (or ``reclaim_delay_s`` if it has none): the dead worker may have started a request
just before dying, and ``begin_request`` saved that request's start and provisional next time
before it went out. ``close`` gives back the leases still held the same way. ``release`` re-
queues any URL popped but neither finished nor pushed back.

A worker killed at any point (``kill -9``). Every change it made is a whole script on one
shard, so the state is always one that a live worker could leave: a key it leased stays
leased until the expiry, then the next peek of that shard reclaims it as above (its popped
URLs re-queued as re-fetches: nothing lost, and fetched again only if it had them in flight),
and since its IP hold is part of the same shard's state the reclaim frees the IP with the
same delay. A directory entry written by an ``add`` whose queueing script never ran only
fixes where the key will live; the URLs themselves are added again by whoever re-fetches the
page that linked them (the page's URL was in flight, so it comes back). A worker that loses
its connection gets ``FrontierError`` ("lost the frontier ... this worker stops") and stops
with that one line (exit 1); its leases expire the same way.

Seen-set. Exact: a SET of 8-byte blake2b digests rather than URLs (64 bytes per URL measured on
Redis 7, whatever the URL's length); the chance of any collision among n URLs is about n^2 /
2^65 (1e-7 at 2 million, 3e-4 at 100 million), and a collision only makes a new URL look seen
(skipped), never fetched twice. Bloom: a bitmap of m bits (at most 2^32) with k positions per
URL computed here by double hashing one blake2b digest, tested and set by a script (SETBIT
returns the old bit); the first worker's sizing is stored in ``G conf`` and later workers adopt
it, each shard holding m / shards bits. ``meta`` (queued and in-flight URLs) stays the exact
check, as sqlite's primary key does. A URL's entry lives in its key's shard, so ``add`` tests
and sets it in the same script that queues it. ``unseen`` and ``mark_seen`` find a URL's
shard through its politeness key (``key_of``: the factory passes ``urls.politeness_key`` in
the crawl's mode; with ``--politeness-key ip`` the key is not known before resolving, so
``unseen`` lets every URL through to ``add``, which decides). A URL marked seen before its
key had a shard is remembered in the key's own hash shard: if the key is later placed by its
IP elsewhere, that URL may be looked at once more by the gate (which refuses it again).
``unseen``, ``mark_seen`` and ``add`` are one command or script per shard touched (per page),
sent together. Nothing is ever taken out of the seen-set, so a worker remembers the URLs it
knows are in it (the server said so, or this worker added or marked them; ``KnownSeen`` in
``known.py``, bounded) and ``unseen`` asks only about the others: a page's links repeat
across a site's pages (menus), and most are known.

Memory stays bounded by the work left: a queued URL costs about 690 bytes (measured by
``bench/cluster.py``, 60-70-char URLs: the URL is stored three times, as ``meta`` field, queue
member and ``worst`` member; keying them by digest is the next saving if queues grow to tens of
millions), freed when the URL is finished; finished URLs leave only their seen-set entry, one
``outcome_counts`` increment and a stream entry that ``XADD MAXLEN ~`` trims. robots.txt copies
are capped at ``robots_cache_size`` origins, evicting the least recently written (an origin in
use is written again at least every robots TTL).

Durability is Redis's: ``flush`` has nothing to do. ``appendonly yes`` with ``appendfsync
everysec`` loses about the last second, like sqlite's commit cadence, and since every change
is one atomic script what survives is a prefix of what happened.

Clocks: ``now`` comes from each worker (``time.time()``), so machines must be NTP-synced;
a skew of s seconds can shorten a site's delay by s.

Command line (wired by the crawler/CLI, see ``factory.make_frontier``):
``crawl --frontier redis://...`` runs one worker on that shared frontier (``--out`` keeps
the worker's own logs and WARCs); ``worker --frontier URL`` the same without seeds;
``seed --frontier URL FILE`` passes seeds through a Crawler's admission gate (scope,
never-crawl list, extension filter...) into the shared queue; ``status --frontier URL``
prints ``await status(url, crawl_id)``.
"""

from __future__ import annotations

from politecrawl.errors import LeaseLost
from politecrawl.frontier.redis.frontier import RedisFrontier
from politecrawl.frontier.redis.keys import (
    DEFAULT_SHARDS,
    bloom_positions,
    bloom_sizing,
    connect,
    prefix,
    shard_index,
    shard_prefix,
    split_url,
    url_digest,
)
from politecrawl.frontier.redis.store import RedisStore, status

__all__ = [
    "DEFAULT_SHARDS",
    "LeaseLost",
    "RedisFrontier",
    "RedisStore",
    "bloom_positions",
    "bloom_sizing",
    "connect",
    "prefix",
    "shard_index",
    "shard_prefix",
    "split_url",
    "status",
    "url_digest",
]
