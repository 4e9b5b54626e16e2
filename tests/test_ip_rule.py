"""One server, many names: the per-IP rule is computed in one place (``polite/politeness.py``).

What "computing the per-IP gate" means here, and what ``ip_gate_computed_outside`` checks:

1. the verdict for a due key (take its IP now, wait in the IP's line, wait for the IP's time)
   and the times (an IP's next time, when a key called from the line may go) come from
   ``politeness.ip_gate`` / ``ip_free_at`` / ``ip_called_at`` / ``released_soonest``, defined
   in ``polite/politeness.py`` only, and called by both Python backends of the rule (the SQLite
   frontier's ``frontier/servers.py`` and the table ``--processes N`` shares,
   ``engine/partition.py``);
2. no other Python module compares, adds or takes the max/min of an IP time: read from the
   AST, no ``Compare`` (but ``is``/``in``, and a check against literal constants: validation),
   ``BinOp`` or ``max``/``min`` call outside ``polite/politeness.py`` has an operand naming an
   IP time (``ip_next``, ``_ip_next``, ``free_at``, ``ip_when``, ``ip_min_delay_s``, ``ip_free*``);
3. the Redis scripts do no arithmetic on an IP time: no line of a ``.lua`` file that names
   one (``ipnext``, ``nxt``, ``ip_when``) has ``math.max``, ``math.min``, ``+`` or ``-``. They
   keep the IP's holder, line and time atomically and store only the times politeness
   computed, handed to them as arguments (as the delays are).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import politecrawl
from politecrawl.polite import politeness
from politecrawl.polite.politeness import HostState, IpGate

pytestmark = pytest.mark.unit

SRC = Path(politecrawl.__file__).parent
RULE_MODULE = "polite/politeness.py"
GATE_FUNCTIONS = ("ip_gate", "ip_free_at", "ip_called_at", "released_soonest")
BACKENDS = {"frontier/servers.py": ("ip_gate", "ip_free_at", "ip_called_at"),
            "engine/partition.py": ("ip_gate", "ip_free_at")}  # fmt: skip
_IP_TIME = re.compile(r"^_?ip_next$|^ip_free|^free_at$|^ip_when$|^ip_min_delay_s$")
_LUA_IP_TIME = re.compile(r"'ipnext'|\bnxt\b|\bip_when\b")
_LUA_ARITHMETIC = re.compile(r"math\.max|math\.min|[^.\-]\s[+-]\s")


def _names_ip_time(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and _IP_TIME.search(sub.id):
            return True
        if isinstance(sub, ast.Attribute) and _IP_TIME.search(sub.attr):
            return True
    return False


def _computes_ip_time(node: ast.AST) -> bool:
    if isinstance(node, ast.Compare):
        if all(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
            return False
        operands = [node.left, *node.comparators]
        if sum(not isinstance(o, ast.Constant) for o in operands) <= 1:
            return False  # a check against constants: validation, not the gate
        return any(_names_ip_time(o) for o in operands)
    if isinstance(node, ast.BinOp):
        return _names_ip_time(node.left) or _names_ip_time(node.right)
    func = node.func if isinstance(node, ast.Call) else None
    if isinstance(node, ast.Call) and isinstance(func, ast.Name) and func.id in ("max", "min"):
        return any(_names_ip_time(a) for a in node.args)
    return False


def ip_gate_computed_outside(src: Path = SRC) -> list[str]:
    """Where the per-IP gate is computed outside ``polite/politeness.py`` (see the module
    docstring); empty when the rule lives in one place."""
    found: list[str] = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        called = {
            n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
        }
        for want in BACKENDS.get(rel, ()):
            if want not in called:
                found.append(f"{rel}: does not call politeness.{want}")
        if rel == RULE_MODULE:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name in GATE_FUNCTIONS:
                found.append(f"{rel}:{node.lineno}: defines {node.name}")
            elif _computes_ip_time(node):
                lineno = getattr(node, "lineno", 0)
                found.append(f"{rel}:{lineno}: {ast.unparse(node)}")
    for path in sorted(src.rglob("*.lua")):
        rel = path.relative_to(src).as_posix()
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("--", 1)[0]
            if _LUA_IP_TIME.search(code) and _LUA_ARITHMETIC.search(code):
                found.append(f"{rel}:{lineno}: {code.strip()}")
    return found


def test_the_check_finds_a_second_copy(tmp_path: Path) -> None:
    """The check is not blind: the copies the rule had before it moved are all found."""
    (tmp_path / "frontier" / "redis").mkdir(parents=True)
    (tmp_path / "engine").mkdir()
    (tmp_path / "frontier" / "servers.py").write_text(
        "def take(self, ip, now, state):\n"
        "    ip_next = self._ip_next.get(ip, 0.0)\n"
        "    if ip_next > now:\n"
        "        return False\n"
        "    self._ip_next[ip] = max(self._ip_next.get(ip, 0.0), state.ip_next)\n"
    )
    (tmp_path / "engine" / "partition.py").write_text(
        "def hold(ips, i, now):\n"
        "    if ips[i + 2] > now:\n"
        "        return float(ips[i + 2])\n"
    )
    (tmp_path / "frontier" / "redis" / "lib.lua").write_text(
        "local nxt = tonumber(redis.call('HGET', P .. 'ipnext', ip) or '0')\n"
        "schedule(k, math.max(host_times(k), e, nxt))  -- the IP's time\n"
        "redis.call('HSET', P .. 'ipnext', ip, fmt(nxt))\n"
    )
    found = ip_gate_computed_outside(tmp_path)
    assert "frontier/servers.py:3: ip_next > now" in found
    assert any(f.startswith("frontier/servers.py:5: max(") for f in found)
    assert "engine/partition.py: does not call politeness.ip_gate" in found
    assert "frontier/redis/lib.lua:2: schedule(k, math.max(host_times(k), e, nxt))" in found
    assert not any(f.startswith("frontier/redis/lib.lua:1") for f in found)
    assert "frontier/servers.py: does not call politeness.ip_gate" in found
    assert "engine/partition.py: does not call politeness.ip_free_at" in found


def test_the_gate_one_request_per_ip_then_its_time() -> None:
    assert politeness.ip_gate(True, 0.0, 10.0) is IpGate.QUEUE  # another key holds the IP
    assert politeness.ip_gate(True, 50.0, 10.0) is IpGate.QUEUE
    assert politeness.ip_gate(False, 10.5, 10.0) is IpGate.LATER  # free, its time not come
    assert politeness.ip_gate(False, 10.0, 10.0) is IpGate.TAKE
    assert politeness.ip_gate(False, 0.0, 10.0) is IpGate.TAKE


def test_an_ips_time_never_goes_back_and_a_called_key_waits_for_all_its_times() -> None:
    assert politeness.ip_free_at(20.0, 15.0) == 20.0  # a late release does not undo a later
    assert politeness.ip_free_at(20.0, 25.0) == 25.0
    assert politeness.ip_called_at(30.0, 12.0, 0.0) == 30.0  # the IP's time
    assert politeness.ip_called_at(30.0, 41.0, 0.0) == 41.0  # the site's own delay
    assert politeness.ip_called_at(30.0, 41.0, 50.0) == 50.0  # its first URL's not_before
    state = HostState("a.test", next_allowed=40.0, ip_next=31.0)
    assert politeness.released_soonest(state, 12.0) == 31.0  # the key called, at the IP's time
    assert politeness.released_soonest(state, 35.0) == 35.0  # ... or at its own
    assert politeness.released_soonest(state) == 40.0  # none called: the site itself
    no_ip_time = HostState("a.test", next_allowed=40.0)  # (--ip-min-delay off on this worker)
    assert politeness.released_soonest(no_ip_time, 12.0) == 12.0  # the key called, due


def test_the_ip_time_the_frontier_is_handed_counts_from_the_end_of_the_last_answer() -> None:
    """``schedule_next`` gives the time the backends store for the IP (``HostState.ip_next``)."""
    from politecrawl.config import PolitenessConfig

    cfg = PolitenessConfig(min_delay_s=5.0, jitter_s=0.0, ip_min_delay_s=2.0)
    state = HostState("a.test", last_start=100.0, last_end=103.0)
    politeness.schedule_next(state, cfg)
    assert state.ip_next == 105.0
    assert politeness.ip_gate(False, state.ip_next, 104.9) is IpGate.LATER
    assert politeness.ip_gate(False, state.ip_next, 105.0) is IpGate.TAKE
