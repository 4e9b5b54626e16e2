"""Shared fixtures: the real local test web and configs that point the crawler at it."""

from __future__ import annotations

import multiprocessing.process
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from politecrawl.config import CrawlConfig, FetchConfig, PolitenessConfig
from politecrawl.demo.web import TestWeb

# Property tests make no timing assertions either: hypothesis's per-example deadline (200 ms)
# and its too-slow health check fail a test on a shared, busy machine without a bug behind it
# (a unit run right after the Redis suites once failed one test that five reruns passed).
settings.register_profile(
    "shared-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("shared-machine")

UA = "testbot/1.0 (+http://bot.example/info)"
DELAY = 0.15
# The in-process test web shares the crawler's event loop: a busy loop starts a server handler
# late, which shrinks the next gap as the server sees it; the crawler's own spacing is exact.
LOOP_LAG_S = 0.04


def crawl_config(
    web: TestWeb,
    out: Path,
    *,
    seeds: int | None = None,
    delay: float = DELAY,
    fetch: dict[str, Any] | None = None,
    **kw: Any,
) -> CrawlConfig:
    fetch_kw: dict[str, Any] = {
        "user_agent": UA,
        "resolve": (web.resolve_arg(),),
        "allow_private_addresses": True,
        "retry_base_s": 0.2,
    }
    fetch_kw.update(fetch or {})
    kw.setdefault("scope", "any")
    kw.setdefault("progress", False)
    return CrawlConfig(
        seeds=tuple(web.seed_urls(seeds)),
        out_dir=out,
        fetch=FetchConfig(**fetch_kw),
        politeness=PolitenessConfig(
            min_delay_s=delay,
            jitter_s=0.02,
            response_time_factor=kw.pop("factor", 30.0),
            park_s=0.5,
            ip_min_delay_s=None,  # the test web's names on 127.0.0.1 stand for many servers
        ),
        **kw,
    )


@pytest.fixture
async def web(tmp_path: Path):
    async with TestWeb(
        n_hosts=14, pages_per_host=8, seed=3, access_log_path=str(tmp_path / "access.jsonl")
    ) as w:
        yield w


# -- the two kinds of test ------------------------------------------------------------------
# ``unit``: no server, no subprocess, no network (``pytest -m unit``, the inner loop, well
# under a minute). ``e2e``: real servers, the real command, Redis, pywb, Chromium. Every test
# is one or the other, and a unit test that reaches for a socket or a process fails, so the
# fast loop stays what it says.


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wrong = [i.nodeid for i in items if any(i.iter_markers("unit")) == any(i.iter_markers("e2e"))]
    if wrong:
        raise pytest.UsageError(
            "each test is unit or e2e, not neither and not both (set pytestmark in the "
            "module, or mark each test of a mixed module): " + ", ".join(wrong[:5])
        )


def _refuse(what: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a unit test may not {what}: mark it e2e")

    return refuse


@pytest.fixture(autouse=True)
def _unit_tests_stay_offline(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker("unit") is None:
        yield
        return
    mp = pytest.MonkeyPatch()
    for name in ("connect", "connect_ex", "bind"):
        mp.setattr(socket.socket, name, _refuse("open a network connection or a server"))
    mp.setattr(subprocess.Popen, "__init__", _refuse("start a subprocess"))
    mp.setattr(os, "fork", _refuse("fork a process"))
    mp.setattr(multiprocessing.process.BaseProcess, "start", _refuse("start a process"))
    try:
        yield
    finally:
        mp.undo()
