"""Three crawler workers share one Redis frontier: one crawl, politeness still global.

The workers are three ``Crawler`` objects in one event loop, each with its own out dir, all
on one crawl id, each given its (recording) frontier through ``Crawler(frontier=...)``. The
test web's own access log is the
judge: no two requests to a host closer than the delay or overlapping, across workers; no URL
fetched twice; every page a single worker reaches is reached. The crash test kills one worker
mid-crawl (no release, no finish, its heartbeat stops): its leases expire after 2 s, the
others take its sites back and re-fetch what it had in flight.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conftest import DELAY, crawl_config
from redis_server import redis_url  # noqa: F401  (fixture)

from politecrawl import Crawler
from politecrawl.demo.accesslog import AccessEntry, politeness_violations
from politecrawl.demo.web import TestWeb
from politecrawl.frontier import UrlEntry
from politecrawl.frontier.redis import RedisFrontier, RedisStore, status
from politecrawl.polite.politeness import HostState
from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

WEB = {"n_hosts": 8, "pages_per_host": 6, "seed": 3}
# The delay is the floor (factor 1, not 30 x response time: seconds, not minutes, a crawl).
# Workers and test server share one event loop, so the server may see a request a while after
# the crawler started it (median 2 ms, p95 20 ms, now and then ~0.1 s). So the frontier's
# spacing is checked exactly on the crawler's clock (the start times every worker hands
# ``begin_request``) at the full FLOOR. The server's log is checked for overlap exactly (one
# request per site at a time) and for gaps with SERVER_SLACK: on a loaded 2-CPU machine its
# handlers started up to 0.16 s late (two CI dry runs, with benchmarks running beside them).
FLOOR = DELAY + 0.1
CRAWL = {"concurrency": 8, "factor": 1.0, "delay": FLOOR}
LEASE_TTL = 2.0
SERVER_SLACK = FLOOR - DELAY / 2  # server-seen gaps down to DELAY / 2 pass; overlap never


class Recording(RedisFrontier):
    """Notes every request start (crawler clock) the worker announces, in one shared list,
    and the URLs it was handed again as re-fetches."""

    def __init__(self, *args: Any, starts: list[tuple[float, str, str]], **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.starts = starts
        self.refetched: list[str] = []

    async def begin_request(self, key: str, state: HostState) -> None:
        await super().begin_request(key, state)
        self.starts.append((state.last_start, key, self.worker_id))

    async def pop_url(self, key: str, now: float) -> UrlEntry | None:
        entry = await super().pop_url(key, now)
        if entry is not None and entry.refetch:
            self.refetched.append(entry.url)
        return entry


def start_gaps(starts: list[tuple[float, str, str]], floor: float) -> list[str]:
    """Request starts of one key, whichever worker made them, closer than ``floor``."""
    by_key: dict[str, list[tuple[float, str]]] = collections.defaultdict(list)
    for t, key, worker in starts:
        by_key[key].append((t, worker))
    bad = []
    for key, ts in by_key.items():
        ts.sort()
        for (t0, a), (t1, b) in itertools.pairwise(ts):
            if t1 - t0 < floor - 1e-6:
                bad.append(f"{key}: {b} started {t1 - t0:.3f} s after {a}")
    return bad


def path_of(url: str) -> tuple[str, str]:
    """(host, path) of a crawled URL, as the access log has it."""
    hostport, _, path = url.split("://", 1)[1].partition("/")
    return hostport.split(":")[0], "/" + path


def reached(log: list[AccessEntry]) -> set[tuple[str, str]]:
    return {(e.host, e.path) for e in log}


@pytest.fixture(scope="module")
def single_worker_reach(tmp_path_factory: pytest.TempPathFactory) -> set[tuple[str, str]]:
    """What one ordinary (SQLite) crawler fetches from the same test web: the ground truth."""
    out = tmp_path_factory.mktemp("single")

    async def crawl() -> set[tuple[str, str]]:
        async with TestWeb(**WEB) as web:
            summary = await Crawler(crawl_config(web, out / "out", **CRAWL)).run()
            assert summary.stopped_by == "done"
            return reached(web.access_log)

    with ThreadPoolExecutor(1) as pool:  # its own event loop, away from the test's
        return pool.submit(asyncio.run, crawl()).result()


def fetched_twice(web: TestWeb, also_ok: set[tuple[str, str]] = frozenset()) -> dict[Any, int]:  # type: ignore[assignment]
    """(host, path) requested more than once, apart from deliberate retries (the same
    exclusions as test_crawl_e2e.test_resume_fetches_nothing_twice)."""
    retried = {h for h, s in web.sites.items() if s.robots_status >= 500}
    # a robots.txt redirect's next hop is kept in the shared store (RobotsRecord.redirect_to),
    # so the worker that gets the site's next turn asks the hop, not /robots.txt again
    seen = collections.Counter(
        (e.host, e.path)
        for e in web.access_log
        if not e.path.startswith(("/status/5", "/status/429"))
        and not (e.path == "/robots.txt" and e.host in retried)
        and (e.host, e.path) not in also_ok
    )
    return {k: v for k, v in seen.items() if v > 1}


async def workers(
    web: TestWeb,
    root: Path,
    url: str,
    crawl_id: str,
    starts: list[tuple[float, str, str]],
    n: int = 3,
) -> list[Crawler]:
    out = []
    for i in range(n):
        frontier = Recording(
            RedisStore(url, crawl_id),
            lease_ttl_s=LEASE_TTL,
            reclaim_delay_s=DELAY,
            worker_id=f"w{i}",
            starts=starts,
        )
        out.append(Crawler(crawl_config(web, root / f"w{i}", **CRAWL), frontier=frontier))
    return out


async def test_three_workers_crawl_as_one(
    redis_url: str,  # noqa: F811
    tmp_path: Path,
    single_worker_reach: set[tuple[str, str]],
) -> None:
    crawl_id = f"w3-{uuid.uuid4().hex[:8]}"
    async with TestWeb(**WEB, access_log_path=str(tmp_path / "access.jsonl")) as web:
        starts: list[tuple[float, str, str]] = []
        crawlers = await workers(web, tmp_path, redis_url, crawl_id, starts)
        summaries = await asyncio.wait_for(asyncio.gather(*(c.run() for c in crawlers)), 60)
        log = web.access_log
        assert all(s.stopped_by == "done" for s in summaries)
        assert start_gaps(starts, FLOOR) == []  # exact, on the crawler's clock: first
        assert politeness_violations(log, FLOOR, tolerance_s=SERVER_SLACK) == []
        assert fetched_twice(web) == {}
        assert single_worker_reach - reached(log) == set()
        # the work was shared, and the shared counters add up
        logs = [read_jsonl(tmp_path / f"w{i}/log/requests.jsonl") for i in range(3)]
        assert all(logs), [len(x) for x in logs]
        ours = collections.Counter(path_of(r["url"]) for x in logs for r in x)
        server = collections.Counter((e.host, e.path) for e in log)
        assert (server - ours, ours - server) == ({}, {})
        st = await status(redis_url, crawl_id)
        assert st["counters"]["requests"] == len(log)
        assert (st["queued"], st["urls_open"], st["leases_held"]) == (0, 0, 0)
        assert st["hosts_waiting"] == 0


class MortalStore(RedisStore):
    """The store of a worker that dies: once ``dead``, every call raises CancelledError."""

    dead = False

    async def ensure(self) -> None:
        if self.dead:
            raise asyncio.CancelledError("worker killed")
        await super().ensure()


class Mortal(Recording):
    """A worker's frontier that dies at its ``die_at``-th pop, mid-crawl: from then on every
    call raises CancelledError (its heartbeat included), so its turns end without finishing
    or releasing anything, exactly as if the process had been killed. (A third of some 230
    turns are its: it always gets that far.)"""

    die_at = 8

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.victim: UrlEntry | None = None
        self.on_death: Callable[[], None] = lambda: None
        self._pops = 0

    @property
    def dead(self) -> bool:
        return self.store.dead  # type: ignore[attr-defined, no-any-return]

    @dead.setter
    def dead(self, value: bool) -> None:
        self.store.dead = value  # type: ignore[attr-defined]

    async def pop_url(self, key: str, now: float) -> UrlEntry | None:
        entry = await super().pop_url(key, now)
        if entry is not None and self.victim is None:
            self._pops += 1
            if self._pops >= self.die_at:
                self.victim, self.dead = entry, True
                self.on_death()
        return entry


async def test_a_dead_worker_loses_nothing(
    redis_url: str,  # noqa: F811
    tmp_path: Path,
    single_worker_reach: set[tuple[str, str]],
) -> None:
    crawl_id = f"crash-{uuid.uuid4().hex[:8]}"
    async with TestWeb(**WEB, access_log_path=str(tmp_path / "access.jsonl")) as web:
        starts: list[tuple[float, str, str]] = []
        crawlers = await workers(web, tmp_path, redis_url, crawl_id, starts, n=2)
        mortal = Mortal(
            MortalStore(redis_url, crawl_id),
            lease_ttl_s=LEASE_TTL,
            reclaim_delay_s=DELAY,
            worker_id="mortal",
            starts=starts,
        )
        crawlers.append(Crawler(crawl_config(web, tmp_path / "w2", **CRAWL), frontier=mortal))
        tasks = [asyncio.create_task(c.run()) for c in crawlers]
        mortal.on_death = tasks[2].cancel
        results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 60)

        assert mortal.victim is not None, f"the worker never got to die: {results[2]!r}"
        assert isinstance(results[2], asyncio.CancelledError), results[2]
        assert [r.stopped_by for r in results[:2]] == ["done", "done"]  # type: ignore[union-attr]
        log = web.access_log
        assert start_gaps(starts, FLOOR) == []  # exact, on the crawler's clock: first
        assert politeness_violations(log, FLOOR, tolerance_s=SERVER_SLACK) == []
        assert single_worker_reach - reached(log) == set()
        # what it had in flight (the victim, and whatever its other turns held) went back to
        # the queue and was handed to a survivor marked as a re-fetch, and logged as one if
        # fetched; nothing else was fetched twice
        survivors = [c.frontier for c in crawlers[:2]]
        assert all(isinstance(f, Recording) for f in survivors)
        handed_again = {u for f in survivors for u in f.refetched}  # type: ignore[attr-defined]
        assert mortal.victim.url in handed_again, sorted(handed_again)
        assert len(handed_again) <= sum(f.refetches for f in survivors)  # type: ignore[attr-defined]
        for i in range(2):
            for r in read_jsonl(tmp_path / f"w{i}/log/requests.jsonl"):
                assert r.get("refetch", False) is (r["url"] in handed_again), r
        # a robots.txt redirect's hop the dead worker followed is followed again by the
        # survivor that takes the site: its answer died with the worker, before it was stored
        died_asking = {key for _, key, worker in starts if worker == "mortal"}
        hops_again = {
            (h, "/robots-real.txt") for h, site in web.sites.items()
            if site.robots_status == 301 and (h in died_asking or any(
                key.startswith(f"{h}:") for key in died_asking))
        }  # fmt: skip
        assert fetched_twice(web, {path_of(u) for u in handed_again} | hops_again) == {}
        st = await status(redis_url, crawl_id)
        assert (st["queued"], st["urls_open"], st["leases_held"]) == (0, 0, 0)
        for c in crawlers[2:]:  # the dead one's files were never closed
            c.ctx.request_log.close()
            c.ctx.robots_log.close()
            c.ctx.warc.close()
        await mortal.store.r.aclose()
