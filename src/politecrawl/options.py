"""The options of `crawl`, `worker` and `fetch`, and the config built from them.

``CRAWL_OPTIONS`` is the one list: ``add_crawl_options`` makes the argparse flags from it, the
TOML keys are the flags' names (``option_types``, read back from the parser, so a flag added
by hand counts too), and ``config_from_values`` sets, for each option given, the config field
``config.option_fields()`` maps it to; every default is the dataclass's. tests/test_options.py
checks the list against README's "Crawl options" table and runs every option through the
real command line and a TOML file. A new option: a config field, a flag, a README row.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
from pathlib import Path
from typing import Any

from politecrawl.config import (
    CrawlConfig,
    FetchConfig,
    PolitenessConfig,
    load_toml,
    option_fields,
    read_lines_file,
    read_seeds,
)
from politecrawl.errors import ConfigError, StorageError

__all__ = [
    "CRAWL_OPTIONS",
    "add_crawl_options",
    "config_from_values",
    "config_json",
    "option_types",
    "toml_values",
    "write_config",
]

class _BadPath(ConfigError, argparse.ArgumentTypeError):
    """An empty path (argparse names the option with it)."""


def named_path(text: str) -> Path:
    """A path with a name: ``--out ""`` was the current folder, and the crawl wrote there."""
    if not text.strip():
        raise _BadPath("an empty name: give a folder or file name")
    return Path(text)


# The options of `crawl`, `worker` and `fetch`: name, type, help. This list is the one source:
# argparse flags and the TOML keys are made from it, each sets the config field that
# ``config.option_fields()`` maps it to, and tests/test_options.py checks it against README's
# "Crawl options" table. A new option: a config field, a row here, a row in the README.
# type bool: a flag (``true``/``false`` in TOML); list: repeatable.
CRAWL_OPTIONS: list[tuple[str, Any, str]] = [
    ("seeds", Path, "file of seed URLs, one a line, # comments"),
    ("user-agent", str, "bot name and info URL, e.g. 'acmebot/1.0 (+https://acme.example/bot)'"),
    ("out", named_path, "output folder (state, WARC, logs); the same folder resumes the crawl"),
    ("min-delay", float, "per-site floor between request starts, seconds (default 15)"),
    ("delay-factor", float, "delay >= factor x mean of the site's last 5 response times (30)"),
    (
        "jitter",
        float,
        "random extra delay, 0 to this many seconds, so starts don't align "
        "(default: a tenth of --min-delay, at most 0.5)",
    ),
    (
        "concurrency",
        int,
        "sites in flight at once (default 64); one whose request has waited 2 s for an "
        "answer stops counting, up to 4x as many in all",
    ),
    (
        "processes",
        int,
        "crawler processes, the sites partitioned over them (files of process i > 0 tagged "
        "@i: state@1.sqlite, log/requests@1.jsonl, pages@1.jsonl; resume with the same N); "
        "with a Redis frontier, processes for the page work (default 1; docs/architecture.md)",
    ),
    ("max-pages", int, "stop after this many page requests in this run"),
    ("max-time", float, "stop after this many seconds"),
    (
        "scope",
        str,
        "host | domain | any (default domain: the seeds' registered domains; fetch: any, "
        "since a segment's URLs were chosen by its build)",
    ),
    ("allow", Path, "allow-list file: domains, or regexes written re:..."),
    (
        "exclude-file",
        Path,
        "never-crawl list: one domain a line (subdomains included), reloaded live",
    ),
    ("exclude-check", float, "seconds between checks of the never-crawl file (default 60)"),
    (
        "resolve",
        list,
        "HOST:PORT:ADDR: pin a host to an address like curl (repeatable; *.example wildcards)",
    ),
    ("allow-private-addresses", bool, "allow loopback/private/link-local targets (refused)"),
    ("dns-timeout", float, "seconds a name server has to answer one try of a lookup (2)"),
    ("dns-tries", int, "tries of a lookup before the name counts as not resolving (2)"),
    (
        "dns-negative-ttl",
        float,
        "seconds a name that did not resolve is not asked again (300; answers keep their TTL)",
    ),
    ("max-size", int, "body cap in bytes (default 2 MiB); longer bodies are cut and marked"),
    (
        "ip-min-delay",
        "gap_or_off",
        "one request at a time per server IP, and this gap after each, seconds (1); 'off' "
        "only for a test web whose names on one address stand for many servers",
    ),
    ("politeness-key", str, "host | domain | ip: what one 'site' is for politeness (default host)"),
    ("robots-ttl", float, "seconds a robots.txt stays fresh (default 86400)"),
    ("sitemaps", bool, "also seed from the Sitemap lines of each site's robots.txt"),
    ("retry-base", float, "first retry wait after a 5xx or network error, seconds (default 30)"),
    (
        "transient-attempts",
        int,
        "attempts in all for a URL failing for a transient reason (DNS, refused connection, "
        "timeout), the wait doubling from --retry-base up to --retry-max-wait (30)",
    ),
    ("retry-max-wait", float, "longest wait between two such attempts, seconds (900)"),
    ("request-time", float, "a request's whole time at most, connection to last byte (60)"),
    (
        "min-rate",
        int,
        "bytes/s: a body slower than this on average, --min-rate-time into it, is cut as "
        "too slow, not retried, and counts against its site (1000; 0 = off)",
    ),
    ("min-rate-time", float, "seconds into a body before --min-rate is enforced (10)"),
    (
        "tls-insecure",
        bool,
        "crawl https sites whose certificate does not verify; the WARC records say so",
    ),
    ("park-after", int, "failures in a row after which a site is parked (5)"),
    ("park-time", float, "how long a parked site is left alone, seconds (3600)"),
    ("max-urls-per-host", int, "trap guard: URLs queued per host at most (unlimited)"),
    (
        "max-urls-per-pattern",
        int,
        "trap guard: URLs of one generated pattern (digits, query values) found from its own "
        "pages, per host, before it is named a trap; raised by links from other hosts; "
        "calendars are named sooner (5000; 0 = the guard off)",
    ),
    (
        "seen",
        str,
        "seen-set: auto | disk | exact | bloom (auto: disk, exact in the crawl's store; "
        "Bloom filter past 2 million expected URLs; exact: a set in memory)",
    ),
    ("expected-urls", int, "URLs the crawl may discover; sizes the Bloom filter (1000000)"),
    ("seen-fp-rate", float, "Bloom filter false-positive rate (0.01)"),
    (
        "strategy",
        str,
        "frontier order: focused | keyword | bfs | random (focused when a topic or a "
        "relevance function is given, else bfs; keyword: the topic prior, no learning)",
    ),
    (
        "defer-ratio",
        float,
        "focused and keyword: a site whose best URL scores below this share of the best URL of a "
        "site that can be asked now or soon (not one that fails, backs off or is parked) "
        "waits while that one waits on its delay (0.25; 0 = any free site; the shared "
        "--frontier keeps it across its shards and workers)",
    ),
    ("topic", str, "what the crawl looks for, e.g. 'steam locomotives, steam trains'"),
    ("relevance", str, "your nugget function 'package.module:function' (Document -> 0..1)"),
    ("handler", str, "your page handler 'package.module:function' (Page -> dicts, items.jsonl)"),
    (
        "items",
        Path,
        "where the handler's items go (default OUT/items.jsonl): a name ending .csv or .json "
        "writes CSV or one JSON array, .jsonl JSON lines",
    ),
    ("target-relevant", int, "stop after this many relevant pages"),
    ("max-queue", int, "frontier cap: beyond it the lowest-priority URLs are dropped"),
    ("max-wait", float, "a site due this many seconds goes before better-ranked ones (300)"),
    ("state", Path, "robots.txt cache and site statistics kept in this file across crawls"),
    (
        "frontier",
        str,
        "redis://HOST:PORT/DB: share the crawl with other workers (default: OUT/state.sqlite)",
    ),
    ("crawl-id", str, "the shared crawl's name (default 'default', as for seed and status)"),
    ("recrawl", bool, "continuous crawl: fetched pages come back after their revisit interval"),
    ("revisit-min", float, "with --recrawl: shortest revisit interval, seconds (86400)"),
    ("revisit-max", float, "with --recrawl: longest revisit interval, seconds (2592000)"),
    ("log-rotate-bytes", int, "rotate the logs at this size too (64 MiB; daily anyway)"),
    ("log-retention-days", float, "delete rotated logs older than this (30)"),
    ("no-progress", bool, "no live dashboard (it is drawn only on a terminal anyway)"),
    (
        "extract",
        list,
        "text | markdown: the main text of each stored page (trafilatura) to "
        "OUT/content.jsonl (repeatable, or a comma list: text,markdown)",
    ),
    (
        "metrics",
        str,
        "HOST:PORT: serve Prometheus /metrics there while crawling (a bare port binds "
        "127.0.0.1; --processes N: one endpoint for the whole crawl)",
    ),
    (
        "purpose",
        str,
        "what the pages are for: search | ai-input | ai-train | archive (default search); "
        "a page whose owner refuses it (robots.txt Content-Usage/Content-Signal, tdmrep.json, "
        "headers, meta, noai) is fetched but not kept (docs/politeness.md)",
    ),
]


class _BadSeconds(ConfigError, argparse.ArgumentTypeError):
    """Not seconds, nor ``off``: argparse names the option with it (its own type)."""


def gap_or_off(text: str) -> float | str:
    """A number of seconds, or ``off`` (the rule switched off: the field is set to None)."""
    if text.strip().lower() == "off":
        return "off"
    try:
        return float(text)
    except ValueError:
        raise _BadSeconds(f"need seconds or 'off', got {text!r}") from None


# options whose 0 (or ``off``) switches their rule off: the field holds None
_OFF_VALUES: dict[str, tuple[object, ...]] = {
    "max_urls_per_pattern": (0,),
    "ip_min_delay": ("off",),
}


def add_crawl_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, help="TOML file with any of these options; flags win")
    for name, typ, help_ in CRAWL_OPTIONS:
        if typ == "gap_or_off":
            p.add_argument(f"--{name}", type=gap_or_off, default=None, help=help_)
        elif typ is bool:
            p.add_argument(f"--{name}", action="store_true", default=None, help=help_)
        elif typ is list:
            p.add_argument(f"--{name}", action="append", default=None, help=help_)
        else:
            p.add_argument(f"--{name}", type=typ, default=None, help=help_)
    p.add_argument("-v", "--verbose", action="store_true", help="log more")


@functools.cache
def option_types() -> dict[str, Any]:
    """Each crawl option (``min_delay``) and its type (bool: a flag; list: repeatable), as
    the parser has them."""
    parser = argparse.ArgumentParser(add_help=False)
    add_crawl_options(parser)
    types: dict[str, Any] = {}
    for action in parser._actions:  # (argparse has no public list of its actions)
        if action.dest in ("config", "verbose"):
            continue
        if isinstance(action, argparse._StoreTrueAction):
            types[action.dest] = bool
        elif isinstance(action, argparse._AppendAction):
            types[action.dest] = list
        else:
            types[action.dest] = action.type or str
    return types


def toml_values(path: Path) -> dict[str, Any]:
    """A TOML config's options, checked and typed as the flags would be."""
    values = load_toml(path)
    unknown = sorted(k for k in values if k not in option_types())
    if unknown:
        names = ", ".join(k.replace("_", "-") for k in unknown)
        raise ConfigError(f"{path}: unknown option(s): {names} (see --help)")
    return {
        k: _typed(f"{path}: {k.replace('_', '-')}", option_types()[k], v) for k, v in values.items()
    }


def _typed(what: str, typ: Any, value: Any) -> Any:
    """``value`` from a TOML file as the option's type, or a ConfigError naming the option."""
    if typ is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{what} must be true or false, got {value!r}")
    if typ is list:
        if isinstance(value, str):
            return [value]
        if isinstance(value, list) and all(isinstance(x, str) for x in value):
            return value
        raise ConfigError(f"{what} must be a string or a list of strings, got {value!r}")
    if typ in (int, float) and isinstance(value, bool):  # TOML's true is no number
        raise ConfigError(f"{what} must be {'a whole number' if typ is int else 'a number'}, "
                          f"got {str(value).lower()}")  # fmt: skip
    if typ in (int, float):
        try:
            if isinstance(value, (int, float, str)) and (
                typ is float or not isinstance(value, float)
            ):
                return typ(value)
        except ValueError:
            pass
        kind = "a whole number" if typ is int else "a number"
        raise ConfigError(f"{what} must be {kind}, got {value!r}")
    if typ is gap_or_off and isinstance(value, (int, float, str)) and not isinstance(value, bool):
        try:
            return gap_or_off(str(value))
        except argparse.ArgumentTypeError as exc:
            raise ConfigError(f"{what}: {exc}") from None
    if isinstance(value, str):
        try:
            return typ(value)
        except ConfigError as exc:
            raise ConfigError(f"{what}: {exc}") from None
    raise ConfigError(f"{what} must be a string, got {value!r}")


def config_from_values(v: dict[str, Any]) -> CrawlConfig:
    """Build and validate a CrawlConfig from merged TOML/flag values: each option sets the
    field ``option_fields()`` maps it to; every default is the dataclass's."""
    unknown = set(v) - set(option_types())
    if unknown:
        raise ConfigError(f"unknown option(s): {', '.join(sorted(unknown))}")
    required_opts = ("user_agent", "out") if v.get("frontier") else ("seeds", "user_agent", "out")
    for required in required_opts:
        if v.get(required) in (None, ""):
            raise ConfigError(f"--{required.replace('_', '-')} is required")
    targets = option_fields()
    kwargs: dict[type, dict[str, Any]] = {
        CrawlConfig: {"seeds": ()},
        FetchConfig: {},
        PolitenessConfig: {},
    }
    for name, value in v.items():
        if value is None:
            continue
        if isinstance(value, float) and not math.isfinite(value):  # NaN passes every check
            raise ConfigError(f"--{name.replace('_', '-')} must be a finite number, got {value}")
        cls, f = targets[name]
        kwargs[cls][f.name] = _field_value(name, value, f.metadata.get("negate", False))
    return CrawlConfig(
        **kwargs[CrawlConfig],
        fetch=FetchConfig(**kwargs[FetchConfig]),
        politeness=PolitenessConfig(**kwargs[PolitenessConfig]),
    )


def _field_value(name: str, value: Any, negate: bool) -> Any:
    """An option's value as its field holds it: files read, lists made tuples."""
    if name == "seeds":  # a file (- for stdin), or URLs already read (``crawl URL ...``)
        return tuple(value) if isinstance(value, list | tuple) else read_seeds(Path(value))
    if name == "allow":
        return read_lines_file(Path(value), "allow-list", "--allow")
    if isinstance(value, list):
        return tuple(value)
    if value in _OFF_VALUES.get(name, ()):
        return None
    return not value if negate else value


def config_json(cfg: CrawlConfig) -> dict[str, Any]:
    """The resolved config, every default filled in, as ``OUT/config.json`` holds it."""

    def plain(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: plain(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [plain(v) for v in x]
        return str(x) if isinstance(x, Path) else x

    return {k: plain(v) for k, v in dataclasses.asdict(cfg).items() if k != "seeds"}


def write_config(cfg: CrawlConfig) -> None:
    """What this run was asked to do (the seeds are in seeds.txt), for whoever reads the
    output later: a crawl's settings are part of its record."""
    path = cfg.out_dir / "config.json"
    try:
        path.write_text(json.dumps(config_json(cfg), indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc}") from exc
