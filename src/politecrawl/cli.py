"""The command line. Misuse ends in one clear line on stderr and exit code 2."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from politecrawl.admission import HOST_URLS
from politecrawl.config import (
    MAX_URLS_PER_PATTERN,
    MAX_WAIT_S,
    CrawlConfig,
    FetchConfig,
    PolitenessConfig,
    load_toml,
    read_lines_file,
    read_seeds,
)
from politecrawl.errors import ConfigError, PolitecrawlError

DEMO_UA = "politecrawl-demo/0.1 (+https://github.com/politecrawl/politecrawl)"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


# name, type, help; every one may also be written in the TOML file (``min-delay = 15``).
_CRAWL_OPTIONS: list[tuple[str, Any, str]] = [
    ("seeds", Path, "file of seed URLs, one a line, # comments"),
    ("user-agent", str, "bot name and info URL, e.g. 'acmebot/1.0 (+https://acme.example/bot)'"),
    ("out", Path, "output folder (state, WARC, logs); the same folder resumes the crawl"),
    ("min-delay", float, "per-site floor between request starts, seconds (default 15)"),
    ("delay-factor", float, "delay >= factor x mean of the site's last 5 response times (30)"),
    ("jitter", float, "random extra delay, 0 to this many seconds, so starts don't align (0.5)"),
    ("concurrency", int, "sites in flight at once (default 64)"),
    ("max-pages", int, "stop after this many page requests in this run"),
    ("max-time", float, "stop after this many seconds"),
    ("scope", str, "host | domain | any (default domain: the seeds' registered domains)"),
    ("allow", Path, "allow-list file: domains, or regexes written re:..."),
    (
        "exclude-file",
        Path,
        "never-crawl list: one domain a line (subdomains included), reloaded live",
    ),
    ("exclude-check", float, "seconds between checks of the never-crawl file (default 60)"),
    ("max-size", int, "body cap in bytes (default 2 MiB); longer bodies are cut and marked"),
    ("politeness-key", str, "host | domain | ip: what one 'site' is for politeness (default host)"),
    ("robots-ttl", float, "seconds a robots.txt stays fresh (default 86400)"),
    ("retry-base", float, "first retry wait after a 5xx or network error, seconds (default 30)"),
    ("seen", str, "seen-set: auto | exact | bloom (auto: Bloom filter past 2 million URLs)"),
    ("expected-urls", int, "URLs the crawl may discover; sizes the Bloom filter (1000000)"),
    ("seen-fp-rate", float, "Bloom filter false-positive rate (0.01)"),
    (
        "strategy",
        str,
        "frontier order: focused | keyword | bfs | random (focused when a topic or a "
        "relevance function is given, else bfs; keyword: the topic prior, no learning)",
    ),
    ("topic", str, "what the crawl looks for, e.g. 'steam locomotives, steam trains'"),
    ("relevance", str, "your nugget function 'package.module:function' (Document -> 0..1)"),
    ("target-relevant", int, "stop after this many relevant pages"),
    ("max-queue", int, "frontier cap: beyond it the lowest-priority URLs are dropped"),
    ("max-wait", float, "a site due this many seconds goes before better-ranked ones (300)"),
    (
        "defer-ratio",
        float,
        "focused: a site whose best URL scores below this share of the best queued anywhere "
        "waits while that one waits on its delay (0.5; 0 = any free site)",
    ),
    ("max-urls-per-host", int, "trap guard: URLs queued per host at most (unlimited)"),
    (
        "max-urls-per-pattern",
        int,
        "trap guard: URLs of one generated pattern (digits, query values) found from its own "
        "pages, per host (50; 0 = off)",
    ),
    ("park-after", int, "failures in a row after which a site is parked (5)"),
    ("park-time", float, "how long a parked site is left alone, seconds (3600)"),
    ("log-rotate-bytes", int, "rotate the logs at this size too (64 MiB; daily anyway)"),
    ("log-retention-days", float, "delete rotated logs older than this (30)"),
    ("revisit-min", float, "with --recrawl: shortest revisit interval, seconds (86400)"),
    ("revisit-max", float, "with --recrawl: longest revisit interval, seconds (2592000)"),
    ("state", Path, "robots.txt cache and site statistics kept in this file across crawls"),
    (
        "frontier",
        str,
        "redis://HOST:PORT/DB: share the crawl with other workers (default: OUT/state.sqlite)",
    ),
    ("crawl-id", str, "the shared crawl's name (default: the --out folder's name)"),
]


def _add_crawl_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, help="TOML file with any of these options; flags win")
    for name, typ, help_ in _CRAWL_OPTIONS:
        p.add_argument(f"--{name}", type=typ, default=None, help=help_)
    p.add_argument(
        "--resolve",
        action="append",
        default=None,
        metavar="HOST:PORT:ADDR",
        help="pin a host to an address like curl (repeatable; *.example wildcards)",
    )
    p.add_argument(
        "--allow-private-addresses",
        action="store_true",
        default=None,
        help="allow loopback/private/link-local targets (refused by default)",
    )
    p.add_argument(
        "--sitemaps",
        action="store_true",
        default=None,
        help="also seed from the Sitemap lines of each site's robots.txt",
    )
    p.add_argument(
        "--recrawl",
        action="store_true",
        default=None,
        help="continuous crawl: fetched pages come back after their revisit interval",
    )
    p.add_argument("--no-progress", action="store_true", default=None, help="no live progress line")
    p.add_argument("-v", "--verbose", action="store_true", help="log more")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="politecrawl", description="A polite, adaptive web crawler.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    crawl = sub.add_parser(
        "crawl",
        help="crawl from seed URLs politely",
        description="Crawl from seed URLs; run again on the same --out to resume.",
    )
    _add_crawl_options(crawl)
    demo = sub.add_parser(
        "demo",
        help="crawl the bundled local test web and print the summary",
        description="Start the bundled multi-host test web on loopback, "
        "crawl it, print the summary.",
    )
    demo.add_argument("--hosts", type=int, default=30, help="virtual hosts (default 30)")
    demo.add_argument("--pages", type=int, default=12, help="pages per host (default 12)")
    demo.add_argument("--min-delay", type=float, default=0.2, help="per-site delay (default 0.2)")
    demo.add_argument("--out", type=Path, default=None, help="output folder (default: a temp dir)")
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
    _add_crawl_options(worker)
    seed = sub.add_parser(
        "seed",
        help="add seed URLs to a shared crawl",
        description="Pass URLs through the admission gate into a shared "
        "frontier; no request is made.",
    )
    seed.add_argument("file", type=Path, help="seed URLs, one a line")
    seed.add_argument("--frontier", required=True, help="redis://HOST:PORT/DB")
    seed.add_argument("--crawl-id", default="default", help="the shared crawl's name")
    seed.add_argument("--scope", default="any", help="host | domain | any (default any)")
    seed.add_argument("--exclude-file", type=Path, help="never-crawl list")
    status = sub.add_parser(
        "status",
        help="what a shared crawl is doing",
        description="Queued URLs, sites waiting/ready/parked, leases and "
        "their workers, counters of a shared crawl.",
    )
    status.add_argument("--frontier", required=True, help="redis://HOST:PORT/DB")
    status.add_argument("--crawl-id", default="default", help="the shared crawl's name")
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
    build.add_argument("--out", type=Path, required=True, help="the segment file to write")
    build.add_argument("--scope", default="any", help="host | domain | any (default any)")
    build.add_argument("--allow", type=Path, help="allow-list file (domains or re:REGEX)")
    build.add_argument("--exclude-file", type=Path, help="never-crawl list")
    build.add_argument("--max-urls-per-host", type=int, help="URLs per host at most")
    fetch = sub.add_parser(
        "fetch",
        help="fetch a segment politely, following nothing",
        description="Fetch the URLs of a segment file (one a line) with "
        "every politeness rule, following no link. Takes crawl's options.",
    )
    fetch.add_argument("segment", type=Path, help="the segment file")
    _add_crawl_options(fetch)
    log = sub.add_parser(
        "log",
        help="answer a complaint: every request to a host, with the robots.txt in force",
        description="Every request to HOST (and its "
        "subdomains) in the window, across rotated logs, with status, timing, "
        "the delay applied and the robots.txt in force at that moment.",
    )
    log.add_argument("dir", type=Path, help="the crawl's --out folder")
    log.add_argument("--host", required=True, help="the complaining site's host or domain")
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
    bot.add_argument("--purpose", help="why the bot crawls, in a sentence or two")
    bot.add_argument("--out", type=Path, help="file to write (default: stdout)")
    rep = sub.add_parser(
        "report",
        help="write DIR/report.html with plots of a crawl",
        description="A self-contained HTML report with plots, viewable offline.",
    )
    rep.add_argument("dir", type=Path, help="the crawl's --out folder")
    return parser


def cmd_robots(args: argparse.Namespace) -> int:
    from politecrawl.robots_tool import check

    for line in check(
        args.source,
        args.user_agent,
        args.urls,
        resolve=tuple(args.resolve),
        allow_private=args.allow_private_addresses,
    ):
        print(line)
    return 0


def _merge(args: argparse.Namespace) -> dict[str, Any]:
    """TOML values, overridden by the flags given."""
    values: dict[str, Any] = {}
    if args.config is not None:
        values.update(load_toml(args.config))
    for key, val in vars(args).items():
        if val is not None and key not in ("config", "command", "verbose"):
            values[key] = val
    return values


def config_from_values(v: dict[str, Any]) -> CrawlConfig:
    """Build and validate a CrawlConfig from merged TOML/flag values."""
    known = {n.replace("-", "_") for n, _, _ in _CRAWL_OPTIONS} | {
        "resolve",
        "allow_private_addresses",
        "no_progress",
    }
    unknown = set(v) - known
    if unknown:
        raise ConfigError(f"unknown option(s) in config: {', '.join(sorted(unknown))}")
    required_opts = ("user_agent", "out") if v.get("frontier") else ("seeds", "user_agent", "out")
    for required in required_opts:
        if v.get(required) in (None, ""):
            raise ConfigError(f"--{required.replace('_', '-')} is required")
    seeds = read_seeds(Path(v["seeds"])) if v.get("seeds") else ()
    politeness = PolitenessConfig(
        min_delay_s=float(v.get("min_delay", 15.0)),
        response_time_factor=float(v.get("delay_factor", 30.0)),
        jitter_s=float(v.get("jitter", 0.5)),
        key_mode=v.get("politeness_key", "host"),
        park_after_failures=int(v.get("park_after", 5)),
        park_s=float(v.get("park_time", 3600.0)),
    )
    resolve = v.get("resolve") or ()
    fetch = FetchConfig(
        user_agent=str(v["user_agent"]),
        max_size_bytes=int(v.get("max_size", 2 * 1024 * 1024)),
        allow_private_addresses=bool(v.get("allow_private_addresses", False)),
        resolve=tuple([resolve] if isinstance(resolve, str) else resolve),
        retry_base_s=float(v.get("retry_base", 30.0)),
    )
    allow = read_lines_file(Path(v["allow"]), "allow-list") if v.get("allow") else ()
    exclude = Path(v["exclude_file"]) if v.get("exclude_file") else None
    return CrawlConfig(
        seeds=seeds,
        out_dir=Path(v["out"]),
        fetch=fetch,
        politeness=politeness,
        concurrency=int(v.get("concurrency", 64)),
        max_pages=int(v["max_pages"]) if v.get("max_pages") is not None else None,
        max_time_s=float(v["max_time"]) if v.get("max_time") is not None else None,
        scope=v.get("scope", "domain"),
        allow=allow,
        exclude_file=exclude,
        exclude_check_s=float(v.get("exclude_check", 60.0)),
        robots_ttl_s=float(v.get("robots_ttl", 86400.0)),
        progress=not v.get("no_progress", False),
        sitemaps=bool(v.get("sitemaps", False)),
        seen_mode=v.get("seen", "auto"),
        expected_urls=int(v.get("expected_urls", 1_000_000)),
        seen_fp_rate=float(v.get("seen_fp_rate", 0.01)),
        strategy=v.get("strategy"),
        topic=v.get("topic"),
        relevance=v.get("relevance"),
        target_relevant=int(v["target_relevant"]) if v.get("target_relevant") else None,
        max_queue=int(v["max_queue"]) if v.get("max_queue") else None,
        max_wait_s=float(v.get("max_wait", MAX_WAIT_S)),
        defer_ratio=None if v.get("defer_ratio") is None else float(v["defer_ratio"]),
        max_urls_per_host=int(v["max_urls_per_host"]) if v.get("max_urls_per_host") else None,
        max_urls_per_pattern=_pattern_cap(v.get("max_urls_per_pattern")),
        log_rotate_bytes=int(v.get("log_rotate_bytes", 64 * 1024 * 1024)),
        log_retention_days=float(v.get("log_retention_days", 30.0)),
        state_file=Path(v["state"]) if v.get("state") else None,
        frontier_url=v.get("frontier"),
        recrawl=bool(v.get("recrawl", False)),
        revisit_min_s=float(v.get("revisit_min", 86400.0)),
        revisit_max_s=float(v.get("revisit_max", 30 * 86400.0)),
        crawl_id=v.get("crawl_id"),
    )


def _pattern_cap(value: Any) -> int | None:
    """``--max-urls-per-pattern``: 0 turns the guard off; unset keeps the default."""
    if value is None:
        return MAX_URLS_PER_PATTERN
    n = int(value)
    if n < 0:
        raise ConfigError("--max-urls-per-pattern must be >= 0")
    return n or None


def _print_summary(summary: dict[str, Any], out: Path) -> None:
    print(f"crawl finished ({summary['stopped_by']}) in {summary['seconds']:.1f} s")
    for name in (
        "pages_fetched",
        "requests",
        "stored",
        "robots_disallowed",
        "excluded",
        "extension_filtered",
        "redirects",
        "hosts",
        "queued_left",
    ):
        print(f"  {name.replace('_', ' '):20} {summary[name]}")
    if summary["errors"]:
        print(
            "  errors               " + ", ".join(f"{k} {v}" for k, v in summary["errors"].items())
        )
    print(f"  output               {out} (summary.json, warc/, log/, state.sqlite)")


def cmd_segment(args: argparse.Namespace) -> int:
    from politecrawl.admission import Gate
    from politecrawl.exclusions import NeverCrawlList
    from politecrawl.segments import build
    from politecrawl.urls import DEFAULT_BLOCKED_EXTENSIONS, ExtensionFilter, Scope, TrapLimits

    if args.scope not in ("host", "domain", "any"):
        raise ConfigError(f"--scope must be host, domain or any, got {args.scope!r}")
    if args.max_urls_per_host is not None and args.max_urls_per_host < 1:
        raise ConfigError("--max-urls-per-host must be >= 1")
    allow = read_lines_file(args.allow, "allow-list") if args.allow else ()
    seeds: list[str] = []
    if args.scope != "any":  # the earlier crawls' seeds define host/domain scope
        for d in args.crawl_dirs:
            summary = d / "seeds.txt"
            if summary.exists():
                seeds += read_seeds(summary)
    gate = Gate(
        Scope(args.scope, seeds, allow),
        NeverCrawlList(args.exclude_file),
        ExtensionFilter(DEFAULT_BLOCKED_EXTENSIONS),
        TrapLimits(),
        args.max_urls_per_host,
    )
    counts = build(args.crawl_dirs, args.out, gate)
    others = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k != "written")
    print(
        f"segment {args.out}: {counts['written']} URLs"
        + (f" (not taken: {others})" if others else "")
    )
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    values = _merge(args)
    values["seeds"] = values.pop("segment")
    values.setdefault("scope", "any")
    return _run_crawl(values, follow=False)


def cmd_worker(args: argparse.Namespace) -> int:
    values = _merge(args)
    if not values.get("frontier"):
        raise ConfigError("worker needs --frontier redis://HOST:PORT/DB")
    values.setdefault("scope", "any")
    if not values.get("seeds"):
        values["seeds"] = None
    return _run_crawl(values, follow=True)


def cmd_seed(args: argparse.Namespace) -> int:
    from politecrawl.crawler import Crawler

    seeds = read_seeds(args.file)
    out = Path(tempfile.mkdtemp(prefix="politecrawl-seed-"))
    cfg = CrawlConfig(
        seeds=seeds,
        out_dir=out,
        fetch=FetchConfig(user_agent=DEMO_UA),
        scope=args.scope,
        exclude_file=args.exclude_file,
        frontier_url=args.frontier,
        crawl_id=args.crawl_id,
        progress=False,
    )
    n = asyncio.run(Crawler(cfg).seed())
    print(f"{n} of {len(seeds)} URLs queued in crawl {args.crawl_id!r}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from politecrawl.frontier.redis import status

    st = asyncio.run(status(args.frontier, args.crawl_id))
    if args.json:
        print(json.dumps(st, indent=2))
        return 0
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
    return _run_crawl(_merge(args), follow=True)


def _run_crawl(values: dict[str, Any], *, follow: bool) -> int:
    from politecrawl.crawler import Crawler

    cfg = dataclasses.replace(config_from_values(values), follow_links=follow)
    crawler = Crawler(cfg)
    summary = asyncio.run(crawler.run())
    _print_summary(summary.to_json(), cfg.out_dir)
    if crawler.fatal:
        print(
            f"politecrawl: stopped: {crawler.fatal} (run the same command again to resume)",
            file=sys.stderr,
        )
        return 1
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from politecrawl.demo import run_demo

    if args.hosts < 1 or args.pages < 1 or args.min_delay < 0:
        raise ConfigError("--hosts and --pages must be >= 1, --min-delay >= 0")
    out = args.out or Path(tempfile.mkdtemp(prefix="politecrawl-demo-"))
    summary = asyncio.run(run_demo(out, args.hosts, args.pages, args.min_delay))
    _print_summary(summary, out)
    return 0


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
    if extra:  # `robots SOURCE --user-agent UA URL...`: URLs may follow the options
        if args.command != "robots" or any(x.startswith("-") for x in extra):
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
        "log": _tool("complaints"),
        "log-stats": _tool("logstats"),
        "botpage": _tool("botpage"),
        "report": _tool("report"),
    }
    try:
        return handlers[args.command](args)
    except ConfigError as exc:
        print(f"politecrawl: error: {exc}", file=sys.stderr)
        return 2
    except PolitecrawlError as exc:
        print(f"politecrawl: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
