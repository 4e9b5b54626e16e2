"""Counts said in words."""

import pytest

from politecrawl.wording import counted

pytestmark = pytest.mark.unit


def test_one_is_singular_and_others_plural() -> None:
    assert [counted(n, "site") for n in (0, 1, 2)] == ["0 sites", "1 site", "2 sites"]
    assert counted(1234, "URL") == "1,234 URLs"
    assert counted(2, "capture", "captures") == "2 captures"
