"""Replay the fuzzing corpus, and fuzz every target a little on each run.

``tests/fuzz_corpus/<target>/`` holds what ``python bench/fuzz.py`` kept: inputs that crashed,
were slow, or showed a new kind of outcome (``crash-*``, ``slow-*``, ``new-*``), and one
hand-made reproducer per bug it found (``bug-*``, written by ``--write-regressions``). Every
file must run through its target (bench/fuzz.py ``load_targets``: the same code as the
benchmark) without an exception other than the target's documented ones, keep the target's
properties (canonicalize idempotent, the link cap bounding the work per page...), and finish
within ``BUDGET_S``. A bug not fixed yet is a strict xfail listed in ``KNOWN_BUGS``: once it is
fixed the test says XPASS(strict) and fails, so delete its entry (the file then stays as a
plain regression test).
"""

from __future__ import annotations

import importlib.util
import random
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType, ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent


def _load_bench_fuzz() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "politecrawl_bench_fuzz", ROOT / "bench" / "fuzz.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


fuzz = _load_bench_fuzz()
TARGETS = fuzz.load_targets()

BUDGET_S = 2.0  # per input, generous: the slowest corpus file takes ~0.1 s here
BUG_BUDGET_S = 0.5  # known slow bugs take 1.3-5 s today: stop them early, the xfail is certain

BUGS: dict[str, str] = {
    "retry-after-digits": (
        "outcome.retry_after_s: str.isdigit() accepts '²', '⑨'..., then float() raises "
        "ValueError; fix: `if value.isascii() and value.isdigit()`"
    ),
    "retry-after-year": (
        "outcome.retry_after_s: email.utils.parsedate_to_datetime raises OverflowError on a "
        "huge year; fix: also catch OverflowError (and around when.timestamp())"
    ),
    "sitemap-encoding": (
        "sitemaps.parse_sitemap: expat raises LookupError for <?xml encoding='latin-9'?> and "
        "ValueError for a multi-byte one (Shift_JIS, EUC-JP, GB18030, Big5); fix: catch "
        "(LookupError, ValueError) around Parse in _Collector.parse_xml, then parse again "
        "with ParserCreate(encoding='utf-8') or decode with the declared codec first"
    ),
    "long-host": (
        "urls.canonicalize: IDNA on a host of any length, ~16 us/char (one href in a 2 MiB "
        "page can cost ~30 s); fix: refuse a raw host > 1024 chars (and any URL > 64 KiB) "
        "before IDNA and percent-encoding"
    ),
    "long-href": (
        "urls.join: percent-encoding of a path of any length, ~1.5 us/byte; fix: refuse "
        "hrefs > 64 KiB (the trap limit drops URLs > 2048 anyway)"
    ),
    "x-robots-items": (
        "page_directives.from_x_robots_tag: ~0.6 us per comma item, unbounded (1.3 s within "
        "fetch's header caps, on the event loop); fix: skip empty items and read at most the "
        "first few KiB / 100 items of each value"
    ),
    "link-cap": (
        "parse.parse_page: the 10,000-link cap counts unique links, so a page of duplicate "
        "or unjoinable hrefs joins every one (~1.5 s for 2 MiB); fix: cap the anchors "
        "examined (e.g. 2 x _MAX_LINKS) and record the rest in links_cut"
    ),
}
"""Bugs bench/fuzz.py found, kept as the record of what each ``bug-*`` reproducer shows. All
are fixed today; a new one is added here and to ``KNOWN_BUGS`` until it is."""

KNOWN_BUGS: dict[str, str] = {}
"""Corpus file -> the bug it shows (a key of ``BUGS``)."""

# Failure classes (bench/fuzz.py _failure_class, line numbers left out) of the bugs above, so
# the small fuzz run below does not fail on what is already known.
KNOWN_FAILURES: dict[str, tuple[str, ...]] = {}


class _OverBudget(BaseException):  # not swallowed by a target's broad except
    pass


def _alarm(_sig: int, _frame: FrameType | None) -> None:
    raise _OverBudget


@contextmanager
def budget(seconds: float) -> Iterator[None]:
    """Fail the input once it runs longer than ``seconds`` (so a regression cannot hang CI)."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_bounded(run: Callable[[bytes], str], data: bytes, seconds: float) -> float:
    t0 = time.perf_counter()
    over = False
    try:
        with budget(seconds):
            run(data)
    except _OverBudget:
        over = True  # fail outside the handler: the interrupted frames stay out of the report
    if over:
        pytest.fail(f"input of {len(data)} bytes still running after {seconds} s", pytrace=False)
    return time.perf_counter() - t0


def _corpus() -> list[pytest.param]:
    params = []
    for folder in sorted(p for p in fuzz.CORPUS.iterdir() if p.is_dir()):
        for path in fuzz.corpus_files(folder.name):
            key = f"{folder.name}/{path.name}"
            marks = []
            if key in KNOWN_BUGS:
                marks.append(pytest.mark.xfail(strict=True, reason=BUGS[KNOWN_BUGS[key]]))
            params.append(pytest.param(folder.name, path, id=key, marks=marks))
    return params


def test_corpus_is_small_and_known() -> None:
    files = [p for p in fuzz.CORPUS.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 2 * 1024 * 1024
    assert {p.parent.name for p in files} <= set(TARGETS)
    for key, bug in KNOWN_BUGS.items():  # an entry whose file is gone is stale
        assert (fuzz.CORPUS / key).is_file(), key
        assert bug in BUGS, key


@pytest.mark.parametrize(("name", "path"), _corpus())
def test_corpus_replays(name: str, path: Path) -> None:
    key = f"{name}/{path.name}"
    seconds = BUG_BUDGET_S if key in KNOWN_BUGS else BUDGET_S
    run_bounded(TARGETS[name].run, fuzz.read_corpus_file(path), seconds)


def test_regression_files_match_their_builders() -> None:
    """bug-* files are what ``bench/fuzz.py --write-regressions`` writes."""
    for rel, data in fuzz.regressions().items():
        path = fuzz.CORPUS / rel
        path = path if path.exists() else path.with_name(path.name + ".gz")
        assert fuzz.read_corpus_file(path) == data, rel


def _known(name: str, exc: BaseException) -> bool:
    kind = fuzz._failure_class(exc)
    return any(kind.startswith(k) for k in KNOWN_FAILURES.get(name, ()))


def _inputs(target: object) -> st.SearchStrategy[bytes]:
    t = target
    seeded = st.integers(0, 2**32 - 1).map(random.Random)  # the grammar's own distribution
    grammar = seeded.map(t.gen)  # type: ignore[attr-defined]
    mutated = seeded.map(lambda rng: fuzz.mutate(rng, t.gen(rng), t.tokens, t.seeds))  # type: ignore[attr-defined]
    return st.one_of(grammar, mutated, st.binary(max_size=512), st.sampled_from(t.seeds))  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzz_a_little(name: str) -> None:
    target = TARGETS[name]

    @settings(
        max_examples=100,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(_inputs(target))
    def one(data: bytes) -> None:
        try:
            run_bounded(target.run, data, BUDGET_S)
        except Exception as exc:
            if not _known(name, exc):
                raise

    one()
