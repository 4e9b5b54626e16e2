"""A small web of many sites on one loopback port, served from threads, that can go away.

``SitesServer`` serves ``hosts`` sites (``h0.test`` ...) of ``pages`` linked pages each on
one port; ``down()`` closes the listening socket (every connection refused, as when the
crawler's own network drops) and ``up()`` listens again on the same port. ``/drip`` answers
one byte a second (a tarpit). With ``tls`` (an ``ssl.SSLContext``) it serves https. Every
request is logged (``log``: host, path, status, time), the judge of the tests.
"""

from __future__ import annotations

import http.server
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field


@dataclass
class Hit:
    host: str
    path: str
    status: int
    when: float


@dataclass
class SitesServer:
    hosts: int = 10
    pages: int = 8
    tls: ssl.SSLContext | None = None
    drip_s: int = 60
    port: int = 0
    refusing: frozenset[str] = frozenset()  # hosts answering 403 to every page
    log: list[Hit] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.up()

    # -- the sites ------------------------------------------------------------------------
    def names(self) -> list[str]:
        return [f"h{i}.test" for i in range(self.hosts)]

    @property
    def scheme(self) -> str:
        return "https" if self.tls is not None else "http"

    def seeds(self) -> list[str]:
        return [f"{self.scheme}://{h}:{self.port}/" for h in self.names()]

    def resolve_args(self) -> list[str]:
        return [w for h in self.names() for w in ("--resolve", f"{h}:{self.port}:127.0.0.1")]

    def page_paths(self) -> set[str]:
        return {"/"} | {f"/p/{j}.html" for j in range(1, self.pages)}

    def fetched(self) -> dict[str, set[str]]:
        """Per host, the page paths answered 200."""
        out: dict[str, set[str]] = {}
        with self._lock:
            for hit in self.log:
                if hit.status == 200 and hit.path != "/robots.txt":
                    out.setdefault(hit.host, set()).add(hit.path)
        return out

    def hits(self, path: str) -> list[Hit]:
        with self._lock:
            return [h for h in self.log if h.path == path]

    # -- going away and coming back -------------------------------------------------------
    def up(self) -> None:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # a connection per request: an outage refuses all

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                owner._answer(self)

        server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        if self.tls is not None:
            server.socket = self.tls.wrap_socket(server.socket, server_side=True)
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()

    def down(self) -> None:
        """Close the listening socket: connections are refused until ``up``."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(10)

    def close(self) -> None:
        self.down()

    # -- answers --------------------------------------------------------------------------
    def _answer(self, req: http.server.BaseHTTPRequestHandler) -> None:
        host = (req.headers.get("Host") or "").split(":")[0]
        path = req.path
        if path == "/robots.txt":
            body, status = b"User-agent: *\nAllow: /\n", 200
            ctype = "text/plain"
        elif path == "/drip":
            self._record(host, path, 200)
            self._drip(req)
            return
        elif host in self.refusing:
            body, status, ctype = b"go away", 403, "text/plain"
        elif path in self.page_paths():
            j = 0 if path == "/" else int(path.rsplit("/", 1)[1].split(".")[0])
            links = {(j + 1) % self.pages, (j * 3 + 1) % self.pages}
            hrefs = "".join(f'<a href="/p/{k}.html">p{k}</a> ' for k in links if k)
            body = f"<html><head><title>{host} {j}</title></head><body>{hrefs}</body></html>"
            body, status, ctype = body.encode(), 200, "text/html"
        else:
            body, status, ctype = b"not here", 404, "text/plain"
        self._record(host, path, status)
        try:
            req.send_response(status)
            req.send_header("Content-Type", ctype)
            req.send_header("Content-Length", str(len(body)))
            req.end_headers()
            req.wfile.write(body)
        except OSError:
            pass

    def _drip(self, req: http.server.BaseHTTPRequestHandler) -> None:
        try:
            req.send_response(200)
            req.send_header("Content-Type", "text/html")
            req.send_header("Content-Length", str(self.drip_s))
            req.end_headers()
            req.wfile.flush()
            for _ in range(self.drip_s):
                req.wfile.write(b"x")
                req.wfile.flush()
                time.sleep(1.0)
        except OSError:
            pass

    def _record(self, host: str, path: str, status: int) -> None:
        with self._lock:
            self.log.append(Hit(host, path, status, time.time()))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
