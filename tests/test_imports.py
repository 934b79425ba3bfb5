"""What the code imports: every package src/ imports is declared in pyproject.toml, and no module imports
itself back through others, in the package or in bench/ (whose scripts import each other by file name)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
BENCH = ROOT / "bench"


def _top_level_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


def _requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}


def test_every_package_src_imports_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = _requirement_names(project["dependencies"])
    optional = _requirement_names(project["optional-dependencies"]["postgres"])
    distributions = importlib.metadata.packages_distributions()
    missing = {}
    for path in sorted((SRC / "vlk_memact").rglob("*.py")):
        for name in _top_level_imports(path) - set(sys.stdlib_module_names) - {"vlk_memact"}:
            dists = {d.lower().replace("_", "-") for d in distributions.get(name, [name])}
            allowed = declared | (optional if "store" in path.parts else set())
            if not dists & allowed:
                missing.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert missing == {}


def test_the_dependency_check_sees_an_undeclared_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import starlette.routing\nfrom markupsafe import Markup\nfrom . import x\nimport os\n")
    assert _top_level_imports(module) - set(sys.stdlib_module_names) == {"starlette", "markupsafe"}
    assert _requirement_names(["psycopg[binary]>=3.2", "typing_extensions; python_version<'3.12'"]) == \
        {"psycopg", "typing-extensions"}


def _modules(root: Path, packages: set[str] | None = None) -> dict[str, Path]:
    """Module name -> file, as the interpreter names them with `root` on sys.path."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        if "node_modules" in path.parts or "results" in path.parts:
            continue
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if packages is None or name.split(".")[0] in packages:
            found[name] = path
    return found


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Who imports whom among these modules: at the top, inside functions or under TYPE_CHECKING (a lazy
    import closes a circle at run time as surely). `from P import x` names P.x when it is a module."""
    graph = {}
    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = here.split(".")[: len(here.split(".")) - node.level + 1] if here else []
                    base = ".".join(anchor + ([node.module] if node.module else []))
                for alias in node.names:
                    found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of two modules or more (Tarjan): each holds an import circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while (member := stack.pop()) != node:
                component.append(member)
            if component:
                found.append(sorted([*component, node]))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return found


def test_no_import_circle_in_the_package() -> None:
    assert circles(import_graph(_modules(SRC, {"vlk_memact"}))) == []


def test_no_import_circle_in_the_benchmarks() -> None:
    graph = import_graph(_modules(BENCH))
    assert "guard_result" in graph["guard_report"] and "trajectories" in graph["claude_events"]
    assert circles(graph) == []


def test_the_circle_finder_finds_a_type_only_circle(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from a import X\n")
    (tmp_path / "c.py").write_text("import a\n")
    assert circles(import_graph(_modules(tmp_path))) == [["a", "b"]]
