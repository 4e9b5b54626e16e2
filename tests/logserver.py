"""A tiny HTTP/1.1 server in its own process that logs exactly when it sees each request.

The politeness tests judge the crawler by this log, not by the crawler's: one JSON line per
request with the host name asked for, the local address it reached (``ip``: the server's
address, so several names on one address are one server), when the request line was read
(``start``) and when the answer was about to be written (``end``), both ``time.time()``.
Both err on the safe side for the checks: a server that runs late reads a request later
(``start`` can only be late), and no client has an answer before ``end``. Running in its own
process, it is not slowed by the crawler's event loop either.

Usage (the test starts it): ``python logserver.py LOG --bind 127.0.0.1 --bind 127.0.0.2
[--latency S] [--first-read-delay S] [--pages N]`` prints the port once listening. Sites:

- ``/robots.txt``: 404 (everything allowed), or ``User-agent: *`` / ``Allow: /`` for names
  starting with ``robots``;
- ``/``: links to ``/p/1`` ... ``/p/N``; ``/p/I``: a page without links;
- a name starting with ``deny`` answers 403 to every page, ``slow429`` 429 (Retry-After: 0);
- a name starting with ``slowpage`` takes ``--slow-latency`` seconds over each page (not its
  robots.txt). A request its client gave up is logged too, when the server is done with it
  (``end``): how long the server was busy with it, whoever was still listening.

``--first-read-delay`` waits that long before reading the first request of each new
connection, as a slow connection set-up (name resolution, handshakes) makes a request reach
the server later than the client started it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
from typing import Any

_conn_ids = itertools.count(1)


def _answer(host: str, path: str, pages: int) -> tuple[int, str, dict[str, str]]:
    name = host.split(".", 1)[0]
    if path == "/robots.txt":
        if name.startswith("robots"):
            return 200, "User-agent: *\nAllow: /\n", {"Content-Type": "text/plain"}
        return 404, "no robots.txt here", {"Content-Type": "text/plain"}
    if name.startswith("deny"):
        return 403, "<html><body>go away</body></html>", {}
    if name.startswith("slow429"):
        return 429, "<html><body>slow down</body></html>", {"Retry-After": "0"}
    if path == "/":
        links = "".join(f'<a href="/p/{i}">{i}</a> ' for i in range(1, pages + 1))
        return 200, f"<html><head><title>{host}</title></head><body>{links}</body></html>", {}
    return 200, f"<html><head><title>{host}{path}</title></head><body>page</body></html>", {}


async def _serve_conn(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, args: argparse.Namespace, log: Any
) -> None:
    conn = next(_conn_ids)
    ip = writer.get_extra_info("sockname")[0]
    first = True
    try:
        while True:
            if first and args.first_read_delay:
                await asyncio.sleep(args.first_read_delay)
            first = False
            line = await reader.readline()
            if not line:
                return
            start = time.time()
            headers: dict[str, str] = {}
            while (h := await reader.readline()) not in (b"\r\n", b"\n", b""):
                k, _, v = h.decode("latin-1").partition(":")
                headers[k.strip().lower()] = v.strip()
            method, path, _ = line.decode("latin-1").split(" ", 2)
            host = headers.get("host", "").split(":")[0]
            if args.latency:
                await asyncio.sleep(args.latency)
            if host.startswith("slowpage") and path != "/robots.txt":
                await asyncio.sleep(args.slow_latency)
            status, body, extra = _answer(host, path, args.pages)
            data = body.encode()
            head = [f"HTTP/1.1 {status} X", f"Content-Length: {len(data)}"]
            head += [f"{k}: {v}" for k, v in extra.items()]
            if "Content-Type" not in extra:
                head.append("Content-Type: text/html; charset=utf-8")
            end = time.time()  # before the answer goes: the client cannot have it any earlier
            rec = {
                "host": host,
                "path": path,
                "method": method,
                "ip": ip,
                "conn": conn,
                "status": status,
                "start": start,
                "end": end,
                "ua": headers.get("user-agent", ""),
            }
            log.write(json.dumps(rec) + "\n")  # (before the answer: its client may be gone)
            log.flush()
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
            await writer.drain()
    except (ConnectionError, ValueError):
        return
    finally:
        writer.close()


async def _main(args: argparse.Namespace) -> None:
    log = open(args.log, "a", encoding="utf-8")  # noqa: SIM115  (open for the process's life)

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await _serve_conn(r, w, args, log)

    port = args.port
    servers = []
    for addr in args.bind:
        srv = await asyncio.start_server(handle, addr, port, reuse_address=True)
        port = srv.sockets[0].getsockname()[1]
        servers.append(srv)
    print(port, flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("log")
    p.add_argument("--bind", action="append", default=[])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--latency", type=float, default=0.0)
    p.add_argument("--first-read-delay", type=float, default=0.0)
    p.add_argument("--pages", type=int, default=3)
    p.add_argument("--slow-latency", type=float, default=0.0)
    args = p.parse_args()
    if not args.bind:
        args.bind = ["127.0.0.1"]
    try:
        asyncio.run(_main(args))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
