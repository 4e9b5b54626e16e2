"""Duplicates on real documentation: near-duplicates found, and false merges.

    python bench/docs_dups.py DOC_ROOT [--start PATH] [--max-pages 600] [--max-time 120]

Serves ``DOC_ROOT`` (a folder of HTML, e.g. the Rust ``std`` docs under
``~/.rustup/toolchains/*/share/doc/rust/html`` or ``/usr/share/doc/python3.11/html``) on
loopback, crawls it with the real ``politecrawl crawl`` command, then judges by the files on
disk:

* duplicates: pages recorded as ``duplicate_of`` another URL (a WARC revisit, links not
  followed); a **false merge** when the two files' bytes differ;
* near-duplicates: pages marked ``near_duplicate_of`` (stored in full, links followed);
* learned rewrite rules: every file of the tree whose URL a learned rule rewrites to another
  file with different bytes is a **false merge** (that URL would never be fetched).
"""

from __future__ import annotations

import argparse
import functools
import json
import sqlite3
import subprocess
import sys
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from politecrawl.continuity.duprules import RuleLearner
from politecrawl.storage.logs import read_jsonl

_UA = "docsbench/1.0 (+http://bench.example/)"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a non-HTML body abandoned after its headers resets the connection: expected


def _file(root: Path, url: str) -> Path | None:
    path = unquote(urlsplit(url).path).lstrip("/")
    f = root / path
    if f.is_dir():
        f = f / "index.html"
    return f if f.is_file() else None


def _differ(root: Path, a: str, b: str) -> bool:
    fa, fb = _file(root, a), _file(root, b)
    return fa is None or fb is None or fa.read_bytes() != fb.read_bytes()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("root", type=Path)
    p.add_argument("--start", default="/", help="first page, a path under ROOT")
    p.add_argument("--max-pages", type=int, default=600)
    p.add_argument("--max-time", type=float, default=120.0)
    p.add_argument("--out", type=Path, default=None, help="crawl output (default: a temp dir)")
    a = p.parse_args(argv)
    root = a.root.resolve()
    handler = functools.partial(_Quiet, directory=str(root))
    server = _Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    out = a.out or Path(tempfile.mkdtemp(prefix="docsdups-")) / "out"
    seeds = out.parent / "seeds.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    seeds.write_text(f"http://docs.test:{port}{a.start}\n")
    cmd = [
        sys.executable, "-m", "politecrawl", "crawl", "--seeds", str(seeds), "--out", str(out),
        "--user-agent", _UA, "--resolve", f"docs.test:{port}:127.0.0.1",
        "--allow-private-addresses", "--min-delay", "0", "--delay-factor", "0", "--jitter", "0",
        "--max-pages", str(a.max_pages), "--max-time", str(a.max_time), "--no-progress",
    ]  # fmt: skip
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    server.shutdown()
    pages = read_jsonl(out / "pages.jsonl")
    dups = [(p["url"], p["duplicate_of"]) for p in pages if p.get("duplicate_of")]
    near = [(p["url"], p["near_duplicate_of"]) for p in pages if p.get("near_duplicate_of")]
    false_dups = [(u, d) for u, d in dups if _differ(root, u, d)]
    # the learned rules, applied to every file of the tree
    rules = RuleLearner()
    db = sqlite3.connect(out / "continuity.sqlite")
    row = db.execute("SELECT value FROM kv WHERE name='rules'").fetchone()
    if row is not None:
        rules.load_state(json.loads(row[0]))
    base = f"http://docs.test:{port}/"
    rewritten = 0
    false_rule = []
    for f in root.rglob("*.html"):
        url = base + f.relative_to(root).as_posix()
        target = rules.apply(url)
        if target != url:
            rewritten += 1
            if _differ(root, url, target):
                false_rule.append((url, target))
    report = {
        "command": f"python bench/docs_dups.py {a.root} --start {a.start} "
        f"--max-pages {a.max_pages}",
        "pages": len(pages),
        "duplicates": len(dups),
        "false_duplicates": len(false_dups),
        "near_duplicates": len(near),
        "near_duplicate_examples": near[:5],
        "rules": len(read_jsonl(out / "log" / "rules.jsonl")),
        "files_rewritten_by_rules": rewritten,
        "false_merges_by_rules": len(false_rule),
        "false_merge_examples": (false_dups + false_rule)[:5],
    }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
