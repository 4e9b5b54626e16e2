"""The budget policy (``--defer-ratio``) through the real command, on both frontiers.

Two sites on loopback, judged by what each server was asked. ``rail.test`` has six pages on
the topic and asks for a 0.5 s Crawl-delay; ``misc.test`` has forty pages on other things and
no delay. A focused crawl of ten pages seeded with both front pages: with the policy, the
poor site waits while the rail pages wait on their site's delay, so the budget is spent on
the six rail pages; without it (``--defer-ratio 0``), the poor site fills each wait and the
budget is gone before the rail site's second turn. The shared (Redis) frontier keeps the
same rule across its shards: it used to refuse the option and serve every ready site.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from conftest import UA
from originweb import SiteServer
from redis_server import redis_url  # noqa: F401  (fixture)

pytestmark = pytest.mark.e2e

TOPIC = "steam locomotive, heritage railway"
RAIL = 6
MISC = 40
BUDGET = 10  # pages: two front pages, the six rail pages and two more


def rail(path: str) -> str | None:
    if path == "/":
        links = "".join(f'<a href="/loco/{i}.html">steam locomotive {i}</a> ' for i in
                        range(1, RAIL + 1))  # fmt: skip
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


async def crawl(out: Path, ratio: str, extra: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The rail and misc pages the servers were asked, in order."""
    async with (
        SiteServer(rail, robots="User-agent: *\nCrawl-delay: 0.5\nDisallow:\n") as good,
        SiteServer(misc) as poor,
    ):
        seeds = out.parent / f"seeds-{ratio}.txt"
        seeds.write_text(f"http://rail.test:{good.port}/\nhttp://misc.test:{poor.port}/\n")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "politecrawl", "crawl", "--seeds", str(seeds),
            "--resolve", f"rail.test:{good.port}:127.0.0.1",
            "--resolve", f"misc.test:{poor.port}:127.0.0.1",
            "--user-agent", UA, "--out", str(out), "--topic", TOPIC,
            "--max-pages", str(BUDGET), "--defer-ratio", ratio, "--min-delay", "0.01",
            "--jitter", "0", "--allow-private-addresses", "--no-progress",
            "--ip-min-delay", "off", *extra,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 120)
        assert proc.returncode == 0, (stdout + stderr).decode()[-3000:]
        return good.paths(), poor.paths()


@pytest.mark.parametrize("frontier", ["sqlite", "redis"])
async def test_a_poor_site_waits_while_the_rail_site_waits_on_its_delay(
    tmp_path: Path, frontier: str, request: pytest.FixtureRequest
) -> None:
    extra: tuple[str, ...] = ()
    if frontier == "redis":
        url = request.getfixturevalue("redis_url")
        extra = ("--frontier", url, "--crawl-id", f"budget-{tmp_path.name}")
    held_rail, held_misc = await crawl(tmp_path / "held", "0.5", extra)
    loco = [p for p in held_rail if p.startswith("/loco/")]
    assert len(loco) == RAIL, (held_rail, held_misc)  # every rail page in the budget
    assert len(held_misc) <= BUDGET - 1 - RAIL, held_misc
    extra = (*extra[:-1], f"free-{tmp_path.name}") if extra else ()
    free_rail, free_misc = await crawl(tmp_path / "free", "0", extra)
    # without the policy the poor site fills every wait: the rail pages are left behind
    assert len([p for p in free_rail if p.startswith("/loco/")]) < RAIL, (free_rail, free_misc)
    assert len(free_misc) > len(held_misc), (free_misc, held_misc)
