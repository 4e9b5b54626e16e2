"""What each output costs per page: ``--extract``, ``--metrics``, the CDXJ index, ``wacz``.

The 181 pages of the article-extraction benchmark (``bench/extract.py`` serves them) are
crawled by the real command with nothing extra, with ``--extract text``, with
``--extract text,markdown`` and with ``--metrics`` (scraped 10 times a second meanwhile),
alternating, ``--rounds`` times; the crawl process's CPU per page (median of the rounds) is
printed beside the plain crawl's. The CDXJ index is always written, so its cost is timed
alone (its lines for the crawl's records, written as the crawl writes them); ``politecrawl
wacz`` is timed on the plain crawl's output.

    python bench/outputs.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from extract import crawl, load_pages, serve

from politecrawl.storage.cdxj import index_name, index_warc


def _scraper(port: int, stop: threading.Event) -> None:
    while not stop.is_set():
        with contextlib.suppress(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read()
        stop.wait(0.1)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    pages = load_pages()
    server, _ = serve(pages)
    port = server.server_address[1]
    ids = sorted(pages)
    n = len(ids)
    runs: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="outputsbench-") as tmp:
        root = Path(tmp)
        for r in range(args.rounds):
            for name, extra in (("plain", None), ("--extract text", "text"),
                                ("--extract text,markdown", "text,markdown"),
                                ("--metrics", "metrics")):  # fmt: skip
                out = root / f"{name.strip('-').replace(' ', '_').replace(',', '_')}-{r}"
                if extra == "metrics":
                    mport, stop = _free_port(), threading.Event()
                    t = threading.Thread(target=_scraper, args=(mport, stop), daemon=True)
                    t.start()
                    cpu = crawl(port, ids, out, None, ["--metrics", f"127.0.0.1:{mport}"])
                    stop.set()
                else:
                    cpu = crawl(port, ids, out, extra)
                runs.setdefault(name, []).append(cpu / n * 1000)
        plain = statistics.median(runs["plain"])
        print(f"{n} pages, crawl process CPU per page, median of {args.rounds} rounds:")
        for name, values in runs.items():
            med = statistics.median(values)
            extra = "" if name == "plain" else f"  (+{med - plain:.1f} ms/page)"
            rounds = ", ".join(f"{v:.1f}" for v in values)
            print(f"  {name:<26} {med:6.1f} ms{extra}   rounds: {rounds}")
        warcs = sorted((root / "plain-0" / "warc").glob("*.warc.gz"))
        lines = sum(len((w.with_name(index_name(w.name))).read_text().splitlines())
                    for w in warcs)  # fmt: skip
        t0 = time.process_time()
        for _ in range(5):
            for w in warcs:
                index_warc(w)
        reindex_ms = (time.process_time() - t0) / 5 * 1000
        from politecrawl.storage.cdxj import cdxj_line

        t0 = time.process_time()
        for i in range(20000):
            cdxj_line(url=f"http://articles.test/{i}.html", date="2026-11-28T04:00:00.000000Z",
                      revisit=False, content_type="text/html; charset=utf-8", status=200,
                      digest="sha1:AAAA", offset=i, length=1000, filename="x.warc.gz")  # fmt: skip
        line_us = (time.process_time() - t0) / 20000 * 1e6
        print(f"  CDXJ index: {line_us:.0f} us per line as the crawl writes it "
              f"({lines} lines for {n} pages); rebuilding it from the WARC after a crash "
              f"{reindex_ms / max(lines, 1):.2f} ms per record")  # fmt: skip
        wacz = root / "plain.wacz"
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "politecrawl", "wacz", str(root / "plain-0"),
                        "--output", str(wacz)], check=True, capture_output=True)  # fmt: skip
        wall = time.perf_counter() - t0
        print(f"  politecrawl wacz: {wall:.2f} s for {n} pages ({wall / n * 1000:.1f} ms/page, "
              f"process start included), {wacz.stat().st_size / 1e6:.1f} MB")  # fmt: skip
    server.shutdown()


if __name__ == "__main__":
    main()
