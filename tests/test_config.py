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
