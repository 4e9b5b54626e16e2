"""The architecture's invariants that are about where code lives (docs/architecture.md)."""

from __future__ import annotations

import ast
import inspect
import re
import sys
from pathlib import Path

import pytest

import politecrawl
from politecrawl import errors

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_import_graph import cycles, import_graph  # the readers, tested there
from test_ip_rule import ip_gate_computed_outside

pytestmark = pytest.mark.unit

SRC = Path(politecrawl.__file__).parent
TURN_MODULES = (
    "engine/turn",
    "robots/gate",
    "engine/request",
    "engine/keep",
    "engine/journal",
    "engine/context",
    "engine/signals",
)


def _source(name: str) -> str:
    return (SRC / f"{name}.py").read_text(encoding="utf-8")


def _all_sources() -> dict[Path, str]:
    return {p: p.read_text(encoding="utf-8") for p in SRC.rglob("*.py")}


def test_the_engine_is_small_and_the_turn_reads_in_one_function() -> None:
    assert len(_source("engine/crawler").splitlines()) <= 400  # the loop, saving, limits
    for name in (*TURN_MODULES, "engine/outcome", "polite/politeness", "robots/cache"):
        assert len(_source(name).splitlines()) <= 600, name
    # the per-URL path names its steps in order
    from politecrawl.engine import turn
    step = inspect.getsource(turn._step)
    assert step.index("next_url(") < step.index("fetch_and_handle(")
    body = inspect.getsource(turn.fetch_and_handle)
    steps = ["fetch_page(", "classify_result(", "act(", "log_request(", "frontier.finish("]
    at = [body.index(name) for name in steps]
    assert at == sorted(at), dict(zip(steps, at, strict=True))
    take = inspect.getsource(turn.take_turn)
    assert take.index("_step(") < take.index("schedule_next(") < take.index("frontier.release(")


# (no data table is long enough to need it yet)
LONG_MODULES_EXEMPT: tuple[str, ...] = ()
MAX_MODULE_LINES = 600


def test_no_module_is_over_600_lines() -> None:
    """A module that long does several jobs: split it by job (a data table may be exempt,
    with its reason next to its name in ``LONG_MODULES_EXEMPT``)."""
    too_long = {}
    for path, text in _all_sources().items():
        name = path.relative_to(SRC).as_posix()
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES and name not in LONG_MODULES_EXEMPT:
            too_long[name] = lines
    assert not too_long, too_long


def test_one_exception_root_and_every_error_is_raised() -> None:
    declared = [
        c
        for c in vars(errors).values()
        if inspect.isclass(c) and issubclass(c, Exception) and c.__module__ == errors.__name__
    ]
    sources = "\n".join(s for p, s in _all_sources().items() if p.name != "errors.py")
    for cls in declared:
        assert issubclass(cls, errors.PolitecrawlError), cls
        if cls is errors.PolitecrawlError:
            continue
        raised = re.search(rf"raise {cls.__name__}\(|class \w+\({cls.__name__}\)", sources)
        assert raised, f"{cls.__name__} is declared but never raised"
    assert issubclass(errors.ConfigError, ValueError)


def test_constructors_refuse_user_input_with_config_error() -> None:
    """No ``raise ValueError`` for a bad argument: ConfigError (also a ValueError) instead.
    (net/coding's decoder, used by fetch, refuses a server's Content-Encoding, not a
    user's input: that error stays inside the fetch boundary and becomes a ``FetchResult``
    value.)"""
    for path, text in _all_sources().items():
        if path.relative_to(SRC).as_posix() == "net/coding.py":
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef) and node.name in ("__init__", "__post_init__"):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Raise) and isinstance(sub.exc, ast.Call):
                        func = sub.exc.func
                        assert not (isinstance(func, ast.Name) and func.id == "ValueError"), (
                            f"{path.name}:{sub.lineno}"
                        )


def test_politeness_arithmetic_lives_in_politeness() -> None:
    """No doubling, no Retry-After cap and no next-allowed time computed elsewhere."""
    for path, text in _all_sources().items():
        if path.name == "politeness.py" or path.parent.name == "frontier":
            continue
        assert not re.search(r"\b2(\.0)? \*\*", text), path.name
        assert not re.search(r"\.next_allowed\s*=[^=]", text), path.name
        assert not re.search(r"min\([^)]*max_retry_after_s", text), path.name


def test_robots_statuses_are_read_only_by_the_outcome_table() -> None:
    for name in (
        "robots/cache",
        "tools/robots_check",
        "robots/gate",
        "robots/hops",
        "engine/crawler",
        "engine/turn",
    ):
        text = _source(name)
        compares = r"\d{3}\s*<=?\s*[\w.]*status|status\s*(==|!=|<=?|>=?)\s*\d{3}"
        assert not re.search(compares, text), name


def test_test_webs_are_not_in_the_package() -> None:
    for name in ("hostileweb", "topicweb", "dupweb"):
        assert not (SRC / f"{name}.py").exists()
        assert (Path(__file__).parent / f"{name}.py").exists()
        for path, text in _all_sources().items():
            assert not re.search(rf"\b{name}\b", text), (name, path.name)


# The modules that stay at the top of the package: the public API's own names (config,
# options, errors, the page handler) and the entry points. Everything else lives in a
# sub-package named for its job (docs/architecture.md, "The map").
MAX_FLAT_MODULES = 12
# Sub-packages the map in docs/architecture.md names, each with a docstring saying its job.
PACKAGES = (
    "content", "continuity", "demo", "engine", "focus", "frontier", "net", "polite", "robots",
    "storage", "tools", "urls",
)  # fmt: skip


def test_the_folders_are_the_map() -> None:
    flat = sorted(p.name for p in SRC.glob("*.py"))
    assert len(flat) <= MAX_FLAT_MODULES, flat
    for name in PACKAGES:
        init = SRC / name / "__init__.py"
        assert init.exists(), name
        assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), name
    # no name prefix stands in for a folder: two flat modules sharing a prefix of 4+ letters
    stems = [Path(n).stem for n in flat if not n.startswith("_")]
    for a in stems:
        for b in stems:
            assert a == b or not b.startswith(a[: max(4, len(a))]), (a, b)
    architecture = (SRC.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    for name in PACKAGES:
        assert f"`{name}/`" in architecture, f"docs/architecture.md does not map {name}/"


def test_every_test_module_says_whether_it_is_unit_or_e2e() -> None:
    """``pytest -m unit`` is the inner loop: every test module declares its kind (the
    conftest refuses unmarked tests at collection; this names the module that forgot)."""
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        assert re.search(r"pytest\.mark\.(unit|e2e)\b", text), path.name



def test_no_import_cycle_in_the_package() -> None:
    """The import graph read from the ASTs (function-level and ``TYPE_CHECKING`` imports
    counted: a circle held apart that way is still a circle); the reader is tested in
    test_import_graph.py."""
    graph = import_graph()
    assert "politecrawl.engine.turn" in graph and "politecrawl.engine.context" in graph
    assert cycles(graph) == []


def test_only_politeness_computes_the_per_ip_gate() -> None:
    """What "computing the gate" means, and the check's own test: test_ip_rule.py."""
    assert ip_gate_computed_outside() == []
