"""A DNS server for tests, on 127.0.0.1:53 inside a network namespace of the test's own:
every name is NXDOMAIN (it does not exist) except those starting ``servfail``, which get
SERVFAIL (the lookup failed: may pass). Run as a script; prints ``ready`` once listening."""

from __future__ import annotations

import socket
import sys

NXDOMAIN, SERVFAIL = 3, 2


def answer(query: bytes) -> bytes:
    """The query's header and question back, flagged as a response with the rcode."""
    end = 12
    while end < len(query) and query[end] != 0:
        end += query[end] + 1
    question = query[12 : end + 5]
    first = question[1 : 1 + question[0]] if question else b""
    rcode = SERVFAIL if first.startswith(b"servfail") else NXDOMAIN
    flags = 0x8000 | (query[2] & 0x01) << 8 | 0x0080 | rcode  # QR, RD copied, RA, rcode
    return query[:2] + flags.to_bytes(2, "big") + b"\x00\x01" + b"\x00" * 6 + question


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 53))
    sock.settimeout(float(sys.argv[1]) if len(sys.argv) > 1 else 120.0)
    print("ready", flush=True)
    for _ in range(10_000):  # bounded, and gone after a quiet spell
        try:
            data, peer = sock.recvfrom(512)
        except TimeoutError:
            return
        if len(data) > 12:
            sock.sendto(answer(data), peer)


if __name__ == "__main__":
    sys.exit(main())
