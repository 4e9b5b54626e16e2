"""What site owners write about the use of their pages, read from each place it lives.

One parser per form; each returns plain values (or None for a statement it cannot read) and
decides nothing: ``usage`` resolves them against the crawl's purpose. The versions followed
(drafts still change; docs/politeness.md has the table with sections):

* IETF aipref vocabulary, draft-ietf-aipref-vocab-07 (editor's copy of 2026-08-19): a
  Structured Fields dictionary (RFC 9651 §3.2) of ``label=y|n``; §6.5: unknown labels and
  values other than the tokens ``y``/``n`` are "unknown", and a dictionary that fails to
  parse (uppercase keys included) leaves every preference unknown. The labels of drafts -02
  to -04 (``all``/``bots``, ``train-genai``, ``ai-use``, ``ai-output``) are still read: sites
  wrote them.
* IETF aipref attachment, draft-ietf-aipref-attach-04: the ``Content-Usage`` header (§2) and
  the robots.txt ``Content-Usage: [path] prefs`` rule (§3.2: a value starting with ``/``
  carries a path up to the first SP/HTAB).
* Content signals, draft-romm-aipref-contentsignals-00 (and contentsignals.org):
  ``Content-Signal: search=yes, ai-input=no, ai-train=no`` in robots.txt, optionally after a
  path as for Content-Usage.
* TDMRep, W3C Community Group Final Report (text of w3c/tdm-reservation-protocol, 2025-12):
  ``/.well-known/tdmrep.json`` (§6.1), the ``tdm-reservation``/``tdm-policy`` headers (§6.2),
  ``<meta name="tdm-reservation">`` (§6.3); a reservation other than 0 or 1 is unset (§5.1),
  1 and 0 read in every JSON spelling (``1.0``, ``true``, ``"1"``: ``tdm_reservation``).
* ``noai`` / ``noimageai`` in ``<meta name="robots">`` and ``X-Robots-Tag`` (DeviantArt's
  2022 directives, as img2dataset reads them); no specification beyond that.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

import http_sf

__all__ = [
    "TdmRule",
    "ai_tokens",
    "content_signal",
    "robots_rule",
    "tdm_reservation",
    "tdmrep_file",
    "vocabulary",
]

MAX_VALUE: Final = 4096  # bytes of one statement read at most: bounded work per line
MAX_TDM_RULES: Final = 1000

_SIGNAL_ITEM: Final = re.compile(r"\s*([a-z][a-z0-9_.*-]*)\s*=\s*([A-Za-z]+)\s*")
_SIGNAL_VALUES: Final = {"yes": True, "y": True, "no": False, "n": False}
_WORDS: Final = re.compile(r"[\s,]+")
_SCOPED: Final = re.compile(r"\s*([A-Za-z_-]+)\s*:\s*(.*)", re.DOTALL)


def vocabulary(value: str) -> dict[str, bool] | None:
    """An aipref statement (``train-ai=n, search=y``): each label with ``y``/``n`` (True:
    allowed), others left out; None when the dictionary does not parse (vocab-07 §6.5)."""
    if len(value) > MAX_VALUE:
        return None
    try:
        parsed = http_sf.parse(value.encode("utf-8", "surrogatepass"), tltype="dictionary")
    except (ValueError, TypeError, IndexError):
        return None
    if not isinstance(parsed, dict):
        return None
    prefs: dict[str, bool] = {}
    for label, member in parsed.items():
        item = member[0] if isinstance(member, tuple) else None
        if isinstance(item, http_sf.Token) and str(item) in ("y", "n"):
            prefs[label] = str(item) == "y"
    return prefs


def content_signal(value: str) -> dict[str, bool] | None:
    """A Content-Signal value (``search=yes, ai-train=no``): each signal with yes/no; None when
    an item is not ``name=value`` or a value is not yes/no (the line is ignored whole)."""
    if len(value) > MAX_VALUE or not value.strip():
        return None
    prefs: dict[str, bool] = {}
    for item in value.split(","):
        m = _SIGNAL_ITEM.fullmatch(item)
        if m is None:
            return None
        allowed = _SIGNAL_VALUES.get(m.group(2).lower())
        if allowed is None:
            return None
        prefs[m.group(1)] = allowed
    return prefs


def robots_rule(value: str) -> tuple[str | None, str]:
    """A robots.txt Content-Usage / Content-Signal value split as attach-04 §3.2 says: a
    value starting with ``/`` is a path up to the first SP or HTAB, then the preferences."""
    value = value.strip(" \t")
    if not value.startswith("/"):
        return None, value
    cut = min((i for i in (value.find(" "), value.find("\t")) if i >= 0), default=len(value))
    return value[:cut], value[cut:].strip(" \t")


@dataclass(frozen=True, slots=True)
class TdmRule:
    """One rule of tdmrep.json (TDMRep §6.1): a location pattern and its reservation."""

    location: str
    reserved: bool
    policy: str | None = None
    # the reservation as written when not the plain integer 0 or 1 (``true``, ``1.0``,
    # ``"1"``): read all the same, and said, since another reader may not
    spelled: str | None = None


def tdmrep_file(body: bytes) -> tuple[list[TdmRule], int] | None:
    """The rules of a tdmrep.json in file order (the first match is the most specific, §6.1),
    and how many entries were skipped as malformed; None when it is not a JSON array."""
    try:
        data = json.loads(body.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(data, list):
        return None
    rules: list[TdmRule] = []
    bad = 0
    for entry in data[:MAX_TDM_RULES]:
        rule = _tdm_rule(entry)
        if rule is None:
            bad += 1
        else:
            rules.append(rule)
    return rules, bad + max(0, len(data) - MAX_TDM_RULES)


def _tdm_rule(entry: object) -> TdmRule | None:
    if not isinstance(entry, dict):
        return None
    location, reservation = entry.get("location"), entry.get("tdm-reservation")
    # a path pattern (§6.1, robots.txt's): from the root, or from a wildcard ("*": any path)
    if not isinstance(location, str) or not location.startswith(("/", "*")):
        return None
    reserved = tdm_reservation(reservation)
    if reserved is None:
        return None
    policy = entry.get("tdm-policy")
    spelled = None if type(reservation) is int else json.dumps(reservation)[:40]
    return TdmRule(location, reserved, policy if isinstance(policy, str) else None, spelled)


def tdm_reservation(value: object) -> bool | None:
    """A ``tdm-reservation`` value: 1 reserved, 0 not; anything else is unset (§5.1).

    TDMRep §5.1 calls it "a boolean value", written 1 or 0. Every way JSON spells those is
    read alike: the numbers ``1``/``0`` (``1.0`` is the same JSON number), the booleans
    ``true``/``false`` and the text ``"1"``/``"0"`` (as the header and the meta element
    carry it); ``2``, ``0.5``, ``"yes"``, ``null`` are protocol errors (unset)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return value == 1
    if isinstance(value, str) and value.strip() in ("0", "1"):
        return value.strip() == "1"
    return None


def ai_tokens(
    meta_contents: Iterable[str], x_robots_tags: Iterable[str], product_token: str
) -> frozenset[str]:
    """``noai`` / ``noimageai`` from meta robots contents (already ours) and X-Robots-Tag
    values, where ``otherbot: noai`` binds only otherbot (as ``directives`` reads them)."""
    found: set[str] = set()
    for content in meta_contents:
        found.update(w.lower() for w in _WORDS.split(content[:MAX_VALUE]))
    token = product_token.lower()
    for value in x_robots_tags:
        scope: str | None = None
        for item in value[:MAX_VALUE].split(","):
            m = _SCOPED.fullmatch(item)
            if m is not None:
                scope, item = m.group(1).lower(), m.group(2)
            if scope is None or scope == token:
                found.update(w.lower() for w in _WORDS.split(item.strip()))
    return frozenset(found & {"noai", "noimageai"})
