"""Ten-line guards: the public namespace, the import direction, and the README."""

from __future__ import annotations

import ast
from pathlib import Path

import vlk_memact
from vlk_memact.cli import _parser

PACKAGE = Path(vlk_memact.__file__).parent
ROOT = PACKAGE.parent.parent
PURE = {"model", "errors", "fingerprint", "loops", "consolidate", "conflicts", "render", "inputs", "quoting", "redact"}


def test_public_api_is_curated_and_sorted() -> None:
    assert vlk_memact.__all__ == sorted(vlk_memact.__all__)
    for name in vlk_memact.__all__:
        assert hasattr(vlk_memact, name), name


def imports_of(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                found.add((node.module or "").split(".")[0])
            elif node.module:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def _sources(name: str) -> list[Path]:
    """A module's file, or every file of a subpackage."""
    single = PACKAGE / f"{name}.py"
    return [single] if single.exists() else sorted((PACKAGE / name).glob("*.py"))


def test_pure_modules_import_only_pure_modules() -> None:
    for name in PURE:
        files = _sources(name)
        assert files, name
        for path in files:
            relative = {m for m in imports_of(path) if "." not in m and m in _modules()}
            assert relative <= PURE | {"core", "families"}, (path, relative - PURE)


def test_only_the_store_touches_database_drivers() -> None:
    for path in PACKAGE.rglob("*.py"):
        if "store" in path.parts:
            continue
        assert not {"sqlite3", "psycopg"} & imports_of(path), path


def test_the_engine_does_not_know_the_protocol() -> None:
    assert not any(m.startswith("mcp") for m in imports_of(PACKAGE / "engine.py"))


def _modules() -> set[str]:
    return {p.stem for p in PACKAGE.glob("*.py")} | {"store", "fingerprint"}


def test_readme_documents_every_tool_command_and_setting() -> None:
    readme = (ROOT / "README.md").read_text()
    for tool in ("vlk_time_travel", "vlk_get_history", "vlk_search_memory", "vlk_summarize_session",
                 "vlk_fetch_context", "vlk_revoke_future", "vlk_record_state"):
        assert f"`{tool}`" in readme, tool
    commands = _parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for command in commands:
        assert f"vlk-memact {command}" in readme, command
    from dataclasses import fields

    from vlk_memact import Settings

    names = ["DATABASE_URL"] + ["VLK_" + f.name.upper() for f in fields(Settings) if f.name != "database_url"]
    for setting in names:
        assert f"`{setting}`" in readme, setting


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "bash .ci/run" in readme
