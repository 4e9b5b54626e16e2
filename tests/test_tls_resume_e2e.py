"""An origin lost to TLS, and the same command again (an outside tester's F3), through the real
command against loopback servers named by ``--resolve`` (https with the tests' ``LocalCA``).

http://t.test links three pages of https://t.test, another origin of the same host; the
first run cannot reach that origin (a certificate for another name, or garbage answered to
the handshake) and names the site given up, exit 3. Then the same command again:

- with ``--tls-insecure``: the URLs dropped for ``tls:certificate`` are queued again, said in
  one line, the origin's robots.txt is asked again and its pages fetched; nothing is lost.
  Before, it printed "nothing left to do", made no request and exited 0.
- without it: nothing to do, but the site is still lost: named, exit 3. Before, "nothing left
  to do" and exit 0, as if the crawl were complete.
- after a handshake that failed, with no flag: asked again (it may pass: a server
  restarting, a middlebox) and fetched. Before, never asked again.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from conftest import UA
from loopbackweb import serving
from tlsweb import LocalCA

from politecrawl.storage.logs import read_jsonl

pytestmark = pytest.mark.e2e

ROBOTS = "User-agent: *\nDisallow:\n"
DEAD = ["/d1", "/d2", "/d3"]


class Site:
    """A handler that logs the paths it was asked, run by run."""

    def __init__(self, pages: dict[str, list[str]]) -> None:
        self.pages = pages
        self.asked: list[str] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.asked.append(request.path)
        if request.path == "/robots.txt":
            return web.Response(text=ROBOTS)
        links = self.pages.get(request.path)
        if links is None:
            raise web.HTTPNotFound()
        body = "".join(f'<p><a href="{u}">{u}</a></p>' for u in links)
        html = f"<!doctype html><html><head><title>{request.path}</title></head><body>{body}"
        return web.Response(text=html + "</body></html>", content_type="text/html")


def live(tls_port: int) -> Site:
    return Site({"/": ["/p1", *(f"https://t.test:{tls_port}{d}" for d in DEAD)], "/p1": []})


def secure() -> Site:
    return Site({"/d1": ["/e1"], "/d2": [], "/d3": [], "/e1": []})


async def crawl(
    out: Path, port: int, tls_port: int, env: dict[str, str], *extra: str
) -> tuple[int, str, str]:
    """``python -m politecrawl crawl http://t.test:PORT/``: exit code, stdout, stderr."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "politecrawl", "crawl", f"http://t.test:{port}/",
        "--user-agent", UA, "--out", str(out), "--allow-private-addresses", "--scope", "host",
        "--resolve", f"t.test:{port}:127.0.0.1", "--resolve", f"t.test:{tls_port}:127.0.0.1",
        "--min-delay", "0", "--jitter", "0", "--delay-factor", "0", "--ip-min-delay", "off",
        "--retry-base", "0.2", "--transient-attempts", "3", "--max-time", "60",
        "--no-progress", *extra,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    stdout, stderr = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, stdout.decode(), stderr.decode()


def summary(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return data


def stored(out: Path) -> set[str]:
    rows = read_jsonl(out / "log" / "requests.jsonl")
    return {r["url"].split("/", 3)[-1] for r in rows
            if r.get("outcome") == "stored" and r["url"].startswith("https:")}  # fmt: skip


def given_up(out: Path, reason: str) -> dict[str, Any]:
    """The first run's loss: t.test given up for ``reason``, its 3 URLs dropped."""
    lost = summary(out)["sites_lost"]
    assert [(x["site"], x["state"], x["urls_left"]) for x in lost] == [
        ("t.test", "given_up", 3)
    ], lost
    assert reason in lost[0]["reason"], lost
    loss: dict[str, Any] = lost[0]
    return loss


async def _lost_to_a_certificate(
    tmp_path: Path, *again: str
) -> tuple[Site, Site, tuple[int, str, str]]:
    """The first run against a certificate for another name, then the same command again
    with ``again``; the servers and the second run's exit code, stdout and stderr."""
    wrong = LocalCA(["other.example"])  # trusted, and not for t.test
    env = wrong.env(tmp_path / "ca.pem")
    out = tmp_path / "out"
    tls = secure()
    async with serving(tls.handle, wrong.server_context()) as tls_port:
        site = live(tls_port)
        async with serving(site.handle) as port:
            rc, stdout, err = await crawl(out, port, tls_port, env)
            assert rc == 3, stdout + err
            assert tls.asked == [], tls.asked  # (no request gets through the handshake)
            loss = given_up(out, "TLS certificate does not verify")
            assert "--tls-insecure" in loss["resume"], loss
            assert "--tls-insecure" in stdout, stdout
            site.asked.clear()
            second = await crawl(out, port, tls_port, env, *again)
    return site, tls, second


async def test_tls_insecure_on_a_resume_queues_again_what_a_certificate_lost(
    tmp_path: Path,
) -> None:
    site, tls, (rc, stdout, err) = await _lost_to_a_certificate(tmp_path, "--tls-insecure")
    out = tmp_path / "out"
    assert rc == 0, stdout + err
    assert "nothing left to do" not in stdout, stdout
    said = [line for line in stdout.splitlines() if line.startswith("resuming:")]
    assert len(said) == 1 and "3 URLs" in said[0] and "--tls-insecure" in said[0], stdout
    # the origin's robots.txt asked again, then its pages, and the page they link
    assert tls.asked[0] == "/robots.txt", tls.asked
    assert sorted(tls.asked[1:]) == ["/d1", "/d2", "/d3", "/e1"], tls.asked
    assert site.asked == [], site.asked  # the live origin had nothing left
    assert stored(out) == {"d1", "d2", "d3", "e1"}, stored(out)
    assert summary(out)["sites_lost"] == [], summary(out)["sites_lost"]


async def test_a_resume_with_nothing_to_do_names_the_sites_still_lost(tmp_path: Path) -> None:
    site, tls, (rc, stdout, err) = await _lost_to_a_certificate(tmp_path)
    assert rc == 3, stdout + err
    assert "nothing left to do" in stdout, stdout
    assert "t.test: given_up" in stdout and "--tls-insecure" in stdout, stdout
    assert "1 site lost" in err and "1 given up" in err, err
    assert site.asked == [] and tls.asked == [], (site.asked, tls.asked)
    given_up(tmp_path / "out", "TLS certificate does not verify")


async def test_a_resume_asks_again_an_origin_whose_handshake_failed(tmp_path: Path) -> None:
    """Garbage answered to the handshake: given up at once, and the summary says a resume
    asks again; the same command again (no flag), the server now speaking TLS, fetches it."""
    ca = LocalCA(["t.test"])
    env = ca.env(tmp_path / "ca.pem")
    out = tmp_path / "out"
    handshakes = 0

    async def junk(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal handshakes
        handshakes += 1
        await reader.read(100)  # a ClientHello, answered with no TLS at all
        writer.write(b"HTTP/1.1 200 OK\r\nX: not tls\r\n\r\n")
        await writer.drain()
        writer.close()

    raw = await asyncio.start_server(junk, "127.0.0.1", 0)
    tls_port = int(raw.sockets[0].getsockname()[1])
    site = live(tls_port)
    async with serving(site.handle) as port:
        async with raw:
            rc, stdout, err = await crawl(out, port, tls_port, env)
        assert rc == 3, stdout + err
        assert handshakes == 1, handshakes
        loss = given_up(out, "TLS handshake fails")
        assert loss["resume"].startswith("a resume asks it again"), loss
        assert "asked again on a resume" in stdout, stdout
        tls = secure()
        async with serving(tls.handle, ca.server_context(), port=tls_port):
            rc, stdout, err = await crawl(out, port, tls_port, env)
    assert rc == 0, stdout + err
    said = [line for line in stdout.splitlines() if line.startswith("resuming:")]
    assert len(said) == 1 and "3 URLs" in said[0] and "handshake" in said[0], stdout
    assert tls.asked[0] == "/robots.txt", tls.asked
    assert sorted(tls.asked[1:]) == ["/d1", "/d2", "/d3", "/e1"], tls.asked
    assert stored(out) == {"d1", "d2", "d3", "e1"}, stored(out)
    assert summary(out)["sites_lost"] == [], summary(out)["sites_lost"]
