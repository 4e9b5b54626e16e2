"""The one exception tree of politecrawl.

::

    PolitecrawlError
     ├── ConfigError (also ValueError)   bad option, bad seed, bad User-Agent
     │    └── OutputInUse                another live crawl holds the --out folder
     ├── UrlError (also ValueError)      a URL that cannot be crawled
     │    └── SeedError (also ConfigError) a seed that is not one (the user's mistake)
     ├── FetchError                      inside the fetch boundary only (fetch): mapped there
     │    ├── AddressRefused             private/loopback target without permission
     │    ├── fetch.InvalidTarget        a URL aiohttp cannot request
     │    ├── body.BrokenTransferCoding  a chunk-size line that is not hex
     │    ├── body.TooSlow               a body slower than --min-rate
     │    ├── coding.BadContentCoding    (also ValueError) a body its Content-Encoding can't undo
     │    └── resolver.Refused           (also OSError) raised inside aiohttp's resolver call
     ├── FrontierError                   the frontier's store failed (state.sqlite, Redis)
     │    ├── LeaseLost                  a shared frontier's lease expired under us
     │    └── batch.ConnectionLost       (also redis' ConnectionError/TimeoutError)
     ├── StorageError                    WARC, logs, continuity.sqlite, focus.json
     ├── StateError (also ValueError)    a saved model or state row this version cannot read
     ├── HandlerError (also TypeError)   a page handler that yields something not a dict
     ├── workpool.WorkerDied             a worker process ended with pages in hand
     └── (private: sitemaps.parse's expat stops, demo.lean's bad request, options' bad value)

A leaf may also be the stdlib type its callers (or a library's) catch, as aiohttp's are.

Outcomes of requests are values (see ``outcome``), never exceptions: a timeout, a refused
connection or an oversized body is a ``FetchResult.error`` string that ``outcome.classify``
reads, so no exception class stands for them. These are for misuse, for stores that fail,
and for the fetch boundary, which turns its own into ``FetchResult`` values.
"""

from __future__ import annotations


class PolitecrawlError(Exception):
    """Root of every error politecrawl raises."""


class ConfigError(PolitecrawlError, ValueError):
    """A setting, seed or User-Agent the crawler refuses to run with."""


class OutputInUse(ConfigError):
    """The output folder is locked by another live crawl or worker (``outlock``)."""


class UrlError(PolitecrawlError, ValueError):
    """A URL that cannot be crawled (bad syntax, scheme, host or port)."""


class SeedError(ConfigError, UrlError):
    """A seed that is not a crawlable URL: the user's mistake, about a URL."""


class FetchError(PolitecrawlError):
    """A request that produced no usable HTTP response."""

    kind = "network"


class AddressRefused(FetchError):
    kind = "address_refused"


class FrontierError(PolitecrawlError):
    """The frontier store failed."""


class LeaseLost(FrontierError):
    """This worker's lease on a key expired (it was frozen or cut off longer than the TTL)."""


class StorageError(PolitecrawlError):
    """WARC or log output failed (disk full, permissions...)."""


class StateError(PolitecrawlError, ValueError):
    """A saved state (a model, a continuity row) from another version, or damaged: the
    caller starts that part afresh (it catches ``ValueError``, as for bad JSON). Not a
    ``StorageError``: nothing failed to write, and the crawl does not stop for it."""


class HandlerError(PolitecrawlError, TypeError):
    """A page handler broke its contract (it must yield dicts)."""
