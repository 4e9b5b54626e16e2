"""fingerprint: exact and near-duplicate fingerprints, and the banded near-duplicate index."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from topicweb import TopicWeb

from politecrawl.continuity import fingerprint
from politecrawl.continuity.fingerprint import (
    NearDupIndex,
    exact_fingerprint,
    hamming,
    normalise_text,
    simhash,
    to_signed64,
    to_unsigned64,
)
from politecrawl.focus.relevance import extract_document

fp64 = st.integers(min_value=0, max_value=2**64 - 1)
TEXT = "The quick brown fox jumps over the lazy dog near the river bank"


def flip(fp: int, bits: list[int]) -> int:
    for b in bits:
        fp ^= 1 << b
    return fp


@pytest.mark.unit
def test_exact_fingerprint_normalises_whitespace_and_case() -> None:
    a = exact_fingerprint("Hello  World\n")
    assert a == exact_fingerprint(" hello world") == exact_fingerprint("HELLO\tWORLD")
    assert len(a) == 32 and int(a, 16) >= 0
    assert a != exact_fingerprint("Hello World!")
    assert exact_fingerprint("12 views") != exact_fingerprint("13 views")  # exact is exact
    assert normalise_text("  Straße\u00a0X ") == "strasse x"


@pytest.mark.unit
def test_simhash_golden_values() -> None:
    """Fingerprints are persisted: they must not change between runs or versions unnoticed.
    New values here need a new ``SIMHASH_VERSION`` (continuity drops the old ones)."""
    assert fingerprint.SIMHASH_VERSION == 2
    assert simhash(TEXT) == 0x3C7A50136A72B2FA
    assert simhash(TEXT, shingle=1) == 0x2E8AAAE86EC1A958
    assert simhash("fox") == 0x670FBAD268F52B34  # shorter than a shingle: one feature
    assert simhash("Über straße\u00a0café — naïve 3 März 2024") == 0xF0A8BFA2A08C4EB7
    assert simhash("") == simhash("  ,;  ") == 0


@pytest.mark.e2e
def test_simhash_same_in_every_process() -> None:
    """str hashes are salted per process; simhash must not depend on them."""
    code = (  # the module alone: importing the package would pull in aiohttp and friends
        "import importlib.util as u; s = u.spec_from_file_location('fp', "
        f"{fingerprint.__file__!r}); m = u.module_from_spec(s); s.loader.exec_module(m); "
        f"print(m.simhash({TEXT!r}))"
    )
    for seed in ("1", "987654"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout  # fmt: skip
        assert int(out) == simhash(TEXT)


@pytest.mark.unit
def test_simhash_ignores_numbers_dates_and_case_unless_asked() -> None:
    body = " ".join(f"word{i} and more text about things" for i in range(40))
    a = f"Updated Monday 3 March 2024. {body} 1,234 readers."
    b = f"updated tuesday 17 sep 2025. {body} 98,765 READERS."
    assert simhash(a) == simhash(b)
    assert hamming(simhash(a, digits=True), simhash(b, digits=True)) > 0
    with pytest.raises(ValueError):
        simhash(a, shingle=0)


@pytest.mark.unit
def test_simhash_distinct_pages_far_apart_and_small_edits_near() -> None:
    tw = TopicWeb(n_hosts=60, pages_per_host=5, seed=2, port=8000)
    texts = []
    for h in tw.hosts[:40]:
        url = tw.page_url(h.index, 1)
        texts.append(extract_document(tw.page(url) or b"", url, "text/html").text)
    fps = [simhash(t) for t in texts]
    closest = min(hamming(a, b) for i, a in enumerate(fps) for b in fps[i + 1 :])
    assert closest > 6
    long_text = " ".join(texts[:4])
    assert simhash(long_text + " 17 comments") == simhash(long_text + " 2,041 Comments!")
    one_word = long_text.replace(" the ", " a ", 1)
    assert one_word != long_text and hamming(simhash(long_text), simhash(one_word)) <= 6


_DATE_TEXT = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday "
    "friday saturday sunday mon tue tues wed thu thur thurs fri sat sun"
)
_DATES = frozenset(_DATE_TEXT.split())  # month and day names: read as numbers


@pytest.mark.unit
@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(alphabet="abcdeXYZ019", min_size=1, max_size=6), max_size=40),
    st.sampled_from([" ", "  ", "\n", " \t ", "\u00a0", " \u2014 ", "\u3001"]),
    st.integers(1, 5),
)
def test_simhash_properties(words: list[str], sep: str, k: int) -> None:
    text = " ".join(words)
    fp = simhash(text, shingle=k)
    assert 0 <= fp < 2**64
    assert simhash(sep.join(words).upper(), shingle=k) == fp  # spacing and case do not count
    other_numbers = text.translate(str.maketrans("019", "752"))
    assert simhash(other_numbers, shingle=k) == fp  # numbers are all alike
    if not any(c.isdigit() for c in text) and not _DATES & set(text.lower().split()):
        assert simhash(text, shingle=k, digits=True) == fp  # no numbers: keeping them is moot


_SEPARATORS = (
    "\u00a0\u00ab\u00bb\u00b7\u2013\u2014\u2018\u2019\u201c\u201d\u2026\u2009\u202f"
    "\u3000\u3001\u3002\uff0c\uff0e"
)


def reference_words(text: str, fold: bool) -> list[str]:
    """The documented word rules, written plainly: lower case; the Unicode separators and
    every ASCII character but letters and digits separate words (other non-ASCII characters,
    an em space too, are letters); with ``fold`` digits are "0", numbers with only separators
    between them are one "0", and month and day names are "0" too."""
    text = text.lower()
    for sep in _SEPARATORS:
        text = text.replace(sep, " ")
    text = "".join(c if not c.isascii() or c.isalnum() else " " for c in text)
    if fold:
        text = re.sub("0[0 ]*0|0", "0", re.sub("[0-9]", "0", text))
    words = [w for w in text.split(" ") if w]
    return ["0" if fold and w in _DATES else w for w in words]


_PIECES = st.one_of(
    st.text(alphabet=list("aZéÜßİ0123 ,.:-\t\n\u2003") + list(_SEPARATORS), max_size=8),
    st.sampled_from(["March", "mon", "SEPT", "Tuesday", "1,234", "10:30", "3.5", "marches"]),
)


@pytest.mark.unit
@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=30), st.booleans())
def test_words_follow_the_documented_rules(pieces: list[str], fold: bool) -> None:
    """Each word's hash is the hash of that word alone (wherever it sits in the text: the
    prefix-sum arithmetic), and the words are the reference rules' words."""
    text = "".join(pieces)
    words = reference_words(text, fold)
    got = fingerprint._word_hashes(text, fold)
    if not words:
        assert got is None
        return
    assert got is not None
    alone = [int(fingerprint._hashes_of(w)[0]) for w in words]
    assert [int(h) for h in got] == alone


@pytest.mark.unit
def test_word_hashes_do_not_depend_on_position() -> None:
    """Past 65,536 bytes the tables of powers grow; a word hashes the same anywhere."""
    tail = "needle Ünïcode words 42"
    for filler in (1, 12_000, 30_000):  # 7 bytes each: up to 210 KB
        got = fingerprint._word_hashes("filler " * filler + tail, fold=True)
        assert got is not None and got.size == filler + 4
        assert list(got[-4:]) == list(fingerprint._word_hashes(tail, fold=True))


def _vocabulary() -> list[str]:
    rng = random.Random(0)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return sorted({"".join(rng.choices(letters, k=rng.randint(2, 9))) for _ in range(20_000)})


VOCAB = _vocabulary()


@pytest.mark.unit
def test_one_word_edits_stay_near_and_unrelated_texts_far() -> None:
    """Measured, not assumed (seeded, so reproducible): replacing one word of 1,000 moves 3
    of ~1,000 shingles, which by the binomial spread of the 64 bit counts flips about 1.5
    bits on average (4% beyond 3); unrelated texts sit about 32 bits apart."""
    rng = random.Random(5)
    moved = []
    for _ in range(300):
        words = rng.choices(VOCAB, k=1000)
        edited = list(words)
        edited[rng.randrange(len(words))] = rng.choice(VOCAB)
        moved.append(hamming(simhash(" ".join(words)), simhash(" ".join(edited))))
    assert sum(moved) / len(moved) <= 2.0
    assert sum(d <= 3 for d in moved) >= 0.85 * len(moved)
    fps = [simhash(" ".join(rng.choices(VOCAB, k=rng.randint(50, 400)))) for _ in range(300)]
    apart = [hamming(a, b) for i, a in enumerate(fps) for b in fps[i + 1 :]]
    assert min(apart) > 8
    assert 30 <= sum(apart) / len(apart) <= 34


@pytest.mark.unit
@settings(max_examples=100, deadline=None)
@given(st.data())
def test_unrelated_texts_are_not_near_duplicates(data: st.DataObject) -> None:
    """Two texts of different words (50+ each): 64 independent coin flips apart, so within
    3 bits with probability ~2e-15."""
    picks = st.lists(st.integers(0, len(VOCAB) // 2 - 1), min_size=50, max_size=300)
    a = [VOCAB[i] for i in data.draw(picks)]
    b = [VOCAB[len(VOCAB) // 2 + i] for i in data.draw(picks)]
    assert hamming(simhash(" ".join(a)), simhash(" ".join(b))) > 3


@pytest.mark.unit
@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from(VOCAB[:50]), min_size=3, max_size=20),
    st.lists(st.sampled_from(VOCAB[:50]), min_size=1, max_size=6),
    st.lists(st.sampled_from(VOCAB[:50]), min_size=3, max_size=20),
    st.integers(4, 40),
)
def test_each_distinct_shingle_votes_once(
    before: list[str], block: list[str], after: list[str], times: int
) -> None:
    """A block repeated 3 times already holds every shingle that repeating it more gives, so
    40 repeats give the same set of shingles and the same fingerprint (a table of numbers
    cannot outvote the rest of the page); frequency weights would move it."""
    thrice = " ".join(before + block * 3 + after)
    often = " ".join(before + block * times + after)
    assert simhash(often) == simhash(thrice)
    assert simhash(often, shingle=2) == simhash(thrice, shingle=2)


@pytest.mark.unit
@given(fp64, fp64, fp64)
def test_hamming_is_a_metric(a: int, b: int, c: int) -> None:
    assert hamming(a, a) == 0
    assert hamming(a, b) == hamming(b, a) == (a ^ b).bit_count()
    assert 0 <= hamming(a, b) <= 64
    assert hamming(a, c) <= hamming(a, b) + hamming(b, c)


@pytest.mark.unit
@given(fp64)
def test_signed_round_trip(a: int) -> None:
    s = to_signed64(a)
    assert -(2**63) <= s < 2**63
    assert to_unsigned64(s) == a


@pytest.mark.unit
@settings(max_examples=200, deadline=None)
@given(
    fp64,
    st.lists(st.integers(0, 63), max_size=3, unique=True),
    st.lists(fp64, max_size=50),
)
def test_index_finds_everything_within_three_bits(
    fp: int, bits: list[int], others: list[int]
) -> None:
    index = NearDupIndex(3)
    query = flip(fp, bits)
    for i, o in enumerate(others):
        if hamming(o, query) > 3:  # keep the answer unique
            index.add(o, i)
    index.add(fp, "target")
    assert index.find(query) == "target"
    assert index.near(query) == [("target", len(bits))]


@pytest.mark.unit
@settings(max_examples=200, deadline=None)
@given(st.integers(0, 7), fp64, st.data())
def test_banding_finds_within_any_max_distance(d: int, fp: int, data: st.DataObject) -> None:
    bits = data.draw(st.lists(st.integers(0, 63), max_size=d, unique=True))
    index = NearDupIndex(d)
    index.add(fp, 1)
    assert index.nearest(flip(fp, bits)) == (1, len(bits))


@pytest.mark.unit
@settings(max_examples=100, deadline=None)
@given(st.lists(fp64, min_size=1, max_size=60), fp64)
def test_index_agrees_with_brute_force(stored: list[int], query: int) -> None:
    index = NearDupIndex(3)
    for i, s in enumerate(stored):
        index.add(s, i)
    first: dict[int, int] = {}
    for i, s in enumerate(stored):
        first.setdefault(s, i)
    truth = {i: hamming(s, query) for s, i in first.items() if hamming(s, query) <= 3}
    got = index.nearest(query)
    if not truth:
        assert got is None
    else:
        assert got is not None and got[1] == min(truth.values()) and truth[int(got[0])] == got[1]
    assert sorted(index.near(query)) == sorted(truth.items())


@pytest.mark.unit
def test_index_is_sublinear_and_lru_bounded() -> None:
    rng = random.Random(1)
    index = NearDupIndex(3, capacity=3)
    a, b, c, d = (rng.getrandbits(64) for _ in range(4))
    index.add(a, "a")
    index.add(b, "b")
    index.add(c, "c")
    assert index.find(flip(a, [5])) == "a"  # a is now the most recently used
    index.add(d, "d")  # evicts b, the least recently used
    assert len(index) == 3 and b not in index
    assert index.find(b) is None and index.find(a) == "a"
    index.add(a, "again")  # a known fingerprint keeps its first document
    assert index.find(a) == "a"
    assert index.find_or_add(flip(c, [0, 1]), "c2") == "c"
    assert index.find_or_add(rng.getrandbits(64), "e") is None and len(index) == 3
    big = NearDupIndex(3)
    for i in range(20_000):
        big.add(rng.getrandbits(64), i)
    sizes = [len(bucket) for table in big._tables for bucket in table.values()]
    assert max(sizes) < 20  # a lookup compares a handful, not 20,000
    with pytest.raises(ValueError):
        NearDupIndex(16)
    with pytest.raises(ValueError):
        NearDupIndex(3, capacity=0)


@pytest.mark.unit
def test_index_state_round_trip() -> None:
    rng = random.Random(2)
    index = NearDupIndex(3, capacity=100)
    fps = [rng.getrandbits(64) for _ in range(50)]
    for i, fp in enumerate(fps):
        index.add(fp, f"http://a.example/{i}" if i % 2 else i)
    state = json.loads(json.dumps(index.state_dict()))
    again = NearDupIndex(3, capacity=100)
    again.load_state(state)
    assert len(again) == 50
    for fp in fps:
        assert again.find(flip(fp, [7])) == index.find(flip(fp, [7]))
    assert list(again._docs) == list(index._docs)  # LRU order kept
    with pytest.raises(ValueError):
        NearDupIndex(2).load_state(state)
    with pytest.raises(ValueError):
        again.load_state({"version": 9})
