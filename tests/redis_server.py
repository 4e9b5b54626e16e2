"""A real, throw-away redis-server on 127.0.0.1 for the shared-frontier tests.

``RedisServer`` starts ``redis-server`` (Debian's, or Valkey's ``valkey-server``) on a free
port with its own temp dir and no persistence, waits until it answers PING, and stops it.
``redis_url`` is the session fixture tests import; it skips (with the reason) only when no
server binary is installed: CI installs one. ``redis_cluster`` is a real 3-node Redis Cluster
(three servers in cluster mode on loopback ports, joined by ``redis-cli --cluster create``, no
replicas); ``redis_cluster_url`` names its first node. There a script declared with
``#!lua`` may not touch keys of two slots: the contract suite runs on it too, to prove each
script stays in one shard's slot while a crawl spreads over the three nodes.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

BINARIES = ("redis-server", "valkey-server")


def server_binary() -> str | None:
    for name in BINARIES:
        found = shutil.which(name)
        if found:
            return found
        if os.access(f"/usr/bin/{name}", os.X_OK):  # PATH without /usr/bin
            return f"/usr/bin/{name}"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One redis-server process; ``url`` once started. Extra ``args`` go on its command line."""

    def __init__(self, binary: str, *args: str) -> None:
        self.binary = binary
        self.args = args
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 10.0) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="pc-redis-")
        for _ in range(5):  # the free port may be taken between probe and bind: try again
            self.port = _free_port()
            while "--cluster-enabled" in self.args and self.port > 55535:
                self.port = _free_port()  # its cluster bus listens on port + 10000
            if self._launch(timeout_s):
                return
        raise RuntimeError(f"redis-server did not start: {self._log_tail()}")

    def restart(self, down_s: float, timeout_s: float = 10.0) -> None:
        """Stopped, and started again ``down_s`` later on the same port and folder (its
        append-only file read back, when the server keeps one)."""
        self.stop(keep_dir=True)
        time.sleep(down_s)
        if not self._launch(timeout_s):
            raise RuntimeError(f"redis-server did not start again: {self._log_tail()}")

    def _log_tail(self) -> str:
        log = Path(self._dir.name) / "server.log" if self._dir is not None else None
        return log.read_text(errors="replace")[-2000:] if log and log.exists() else ""

    def _launch(self, timeout_s: float) -> bool:
        assert self._dir is not None
        log = Path(self._dir.name) / "server.log"
        cmd = [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", self._dir.name,
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
            "--logfile", str(log),
            *self.args,
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.proc.poll() is None:
            if _ping(self.port):
                return True
            time.sleep(0.02)
        self.stop(keep_dir=True)
        return False

    def stop(self, *, keep_dir: bool = False) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
            if proc.stderr is not None:
                proc.stderr.close()
        if not keep_dir and self._dir is not None:
            self._dir.cleanup()
            self._dir = None


def _binary_or_skip() -> str:
    binary = server_binary()
    if binary is None:
        pytest.skip("redis-server (or valkey-server) not installed: apt-get install redis-server")
    return binary


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    server = RedisServer(_binary_or_skip())
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


class RedisCluster3:
    """Three cluster-mode servers joined into one cluster (every slot served, no replicas).
    ``extra`` goes on each server's command line (``--appendonly yes``: a node restarted
    with ``RedisServer.restart`` comes back with its data)."""

    def __init__(self, binary: str, n: int = 3, *extra: str) -> None:
        args = (
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            "5000",
            *extra,
        )
        self.nodes = [RedisServer(binary, *args) for _ in range(n)]

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def start(self, timeout_s: float = 20.0) -> None:
        import redis

        for node in self.nodes:
            node.start()
        cli = shutil.which("redis-cli") or shutil.which("valkey-cli") or "/usr/bin/redis-cli"
        addrs = [f"127.0.0.1:{node.port}" for node in self.nodes]
        subprocess.run(
            [cli, "--cluster", "create", *addrs, "--cluster-replicas", "0", "--cluster-yes"],
            check=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=timeout_s,
        )
        deadline = time.monotonic() + timeout_s
        for node in self.nodes:
            with redis.Redis(port=node.port) as r:
                while b"cluster_state:ok" not in r.execute_command("CLUSTER", "INFO"):
                    if time.monotonic() > deadline:
                        raise RuntimeError("the 3-node cluster did not come up")
                    time.sleep(0.05)

    def keys_per_node(self, pattern: str) -> list[int]:
        """How many keys matching ``pattern`` each node holds."""
        import redis

        out = []
        for node in self.nodes:
            with redis.Redis(port=node.port) as r:
                out.append(sum(1 for _ in r.scan_iter(match=pattern, count=1000)))
        return out

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisCluster3]:
    cluster = RedisCluster3(_binary_or_skip())
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def redis_cluster_url(redis_cluster: RedisCluster3) -> str:
    return redis_cluster.url
