"""Content fingerprints: is this page the same as one already fetched, exactly or nearly?

Two fingerprints of a page's visible text (``relevance.extract_document(...).text``):

* ``exact_fingerprint``: blake2b-128 of the text with whitespace collapsed and case folded.
  Equal means "the same text"; it changes when a single character does (a counter, a date).
* ``simhash``: a 64-bit SimHash (Charikar 2002; Manku et al., WWW 2007) over 3-word
  shingles. Similar texts get fingerprints a few bits apart, so "near-duplicate" means
  ``hamming(a, b) <= 3``. Unless ``digits=True`` a run of numbers ("1,234", "10:30") reads
  as the one word ``0`` and month and day names read as that word too, so a changed date,
  counter or price does not move the fingerprint at all.

  Weights: each distinct shingle votes once (the SimHash of the shingle *set*, an estimate of
  its Jaccard similarity, as in Broder's shingling). Term-frequency weights were measured and
  dropped: one shingle repeated many times (a table of numbers, all ``0 0 0``) outvotes the
  rest of the page; 14,561 different docstrings (installed packages) gave 117,093 pairs at
  distance 0 with them. Shingle size 3 was chosen on measurements: no pair within 3 bits
  among 20,000 different generated pages at 2, 3 or 4 words (none even within 8); among the
  14,561 docstrings, pairs within 3 bits whose word-trigram Jaccard is below 0.5 numbered 7
  at 2 words, 1 at 3 and 0 at 4, while smaller shingles find more edited copies (an edit
  touches fewer shingles; ``bench/dedup.py`` prints both).

``NearDupIndex`` finds a stored fingerprint within ``max_distance`` bits without scanning
them all: the 64 bits are cut into ``max_distance + 1`` bands and a fingerprint is filed
under each band's value; two fingerprints at most ``max_distance`` bits apart agree exactly on
at least one band (pigeonhole), so only the fingerprints sharing a band value are compared.

Cost on this 2-core machine (``bench/dedup.py``, CPU time while other benchmarks ran):
``simhash`` 1.0-1.4 ms per 10 KB of text (about 1,700 words), 0.15-0.35 ms for a typical
generated page (0.9-1.9 KB of text); ``exact_fingerprint`` 0.2-0.4 ms per 10 KB. How: words
by ``bytes.translate`` + ``split``; one blake2b per *new* word (cached); a shingle's hash is
CPython's tuple hash of its word hashes (xxHash-based, the same in every process since 3.8
because integer hashes are not salted; a golden-value test guards it); the 64 bit columns are
counted with ``int.bit_count`` on byte-sliced arrays rather than 64 Python additions per
shingle. ``NearDupIndex`` at 2 million entries: ~50 µs a lookup, 160 MiB.
"""

from __future__ import annotations

import hashlib
import re
from array import array
from typing import Any

from politecrawl.errors import ConfigError

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

    Unless ``keep_digits``, a run of numbers ("1,234", "10:30", "3.5") becomes the single word
    ``b"0"``; month and day names hash like it (``_word_hash``), so "Tue 3 March 2024" and
    "Fri 17 May 2025" are the same four words.
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
    return data.split()


_word_hashes: dict[bytes, int] = {}
_word_hashes_kept: dict[bytes, int] = {}


def _word_hash(word: bytes) -> int:
    """A stable 60-bit hash of a word (below 2**61 - 1, where ``hash(int)`` is the identity).

    Month and day names hash as the number word ``0`` (the digits-kept mode never sees
    them as such: its words are hashed by ``_word_hash_kept``).
    """
    if word in _DATE_WORDS:
        word = b"0"
    return _word_hash_kept(word)


def _word_hash_kept(word: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(word, digest_size=8).digest(), "little") >> 4


def _hash_words(words: list[bytes], fold: bool) -> list[int]:
    cache = _word_hashes if fold else _word_hashes_kept
    missing = [w for w in set(words) if w not in cache]
    if missing:
        if len(cache) + len(missing) > _WORD_CACHE_LIMIT:
            cache.clear()
            missing = list(set(words))
        hash_word = _word_hash if fold else _word_hash_kept
        for word in missing:
            cache[word] = hash_word(word)
    return list(map(cache.__getitem__, words))


def simhash(text: str, *, shingle: int = DEFAULT_SHINGLE, digits: bool = False) -> int:
    """64-bit SimHash of ``text`` over ``shingle``-word shingles (0 for a text without words).

    A text shorter than one shingle is a single feature. ``digits=True`` keeps numbers and
    month/day names as they are (then a changed counter or date is a changed page).
    """
    if shingle < 1:
        raise ConfigError("shingle must be >= 1")
    words = _words(text, digits)
    if not words:
        return 0
    ids = _hash_words(words, not digits)
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

    Bounded: at most ``capacity`` fingerprints; when full, the CLOCK approximation of LRU
    picks the one to drop (entries are slots in a ring; a lookup that finds an entry marks it
    used, and the hand sweeping the ring to free a slot spares marked entries once), so a
    long crawl keeps what is recent or still being hit. A lookup compares only entries that
    share a band value with the query: with 4 bands of 16 bits and 2 million random entries
    about 4 x 30 comparisons, however big the index.

    Memory: fingerprints in one ``array('Q')``, band buckets as ``array('I')`` of slot
    numbers, so about 8 + 4 x 4 bytes per entry, a pointer to the doc id (plus the doc id
    object) and ~17 MB of bucket headers when all 4 x 65,536 buckets exist: roughly 100 MB
    for 2 million entries with int doc ids (``bench/dedup.py`` measures it), against ~400 B an
    entry with dicts and lists of Python ints.
    """

    __slots__ = ("_bands", "_docs", "_fps", "_hand", "_ref", "_tables", "capacity", "max_distance")

    def __init__(self, max_distance: int = DEFAULT_MAX_DISTANCE, capacity: int = 2_000_000) -> None:
        if not 0 <= max_distance <= 15:
            raise ConfigError("max_distance must be in 0..15")
        if not 1 <= capacity < 2**32:
            raise ConfigError("capacity must be in 1..2**32-1")
        self.max_distance = max_distance
        self.capacity = capacity
        self._bands = _bands(max_distance)
        self._tables: list[dict[int, array[int]]] = [{} for _ in self._bands]
        self._fps: array[int] = array("Q")  # by slot
        self._docs: list[DocId] = []  # by slot
        self._ref = bytearray()  # by slot: found since the hand last passed
        self._hand = 0  # next slot the clock looks at once the ring is full

    def __len__(self) -> int:
        return len(self._fps)

    def __contains__(self, fp: object) -> bool:
        return isinstance(fp, int) and self._slot_of(fp & _MASK64) is not None

    def _slot_of(self, fp: int) -> int | None:
        """The slot holding exactly ``fp``, or None."""
        shift, mask = self._bands[0]
        bucket = self._tables[0].get((fp >> shift) & mask)
        if bucket is not None:
            fps = self._fps
            for slot in bucket:
                if fps[slot] == fp:
                    return slot
        return None

    def _candidates(self, fp: int) -> dict[int, int]:
        """Slot -> distance of every entry within ``max_distance`` bits."""
        fps = self._fps
        limit = self.max_distance
        found: dict[int, int] = {}
        for (shift, mask), table in zip(self._bands, self._tables, strict=True):
            bucket = table.get((fp >> shift) & mask)
            if bucket is None:
                continue
            for slot in bucket:
                d = (fps[slot] ^ fp).bit_count()
                if d <= limit:
                    found[slot] = d
        return found

    def nearest(self, fp: int) -> tuple[DocId, int] | None:
        """(doc id, distance) of the closest stored fingerprint within range, or None."""
        found = self._candidates(fp & _MASK64)
        if not found:
            return None
        slot = min(found, key=found.__getitem__)
        self._ref[slot] = 1
        return self._docs[slot], found[slot]

    def near(self, fp: int) -> list[tuple[DocId, int]]:
        """Every stored (doc id, distance) within ``max_distance`` bits, closest first.

        For diagnostics and measurements; does not mark entries as used.
        """
        found = self._candidates(fp & _MASK64)
        return sorted(((self._docs[s], d) for s, d in found.items()), key=lambda x: x[1])

    def find(self, fp: int) -> DocId | None:
        """The document of the closest fingerprint within ``max_distance`` bits, or None."""
        hit = self.nearest(fp)
        return None if hit is None else hit[0]

    def add(self, fp: int, doc_id: DocId) -> None:
        """File ``fp`` under ``doc_id``; an fp already present keeps its first document."""
        fp &= _MASK64
        slot = self._slot_of(fp)
        if slot is not None:
            self._ref[slot] = 1
            return
        if len(self._fps) < self.capacity:
            slot = len(self._fps)
            self._fps.append(fp)
            self._docs.append(doc_id)
            self._ref.append(0)
        else:
            slot = self._evict()
            self._fps[slot] = fp
            self._docs[slot] = doc_id
        for (shift, mask), table in zip(self._bands, self._tables, strict=True):
            key = (fp >> shift) & mask
            bucket = table.get(key)
            if bucket is None:
                table[key] = array("I", (slot,))
            else:
                bucket.append(slot)

    def find_or_add(self, fp: int, doc_id: DocId) -> DocId | None:
        """The near-duplicate's document if there is one; otherwise file ``fp`` and say None.

        The one call per fetched page: a near-duplicate is not filed, so the index keeps the
        first member of each cluster and clusters do not creep.
        """
        doc = self.find(fp)
        if doc is None:
            self.add(fp, doc_id)
        return doc

    def _evict(self) -> int:
        """Free the slot the clock hand settles on (the first not used since its last pass)."""
        ref = self._ref
        hand = self._hand
        while ref[hand]:
            ref[hand] = 0
            hand = (hand + 1) % self.capacity
        self._hand = (hand + 1) % self.capacity
        old = self._fps[hand]
        for (shift, mask), table in zip(self._bands, self._tables, strict=True):
            key = (old >> shift) & mask
            bucket = table[key]
            bucket.remove(hand)
            if not bucket:
                del table[key]
        return hand

    def _order(self) -> list[int]:
        """Slots from the next to be considered for eviction to the newest."""
        n = len(self._fps)
        if n < self.capacity:
            return list(range(n))
        return [(self._hand + i) % n for i in range(n)]

    def state_dict(self) -> dict[str, Any]:
        """JSON-ready state: entries oldest first, fingerprints as 16 hex digits."""
        return {
            "version": 1,
            "max_distance": self.max_distance,
            "capacity": self.capacity,
            "entries": [[f"{self._fps[s]:016x}", self._docs[s]] for s in self._order()],
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """Replace the contents with a ``state_dict``'s; the band layout must match."""
        if state.get("version") != 1:
            raise ValueError("unknown NearDupIndex state version")
        if int(state["max_distance"]) != self.max_distance:
            raise ValueError("NearDupIndex state has a different max_distance")
        self._tables = [{} for _ in self._bands]
        self._fps = array("Q")
        self._docs = []
        self._ref = bytearray()
        self._hand = 0
        for fp_hex, doc in state["entries"]:
            if not isinstance(doc, str | int):
                raise ValueError("NearDupIndex doc ids must be str or int")
            self.add(int(fp_hex, 16), doc)
