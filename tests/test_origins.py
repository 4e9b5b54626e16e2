"""Never lose a site (issue 28, sections 1 and 2), through the real command.

Each test runs ``python -m politecrawl crawl`` against loopback servers named by
``--resolve`` and judges by what the servers logged and what landed in ``out/log``:

- a forum of 2,025 numbered pages whose threads link a dead origin of the same host (a port
  where nothing listens) is fetched whole, and nothing of it is named a trap;
- an endless calendar is stopped within a few hundred requests and named;
- an https site (a local CA, ``SSL_CERT_FILE``) with http -> https redirects and a link to a
  dead http origin of the same host is fetched whole.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from loopbackweb import serving
from originweb import SiteServer, calendar, closed_port, forum, numbered
from pageweb import UA
from redis_server import redis_url  # noqa: F401  (fixture)
from tlsweb import LocalCA

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e


async def crawl(
    tmp_path: Path,
    seeds: list[str],
    resolve: list[str],
    *extra: str,
    env: dict[str, str] | None = None,
    timeout_s: float = 240.0,
    printed: list[str] | None = None,
) -> tuple[int, str]:
    """The real command; returns its exit code and stderr (``printed``: gets its stdout)."""
    seeds_file = tmp_path / "seeds.txt"
    seeds_file.write_text("\n".join(seeds) + "\n")
    args = [
        "crawl", "--seeds", str(seeds_file), "--user-agent", UA, "--out", str(tmp_path / "out"),
        "--min-delay", "0", "--jitter", "0", "--delay-factor", "0", "--ip-min-delay", "off",
        "--allow-private-addresses", "--scope", "host", "--no-progress", "--max-time", "200",
        # a dead origin's robots.txt is asked again as a page: 0.2 s, 0.4 s, then given up
        "--retry-base", "0.2", "--transient-attempts", "3",
        *(a for r in resolve for a in ("--resolve", f"{r}:127.0.0.1")), *extra,
    ]  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "politecrawl", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout_s)
    assert proc.returncode is not None
    if printed is not None:
        printed.append(stdout.decode())
    return proc.returncode, stderr.decode()


def jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return read_jsonl(path)  # with its rotated parts


def stored(tmp_path: Path) -> set[str]:
    """URLs the request log says were fetched and kept."""
    rows = jsonl(tmp_path / "out" / "log" / "requests.jsonl")
    return {r["url"] for r in rows if r.get("status") == 200 and r.get("outcome") == "stored"}


def only_the_dead_origin_lost(rc: int, err: str, tmp_path: Path, dead: int) -> None:
    """Exit 3 names what was lost: here only the dead origin's URLs (its robots.txt never
    answered), named in the summary with that origin; nothing else of the site."""
    assert rc == 3, err
    lost = json.loads((tmp_path / "out" / "summary.json").read_text())["sites_lost"]
    assert lost and all(f":{dead}" in str(s["reason"]) for s in lost), lost


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
async def test_a_forum_linking_a_dead_origin_of_its_host_is_fetched_whole(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    extra: list[str] = []
    if backend == "redis":
        url = request.getfixturevalue("redis_url")
        extra = ["--frontier", url, "--crawl-id", f"forum-{uuid.uuid4().hex[:8]}"]
    dead = closed_port()
    site, paths = forum(dead_origin=f"http://forum.test:{dead}")
    async with SiteServer(site) as server:
        base = f"http://forum.test:{server.port}"
        rc, err = await crawl(
            tmp_path,
            [base + "/forum/page/1"],
            [f"forum.test:{server.port}", f"forum.test:{dead}"],
            *extra,
        )
        asked = server.paths()
    if backend == "sqlite":
        only_the_dead_origin_lost(rc, err, tmp_path, dead)
    else:  # a shared crawl's worker names what it gave up too
        assert rc in (0, 3), err
    assert len(paths) == 2025
    missing = paths - set(asked)
    assert not missing, (
        f"{len(missing)} of {len(paths)} pages never asked, e.g. {sorted(missing)[:5]}"
    )
    assert len(asked) == len(set(asked))  # each page once
    assert {base + p for p in paths} <= stored(tmp_path)
    assert jsonl(tmp_path / "out" / "log" / "traps.jsonl") == []  # a site that ends: no trap
    # the dead origin: its robots.txt asked a few times, none of its pages
    robots = jsonl(tmp_path / "out" / "log" / "robots.jsonl")
    assert any(f":{dead}" in json.dumps(r) for r in robots)


async def test_an_endless_calendar_beside_a_forum_is_stopped_the_forum_fetched_whole(
    tmp_path: Path,
) -> None:
    """One host, two URL spaces: the guard must tell the one that ends from the one that
    doesn't (on the old guard the forum's reply pages were named a trap after 100)."""
    cal = calendar()
    board, paths = forum()

    def town(path: str) -> str | None:
        return cal(path) if path == "/" or path.startswith("/cal/") else board(path)

    async with SiteServer(town) as server:
        base = f"http://town.test:{server.port}"
        rc, err = await crawl(
            tmp_path, [base + "/", base + "/forum/page/1"], [f"town.test:{server.port}"]
        )
        asked = server.paths()
    assert rc == 0, err
    days = [p for p in asked if p.startswith("/cal/")]
    print(f"calendar pages asked: {len(days)}")
    assert len(days) <= 500, f"{len(days)} calendar pages asked"
    missing = paths - set(asked)
    assert not missing, f"{len(missing)} forum pages never asked, e.g. {sorted(missing)[:5]}"
    traps = jsonl(tmp_path / "out" / "log" / "traps.jsonl")
    assert traps and {t["pattern"] for t in traps} <= {"/cal/N/N/N"}, traps
    assert "suspected crawler trap on town.test" in err


async def test_a_numbered_site_of_thousands_of_pages_is_not_a_trap(tmp_path: Path) -> None:
    site, paths = numbered(3000)
    async with SiteServer(site) as server:
        base = f"http://num.test:{server.port}"
        rc, err = await crawl(tmp_path, [base + "/"], [f"num.test:{server.port}"])
        asked = set(server.paths())
    assert rc == 0, err
    assert jsonl(tmp_path / "out" / "log" / "traps.jsonl") == []
    # every page reachable from / is asked (a few may have no in-link: random links)
    assert len(asked & paths) >= 0.95 * len(paths), len(asked & paths)


async def test_https_site_with_redirects_and_a_dead_http_origin(tmp_path: Path) -> None:
    ca = LocalCA(["secure.test"])
    dead = closed_port()
    site, paths = forum(listings=3, per_listing=5, replies=3, dead_origin=None)
    pages = {p: site(p) for p in paths}

    def https_site(path: str) -> str | None:
        if path == "/forum/page/1":  # one link to the dead http origin, one via http -> https
            text = pages[path]
            assert text is not None
            return text.replace(
                "</ul>",
                f'<li><a href="http://secure.test:{dead}/old">old</a></li>'
                f'<li><a href="{plain_base}/forum/page/3">plain</a></li></ul>',
            )
        return pages.get(path)

    async with SiteServer(https_site, ssl_ctx=ca.server_context()) as tls:
        secure = f"https://secure.test:{tls.port}"
        async with SiteServer(None, redirect_to=secure) as plain:
            plain_base = f"http://secure.test:{plain.port}"
            rc, err = await crawl(
                tmp_path,
                [plain_base + "/forum/page/1"],
                [f"secure.test:{p}" for p in (tls.port, plain.port, dead)],
                env=ca.env(tmp_path / "ca.pem"),
            )
            asked = tls.paths()
            redirected = plain.paths()
    only_the_dead_origin_lost(rc, err, tmp_path, dead)
    assert "/forum/page/1" in redirected  # the seed went http -> https
    missing = paths - set(asked)
    assert not missing, f"{len(missing)} of {len(paths)} https pages never asked: {sorted(missing)}"
    assert {secure + p for p in paths} <= stored(tmp_path)


async def test_origins_of_the_host_that_fail_or_hang_do_not_hold_back_the_one_that_answers(
    tmp_path: Path,
) -> None:
    """One host, three ports: the forum answers on one; on another every request answers
    503; on the third the connection is taken and nothing is ever said. robots.txt is per
    origin (RFC 9309 2.3): the two dead origins are given up on their own schedule and
    named, and the forum is fetched whole, at its own pace. Before, their robots.txt
    failures counted as the host's: five in a row (a 503 and four timeouts) paused the whole
    host for an hour, and the forum lost all but its first page."""
    board, paths = forum(listings=4)
    hung: list[asyncio.StreamWriter] = []

    async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        hung.append(writer)  # taken, never answered

    async def busy(request: web.Request) -> web.Response:
        return web.Response(status=503, text="busy")

    silent = await asyncio.start_server(hang, "127.0.0.1", 0)
    silent_port = silent.sockets[0].getsockname()[1]
    try:
        async with serving(busy) as busy_port, SiteServer(board) as server:
            ports = (server.port, busy_port, silent_port)
            rc, err = await crawl(
                tmp_path,
                [f"http://mix.test:{p}/" + ("forum/page/1" if p == server.port else "")
                 for p in ports],
                [f"mix.test:{p}" for p in ports],
                "--delay-factor", "1", "--request-time", "2", "--retry-base", "1",
                "--max-time", "90",
            )  # fmt: skip
            asked = server.paths()
    finally:
        silent.close()
        for w in hung:
            w.close()
    missing = paths - set(asked)
    assert not missing, f"{len(missing)} of {len(paths)} forum pages never asked\n{err[-2000:]}"
    assert "paused for" not in err, err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["stopped_by"] == "done", summary
    lost = summary["sites_lost"]
    assert lost and all(s["state"] != "parked" for s in lost), lost
    reasons = " ".join(str(s["reason"]) for s in lost)
    assert f":{busy_port}" in reasons and f":{silent_port}" in reasons, lost
    assert rc == 3, err


async def test_an_origin_whose_pages_fail_or_that_goes_away_leaves_the_others_whole(
    tmp_path: Path,
) -> None:
    """One host, three ports: the forum on one; on another robots.txt answers and every page
    503s; the third answers robots.txt and two pages, then stops listening (a server gone
    mid-crawl). The failing origins' pages go by their own retries and are named; the forum
    is fetched whole. Before, their failures counted as the host's: five in a row parked
    the whole host for an hour (an http port going down beside a live https one lost the
    https pages)."""
    board, paths = forum(listings=4)

    async def pages_fail(request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nDisallow:\n")
        return web.Response(status=503, text="busy")

    answered: list[str] = []
    listener: list[asyncio.Server] = []

    async def short_lived(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = (await reader.readline()).decode()
        await reader.readuntil(b"\r\n\r\n")
        path = line.split(" ")[1]
        answered.append(path)
        body = b"User-agent: *\nDisallow:\n" if path == "/robots.txt" else b"<p>gone soon</p>"
        kind = b"text/plain" if path == "/robots.txt" else b"text/html"
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: " + kind + b"\r\nContent-Length: "
                     + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
        await writer.drain()
        writer.close()
        if len(answered) == 3:
            listener[0].close()  # new connections refused from now on

    gone = await asyncio.start_server(short_lived, "127.0.0.1", 0)
    listener.append(gone)
    gone_port = gone.sockets[0].getsockname()[1]
    try:
        async with serving(pages_fail) as busy_port, SiteServer(board) as server:
            ports = (server.port, busy_port, gone_port)
            seeds = [f"http://mix.test:{server.port}/forum/page/1"]
            seeds += [f"http://mix.test:{p}/p{i}" for p in (busy_port, gone_port) for i in range(8)]
            rc, err = await crawl(
                tmp_path, seeds, [f"mix.test:{p}" for p in ports],
                "--request-time", "2", "--retry-base", "0.5", "--max-time", "120",
            )  # fmt: skip
            asked = server.paths()
    finally:
        gone.close()
    missing = paths - set(asked)
    assert not missing, f"{len(missing)} of {len(paths)} forum pages never asked\n{err[-2000:]}"
    assert "parked for" not in err and "paused for" not in err, err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["stopped_by"] == "done", summary
    lost = summary["sites_lost"]
    assert all(s["state"] != "parked" for s in lost), lost
    reasons = " | ".join(str(s["reason"]) for s in lost)
    assert f"every request to http://mix.test:{busy_port} failed" in reasons, lost
    assert f"http://mix.test:{gone_port} stopped answering" in reasons, lost
    assert rc == 3, err
