"""Undoing a response's Content-Encoding (gzip, deflate, br) without ever producing more than
a cap: a decompression bomb costs the cap, not what it would inflate to.

``fetch.Fetcher`` feeds a ``Decoder`` while it streams the body, so it can drop the
connection as soon as the decoded size passes ``max_size_bytes``; ``decompress`` is the same
on a whole body. Kept apart from the HTTP exchange because it is pure byte work with its own
tests and fuzz target (bench/fuzz.py ``decompress``).

Its ``ValueError`` refuses what a server sent (an unknown or corrupt coding), not a user's
input: the fetcher turns it into a ``bad_encoding`` result, so it stays inside the fetch
boundary (tests/test_structure.py exempts this module from the ConfigError rule for that).
"""

from __future__ import annotations

import zlib
from typing import Any

import brotli

from politecrawl.errors import FetchError

__all__ = ["Decoder", "decompress"]

_ZLIB_KINDS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": 0}
_ENCODINGS = frozenset({"", "identity", "br", *_ZLIB_KINDS})
_MAX_LAYERS = 3  # stacked codings undone (each bounded by the cap; more is no real server)


def _has_zlib_header(data: bytes) -> bool:
    """RFC 1950 wrapper present? (``deflate`` is often sent raw, without it.)"""
    return len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0


class BadContentCoding(FetchError, ValueError):
    """A Content-Encoding this decoder does not know, or a body it cannot undo: a server's
    doing, so it stays inside the fetch boundary (``fetch`` makes it a ``bad_encoding``)."""

    kind = "bad_encoding"


class _Layer:
    """Undoes one content coding piece by piece, never producing more than ``limit`` bytes.

    Each piece is asked for at most one byte more than the room left, so ``overflow`` says
    exactly whether the decoded body is longer than ``limit`` without inflating the rest: a
    10 GB gzip bomb costs ``limit`` bytes of output and the input that produced them.
    Raises ValueError on an unsupported encoding or a corrupt stream.
    """

    __slots__ = (
        "_br",
        "_done",
        "_fed",
        "_out",
        "_pending",
        "_z",
        "kind",
        "limit",
        "overflow",
        "size",
    )

    def __init__(self, encoding: str, limit: int) -> None:
        kind = encoding.strip().lower()
        if kind not in _ENCODINGS:
            raise BadContentCoding(f"unsupported Content-Encoding {encoding.strip()[:40]!r}")
        self.kind = "identity" if kind == "" else kind
        self.limit = limit
        self.size = 0
        self.overflow = False  # there is more decoded body than ``limit``
        self._out: list[bytes] = []
        self._z: Any = None  # zlib.Decompress of the current gzip member / deflate stream
        self._br: Any = brotli.Decompressor() if kind == "br" else None
        self._pending = b""  # bytes held back until a stream's first two bytes are known
        self._done = False  # a stream ended; what follows is ignored (trailing garbage)
        self._fed = False

    @property
    def finished(self) -> bool:
        """The encoded stream ended properly (or there was no body at all)."""
        if self.kind == "identity" or not self._fed or self._done:
            return True
        if self.kind == "br":
            return bool(self._br.is_finished())
        return self._z is not None and bool(self._z.eof)

    def body(self) -> bytes:
        return b"".join(self._out)

    def take(self) -> bytes:
        """What was decoded since the last call (for the next layer inward)."""
        out, self._out = b"".join(self._out), []
        return out

    def _emit(self, data: bytes) -> None:
        room = self.limit - self.size
        if len(data) > room:
            data = data[:room]
            self.overflow = True
        if data:
            self._out.append(data)
            self.size += len(data)

    def feed(self, data: bytes) -> None:
        if self.overflow or self._done or not data:
            return
        self._fed = True
        if self.kind == "identity":
            self._emit(data)
        elif self.kind == "br":
            self._feed_br(data)
        else:
            self._feed_zlib(data)

    def _feed_br(self, data: bytes) -> None:
        if self._br.is_finished():
            self._done = True
            return
        try:
            out = self._br.process(data, output_buffer_limit=self.limit - self.size + 1)
        except brotli.error:
            raise BadContentCoding("corrupt brotli body") from None
        self._emit(out)

    def _feed_zlib(self, data: bytes) -> None:
        while data and not self.overflow:
            z = self._z
            if z is None or z.eof:
                data, self._pending = self._pending + data, b""
                if len(data) < 2:
                    self._pending = data
                    return
                if z is not None and not (self.kind != "deflate" and data[:2] == b"\x1f\x8b"):
                    self._done = True  # bytes after the end of the stream: ignored
                    return
                wbits = _ZLIB_KINDS[self.kind] or (
                    zlib.MAX_WBITS if _has_zlib_header(data) else -zlib.MAX_WBITS
                )
                z = self._z = zlib.decompressobj(wbits)
            try:
                out = z.decompress(data, self.limit - self.size + 1)
            except zlib.error:
                raise BadContentCoding(f"corrupt {self.kind} body") from None
            self._emit(out)
            data = z.unused_data if z.eof else b""  # gzip allows several members


class Decoder:
    """Undoes a Content-Encoding, the codings listed in the order they were applied
    (RFC 9110 8.4: ``gzip, br`` is gzip then br, undone br first), never producing more than
    ``limit`` bytes at any layer. Raises ValueError on an unsupported coding, more than
    ``_MAX_LAYERS`` of them, or a corrupt stream."""

    __slots__ = ("_layers", "kind")

    def __init__(self, encoding: str, limit: int) -> None:
        kinds = [k.strip().lower() for k in encoding.split(",")]
        kinds = [k for k in kinds if k not in ("", "identity")]
        if len(kinds) > _MAX_LAYERS:
            raise BadContentCoding(f"{len(kinds)} stacked content codings (at most {_MAX_LAYERS})")
        self._layers = [_Layer(kind, limit) for kind in reversed(kinds)] or [
            _Layer("identity", limit)
        ]
        self.kind = ", ".join(kinds) or "identity"

    @property
    def overflow(self) -> bool:
        """There is more decoded body than ``limit`` (at some layer)."""
        return any(layer.overflow for layer in self._layers)

    @property
    def finished(self) -> bool:
        """Every coding's stream ended properly (or there was no body at all)."""
        return all(layer.finished for layer in self._layers)

    def body(self) -> bytes:
        return self._layers[-1].body()

    def feed(self, data: bytes) -> None:
        *outer, inner = self._layers
        for layer in outer:
            layer.feed(data)
            data = layer.take()
        inner.feed(data)


def decompress(raw: bytes, encoding: str, max_bytes: int) -> tuple[bytes, bool]:
    """Undo Content-Encoding, never producing more than ``max_bytes`` (bomb-proof).

    Returns (body, truncated): truncated when the decoded body is longer than ``max_bytes``
    or the encoded stream stops before its end. Raises ValueError on a corrupt stream or an
    unsupported encoding. ``deflate`` is accepted with and without the zlib wrapper.
    """
    dec = Decoder(encoding, max_bytes)
    dec.feed(raw)
    return dec.body(), dec.overflow or not dec.finished
