"""Same content under many URLs, and pages that change on a clock we control (DupWeb)."""

from __future__ import annotations

import collections
import dataclasses
import json
from pathlib import Path

import pytest
from conftest import UA
from dupweb import DupWeb, FakeClock
from warcio.archiveiterator import ArchiveIterator

from politecrawl import CrawlConfig, Crawler, FetchConfig, PolitenessConfig
from politecrawl.storage.logs import read_jsonl


def config(web: DupWeb, out: Path, **kw: object) -> CrawlConfig:
    base = CrawlConfig(
        seeds=tuple(web.seed_urls()),
        out_dir=out,
        fetch=FetchConfig(
            user_agent=UA,
            resolve=(web.resolve_arg(),),
            allow_private_addresses=True,
            retry_base_s=0.2,
        ),
        politeness=PolitenessConfig(
            min_delay_s=0.05,
            jitter_s=0.0,
            response_time_factor=0.0,
            park_s=0.5,
            ip_min_delay_s=None,  # the test web's names on 127.0.0.1 stand for many servers
        ),
        concurrency=8,
        scope="any",
        progress=False,
    )
    return dataclasses.replace(base, **kw)  # type: ignore[arg-type]


def warc_kinds(out: Path) -> collections.Counter[str]:
    kinds: collections.Counter[str] = collections.Counter()
    for path in (out / "warc").glob("*.warc.gz"):
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                kinds[rec.rec_type] += 1
    return kinds


@pytest.mark.e2e
async def test_duplicates_recognised_and_rules_learned(tmp_path: Path) -> None:
    async with DupWeb(n_sites=3, articles_per_site=12, seed=2) as web:
        out = tmp_path / "out"
        summary = await Crawler(config(web, out, max_pages=400)).run()
    c = summary.counters
    assert c["duplicates"] > 0
    rules = read_jsonl(out / "log" / "rules.jsonl")
    assert rules and all(r["rule"] for r in rules)  # each learned rule logged
    assert warc_kinds(out)["revisit"] == c["duplicates"]  # duplicates kept as revisit records
    pages = read_jsonl(out / "pages.jsonl")
    dups = [p for p in pages if p["duplicate_of"]]
    assert dups and all(p["duplicate_of"] != p["url"] for p in dups)
    # after a rule, variants of that shape are rewritten in the gate, and those queued
    # before it are dropped at dequeue: never fetched
    assert c["duplicate_url_rule"] > 0


@pytest.mark.e2e
async def test_recrawl_revisits_with_conditional_get_and_sees_changes(tmp_path: Path) -> None:
    clock = FakeClock()
    async with DupWeb(n_sites=2, articles_per_site=4, seed=3, clock=clock) as web:
        out = tmp_path / "out"
        cfg = config(
            web,
            out,
            seeds=(web.seed_urls()[0],),
            scope="host",
            recrawl=True,
            revisit_min_s=1.0,
            revisit_max_s=2.0,
            max_time_s=6.0,
            max_urls_per_host=12,
        )
        first = await Crawler(cfg).run()
        assert first.counters["revisits_scheduled"] > 0
        assert first.counters["not_modified"] > 0  # unchanged pages cost the site a 304
        clock.advance(days=3)  # the site changes its pages
        second = await Crawler(cfg).run()
    log = read_jsonl(out / "log" / "requests.jsonl")
    revisits = [r for r in log if r.get("revisit")]
    assert revisits and all(r["status"] in (200, 304) for r in revisits)
    assert second.counters["changes_seen"] > 0


@pytest.mark.unit
def test_log_stats_lists_the_learned_rules(tmp_path: Path) -> None:
    from politecrawl.storage import JsonlLog
    from politecrawl.tools import logstats

    (tmp_path / "log").mkdir()
    JsonlLog(tmp_path / "log" / "requests.jsonl").close()
    rules = JsonlLog(tmp_path / "log" / "rules.jsonl")
    rules.write({"rule": "a.dup: drop query parameter 'sid' (3 duplicate pairs)"})
    rules.close()
    text = logstats.format_text(logstats.compute(tmp_path))
    assert "drop query parameter 'sid'" in text


def _words(first: str, n: int = 200) -> list[str]:
    """Distinct letter-only words (the fingerprint ignores digits)."""
    import itertools
    import string

    return [first + "".join(t) for t in itertools.product(string.ascii_lowercase, repeat=2)][:n]


def _text(words: list[str]) -> str:
    return " ".join(words)


@pytest.mark.unit
def test_near_duplicates_found_across_restarts_and_old_state_migrated(tmp_path: Path) -> None:
    """The index is rebuilt from its table at start; a save no longer writes it whole."""
    from politecrawl.continuity.fingerprint import simhash
    from politecrawl.continuity.tracker import Continuity, PageVerdict
    from politecrawl.storage import JsonlLog
    from politecrawl.storage.warc import payload_digest

    words = _words("w")
    near = [*words[:-1], "changed"]  # one word apart: a near-duplicate, not an exact one

    def opened() -> Continuity:
        log = JsonlLog(tmp_path / "rules.jsonl", rotate_bytes=None, retention_days=None)
        return Continuity(
            tmp_path, recrawl=False, revisit_min_s=60, revisit_max_s=600, rules_log=log
        )

    def page(c: Continuity, url: str, text: str, now: float) -> PageVerdict:
        digest = payload_digest(text.encode())
        return c.on_page(url, text, None, digest=digest, now=now, etag=None, last_modified=None)

    c = opened()
    v = page(c, "http://a.test/1", _text(words), 1.0)
    assert v.duplicate_of is None and v.near_duplicate_of is None
    c.close()
    c = opened()
    assert len(c.near) == 1
    v = page(c, "http://a.test/2", _text(near), 2.0)
    # close, not the same bytes: marked, never recorded as a duplicate
    assert v.near_duplicate_of == "http://a.test/1"
    assert v.duplicate_of is None and v.original is None
    c.close()

    # a continuity.sqlite from before the near table: the index as JSON with URLs as doc ids
    import sqlite3

    db = sqlite3.connect(tmp_path / "continuity.sqlite")
    db.execute("DELETE FROM near")
    other = _words("o")
    fp = simhash(_text(other))
    state = {
        "version": 1,
        "max_distance": 3,
        "capacity": 10,
        "entries": [[f"{fp:016x}", "http://a.test/9"]],
    }
    db.execute("INSERT OR REPLACE INTO kv VALUES ('near', ?)", (json.dumps(state),))
    db.commit()
    db.close()
    c = opened()
    v = page(c, "http://a.test/10", _text([*other[:-1], "x"]), 3.0)
    assert v.near_duplicate_of == "http://a.test/9"
    c.close()


@pytest.mark.unit
def test_fingerprints_of_another_simhash_version_are_dropped_not_compared(
    tmp_path: Path,
) -> None:
    """A continuity.sqlite without the current ``simhash`` version (one written before the
    key existed holds version 1 values) loses its fingerprints when opened: the near index
    starts empty and a revisit's change is "unknown" instead of a comparison across
    versions; the rest of the file (captures, revisit schedule) stays."""
    import sqlite3

    from politecrawl.continuity.fingerprint import SIMHASH_VERSION
    from politecrawl.continuity.tracker import Continuity, PageVerdict
    from politecrawl.storage import JsonlLog
    from politecrawl.storage.warc import payload_digest

    words = _words("w")
    near = [*words[:-1], "changed"]
    path = tmp_path / "continuity.sqlite"

    def opened() -> Continuity:
        log = JsonlLog(tmp_path / "rules.jsonl", rotate_bytes=None, retention_days=None)
        return Continuity(
            tmp_path, recrawl=True, revisit_min_s=60, revisit_max_s=600, rules_log=log
        )

    def page(c: Continuity, url: str, text: str, now: float) -> PageVerdict:
        digest = payload_digest(text.encode())
        return c.on_page(url, text, None, digest=digest, now=now, etag=None, last_modified=None)

    def stored_fingerprints() -> tuple[int, list[object]]:
        db = sqlite3.connect(path)
        try:
            near_rows = db.execute("SELECT count(*) FROM near").fetchone()[0]
            fps = [json.loads(r)[10] for (r,) in db.execute("SELECT row FROM revisit")]
        finally:
            db.close()
        return int(near_rows), fps

    c = opened()
    page(c, "http://a.test/1", _text(words), 1.0)
    c.close()
    near_rows, fps = stored_fingerprints()
    assert near_rows == 1 and len(fps) == 1 and isinstance(fps[0], int)

    c = opened()  # the same version: kept and compared
    assert len(c.near) == 1
    assert page(c, "http://a.test/2", _text(near), 2.0).near_duplicate_of == "http://a.test/1"
    again = page(c, "http://a.test/1", _text(words), 3.0)
    assert again.revisit and again.changed is False
    c.close()

    db = sqlite3.connect(path)  # as a file written before the version key
    db.execute("DELETE FROM kv WHERE name='simhash'")
    db.commit()
    db.close()
    c = opened()
    assert len(c.near) == 0
    assert stored_fingerprints() == (0, [None, None])
    assert c.state("http://a.test/1") is not None  # its schedule is kept
    v = page(c, "http://a.test/3", _text(near), 4.0)
    assert v.near_duplicate_of is None  # nothing old to be near to: filed afresh
    again = page(c, "http://a.test/1", _text(words), 5.0)
    assert again.revisit and again.changed is None  # not compared with the old value
    assert again.near_duplicate_of == "http://a.test/3"  # new values are compared
    c.close()
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM kv WHERE name='simhash'").fetchone() == (
        str(SIMHASH_VERSION),
    )
    db.close()
