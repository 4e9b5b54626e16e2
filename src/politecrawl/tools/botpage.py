"""The bot's information page, the one its User-Agent links to.

The seeds: a crawler's info page says who runs it and why, what it collects, the IP addresses
it crawls from, that it obeys robots.txt and how to block it (entirely and in part), and how to
reach a person. "Site operators are rightly suspicious of random crawlers that have no
supporting information." Everything here is what politecrawl really does by default.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
from html import escape
from pathlib import Path

from politecrawl.config import validate_user_agent
from politecrawl.errors import ConfigError
from politecrawl.polite.usage import PURPOSES

__all__ = ["main_args", "render"]

_EMAIL = re.compile(r"^[^@\s<>\"']+@[^@\s<>\"']+\.[^@\s<>\"']+$")

_CSS = """
body{font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d232a;
background:#fff;max-width:46rem;margin:2rem auto;padding:0 1.2rem}
h1{font-size:1.8rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;
border-bottom:1px solid #d8dee4;padding-bottom:.2rem}
code,pre{font-family:ui-monospace,"SF Mono",Menlo,Consolas,monospace;font-size:.92em}
pre{background:#f4f6f8;border:1px solid #d8dee4;border-radius:6px;padding:.7rem 1rem;
overflow-x:auto}.ua{color:#4a5560}ul{padding-left:1.3rem}
"""


def _pre(text: str) -> str:
    return f"<pre><code>{escape(text)}</code></pre>"


def _seconds(x: float) -> str:
    return "1 second" if x == 1 else f"{x:g} seconds"


def _pace(t: str, min_delay_s: float, delay_factor: float) -> str:
    """The "How fast" paragraph's first sentence, from the delays the crawl really uses."""
    slow = f"{delay_factor:g} times the average time of the site's last five responses"
    if min_delay_s > 0:
        return (
            f"{t} makes one request at a time to a site, and starts the next one at "
            f"least {_seconds(min_delay_s)} after the previous one started, longer for slow "
            f"sites ({slow}) or when robots.txt asks for a longer Crawl-delay."
        )
    return (
        f"{t} makes one request at a time to a site, and starts the next one only "
        f"after {slow} (the slower the site, the longer it waits), or longer when robots.txt "
        "asks for a Crawl-delay."
    )


_USE = {
    "search": "building a search index that sends readers to your pages",
    "ai-input": "feeding pages to AI models as input for their answers",
    "ai-train": "training AI models",
    "archive": "keeping an archive of the pages as they were",
}


def render(
    user_agent: str,
    contact: str,
    ips: list[str],
    purpose: str | None,
    *,
    min_delay_s: float = 15.0,
    delay_factor: float = 30.0,
    declared: str = "search",
) -> str:
    """A self-contained HTML page (inline CSS, no scripts); every given value is escaped.
    ``min_delay_s`` and ``delay_factor`` are the crawl's ``--min-delay`` and
    ``--delay-factor``: the page states the pace the bot really keeps; ``declared`` its
    ``--purpose`` (search, ai-input, ai-train, archive), so an owner sees what it is for."""
    if declared not in PURPOSES:
        raise ConfigError(f"--purpose must be one of {', '.join(PURPOSES)}, got {declared!r}")
    token = validate_user_agent(user_agent)
    for ip in ips:
        try:
            ipaddress.ip_address(ip.strip())
        except ValueError:
            raise ConfigError(f"--ip {ip!r} is not an IP address") from None
    if not _EMAIL.match(contact.strip()):
        raise ConfigError(f"--contact {contact!r} is not an e-mail address")
    t, ua, mail = escape(token), escape(user_agent.strip()), escape(contact.strip())
    why = (
        escape(purpose.strip())
        if purpose and purpose.strip()
        else (
            f"{t} collects public web pages for a research or indexing project run by the "
            "person reachable at the address below."
        )
    )
    ip_list = "".join(f"<li><code>{escape(ip.strip())}</code></li>" for ip in ips if ip.strip())
    ip_part = (
        f"<p>{t} crawls only from these addresses:</p><ul>{ip_list}</ul>"
        if ip_list
        else "<p>The addresses it crawls from are not listed here yet; write to us with the "
        "address you saw and we will confirm whether it was us.</p>"
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>About {t}, a web crawler</title>
<style>{_CSS}</style>
</head>
<body>
<h1>About {t}</h1>
<p class="ua">User-Agent: <code>{ua}</code></p>

<h2>Who runs it and why</h2>
<p>{why}</p>
<p>If {t} is causing you any trouble, please <a href="mailto:{mail}">tell us</a>: we would
rather hear about it than have it be a bother.</p>

<h2>What it collects</h2>
<p>{t} fetches publicly reachable HTML pages and follows their links. It does not submit forms,
log in, run scripts or follow links hidden in comments or scripts. It skips files by extension
before asking for them (images, audio, video, archives, executables and the like) and stops
reading any response that turns out not to be HTML as soon as the headers arrive. Pages that
ask not to be indexed are not stored.</p>

<h2>Where it crawls from</h2>
{ip_part}

<h2>It obeys robots.txt</h2>
<p>{t} reads <a href="https://www.rfc-editor.org/rfc/rfc9309.html">robots.txt
(RFC 9309)</a> before anything else on a site, and again at least once a day. It answers to
the product token <code>{t}</code> (matched case-insensitively), and to <code>*</code> where no
group names it. <code>Disallow</code>, <code>Allow</code> (longest match wins) and the
<code>*</code> and <code>$</code> wildcards are supported.</p>
<p>To keep {t} off your whole site:</p>
{_pre(f"User-agent: {token}{chr(10)}Disallow: /")}
<p>To keep it out of one directory only:</p>
{_pre(f"User-agent: {token}{chr(10)}Disallow: /private/")}
<p>If robots.txt cannot be read because the server answers with an error (5xx) or not at all,
{t} fetches nothing else from the site until it can.</p>

<h2>What the pages are used for: {escape(declared)}</h2>
<p>{t} declares its purpose as <code>{escape(declared)}</code> ({escape(_USE[declared])}). It
reads what you say about the use of your pages and keeps no page whose use for that purpose
you refuse; such a page's links are still followed, and where you refuse it for the whole
site, {t} fetches nothing more from it:</p>
<ul>
<li>robots.txt <code>Content-Usage</code> (IETF aipref: <code>train-ai=n</code>,
<code>search=n</code>) and <code>Content-Signal</code> (<code>search</code>,
<code>ai-input</code>, <code>ai-train</code>), in the group that applies to {t};</li>
<li>the <code>Content-Usage</code> response header;</li>
<li>TDMRep: <code>/.well-known/tdmrep.json</code>, the <code>tdm-reservation</code> header and
<code>&lt;meta name="tdm-reservation"&gt;</code> (a reservation refuses AI training and AI input,
not search or archiving);</li>
<li><code>noai</code> in <code>&lt;meta name="robots"&gt;</code> or <code>X-Robots-Tag</code>.</li>
</ul>
{
        _pre(
            f"User-agent: {token}{chr(10)}Content-Usage: train-ai=n{chr(10)}"
            f"Content-Signal: search=yes, ai-input=no, ai-train=no"
        )
    }

<h2>Crawl-delay</h2>
<p>{t} honours <code>Crawl-delay</code> (in seconds, fractions allowed). For example, at most
one request every 60 seconds:</p>
{_pre(f"User-agent: {token}{chr(10)}Crawl-delay: 60")}

<h2>Page-level directives</h2>
<p>{t} honours the robots <code>&lt;meta&gt;</code> tag and the <code>X-Robots-Tag</code>
HTTP header, for all robots or named <code>{t}</code>: <code>noindex</code> (the page is not
stored), <code>nofollow</code> (its links are not followed), and <code>none</code> (both).
Links marked <code>rel="nofollow"</code> are not followed either.</p>
{_pre('<meta name="robots" content="noindex, nofollow">')}
{_pre(f'<meta name="{token}" content="noindex">')}
{_pre("X-Robots-Tag: noindex, nofollow")}

<h2>How fast it crawls</h2>
<p>{escape(_pace(t, min_delay_s, delay_factor))}
It backs off when a site answers 429 or 503 and honours <code>Retry-After</code>. It never follows
redirects blindly and stops after three hops.</p>

<h2>Contact</h2>
<p>Write to <a href="mailto:{mail}">{mail}</a>. A person reads every message. If you send the
date, time and URL of a request from your server log, we can look up exactly what {t} did and
what your robots.txt said at the time. If you would simply rather not be crawled, say so and
your domain goes on our never-crawl list.</p>
</body>
</html>
"""


def main_args(args: argparse.Namespace) -> int:
    """``politecrawl botpage --user-agent UA --contact EMAIL [--ip IP ...] [--purpose TEXT]
    [--min-delay S] [--delay-factor F] [--config TOML] [--out FILE]``: the page on stdout, or
    written to ``--out``. The pace comes from the flags, else the crawl's TOML config, else
    the crawler's defaults."""
    pace: dict[str, float] = {"min_delay": 15.0, "delay_factor": 30.0}
    declared = "search"
    if getattr(args, "config", None):
        from politecrawl.config import load_toml

        for key, value in load_toml(Path(args.config)).items():
            if key == "purpose":
                declared = str(value)
            elif key in pace:
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ConfigError(f"{args.config}: {key.replace('_', '-')} must be a number")
                pace[key] = float(value)
    for key in pace:
        if getattr(args, key, None) is not None:
            pace[key] = float(getattr(args, key))
    from politecrawl.config import PolitenessConfig  # the crawl's own checks (NaN, range)

    PolitenessConfig(min_delay_s=pace["min_delay"], response_time_factor=pace["delay_factor"])
    purpose = args.purpose
    if purpose in PURPOSES:  # the crawl's declared purpose; other text says why, in words
        declared, purpose = purpose, None
    page = render(
        args.user_agent or "",
        args.contact or "",
        list(args.ip or []),
        purpose,
        min_delay_s=pace["min_delay"],
        delay_factor=pace["delay_factor"],
        declared=declared,
    )
    if args.out:
        out = Path(args.out)
        if not out.parent.is_dir():
            raise ConfigError(f"--out {out}: folder {out.parent} does not exist")
        out.write_text(page, encoding="utf-8")
    else:
        print(page, end="")
    return 0
