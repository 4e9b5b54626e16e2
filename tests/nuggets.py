"""A user's nugget function, as `--relevance nuggets:railway_pages` would load it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from politecrawl.focus.relevance import Document

CALLS: list[str] = []


def railway_pages(doc: Document) -> float:
    """Relevant: pages whose title or text speaks of steam locomotives or railways."""
    CALLS.append(doc.url)
    text = f"{doc.title} {doc.text}".lower()
    hits = sum(text.count(w) for w in ("locomotive", "railway", "steam"))
    return min(1.0, hits / 6)


def titles(page: Any) -> Iterator[dict[str, Any]]:
    """A page handler (``--handler nuggets:titles``): one item per page, its title."""
    yield {"title": page.title}
