import pytest

from politecrawl.config import validate_user_agent
from politecrawl.errors import ConfigError

pytestmark = pytest.mark.unit


def test_product_token_from_honest_ua():
    assert validate_user_agent("acmebot/1.0 (+https://acme.example/bot)") == "acmebot"


@pytest.mark.parametrize(
    "ua,why",
    [
        ("", "blank"),
        ("   ", "blank"),
        ("acmebot/1.0", "info URL"),
        ("Mozilla/5.0 (compatible; acmebot/1.0; +https://acme.example/bot)", "browser"),
        ("acmebot/1.0 Chrome/120.0 (+https://acme.example/bot)", "browser"),
        ("acmebot/1.0 Safari/537 https://acme.example/bot", "browser"),
    ],
)
def test_dishonest_or_anonymous_ua_refused(ua, why):
    with pytest.raises(ConfigError, match=why):
        validate_user_agent(ua)


@pytest.mark.parametrize(
    ("ua", "why"),
    [
        # another crawler's name: a site's robots.txt groups for it would apply to us
        ("Googlebot/2.1 (+http://www.google.com/bot.html)", r"another crawler \(Googlebot\)"),
        ("googlebot/2.1 (+https://acme.example/bot)", r"another crawler \(Googlebot\)"),
        ("Googlebot-Image/1.0 (+https://acme.example/bot)", "another crawler"),
        ("Googlebot2/1.0 (+https://acme.example/bot)", "another crawler"),  # read "Googlebot"
        ("AdsBot-Google (+https://acme.example/bot)", "another crawler"),
        ("bingbot/2.0 (+https://acme.example/bot)", r"another crawler \(bingbot\)"),
        ("YandexImages/3.0 (+https://acme.example/bot)", r"another crawler \(Yandex\)"),
        ("GPTBot/1.1 (+https://acme.example/bot)", "another crawler"),
        ("ChatGPT-User/1.0 (+https://acme.example/bot)", "another crawler"),
        ("ClaudeBot/1.0 (+https://acme.example/bot)", "another crawler"),
        ("anthropic-ai (+https://acme.example/bot)", "another crawler"),
        ("CCBot/2.0 (+https://acme.example/bot)", "another crawler"),
        ("facebookexternalhit/1.1 (+https://acme.example/bot)", "another crawler"),
        ("archive.org_bot (+https://acme.example/bot)", "another crawler"),
        ("ia_archiver (+https://acme.example/bot)", "another crawler"),
        ("MJ12bot/v1.4 (+https://acme.example/bot)", "another crawler"),
        ("MJ/1.0 (+https://acme.example/bot)", r"another crawler \(MJ12bot\)"),  # as read
        ("acmebot/1.0 (compatible; Googlebot/2.1; +https://acme.example/bot)", "Googlebot"),
        # an HTTP client's or library's default
        ("curl/8.0 (+http://x.example/)", r"HTTP client \(curl\)"),
        ("Wget/1.21 (+https://acme.example/bot)", "HTTP client"),
        ("python-requests/2.31 (+https://acme.example/bot)", "HTTP client"),
        ("Python-urllib/3.11 (+https://acme.example/bot)", "HTTP client"),
        ("Python/3.11 aiohttp/3.9 (+https://acme.example/bot)", "HTTP client"),
        ("Go-http-client/1.1 (+https://acme.example/bot)", "HTTP client"),
        ("Java/17 (+https://acme.example/bot)", "HTTP client"),
        ("Scrapy/2.11 (+https://scrapy.org)", "HTTP client"),
        # a browser's name, with or without a version
        ("Mozilla (+http://x.example/bot)", r"browser \(Mozilla\)"),
        ("acmebot/1.0 (like Gecko; +https://acme.example/bot)", "browser"),
        ("acmebot/1.0 (+https://acme.example/bot) HeadlessChrome", "browser"),
        # an info URL no operator can open
        ("probebot/1.0 (+http://localhost)", "no site operator can open .*localhost"),
        ("probebot/1.0 (+http://localhost:8080/bot)", "localhost"),
        ("probebot/1.0 (+http://bot.localhost/)", "localhost"),
        ("probebot/1.0 (+http://127.0.0.1/bot)", "loopback"),
        ("probebot/1.0 (+http://127.1/bot)", "loopback"),
        ("probebot/1.0 (+http://2130706433/)", "loopback"),
        ("probebot/1.0 (+http://[::1]/bot)", "loopback"),
        ("probebot/1.0 (+http://[::ffff:127.0.0.1]/bot)", "loopback"),
        ("probebot/1.0 (+http://10.0.0.8/bot)", "private"),
        ("probebot/1.0 (+http://192.168.1.1/bot)", "private"),
        ("probebot/1.0 (+http://169.254.169.254/)", "link-local"),
        ("probebot/1.0 (+http://[fe80::1]/)", "link-local"),
        ("probebot/1.0 (+http://nas.local/bot)", r"\.local"),
        ("probebot/1.0 (+http://wiki.internal/bot)", r"\.internal"),
        ("probebot/1.0 (+http://bot.home.arpa/)", r"\.home\.arpa"),
        ("probebot/1.0 (+http://bot.invalid/)", r"\.invalid"),
        ("probebot/1.0 (+http://intranet/bot)", "no domain"),
        ("probebot/1.0 (+http:///bot)", "no host"),
    ],
)
def test_impersonation_and_unopenable_info_urls_refused(ua: str, why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        validate_user_agent(ua)


@pytest.mark.parametrize(
    ("ua", "token"),
    [
        ("testbot/1.0 (+http://bot.example/info)", "testbot"),  # RFC 2606 names: for tests
        ("probebot/1.0 (+http://bot.test/)", "probebot"),
        ("newsbot/1.0 (+https://example.org/bot)", "newsbot"),
        ("acmebot/1.0 (+https://8.8.8.8/bot)", "acmebot"),  # a public address
        ("acmebot/1.0 (+https://acme.example/googlebot-notes)", "acmebot"),  # a URL's path
        ("acmebot/1.0 (built with Scrapy on Python; +https://acme.example/bot)", "acmebot"),
        ("javabot/1.0 (+https://acme.example/bot)", "javabot"),  # not "Java"
        ("curlew/1.0 (+https://acme.example/bot)", "curlew"),  # not "curl"
        ("politecrawl-demo/0.1 (+https://github.com/politecrawl/politecrawl)", "politecrawl-demo"),
    ],
)
def test_honest_user_agents_pass(ua: str, token: str) -> None:
    assert validate_user_agent(ua) == token


def test_paths_given_as_text_are_paths_and_other_values_refused(tmp_path) -> None:
    """``out_dir="crawl1"`` was taken, then failed inside the crawl (AttributeError)."""
    from pathlib import Path

    from politecrawl import CrawlConfig, FetchConfig

    fetch = FetchConfig(user_agent="acmebot/1.0 (+https://acme.example/bot)")
    cfg = CrawlConfig(seeds=("https://example.org/",), fetch=fetch, out_dir="crawl1",
                      items_file=str(tmp_path / "items.csv"))  # fmt: skip
    assert cfg.out_dir == Path("crawl1") and cfg.items_file == tmp_path / "items.csv"
    with pytest.raises(ConfigError, match="out_dir must be a path, got int"):
        CrawlConfig(seeds=("https://example.org/",), fetch=fetch, out_dir=5)  # type: ignore[arg-type]
