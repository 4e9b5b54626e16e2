"""The bundled local test web: many virtual hosts on one 127.0.0.1 port, chosen by Host header.

Used by the test-suite, the benchmarks (1000+ hosts) and ``politecrawl demo``. The crawler
reaches it through ``--resolve "*.test:PORT:127.0.0.1"``, so URLs look like
``http://h17.test:PORT/p/3.html``. Everything is deterministic from ``seed`` (and the port,
which appears in absolute links).

Hosts are ``h0.test`` ... ``h{n_hosts + extra_hosts - 1}.test``; all of them are served, the
first ``n_hosts`` are the seeds (``seed_urls()``), the extra ones are reached only via links.

Normal pages (``SiteSpec.pages``): ``/`` and ``/p/{i}.html`` for ``i`` in 1..pages_per_host-1.
Each page links to the next two pages (wrapping to ``/``), so every page stays reachable
even when robots.txt blocks a single one, plus random same-host links in mixed forms
(relative, ``../``, absolute-path, absolute URL), 1-3 links to other hosts, and a hidden
link in an HTML comment, a ``<script>`` string and a ``<form action>`` (never to be fetched).
The home page of odd-numbered hosts has ``<base href="/p/">``; pages with ``i % 4 == 3`` have
an absolute-URL ``<base href>``; pages with ``i % 5 == 2`` have an ``<area href>`` in a
``<map>`` pointing at ``/only-from-area.html``.

Special links (every host links each of them, from pages 1, 3 and 5, wrapped when a host
has fewer pages; see ``SPECIAL_BUNDLES``):

* ``/redirect/{n}`` -> 301 ``/redirect/{n-1}``; ``/redirect/0`` -> 302 ``/p/1.html``.
  Pages link ``/redirect/2`` and ``/redirect/5`` (over a 3-hop cap).
* ``/loop`` -> 302 ``/loop2`` -> 302 ``/loop``.
* ``/status/{code}``: that code with a tiny HTML body (linked: 403, 404, 410, 429, 500,
  503; 429 and 503 carry ``Retry-After: 1``).
* ``/gz.html``: gzip-encoded when the request accepts gzip; links ``/only-from-gz.html``.
* ``/cross`` -> 301 to the next host's home page.
* ``/private/secret.html``, ``/private/x.html``: disallowed by most robots variants.
* ``/meta-nofollow.html``: ``<meta name="robots" content="nofollow">``, links
  ``/only-from-meta-nofollow.html`` (must not be fetched).
* ``/noindex.html``: ``<meta name="robots" content="noindex">``, links
  ``/only-from-noindex.html`` (may be fetched: noindex is not nofollow).
* ``/xrobots.html``: ``X-Robots-Tag: noindex, nofollow``, links ``/only-from-xrobots.html``
  (must not be fetched).
* ``rel="nofollow"`` link to ``/nofollow-target.html``; ``/img/photo.jpg`` (image/jpeg),
  ``/files/doc.pdf`` (application/pdf); ``/bin/data`` (application/octet-stream, 200 KB
  streamed: to be abandoned after the headers).

All of these exist and answer 200 (so a test sees any wrong fetch in the access log);
``NEVER_FETCH`` lists those a correct crawler never requests. HTML pages carry ``ETag`` and
``Last-Modified`` and answer 304 to matching ``If-None-Match`` / ``If-Modified-Since``.

robots.txt variants by host index (``ROBOTS_VARIANTS``; hosts 0 and > 10 are ``standard``,
only the variants whose index exists are used):

==  ================  ===========================================================
 0  standard          ``User-agent: *`` / ``Disallow: /private/``
 1  crawl-delay       standard + ``Crawl-delay: 0.3``
 2  testbot           ``User-agent: testbot`` disallows ``/p/2.html``; ``*`` allows all
 3  404               robots.txt answers 404 (everything allowed)
 4  500               robots.txt answers 500 (nothing else may be fetched)
 5  text-html         standard body served as ``text/html``
 6  redirect          301 to ``/robots-real.txt`` which serves the standard body
 7  disallow-all      ``Disallow: /`` (only robots.txt may be fetched)
 8  longest-match     ``Disallow: /p/`` then ``Allow: /p/1.html`` (+ ``/private/``)
 9  bom               UTF-8 BOM + standard + ``Crawl-delay: 0.3``
10  503               robots.txt answers 503 (nothing else may be fetched)
==  ================  ===========================================================

``plain=True`` (``--plain``) serves normal pages only: the standard robots.txt on every host,
no special links, no ``<area>`` page — every request is a 200 that costs no backoff, for
measuring how close the crawler comes to the rate its politeness allows.

``latency_s`` sleeps before each response. Unknown hosts and paths answer 404 (and are logged).
Every request is recorded in ``access_log`` (and as a JSON line in ``access_log_path``,
appended to with ``append_log``: a resumed demo's judge reads every run's requests).

Run by another process (``politecrawl demo``), ``--until-stdin-closes`` ties the web's life to
its parent's: the parent gives a pipe as standard input and never writes to it, and when the
parent ends, however it ends (``kill -9`` included), the kernel closes the pipe's other end
and the web stops. A pipe is used rather than ``PR_SET_PDEATHSIG``, which is Linux only, fires
when the forking *thread* ends, and kills without letting the access log close; or than
polling the parent's pid, which is late and wrong once the pid is reused or the child is
adopted by a subreaper.

The server is this module (``TestWeb``: serving, latency, conditional requests, the access
log, ``python -m politecrawl.demo.web``); what each path answers is ``testwebsite``, the
normal pages' HTML ``testwebpages``, and the access log's entries and politeness check
``testweblog``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import IO, Protocol, Self

from aiohttp import web

from politecrawl.demo.accesslog import AccessEntry, entry_json
from politecrawl.demo.lean import serve_lean
from politecrawl.demo.site import (
    NOT_FOUND,
    ROBOTS_FILES,
    ROBOTS_VARIANTS,
    UNKNOWN_HOST,
    Reply,
    SiteSpec,
    build_reply,
    not_modified,
    redirect_to,
    status_reply,
)
from politecrawl.errors import ConfigError

__all__ = ["TestWeb", "main", "serve_loopback", "serve_until_signal"]


_BIN_SIZE = 200 * 1024
_BIN_CHUNK = 16 * 1024
_MAX_REDIRECT = 50

_BIN = bytes((i * 7919 + 13) % 251 for i in range(_BIN_SIZE))


async def serve_loopback(
    handler: Callable[[web.BaseRequest], Awaitable[web.StreamResponse]],
    port: int = 0,
    bind: str = "127.0.0.1",
) -> tuple[web.ServerRunner, int]:
    """Serve ``handler`` on 127.0.0.1 (a free port when 0): every local test web starts so.
    ``bind``: another address, only inside a network namespace of a test's own (its web
    must look public there: tests/test_dns_e2e.py)."""
    runner = web.ServerRunner(web.Server(handler, access_log=None), shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, bind, port, backlog=2048, reuse_address=True)
    try:
        await site.start()
    except BaseException:  # (a cancel too) the runner is cleaned up, and the error goes on
        await runner.cleanup()
        raise
    return runner, int(runner.addresses[0][1])


class TestWeb:
    """Many deterministic virtual hosts served by one aiohttp server on 127.0.0.1."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        n_hosts: int = 20,
        pages_per_host: int = 10,
        seed: int = 1,
        suffix: str = "test",
        access_log_path: str | None = None,
        latency_s: float = 0.0,
        extra_hosts: int = 0,
        port: int = 0,
        plain: bool = False,
        rich: bool = False,
        lean: bool = False,
        bind: str = "127.0.0.1",
        append_log: bool = False,
    ) -> None:
        if n_hosts < 1 or pages_per_host < 1 or extra_hosts < 0:
            raise ConfigError("need n_hosts >= 1, pages_per_host >= 1, extra_hosts >= 0")
        self.n_hosts = n_hosts
        self.pages_per_host = pages_per_host
        self.seed = seed
        self.suffix = suffix
        self.access_log_path = access_log_path
        self.append_log = append_log
        self.latency_s = latency_s
        self.port = port
        self.rich = rich  # realistic pages: 30-100 links, tens of KB of markup (implies plain)
        if lean and latency_s > 0:
            raise ConfigError("the lean server (benchmarks) has no latency")
        self.bind = bind  # another address only in a test's own network namespace
        self.lean = lean  # served by testweblean, not aiohttp: less CPU taken from a benchmark
        self.plain = plain or rich
        plain = self.plain
        self.hosts: list[str] = [f"h{i}.{suffix}" for i in range(n_hosts + extra_hosts)]
        self._index: dict[str, int] = {h: i for i, h in enumerate(self.hosts)}
        pages = ["/"] + [f"/p/{i}.html" for i in range(1, pages_per_host)]
        self.sites: dict[str, SiteSpec] = {}
        for i, h in enumerate(self.hosts):
            variant = "standard" if plain else ROBOTS_VARIANTS.get(i, "standard")
            body, status, ctype = ROBOTS_FILES[variant]
            self.sites[h] = SiteSpec(h, body, status, ctype, list(pages))
        self.access_log: list[AccessEntry] = []
        self._cache: dict[tuple[int, str], Reply] = {}
        self._log_file: IO[str] | None = None
        self._runner: web.ServerRunner | None = None
        self._lean: tuple[asyncio.Server, set[asyncio.Transport]] | None = None

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Bind 127.0.0.1 (on a free port unless ``port`` was given) and start serving."""
        if self._runner is not None or self._lean is not None:
            raise ConfigError("TestWeb already started")
        if self.access_log_path is not None:
            mode = "a" if self.append_log else "w"
            self._log_file = open(self.access_log_path, mode, buffering=1, encoding="utf-8")  # noqa: SIM115
        if self.lean:
            self._lean = await serve_lean(self, self.port)
            self.port = int(self._lean[0].sockets[0].getsockname()[1])
        else:
            self._runner, self.port = await serve_loopback(self._handle, self.port, self.bind)
        self._cache.clear()  # absolute links embed the port
        if self.rich:  # rendered before the first request: a benchmark measures the crawler
            for idx in range(len(self.hosts)):
                for path in self.sites[self.hosts[idx]].pages:
                    self._lookup(idx, path)

    async def stop(self) -> None:
        """Stop serving and close the access log file."""
        lean, self._lean = self._lean, None
        if lean is not None:
            lean[0].close()
            for transport in list(lean[1]):
                transport.close()
            await lean[0].wait_closed()
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- addresses -------------------------------------------------------------------------

    def url(self, host: str, path: str = "/") -> str:
        """``http://HOST:PORT/path``."""
        if not path.startswith("/"):
            path = "/" + path
        return f"http://{host}:{self.port}{path}"

    def resolve_arg(self) -> str:
        """The curl-style ``--resolve`` override: ``*.SUFFIX:PORT:127.0.0.1``."""
        return f"*.{self.suffix}:{self.port}:127.0.0.1"

    def seed_urls(self, n: int | None = None) -> list[str]:
        """Home pages of the first ``n`` hosts (default: the ``n_hosts`` seed hosts)."""
        count = self.n_hosts if n is None else min(n, len(self.hosts))
        return [self.url(h) for h in self.hosts[:count]]

    # -- request handling ------------------------------------------------------------------

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        start = time.time()
        host = request.headers.get("Host", "").lower().partition(":")[0].rstrip(".")
        status = 0  # stays 0 if no response was made (e.g. cancelled at shutdown)
        try:
            if self.latency_s > 0:
                await asyncio.sleep(self.latency_s)
            if request.path == "/bin/data" and host in self._index:
                status = 200
                return await self._stream_bin(request)
            status, headers, body = self.answer(host, request.path, request.headers)
            resp = web.Response(status=status, headers=headers, body=body)
            try:
                await resp.prepare(request)
                await resp.write_eof()
            except ConnectionError:
                pass
            return resp
        finally:
            hdrs = request.headers
            self.record(host, request.raw_path, request.method, status, start, dict(hdrs),
                        hdrs.get("User-Agent", ""))  # fmt: skip

    def answer(
        self, host: str, path: str, req_headers: Mapping[str, str]
    ) -> tuple[int, Mapping[str, str], bytes]:
        """Status, headers and body for ``path`` on ``host`` (a 304 to a matching conditional
        request, the gzip body when accepted): what either server sends."""
        idx = self._index.get(host)
        reply = UNKNOWN_HOST if idx is None else self._lookup(idx, path)
        if reply.etag is not None and not_modified(reply, req_headers):
            return 304, {"ETag": reply.etag}, b""
        headers, body = reply.headers, reply.body
        if reply.gz_body is not None:
            headers = dict(headers)
            headers["Vary"] = "Accept-Encoding"
            if "gzip" in req_headers.get("Accept-Encoding", ""):
                body = reply.gz_body
                headers["Content-Encoding"] = "gzip"
        return reply.status, headers, body

    async def _stream_bin(self, request: web.BaseRequest) -> web.StreamResponse:
        """200 KB of octet-stream, written in chunks so an early client close is noticed."""
        resp = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
        resp.content_length = _BIN_SIZE
        try:
            await resp.prepare(request)
            if request.method != "HEAD":
                view = memoryview(_BIN)
                for off in range(0, _BIN_SIZE, _BIN_CHUNK):
                    await resp.write(view[off : off + _BIN_CHUNK])
            await resp.write_eof()
        except ConnectionError:
            pass
        return resp

    def record(
        self,
        host: str,
        raw_path: str,
        method: str,
        status: int,
        start: float,
        headers: dict[str, str],
        user_agent: str,
    ) -> None:
        """One request in the access log (memory and file), as it ends."""
        entry = AccessEntry(
            host=host,
            path=raw_path,
            method=method,
            status=status,
            start=start,
            end=time.time(),
            user_agent=user_agent,
            headers=headers,
        )
        self.access_log.append(entry)
        if self._log_file is not None:
            self._log_file.write(entry_json(entry) + "\n")

    def _lookup(self, idx: int, path: str) -> Reply:
        """The reply for ``path`` on host ``idx`` (cached when static)."""
        key = (idx, path)
        reply = self._cache.get(key)
        if reply is not None:
            return reply
        if path.startswith("/redirect/"):
            return self._redirect_reply(path)
        if path.startswith("/status/"):
            try:
                code = int(path[8:])
            except ValueError:
                return NOT_FOUND
            ok = 200 <= code < 300 or 400 <= code < 600
            return status_reply(code) if ok else NOT_FOUND
        made = build_reply(self, idx, path)
        if made is None:
            return NOT_FOUND
        self._cache[key] = made
        return made

    def _redirect_reply(self, path: str) -> Reply:
        try:
            n = int(path[10:])
        except ValueError:
            return NOT_FOUND
        if n < 0 or n > _MAX_REDIRECT or path[10:] != str(n):
            return NOT_FOUND
        if n == 0:
            return redirect_to(302, "/p/1.html" if self.pages_per_host > 1 else "/")
        return redirect_to(301, f"/redirect/{n - 1}")


async def _serve(args: argparse.Namespace) -> None:
    web_ = TestWeb(
        n_hosts=args.hosts,
        pages_per_host=args.pages,
        seed=args.seed,
        suffix=args.suffix,
        access_log_path=args.access_log,
        latency_s=args.latency,
        extra_hosts=args.extra_hosts,
        port=args.port,
        plain=args.plain,
        rich=args.rich,
        lean=args.lean,
        append_log=args.append_log,
    )
    await serve_until_signal(
        web_,
        lambda: [f"serving {len(web_.hosts)} hosts on 127.0.0.1:{web_.port}"],
        until_stdin_closes=args.until_stdin_closes,
    )


class Servable(Protocol):
    async def start(self) -> None: ...
    async def stop(self) -> None: ...


async def serve_until_signal(
    site: Servable, banner: Callable[[], list[str]], *, until_stdin_closes: bool = False
) -> None:
    """Serve ``site``, print ``banner()`` once it listens, stop at SIGINT or SIGTERM (this
    module's command and the tests' own webs). ``until_stdin_closes``: also when standard
    input ends (the parent died: see the module's docstring), and not at SIGINT, which a
    Ctrl-C sends the whole process group while the parent still finishes its requests."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM,) if until_stdin_closes else (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if until_stdin_closes:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _on_stdin_eof(loop, stop)
    await site.start()
    try:
        for line in banner():
            print(line, flush=True)
        await stop.wait()
    finally:
        await site.stop()


def _on_stdin_eof(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """``stop`` is set when standard input ends: a thread blocks reading it (any kind of
    file, on any OS), so the event loop needs no pipe support of its own. The descriptor is
    read, not ``sys.stdin``: a daemon thread blocked holding the buffered reader's lock
    aborts the interpreter's shutdown."""

    def watch() -> None:
        with contextlib.suppress(OSError):
            while os.read(0, 4096):
                pass
        with contextlib.suppress(RuntimeError):  # the loop already closed: nothing to stop
            loop.call_soon_threadsafe(stop.set)

    threading.Thread(target=watch, name="stdin-eof", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    """``python -m politecrawl.demo.web``: serve the test web until SIGINT/SIGTERM."""
    p = argparse.ArgumentParser(
        prog="python -m politecrawl.demo.web", description="Serve the politecrawl local test web."
    )
    p.add_argument("--hosts", type=int, default=20, help="number of seed hosts")
    p.add_argument("--pages", type=int, default=10, help="pages per host")
    p.add_argument("--port", type=int, default=0, help="port (0: a free one)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--suffix", default="test", help="host name suffix")
    p.add_argument("--access-log", default=None, help="JSON-lines access log file")
    p.add_argument("--latency", type=float, default=0.0, help="seconds before each response")
    p.add_argument("--extra-hosts", type=int, default=0, help="hosts reached only via links")
    p.add_argument(
        "--plain",
        action="store_true",
        help="normal pages only: standard robots.txt everywhere, no special links or error pages",
    )
    p.add_argument(
        "--rich",
        action="store_true",
        help="realistic pages (implies --plain): 30-100 links and 30-38 KB of markup each",
    )
    p.add_argument(
        "--lean",
        action="store_true",
        help="serve on a bare asyncio protocol, not aiohttp: the same answers and access log "
        "for less CPU (benchmarks); no --latency",
    )
    p.add_argument(
        "--append-log", action="store_true", help="append to --access-log (default: replace it)"
    )
    p.add_argument(
        "--until-stdin-closes",
        action="store_true",
        help="also stop when standard input ends (a parent's pipe: the web dies with it), "
        "and ignore SIGINT",
    )
    args = p.parse_args(argv)
    if args.lean and args.latency > 0:
        p.error("--lean has no --latency")
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve(args))
    except OSError as exc:  # the port taken, most often: one line, not a traceback
        print(f"{p.prog}: cannot serve on 127.0.0.1:{args.port}: {exc.strerror or exc}",
              file=sys.stderr)  # fmt: skip
        return 1
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
