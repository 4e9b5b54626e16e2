"""The import graph of src/politecrawl has no cycle (issue 27: "no import circle in the engine").

The graph is built from the ASTs, not the source text: every ``import`` and ``from ... import``
anywhere in a module counts, at module level, inside a function, or under ``TYPE_CHECKING``
(an import held apart that way is still a dependency: the circle is only hidden). An edge goes
to the module named, or to the sub-module when ``from package import name`` names one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import politecrawl

pytestmark = pytest.mark.unit

SRC = Path(politecrawl.__file__).parent


def _modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package at ``root``."""
    mods: dict[str, Path] = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def _owner(name: str, mods: dict[str, Path]) -> str | None:
    """The module a dotted name lives in (the longest prefix that is a module)."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(root: Path = SRC) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (every import statement in its AST)."""
    mods = _modules(root)
    top = root.name
    graph: dict[str, set[str]] = {}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        deps: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(_owner(a.name, mods) for a in node.names if a.name.split(".")[0] == top)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, *([base] if base else [])])
                if base.split(".")[0] != top:
                    continue
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    deps.add(sub if sub in mods else _owner(base, mods))
        graph[mod] = {d for d in deps if d is not None and d != mod}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_graph_reader_sees_hidden_imports(tmp_path: Path) -> None:
    """A circle held apart by a function-level or TYPE_CHECKING import is still a circle."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub import b\n"
    )
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..c import x\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    (pkg / "d.py").write_text("from pkg import c\n")
    graph = import_graph(pkg)
    assert graph["pkg.a"] == {"pkg.sub.b"}
    assert graph["pkg.sub.b"] == {"pkg.c"}
    assert graph["pkg.d"] == {"pkg.c"}
    assert cycles(graph) == [["pkg.a", "pkg.c", "pkg.sub.b"]]
