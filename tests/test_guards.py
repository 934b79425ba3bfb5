"""Ten-line guards: the public namespace, the import direction, the README and the docs pages."""

from __future__ import annotations

import ast
from pathlib import Path

from test_imports import circles, import_graph

import vlk_memact
from vlk_memact.cli.main import _parser

PACKAGE = Path(vlk_memact.__file__).parent
ROOT = PACKAGE.parent.parent
DOCS = ROOT / "docs"


def test_public_api_is_curated_and_sorted() -> None:
    assert vlk_memact.__all__ == sorted(vlk_memact.__all__)
    for name in vlk_memact.__all__:
        assert hasattr(vlk_memact, name), name


# Import paths the README, scripts/vlk-memact and programs use: a move keeps each one, through a shim if need be.
PUBLIC_PATHS = [
    ("vlk_memact", "Memory"), ("vlk_memact", "Settings"), ("vlk_memact.engine", "Memory"),
    ("vlk_memact.errors", "StoreError"), ("vlk_memact.errors", "DiskFull"), ("vlk_memact.entry", "main"),
    ("vlk_memact.cli", "main"), ("vlk_memact.server", "build_server"), ("vlk_memact.hosts.shared.warm", "hook"),
    ("vlk_memact.hosts.claude_code.install", "installations"), ("vlk_memact.hosts.claude_code.adapter", "handle"),
    ("vlk_memact.fingerprint", "group"), ("vlk_memact.viewer", "serve_ui"), ("vlk_memact.store", "open_store"),
]


def test_public_import_paths_still_import() -> None:
    from importlib import import_module

    for module, name in PUBLIC_PATHS:
        assert callable(getattr(import_module(module), name)), (module, name)
    assert (PACKAGE / "__main__.py").exists()  # python -m vlk_memact


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


_GRAPH = import_graph(MODULES)  # test_imports.py reads the imports: at the top, in functions, under TYPE_CHECKING


def imported_modules(name: str) -> set[str]:
    """The package's modules that module `name` imports (a parent package is not counted unless named:
    importing a.b runs a/__init__ first, and that is no circle of ours)."""
    return _GRAPH[name]


def _cycles() -> list[list[str]]:
    """Every import circle, each once, as the sorted list of modules it runs through."""
    return circles(_GRAPH)


def test_no_module_imports_itself_back_through_others() -> None:
    assert _cycles() == []


def test_the_cycle_finder_reads_lazy_type_only_and_submodule_imports() -> None:
    assert "vlk_memact.hosts.shared.runner" in imported_modules("vlk_memact.hosts.shared.warm_server")  # inside serve()
    assert "vlk_memact.engine.base" in imported_modules("vlk_memact.engine.fix_memory")  # under TYPE_CHECKING
    assert "vlk_memact.engine.fix_memory" in imported_modules("vlk_memact.cli.main")  # `from ..engine import x`


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


# Who may import whom, bottom up, as each package's __init__ says: the pure core and the fingerprint know no
# I/O; the stores know the core and the settings; the engine knows the stores through their contract; only
# the edges import the engine, and of the edges only the CLI (and entry.py, the shims) may import them all.
BELOW_THE_EDGES = {"engine", "store", "core", "fingerprint", "config", "repository"}
MAY_IMPORT = {
    "fingerprint": {"fingerprint"},
    "core": {"core", "fingerprint"},
    "repository": {"repository"},  # which project a folder is: git's own files, nothing of vlk-memact
    "config": {"core", "repository"},
    "store": {"store", "core", "config"},
    "engine": {"engine", "core", "fingerprint", "config", "store", "repository"},
    "hosts": {"hosts", *BELOW_THE_EDGES},
    "server": {"server", "hosts", *BELOW_THE_EDGES},  # hosts.failures: one failure classifier for every path
    "ops": {"ops", "hosts", *BELOW_THE_EDGES},  # the hosts' installers, for `vlk-memact doctor`
    "viewer": {"viewer", "server", *BELOW_THE_EDGES},  # server.transports.is_loopback
    "learn": {"learn", "hosts", *BELOW_THE_EDGES},  # feeds past sessions through the hooks' own handlers
}


def test_each_layer_imports_only_the_layers_below_it() -> None:
    for name in MODULES:
        allowed = MAY_IMPORT.get(_layer(name))
        if allowed is None:
            continue  # cli/, entry.py, __main__.py and the shims: the top
        wrong = {m for m in imported_modules(name) if _layer(m) not in allowed}
        assert not wrong, (name, wrong)


def test_every_package_says_what_it_is_for_and_what_it_may_import() -> None:
    for init in PACKAGE.glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "import" in doc, init


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m.split(".")[0] for m in found}


def test_only_the_store_touches_database_drivers() -> None:
    for path in PACKAGE.rglob("*.py"):
        if "store" in path.relative_to(PACKAGE).parts:
            continue
        assert not {"sqlite3", "psycopg", "psycopg_pool"} & _imports(path), path


def test_the_engine_and_the_core_do_not_know_the_protocol() -> None:
    for path in [*(PACKAGE / "engine").glob("*.py"), *(PACKAGE / "core").glob("*.py")]:
        assert not {"mcp", "starlette", "uvicorn", "pydantic"} & _imports(path), path


MAX_MODULE_LINES = 500
# A module over the limit while a branch splits it; an entry that fits again fails the test below, so the
# set only shrinks.
TOO_LONG_FOR_NOW: set[str] = set()


def test_no_module_is_over_500_lines() -> None:
    """The package, the benchmarks and the tests alike (node_modules and the virtual environment aside)."""
    frozen = ("sqlite_schema.py", "postgres_schema.py")  # numbered migrations: never edited once released
    # tests/corpus/generate.py is a table of ~150 toolchain cases that made tests/data/fingerprint_corpus.jsonl,
    # never imported: one case per entry reads best in one file, like a data file.
    frozen += ("generate.py",)
    files = [*PACKAGE.rglob("*.py"), *(ROOT / "bench").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
    long = {str(p.relative_to(ROOT)) for p in files
            if "node_modules" not in p.parts and p.name not in frozen
            and len(p.read_text().splitlines()) > MAX_MODULE_LINES}
    assert long == TOO_LONG_FOR_NOW


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
