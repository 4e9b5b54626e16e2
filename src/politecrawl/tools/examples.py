"""Two or three examples per command, shown at the end of its ``--help``: what a newcomer
copies first (argparse's epilog, kept as written)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

__all__ = ["EXAMPLES", "add_examples"]

_UA = "'acmebot/1.0 (+https://acme.example/bot)'"
EXAMPLES: dict[str, list[str]] = {
    "crawl": [
        f"politecrawl crawl https://docs.example/ --user-agent {_UA} --out docs/",
        f"politecrawl crawl http://127.0.0.1:8000/ --user-agent {_UA} --out mine/ "
        "--allow-private-addresses --min-delay 1 --handler ./extract.py:text_of "
        "--items mine/items.csv",
        f"cat urls.txt | politecrawl crawl --seeds - --user-agent {_UA} --out out/ --max-pages 500",
    ],
    "demo": ["politecrawl demo", "politecrawl demo --hosts 5 --pages 20 --out demo/"],
    "robots": [
        f"politecrawl robots https://docs.example/ --user-agent {_UA} /private/x /index.html",
        "politecrawl robots robots.txt --user-agent acmebot https://docs.example/a",
    ],
    "worker": [
        f"politecrawl worker --frontier redis://127.0.0.1:6379/0 --user-agent {_UA} --out w1/",
        f"politecrawl worker --frontier redis://db:6379/0 --crawl-id docs --user-agent {_UA} "
        "--out w2/ --processes 2",
    ],
    "seed": [
        "politecrawl seed seeds.txt --frontier redis://127.0.0.1:6379/0",
        "politecrawl seed seeds.txt --frontier redis://db:6379/0 --crawl-id docs --scope host",
    ],
    "status": [
        "politecrawl status --frontier redis://127.0.0.1:6379/0",
        "politecrawl status --frontier redis://db:6379/0 --crawl-id docs --json",
    ],
    "segment": [
        "politecrawl segment build crawl1/ crawl2/ --out next.seg",
        "politecrawl segment build crawl1/ --out next.seg --scope domain --max-urls-per-host 100",
    ],
    "build": [
        "politecrawl segment build crawl1/ crawl2/ --out next.seg",
        "politecrawl segment build crawl1/ --out next.seg --exclude-file never.txt",
    ],
    "fetch": [
        f"politecrawl fetch next.seg --user-agent {_UA} --out seg1/",
        f"politecrawl fetch next.seg --user-agent {_UA} --out seg1/ --max-time 3600",
    ],
    "log": [
        "politecrawl log docs/ --host docs.example",
        "politecrawl log docs/ --host example.org --since 2026-11-01 --json",
        "politecrawl log docs/ --host 203.0.113.7",
    ],
    "log-stats": ["politecrawl log-stats docs/", "politecrawl log-stats docs/ --json"],
    "botpage": [
        f"politecrawl botpage --user-agent {_UA} --contact bot@acme.example --out bot.html",
        f"politecrawl botpage --user-agent {_UA} --contact bot@acme.example --config crawl.toml",
    ],
    "wacz": [
        "politecrawl wacz docs/ --output docs.wacz",
        "politecrawl wacz w1/ w2/ --output shared.wacz --title 'the docs crawl'",
    ],
    "report": [
        "politecrawl report docs/    (then open docs/report.html)",
        "politecrawl demo --out demo/ && politecrawl report demo/",
    ],
}


def add_examples(parsers: Mapping[str, argparse.ArgumentParser]) -> None:
    """Each command's examples as its ``--help`` epilog (sub-commands' too)."""
    for name, parser in parsers.items():
        lines = EXAMPLES.get(name)
        if lines:
            parser.epilog = "examples:\n" + "\n".join(f"  {line}" for line in lines)
            parser.formatter_class = argparse.RawDescriptionHelpFormatter
        for action in parser._actions:  # (argparse has no public list of sub-commands)
            if isinstance(action, argparse._SubParsersAction):
                add_examples(action.choices)
