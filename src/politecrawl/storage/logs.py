"""Append-only JSON-lines logs (the request log, the robots log).

Each line goes to the file in one ``write`` on an ``O_APPEND`` descriptor, so a crash leaves
whole lines or none, and several processes may share one log without interleaving bytes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from politecrawl.errors import StorageError


class JsonlLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._repair_tail()
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def _repair_tail(self) -> None:
        """Cut a torn last line left by a crash, so every line in the file parses."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size == 0:
            return
        with self.path.open("rb+") as fh:
            fh.seek(max(0, size - 1))
            if fh.read(1) == b"\n":
                return
            back = min(size, 1 << 20)
            fh.seek(size - back)
            tail = fh.read(back)
            cut = tail.rfind(b"\n")
            fh.truncate(size - back + cut + 1 if cut >= 0 else size - back)

    def write(self, record: dict[str, Any]) -> None:
        line = (self._dumps(record) + "\n").encode("utf-8")
        try:
            os.write(self._fd, line)
        except OSError as exc:
            raise StorageError(f"cannot write {self.path}: {exc}") from exc

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every complete line of a log (tests and tools)."""
    out = []
    with path.open("rb") as fh:
        for raw in fh:
            if raw.endswith(b"\n"):
                out.append(json.loads(raw))
    return out
