"""A local certificate authority for https test servers (``trustme``).

``LocalCA(hosts)`` issues one server certificate for the given names (and 127.0.0.1);
``server_context()`` is the ``ssl.SSLContext`` an aiohttp ``TCPSite`` serves with, and
``env(path)`` the environment a crawler subprocess needs to trust the CA: OpenSSL reads
``SSL_CERT_FILE`` when the client builds its default context (aiohttp does), so the crawler
verifies certificates exactly as on the web, against this CA only.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Sequence
from pathlib import Path

import trustme


class LocalCA:
    """A throwaway CA and one server certificate for ``hosts``."""

    def __init__(self, hosts: Sequence[str]) -> None:
        self.ca = trustme.CA()
        self.cert = self.ca.issue_cert(*hosts, "127.0.0.1")

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.cert.configure_cert(ctx)
        return ctx

    def write_ca(self, path: Path) -> Path:
        """The CA certificate as PEM at ``path`` (for ``SSL_CERT_FILE``)."""
        self.ca.cert_pem.write_to_path(str(path))
        return path

    def env(self, ca_file: Path) -> dict[str, str]:
        """This process's environment, trusting only the CA written at ``ca_file``."""
        return {**os.environ, "SSL_CERT_FILE": str(self.write_ca(ca_file))}
