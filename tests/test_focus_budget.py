"""The budget policy (``--defer-ratio``) through the real command, on both frontiers.

Two sites on loopback, judged by what each server was asked. ``rail.test`` has six pages on
the topic and asks for a 0.5 s Crawl-delay; ``misc.test`` has forty pages on other things and
no delay. A focused crawl of ten pages seeded with both front pages: with the policy, the
poor site waits while the rail pages wait on their site's delay, so the budget is spent on
the six rail pages; without it (``--defer-ratio 0``), the poor site fills each wait and the
budget is gone before the rail site's second turn. The shared (Redis) frontier keeps the
same rule across its shards: it used to refuse the option and serve every ready site.

The unkind variant: the rail site over https (a local CA through ``SSL_CERT_FILE``), its
front page also linking each page at a dead http origin of the same host (a port where
nothing listens), with the topic's words in those links too. The dead origin is no reference
(it never answers): the policy still spends the budget on the live rail pages, the dead
origin costs a failed request or two (its robots.txt), and if the summary names a site lost
it is that origin only.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from conftest import UA
from originweb import SiteServer, closed_port
from redis_server import redis_url  # noqa: F401  (fixture)
from tlsweb import LocalCA

from politecrawl.engine.outcome import ROBOTS_FIRST_ASKS
from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

TOPIC = "steam locomotive, heritage railway"
RAIL = 6
MISC = 40
BUDGET = 10  # pages: two front pages, the six rail pages and two more


def rail(path: str, dead_origin: str = "") -> str | None:
    """``dead_origin``: the front page also links each page there (``http://host:port``)."""
    if path == "/":
        links = "".join(f'<a href="/loco/{i}.html">steam locomotive {i}</a> ' for i in
                        range(1, RAIL + 1))  # fmt: skip
        if dead_origin:
            links += "".join(f'<a href="{dead_origin}/loco/{i}.html">old steam locomotive {i}'
                             "</a> " for i in range(1, RAIL + 1))  # fmt: skip
        return f"<html><head><title>Heritage railway</title></head><body>{links}</body></html>"
    name = path.removeprefix("/loco/").removesuffix(".html")
    if not name.isdigit() or not 1 <= int(name) <= RAIL:
        return None
    text = "The steam locomotive of the heritage railway, its boiler and firebox. " * 8
    return (
        f"<html><head><title>Steam locomotive {name}</title></head><body><h1>Steam "
        f'locomotive {name}</h1><p>{text}</p><a href="/">heritage railway</a></body></html>'
    )


def misc(path: str) -> str | None:
    if path == "/":
        links = "".join(f'<a href="/note/{i}.html">note {i}</a> ' for i in range(1, MISC + 1))
        return f"<html><head><title>Notes</title></head><body>{links}</body></html>"
    name = path.removeprefix("/note/").removesuffix(".html")
    if not name.isdigit() or not 1 <= int(name) <= MISC:
        return None
    text = "Gardening notes: compost, seedlings and pruning the hedge. " * 8
    return f"<html><head><title>Note {name}</title></head><body><p>{text}</p></body></html>"


async def crawl(
    out: Path, ratio: str, extra: tuple[str, ...], ca: LocalCA | None = None, dead: int = 0
) -> tuple[list[str], list[str]]:
    """The rail and misc pages the servers were asked, in order. ``ca``: the rail site over
    https, its front page linking a dead http origin of its host at port ``dead``."""
    scheme = "https" if ca else "http"
    dead_origin = f"http://rail.test:{dead}" if dead else ""
    async with (
        SiteServer(
            lambda path: rail(path, dead_origin),
            robots="User-agent: *\nCrawl-delay: 0.5\nDisallow:\n",
            ssl_ctx=ca.server_context() if ca else None,
        ) as good,
        SiteServer(misc) as poor,
    ):
        seeds = out.parent / f"seeds-{ratio}.txt"
        seeds.write_text(f"{scheme}://rail.test:{good.port}/\nhttp://misc.test:{poor.port}/\n")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "politecrawl", "crawl", "--seeds", str(seeds),
            "--resolve", f"rail.test:{good.port}:127.0.0.1",
            "--resolve", f"misc.test:{poor.port}:127.0.0.1",
            *(("--resolve", f"rail.test:{dead}:127.0.0.1") if dead else ()),
            "--user-agent", UA, "--out", str(out), "--topic", TOPIC,
            "--max-pages", str(BUDGET), "--defer-ratio", ratio, "--min-delay", "0.01",
            "--jitter", "0", "--allow-private-addresses", "--no-progress",
            "--ip-min-delay", "off", *extra,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=ca.env(out.parent / "ca.pem") if ca else None,
        )  # fmt: skip
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 120)
        # exit 3 if the summary names sites lost: only the dead origin may be (the caller)
        assert proc.returncode in ((0, 3) if dead else (0,)), (stdout + stderr).decode()[-3000:]
        return good.paths(), poor.paths()


def shared(request: pytest.FixtureRequest, frontier: str, name: str) -> tuple[str, ...]:
    """The options of a crawl on ``frontier`` (``redis``: a crawl id of its own)."""
    if frontier != "redis":
        return ()
    return ("--frontier", request.getfixturevalue("redis_url"), "--crawl-id", name)


@pytest.mark.parametrize("frontier", ["sqlite", "redis"])
async def test_a_poor_site_waits_while_the_rail_site_waits_on_its_delay(
    tmp_path: Path, frontier: str, request: pytest.FixtureRequest
) -> None:
    extra = shared(request, frontier, f"budget-{tmp_path.name}")
    held_rail, held_misc = await crawl(tmp_path / "held", "0.5", extra)
    loco = [p for p in held_rail if p.startswith("/loco/")]
    assert len(loco) == RAIL, (held_rail, held_misc)  # every rail page in the budget
    assert len(held_misc) <= BUDGET - 1 - RAIL, held_misc
    extra = shared(request, frontier, f"free-{tmp_path.name}")
    free_rail, free_misc = await crawl(tmp_path / "free", "0", extra)
    # without the policy the poor site fills every wait: the rail pages are left behind
    assert len([p for p in free_rail if p.startswith("/loco/")]) < RAIL, (free_rail, free_misc)
    assert len(free_misc) > len(held_misc), (free_misc, held_misc)


@pytest.mark.parametrize("frontier", ["sqlite", "redis"])
async def test_the_policy_holds_on_https_beside_a_dead_origin_of_the_host(
    tmp_path: Path, frontier: str, request: pytest.FixtureRequest
) -> None:
    ca = LocalCA(["rail.test"])
    dead = closed_port()
    extra = shared(request, frontier, f"tls-{tmp_path.name}")
    # (the dead origin's robots.txt is asked 6 times on the retry schedule before its URLs
    # go: at the default 30 s base that is 15 minutes; the point here is the budget policy)
    extra = (*extra, "--retry-base", "0.2")
    rail_paths, misc_paths = await crawl(tmp_path / "held", "0.5", extra, ca, dead)
    loco = [p for p in rail_paths if p.startswith("/loco/")]
    assert len(loco) == RAIL, (rail_paths, misc_paths)  # every live rail page, over https
    assert len(misc_paths) <= BUDGET - 1 - RAIL, misc_paths
    out = tmp_path / "held"
    lost = json.loads((out / "summary.json").read_text())["sites_lost"]
    assert all(f":{dead}" in str(s["reason"]) for s in lost), lost
    asked = [r for r in read_jsonl(out / "log" / "requests.jsonl") if f":{dead}/" in r["url"]]
    assert asked and all(r["status"] is None and r["error"] for r in asked), asked
    # its robots.txt only, its asks (``outcome.ROBOTS_FIRST_ASKS``): no page of it asked
    assert len(asked) <= ROBOTS_FIRST_ASKS and all(r["url"].endswith("/robots.txt") for r in asked)
