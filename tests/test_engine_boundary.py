"""No private engine attribute outside the engine (issue 37): edges use Memory's public API (engine/hook_events.py).

An AST scan of src/ and bench/: any `._key(...)` call or `.store` attribute outside src/vlk_memact/engine/ and
src/vlk_memact/store/ fails, naming the file and line. ALLOWED is the explicit, shrinking list of exceptions.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OWNERS = ("src/vlk_memact/engine/", "src/vlk_memact/store/")
ALLOWED: set[tuple[str, str]] = set()  # (path, attribute) still allowed; empty: every edge is converted


def _scanned() -> list[Path]:
    files = [*(ROOT / "src" / "vlk_memact").rglob("*.py"), *(ROOT / "bench").rglob("*.py")]
    return sorted(p for p in files if "node_modules" not in p.parts)


def private_uses(source: str) -> list[tuple[int, str]]:
    """(line, attribute) of each `x._key(...)` call and `x.store` attribute in this source."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "_key":
            found.append((node.lineno, "_key"))
        elif isinstance(node, ast.Attribute) and node.attr == "store":
            found.append((node.lineno, "store"))
    return found


def test_the_scan_finds_what_it_forbids() -> None:
    """The rule itself can fail: each forbidden form is found, the public ones are not."""
    assert private_uses("memory._key(sid)\nwith memory.store.read() as tx: pass\n") == [(1, "_key"), (2, "store")]
    assert private_uses("from vlk_memact.store import open_store\nmemory.session_key(s)\nmemory.reading()\n") == []


@pytest.mark.parametrize("path", _scanned(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_engine_attribute_outside_the_engine(path: Path) -> None:
    rel = path.relative_to(ROOT).as_posix()
    if rel.startswith(OWNERS):
        return
    uses = [(line, attr) for line, attr in private_uses(path.read_text(encoding="utf-8"))
            if (rel, attr) not in ALLOWED]
    assert not uses, f"{rel}: private engine attribute used at " + ", ".join(f"line {n} (.{a})" for n, a in uses) + (
        "; use Memory's public API (engine/hook_events.py: session_key, reading, writing, ...)")


def test_hooks_write_only_through_named_engine_methods() -> None:
    """hosts/ may read the typed read model (Memory.reading) but writes only through named engine methods
    (record_state, remember_told, set_told, tell_fixes, resolve_success, the intervention recorder): no
    `.writing()` under src/vlk_memact/hosts/."""
    hosts = ROOT / "src" / "vlk_memact" / "hosts"
    found = []
    for path in sorted(hosts.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "writing":
                found.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno}")
    assert not found, found
