"""What a User-Agent may say: its own bot's name, and a page about it that anyone can open.

``config.validate_user_agent`` asks ``impersonation`` and ``unopenable_url``; each says why a
User-Agent is refused, or None. A site's operator reads the User-Agent to learn who is asking
and robots.txt applies its groups by the product token, so a UA that names another crawler
(``Googlebot/2.1``) gets that crawler's rules, and one that names a browser or an HTTP library
hides the bot. An info URL on loopback, a private address or a name only a local network
resolves is a page no operator can open.

Names are compared as robots.txt reads them (``robots.rules.product_token``: the leading run
of ``[A-Za-z_-]``, case-insensitive: ``Googlebot2/1.0`` is read as ``Googlebot``) and whole
(the word before ``/``: ``archive.org_bot``).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from typing import Final
from urllib.parse import urlsplit

__all__ = ["URL_IN_UA", "impersonation", "misread", "unopenable_url"]

URL_IN_UA: Final = re.compile(r"https?://(?:[^\s)\];,\[]*\[[^\]\s]*\])?[^\s)\];,]*", re.I)
"""An http(s) URL inside a User-Agent (a bracketed IPv6 host included)."""

_WORD: Final = re.compile(r"[A-Za-z0-9_.!-]+")
_ROBOTS_READING: Final = re.compile(r"[A-Za-z_-]*")

# Crawlers sites write robots.txt groups for (Google's, Bing's, Yandex's, ... published
# tokens): a UA naming one anywhere, or a variant of one (``Googlebot-Image``), is refused.
_CRAWLERS: Final = (
    "Googlebot", "Googlebot-Image", "Googlebot-News", "Googlebot-Video", "GoogleOther",
    "GoogleOther-Image", "GoogleOther-Video", "Google-Extended", "Google-InspectionTool",
    "Google-Safety", "Google-CloudVertexBot", "GoogleProducer", "Google-Read-Aloud",
    "AdsBot-Google", "AdsBot-Google-Mobile", "Mediapartners-Google", "Storebot-Google",
    "FeedFetcher-Google", "APIs-Google", "DuplexWeb-Google", "bingbot", "BingPreview",
    "adidxbot", "msnbot", "msnbot-media", "Slurp", "DuckDuckBot", "DuckAssistBot",
    "Baiduspider", "Yandex", "YandexBot", "Applebot", "Applebot-Extended",
    "facebookexternalhit", "facebookcatalog", "meta-externalagent", "meta-externalfetcher",
    "Twitterbot", "LinkedInBot", "Pinterestbot", "Slackbot", "Discordbot", "TelegramBot",
    "GPTBot", "ChatGPT-User", "OAI-SearchBot", "CCBot", "ClaudeBot", "Claude-Web",
    "Claude-User", "Claude-SearchBot", "anthropic-ai", "PerplexityBot", "Perplexity-User",
    "Bytespider", "Amazonbot", "AhrefsBot", "AhrefsSiteAudit", "SemrushBot", "MJ12bot",
    "DotBot", "rogerbot", "PetalBot", "Sogou", "Exabot", "SeznamBot", "Qwantify",
    "ia_archiver", "archive.org_bot", "cohere-ai", "Diffbot", "ImagesiftBot", "omgilibot",
    "YouBot", "MistralAI-User", "AI2Bot", "Timpibot",
)  # fmt: skip
# Yandex: "User-agent: Yandex" is for all its robots (YandexImages, YandexMobileBot...).
_CRAWLER_FAMILIES: Final = ("yandex",)

# HTTP clients and libraries: their default User-Agents, as the product token.
_CLIENTS: Final = (
    "curl", "libcurl", "Wget", "Wget2", "python-requests", "Python-urllib", "python-httpx",
    "httpx", "aiohttp", "Python", "Go-http-client", "okhttp", "Java", "Apache-HttpClient",
    "libwww-perl", "lwp-trivial", "Scrapy", "node-fetch", "axios", "undici", "node",
    "GuzzleHttp", "PHP", "Ruby", "Faraday", "PostmanRuntime", "HTTPie", "PowerShell",
    "WinHttp", "RestSharp", "Dart", "reqwest", "hackney",
)  # fmt: skip

# Browsers' tokens, as words anywhere ("Mozilla (+https://x.example/bot)" too).
_BROWSERS: Final = (
    "Mozilla", "Chrome", "Chromium", "HeadlessChrome", "CriOS", "Safari", "AppleWebKit",
    "WebKit", "Gecko", "KHTML", "Firefox", "FxiOS", "MSIE", "Trident", "Edge", "Edg", "EdgA",
    "EdgiOS", "Opera", "OPR", "SamsungBrowser", "YaBrowser", "UCBrowser", "Vivaldi",
)  # fmt: skip


def _index(names: tuple[str, ...]) -> dict[str, str]:
    """Lower-case spelling -> the name as published."""
    return {name.lower(): name for name in names}


def _reading(word: str) -> str:
    """The product token robots.txt matchers read from ``word`` (lower case)."""
    m = _ROBOTS_READING.match(word)
    return m.group().lower() if m else ""


_CRAWLER_NAMES: Final = _index(_CRAWLERS)
# how a robots.txt line naming each is read ("User-agent: MJ12bot" is a group for "mj")
_CRAWLER_READINGS: Final = {_reading(n): n for n in reversed(_CRAWLERS) if _reading(n)}
_CLIENT_NAMES: Final = _index(_CLIENTS)
_BROWSER_NAMES: Final = _index(_BROWSERS)
_PRODUCT: Final = re.compile(r"[^\s/(;]+")


def _crawler(word: str, *, readings: bool = False) -> str | None:
    """The crawler ``word`` names: itself, a variant (``Googlebot-Image``), a family's, or
    (``readings``: ``word`` is our product token) one whose robots.txt groups it would get."""
    low = word.lower()
    if low in _CRAWLER_NAMES:
        return _CRAWLER_NAMES[low]
    if readings and low in _CRAWLER_READINGS:
        return _CRAWLER_READINGS[low]
    for sep in "-_":
        head = low.split(sep, 1)[0]
        if head != low and head in _CRAWLER_NAMES:
            return _CRAWLER_NAMES[head]
    return next((f.title() for f in _CRAWLER_FAMILIES if low.startswith(f)), None)


def impersonation(ua: str) -> str | None:
    """Why ``ua`` is another agent's User-Agent (a crawler, client or browser), or None.

    The product token is checked as written and as robots.txt reads it; the other words
    (URLs left out: a path may say anything) for crawler and browser names only, since a
    comment may honestly name a library the bot is built with.
    """
    words = [w.strip(".!") for w in _WORD.findall(URL_IN_UA.sub(" ", ua))]
    words = [w for w in words if w]
    if not words:
        return None
    m = _PRODUCT.match(ua.strip())
    product = m.group() if m else ""
    for form in dict.fromkeys((product.lower(), _reading(product))):
        if not form:
            continue
        name = _crawler(form, readings=True)
        if name is not None:
            return _another_crawler(name)
        if form in _CLIENT_NAMES:
            return (
                f"names an HTTP client ({_CLIENT_NAMES[form]}), not the bot: a site could not "
                "tell who is asking; name your own bot"
            )
        if form in _BROWSER_NAMES:
            return _browser(_BROWSER_NAMES[form])
    for word in words:
        low = word.lower()
        if low in _BROWSER_NAMES:
            return _browser(_BROWSER_NAMES[low])
        name = _crawler(word)
        if name is not None:
            return _another_crawler(name)
    return None


def misread(ua: str) -> str | None:
    """Why robots.txt would read the bot's name in ``ua`` as a shorter one, or None.

    RFC 9309 2.2.1: a product token is letters, ``_`` and ``-``; matchers read the leading
    run of those (Google's does), so ``probe9000`` and ``probe.bot`` are read as ``probe``,
    and a group written for a bot named ``probe`` binds them. Said, not refused: the name is
    the operator's, and a crawl under it is still honest about who it is.
    """
    m = _PRODUCT.match(ua.strip())
    product = m.group() if m else ""
    read = _reading(product)  # (matched case-insensitively: said in lower case)
    if not read or read == product.lower():
        return None
    return (
        f"robots.txt reads the bot's name {product!r} as {read!r} (RFC 9309 2.2.1: a product "
        f"token is letters, '_' and '-'), so a group written for {read!r} binds this crawl; "
        "a name of letters, '_' and '-' only is read whole"
    )


def _another_crawler(name: str) -> str:
    return f"names another crawler ({name}): a site's rules for it are not ours; name your own bot"


def _browser(name: str) -> str:
    return f"pretends to be a browser ({name}): name the bot honestly"


# Names only a local network resolves (RFC 6762 .local, RFC 8375 home.arpa, ICANN's
# .internal, suffixes ICANN will not delegate or no registry has) and .invalid, which never
# resolves; localhost is its own case. .example and .test stay allowed: RFC 2606/6761 names
# for documentation and tests, which is where a UA naming them is found (this project's own).
_LOCAL_SUFFIXES: Final = (
    "local", "internal", "home.arpa", "lan", "home", "corp", "intranet", "private", "invalid",
)  # fmt: skip


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``host`` as an IP address (``127.1`` and ``0x7f.1`` too, as browsers read them)."""
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    if re.fullmatch(r"[0-9a-fx.]+", host) and host.rstrip(".").rpartition(".")[2][:1].isdigit():
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host.rstrip(".")))
        except OSError:
            return None
    return None


def _why_unopenable(url: str) -> str | None:
    """Why a site operator who reads ``url`` in a log could not open it, or None."""
    try:
        host = (urlsplit(url).hostname or "").rstrip(".").lower()
    except ValueError:
        return "not a URL"
    if not host:
        return "no host"
    addr = _address(host)
    if addr is not None:
        if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
            addr = addr.ipv4_mapped
        if addr.is_loopback:
            return "a loopback address"
        if addr.is_link_local:
            return "a link-local address"
        if not addr.is_global or addr.is_multicast:
            return "a private address"
        return None
    if host == "localhost" or host.endswith(".localhost"):
        return "localhost, the crawler's own machine"
    if host.rpartition(".")[2].isdigit() or ":" in host:
        return "not an address"
    if "." not in host:
        return "a name with no domain, only a local network resolves it"
    for suffix in _LOCAL_SUFFIXES:
        if host.endswith("." + suffix):
            if suffix == "invalid":
                return ".invalid, a name that never resolves"
            return f".{suffix}, a name only a local network resolves"
    return None


def unopenable_url(ua: str) -> str | None:
    """Why an info URL of ``ua`` is one no site operator can open, or None."""
    for m in URL_IN_UA.finditer(ua):
        url = m.group().rstrip(".")
        why = _why_unopenable(url)
        if why is not None:
            return (
                f"gives an info URL no site operator can open ({url}: {why}): give a public "
                "page about the bot (politecrawl botpage writes one)"
            )
    return None
