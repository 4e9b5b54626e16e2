"""A site that moves to another server: the per-IP rule follows the address connected to.

The fetcher's side: a connection kept alive to an address its host no longer has is not
reused, so a request goes to the address its lease was taken on.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_polite_servers import UA, log_server, read_log

from politecrawl.config import FetchConfig
from politecrawl.net.fetch import Fetcher

pytestmark = pytest.mark.e2e


async def test_a_connection_kept_alive_to_the_address_its_host_left_is_not_reused(
    tmp_path: Path,
) -> None:
    """A new answer within a run (a TTL that ended): the request goes to the host's address
    now, on which the lease was taken, not over the connection kept alive to the old one;
    a connection to the address now is reused as before."""
    with log_server(tmp_path, "127.0.0.1", "127.0.0.2") as (port, log):
        cfg = FetchConfig(
            user_agent=UA,
            allow_private_addresses=True,
            resolve=(f"mover.test:{port}:127.0.0.1",),
        )
        async with Fetcher(cfg) as fetcher:
            got = [await fetcher.fetch(f"http://mover.test:{port}/p/1")]
            fetcher.resolver._exact[("mover.test", port)] = "127.0.0.2"  # the new answer
            got += [await fetcher.fetch(f"http://mover.test:{port}/p/{i}") for i in (2, 3)]
        rows = read_log(log)
    assert [r.ip for r in got] == ["127.0.0.1", "127.0.0.2", "127.0.0.2"]
    assert [r["ip"] for r in rows] == ["127.0.0.1", "127.0.0.2", "127.0.0.2"]
    assert rows[1]["conn"] == rows[2]["conn"]
