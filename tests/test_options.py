"""Every option in README's "Crawl options" table works: through the real command line of
`crawl`, `worker` and `fetch`, and through a TOML config, each reaches the crawl's config
(``OUT/config.json``, what the crawler was given). The README is the list: an option added
there without a sample here fails ``test_every_readme_option_has_a_sample``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import UA
from redis_server import redis_url  # noqa: F401  (fixture)
from webthread import web_in_thread

from politecrawl.demo.web import TestWeb

README = Path(__file__).resolve().parent.parent / "README.md"
TESTS = Path(__file__).resolve().parent


def readme_options() -> list[str]:
    """The options named in the first column of README's "Crawl options" table."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Crawl options", 1)[1].split("\n#", 1)[0]
    names: list[str] = []
    for line in section.splitlines():
        if line.startswith("| `--"):
            first_cell = re.split(r"(?<!\\)\|", line)[1]  # `host\|domain` is one cell
            names += re.findall(r"`--([a-z][a-z-]*)", first_cell)
    return names


class Sample:
    """One option: its command-line words, its TOML line, where it lands in config.json."""

    def __init__(self, cli: list[str], toml: str, path: str, expected: Any) -> None:
        self.cli, self.toml, self.path, self.expected = cli, toml, path, expected


def samples(tmp: Path, web: TestWeb, frontier: str, crawl_id: str) -> dict[str, Sample]:
    """A value unlike the default for every option, and what the config must then hold."""
    seeds = tmp / "seeds.txt"
    seeds.write_text("\n".join(web.seed_urls(1)) + "\n")
    allow = tmp / "allow.txt"
    allow.write_text("test\n")
    exclude = tmp / "never.txt"
    exclude.write_text("nowhere.example\n")
    state = tmp / "shared-state.sqlite"
    items = tmp / "items.csv"
    resolve = web.resolve_arg()
    out = tmp / "out"

    def s(name: str, value: str | None, toml: Any, path: str, expected: Any) -> Sample:
        cli = [f"--{name}"] + ([] if value is None else [value])
        return Sample(cli, f"{name} = {json.dumps(toml)}", path, expected)

    table = [
        s("seeds", str(seeds), str(seeds), "seeds", None),  # checked in seeds.txt
        s("user-agent", UA, UA, "fetch.user_agent", UA),
        s("out", str(out), str(out), "out_dir", str(out)),
        s("min-delay", "0.05", 0.05, "politeness.min_delay_s", 0.05),
        s("delay-factor", "2.5", 2.5, "politeness.response_time_factor", 2.5),
        s("jitter", "0.01", 0.01, "politeness.jitter_s", 0.01),
        s("concurrency", "7", 7, "concurrency", 7),
        s("processes", "2", 2, "processes", 2),
        s("max-pages", "2", 2, "max_pages", 2),
        s("max-time", "60", 60, "max_time_s", 60),
        s("scope", "host", "host", "scope", "host"),
        s("allow", str(allow), str(allow), "allow", ["test"]),
        s("exclude-file", str(exclude), str(exclude), "exclude_file", str(exclude)),
        s("exclude-check", "7", 7, "exclude_check_s", 7),
        s("resolve", resolve, [resolve], "fetch.resolve", [resolve]),
        s("allow-private-addresses", None, True, "fetch.allow_private_addresses", True),
        s("max-size", "100000", 100000, "fetch.max_size_bytes", 100000),
        s("dns-timeout", "1.5", 1.5, "fetch.dns_timeout_s", 1.5),
        s("dns-tries", "3", 3, "fetch.dns_tries", 3),
        s("dns-negative-ttl", "7", 7, "fetch.dns_negative_ttl_s", 7),
        s("politeness-key", "domain", "domain", "politeness.key_mode", "domain"),
        s("ip-min-delay", "0.3", 0.3, "politeness.ip_min_delay_s", 0.3),
        s("robots-ttl", "99", 99, "robots_ttl_s", 99),
        s("sitemaps", None, True, "sitemaps", True),
        s("retry-base", "0.3", 0.3, "fetch.retry_base_s", 0.3),
        s("transient-attempts", "7", 7, "fetch.transient_attempts", 7),
        s("retry-max-wait", "120", 120, "fetch.retry_max_wait_s", 120),
        s("request-time", "30", 30, "fetch.total_timeout_s", 30),
        s("min-rate", "200", 200, "fetch.min_rate_bytes", 200),
        s("min-rate-time", "4", 4, "fetch.min_rate_time_s", 4),
        s("tls-insecure", None, True, "fetch.verify_tls", False),
        s("park-after", "4", 4, "politeness.park_after_failures", 4),
        s("park-time", "9", 9, "politeness.park_s", 9),
        s("max-urls-per-host", "50", 50, "max_urls_per_host", 50),
        s("max-urls-per-pattern", "40", 40, "max_urls_per_pattern", 40),
        s("seen", "bloom", "bloom", "seen_mode", "bloom"),
        s("expected-urls", "5000", 5000, "expected_urls", 5000),
        s("seen-fp-rate", "0.02", 0.02, "seen_fp_rate", 0.02),
        s("strategy", "keyword", "keyword", "strategy", "keyword"),
        # 0: the shared --frontier below has no budget policy and refuses any other value
        s("defer-ratio", "0", 0, "defer_ratio", 0.0),
        s("topic", "steam trains", "steam trains", "topic", "steam trains"),
        s("relevance", "nuggets:railway_pages", "nuggets:railway_pages", "relevance",
          "nuggets:railway_pages"),
        s("handler", "nuggets:titles", "nuggets:titles", "handler", "nuggets:titles"),
        s("items", str(items), str(items), "items_file", str(items)),
        s("target-relevant", "40", 40, "target_relevant", 40),
        s("max-queue", "900", 900, "max_queue", 900),
        s("max-wait", "120", 120, "max_wait_s", 120),
        s("state", str(state), str(state), "state_file", str(state)),
        s("frontier", frontier, frontier, "frontier_url", frontier),
        s("crawl-id", crawl_id, crawl_id, "crawl_id", crawl_id),
        s("recrawl", None, True, "recrawl", True),
        s("revisit-min", "100", 100, "revisit_min_s", 100),
        s("revisit-max", "200", 200, "revisit_max_s", 200),
        s("log-rotate-bytes", "5000000", 5000000, "log_rotate_bytes", 5000000),
        s("log-retention-days", "3", 3, "log_retention_days", 3),
        s("no-progress", None, True, "progress", False),
        s("extract", "text,markdown", ["text", "markdown"], "extract", ["text", "markdown"]),
        s("metrics", "127.0.0.1:0", "127.0.0.1:0", "metrics", "127.0.0.1:0"),
        s("purpose", "ai-train", "ai-train", "purpose", "ai-train"),
    ]  # fmt: skip
    names = [sample.cli[0][2:] for sample in table]
    return dict(zip(names, table, strict=True))


def _lookup(config: dict[str, Any], path: str) -> Any:
    for part in path.split("."):
        config = config[part]
    return config


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(TESTS), *filter(None, [env.get("PYTHONPATH")])]
    )  # nuggets.py, as a user's own module would be importable
    return subprocess.run(
        [sys.executable, "-m", "politecrawl", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.fixture(scope="module")
def one_site() -> Iterator[TestWeb]:
    """A test web of one site, served from its own thread for the whole module."""
    with web_in_thread(n_hosts=1, pages_per_host=3, seed=4, plain=True) as web:
        yield web


@pytest.mark.e2e
def test_every_readme_option_has_a_sample(tmp_path: Path, one_site: TestWeb) -> None:
    documented = readme_options()
    assert len(documented) > 30, documented
    known = samples(tmp_path, one_site, "redis://127.0.0.1:1/0", "x")
    assert sorted(set(documented) - set(known)) == [], "README options without a sample here"
    assert sorted(set(known) - set(documented)) == [], "options here the README doesn't list"
    p = _run("crawl", "--help")
    for name in documented:
        assert f"--{name}" in p.stdout, name


def _check(out: Path, table: dict[str, Sample], skip: tuple[str, ...] = ()) -> None:
    config = json.loads((out / "config.json").read_text())
    for name, sample in table.items():
        if name in skip or sample.expected is None:
            continue
        assert _lookup(config, sample.path) == sample.expected, name


@pytest.mark.e2e
@pytest.mark.parametrize("command", ["crawl", "worker", "fetch"])
@pytest.mark.parametrize("via", ["flags", "toml"])
def test_every_option_reaches_the_config(
    tmp_path: Path,
    one_site: TestWeb,
    redis_url: str,  # noqa: F811
    command: str,
    via: str,
) -> None:
    crawl_id = f"opt-{uuid.uuid4().hex[:8]}"
    table = samples(tmp_path, one_site, redis_url, crawl_id)
    args: list[str] = [command]
    if command == "fetch":  # fetch takes a segment file instead of --seeds
        args.append(str(tmp_path / "seeds.txt"))
    chosen = {k: v for k, v in table.items() if not (command == "fetch" and k == "seeds")}
    if via == "flags":
        for sample in chosen.values():
            args += sample.cli
    else:
        config = tmp_path / "crawl.toml"
        config.write_text("".join(f"{sample.toml}\n" for sample in chosen.values()))
        args += ["--config", str(config)]
    p = _run(*args)
    assert p.returncode == 0, p.stderr
    out = tmp_path / "out"
    _check(out, chosen)
    assert (out / "seeds.txt").read_text().split() == one_site.seed_urls(1)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["requests"] >= 2, summary  # robots.txt and more: it ran with all of them
    assert summary["counters"]["sitemaps_fetched"] >= 1  # --sitemaps did its part


@pytest.mark.e2e
def test_flags_win_over_the_toml_file(tmp_path: Path, one_site: TestWeb) -> None:
    table = samples(tmp_path, one_site, "", "")
    config = tmp_path / "crawl.toml"
    config.write_text("[crawl]\nmin_delay = 3\njitter = 0.2\nmax-pages = 1\n")
    args = ["crawl", "--config", str(config), "--min-delay", "0.05"]
    for name in ("seeds", "user-agent", "out", "resolve", "allow-private-addresses", "no-progress"):
        args += table[name].cli
    p = _run(*args)
    assert p.returncode == 0, p.stderr
    config_json = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config_json["politeness"]["min_delay_s"] == 0.05
    assert config_json["politeness"]["jitter_s"] == 0.2
    assert config_json["max_pages"] == 1


@pytest.mark.unit
def test_every_flag_sets_a_config_field() -> None:
    """A flag (in the list or added by hand) that no config field takes would be a KeyError
    at run time: each must map to one, and no two flags to the same field."""
    from politecrawl.config import option_fields
    from politecrawl.options import option_types

    fields = option_fields()
    missing = sorted(name for name in option_types() if name not in fields)
    assert missing == []
    targets = [fields[name][1].name for name in option_types()]
    assert len(targets) == len(set(targets))
