"""URL parsing, normalisation and keys: the one place politecrawl handles URLs.

Every extracted link goes through :func:`join` and then the filters, so this is
the crawler's hot path.  Canonical URLs are the frontier's dedup keys: two links
that a server answers identically should canonicalise to the same string, and
canonicalisation must be idempotent or the same page gets queued twice.

This module says what a URL is (canonical form, host, origin, registered domain,
politeness key); which URLs a crawl wants (scope, allow and never-crawl lists,
extension filter, trap shapes) is ``urlfilters``.

Which library does what
-----------------------
* Splitting uses the regular expression of RFC 3986 Appendix B (scheme restricted
  to WHATWG scheme characters), run by ``re``; reference resolution and
  dot-segment removal follow RFC 3986 §5.2.2 and §5.2.4 word for word.
* Host names: non-ASCII hosts are IDNA-encoded by yarl (``URL.build``: UTS #46
  mapping with IDNA 2008 via the ``idna`` package, IDNA 2003 fallback); IP literals
  are checked and normalised by ``ipaddress``; the result is then checked against
  a strict LDH(+underscore) pattern, because yarl accepts ``a*b``, ``a..b`` and
  64-character labels.
* Percent-encoding of runs of illegal characters uses ``urllib.parse.quote``.
* Registered domains (eTLD+1) come from publicsuffixlist, offline (ICANN and
  private sections, unknown TLDs treated as public suffixes).

What the libraries got wrong when measured (yarl 1.25.1, w3lib 2.5.0, CPython 3.11)
----------------------------------------------------------------------------------
* ``yarl.URL.join`` builds the merged path from the *decoded* base path:
  ``URL("http://a/%25zz/x%2Fy/z").join(URL("g"))`` gives ``http://a/%zz/x/y/g``,
  which is a different resource.  So joining is done here, not by yarl.
* ``yarl.URL(str)`` decodes reserved characters (``%3A`` -> ``:``, ``%2F`` in the
  query -> ``/``), encodes a space in the query as ``+`` (so ``a b`` and ``a%20b``
  give different keys), accepts ports ``+80`` and `` 80``, hosts ``a b`` and
  ``a<b>``, and keeps ``user:pw@`` and a trailing dot on the host.
* ``w3lib.url.canonicalize_url`` keeps ``:80``, raises a bare ``ValueError`` on
  port 99999 or ``8x``, sorts the query (changes meaning for order-sensitive
  apps), rewrites ``%20`` in the query to ``+``, keeps ``user:pw@``, the host's
  trailing dot and session ids, and costs ~18-23 µs per URL on this machine
  (``python bench/urls.py`` measures it against this module in one run).
* ``urllib.parse.urlsplit`` costs 4-7 µs per uncached URL here and its
  ``lru_cache`` holds 128 entries, useless for a stream of unique links; the
  Appendix B regex does the same split in under 1 µs.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import string
import sys
from collections.abc import Iterable, Sequence
from typing import Literal
from urllib.parse import quote, unquote

from publicsuffixlist import PublicSuffixList
from yarl import URL

from politecrawl.errors import ConfigError, SeedError, UrlError

__all__ = [
    "canonical_host",
    "canonicalize",
    "host_of",
    "is_subdomain_of",
    "join",
    "origin_of",
    "politeness_key",
    "registered_domain",
    "robots_url",
]

_DEFAULT_PORT = {"http": 80, "https": 443}

# RFC 3986 Appendix B, with the scheme limited to what browsers accept as one so
# that "a b:c" is a relative path.  Always matches; the fragment is never needed.
_SPLIT = re.compile(
    r"(?:([A-Za-z][A-Za-z0-9+.\-]*):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?", re.S
).match

# Browsers strip leading/trailing C0 controls and spaces and drop tabs and
# newlines anywhere (WHATWG URL "basic URL parser"); pages rely on that.
_C0_SPACE = "".join(map(chr, range(0x21)))
_DROP_TAB_NL = str.maketrans("", "", "\t\n\r")

# Characters legal as-is in a path or query: RFC 3986 unreserved, sub-delims,
# ":" "@" "/" "?".  Everything else (including "%") needs a look.
_LEGAL = r"A-Za-z0-9\-._~!$&'()*+,;=:@/?"
_NEEDS_PCT_WORK = re.compile(f"[^{_LEGAL}]").search
_PCT_TOKEN = re.compile(f"%[0-9A-Fa-f]{{2}}|%|[^{_LEGAL}%]+").sub
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")


def _build_pct_map() -> dict[str, str]:
    """Every "%xx" spelling -> its normal form (decode unreserved, upper-case hex)."""
    table = {"%": "%25"}  # a lone "%" is a literal percent sign
    for code in range(256):
        hex_ = f"{code:02X}"
        char = chr(code)
        normal = char if char in _UNRESERVED else "%" + hex_
        for hi in {hex_[0], hex_[0].lower()}:
            for lo in {hex_[1], hex_[1].lower()}:
                table["%" + hi + lo] = normal
    return table


_PCT_MAP = _build_pct_map()


def _pct_repl(match: re.Match[str]) -> str:
    token = match.group()
    normal = _PCT_MAP.get(token)
    # A run of illegal characters: UTF-8 and percent-encode (raises
    # UnicodeEncodeError, a ValueError, on lone surrogates).
    return normal if normal is not None else quote(token, safe="")


# Session ids make every visit look like a new URL (an infinite frontier of
# duplicates) and leak one visitor's session into the crawl; servers fall back
# to cookies or a fresh session without them.
_JSESSIONID_PARAM = re.compile(r";jsessionid=[^/;]*", re.I).sub
_SESSION_NAMES = (
    r"(?:phpsessid|sid|sessionid|session_id|jsessionid|aspsessionid[a-z0-9]*|cfid|cftoken)"
)
_HAS_SESSION_PARAM = re.compile(rf"(?:^|&){_SESSION_NAMES}(?:[=&]|$)", re.I).search
_IS_SESSION_NAME = re.compile(_SESSION_NAMES, re.I).fullmatch

_HOST_OK = re.compile(r"[a-z0-9_\-]{1,63}(?:\.[a-z0-9_\-]{1,63})*").fullmatch


def _clean(text: str) -> str:
    """Strip what browsers strip; turn backslashes before ?/# into slashes as they do."""
    text = text.strip(_C0_SPACE)
    if "\n" in text or "\t" in text or "\r" in text:
        text = text.translate(_DROP_TAB_NL)
    if "\\" in text:
        end = len(text)
        for mark in "?#":
            pos = text.find(mark)
            if 0 <= pos < end:
                end = pos
        text = text[:end].replace("\\", "/") + text[end:]
    return text


def canonical_host(raw: str) -> str:
    """Canonical host (lower-case, punycode, no trailing dot) or UrlError."""
    if "%" in raw:
        raw = unquote(raw, errors="strict")
    host = raw.lower() if raw.isascii() else URL.build(scheme="http", host=raw).raw_host or ""
    if host.endswith("."):
        host = host[:-1]
    if not host:
        raise UrlError("empty host")
    if len(host) > 253 or not _HOST_OK(host):
        raise UrlError("bad host")
    if host[-1].isdigit() and host.rpartition(".")[2].isdigit():
        # A host ending in a number is an IPv4 address to browsers; insist on
        # the dotted-quad form rather than guess at octal/short forms.
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise UrlError("bad IPv4 address") from None
    return host


@functools.lru_cache(maxsize=1 << 16)
def _authority(scheme: str, netloc: str) -> str:
    """Canonical "host[:port]" for a raw authority; userinfo dropped, default port dropped.

    Cached: a page's links mostly share a handful of authorities.
    """
    hostport = netloc.rpartition("@")[2]  # credentials never belong in a crawl key
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            raise UrlError("bad IPv6 literal")
        literal, rest = hostport[1:end], hostport[end + 1 :]
        if rest and rest[0] != ":":
            raise UrlError("bad authority")
        port = rest[1:]
        if "%" in literal:  # zone ids mean nothing off the local machine
            raise UrlError("bad IPv6 literal")
        try:
            host = f"[{ipaddress.IPv6Address(literal).compressed}]"
        except ValueError:
            raise UrlError("bad IPv6 literal") from None
    else:
        name, colon, port = hostport.rpartition(":")
        if not colon:
            name, port = hostport, ""
        host = canonical_host(name)
    if port:
        if not (port.isascii() and port.isdigit()):
            raise UrlError("bad port")
        number = int(port)
        if number > 65535:
            raise UrlError("port out of range")
        if number == 0:
            raise UrlError("port 0")
        if number != _DEFAULT_PORT[scheme]:
            return f"{host}:{number}"
    return host


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4 for an absolute path ("/..." in, "/..." out)."""
    segments = path.split("/")
    out: list[str] = []
    for seg in segments[1:]:
        if seg == "..":
            if out:
                out.pop()
        elif seg != ".":
            out.append(seg)
    if segments[-1] in (".", ".."):
        out.append("")  # "/a/b/.." names the directory "/a/"
    return "/" + "/".join(out)


def _assemble(scheme: str, netloc: str, path: str, query: str | None) -> str:
    """Canonical URL from split parts; refused if percent-encoding grew it past the cap (so
    every canonical URL canonicalises again to itself: bench/fuzz.py found the gap)."""
    url = _assemble_parts(scheme, netloc, path, query)
    if len(url) > _MAX_RAW:
        raise UrlError("URL too long")
    return url


def _assemble_parts(scheme: str, netloc: str, path: str, query: str | None) -> str:
    """Canonical URL from split parts (scheme already lower-case http/https)."""
    authority = _authority(scheme, netloc)
    if not path:
        path = "/"
    else:
        if _NEEDS_PCT_WORK(path):
            path = _PCT_TOKEN(_pct_repl, path)
        if ";" in path:
            path = _JSESSIONID_PARAM("", path)
        if "/." in path:
            path = _remove_dot_segments(path)
    if query:
        if _NEEDS_PCT_WORK(query):
            query = _PCT_TOKEN(_pct_repl, query)
        if _HAS_SESSION_PARAM(query):
            query = "&".join(
                p for p in query.split("&") if not _IS_SESSION_NAME(p.partition("=")[0])
            )
        if query:
            return f"{scheme}://{authority}{path}?{query}"
    return f"{scheme}://{authority}{path}"


_MAX_RAW = 64 * 1024
_MAX_AUTHORITY = 1024


def canonicalize(url: str) -> str:
    """The crawl key of an absolute http(s) URL; UrlError (short reason) if it has none.

    Lower-case scheme and host, punycode host, no default port, no userinfo,
    no fragment, no dot segments, normalised percent-encoding, no session ids,
    query order kept (order can matter to the application).
    """
    if len(url) > _MAX_RAW:  # encoding work is linear but slow per byte: refuse first
        raise UrlError("URL too long")
    try:
        parts = _SPLIT(_clean(url))
        assert parts is not None  # the pattern matches every string
        scheme, netloc, path, query = parts.groups()
        if scheme is None:
            raise UrlError("relative URL")
        if netloc is not None and len(netloc) > _MAX_AUTHORITY:  # DNS names stop at 253
            raise UrlError("host too long")
        scheme = scheme.lower()
        if scheme not in _DEFAULT_PORT:
            raise UrlError(f"unsupported scheme {scheme[:20]!r}")
        if netloc is None:
            raise UrlError("missing host")
        return _assemble(scheme, netloc, path, query)
    except UrlError:
        raise
    except ValueError as exc:  # IDNA, ipaddress, lone surrogates...
        raise UrlError("malformed URL") from exc


@functools.lru_cache(maxsize=1024)
def _base_parts(base: str) -> tuple[str, str, str, str | None, str] | None:
    """(scheme, authority, path, query, directory) of a base URL, canonicalised once per page;
    None for a base with no canonical form (cached too: an exception would not be, and every
    link of the page would pay for the failed canonicalisation again; found by bench/fuzz.py)."""
    try:
        canonical = canonicalize(base)
    except UrlError:
        return None
    parts = _SPLIT(canonical)
    assert parts is not None
    scheme, netloc, path, query = parts.groups()
    assert scheme is not None and netloc is not None
    return scheme, netloc, path, query, path[: path.rfind("/") + 1]


_JOINED: dict[tuple[str, str, str], str | None] = {}
_JOINED_MAX = 32_768  # about 8 MB at most; cleared whole when full (the working set refills it)
_CACHEABLE = ("/", "http://", "https://")
_MISS = object()


def join(base: str, href: str) -> str | None:
    """Resolve a link against its page URL and canonicalise it; None if not crawlable.

    Resolution is RFC 3986 §5.2.2 (non-strict: "http:g" is relative, as in
    browsers), after the whitespace clean-up browsers do.  Never raises.

    A site's menus and footers repeat on every page, so the joins of absolute and
    root-relative links are remembered: such a link's result depends on the href and at
    most the base's scheme and authority. On the bundled test web's realistic pages this
    took link extraction from ~1.2 us a link to ~0.2 us on a repeat (bench/throughput.py).
    """
    if isinstance(href, str) and href.startswith(_CACHEABLE) and isinstance(base, str):
        if href[0] == "/":  # "/path" and "//host/path": the base's scheme and authority
            parts = _base_parts(base)
            if parts is None:
                return None
            key = (parts[0], parts[1], href)
        else:  # "http(s)://...": the href alone
            key = ("", "", href)
        got = _JOINED.get(key, _MISS)
        if got is _MISS:
            got = _join(base, href)
            if len(_JOINED) >= _JOINED_MAX:
                _JOINED.clear()
            _JOINED[key] = got
        return got  # type: ignore[return-value]
    return _join(base, href)


def _join(base: str, href: str) -> str | None:
    if not isinstance(href, str):  # defensive: HTML parsers hand out None for bare attrs
        return None
    if len(href) > _MAX_RAW:  # the trap limit drops long URLs anyway: skip the costly work
        return None
    try:
        base_parts = _base_parts(base)
        if base_parts is None:
            return None
        b_scheme, b_netloc, b_path, b_query, b_dir = base_parts
        parts = _SPLIT(_clean(href))
        assert parts is not None
        scheme, netloc, path, query = parts.groups()
        if scheme is not None:
            scheme = scheme.lower()
            if scheme not in _DEFAULT_PORT:
                return None
            if netloc is None:
                if scheme != b_scheme:
                    return None
            else:
                return _assemble(scheme, netloc, path, query)
        if netloc is not None:
            return _assemble(b_scheme, netloc, path, query)
        if not path:
            return _assemble(b_scheme, b_netloc, b_path, b_query if query is None else query)
        if path[0] != "/":
            path = b_dir + path
        return _assemble(b_scheme, b_netloc, path, query)
    except (ValueError, TypeError, AttributeError):  # UrlError included; odd base types
        return None


def _authority_of(url: str) -> tuple[int, int]:
    """(start, end) of the authority in an absolute URL."""
    start = url.find("://") + 3
    end = url.find("/", start)
    if end < 0:
        end = len(url)
    return start, end


def host_of(url: str) -> str:
    """Host of a canonical URL, without port; IPv6 literals keep their brackets."""
    start, end = _authority_of(url)
    hostport = url[start:end]
    if hostport.startswith("["):
        return hostport[: hostport.find("]") + 1]
    return hostport.partition(":")[0]


def origin_of(url: str) -> str:
    """The origin, scheme://host[:port], of a canonical URL; robots.txt rules are per origin."""
    return url[: _authority_of(url)[1]]


def robots_url(url: str) -> str:
    """The robots.txt URL governing a canonical URL."""
    return url[: _authority_of(url)[1]] + "/robots.txt"


@functools.cache
def _psl() -> PublicSuffixList:
    """The public suffix list, parsed on first use (~60 ms) rather than at import."""
    return PublicSuffixList(accept_unknown=True)


def _is_ip_literal(host: str) -> bool:
    if host.startswith("["):
        return True
    if not host[-1:].isdigit():
        return False
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class Seeds(tuple[str, ...]):
    """Seed URLs in canonical form, in order, once each: made by ``canonical_seeds`` only, so
    seeds are canonicalised once whatever their source (the API, ``--seeds``, TOML, a segment)
    and pass through as they are wherever they go next (the config, the scope, the gate)."""

    __slots__ = ()


def canonical_seeds(seeds: Iterable[str], where: Sequence[str] = ()) -> Seeds:
    """Seeds in their canonical form, in order, once each; a seed that is not a crawlable URL
    is the user's mistake, so it is a ``SeedError`` (a ConfigError and a UrlError) naming it
    (and ``where[i]``, the file and line seed ``i`` came from, if given), not a silent drop.
    ``Seeds`` pass as they are."""
    if isinstance(seeds, Seeds):
        return seeds
    out: dict[str, None] = {}
    for i, seed in enumerate(seeds):
        try:
            out[canonicalize(seed.strip())] = None
        except UrlError as exc:
            if i < len(where):
                raise SeedError(f"{where[i]}: bad seed URL {_shown(seed)}: {exc}") from None
            raise SeedError(f"seed {_shown(seed)} is not a crawlable URL: {exc}") from None
    return Seeds(out)


@functools.lru_cache(maxsize=1 << 16)
def registered_domain(host: str) -> str:
    """eTLD+1 of a host ("a.b.example.co.uk" -> "example.co.uk").

    IP literals, single labels and public suffixes themselves come back unchanged;
    an unknown TLD counts as a public suffix ("a.b.test" -> "b.test").
    """
    if "." not in host or _is_ip_literal(host):
        return host
    domain: str | None = _psl().privatesuffix(host)
    return domain or host


def is_subdomain_of(host: str, domain: str) -> bool:
    """True if host is domain or below it (label-wise, so "xa.com" is not under "a.com")."""
    return host == domain or host.endswith("." + domain)


def politeness_key(url: str, mode: Literal["host", "domain", "ip"], ip: str | None = None) -> str:
    """The key per which request rate is limited.

    "host": the host (ports ignored: one machine, one budget); "domain": the
    registered domain; "ip": the resolved address, the host until it is known.
    Interned: every queued URL carries its key, and a site's thousands of URLs share one
    string instead of a copy each (~60 bytes a queued URL; bench/soak.py --tracemalloc).
    """
    if mode == "host":
        return sys.intern(host_of(url))
    if mode == "domain":
        return sys.intern(registered_domain(host_of(url)))
    if mode == "ip":
        return sys.intern(ip if ip else host_of(url))
    raise ConfigError(f"unknown politeness mode {mode!r}")


def _shown(seed: str) -> str:
    """A seed as an error shows it: its start, for a 10 MB line must not fill the terminal."""
    return repr(seed) if len(seed) <= 200 else f"{seed[:200]!r}... ({len(seed):,} characters)"
