"""One output folder, one crawl: an exclusive lock on ``OUT/.lock`` while a crawl uses it.

Two crawls (or workers) writing one folder would share its SQLite state, WARC files and logs,
fetch URLs twice and ask a site twice at once. The lock is ``flock(2)``: the kernel drops it
when the holding process dies, so a lock left by ``kill -9`` never blocks the resume. The file
keeps the holder's pid only to name it in the refusal.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

from politecrawl.errors import OutputInUse, StorageError

LOCK_NAME = ".lock"


class OutputLock:
    """Held from construction until ``release`` (or the process ends)."""

    def __init__(self, out_dir: Path) -> None:
        self.path = out_dir / LOCK_NAME
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StorageError(f"cannot open {self.path}: {exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise OutputInUse(
                f"{out_dir} is in use by another crawl (pid {holder}); "
                "wait for it to finish or choose another --out"
            ) from None
        except OSError as exc:
            os.close(fd)
            raise StorageError(f"cannot lock {self.path}: {exc}") from exc
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        # a file object, so a crawler dropped without ``release`` (an API user's) unlocks too
        self._file: IO[bytes] | None = os.fdopen(fd, "r+b", buffering=0)

    def release(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            file.close()  # closing the descriptor drops the flock
