"""Content fingerprints: is this page the same as one already fetched, exactly or nearly?

Two fingerprints of a page's visible text (``Page.visible_text``: ``parse.visible_text``):

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

How ``simhash`` is computed, with numpy (the only reason this module needs it): the text is
lower-cased and UTF-8 encoded once, and everything after that is a handful of whole-array
operations, no Python code per word or per shingle. A 256-byte table marks separators and
folds digits; a word's hash is the polynomial ``sum(c[i] * B**-i)`` of its bytes mod 2**64
(``B`` odd, so invertible), read off one prefix sum over all word bytes as
``(P[end] - P[start]) * B**start``, then MurmurHash3's ``fmix64``; a shingle's hash is
``fmix64`` of ``(w0 * M + w1) * M + w2``; sorting gives the distinct shingles; the 64 bit
counts are summed in byte lanes (``_majority_bits``). Month and day names are found by their
hashes. The values are those of ``SIMHASH_VERSION`` 2 (golden-value tests guard them);
version 1 (blake2b per word, CPython's tuple hash per shingle) gave other values for the same
text, so ``continuity`` drops fingerprints stored under another version instead of comparing
them. The near-duplicate behaviour is that of any good 64-bit hash: re-measured with
``bench/dedup.py`` and, over 23,626 docstrings of the installed packages, no pair within 3 bits
whose trigram Jaccard is below 0.5 (none with version 1 either); how many of the pairs above
0.9 land within 3 bits swings with the hash constants (88 to 209 of 450 over four seeds of
version 1, 94 to 134 over four of version 2), not with the version.

Cost, CPU time on this shared 2-core machine, old (version 1, pure Python) against new:
1.8-2.0 ms against 0.41-0.45 ms for a page of the Python documentation (the python3.11-doc
package's 530 pages, 3,331 words of visible text on average); 1.4-1.6 ms against 0.33-0.36
ms over the 9,121 HTML files under /usr/share/doc (2,543 words); 0.56-0.62 ms against
0.15-0.16 ms for a page of ``bench/throughput.py --rich``'s web (1,233 words), whose crawl
went from 2.40-2.86 to 2.07-2.58 CPU-s per 1,000 pages (four runs each) and its dedup stage
from 27% to 18% of the CPU. The new one has a fixed cost of ~40 µs (about 35 numpy calls),
so below ~100 words it is slower: 41 against 20 µs for 36 words. Importing numpy costs a
process about 0.1 CPU-s once, and that crawl's peak RSS went from 77 to 90 MiB. The powers
of ``B`` are kept for the longest text seen, 16 bytes per byte of text (at most ~13 MB for
the 200,000-character cap of ``parse.visible_text``). ``exact_fingerprint`` (not on the
crawl's path: the payload digest is) 0.2-0.4 ms per 10 KB. ``NearDupIndex`` at 2 million
entries: ~35 µs a lookup, 160 MiB.
"""

from __future__ import annotations

import hashlib
from array import array
from typing import Any

import numpy as np
import numpy.typing as npt

from politecrawl.errors import ConfigError, StateError

__all__ = [
    "DEFAULT_MAX_DISTANCE",
    "DEFAULT_SHINGLE",
    "SIMHASH_VERSION",
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
SIMHASH_VERSION = 2
"""Changes whenever ``simhash`` gives other values: fingerprints stored under another version
must not be compared with new ones (``continuity`` drops them)."""


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
# Unicode spaces and punctuation that would otherwise glue words together (no-break and thin
# spaces, dashes, curly quotes, ellipsis, middle dot, CJK comma and full stop): replaced in the
# str, one C-speed search each (none at all for those above the text's widest character)
_UNICODE_SEPARATORS = (
    "\u00a0\u00ab\u00bb\u00b7\u2013\u2014\u2018\u2019\u201c\u201d\u2026\u2009\u202f"
    "\u3000\u3001\u3002\uff0c\uff0e"
)
# Month and weekday names read as a number too, so "Updated Monday 3 March" and "Updated
# Tuesday 4 March" are the same text to simhash (dates are the commonest changing detail).
_DATE_WORDS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday "
    "friday saturday sunday mon tue tues wed thu thur thurs fri sat sun"
)

U64Array = npt.NDArray[np.uint64]

# A word's hash: the polynomial sum(c[i] * B**-i) over its bytes, mod 2**64 (B odd, so
# invertible), from one prefix sum over the text's word bytes: with P[j] = sum(c[i] * B**-i
# for i < j), a word at [s, e) is (P[e] - P[s]) * B**s. Then MurmurHash3's 64-bit finaliser.
_BASE = 0x9E3779B97F4A7C15
_BASE_INV = pow(_BASE, -1, 1 << 64)
_MIX_1 = np.uint64(0xFF51AFD7ED558CCD)
_MIX_2 = np.uint64(0xC4CEB9FE1A85EC53)
_SHINGLE_MUL = np.uint64(0xD6E8FEB86659FD93)  # odd
_33 = np.uint64(33)
_48 = np.uint64(48)
_SPREAD = np.uint64(0x0101010101010101)  # bit 0 of each byte
_SHIFTS = np.arange(8, dtype=np.uint64).reshape(8, 1, 1)
_powers_kept: tuple[U64Array, U64Array] = (np.ones(1, np.uint64), np.ones(1, np.uint64))


def _powers(n: int) -> tuple[U64Array, U64Array]:
    """B**i and B**-i for i < n at least, kept for the longest text seen (8 bytes each per
    byte of text); replaced as one tuple, so a thread never sees half-made tables."""
    global _powers_kept
    if _powers_kept[0].size < n:
        size = -(-n // 65536) * 65536
        base = np.full(size, _BASE, np.uint64)
        inv = np.full(size, _BASE_INV, np.uint64)
        base[0] = inv[0] = 1
        np.multiply.accumulate(base, out=base)  # wraps mod 2**64, as intended
        np.multiply.accumulate(inv, out=inv)
        _powers_kept = (base, inv)
    return _powers_kept


def _mix(h: U64Array) -> None:
    """MurmurHash3's fmix64, in place: every input bit moves every output bit."""
    h ^= h >> _33
    h *= _MIX_1
    h ^= h >> _33
    h *= _MIX_2
    h ^= h >> _33


def _member(values: npt.NDArray[Any], table: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """Which of ``values`` are in the sorted array ``table`` (small: cheaper than np.isin)."""
    at = table.searchsorted(values)
    np.minimum(at, table.size - 1, out=at)
    return np.asarray(table[at] == values)


def _word_hashes(text: str, fold: bool) -> U64Array | None:
    """The hash of each word of ``text`` in order (None if it has none).

    Words are runs of letters and digits (any non-ASCII character but the separators counts as
    a letter), lower-cased. With ``fold`` digits read as "0" and a run of numbers with only
    separators between them ("1,234", "10:30", "3.5") as the single word "0"; month and day
    names hash like it, so "Tue 3 March 2024" and "Fri 17 May 2025" are the same four words.
    """
    if not text.isascii():  # (ASCII is lower-cased by the byte table)
        text = text.lower()
        for sep in _UNICODE_SEPARATORS:
            if sep in text:
                text = text.replace(sep, " ")
    data = text.encode("utf-8", "surrogatepass").translate(_TABLE_FOLD if fold else _TABLE_KEEP)
    buf = np.frombuffer(data, np.uint8)
    where = (buf != 0x20).nonzero()[0]
    if not where.size:
        return None
    chars = buf[where]
    starts_word = np.empty(where.size, np.bool_)
    starts_word[0] = True
    np.not_equal(where[1:], where[:-1] + 1, out=starts_word[1:])  # a separator before it
    if fold:
        digit = chars == 0x30
        joined = digit[1:] & digit[:-1]  # a digit after a digit, separators or not: one number
        if np.logical_or.reduce(joined):
            keep = np.empty(where.size, np.bool_)
            keep[0] = True
            np.logical_not(joined, out=keep[1:])
            chars, starts_word = chars[keep], starts_word[keep]
    n = chars.size
    pow_base, pow_inv = _powers(n)
    prefix = np.empty(n + 1, np.uint64)
    prefix[0] = 0
    (chars * pow_inv[:n]).cumsum(out=prefix[1:])
    starts = starts_word.nonzero()[0]
    ends = np.empty_like(starts)
    ends[:-1] = starts[1:]
    ends[-1] = n
    hashes = prefix[ends] - prefix[starts]
    hashes *= pow_base[starts]
    _mix(hashes)
    if fold:  # month and day names: the few whose top 16 bits match one's, then exactly
        maybe = _DATE_TOPS[hashes >> _48].nonzero()[0]
        if maybe.size:
            hashes[maybe[_member(hashes[maybe], _DATE_HASHES)]] = _NUMBER_HASH
    return hashes


def _hashes_of(words: str) -> U64Array:
    hashes = _word_hashes(words, fold=False)
    assert hashes is not None
    return hashes


_DATE_HASHES = np.unique(_hashes_of(_DATE_WORDS))
_DATE_TOPS = np.zeros(1 << 16, np.bool_)
_DATE_TOPS[_DATE_HASHES >> _48] = True
_NUMBER_HASH = _hashes_of("0")[0]


def simhash(text: str, *, shingle: int = DEFAULT_SHINGLE, digits: bool = False) -> int:
    """64-bit SimHash of ``text`` over ``shingle``-word shingles (0 for a text without words).

    A text shorter than one shingle is a single feature. ``digits=True`` keeps numbers and
    month/day names as they are (then a changed counter or date is a changed page).
    """
    if shingle < 1:
        raise ConfigError("shingle must be >= 1")
    words = _word_hashes(text, not digits)
    if words is None:
        return 0
    k = min(shingle, words.size)
    n = words.size - k + 1
    features = words[:n].copy()  # shingle (w0, w1, w2): mix((w0 * M + w1) * M + w2)
    for i in range(1, k):
        features *= _SHINGLE_MUL
        features += words[i : i + n]
    _mix(features)
    if n == 1:
        return int(features[0])
    # each distinct shingle votes once (see the module docstring for why not by frequency)
    features.sort()
    distinct = np.empty(n, np.bool_)
    distinct[0] = True
    np.not_equal(features[1:], features[:-1], out=distinct[1:])
    return _majority_bits(features[distinct])


def _majority_bits(features: U64Array) -> int:
    """Bit i of the result is set when more than half of ``features`` have bit i set.

    Counted in byte lanes: ``(f >> b) & 0x0101..01`` holds bit 8j+b of f in byte j, and 255
    of those summed as uint64 cannot carry from one byte into the next; so features go in
    rows of 255, each row is summed in 8 shifts, and the rows' bytes are summed.
    """
    n = features.size
    rows = -(-n // 255)
    padded = np.zeros((rows, 255), np.uint64)
    padded.reshape(-1)[:n] = features
    spread = padded >> _SHIFTS  # (8, rows, 255)
    spread &= _SPREAD
    lanes = np.add.reduce(spread, axis=2).astype("<u8", copy=False)  # (8, rows): in byte j,
    bytes_ = lanes.view(np.uint8).reshape(8, rows, 8)  # bit 8j+b's count in the row
    counts = np.add.reduce(bytes_, axis=1, dtype=np.uint32)  # [b, j]
    ones = 2 * counts.T.reshape(64) > n  # by bit number 8j+b
    return int.from_bytes(np.packbits(ones, bitorder="little").tobytes(), "little")


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
            raise StateError("unknown NearDupIndex state version")
        if int(state["max_distance"]) != self.max_distance:
            raise StateError("NearDupIndex state has a different max_distance")
        self._tables = [{} for _ in self._bands]
        self._fps = array("Q")
        self._docs = []
        self._ref = bytearray()
        self._hand = 0
        for fp_hex, doc in state["entries"]:
            if not isinstance(doc, str | int):
                raise StateError("NearDupIndex doc ids must be str or int")
            self.add(int(fp_hex, 16), doc)
