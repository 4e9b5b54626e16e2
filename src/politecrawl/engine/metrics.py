"""``--metrics HOST:PORT``: the crawl as Prometheus sees it, through ``prometheus_client``.

What is exported (docs/metrics.md has the scrape config and the queries)::

    politecrawl_requests_total{outcome}          every request, robots.txt included, by the
                                                 request log's outcome (``stored``,
                                                 ``redirect``, ``retry``, ``dropped:REASON``..)
    politecrawl_pages_total                      page requests answered (robots.txt and
                                                 sitemaps not counted)
    politecrawl_pages_stored_total               pages stored
    politecrawl_bytes_total                      bytes received
    politecrawl_robots_fetches_total             robots.txt requests
    politecrawl_retries_total                    URLs put back to try again
    politecrawl_queued_urls                      URLs in the frontier
    politecrawl_sites{state}                     ready, waiting, in_flight, penalty_box, parked
    politecrawl_response_seconds                 response time (histogram)
    politecrawl_politeness_delay_seconds         the delay applied before a site's next
                                                 request (histogram)

Counters and histograms move where the request log is written (``journal.log_request``: one
call per request, so ``politecrawl_requests_total`` is the log's line count); the gauges are
set once a second from the frontier's own counts (``Crawler._flush``). Recording costs a few
microseconds per request; nothing is computed at scrape time.

With ``--processes N`` the partitions write through prometheus_client's multiprocess mode
(``PROMETHEUS_MULTIPROC_DIR``, set by the supervisor before it forks them) and the
supervisor alone serves the sum (``serve_partitions``): one endpoint for the whole crawl.
The endpoint binds to loopback unless an address is given.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from politecrawl.config import parse_metrics_address
from politecrawl.errors import ConfigError

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["SITE_STATES", "Metrics", "before_partitions", "serve", "serve_partitions"]

SITE_STATES = ("ready", "waiting", "in_flight", "penalty_box", "parked")
# response times, seconds: a fast local server to a slow far one
_TIME_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# politeness delays, seconds: --min-delay 0 (tests) to parked-for-an-hour backoffs
_DELAY_BUCKETS = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 900.0, 3600.0)


def outcome_label(outcome: str) -> str:
    """A request log outcome as a label of bounded cardinality: ``duplicate:URL`` is
    ``duplicate``, and at most two parts are kept (``dropped:noindex``, ``stored:sitemap``)."""
    if outcome.startswith("duplicate:"):
        return "duplicate"
    return ":".join(outcome.split(":", 2)[:2])


class Metrics:
    """The crawl's metrics in ``registry`` (a new one unless given)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "politecrawl_requests", "Requests made, robots.txt included, by outcome",
            ["outcome"], registry=r,
        )  # fmt: skip
        self.pages = Counter("politecrawl_pages", "Page requests answered", registry=r)
        self.stored = Counter("politecrawl_pages_stored", "Pages stored", registry=r)
        self.bytes = Counter("politecrawl_bytes", "Bytes received", registry=r)
        self.robots = Counter("politecrawl_robots_fetches", "robots.txt requests", registry=r)
        self.retries = Counter("politecrawl_retries", "URLs put back to retry", registry=r)
        self.queued = Gauge(
            "politecrawl_queued_urls", "URLs in the frontier",
            registry=r, multiprocess_mode="livesum",
        )  # fmt: skip
        self.sites = Gauge(
            "politecrawl_sites", "Sites by state", ["state"],
            registry=r, multiprocess_mode="livesum",
        )  # fmt: skip
        self.response_s = Histogram(
            "politecrawl_response_seconds", "Response time", buckets=_TIME_BUCKETS, registry=r
        )
        self.delay_s = Histogram(
            "politecrawl_politeness_delay_seconds",
            "Delay applied before the site's next request",
            buckets=_DELAY_BUCKETS,
            registry=r,
        )
        for state in SITE_STATES:
            self.sites.labels(state)
        self._penalty: set[str] = set()  # sites slowed by the site itself, at their last turn

    def request(
        self, outcome: str, *, robots: bool, page: bool, nbytes: int, duration_s: float,
        delay_s: float,
    ) -> None:  # fmt: skip
        """One request, as the request log records it."""
        self.requests.labels(outcome_label(outcome)).inc()
        if robots:
            self.robots.inc()
        elif page:
            self.pages.inc()
        if outcome.startswith("stored") and not outcome.startswith("stored:sitemap"):
            self.stored.inc()
        elif outcome.startswith("retry"):
            self.retries.inc()
        self.bytes.inc(nbytes)
        if duration_s > 0:
            self.response_s.observe(duration_s)
        self.delay_s.observe(delay_s)

    def site(self, key: str, *, penalty: bool) -> None:
        """A site's turn is over: whether it is in the penalty box now (``politeness``)."""
        if penalty:
            self._penalty.add(key)
        else:
            self._penalty.discard(key)

    def frontier(self, stats: dict[str, int]) -> None:
        """The frontier's counts (``store.stats()``), once a second; the penalty box is this
        process's sites slowed at their last turn (of the waiting ones)."""
        self.queued.set(stats.get("queued", 0))
        ready = stats.get("ready", 0)
        penalty = len(self._penalty)
        waiting = max(0, stats.get("hosts_waiting", 0) - ready - penalty)
        values = {
            "ready": ready,
            "waiting": waiting,
            "in_flight": stats.get("in_flight", 0),
            "penalty_box": penalty,
            "parked": stats.get("parked", 0),
        }
        for state, value in values.items():
            self.sites.labels(state).set(value)


def check_address(address: str) -> None:
    """ConfigError unless ``address`` can be listened on (checked before a fork)."""
    import socket

    host, port = parse_metrics_address(address)
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.create_server((host, port), family=family):
            pass
    except OSError as exc:
        raise ConfigError(f"--metrics {address}: cannot listen: {exc}") from exc


def serve(address: str, registry: CollectorRegistry) -> Any:
    """Serve ``/metrics`` at ``address`` (``HOST:PORT``) from a thread; returns the server
    (``.server_address``, ``.shutdown()``). A port taken is a ConfigError (exit 2)."""
    from prometheus_client import start_http_server

    host, port = parse_metrics_address(address)
    try:
        server, _thread = start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        raise ConfigError(f"--metrics {address}: cannot listen: {exc}") from exc
    return server


def before_partitions(folder: str) -> None:
    """The supervisor of ``--processes N``, before it forks the partitions: their metrics go
    to files in ``folder`` (prometheus_client picks its value store when first imported)."""
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder
    import prometheus_client.values

    if "MultiProcess" not in prometheus_client.values.ValueClass.__name__:
        # imported before, in single-process mode: reload it to the multiprocess store
        prometheus_client.values.ValueClass = prometheus_client.values.get_value_class()  # type: ignore[no-untyped-call]


def serve_partitions(address: str, folder: str) -> Any:
    """The partitions' metrics, summed, from the files they write in ``folder``."""
    from prometheus_client import CollectorRegistry, multiprocess

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=folder)  # type: ignore[no-untyped-call]
    return serve(address, registry)
