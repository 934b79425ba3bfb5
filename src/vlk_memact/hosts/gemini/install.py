"""`vlk-memact install gemini` / `uninstall gemini`: our entries in Gemini CLI's settings.json, nothing else.

Gemini CLI reads hooks and MCP servers from `~/.gemini/settings.json` (user) and
`<git root>/.gemini/settings.json` (project; its hooks run only in a trusted folder). Install merges
four hook entries (SessionStart, BeforeAgent, BeforeTool, AfterTool; each a command with an explicit
timeout in milliseconds, the unit Gemini CLI uses) and a `vlk-memact` MCP server into the file,
keeps every other key as it was, is idempotent, and backs the file up in the user data directory
before changing it (install_files). Our hook entries carry `"name": "vlk-memact"`: that is how uninstall
finds exactly them (and how Gemini CLI runs one copy when both files hold them: it deduplicates by name and
command). The MCP server entry is removed only if it is still the one install wrote; a file left empty is
removed. `checks()` serves `vlk-memact doctor`.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.checks import Check, failed, passed
from ...core.errors import InvalidInput
from ..shared.install_files import executable, home_dir, load_json_object, remove_handlers
from ..shared.install_files import (
    SERVER_ITEM,
    FileReport,
    command_check,
    path_note,
    hook_items,
    print_reports,
    project_folder,
    write_json,
)

HOOK_NAME = "vlk-memact"
SERVER_NAME = "vlk-memact"
EVENTS = ("SessionStart", "BeforeAgent", "BeforeTool", "AfterTool")
# Gemini CLI's timeouts are milliseconds (default 60000). Ours is well above the hook's own deadline
# (VLK_HOOK_DEADLINE_MS) so the CLI never has to kill it, and well below the CLI's default.
TIMEOUT_MS = 10_000
HOST = "gemini"
SCOPES = ("user", "project")


@dataclass
class Plan:
    """What install or uninstall did (or, with dry_run, would do) to one file."""

    path: Path
    changed: bool
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    backup: Path | None = None
    text: str = ""  # the file's new content
    notes: list[str] = field(default_factory=list)  # settings in the file that keep the hooks from running
    created: bool = False  # install made the file
    deleted: bool = False  # uninstall removed the file: nothing but ours was in it


def settings_path(scope: str, cwd: Path | None = None, home: Path | None = None, quiet: bool = True) -> Path:
    """The settings.json a scope writes: the user's, or the project's (install_files.project_folder: the git
    root of cwd; quiet=False warns outside a repository)."""
    if scope not in SCOPES:
        raise InvalidInput(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    if scope == "user":
        return (home or home_dir()) / ".gemini" / "settings.json"
    return project_folder(cwd, home, quiet=quiet) / ".gemini" / "settings.json"


def hook_command(scope: str = "user") -> list[str]:
    """The argv that runs our hook: this installation's own entry point, so PATH does not matter; for a
    project (committed, for every checkout): `vlk-memact` on PATH (install_files.executable)."""
    command, prefix = executable(scope)
    return [command, *prefix, "hook", "gemini"]


def _hook_entry(command: list[str], env: Mapping[str, str]) -> dict[str, Any]:
    # Gemini CLI runs `command` through bash -c: quoted, so paths with spaces work.
    entry: dict[str, Any] = {
        "type": "command",
        "name": HOOK_NAME,
        "command": shlex.join(command),
        "timeout": TIMEOUT_MS,
        "description": "vlk-memact: record failures, announce loops, guard repeats, carry lessons",
    }
    if env:
        entry["env"] = dict(env)
    return entry


def _server_entry(command: list[str], env: Mapping[str, str]) -> dict[str, Any]:
    executable, *rest = command[: -2]  # without "hook gemini"
    entry: dict[str, Any] = {"command": executable, "args": [*rest, "serve"]}
    if env:
        entry["env"] = dict(env)
    return entry


def _load(path: Path) -> dict[str, Any]:
    # Gemini CLI tolerates comments in settings.json; rewriting the file would lose them.
    return load_json_object(
        path, "Remove comments or trailing commas, or add the entries by hand (see the README)")


def _notes(data: Mapping[str, Any]) -> list[str]:
    """Settings that would keep our hooks from running; install reports them and leaves them as they are."""
    config = data.get("hooksConfig")
    if not isinstance(config, Mapping):
        return []
    notes = []
    if config.get("enabled") is False:
        notes.append("hooksConfig.enabled is false in this file: Gemini CLI runs no hooks until it is true.")
    disabled = config.get("disabled")
    if isinstance(disabled, list) and HOOK_NAME in disabled:
        notes.append(f"hooksConfig.disabled lists {HOOK_NAME!r}: Gemini CLI skips these hooks until it is "
                     "removed.")
    return notes


def _dumps(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _is_ours(hook: Any) -> bool:
    if not isinstance(hook, Mapping) or hook.get("name") != HOOK_NAME:
        return False
    return str(hook.get("command", "")).endswith("hook gemini")


def _is_our_server(entry: Mapping[str, Any]) -> bool:
    """The entry install writes (`<vlk-memact> serve`, `<python> -m vlk_memact serve`), not one by hand."""
    args = entry.get("args")
    if not isinstance(args, list) or args[-1:] != ["serve"]:
        return False
    return Path(str(entry.get("command", ""))).name == "vlk-memact" or args[:2] == ["-m", "vlk_memact"]


def _write(path: Path, data: Mapping[str, Any]) -> tuple[str, Path | None]:
    """Write the file (a backup first); a file left empty is removed, with the .gemini folder if left empty."""
    backup, _ = write_json(path, dict(data), HOST, stop=path.parent.parent)
    return _dumps(data), backup


def install(path: Path, *, dry_run: bool = False, env: Mapping[str, str] | None = None,
            command: list[str] | None = None, with_server: bool = True) -> Plan:
    """Merge our hooks and MCP server into `path`; a second run changes nothing."""
    existed = path.exists()
    data = _load(path)
    command = command or hook_command()
    env = dict(env or {})
    entry = _hook_entry(command, env)
    added: list[str] = []
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInput(f"{path}: 'hooks' must be an object, got {type(hooks).__name__}")
    for event in EVENTS:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise InvalidInput(f"{path}: hooks.{event} must be a list, got {type(groups).__name__}")
        ours = [h for g in groups if isinstance(g, dict) for h in g.get("hooks", []) if _is_ours(h)]
        if ours == [entry]:
            continue
        # Replace an older or duplicated entry of ours; leave everyone else's entries alone.
        table = {event: groups}
        remove_handlers(table, _is_ours)
        groups[:] = table.get(event, [])
        new_group: dict[str, Any] = {"hooks": [entry]}
        if event in ("BeforeTool", "AfterTool"):
            new_group = {"matcher": ".*", **new_group}  # every tool: the guard and the capture see all calls
        groups.append(new_group)
        added.append(f"hooks.{event}")
    servers = data.setdefault("mcpServers", {}) if with_server else data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise InvalidInput(f"{path}: 'mcpServers' must be an object, got {type(servers).__name__}")
    wanted = _server_entry(command, env)
    present = servers.get(SERVER_NAME)
    # Ours is added, or brought up to date; an entry someone wrote by hand stays as it is.
    if with_server and (present is None or (isinstance(present, dict) and _is_our_server(present)
                                            and present != wanted)):
        servers[SERVER_NAME] = wanted
        added.append(f"mcpServers.{SERVER_NAME}")
    notes = _notes(data)
    if not added:
        return Plan(path, changed=False, text=_dumps(data), notes=notes)
    if dry_run:
        return Plan(path, changed=True, added=added, text=_dumps(data), notes=notes, created=not existed)
    text, backup = _write(path, data)
    return Plan(path, changed=True, added=added, backup=backup, text=text, notes=notes, created=not existed)


def uninstall(path: Path, *, dry_run: bool = False) -> Plan:
    """Remove exactly the entries install adds; every other hook, server and setting stays."""
    if not path.exists():
        return Plan(path, changed=False)
    data = _load(path)
    removed: list[str] = []
    hooks = data.get("hooks")
    if isinstance(hooks, dict):
        removed += [f"hooks.{event}" for event in remove_handlers(hooks, _is_ours)]
        if not hooks:
            del data["hooks"]
    servers = data.get("mcpServers")
    if isinstance(servers, dict) and isinstance(servers.get(SERVER_NAME), dict):
        if _is_our_server(servers[SERVER_NAME]):
            del servers[SERVER_NAME]
            removed.append(f"mcpServers.{SERVER_NAME}")
            if not servers:
                del data["mcpServers"]
    if not removed:
        return Plan(path, changed=False)
    removed = list(dict.fromkeys(removed))
    if dry_run:
        return Plan(path, changed=True, removed=removed, text=_dumps(data), deleted=not data)
    text, backup = _write(path, data)
    return Plan(path, changed=True, removed=removed, backup=backup, text=text, deleted=not data)


def report_of(plan: Plan) -> FileReport:
    """The plan in the words every host's install reports."""
    def items(keys: list[str]) -> list[str]:
        hooks = [k.removeprefix("hooks.") for k in keys if k.startswith("hooks.")]
        return hook_items(hooks) + [SERVER_ITEM for k in keys if k.startswith("mcpServers.")]

    return FileReport(plan.path, added=items(plan.added), removed=items(plan.removed), backup=plan.backup,
                      created=plan.created, deleted=plan.deleted, notes=list(plan.notes))


def run_command(args: Any) -> int:
    """`vlk-memact install|uninstall gemini [--scope user|project] [--dry-run] [--no-mcp]`."""
    verb = args.command
    if args.scope not in (None, *SCOPES):
        raise InvalidInput(f"Gemini CLI has the scopes {' and '.join(SCOPES)}, not {args.scope!r}")
    if verb == "install":
        # Gemini CLI withholds DATABASE_URL from MCP servers (always) and from hooks (when it redacts the
        # environment): the database this install uses is written into both entries, so they share it.
        url = getattr(args, "database_url", None) or os.environ.get("DATABASE_URL")
        scope = args.scope or "user"
        # A project's file is committed: it names no database of this machine (nor its password).
        env = {"DATABASE_URL": url} if url and scope == "user" else {}
        plan = install(settings_path(scope, quiet=False), dry_run=args.dry_run, env=env,
                       command=hook_command(scope), with_server=not getattr(args, "no_mcp", False))
        if plan.changed and url and scope == "project":
            plan.notes.append("DATABASE_URL is not written into this committed file (it is this machine's, and may "
                              "hold a password): each teammate sets it, or installs with --scope user too.")
        elif plan.changed and url:
            plan.notes.append("DATABASE_URL is written into the hook and MCP server entries (Gemini CLI does not "
                              "pass it to MCP servers); run install again after changing it.")
        if plan.changed and scope == "project":
            plan.notes.append("Gemini CLI runs a project's hooks only in a trusted folder (/permissions, or "
                              "GEMINI_CLI_TRUST_WORKSPACE=true for headless runs).")
        note = path_note(scope)
        if note:
            plan.notes.append(note)
        print_reports(HOST, verb, [report_of(plan)], args.dry_run)
        return 0
    reports = []
    for scope in (args.scope,) if args.scope else SCOPES:
        try:
            path = settings_path(scope)
        except InvalidInput:
            if args.scope:
                raise
            continue  # the home folder is no project: its user file is the user scope's
        plan = uninstall(path, dry_run=args.dry_run)
        if plan.changed or path.exists():
            reports.append(report_of(plan))
    print_reports(HOST, verb, reports, args.dry_run)
    return 0


def installed(path: Path) -> tuple[list[str], list[str], bool]:
    """(the events our hooks cover, the commands they run, whether our MCP server entry is there) in one file;
    an unreadable file holds none."""
    try:
        data = _load(path)
    except (InvalidInput, OSError):
        return [], [], False
    hooks = data.get("hooks")
    ours = [(event, str(h.get("command", ""))) for event, groups in (hooks.items() if isinstance(hooks, dict) else [])
            if isinstance(groups, list) for g in groups if isinstance(g, dict)
            for h in g.get("hooks", []) if _is_ours(h)]
    servers = data.get("mcpServers")
    server = isinstance(servers, dict) and isinstance(servers.get(SERVER_NAME), dict) and \
        _is_our_server(servers[SERVER_NAME])
    return [e for e, _ in ours], sorted({c for _, c in ours}), bool(server)


def checks(cwd: Path | None = None, home: Path | None = None) -> list[Check]:
    """doctor: in each settings file holding our entries, every hook is there, runs a vlk-memact that exists, and
    nothing in the file keeps Gemini CLI from running it."""
    out: list[Check] = []
    for scope in SCOPES:
        try:
            path = settings_path(scope, cwd, home)
        except InvalidInput:
            continue  # the home folder: its file is the user scope's
        events, commands, server = installed(path)
        if not events and not server:
            continue
        missing = [e for e in EVENTS if e not in events]
        if missing:
            out.append(failed("hosts", "gemini hooks", f"{path} lacks the {', '.join(missing)} hooks",
                              "run `vlk-memact install gemini" + (" --scope project`" if scope == "project" else "`")
                              + " again"))
        out += [command_check(HOST, command, path) for command in commands]
        for note in _notes(_load(path)):
            out.append(failed("hosts", "gemini hooks enabled", f"{path}: {note}", "change that setting in the file"))
        if not missing and server:
            out.append(passed("hosts", "gemini", f"hooks and MCP server in {path} ({scope} scope)"))
        elif not missing:
            out.append(passed("hosts", "gemini", f"hooks in {path} ({scope} scope; no MCP server entry)"))
    return out or [passed("hosts", "gemini", "no hooks installed (optional: `vlk-memact install gemini`)")]
