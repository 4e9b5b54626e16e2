"""The command line. Misuse ends in one clear line on stderr and exit code 2."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from politecrawl.config import (
    DEMO_UA,
    CrawlConfig,
    FetchConfig,
    check_exclude_file,
    check_shared_crawl,
    read_lines_file,
    read_seeds,
    seed_lines,
)
from politecrawl.engine import gctune
from politecrawl.engine.admission import HOST_URLS
from politecrawl.errors import ConfigError, PolitecrawlError
from politecrawl.frontier.factory import DEFAULT_CRAWL_ID, shared_scope
from politecrawl.options import (
    add_crawl_options,
    config_from_values,
    named_path,
    toml_values,
    write_config,
)
from politecrawl.tools.endsummary import (
    lost_line,
    nothing_fetched,
    nothing_fetched_at_all,
    print_summary,
    time_ran_out,
)
from politecrawl.tools.examples import add_examples
from politecrawl.tools.startup import nothing_left, say_start


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="politecrawl", description="A polite, adaptive web crawler.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    crawl = sub.add_parser(
        "crawl",
        help="crawl from seed URLs politely",
        description="Crawl from seed URLs; run again on the same --out to resume.",
    )
    crawl.add_argument(
        "urls", nargs="*", metavar="URL", help="seed URLs (besides, or instead of, --seeds)"
    )
    add_crawl_options(crawl)
    demo = sub.add_parser(
        "demo",
        help="crawl the bundled local test web and print the summary",
        description="Start the bundled multi-host test web on loopback, "
        "crawl it, print the summary.",
    )
    demo.add_argument("--hosts", type=int, default=30, help="virtual hosts (default 30)")
    demo.add_argument("--pages", type=int, default=12, help="pages per host (default 12)")
    demo.add_argument("--min-delay", type=float, default=0.2, help="per-site delay (default 0.2)")
    demo.add_argument(
        "--out", type=named_path, default=None, help="output folder (default: a temp dir)"
    )
    robots = sub.add_parser(
        "robots",
        help="check URLs against a robots.txt as politecrawl reads it",
        description="Print each URL's verdict and the rule that decided it. SOURCE is a "
        "robots.txt file or a site URL (its /robots.txt is fetched once).",
    )
    robots.add_argument("source", help="robots.txt file, or a URL of the site")
    robots.add_argument("urls", nargs="*", help="URLs (or paths) to check")
    robots.add_argument("--user-agent", required=True, help="the bot's User-Agent")
    robots.add_argument("--resolve", action="append", default=[], metavar="HOST:PORT:ADDR")
    robots.add_argument("--allow-private-addresses", action="store_true")
    worker = sub.add_parser(
        "worker",
        help="join a shared crawl (--frontier redis://...)",
        description="Crawl from a shared Redis frontier with the others: "
        "politeness is global. Takes crawl's options; --seeds optional.",
    )
    add_crawl_options(worker)
    seed = sub.add_parser(
        "seed",
        help="add seed URLs to a shared crawl",
        description="Pass URLs through the admission gate into a shared "
        "frontier; no request is made.",
    )
    seed.add_argument("file", type=Path, help="seed URLs, one a line")
    seed.add_argument("--frontier", required=True, help="redis://HOST:PORT/DB")
    seed.add_argument(
        "--crawl-id", default=DEFAULT_CRAWL_ID, help=f"the shared crawl's name ({DEFAULT_CRAWL_ID})"
    )
    seed.add_argument(
        "--scope",
        help="host | domain | any: the crawl's scope, kept by every worker "
        "(default: as before, else domain)",
    )
    seed.add_argument("--exclude-file", type=Path, help="never-crawl list")
    # each seed's server address is looked up here (one request at a time per IP)
    seed.add_argument("--resolve", action="append", default=[], metavar="HOST:PORT:ADDR")
    seed.add_argument("--allow-private-addresses", action="store_true")
    status = sub.add_parser(
        "status",
        help="what a shared crawl is doing",
        description="Queued URLs, sites waiting/ready/parked, leases and "
        "their workers, counters of a shared crawl.",
    )
    status.add_argument("--frontier", required=True, help="redis://HOST:PORT/DB")
    status.add_argument(
        "--crawl-id", default=DEFAULT_CRAWL_ID, help=f"the shared crawl's name ({DEFAULT_CRAWL_ID})"
    )
    status.add_argument("--json", action="store_true", help="JSON for machines")
    seg = sub.add_parser(
        "segment",
        help="offline segments: build the next list to fetch",
        description="The offline crawl model: build a segment from earlier "
        "crawls, then `politecrawl fetch` it.",
    )
    seg_sub = seg.add_subparsers(dest="segment_command", required=True, parser_class=_Parser)
    build = seg_sub.add_parser(
        "build",
        help="links of earlier crawls, minus what was fetched",
        description="Every URL earlier crawls discovered but did not "
        "fetch, through the admission gate, sorted by domain.",
    )
    build.add_argument("crawl_dirs", nargs="+", type=Path, metavar="CRAWL_DIR")
    build.add_argument(
        "--out", type=named_path, required=True, help="the segment file to write (named *.seg)"
    )
    build.add_argument("--scope", default="any", help="host | domain | any (default any)")
    build.add_argument("--allow", type=Path, help="allow-list file (domains or re:REGEX)")
    build.add_argument("--exclude-file", type=Path, help="never-crawl list")
    build.add_argument("--max-urls-per-host", type=int, help="URLs per host at most")
    fetch = sub.add_parser(
        "fetch",
        help="fetch a segment politely, following no link (only its URLs' redirects)",
        description="Fetch the URLs of a segment file (one a line) with every politeness "
        "rule, following no link: a URL's redirects are followed (3 hops at most), its "
        "page's links are kept for the next segment. Takes crawl's options.",
    )
    fetch.add_argument("segment", type=Path, help="the segment file")
    add_crawl_options(fetch)
    log = sub.add_parser(
        "log",
        help="answer a complaint: every request to a host, with the robots.txt in force",
        description="Every request to HOST (and its subdomains) in the window, across "
        "rotated logs, with status, timing, the delay applied and the robots.txt in force at "
        "that moment. An IP address as HOST matches by address: the requests that went to "
        "that server address, under whatever host name.",
    )
    log.add_argument("dir", type=Path, help="the crawl's --out folder")
    log.add_argument("--host", required=True, help="the complaining site's host or domain, "
                     "or its server's IP address (IPv4 or IPv6)")  # fmt: skip
    log.add_argument("--since", help="ISO 8601 time or date (UTC)")
    log.add_argument("--until", help="ISO 8601 time or date (UTC; a date means its end)")
    log.add_argument("--json", action="store_true", help="JSON for machines")
    stats = sub.add_parser(
        "log-stats",
        help="learn from the logs: statuses, extensions, errors, traps, response times",
        description="Status mix, Content-Type by URL extension (with "
        "suggested additions to the extension blocklist), hosts with the "
        "most errors, redirects, suspected traps, mean response time per host.",
    )
    stats.add_argument("dir", type=Path, help="the crawl's --out folder")
    stats.add_argument("--json", action="store_true", help="JSON for machines")
    bot = sub.add_parser(
        "botpage",
        help="write the bot's information page (HTML)",
        description="The page a site operator reads to learn who runs the bot, "
        "why, from where, and how to block it or reach a person.",
    )
    bot.add_argument("--user-agent", required=True, help="the bot's User-Agent")
    bot.add_argument("--contact", required=True, help="an e-mail address that reaches a person")
    bot.add_argument(
        "--ip", action="append", default=[], help="an address the bot crawls from (repeatable)"
    )
    bot.add_argument(
        "--purpose",
        help="why the bot crawls, in a sentence or two; or the crawl's declared purpose "
        "(search, ai-input, ai-train, archive; default: the --config TOML's, else search)",
    )
    bot.add_argument(
        "--min-delay", type=float, help="the crawl's --min-delay, stated on the page (15)"
    )
    bot.add_argument(
        "--delay-factor", type=float, help="the crawl's --delay-factor, stated on the page (30)"
    )
    bot.add_argument(
        "--config", type=Path, help="the crawl's TOML config: its min-delay and delay-factor"
    )
    bot.add_argument("--out", type=named_path, help="file to write (default: stdout)")
    rep = sub.add_parser(
        "report",
        help="write DIR/report.html with plots of a crawl",
        description="A self-contained HTML report with plots, viewable offline.",
    )
    rep.add_argument("dir", type=Path, help="the crawl's --out folder")
    wacz = sub.add_parser(
        "wacz",
        help="pack a crawl as WACZ 1.1.1 (WARC files, CDXJ index, pages, digests)",
        description="One WACZ file (ReplayWeb.page, pywb) of a crawl's WARC files, its CDXJ "
        "index and pages. A shared crawl: give every worker's --out folder.",
    )
    wacz.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="a crawl's --out folder")
    wacz.add_argument("--output", type=Path, required=True, help="the .wacz file to write")
    wacz.add_argument("--title", help="the package's title (datapackage.json)")
    add_examples(sub.choices)
    return parser


def cmd_robots(args: argparse.Namespace) -> int:
    from politecrawl.tools.robots_check import check

    for line in check(
        args.source,
        args.user_agent,
        args.urls,
        resolve=tuple(args.resolve),
        allow_private=args.allow_private_addresses,
    ):
        print(line)
    return 0


_FROM_FILE = "\0from the TOML file"  # values' key: (the file, the options it set)


def _merge(args: argparse.Namespace) -> dict[str, Any]:
    """TOML values, overridden by the flags given; under ``_FROM_FILE``, the file and the
    options whose value is the file's (``_config``'s errors name it)."""
    values: dict[str, Any] = {}
    if args.config is not None:
        values.update(toml_values(args.config))
    from_file = set(values)
    for key, val in vars(args).items():
        if val is not None and key not in ("config", "command", "verbose"):
            values[key] = val
            from_file.discard(key)
    if from_file:
        values[_FROM_FILE] = (args.config, from_file)
    return values


@contextlib.contextmanager
def _named_with_file(where: tuple[Path, set[str]] | None) -> Iterator[None]:
    """A ConfigError that begins with an option the TOML file set (``--seeds nosuch.txt:
    seeds file not found``) is named with the file, as a wrong type there is: what a user
    must fix is in the file, not on the command line. ``where``: ``values[_FROM_FILE]``."""
    try:
        yield
    except ConfigError as exc:
        named = re.match(r"--([a-z][a-z0-9-]*)", str(exc))
        if where is not None and named and named[1].replace("-", "_") in where[1]:
            raise ConfigError(f"{where[0]}: {exc}") from None
        raise


def _config(values: dict[str, Any]) -> CrawlConfig:
    """The crawl's config from merged values; an option out of range that the TOML file set
    is named with the file, as a wrong type there is."""
    with _named_with_file(values.pop(_FROM_FILE, None)):
        return config_from_values(values)


def cmd_segment(args: argparse.Namespace) -> int:
    from politecrawl.engine.admission import Gate
    from politecrawl.polite.exclusions import NeverCrawlList
    from politecrawl.tools.segments import build, check_out, describe
    from politecrawl.urls.filters import DEFAULT_BLOCKED_EXTENSIONS as BLOCKED
    from politecrawl.urls.filters import ExtensionFilter, Scope, TrapLimits

    if args.scope not in ("host", "domain", "any"):
        raise ConfigError(f"--scope must be host, domain or any, got {args.scope!r}")
    check_exclude_file(args.exclude_file)
    if args.max_urls_per_host is not None and args.max_urls_per_host < 1:
        raise ConfigError("--max-urls-per-host must be >= 1")
    check_out(args.out, args.crawl_dirs)
    allow = read_lines_file(args.allow, "allow-list", "--allow") if args.allow else ()
    seeds: list[str] = []
    if args.scope != "any":  # the earlier crawls' seeds define host/domain scope
        for d in args.crawl_dirs:
            summary = d / "seeds.txt"
            if summary.exists():
                seeds += read_seeds(summary)
    gate = Gate(
        Scope(args.scope, seeds, allow),
        NeverCrawlList(args.exclude_file),
        ExtensionFilter(BLOCKED),
        TrapLimits(),
        args.max_urls_per_host,
    )
    print(describe(args.out, build(args.crawl_dirs, args.out, gate)))
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    values = _merge(args)
    if "seeds" in values:
        raise ConfigError("fetch reads the segment file it is given, not --seeds")
    from politecrawl.tools.segments import check_fetch_out, read_segment

    check_fetch_out(values.get("out"))
    urls = read_segment(values.pop("segment"))
    if not urls:  # the loop's end: the last build found nothing left to fetch
        print(f"politecrawl: nothing to fetch: segment {args.segment} holds no URL")
        return 0
    values["seeds"] = urls
    values.setdefault("scope", "any")
    return _run_crawl(values, follow=False)


def cmd_worker(args: argparse.Namespace) -> int:
    values = _merge(args)
    if not values.get("frontier"):
        raise ConfigError("worker needs --frontier redis://HOST:PORT/DB")
    return _run_crawl(values, follow=True)


def cmd_seed(args: argparse.Namespace) -> int:
    from politecrawl.engine.crawler import Crawler

    check_shared_crawl(args.frontier, args.crawl_id)
    seeds = read_seeds(args.file)
    if args.scope not in (None, "host", "domain", "any"):
        raise ConfigError(f"--scope must be host, domain or any, got {args.scope!r}")
    # the crawl's scope and seeds are stored with it: every worker keeps to them
    meta = asyncio.run(
        shared_scope(args.frontier, args.crawl_id, {"scope": args.scope, "seeds": seeds})
    )
    assert meta is not None
    out = Path(tempfile.mkdtemp(prefix="politecrawl-seed-"))
    cfg = CrawlConfig(
        seeds=seeds,
        out_dir=out,
        # each seed's server address is looked up (one request at a time per IP)
        fetch=FetchConfig(
            user_agent=DEMO_UA,
            resolve=tuple(args.resolve),
            allow_private_addresses=args.allow_private_addresses,
        ),
        scope=meta["scope"],
        allow=tuple(meta["allow"]),
        exclude_file=args.exclude_file,
        frontier_url=args.frontier,
        crawl_id=args.crawl_id,
        progress=False,
    )
    n = asyncio.run(Crawler(cfg).seed())
    print(f"{n} of {len(seeds)} URLs queued in crawl {args.crawl_id!r} (scope {meta['scope']})")
    return 0


def _join_shared(cfg: CrawlConfig, values: dict[str, Any]) -> CrawlConfig:
    """A shared crawl's scope, allow-list and seeds travel with it (stored by ``seed``, or by
    the first ``crawl``/``worker`` given seeds); the options a worker gives itself win."""
    url, crawl_id = cfg.frontier_url or "", cfg.crawl_id or DEFAULT_CRAWL_ID
    update = None
    if cfg.seeds:
        update = {
            "seeds": cfg.seeds,
            "scope": cfg.scope if "scope" in values else None,
            "allow": cfg.allow if "allow" in values else None,
        }
    meta = asyncio.run(shared_scope(url, crawl_id, update))
    if meta is None:
        raise ConfigError(
            f"shared crawl {crawl_id!r} at {url} has no seeds yet: "
            f"run `politecrawl seed FILE --frontier {url}` first (or give --seeds)"
        )
    return dataclasses.replace(
        cfg,
        seeds=cfg.seeds or tuple(meta["seeds"]),
        scope=cfg.scope if "scope" in values else meta["scope"],
        allow=cfg.allow if "allow" in values else tuple(meta["allow"]),
    )


def cmd_status(args: argparse.Namespace) -> int:
    from politecrawl.frontier.redis import status

    check_shared_crawl(args.frontier, args.crawl_id)
    st = asyncio.run(status(args.frontier.replace("valkey://", "redis://", 1), args.crawl_id))
    if args.json:
        print(json.dumps(st, indent=2))
        return 0
    if not st["exists"]:
        print(
            f"crawl {st['crawl_id']!r}: nothing stored at {args.frontier} (not started yet, "
            "or its data is gone: the server restarted without persistence, or was flushed)"
        )
        return 1
    if st["lost_shards"]:
        print(
            f"crawl {st['crawl_id']!r}: shards {', '.join(map(str, st['lost_shards']))} of "
            f"{st['shards']} lost their data at {args.frontier} (a node restarted without "
            "persistence, or was flushed): the crawl cannot go on; start it again under a new "
            "--crawl-id"
        )
        return 1
    print(
        f"crawl {st['crawl_id']!r}: {st['queued']} queued, {st['urls_open']} not finished; "
        f"sites {st['hosts_waiting']} waiting ({st['hosts_ready']} ready, "
        f"{st['hosts_parked']} parked); {st['leases_held']} leases held; {st['seen']} seen"
    )
    for lease in st["leases"]:
        print(f"  lease {lease['key']} by {lease['worker']}")
    for k, v in st["counters"].items():
        if not k.startswith(HOST_URLS):  # one per site: not for this overview
            print(f"  {k:24} {v}")
    return 0


def cmd_crawl(args: argparse.Namespace) -> int:
    values = _merge(args)
    urls = values.pop("urls", None) or []
    if urls:  # seeds on the command line, after those of --seeds (a file, or - for stdin)
        with _named_with_file(values.get(_FROM_FILE)):
            listed = read_seeds(Path(values["seeds"])) if values.get("seeds") else ()
        values["seeds"] = [*listed, *seed_lines("\n".join(urls), "the command line")]
    return _run_crawl(values, follow=True)


def _run_crawl(values: dict[str, Any], *, follow: bool) -> int:
    """Exit codes: 0 done (or a limit reached), 1 a storage error or nothing could be
    fetched, 3 finished but sites were lost (parked or given up: the summary names them),
    130 stopped by Ctrl-C / SIGTERM."""
    from politecrawl.engine.supervisor import check_partitioned, run_partitioned
    from politecrawl.focus.relevance import load_callable
    from politecrawl.handler import load_handler
    from politecrawl.storage.outdir import check_judge, check_layout

    where = values.get(_FROM_FILE)  # (what the TOML file set: its errors name it)
    cfg = dataclasses.replace(_config(values), follow_links=follow)
    if cfg.frontier_url:
        cfg = _join_shared(cfg, values)
    else:
        # resumed with the processes it was made with; written once every option is judged
        check_layout(cfg.out_dir, cfg.processes, write=False)
        check_judge(cfg.out_dir, {"--topic": cfg.topic, "--relevance": cfg.relevance})
    from politecrawl.focus.strategy import choose_strategy

    # a topic without keywords, a nugget or a handler that does not import: one line, before
    # the pace (not a traceback per process), beginning with the option: named with the
    # TOML file if it was set there
    with _named_with_file(where):
        scorer = load_callable(cfg.relevance, what="--relevance") if cfg.relevance else None
        _, nugget = choose_strategy(cfg.strategy, cfg.topic, scorer)
        if cfg.target_relevant is not None and nugget is None:  # no page is ever relevant
            raise ConfigError("--target-relevant needs --topic or --relevance to say what counts")
        if cfg.handler:
            load_handler(cfg.handler, what="--handler")
        elif cfg.items_file is not None:  # (it was taken, and nothing written: no item is made)
            raise ConfigError(f"--items {cfg.items_file}: items come from a --handler; give one")
    if cfg.processes > 1 and not cfg.frontier_url:
        check_partitioned(cfg)  # before anything is written to the folder
    say_start(cfg)  # the bot name misread, the topic as read, the pace: once, not per process
    fatal: str | None
    nothing = False
    if cfg.processes > 1 and not cfg.frontier_url:
        # the sites partitioned over N crawler processes (partition); this one supervises
        summary, fatal = run_partitioned(cfg, on_locked=lambda: write_config(cfg))
    else:
        from politecrawl.engine.crawler import Crawler  # (the partitions' supervisor does without)

        crawler = Crawler(cfg, notify=lambda line: print(line, flush=True))
        write_config(cfg)
        gctune.tune()  # this process is the crawl's: fewer, larger collections (gctune)
        summary = asyncio.run(crawler.run()).to_json()
        fatal = crawler.fatal
        nothing = crawler.nothing_left and summary["pages_fetched"] > 0
    if nothing:  # (exit 3 if sites of the crawl are still lost)
        return nothing_left(summary, cfg.out_dir, cfg.target_relevant)
    print_summary(summary, cfg.out_dir)
    if fatal:
        print(
            f"politecrawl: stopped: {fatal} (run the same command again to resume)",
            file=sys.stderr,
        )
        return 1
    if summary["stopped_by"] == "interrupted":
        return 130
    if summary["pages_fetched"] == 0 and summary["stopped_by"] in ("done", "max_time"):
        out_of_time = time_ran_out(summary["counters"], summary["queued_left"])
        if out_of_time is not None and summary["stopped_by"] == "max_time":  # a stop, exit 0
            print(f"politecrawl: {out_of_time}", file=sys.stderr)
            return 0
        why = nothing_fetched(summary["counters"], cfg.out_dir)
        print(f"politecrawl: {why or nothing_fetched_at_all(cfg.out_dir)}", file=sys.stderr)
        return 1
    lost = summary.get("sites_lost") or []
    if lost:
        print(f"politecrawl: {lost_line(lost, cfg.out_dir / 'summary.json')}", file=sys.stderr)
        return 3
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Exit codes as crawl's: 1 when something failed that the test web does not do on
    purpose (a failure, or the web gone), 130 when stopped by Ctrl-C / SIGTERM."""
    from politecrawl.demo.run import run_demo, what_went_wrong

    if args.hosts < 1 or args.pages < 1 or args.min_delay < 0:
        raise ConfigError("--hosts and --pages must be >= 1, --min-delay >= 0")
    out = args.out or Path(tempfile.mkdtemp(prefix="politecrawl-demo-"))
    summary = asyncio.run(run_demo(out, args.hosts, args.pages, args.min_delay))
    print_summary(summary, out)
    deliberate, failed = what_went_wrong(summary)
    if deliberate:
        print(deliberate)
    kept = " (a temporary folder, kept: delete it when done)" if args.out is None else ""
    print(f"Output: {out}{kept}.")
    print(f"Next:   politecrawl report {out}    (then open {out / 'report.html'})")
    print(f"        politecrawl log-stats {out}")
    if failed:
        print(failed, file=sys.stderr)
        return 1
    return 130 if summary["stopped_by"] == "interrupted" else 0


def _tool(module: str) -> Callable[[argparse.Namespace], int]:
    """The operator tools live in their own modules, each with ``main_args(args)``."""

    def run(args: argparse.Namespace) -> int:
        import importlib

        result: int = importlib.import_module(f"politecrawl.{module}").main_args(args)
        return result

    return run


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # `robots SOURCE --user-agent UA URL...`, `crawl URL --out D URL`: URLs anywhere
        if args.command not in ("robots", "crawl") or any(x.startswith("-") for x in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.urls += extra
    logging.basicConfig(
        level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    handlers = {
        "segment": cmd_segment,
        "worker": cmd_worker,
        "seed": cmd_seed,
        "status": cmd_status,
        "fetch": cmd_fetch,
        "crawl": cmd_crawl,
        "demo": cmd_demo,
        "robots": cmd_robots,
        "log": _tool("tools.complaints"),
        "log-stats": _tool("tools.logstats"),
        "botpage": _tool("tools.botpage"),
        "report": _tool("tools.report.page"),
        "wacz": _tool("tools.wacz"),
    }
    try:
        return handlers[args.command](args)
    except ConfigError as exc:
        print(f"politecrawl: error: {exc}", file=sys.stderr)
        return 2
    except PolitecrawlError as exc:
        print(f"politecrawl: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a folder or file the command needs cannot be made or written
        where = f" {exc.filename}" if exc.filename else ""
        print(f"politecrawl: cannot use{where}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
