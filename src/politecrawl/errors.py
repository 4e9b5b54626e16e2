"""The one exception tree of politecrawl.

::

    PolitecrawlError
     ├── ConfigError (also ValueError)   bad option, bad seed, bad User-Agent
     │    └── OutputInUse                another live crawl holds the --out folder
     ├── UrlError (also ValueError)      a URL that cannot be crawled
     ├── FetchError                      mapped from aiohttp in one place (fetch)
     │    ├── FetchTimeout
     │    ├── ConnectFailed
     │    ├── AddressRefused             private/loopback target without permission
     │    └── BodyTooLarge
     ├── RobotsError
     ├── FrontierError
     │    └── LeaseLost                  a shared frontier's lease expired under us
     └── StorageError

Outcomes of requests are values (see ``outcome``), never exceptions; these are for
misuse and for the fetch boundary only.
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


class FetchError(PolitecrawlError):
    """A request that produced no usable HTTP response."""

    kind = "network"


class FetchTimeout(FetchError):
    kind = "timeout"


class ConnectFailed(FetchError):
    kind = "connect"


class AddressRefused(FetchError):
    kind = "address_refused"


class BodyTooLarge(FetchError):
    kind = "too_large"


class RobotsError(PolitecrawlError):
    """robots.txt could not be obtained or used."""


class FrontierError(PolitecrawlError):
    """The frontier store failed."""


class LeaseLost(FrontierError):
    """This worker's lease on a key expired (it was frozen or cut off longer than the TTL)."""


class StorageError(PolitecrawlError):
    """WARC or log output failed (disk full, permissions...)."""
