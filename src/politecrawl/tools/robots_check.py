"""``politecrawl robots``: check a robots.txt the way the crawler reads it.

For site operators and bot authors: give a robots.txt (a file, or a site URL whose
/robots.txt is fetched once with the crawler's own fetcher and guard) and URLs; each URL's
verdict is printed with the rule and line that decided it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from politecrawl.config import FetchConfig, bot_name, validate_user_agent
from politecrawl.engine.outcome import MAX_ROBOTS_BYTES, RobotsOutcome, classify_robots
from politecrawl.errors import ConfigError
from politecrawl.net.fetch import Fetcher
from politecrawl.robots.rules import RobotsRules, product_token
from politecrawl.urls.canonical import canonicalize, robots_url


async def _fetch(url: str, cfg: FetchConfig) -> tuple[RobotsRules, str]:
    """robots.txt as the crawler reads it (``outcome.classify_robots``), redirects followed
    at once here (the crawler takes one hop per turn)."""
    target, hops = robots_url(canonicalize(url)), 0
    async with Fetcher(cfg) as fetcher:
        while True:
            res = await fetcher.fetch(target, html_only=False, min_cap=MAX_ROBOTS_BYTES)
            answer = classify_robots(res, target, hops)
            if answer.outcome is RobotsOutcome.REDIRECT and answer.target is not None:
                target, hops = answer.target, hops + 1
                continue
            break
    if res.error is not None or res.status is None:
        hint = "; add --allow-private-addresses" if res.error == "address_refused" else ""
        return (
            RobotsRules.disallow_all(),
            f"{target}: unreachable ({res.error}{hint}): all disallowed",
        )
    if answer.outcome is RobotsOutcome.RULES:
        return RobotsRules.parse(res.body[:MAX_ROBOTS_BYTES]), f"{target}: HTTP {res.status}"
    if answer.outcome is RobotsOutcome.NO_RULES:
        return RobotsRules.allow_all(), f"{target}: HTTP {res.status}: no rules, all allowed"
    return RobotsRules.disallow_all(), f"{target}: HTTP {res.status}: all disallowed for now"


def check(
    source: str,
    user_agent: str,
    urls: list[str],
    *,
    resolve: tuple[str, ...] = (),
    allow_private: bool = False,
) -> list[str]:
    """Lines of output: where the rules came from, then one verdict per URL. A URL that is
    not one (``http://[bad``) is refused with the source, before anything is read: a
    verdict on it would say nothing of the URL meant."""
    # a file's rules are only matched (a bare bot name will do); a fetch goes out under the
    # user agent, which then names the bot and its info URL
    token = validate_user_agent(user_agent) if "://" in source else bot_name(user_agent)
    for url in urls:
        _check_url(url)
    path = Path(source)
    if "://" not in source:
        try:
            rules = RobotsRules.parse(path.read_bytes()[:MAX_ROBOTS_BYTES])
        except OSError as exc:
            raise ConfigError(f"cannot read {source}: {exc}") from None
        header = f"{source}: file"
    else:
        cfg = FetchConfig(
            user_agent=user_agent,
            resolve=resolve,
            allow_private_addresses=allow_private,
            total_timeout_s=30.0,
        )
        _check_url(source)
        rules, header = asyncio.run(_fetch(source, cfg))
    read = product_token(token)  # what robots.txt matches: ``probe.bot`` is read ``probe``
    said = f"{token!r}" if read == token else f"{token!r}, read as {read!r}"
    lines = [f"# {header}; product token {said}"]
    delay = rules.crawl_delay(token)
    if delay is not None:
        lines.append(f"# Crawl-delay for {token}: {delay:g} s")
    for sm in rules.sitemaps:
        lines.append(f"# Sitemap: {sm}")
    for url in urls:
        v = rules.decide(token, url)
        if not v.rule:
            why = "no rule matched"
        elif v.line is None:  # no line of a file: what the robots.txt status means (RFC 9309)
            why = f"{v.rule} (the status's rule, no robots.txt line)"
        else:
            why = f"{v.rule} (line {v.line})"
        lines.append(f"{'ALLOWED   ' if v.allowed else 'DISALLOWED'} {url}  <- {why}")
    return lines


def _check_url(url: str) -> None:
    """ConfigError unless ``url`` is an http(s) URL the crawler could ask, or a path (``/x``)."""
    if url.startswith("/") and not url.startswith("//"):
        return
    try:
        canonicalize(url)
    except ValueError as exc:
        raise ConfigError(
            f"bad URL {url!r}: {exc} (give an http(s) URL, or a path starting with /)"
        ) from None
