"""Content fingerprints: is this page the same as one already fetched, exactly or nearly?

Two fingerprints of a page's visible text (``relevance.extract_document(...).text``):

* ``exact_fingerprint``: blake2b-128 of the text with whitespace collapsed and case folded.
  Equal means "the same text"; it changes when a single character does (a counter, a date).
* ``simhash``: a 64-bit SimHash (Charikar 2002; Manku et al., WWW 2007) over 3-word
  shingles. Similar texts get fingerprints a few bits apart, so "near-duplicate" means
  ``hamming(a, b) <= 3``. A run of numbers and month/day names ("Tue 3 March 2024, 10:30",
  "1,234 views") reads as one token unless ``digits=True``, so a changed date, counter or
  price does not move the fingerprint at all.

  Weights: each distinct shingle votes once (the SimHash of the shingle *set*, an estimate of
  its Jaccard similarity, as in Broder's shingling). Term-frequency weights were measured and
  dropped: one shingle repeated many times (a table of numbers, all ``0 0 0``) outvotes the
  rest of the page, and 14,561 different docstrings produced 117,093 pairs at distance 0.
  Shingle size 3 was chosen on ``bench/dedup.py``'s figures: no false pair among 20,000
  different generated pages at 2, 3 or 4 words; on real English (docstrings) 2 words gave
  a few unrelated pairs within 3 bits and 3 words none; smaller shingles find more edited
  copies (an edit touches fewer shingles).

``NearDupIndex`` finds a stored fingerprint within ``max_distance`` bits without scanning
them all: the 64 bits are cut into ``max_distance + 1`` bands and a fingerprint is filed
under each band's value; two fingerprints at most ``max_distance`` bits apart agree exactly on
at least one band (pigeonhole), so only the fingerprints sharing a band value are compared.

Cost on this 2-core machine (``bench/dedup.py`` measures it): ``simhash`` takes about
0.9 ms per 10 KB of text (about 1,700 words); the work is all in C loops except one dict
lookup per word. How: tokens by ``bytes.translate`` + ``split``; one blake2b per *new* word
(cached); a shingle's hash is CPython's tuple hash of its word hashes (xxHash-based, the same
in every process since 3.8 because integer hashes are not randomised; a golden-value test
guards it); the 64 bit columns are counted with ``int.bit_count`` on byte-sliced arrays
rather than 64 Python additions per shingle.
"""

from __future__ import annotations

import hashlib
import re
from array import array
from collections import OrderedDict
from typing import Any

__all__ = [
    "DEFAULT_MAX_DISTANCE",
    "DEFAULT_SHINGLE",
    "DocId",
    "NearDupIndex",
    "exact_fingerprint",
    "hamming",
    "normalise_text",
    "simhash",
    "to_signed64",
    "to_unsigned64",
]

DocId = str | int
"""What the index maps a fingerprint to: a URL or a row id (JSON-serialisable)."""

DEFAULT_MAX_DISTANCE = 3
DEFAULT_SHINGLE = 3
_MASK64 = (1 << 64) - 1
_WORD_CACHE_LIMIT = 200_000  # ~25 MB of words -> hashes; cleared when full


def normalise_text(text: str) -> str:
    """Whitespace runs to one space, case folded: what ``exact_fingerprint`` hashes."""
    return " ".join(text.casefold().split())


def exact_fingerprint(text: str) -> str:
    """32 hex digits (blake2b, 16 bytes) of the normalised visible text."""
    data = normalise_text(text).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def hamming(a: int, b: int) -> int:
    """Number of differing bits of two 64-bit fingerprints."""
    return ((a ^ b) & _MASK64).bit_count()


def to_signed64(value: int) -> int:
    """An unsigned 64-bit fingerprint as a signed one (what an SQLite INTEGER holds)."""
    value &= _MASK64
    return value - (1 << 64) if value >> 63 else value


def to_unsigned64(value: int) -> int:
    """Inverse of ``to_signed64``."""
    return value & _MASK64


# -- tokens ------------------------------------------------------------------------------------


def _byte_table(keep_digits: bool) -> bytes:
    """ASCII letters lower-cased, digits kept or folded to "0", other ASCII -> space.

    Bytes >= 0x80 (UTF-8 of non-ASCII letters) pass through unchanged.
    """
    table = bytearray(range(256))
    for code in range(128):
        char = chr(code)
        if char.isdigit():
            table[code] = code if keep_digits else ord("0")
        elif char.isalpha():
            table[code] = ord(char.lower())
        else:
            table[code] = 0x20
    return bytes(table)


_TABLE_FOLD = _byte_table(keep_digits=False)
_TABLE_KEEP = _byte_table(keep_digits=True)
# UTF-8 of Unicode spaces and punctuation that would otherwise glue words together (no-break
# and thin spaces, dashes, curly quotes, ellipsis, middle dot, CJK comma and full stop):
# replaced in the bytes, one C-speed ``bytes.replace`` each, only when the text is not ASCII
# (a dict-driven ``str.translate`` costs ~1 ms per 10 KB).
_UNICODE_SEPARATORS = tuple(
    c.encode()
    for c in "\u00a0\u00ab\u00bb\u00b7\u2013\u2014\u2018\u2019\u201c\u201d\u2026\u2009\u202f"
    "\u3000\u3001\u3002\uff0c\uff0e"
)
_NUMBER_RUN = re.compile(rb"0(?:[0 ]*0)?").sub  # digits are "0" by now
# Month and weekday names read as a number too, so "Updated Monday 3 March" and "Updated
# Tuesday 4 March" are the same text to simhash (dates are the commonest changing detail).
_DATE_WORDS = frozenset(
    b"january february march april may june july august september october november december "
    b"jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday "
    b"friday saturday sunday mon tue tues wed thu thur thurs fri sat sun".split()
)


def _words(text: str, keep_digits: bool) -> list[bytes]:
    """Lower-cased words as UTF-8 bytes.

    Unless ``keep_digits``, a run of numbers and month/day names ("Tue 3 March 2024, 10:30",
    "1,234") becomes the single word ``b"0"``, so a changed date or count changes nothing.
    """
    data = text.lower().encode("utf-8", "surrogatepass")
    if not data.isascii():
        for sep in _UNICODE_SEPARATORS:
            if sep in data:
                data = data.replace(sep, b" ")
    if keep_digits:
        return data.translate(_TABLE_KEEP).split()
    data = data.translate(_TABLE_FOLD)
    if b"0" in data:
        data = _NUMBER_RUN(b"0", data)
    words = data.split()
    if not _DATE_WORDS.isdisjoint(words):
        data = b" ".join([b"0" if w in _DATE_WORDS else w for w in words])
        words = _NUMBER_RUN(b"0", data).split()
    return words


_word_hashes: dict[bytes, int] = {}


def _word_hash(word: bytes) -> int:
    """A stable 60-bit hash of a word (below 2**61 - 1, where ``hash(int)`` is the identity)."""
    return int.from_bytes(hashlib.blake2b(word, digest_size=8).digest(), "little") >> 4


def _hash_words(words: list[bytes]) -> list[int]:
    cache = _word_hashes
    missing = [w for w in set(words) if w not in cache]
    if missing:
        if len(cache) + len(missing) > _WORD_CACHE_LIMIT:
            cache.clear()
            missing = list(set(words))
        for word in missing:
            cache[word] = _word_hash(word)
    return list(map(cache.__getitem__, words))


def simhash(text: str, *, shingle: int = DEFAULT_SHINGLE, digits: bool = False) -> int:
    """64-bit SimHash of ``text`` over ``shingle``-word shingles (0 for a text without words).

    A text shorter than one shingle is a single feature. ``digits=True`` keeps numbers and
    month/day names as they are (then a changed counter or date is a changed page).
    """
    if shingle < 1:
        raise ValueError("shingle must be >= 1")
    words = _words(text, digits)
    if not words:
        return 0
    ids = _hash_words(words)
    if len(ids) <= shingle:
        return hash(tuple(ids)) & _MASK64
    # each distinct shingle votes once (see the module docstring for why not by frequency)
    features = array("q", set(map(hash, zip(*(ids[i:] for i in range(shingle)), strict=False))))
    return _majority_bits(features.tobytes(), len(features))


def _majority_bits(data: bytes, n: int) -> int:
    """Bit i of the result is set when more than half of the n 8-byte values have bit i set.

    Byte j of every value is gathered into one big integer (``data[j::8]``); its bit b is
    then bit b of every byte, counted by one ``bit_count``: 64 C-speed passes.
    """
    ones = int.from_bytes(b"\x01" * n, "little")
    masks = [ones << b for b in range(8)]
    out = 0
    for j in range(8):
        column = int.from_bytes(data[j::8], "little")
        for b in range(8):
            if 2 * (column & masks[b]).bit_count() > n:
                out |= 1 << (8 * j + b)
    return out


# -- the index ---------------------------------------------------------------------------------


def _bands(max_distance: int) -> tuple[tuple[int, int], ...]:
    """(shift, mask) of each of ``max_distance + 1`` bands, as equal in width as possible."""
    count = max_distance + 1
    out: list[tuple[int, int]] = []
    start = 0
    for i in range(count):
        width = 64 // count + (1 if i < 64 % count else 0)
        out.append((start, (1 << width) - 1))
        start += width
    return tuple(out)


class NearDupIndex:
    """Fingerprint -> first document seen with it; finds any within ``max_distance`` bits.

    Bounded: at most ``capacity`` fingerprints, the least recently added or found dropped
    first (LRU), so a long crawl keeps the recent past; about 200-250 bytes per entry
    plus the doc id (measured in ``bench/dedup.py``). A lookup compares only the entries that
    share a band value with the query: with 4 bands of 16 bits and 2 million random entries,
    about 4 x 30 comparisons however big the index is.
    """

    __slots__ = ("_bands", "_docs", "_tables", "capacity", "max_distance")

    def __init__(self, max_distance: int = DEFAULT_MAX_DISTANCE, capacity: int = 2_000_000) -> None:
        if not 0 <= max_distance <= 15:
            raise ValueError("max_distance must be in 0..15")
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self.max_distance = max_distance
        self.capacity = capacity
        self._bands = _bands(max_distance)
        self._tables: list[dict[int, list[int]]] = [{} for _ in self._bands]
        self._docs: OrderedDict[int, DocId] = OrderedDict()

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, fp: object) -> bool:
        return fp in self._docs

    def nearest(self, fp: int) -> tuple[DocId, int] | None:
        """(doc id, distance) of the closest stored fingerprint within range, or None."""
        fp &= _MASK64
        doc = self._docs.get(fp)
        if doc is not None:
            self._docs.move_to_end(fp)
            return doc, 0
        best: int | None = None
        best_d = self.max_distance + 1
        for (shift, mask), table in zip(self._bands, self._tables, strict=True):
            bucket = table.get((fp >> shift) & mask)
            if bucket is None:
                continue
            for other in bucket:
                d = (other ^ fp).bit_count()
                if d < best_d:
                    best, best_d = other, d
        if best is None:
            return None
        self._docs.move_to_end(best)
        return self._docs[best], best_d

    def near(self, fp: int) -> list[tuple[DocId, int]]:
        """Every stored (doc id, distance) within ``max_distance`` bits, closest first.

        For diagnostics and measurements; does not refresh recency.
        """
        fp &= _MASK64
        found: dict[int, int] = {}
        for (shift, mask), table in zip(self._bands, self._tables, strict=True):
            for other in table.get((fp >> shift) & mask, ()):
                d = (other ^ fp).bit_count()
                if d <= self.max_distance:
                    found[other] = d
        return sorted(((self._docs[o], d) for o, d in found.items()), key=lambda x: x[1])

    def find(self, fp: int) -> DocId | None:
        """The document of the closest fingerprint within ``max_distance`` bits, or None."""
        hit = self.nearest(fp)
        return None if hit is None else hit[0]

    def add(self, fp: int, doc_id: DocId) -> None:
        """File ``fp`` under ``doc_id``; an fp already present keeps its first document."""
        fp &= _MASK64
        if fp in self._docs:
            self._docs.move_to_end(fp)
            return
        self._docs[fp] = doc_id
        for (shift, mask), table in zip(self._bands, self._tables, strict=True):
            key = (fp >> shift) & mask
            bucket = table.get(key)
            if bucket is None:
                table[key] = [fp]
            else:
                bucket.append(fp)
        if len(self._docs) > self.capacity:
            self._evict()

    def find_or_add(self, fp: int, doc_id: DocId) -> DocId | None:
        """The near-duplicate's document if there is one; otherwise file ``fp`` and say None.

        The one call per fetched page: a near-duplicate is not filed, so the index keeps the
        first member of each cluster and clusters do not creep.
        """
        doc = self.find(fp)
        if doc is None:
            self.add(fp, doc_id)
        return doc

    def _evict(self) -> None:
        old, _ = self._docs.popitem(last=False)
        for (shift, mask), table in zip(self._bands, self._tables, strict=True):
            key = (old >> shift) & mask
            bucket = table[key]
            bucket.remove(old)
            if not bucket:
                del table[key]

    def state_dict(self) -> dict[str, Any]:
        """JSON-ready state: entries oldest first, fingerprints as 16 hex digits."""
        return {
            "version": 1,
            "max_distance": self.max_distance,
            "capacity": self.capacity,
            "entries": [[f"{fp:016x}", doc] for fp, doc in self._docs.items()],
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """Replace the contents with a ``state_dict``; the band layout must match."""
        if state.get("version") != 1:
            raise ValueError("unknown NearDupIndex state version")
        if int(state["max_distance"]) != self.max_distance:
            raise ValueError("NearDupIndex state has a different max_distance")
        self._tables = [{} for _ in self._bands]
        self._docs = OrderedDict()
        for fp_hex, doc in state["entries"]:
            if not isinstance(doc, str | int):
                raise ValueError("NearDupIndex doc ids must be str or int")
            self.add(int(fp_hex, 16), doc)
