"""Every error politecrawl raises is a ``PolitecrawlError`` (a leaf may also be the stdlib or
library type its callers catch, as aiohttp's are); a broad ``except Exception`` (or
``BaseException``) says why, on its line or the first line of its block.

Read from the ASTs of src/politecrawl: each ``raise C(...)`` / ``raise C`` whose ``C`` names a
class in its module (resolved by importing the module) is checked. Re-raises and raises of a
caught or stored exception object (``raise``, ``raise exc``, ``raise self.fail(...)``) are not
new errors and are left alone; ``SystemExit`` is an exit, not an error.
"""

from __future__ import annotations

import ast
import builtins
import importlib
from pathlib import Path
from typing import Any

import pytest

import politecrawl
from politecrawl.errors import PolitecrawlError

pytestmark = pytest.mark.unit

SRC = Path(politecrawl.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(expr: ast.expr, namespace: dict[str, Any]) -> object:
    if isinstance(expr, ast.Name):
        return namespace.get(expr.id, getattr(builtins, expr.id, None))
    if isinstance(expr, ast.Attribute):
        base = _resolve(expr.value, namespace)
        return getattr(base, expr.attr, None) if base is not None else None
    return None


def raises_outside_the_root(src: Path = SRC) -> list[str]:
    """``path:line: Class`` for each raise of a class not under ``PolitecrawlError``."""
    found = []
    for path in sorted(src.rglob("*.py")):
        if path.name == "__main__.py":
            continue  # (importing it runs the command line)
        namespace = vars(importlib.import_module(_module_name(path)))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            cls = _resolve(target, namespace)
            if not isinstance(cls, type) or issubclass(cls, SystemExit):
                continue
            if not issubclass(cls, PolitecrawlError):
                rel = path.relative_to(src).as_posix()
                found.append(f"{rel}:{node.lineno}: {cls.__name__}")
    return found


def silent_broad_catches(src: Path = SRC) -> list[str]:
    """``path:line`` for each ``except Exception``/``BaseException`` with no comment saying why
    (on the ``except`` line, or down to the first statement of its block)."""
    found = []
    for path in sorted(src.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, ast.ExceptHandler):
                continue
            names = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
            if not any(isinstance(n, ast.Name) and n.id in ("Exception", "BaseException")
                       for n in names):  # fmt: skip
                continue
            said = lines[node.lineno - 1 : node.body[0].lineno]  # (comments above it too)
            if not any("#" in line for line in said):
                found.append(f"{path.relative_to(src).as_posix()}:{node.lineno}")
    return found


def test_every_raise_is_under_the_one_root() -> None:
    assert raises_outside_the_root() == []


def test_every_broad_catch_says_why() -> None:
    assert silent_broad_catches() == []


def test_the_leaves_are_also_what_their_callers_catch() -> None:
    """The types callers and libraries catch still catch them (argparse, redis-py, asyncio's
    resolver contract, ``except ValueError`` around a saved state)."""
    import argparse

    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    from politecrawl import errors, options
    from politecrawl.frontier.redis import batch
    from politecrawl.net import coding, resolver

    assert issubclass(errors.StateError, ValueError)
    assert issubclass(errors.HandlerError, TypeError)
    assert issubclass(coding.BadContentCoding, errors.FetchError)
    assert issubclass(coding.BadContentCoding, ValueError)
    assert issubclass(resolver.Refused, errors.AddressRefused)
    assert issubclass(resolver.Refused, OSError)
    assert issubclass(batch.ConnectionLost, errors.FrontierError)
    assert issubclass(batch.ConnectionLost, RedisConnectionError)
    assert issubclass(batch.NoReply, RedisTimeoutError)
    with pytest.raises(argparse.ArgumentTypeError, match="need seconds"):
        options.gap_or_off("soon")
    with pytest.raises(coding.BadContentCoding):
        coding.Decoder("zstd-ish", 100)


def test_the_check_finds_a_plain_raise_and_a_silent_catch(tmp_path: Path) -> None:
    pkg = tmp_path / "politecrawl"
    pkg.mkdir()
    (pkg / "bad.py").write_text(
        "def f():\n    try:\n        g()\n    except Exception:\n        pass\n"
    )
    assert silent_broad_catches(pkg) == ["bad.py:4"]
