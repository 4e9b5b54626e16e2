"""What the test-only webs (DupWeb, TopicWeb) share: serving on loopback, ``async with``, and
running as a command until SIGINT/SIGTERM; ``serving``: one handler for a test of its own."""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import Any, Self

from aiohttp import web

from politecrawl.demo.web import serve_loopback


class LoopbackWeb:
    """A web of virtual hosts on 127.0.0.1; a subclass answers in ``_handle`` and may keep
    rendered pages in ``_cache`` (cleared at start: absolute links embed the port)."""

    port: int
    _cache: dict[Any, str]
    _runner: web.ServerRunner | None = None

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        raise NotImplementedError

    async def start(self) -> None:
        """Bind 127.0.0.1 (a free port unless ``port`` was given) and serve."""
        if self._runner is not None:
            raise RuntimeError(f"{type(self).__name__} already started")
        self._runner, self.port = await serve_loopback(self._handle, self.port)
        self._cache.clear()

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        await self.stop()


@contextlib.asynccontextmanager
async def serving(
    handle: Callable[[web.Request], Awaitable[web.StreamResponse]],
    ssl_context: ssl.SSLContext | None = None,
    port: int = 0,
) -> AsyncIterator[int]:
    """``async with serving(handle) as port``: one handler for every path on 127.0.0.1 (a
    free port, or ``port``: another server's, taken over; https with ``ssl_context``),
    stopped at the end even while handlers sleep."""
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", port, ssl_context=ssl_context)
        await site.start()
        yield int(runner.addresses[0][1])
    finally:
        await runner.cleanup()
