"""The trap guard through the real command: a numbered site is not cut, a trap is, and the
summary names every cut (``summary.json``'s ``traps`` and the printed summary), with
``--processes 2`` too. ``--max-urls-per-pattern`` is set low: the point is the rule (a
pattern whose pages are real pages earns more budget), not the default's count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from originweb import SiteServer, empty_listing, session_ids, webcomic
from test_origins import crawl, jsonl

pytestmark = pytest.mark.e2e


async def test_a_webcomic_is_crawled_whole_and_a_trap_beside_it_is_cut_and_named(
    tmp_path: Path,
) -> None:
    comic, strips = webcomic(1500)  # a chain: each strip links only its neighbours, ends, home
    async with SiteServer(comic) as c, SiteServer(empty_listing()) as shop:
        printed: list[str] = []
        rc, err = await crawl(
            tmp_path,
            [f"http://comic.test:{c.port}/", f"http://shop.test:{shop.port}/s?page=1"],
            [f"comic.test:{c.port}", f"shop.test:{shop.port}"],
            "--max-urls-per-pattern", "100",
            printed=printed,
        )  # fmt: skip
        asked, listings = c.paths(), shop.paths()
    assert rc == 0, err  # a trap cut is not a site lost (README, exit codes)
    assert sorted(asked) == sorted(strips), f"{len(strips - set(asked))} strips never asked"
    assert len(listings) <= 110, f"{len(listings)} pages of the endless listing asked"
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["sites_lost"] == []
    [trap] = summary["traps"]
    assert (trap["site"], trap["pattern"], trap["why"]) == (
        f"shop.test:{shop.port}", "/s?page=*", "budget"
    )
    assert trap["urls_not_followed"] >= 1
    assert f"shop.test:{shop.port} /s?page=*: budget" in printed[0]
    assert [t["pattern"] for t in jsonl(tmp_path / "out" / "log" / "traps.jsonl")] == ["/s?page=*"]


async def test_with_two_processes_every_partitions_traps_are_named(tmp_path: Path) -> None:
    comic, strips = webcomic(300)
    sites = {"shop": empty_listing(), "sid": session_ids(), "list": empty_listing()}
    async with (
        SiteServer(comic) as c,
        SiteServer(sites["shop"]) as a,
        SiteServer(sites["sid"]) as b,
        SiteServer(sites["list"]) as d,
    ):
        traps = {f"shop.test:{a.port}": "/s?page=1", f"sid.test:{b.port}": "/s/1/home",
                 f"list.test:{d.port}": "/s?page=1"}  # fmt: skip
        printed: list[str] = []
        rc, err = await crawl(
            tmp_path,
            [f"http://comic.test:{c.port}/"] + [f"http://{h}{p}" for h, p in traps.items()],
            [f"comic.test:{c.port}", *traps],
            "--max-urls-per-pattern", "50", "--processes", "2",
            printed=printed,
        )  # fmt: skip
        asked = c.paths()
    assert rc == 0, err
    assert sorted(asked) == sorted(strips)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    named = {t["site"]: t["pattern"] for t in summary["traps"]}
    assert named == {h: "/s/N/home" if h.startswith("sid") else "/s?page=*" for h in traps}
    for site in traps:
        assert site in printed[0]


async def test_a_trap_named_in_one_run_stays_named_in_its_resume(tmp_path: Path) -> None:
    """The endless listing named a trap in the first run; the resume, given the shop's home
    page as a new seed (it links into the listing), follows none of it. It judged each
    pattern from zero, and the trap had a second budget: the listing asked again."""
    listing = empty_listing()

    def shop(path: str) -> str | None:
        if path == "/":
            return '<html><body><h1>Shop</h1><a href="/s?page=1000">search</a></body></html>'
        return listing(path)

    async with SiteServer(shop) as s:
        seed = f"http://shop.test:{s.port}"
        rc, err = await crawl(
            tmp_path, [f"{seed}/s?page=1"], [f"shop.test:{s.port}"],
            "--max-urls-per-pattern", "20",
        )  # fmt: skip
        assert rc == 0, err
        first = len(s.paths())
        assert 20 <= first <= 60, first  # named at its budget, as before
        rc, err = await crawl(
            tmp_path, [f"{seed}/"], [f"shop.test:{s.port}"], "--max-urls-per-pattern", "20"
        )
        assert rc == 0, err
        again = s.paths()[first:]
    assert again == ["/"], again  # the home page, and none of the listing
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    [trap] = summary["traps"]  # the resume names the trap it kept cutting
    assert trap["pattern"] == "/s?page=*" and trap["urls_not_followed"] >= 1, trap
