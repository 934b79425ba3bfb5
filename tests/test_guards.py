"""Ten-line guards: the public namespace, the import direction, the README and the docs pages."""

from __future__ import annotations

import ast
from pathlib import Path

import vlk_memact
from vlk_memact.cli import _parser

PACKAGE = Path(vlk_memact.__file__).parent
ROOT = PACKAGE.parent.parent
DOCS = ROOT / "docs"
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


def test_each_tool_command_and_setting_has_a_row_on_its_docs_page() -> None:
    """Tools in docs/tools.md, commands (and each host they take) in docs/cli.md, settings in
    docs/configuration.md but the hooks' own, which are in the hooks' table of docs/hosts.md."""
    from dataclasses import fields

    from mcp_clients import TOOL_NAMES
    from vlk_memact import Settings

    tools = (DOCS / "tools.md").read_text()
    for tool in TOOL_NAMES:
        assert f"| `{tool}` |" in tools, tool
    cli = (DOCS / "cli.md").read_text()
    commands = _parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for command, parser in commands.items():
        assert f"`vlk-memact {command}" in cli, command
        hosts = [a.choices for a in parser._actions if not a.option_strings and a.choices]
        for host in hosts[0] if hosts else ():
            assert f"`vlk-memact {command} {host}`" in cli or f"`{command} {host}`" in cli, (command, host)
    configuration, hosts = (DOCS / "configuration.md").read_text(), (DOCS / "hosts.md").read_text()
    names = ["DATABASE_URL"] + ["VLK_" + f.name.upper() for f in fields(Settings) if f.name != "database_url"]
    for setting in names:
        page = hosts if setting.startswith(("VLK_HOOK_", "VLK_HOST_")) else configuration
        assert f"| `{setting}` |" in page, setting


def test_readme_shows_the_two_commands_verbatim() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "```bash\npip install . && vlk-memact\n```" in readme
    assert "```bash\nbash .ci/run\n```" in readme
