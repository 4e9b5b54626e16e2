"""Main-text extraction through the real crawl, scored by the article-extraction benchmark.

The 181 news and blog pages of github:scrapinghub/article-extraction-benchmark (commit
4a3bc97, MIT; ``bench/data/articles/``: the pages, the ground truth and the benchmark's own
``evaluate.py``) are served on loopback, each at its own URL, and crawled by the real command
(``python -m politecrawl crawl --extract text``). ``OUT/content.jsonl`` is then scored with
the benchmark's ``evaluate`` (F1 over 4-gram shingles, per page, then averaged). The same crawl
without ``--extract`` gives the extraction's cost per page: the CPU the crawl process used with
it, minus without it, over the pages.

    python bench/extract.py            # F1, precision, recall, and CPU ms per page
    python bench/extract.py --format markdown   # the markdown column instead (scored as text)
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import resource
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "articles"
UA = "extractbench/1.0 (+http://bench.example/info)"
HOST = "articles.test"


def load_pages() -> dict[str, bytes]:
    """Page id -> its HTML as served (UTF-8, as the benchmark reads them)."""
    return {p.name.split(".")[0]: gzip.decompress(p.read_bytes())
            for p in sorted((DATA / "html").glob("*.html.gz"))}  # fmt: skip


def serve(pages: dict[str, bytes]) -> tuple[ThreadingHTTPServer, list[str]]:
    """Each page at ``/ID.html`` on 127.0.0.1; a robots.txt allowing all; the log of paths."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            key = self.path.strip("/").removesuffix(".html")
            if self.path == "/robots.txt":
                body, ctype = b"User-agent: *\nAllow: /\n", "text/plain"
            elif key in pages:
                body, ctype = pages[key], "text/html; charset=utf-8"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


def crawl(
    port: int, ids: list[str], out: Path, extract: str | None, extra: list[str] | None = None
) -> float:
    """The real command over every page; returns the CPU seconds the crawl process used."""
    seeds = out.parent / f"{out.name}-seeds.txt"
    seeds.write_text("".join(f"http://{HOST}:{port}/{i}.html\n" for i in ids))
    allow = out.parent / f"{out.name}-allow.txt"
    allow.write_text(f"re:^http://{HOST}:{port}/[0-9a-f]{{64}}\\.html$\n")
    args = [
        sys.executable, "-m", "politecrawl", "crawl", "--seeds", str(seeds),
        "--user-agent", UA, "--out", str(out), "--min-delay", "0", "--delay-factor", "0",
        "--jitter", "0", "--ip-min-delay", "off", "--resolve", f"{HOST}:{port}:127.0.0.1",
        "--allow-private-addresses", "--scope", "host", "--allow", str(allow),
        "--max-size", "20000000", "--no-progress",
    ]  # fmt: skip
    if extract:
        args += ["--extract", extract]
    args += extra or []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, check=True, capture_output=True, timeout=900)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def load_evaluate() -> Any:
    """The benchmark's own evaluate.py, as shipped."""
    spec = importlib.util.spec_from_file_location("aeb_evaluate", DATA / "evaluate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def predictions(out: Path, fmt: str) -> dict[str, dict[str, str]]:
    """Page id -> {"articleBody": the crawl's extracted text} from OUT/content.jsonl."""
    found: dict[str, dict[str, str]] = {}
    for line in (out / "content.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        key = row["url"].rsplit("/", 1)[1].removesuffix(".html")
        found[key] = {"articleBody": row.get(fmt) or ""}
    return found


def report(metrics: dict[str, Any], what: str) -> None:
    print(f"F1 {metrics['f1']:.3f} ± {metrics['f1_std']:.3f}  "
          f"precision {metrics['precision']:.3f}  recall {metrics['recall']:.3f}  "
          f"accuracy {metrics['accuracy']:.3f}  ({what})")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--format", choices=("text", "markdown"), default="text")
    ap.add_argument("--n-bootstrap", type=int, default=1000)
    args = ap.parse_args()
    pages = load_pages()
    truth = json.loads(gzip.decompress((DATA / "ground-truth.json.gz").read_bytes()))
    server, seen = serve(pages)
    port = server.server_address[1]
    ids = sorted(pages)
    with tempfile.TemporaryDirectory(prefix="extractbench-") as tmp:
        plain_cpu = crawl(port, ids, Path(tmp) / "plain", None)
        cpu = crawl(port, ids, Path(tmp) / "extract", args.format)
        pred = predictions(Path(tmp) / "extract", args.format)
    server.shutdown()
    evaluate = load_evaluate()
    n = len(ids)
    print(f"pages: {n} served, {len(pred)} in content.jsonl (the others ask for noindex or "
          f"noarchive), {len(seen)} requests in all (robots.txt included)")  # fmt: skip
    kept = {k: truth[k] for k in pred}
    report(evaluate.evaluate(kept, pred, args.n_bootstrap), f"the {len(pred)} pages kept")
    every = {k: pred.get(k, {"articleBody": ""}) for k in truth}  # not kept: empty
    report(evaluate.evaluate(truth, every, args.n_bootstrap), f"all {n}, not kept = empty")
    print(f"crawl CPU: {plain_cpu / n * 1000:.1f} ms/page without --extract, "
          f"{cpu / n * 1000:.1f} ms/page with it: extraction costs "
          f"{(cpu - plain_cpu) / n * 1000:.1f} ms/page")  # fmt: skip


if __name__ == "__main__":
    main()
