"""Ctrl-C and SIGTERM during a crawl: the first stops it gracefully, a second Ctrl-C at once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Iterator

log = logging.getLogger("politecrawl")


@contextlib.contextmanager
def stop_on_signals(stopping: Callable[[], bool], stop: Callable[[str], None]) -> Iterator[None]:
    """First Ctrl-C/SIGTERM: ``stop("interrupted")`` (in-flight requests get 2 s to finish,
    then are cut and queued again; state is saved). Another while ``stopping()``: exit 130 at
    once (state committed at the last flush, at most 1 s ago)."""
    loop = asyncio.get_running_loop()
    installed = []

    def first(sig: signal.Signals) -> None:
        if stopping():
            raise SystemExit(130)
        log.warning("%s: finishing in-flight requests (2 s at most) and saving state", sig.name)
        stop("interrupted")

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, first, sig)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
