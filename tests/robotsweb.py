"""Sites whose robots.txt (and tdmrep.json) misbehave, on loopback, logging what they were asked.

``RobotsWeb(route, ips)`` listens on one port of each loopback address in ``ips``
(``127.0.0.2`` ...: one server per address, as the per-IP rule sees it) and answers each
request with ``route(host, path)``: a ``Reply`` (status, body, headers, how long to take).
Every request is logged (host, the address reached, path, status, when it came and when its
answer ended), the judge of the tests; ``in_flight_max`` says how many requests to one host
overlapped at most.
"""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    take_s: float = 0.0  # time before the answer is written
    ctype: str = "text/plain"


@dataclass
class Hit:
    host: str
    ip: str
    path: str
    status: int
    t0: float
    t1: float


Route = Callable[[str, str], Reply]


@dataclass
class RobotsWeb:
    route: Route
    ips: Sequence[str] = ("127.0.0.1",)
    port: int = 0
    log: list[Hit] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._servers: list[http.server.ThreadingHTTPServer] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                owner._answer(self)

        for ip in self.ips:
            server = http.server.ThreadingHTTPServer((ip, self.port), Handler)
            server.daemon_threads = True
            self.port = server.server_address[1]
            self._servers.append(server)
            threading.Thread(target=server.serve_forever, daemon=True).start()

    def close(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> RobotsWeb:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def resolve(self, host: str, ip: str = "127.0.0.1") -> list[str]:
        return ["--resolve", f"{host}:{self.port}:{ip}"]

    def hits(self, host: str | None = None, path: str | None = None) -> list[Hit]:
        with self._lock:
            return [
                h
                for h in self.log
                if (host is None or h.host == host) and (path is None or h.path == path)
            ]

    def in_flight_max(self, host: str) -> int:
        """The most requests to ``host`` the server was answering at once."""
        hits = self.hits(host)
        return max((sum(1 for o in hits if o.t0 <= h.t0 < o.t1) for h in hits), default=0)

    def _answer(self, req: http.server.BaseHTTPRequestHandler) -> None:
        t0 = time.time()
        host = (req.headers.get("Host") or "").split(":")[0]
        ip = req.connection.getsockname()[0]
        reply = self.route(host, req.path)
        if reply.take_s:
            time.sleep(reply.take_s)
        try:
            req.send_response(reply.status)
            req.send_header("Content-Type", reply.ctype)
            req.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers:
                req.send_header(name, value)
            req.end_headers()
            req.wfile.write(reply.body)
        except OSError:
            pass
        with self._lock:
            self.log.append(Hit(host, ip, req.path, reply.status, t0, time.time()))


def page(links: Sequence[str] = ()) -> Reply:
    hrefs = "".join(f'<a href="{u}">x</a> ' for u in links)
    return Reply(200, f"<html><body>{hrefs}</body></html>".encode(), ctype="text/html")
