"""Continuous crawling: recognise what is the same, revisit what changes.

Every stored page gets its payload digest (the WARC-Payload-Digest of the bytes stored) and
a SimHash of its text. Only a byte-identical payload makes a page a duplicate: one whose
payload was stored under another URL of its site is a duplicate of the first (a WARC revisit
record naming that capture, its links not followed). A page whose text is merely close to
another's (SimHash) is a near-duplicate: stored in full, its links followed, and marked as
such in ``pages.jsonl`` (``near_duplicate_of``); reports that differ only in their numbers,
or ``i8`` and ``i16`` docs pages, are different pages. A page fetched again with the payload
it had is a revisit of its own earlier capture. The capture each URL's content is in is
kept (``capture_of``), so a 304 later names it.

From byte-identical pairs ``duprules.RuleLearner`` learns per-site URL rewrite rules
(parameters that never change content, www. vs bare host, index.html, case), which the
admission gate applies to every later URL, so variants of that shape are never fetched; each
learned rule goes to ``log/rules.jsonl``. Near-duplicates are no evidence for a rule: a rule
merges URLs, and two URLs whose bytes differ are not the same page. ``<link rel=canonical>``
to the same host counts as a duplicate pair (a pair with different payloads, seen by
``observe_page``, still contradicts a rule for good).

With ``--recrawl`` every fetched page comes back after its revisit interval
(``revisit.RevisitPolicy``: a per-URL change-rate estimate from what its fetches showed,
bounded by --revisit-min/--revisit-max, seeded by sitemap changefreq/lastmod), through
everything a first fetch goes through, as a conditional GET.

State lives in ``OUT/continuity.sqlite``: revisit rows, the first capture of each payload per
site (``payloads``), the latest capture of each URL (``captures``), the pages filed in
the near-duplicate index (``near``: written as they are filed, committed with the crawl), and
the learned rules (JSON, saved with the crawl); ``kv`` also names the ``simhash`` version of
the fingerprints stored (``fingerprint.SIMHASH_VERSION``): a file written with another one
has its fingerprints dropped when opened, never compared with new ones. In memory the index
holds a fingerprint and a row number per page (its URL is read back only for a hit), at most
``NearDupIndex.capacity`` of them: a long crawl's memory does not grow with its pages.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from politecrawl.continuity.duprules import RuleLearner
from politecrawl.continuity.fingerprint import (
    SIMHASH_VERSION,
    NearDupIndex,
    simhash,
    to_signed64,
    to_unsigned64,
)
from politecrawl.continuity.revisit import RevisitPolicy, RevisitState, content_changed
from politecrawl.errors import StorageError
from politecrawl.storage import JsonlLog
from politecrawl.storage.warc import Capture
from politecrawl.urls.canonical import host_of, registered_domain

_MIN_TEXT = 64  # characters of visible text below which no page is anyone's duplicate
_SCHEMA = """
PRAGMA journal_mode=WAL;
CREATE TABLE IF NOT EXISTS revisit(url TEXT PRIMARY KEY, row TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS exact(fp TEXT PRIMARY KEY, url TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kv(name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS near(id INTEGER PRIMARY KEY, fp INTEGER NOT NULL, url TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS payloads(key TEXT PRIMARY KEY, row TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS captures(url TEXT PRIMARY KEY, row TEXT NOT NULL) WITHOUT ROWID;
"""


@dataclass(frozen=True, slots=True)
class PageVerdict:
    """What a fetched page is. ``original``: a capture with this very payload (another URL's,
    then ``duplicate_of`` is that URL, or this URL's own earlier one): the WARC gets a
    revisit record naming it. ``near_duplicate_of``: a page of the site whose text is close
    (SimHash); nothing but a mark."""

    duplicate_of: str | None
    original: Capture | None
    near_duplicate_of: str | None
    revisit: bool  # fetched before
    changed: bool | None
    next_due: float | None  # with --recrawl: when to fetch it again


class Continuity:
    def __init__(
        self,
        out_dir: Path,
        *,
        recrawl: bool,
        revisit_min_s: float,
        revisit_max_s: float,
        rules_log: JsonlLog,
        name: str = "continuity.sqlite",
    ) -> None:
        self.recrawl = recrawl
        self.policy = RevisitPolicy(min_s=revisit_min_s, max_s=revisit_max_s)
        self.near: NearDupIndex = NearDupIndex()
        self.rules = RuleLearner()
        self._rules_log = rules_log
        self._hints: dict[str, float] = {}
        path = out_dir / name
        try:
            self._db = sqlite3.connect(path, isolation_level="DEFERRED")
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open {path}: {exc}") from exc
        try:
            self._db.executescript(_SCHEMA)
            version = None
            for name, value in self._db.execute("SELECT name, value FROM kv"):
                if name == "near":  # the format before the near table: URLs as doc ids
                    self._migrate_near(json.loads(value))
                elif name == "rules":
                    self.rules.load_state(json.loads(value))
                elif name == "simhash":
                    version = value
            if version != str(SIMHASH_VERSION):
                self._forget_fingerprints()
            self._load_near()
        except (sqlite3.Error, ValueError, KeyError, TypeError) as exc:
            # a damaged file (or another program's) is named, not shown as a traceback
            self._db.close()
            raise StorageError(f"cannot open {path}: {exc}") from exc

    def _load_near(self) -> None:
        """The newest ``capacity`` filed pages back into the index, oldest first."""
        rows = self._db.execute(
            "SELECT id, fp FROM near ORDER BY id DESC LIMIT ?", (self.near.capacity,)
        ).fetchall()
        for row_id, fp in reversed(rows):
            self.near.add(to_unsigned64(fp), row_id)

    def _migrate_near(self, state: dict[str, Any]) -> None:
        self._db.executemany(
            "INSERT INTO near(fp, url) VALUES (?,?)",
            [(to_signed64(int(fp_hex, 16)), str(url)) for fp_hex, url in state["entries"]],
        )
        self._db.execute("DELETE FROM kv WHERE name='near'")
        self._commit()

    def _forget_fingerprints(self) -> None:
        """SimHashes stored by another version of ``simhash`` (a file without the ``simhash``
        key predates the key, so its values are version 1) are not comparable with this one's:
        the near-duplicate index's rows go, and revisit rows keep everything but their
        fingerprint, so a page's next fetch says "changed: unknown" rather than comparing
        across versions, and stores one of this version."""
        self._db.execute("DELETE FROM near")
        forgotten = []
        for url, row in self._db.execute("SELECT url, row FROM revisit").fetchall():
            state = RevisitState.from_row(json.loads(row))
            if state.fingerprint is not None:
                state.fingerprint = None
                forgotten.append((json.dumps(state.to_row()), url))
        self._db.executemany("UPDATE revisit SET row=? WHERE url=?", forgotten)
        self._db.execute("INSERT OR REPLACE INTO kv VALUES ('simhash', ?)", (str(SIMHASH_VERSION),))
        self._commit()

    def _near_urls(self, sim: int) -> list[str]:
        """URLs of the filed pages within the index's distance of ``sim``, closest first."""
        urls = []
        for row_id, _ in self.near.near(sim):
            row = self._db.execute("SELECT url FROM near WHERE id=?", (row_id,)).fetchone()
            if row is not None:
                urls.append(str(row[0]))
        return urls

    def _file_near(self, sim: int, url: str) -> None:
        cur = self._db.execute("INSERT INTO near(fp, url) VALUES (?,?)", (to_signed64(sim), url))
        assert cur.lastrowid is not None
        self.near.add(sim, cur.lastrowid)

    # -- the gate ---------------------------------------------------------------------------
    def rewrite(self, url: str) -> str:
        """A URL as the learned rules write it (the gate applies this to every link)."""
        return self.rules.apply(url)

    # -- pages ------------------------------------------------------------------------------
    def state(self, url: str) -> RevisitState | None:
        row = self._db.execute("SELECT row FROM revisit WHERE url=?", (url,)).fetchone()
        return RevisitState.from_row(json.loads(row[0])) if row is not None else None

    def on_page(
        self,
        url: str,
        text: str,
        canonical: str | None,
        *,
        digest: str,
        now: float,
        etag: str | None,
        last_modified: str | None,
        sim: int | None = None,
    ) -> PageVerdict:
        """A fetched page: duplicate? changed since last time? when to come back?

        ``digest``: its payload digest (``storage.warc.payload_digest`` of the bytes stored);
        ``sim``: the text's SimHash if already computed (in a worker process: ``workpool``).
        """
        if sim is None:
            sim = simhash(text)
        dup: str | None = None
        near: str | None = None
        site = registered_domain(host_of(url))
        # duplicates are looked for within one site (the DUST problem); an identical payload
        # elsewhere is a coincidence of templates, not a URL variant
        key = f"{site} {digest}"
        original = self.capture_of(url)
        if original is None or original.digest != digest:
            row = self._db.execute("SELECT row FROM payloads WHERE key=?", (key,)).fetchone()
            original = Capture.from_row(json.loads(row[0])) if row is not None else None
        # too little text says nothing of identity (empty bodies, a bare image page)
        if original is not None and original.url != url and len(text) >= _MIN_TEXT:
            dup = original.url
        if dup is None and len(text) >= _MIN_TEXT:
            same_site = [
                d
                for d in self._near_urls(sim)
                if d != url and registered_domain(host_of(d)) == site
            ]
            if same_site:
                near = same_site[0]
            else:
                self._file_near(sim, url)
        if len(text) >= _MIN_TEXT:
            self.rules.observe_page(url, digest, None, now=now)  # byte-identical pairs only
        if canonical and canonical != url and host_of(canonical) == host_of(url):
            self.rules.observe_duplicate(canonical, url)  # the site says so: a strong hint
        self._log_new_rules(now)
        state = self.state(url)
        revisit = state is not None and state.last_fetch is not None
        old_fp = state.fingerprint if state is not None else None
        changed = content_changed(old_fp, sim) if revisit else None
        due = self._update(url, state, now, changed, False, etag, last_modified, sim)
        return PageVerdict(dup, original, near, revisit, changed, due)

    def stored(self, url: str, capture: Capture) -> None:
        """``url``'s content is now in the archive as ``capture`` (its own response record, or
        the original a revisit record names): later revisits of ``url`` name it."""
        row = orjson.dumps(capture.to_row()).decode()
        self._db.execute("INSERT OR REPLACE INTO captures VALUES (?,?)", (url, row))
        key = f"{registered_domain(host_of(url))} {capture.digest}"
        self._db.execute("INSERT OR IGNORE INTO payloads VALUES (?,?)", (key, row))

    def capture_of(self, url: str) -> Capture | None:
        """The capture holding ``url``'s latest archived content, if any."""
        row = self._db.execute("SELECT row FROM captures WHERE url=?", (url,)).fetchone()
        return Capture.from_row(json.loads(row[0])) if row is not None else None

    def on_not_modified(self, url: str, *, now: float) -> float | None:
        return self._update(url, self.state(url), now, False, True, None, None, None)

    def hint(self, url: str, changefreq: str | None, lastmod: float | None) -> None:
        """A sitemap's changefreq/lastmod for a URL: seeds its revisit interval."""
        h = self.policy.hint_from_sitemap(changefreq, lastmod, now=time.time())
        if h is not None and len(self._hints) < 1_000_000:
            self._hints[url] = h

    def _update(
        self,
        url: str,
        state: RevisitState | None,
        now: float,
        changed: bool | None,
        not_modified: bool,
        etag: str | None,
        last_modified: str | None,
        fp: int | None,
    ) -> float | None:
        if state is None:
            state = self.policy.new_state(self._hints.pop(url, None), now=now)
        due = self.policy.update(
            state,
            now,
            changed,
            not_modified,
            etag=etag,
            last_modified=last_modified,
            fingerprint=fp,
        )
        row = orjson.dumps(state.to_row()).decode()
        self._db.execute("INSERT OR REPLACE INTO revisit VALUES (?,?)", (url, row))
        return due if self.recrawl else None

    def due_again(self, url: str) -> float | None:
        """When ``url``, a page fetched before, is due again under this run's
        ``--revisit-min``/``--revisit-max`` (``--recrawl`` given to a crawl made without it:
        ``engine.readmit.revisit``); None when it has no revisit state (never read as a
        page)."""
        state = self.state(url)
        if state is None or state.last_fetch is None:
            return None
        due = self.policy.reschedule(state)
        row = orjson.dumps(state.to_row()).decode()
        self._db.execute("INSERT OR REPLACE INTO revisit VALUES (?,?)", (url, row))
        return due

    def revisit_priority(self, url: str, relevance: float | None, base: float) -> float:
        """Revisits compete with new URLs by expected value: P(changed) x relevance."""
        if relevance is None:
            return base
        state = self.state(url)
        if state is None:
            return base
        return self.policy.priority(state, relevance, state.next_due)

    def _log_new_rules(self, now: float) -> None:
        for rule in self.rules.new_rules():
            self._rules_log.write(
                {
                    "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
                    "host": rule.host,
                    "kind": rule.kind,
                    "param": rule.param,
                    "support": rule.support,
                    "rule": rule.describe(),
                }
            )

    # -- persistence --------------------------------------------------------------------------
    def flush(self) -> None:
        self._commit()

    def save(self) -> None:
        state: dict[str, Any] = {"rules": self.rules.state_dict()}  # (near: its own table)
        try:
            self._db.executemany(
                "INSERT OR REPLACE INTO kv VALUES (?,?)",
                [(k, json.dumps(v)) for k, v in state.items()],
            )
        except sqlite3.DatabaseError as exc:
            raise StorageError(f"cannot save continuity state: {exc}") from exc
        self._commit()

    def _commit(self) -> None:
        """A full disk is a ``StorageError``, which stops the crawl cleanly."""
        try:
            self._db.commit()
        except sqlite3.DatabaseError as exc:
            raise StorageError(f"cannot save continuity state: {exc}") from exc

    def close(self) -> None:
        try:
            self.save()
        finally:
            self._db.close()
