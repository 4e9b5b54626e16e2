"""A test web served from its own thread and event loop, so a crawler under test (another
process, or this one) never shares a loop with the server judging it."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from politecrawl.demo.web import TestWeb


@contextlib.contextmanager
def web_in_thread(**kwargs: Any) -> Iterator[TestWeb]:
    ready = threading.Event()
    box: dict[str, Any] = {}

    async def serve() -> None:
        try:
            async with TestWeb(**kwargs) as web:
                box["web"], box["stop"] = web, asyncio.Event()
                box["loop"] = asyncio.get_running_loop()
                ready.set()
                await box["stop"].wait()
        finally:
            ready.set()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    ready.wait(30)
    if "web" not in box:
        raise RuntimeError("the test web did not start")
    try:
        yield box["web"]
    finally:
        box["loop"].call_soon_threadsafe(box["stop"].set)
        thread.join(30)
