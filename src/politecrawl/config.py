"""Crawl settings: frozen dataclasses per area, validated once, built from TOML + flags.

Every setting a user can give on the command line can also be given in a TOML file
(``--config``) under the same name with ``-`` written as ``_`` or ``-``; flags win.
"""

from __future__ import annotations

import math
import re
import sys
import tomllib
from dataclasses import Field, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from politecrawl.errors import ConfigError
from politecrawl.polite import useragent
from politecrawl.urls.canonical import canonical_seeds

Scope = Literal["host", "domain", "any"]
KeyMode = Literal["host", "domain", "ip"]

_PRODUCT = re.compile(r"^([A-Za-z_-][A-Za-z0-9_.-]*)(/[^\s]+)?")


def validate_user_agent(user_agent: str) -> str:
    """Return the product token; refuse a UA a site operator could not identify us by.

    The seeds' first rule of politeness: name the bot, link to a page about it, and never
    pretend to be a browser, a tool or another crawler (robots.txt groups for ``Googlebot``
    would apply to a UA that names it: ``polite.useragent``).
    """
    ua = user_agent.strip()
    if not ua:
        raise ConfigError(
            "--user-agent is blank: name the bot and give an info URL, e.g. "
            "'acmebot/1.0 (+https://acme.example/bot)'"
        )
    if any(c < " " or c == "\x7f" for c in ua):
        raise ConfigError(
            f"--user-agent {ua!r} holds a control character (a line break?): a header is one "
            "line of text"
        )
    why = useragent.impersonation(ua)
    if why is not None:
        raise ConfigError(f"--user-agent {ua!r} {why}")
    if not useragent.URL_IN_UA.search(ua):
        raise ConfigError(
            f"--user-agent {ua!r} carries no info URL (http:// or https://) "
            "where site operators can read about the bot"
        )
    m = _PRODUCT.match(ua)
    if not m:
        raise ConfigError(f"--user-agent {ua!r} does not start with a bot name (product token)")
    why = useragent.unopenable_url(ua)
    if why is not None:
        raise ConfigError(f"--user-agent {ua!r} {why}")
    return m.group(1)


MAX_WAIT_S = 300.0
DEMO_UA = "politecrawl-demo/0.1 (+https://github.com/politecrawl/politecrawl)"  # demo, seed
DEFER_RATIO = 0.25  # focused crawls: see CrawlConfig.defer_ratio (docs/focus.md, issue 30 s. 4)
"""Default ``--max-wait``: long enough that priority order rules unless the crawl is
overloaded (more sites due than it can serve) for minutes on end."""


JITTER_AUTO = math.nan  # (no value a user can type: --jitter -1 is refused)
"""``PolitenessConfig.jitter_s`` default: a tenth of ``min_delay_s``, at most 0.5 s.

The jitter only keeps sites' starts from lining up; a fixed 0.5 s would dwarf a short
``--min-delay`` (0.05 s asked, 0.3 s median gap got), so by default it scales with the delay.
"""


def option(name: str, **extra: Any) -> dict[str, Any]:
    """Field metadata naming the command-line option (``--name``) that sets this field, for
    fields whose name is not the option's (``response_time_factor`` is ``--delay-factor``).

    Without it a field ``foo_bar`` is set by ``--foo-bar``, and ``foo_bar_s`` (or ``_bytes``)
    by ``--foo-bar`` too: see
    ``option_fields``, the one map from options to fields.
    """
    return {"option": name, **extra}


# The largest number any option takes: 30 years in seconds, a gigabyte and more in bytes.
# Past it a value is a slip (1e30, 10**30) that overflows a timer or a C integer far from
# where it was given; NaN and infinities, which every comparison lets through, likewise
# (``--min-delay nan`` turned the per-site delay off).
MAX_NUMBER = 1e12


def _positive(name: str, value: float, *, zero_ok: bool = False) -> None:
    if not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite number, got {value}")
    if value > MAX_NUMBER:
        raise ConfigError(f"{name} must be at most {MAX_NUMBER:g}, got {value:g}")
    if value < 0 or (value == 0 and not zero_ok):
        raise ConfigError(f"{name} must be {'>= 0' if zero_ok else '> 0'}, got {value}")


MAX_DNS_TIMEOUT_S = 300.0  # c-ares counts a try's time in int milliseconds
MAX_DNS_TRIES = 10  # c-ares' tries of one lookup; more is a typo, and c-ares takes an int
MAX_EXPECTED_URLS = 10**9  # --expected-urls: the Bloom filter is sized from it, in memory
MAX_RETENTION_DAYS = 36500  # --log-retention-days: a hundred years is "keep them"
MAX_URLS_PER_PATTERN = 5000  # see traps.UrlSpaces (the budget rule; calendars are stopped sooner)


@dataclass(frozen=True, slots=True)
class PolitenessConfig:
    """How often one site may be asked (see ``politeness``)."""

    min_delay_s: float = 15.0
    response_time_factor: float = field(default=30.0, metadata=option("delay-factor"))
    response_time_window: int = 5
    jitter_s: float = JITTER_AUTO  # see JITTER_AUTO
    max_backoff_s: float = 3600.0
    max_retry_after_s: float = 3600.0
    key_mode: KeyMode = field(default="host", metadata=option("politeness-key"))
    park_after_failures: int = field(default=5, metadata=option("park-after"))
    park_s: float = field(default=3600.0, metadata=option("park-time"))
    # one server, many names: one request in flight per IP address, and this gap from the end
    # of its last response; None ("off" on the command line) turns the IP rule off: only for a
    # test web whose names on one loopback address stand for many servers
    ip_min_delay_s: float | None = 1.0

    def __post_init__(self) -> None:
        _positive("--min-delay", self.min_delay_s, zero_ok=True)
        _positive("--delay-factor", self.response_time_factor, zero_ok=True)
        if self.ip_min_delay_s is not None:
            _positive("--ip-min-delay", self.ip_min_delay_s, zero_ok=True)
        if math.isnan(self.jitter_s):
            object.__setattr__(self, "jitter_s", min(0.5, self.min_delay_s / 10))
        _positive("--jitter", self.jitter_s, zero_ok=True)
        if self.park_after_failures < 1:
            raise ConfigError(f"--park-after must be >= 1, got {self.park_after_failures}")
        _positive("--park-time", self.park_s, zero_ok=True)
        if self.response_time_window < 1:
            raise ConfigError("response_time_window must be >= 1")
        if self.key_mode not in ("host", "domain", "ip"):
            raise ConfigError(f"--politeness-key must be host, domain or ip, got {self.key_mode!r}")


@dataclass(frozen=True, slots=True)
class FetchConfig:
    """One HTTP request's limits."""

    user_agent: str
    max_size_bytes: int = 2 * 1024 * 1024
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 20.0
    # a request's whole time, connection to last byte (curl's --max-time)
    total_timeout_s: float = field(default=60.0, metadata=option("request-time"))
    # a body arriving slower than this on average, once ``min_rate_time_s`` into it, is cut
    # as too slow (curl's --speed-limit/--speed-time): a drip-fed tarpit costs seconds
    min_rate_bytes: int = field(default=1000, metadata=option("min-rate"))
    min_rate_time_s: float = 10.0
    html_types: tuple[str, ...] = ("text/html", "application/xhtml+xml")
    allow_private_addresses: bool = False
    resolve: tuple[str, ...] = ()
    # name lookups (net/dns.py): c-ares' per-try timeout and tries; how long a failure is kept
    dns_timeout_s: float = 2.0
    dns_tries: int = 2
    dns_negative_ttl_s: float = 300.0
    max_attempts: int = 3
    retry_base_s: float = 30.0
    # a transient failure (DNS, refused connection, timeout) is retried this many times in
    # all, the wait doubling from ``retry_base_s`` up to ``retry_max_wait_s`` (Heritrix: 30
    # retries 15 min apart): a site that is down for hours is not lost
    transient_attempts: int = 30
    retry_max_wait_s: float = 900.0
    # False (--tls-insecure): https sites whose certificate does not verify are crawled
    # anyway, and the WARC says so (an archive wants them)
    verify_tls: bool = field(default=True, metadata=option("tls-insecure", negate=True))
    max_redirect_hops: int = 3

    def __post_init__(self) -> None:
        validate_user_agent(self.user_agent)
        _positive("--max-size", self.max_size_bytes)
        _positive("connect_timeout_s", self.connect_timeout_s)
        _positive("read_timeout_s", self.read_timeout_s)
        _positive("--request-time", self.total_timeout_s)
        _positive("--dns-timeout", self.dns_timeout_s)
        if self.dns_timeout_s > MAX_DNS_TIMEOUT_S:
            raise ConfigError(f"--dns-timeout must be at most {MAX_DNS_TIMEOUT_S:g} s")
        _positive("--dns-negative-ttl", self.dns_negative_ttl_s, zero_ok=True)
        if not 1 <= self.dns_tries <= MAX_DNS_TRIES:
            raise ConfigError(f"--dns-tries must be 1-{MAX_DNS_TRIES}, got {self.dns_tries}")
        if self.max_attempts < 1:  # (not an option: fixed at 3)
            raise ConfigError("max_attempts must be >= 1")
        if not 1 <= self.transient_attempts <= MAX_NUMBER:
            raise ConfigError(f"--transient-attempts must be >= 1, got {self.transient_attempts}")
        _positive("--retry-base", self.retry_base_s)
        _positive("--retry-max-wait", self.retry_max_wait_s)
        _positive("--min-rate", self.min_rate_bytes, zero_ok=True)
        _positive("--min-rate-time", self.min_rate_time_s, zero_ok=True)
        for rule in self.resolve:
            parse_resolve_rule(rule)

    @property
    def product_token(self) -> str:
        return validate_user_agent(self.user_agent)


def bot_name(user_agent: str) -> str:
    """The product token of ``user_agent``, only to match robots.txt groups with (nothing is
    sent under it: ``robots`` on a local file); a request's user agent is
    ``validate_user_agent``'s."""
    ua = user_agent.strip()
    m = _PRODUCT.match(ua)
    if m is None:
        raise ConfigError(f"--user-agent {ua!r} does not start with a bot name (product token)")
    return m.group(1)


def parse_resolve_rule(rule: str) -> tuple[str, int, str]:
    """``HOST:PORT:ADDR`` like curl's --resolve; HOST may be ``*.example``; ADDR may be [v6]."""
    parts = rule.split(":", 2)
    if len(parts) != 3 or not parts[0] or not parts[2]:
        raise ConfigError(f"--resolve {rule!r} is not HOST:PORT:ADDR")
    host, port_s, addr = parts
    if not port_s.isdigit() or not 0 < int(port_s) < 65536:
        raise ConfigError(f"--resolve {rule!r}: port must be 1-65535")
    addr = addr.strip("[]")
    import ipaddress

    try:
        ipaddress.ip_address(addr)
    except ValueError:
        raise ConfigError(f"--resolve {rule!r}: {addr!r} is not an IP address") from None
    return host.lower(), int(port_s), addr


@dataclass(frozen=True, slots=True)
class CrawlConfig:
    """Everything one crawl needs; see README for each option."""

    seeds: tuple[str, ...] = field(metadata=option("seeds"))
    out_dir: Path = field(metadata=option("out"))
    fetch: FetchConfig
    politeness: PolitenessConfig = field(default_factory=PolitenessConfig)
    concurrency: int = 64
    # processes for the page work (decode, parse, fingerprints): workpool; 1 = this one only
    processes: int = 1
    max_pages: int | None = None
    max_time_s: float | None = None
    scope: Scope = "domain"
    allow: tuple[str, ...] = ()
    exclude_file: Path | None = None
    exclude_check_s: float = 60.0
    blocked_extensions: tuple[str, ...] | None = None
    robots_ttl_s: float = 24 * 3600.0
    warc_max_bytes: int = 1024**3
    progress: bool = field(default=True, metadata=option("no-progress", negate=True))
    sitemaps: bool = False
    max_sitemaps_per_host: int = 20
    max_sitemap_bytes: int = 10 * 1024 * 1024
    seen_mode: Literal["auto", "exact", "bloom", "disk"] = field(
        default="auto", metadata=option("seen")
    )
    expected_urls: int = 1_000_000
    seen_fp_rate: float = 0.01
    frontier_url: str | None = field(
        default=None, metadata=option("frontier")
    )  # redis://HOST:PORT/DB: a crawl shared by many workers
    crawl_id: str | None = None  # the shared crawl's name (default: the out folder's name)
    # None: focused if a nugget
    strategy: Literal["bfs", "random", "keyword", "focused"] | None = None
    topic: str | None = None
    relevance: str | None = None  # "package.module:function", a Document -> [0, 1] callable
    handler: str | None = None  # "package.module:function", a page handler (items.jsonl)
    # where the handler's items go (None: OUT/items.jsonl); .csv, .json or .jsonl by its name
    items_file: Path | None = field(default=None, metadata=option("items"))
    target_relevant: int | None = None
    max_queue: int | None = None
    max_wait_s: float = MAX_WAIT_S  # a site due this long goes before better-ranked ones
    # a ready site whose best URL is below this share of the best queued at a site that can be
    # asked now or soon waits (frontier.not_worth_it, both frontiers); None: DEFER_RATIO for
    # the keyword/focused strategies, else 0
    defer_ratio: float | None = None
    max_urls_per_host: int | None = None
    # trap guard: URLs of one generated pattern found from its own pages (traps.UrlSpaces)
    max_urls_per_pattern: int | None = MAX_URLS_PER_PATTERN
    recrawl: bool = False  # continuous: fetched pages come back after their revisit interval
    revisit_min_s: float = 86400.0
    revisit_max_s: float = 30 * 86400.0
    follow_links: bool = True  # False: the seeds (a segment) and their redirects, no link
    state_file: Path | None = field(
        default=None, metadata=option("state")
    )  # robots cache + host statistics shared across crawls
    log_rotate_bytes: int = 64 * 1024 * 1024
    log_retention_days: float = 30.0
    # main text of each stored page to OUT/content.jsonl: "text" and/or "markdown" (extract)
    extract: tuple[str, ...] = ()
    # HOST:PORT where /metrics is served while crawling (metrics); None: not served
    metrics: str | None = None
    # what the pages will be used for, resolved against the owners' statements (polite.usage)
    purpose: Literal["search", "ai-input", "ai-train", "archive"] = "search"

    def __post_init__(self) -> None:
        object.__setattr__(self, "extract", parse_extract(self.extract))
        # paths given as text (``out_dir="out"``, as the API's users write them) made Paths:
        # one was taken, then failed deep in the crawl with an AttributeError
        for name in ("out_dir", "exclude_file", "items_file", "state_file"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, Path(value))
            elif value is not None and not isinstance(value, Path):
                raise ConfigError(f"{name} must be a path, got {type(value).__name__}")
        if self.metrics is not None:
            parse_metrics_address(self.metrics)
        if not self.seeds and self.frontier_url is None:
            raise ConfigError("no seed URLs")
        # canonical once, whatever their source (``Seeds`` pass as they are: a replace() or a
        # seeds file does not do it again)
        object.__setattr__(self, "seeds", canonical_seeds(self.seeds))
        check_exclude_file(self.exclude_file)
        if self.out_dir.exists() and not self.out_dir.is_dir():  # (said before the crawl)
            raise ConfigError(f"--out {self.out_dir} is a file: give a folder")
        items = self.items_file
        for option, path in (("--items", items), ("--state", self.state_file)):
            if path is not None and path.is_dir():
                raise ConfigError(f"{option} {path} is a folder: give a file name")
        if items is not None and items.suffix not in (".jsonl", ".json", ".csv"):
            raise ConfigError(
                f"--items {self.items_file}: the name must end in .jsonl, .json or .csv "
                "(the format is chosen by it)"
            )
        if self.concurrency < 1:
            raise ConfigError(f"--concurrency must be >= 1, got {self.concurrency}")
        if not 1 <= self.processes <= 256:
            raise ConfigError(f"--processes must be between 1 and 256, got {self.processes}")
        if self.max_pages is not None and self.max_pages < 1:
            raise ConfigError(f"--max-pages must be >= 1, got {self.max_pages}")
        if self.max_time_s is not None:
            _positive("--max-time", self.max_time_s)
        if self.scope not in ("host", "domain", "any"):
            raise ConfigError(f"--scope must be host, domain or any, got {self.scope!r}")
        _positive("--exclude-check", self.exclude_check_s)
        _positive("--robots-ttl", self.robots_ttl_s, zero_ok=True)
        if self.frontier_url is not None:
            check_shared_crawl(self.frontier_url, self.crawl_id)
        elif self.crawl_id is not None:
            # a name for a shared crawl with no shared frontier would name nothing: the
            # user meant a shared crawl and forgot where it lives
            raise ConfigError("--crawl-id names a shared crawl: it needs --frontier redis://...")
        if self.seen_mode not in ("auto", "exact", "bloom", "disk"):
            raise ConfigError(f"--seen must be auto, disk, exact or bloom, got {self.seen_mode!r}")
        if not 1 <= self.expected_urls <= MAX_EXPECTED_URLS:
            raise ConfigError(
                f"--expected-urls must be 1-{MAX_EXPECTED_URLS:,} (a Bloom filter that size "
                f"takes about 1.2 GB at 1 %; --seen disk keeps any number), got "
                f"{self.expected_urls}"
            )
        if not 0 < self.seen_fp_rate < 1:
            raise ConfigError("--seen-fp-rate must be between 0 and 1")
        if self.target_relevant is not None and self.target_relevant < 1:
            raise ConfigError("--target-relevant must be >= 1")
        if not 0 < self.revisit_min_s <= self.revisit_max_s:
            raise ConfigError("need 0 < --revisit-min <= --revisit-max")
        if self.max_urls_per_host is not None and self.max_urls_per_host < 1:
            raise ConfigError("--max-urls-per-host must be >= 1")
        if self.max_urls_per_pattern is not None and self.max_urls_per_pattern < 1:
            raise ConfigError("--max-urls-per-pattern must be >= 1 (0 on the command line: off)")
        _positive("--log-rotate-bytes", self.log_rotate_bytes)
        _positive("--log-retention-days", self.log_retention_days)
        if self.log_retention_days > MAX_RETENTION_DAYS:
            raise ConfigError(f"--log-retention-days must be at most {MAX_RETENTION_DAYS}")
        if self.max_queue is not None and self.max_queue < 1:
            raise ConfigError("--max-queue must be >= 1")
        _positive("--max-wait", self.max_wait_s)
        for option, spec in (("--handler", self.handler), ("--relevance", self.relevance)):
            if spec is not None and not spec.strip():  # it was taken for none given
                raise ConfigError(f"{option} is empty: give 'package.module:function'")
        if self.topic is not None and not self.topic.strip():
            raise ConfigError("--topic is empty: say what to look for, e.g. 'steam locomotives'")
        if self.defer_ratio is not None and not 0.0 <= self.defer_ratio <= 1.0:
            raise ConfigError(f"--defer-ratio must be in [0, 1], got {self.defer_ratio}")
        if self.purpose not in ("search", "ai-input", "ai-train", "archive"):
            raise ConfigError(
                f"--purpose must be search, ai-input, ai-train or archive, got {self.purpose!r}"
            )
        if self.strategy is not None and self.strategy not in (
            "bfs",
            "random",
            "keyword",
            "focused",
        ):
            raise ConfigError(
                f"--strategy must be focused, keyword, bfs or random, got {self.strategy!r}"
            )

    @property
    def resolved_defer_ratio(self) -> float:
        """``defer_ratio``, or its default: only focused crawls' priorities are comparable."""
        if self.defer_ratio is not None:
            return self.defer_ratio
        strategy = self.strategy or ("focused" if self.topic or self.relevance else "bfs")
        return DEFER_RATIO if strategy in ("keyword", "focused") else 0.0

    @property
    def resolved_seen_mode(self) -> Literal["exact", "bloom", "disk"]:
        """auto: exact and held in the crawl's store (``disk``: memory flat however many URLs
        a crawl sees); a Bloom filter past 2 million expected URLs, as before."""
        if self.seen_mode == "auto":
            return "bloom" if self.expected_urls > 2_000_000 else "disk"
        return self.seen_mode


EXTRACT_FORMATS = ("text", "markdown")


def parse_extract(values: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``--extract text --extract markdown`` or ``--extract text,markdown``: the formats, in
    the order given, each once."""
    found: list[str] = []
    for value in values:
        for part in str(value).split(","):
            name = part.strip().lower()
            if not name:
                continue
            if name not in EXTRACT_FORMATS:
                raise ConfigError(f"--extract must be text or markdown, got {part.strip()!r}")
            if name not in found:
                found.append(name)
    if values and not found:  # --extract "": it was taken for off
        raise ConfigError("--extract names no format: text, markdown or text,markdown")
    return tuple(found)


def parse_metrics_address(text: str) -> tuple[str, int]:
    """``--metrics HOST:PORT`` (``[::1]:9108``; ``:9108`` or a bare port: loopback)."""
    host, sep, port_s = text.strip().rpartition(":")
    if not sep:
        host, port_s = "", text.strip()
    host = host.strip("[]") or "127.0.0.1"
    if not port_s.isdigit() or not 0 <= int(port_s) < 65536:
        raise ConfigError(f"--metrics {text!r} is not HOST:PORT (e.g. 127.0.0.1:9108)")
    return host, int(port_s)


_CRAWL_ID = re.compile(r"[A-Za-z0-9._:-]{1,100}")  # as frontier.redis keys take it


def check_exclude_file(path: Path | None) -> None:
    """The never-crawl file must be there when a crawl or a segment starts (it is re-read
    when it changes; a missing one is a typo, and the crawl would go where it must not)."""
    if path is not None and not path.is_file():
        raise ConfigError(f"--exclude-file {path}: no such file")


def check_shared_crawl(frontier_url: str, crawl_id: str | None) -> None:
    """``--frontier`` and ``--crawl-id`` as every command that shares a crawl takes them."""
    if not frontier_url.startswith(("redis://", "rediss://", "unix://", "valkey://")):
        raise ConfigError(f"--frontier must be a redis:// URL, got {frontier_url!r}")
    try:
        urlsplit(frontier_url).port  # noqa: B018  (raises on a port that is not one)
    except ValueError as exc:
        raise ConfigError(f"--frontier {frontier_url!r}: {exc}") from None
    if crawl_id is not None and not _CRAWL_ID.fullmatch(crawl_id):
        raise ConfigError(
            f"--crawl-id must be 1-100 characters of A-Z a-z 0-9 . _ : -, got {crawl_id!r}"
        )


def read_seeds(path: Path) -> tuple[str, ...]:
    """One URL a line, ``#`` comments; each must be an http(s) URL: canonical ``Seeds``
    (``urls.canonical.canonical_seeds``, the one place seeds are canonicalised). ``-`` is
    standard input (``--seeds -``: URLs piped in)."""
    if str(path) == "-":
        return seed_lines(sys.stdin.read(), "<stdin>")
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark is no part of a URL
    except FileNotFoundError:
        # (begun with the option: a TOML file that set it is named with it, as for the others)
        raise ConfigError(f"--seeds {path}: seeds file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--seeds {path}: cannot read the seeds file: {exc}") from None
    return seed_lines(text, str(path))


def seed_lines(text: str, where: str) -> tuple[str, ...]:
    """The seed URLs of ``text`` (one a line, ``#`` comments), canonical; ``where`` names
    their source (a file, ``<stdin>``) in errors."""
    seeds: list[str] = []
    places: list[str] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if line:
            seeds.append(line)
            # a file's line, or which URL of the command line ("the command line:1" read as
            # a file's name)
            places.append(f"{where}, seed {len(seeds)}" if where.startswith("the ") else
                          f"{where}:{lineno}")  # fmt: skip
    if not seeds:
        raise ConfigError(f"{where if where.startswith('the ') else 'seeds file ' + where} "
                          "holds no URL")  # fmt: skip
    return canonical_seeds(seeds, places)


def read_lines_file(path: Path, what: str, option: str) -> tuple[str, ...]:
    """Lines of an allow-list style file, comments and blanks dropped; errors begin with
    ``option``, so a TOML file that set it is named with it."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{option} {path}: cannot read the {what}: {exc}") from None
    out = [ln.split("#", 1)[0].strip() for ln in text.splitlines()]
    return tuple(x for x in out if x)


def load_toml(path: Path) -> dict[str, Any]:
    """Read a TOML config; keys are the long flag names (``min-delay`` or ``min_delay``)."""
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:  # TOML is UTF-8
        raise ConfigError(f"config file {path} is not UTF-8 text: {exc}") from None
    except OSError as exc:  # a folder, unreadable
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    table = data.get("crawl", data)
    if not isinstance(table, dict):
        raise ConfigError(f"config file {path}: [crawl] must be a table")
    if table is not data and len(data) > 1:  # keys beside [crawl] would be ignored
        others = ", ".join(sorted(str(k) for k in data if k != "crawl"))
        raise ConfigError(f"config file {path}: {others} outside [crawl]: put every option in it")
    values: dict[str, Any] = {}
    for key, value in table.items():
        name = str(key).replace("-", "_")
        if name in values:  # min-delay and min_delay: which one was meant?
            raise ConfigError(f"config file {path}: {key} is given twice (- and _ spellings)")
        values[name] = value
    return values


def dataclass_field_names(cls: type) -> set[str]:
    return {f.name for f in fields(cls)}


_UNIT_SUFFIXES = ("_s", "_bytes")


def option_fields() -> dict[str, tuple[type, Field[Any]]]:
    """Every settable field of the three config dataclasses under the option that sets it
    (``min_delay`` -> ``PolitenessConfig.min_delay_s``): the field's ``option`` metadata, else
    its name without a unit suffix. The command line and TOML files use this one map, so a
    new field is reachable as soon as it has a flag (see ``cli``) and a README row.
    """
    found: dict[str, tuple[type, Field[Any]]] = {}
    for cls in (CrawlConfig, FetchConfig, PolitenessConfig):
        for f in fields(cls):
            name = f.metadata.get("option")
            names = [name] if name else [f.name, *(f.name.removesuffix(u) for u in _UNIT_SUFFIXES)]
            for n in names:
                found.setdefault(n.replace("-", "_"), (cls, f))
    return found
