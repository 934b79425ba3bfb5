"""`vlk-memact install|uninstall claude-code`: hook entries and the MCP server entry in Claude Code's files.

Merging, never replacing: other hooks, servers and settings stay as they are; installing twice changes
nothing; every file changed is first copied to the user data directory (install_files.backup); uninstall
removes exactly the entries install writes (hook handlers running `vlk-memact hook claude-code`, and the MCP
entry carrying the VLK_INSTALLED_BY marker), nothing else, and a file it leaves empty. Where the files are
(Claude Code's scopes; <dir> is the git root of the working directory, install_files.project_folder):

    scope    hooks                          MCP server
    user     ~/.claude/settings.json        ~/.claude.json  mcpServers
    project  .claude/settings.json          .mcp.json       mcpServers
    local    .claude/settings.local.json    ~/.claude.json  projects[<dir>].mcpServers

The repository also ships a Claude Code plugin (hooks/hooks.json, .mcp.json, .claude-plugin/); the host
runs a plugin's hooks beside the settings' ones, so installing one while the other is there is refused.
`installations()` lists what is installed where, for `vlk-memact doctor`.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.errors import InvalidInput
from ..shared.install_files import (  # the helpers every host's installer shares, used here too
    FileReport,
    executable,
    hook_items,
    home_dir,
    remove_handlers,
    write_json,
)

HOST = "claude-code"
SCOPES = ("local", "project", "user")
DEFAULT_SCOPE = "local"  # like `claude mcp add`: personal, this repository, not committed
SERVER_NAME = "vlk-memact"
PLUGIN_NAME = "vlk-memact"
MARKER = "VLK_INSTALLED_BY"
MARKER_VALUE = "vlk-memact install claude-code"
HOOK_TIMEOUT_SECONDS = 10  # explicit (the host's default is 600 s); the hook's own deadline is far below
# Event -> matcher ("" for events without one). Every tool: a failure of any tool is recorded, any
# identical call can be guarded, any success can resolve.
HOOK_EVENTS: dict[str, str | None] = {
    "SessionStart": "startup|resume|clear|compact",
    "UserPromptSubmit": None,
    "PreToolUse": "*",
    "PostToolUse": "*",
    "PostToolUseFailure": "*",
}
HOOK_ARGS = ["hook", HOST]


@dataclass(frozen=True)
class Installation:
    """One entry that runs vlk-memact for Claude Code, and where it is."""

    kind: str  # "hook", "mcp" or "plugin"
    scope: str  # "user", "project", "local" or "plugin"
    file: str
    name: str  # the hook event, the MCP server name, or the plugin id
    command: str | None
    args: list[str] = field(default_factory=list)

    @property
    def executable_exists(self) -> bool:
        """Does the command name an executable that exists (on PATH, or as a path)?"""
        if not self.command:
            return False
        found = shutil.which(self.command)
        return found is not None and os.access(found, os.X_OK)


@dataclass(frozen=True)
class Change:
    """A file as it is and as it will be."""

    path: Path
    before: dict[str, Any] | None  # None: the file does not exist
    after: dict[str, Any]
    notes: list[str]


def settings_path(scope: str, project_dir: Path, home: Path) -> Path:
    if scope == "user":
        return home / ".claude" / "settings.json"
    if scope == "project":
        return project_dir / ".claude" / "settings.json"
    return project_dir / ".claude" / "settings.local.json"


def mcp_path(scope: str, project_dir: Path, home: Path) -> Path:
    return project_dir / ".mcp.json" if scope == "project" else home / ".claude.json"


def _read(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"{path} is not readable JSON ({exc}); fix or move it, then run this again.") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} holds JSON {type(data).__name__}, not an object; fix it, then run this again.")
    return data


def _lenient_reader() -> Callable[[Path], dict[str, Any] | None]:
    """_read for the lists of installations: an unreadable file counts as absent, and each file is read once
    (~/.claude.json serves two scopes; a settings file holds both hooks and enabled plugins)."""
    seen: dict[Path, dict[str, Any] | None] = {}

    def read(path: Path) -> dict[str, Any] | None:
        if path not in seen:
            try:
                seen[path] = _read(path)
            except InvalidInput:
                seen[path] = None
        return seen[path]

    return read


def _is_our_handler(handler: Any) -> bool:
    """A hook handler that runs `vlk-memact hook claude-code` (as a console script or `python -m vlk_memact`)."""
    if not isinstance(handler, dict) or handler.get("type", "command") != "command":
        return False
    command = str(handler.get("command") or "")
    args = handler.get("args")
    words = [str(a) for a in args] if isinstance(args, list) else command.split()[1:]
    program = Path(command.split()[0] if not isinstance(args, list) and command else command).name
    if program.startswith("vlk-memact"):
        return words[:2] == HOOK_ARGS
    if words[:2] == ["-m", "vlk_memact"]:
        return words[2:4] == HOOK_ARGS
    return False


def _our_mcp(entry: Any) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("env"), dict) and entry["env"].get(MARKER) == MARKER_VALUE


def _mcp_servers(data: dict[str, Any], scope: str, project_dir: Path) -> dict[str, Any] | None:
    if scope == "local":
        project = data.get("projects", {}).get(str(project_dir)) if isinstance(data.get("projects"), dict) else None
        servers = project.get("mcpServers") if isinstance(project, dict) else None
    else:
        servers = data.get("mcpServers")
    return servers if isinstance(servers, dict) else None


def _hook_entries(data: dict[str, Any] | None) -> Iterator[tuple[str, dict[str, Any]]]:
    hooks = (data or {}).get("hooks")
    if not isinstance(hooks, dict):
        return
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            for handler in group.get("hooks", []) if isinstance(group, dict) else []:
                if _is_our_handler(handler):
                    yield event, handler


def plugin_installations(project_dir: Path, home: Path,
                         read: Callable[[Path], dict[str, Any] | None] | None = None) -> list[Installation]:
    """The vlk-memact plugin, where Claude Code records it as installed or enabled."""
    read = read or _lenient_reader()
    found = []
    record = home / ".claude" / "plugins" / "installed_plugins.json"
    try:
        data = json.loads(record.read_text(encoding="utf-8")) if record.exists() else {}
    except (OSError, ValueError):
        data = {}
    plugins = data.get("plugins", {}) if isinstance(data, dict) else {}
    for plugin_id in plugins if isinstance(plugins, dict) else []:
        if str(plugin_id).split("@")[0] == PLUGIN_NAME:
            found.append(Installation("plugin", "plugin", str(record), str(plugin_id), "vlk-memact",
                                      ["hook", HOST, "--from-plugin"]))
    for scope in SCOPES:
        path = settings_path(scope, project_dir, home)
        settings = read(path) or {}
        enabled = settings.get("enabledPlugins")
        for plugin_id, on in (enabled.items() if isinstance(enabled, dict) else []):
            if on and str(plugin_id).split("@")[0] == PLUGIN_NAME:
                found.append(Installation("plugin", scope, str(path), str(plugin_id), "vlk-memact",
                                          ["hook", HOST, "--from-plugin"]))
    return found


def hook_installations(project_dir: Path, home: Path,
                       read: Callable[[Path], dict[str, Any] | None] | None = None) -> list[Installation]:
    """The vlk-memact hook entries of Claude Code's settings files (the plugin's hook checks only these)."""
    read = read or _lenient_reader()
    found: list[Installation] = []
    for scope in SCOPES:
        path = settings_path(scope, project_dir, home)
        for event, handler in _hook_entries(read(path)):
            args = handler.get("args")
            found.append(Installation("hook", scope, str(path), event, handler.get("command"),
                                      [str(a) for a in args] if isinstance(args, list) else []))
    return found


def installations(project_dir: Path | None = None, home: Path | None = None) -> list[Installation]:
    """Every vlk-memact hook entry, MCP entry and plugin Claude Code would load for this project directory."""
    project_dir = (project_dir or Path.cwd()).resolve()
    home = home or home_dir()
    read = _lenient_reader()
    found = hook_installations(project_dir, home, read)
    for scope in SCOPES:
        path = mcp_path(scope, project_dir, home)
        for name, entry in (_mcp_servers(read(path) or {}, scope, project_dir) or {}).items():
            command = entry.get("command") if isinstance(entry, dict) else None
            args = entry.get("args") if isinstance(entry, dict) else None
            if _our_mcp(entry) or (isinstance(command, str) and Path(command).name.startswith("vlk-memact")):
                found.append(Installation("mcp", scope, str(path), str(name), command,
                                          [str(a) for a in args] if isinstance(args, list) else []))
    return found + plugin_installations(project_dir, home, read)


def doubled(found: list[Installation]) -> list[str]:
    """What would make Claude Code run vlk-memact's hooks twice for one event: settings hooks beside the plugin,
    or different vlk-memact handlers of one event in several settings files (identical ones run once)."""
    problems = []
    hooks = [i for i in found if i.kind == "hook"]
    plugins = [i for i in found if i.kind == "plugin"]
    if hooks and plugins:
        problems.append(f"settings hooks ({', '.join(sorted({i.file for i in hooks}))}) and the plugin "
                        f"({plugins[0].name}) are both installed; the plugin's copy stays silent, remove one")
    for event in sorted({i.name for i in hooks}):
        handlers = {(i.command, tuple(i.args)) for i in hooks if i.name == event}
        if len(handlers) > 1:
            files = sorted({i.file for i in hooks if i.name == event})
            problems.append(f"{event} runs {len(handlers)} different vlk-memact hooks ({', '.join(files)})")
    return problems


def _hook_handler(command: str, prefix: list[str]) -> dict[str, Any]:
    return {"type": "command", "command": command, "args": [*prefix, *HOOK_ARGS], "timeout": HOOK_TIMEOUT_SECONDS}


def _with_hooks(data: dict[str, Any], command: str, prefix: list[str]) -> tuple[dict[str, Any], list[str]]:
    """data with one vlk-memact handler per event (an existing one of ours is updated in place)."""
    data = json.loads(json.dumps(data))
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInput("the 'hooks' setting is not an object; fix it, then run this again.")
    notes = []
    wanted = _hook_handler(command, prefix)
    for event, matcher in HOOK_EVENTS.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise InvalidInput(f"hooks.{event} is not a list; fix it, then run this again.")
        ours = [(g, h) for g in groups if isinstance(g, dict) for h in g.get("hooks", []) if _is_our_handler(h)]
        if ours:
            for _, handler in ours:
                if handler != wanted:
                    handler.clear()
                    handler.update(wanted)
                    notes.append(f"updated the {event} hook")
            continue
        group: dict[str, Any] = {"hooks": [wanted]}
        if matcher is not None:
            group = {"matcher": matcher, **group}
        groups.append(group)
        notes.append(f"added the {event} hook")
    return data, notes


def _without_hooks(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    data = json.loads(json.dumps(data))
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return data, []
    notes = [f"removed the {event} hook" for event in remove_handlers(hooks, _is_our_handler)]
    if not hooks:
        del data["hooks"]
    return data, notes


def _with_server(data: dict[str, Any], scope: str, project_dir: Path, command: str,
                 prefix: list[str]) -> tuple[dict[str, Any], list[str]]:
    data = json.loads(json.dumps(data))
    if scope == "local":
        projects = data.setdefault("projects", {})
        holder = projects.setdefault(str(project_dir), {})
    else:
        holder = data
    servers = holder.setdefault("mcpServers", {})
    wanted = {"type": "stdio", "command": command, "args": [*prefix, "serve"], "env": {MARKER: MARKER_VALUE}}
    existing = servers.get(SERVER_NAME)
    if existing is None:
        servers[SERVER_NAME] = wanted
        return data, [f"added the MCP server '{SERVER_NAME}'"]
    if not _our_mcp(existing):
        return data, [f"kept your own MCP server entry '{SERVER_NAME}' (not written by vlk-memact install)"]
    if existing != wanted:
        # Keep what the user added to our entry (DATABASE_URL, VLK_PROJECT, ...).
        env = {**existing.get("env", {}), MARKER: MARKER_VALUE}
        servers[SERVER_NAME] = {**existing, "type": "stdio", "command": command, "args": [*prefix, "serve"], "env": env}
        if servers[SERVER_NAME] != existing:
            return data, [f"updated the MCP server '{SERVER_NAME}'"]
    return data, []


def _without_server(data: dict[str, Any], scope: str, project_dir: Path) -> tuple[dict[str, Any], list[str]]:
    data = json.loads(json.dumps(data))
    servers = _mcp_servers(data, scope, project_dir)
    if servers is None or not _our_mcp(servers.get(SERVER_NAME)):
        return data, []
    del servers[SERVER_NAME]
    if not servers:
        holder = data["projects"][str(project_dir)] if scope == "local" else data
        del holder["mcpServers"]
    return data, [f"removed the MCP server '{SERVER_NAME}'"]


def plan_install(scope: str, project_dir: Path, home: Path, with_server: bool = True) -> list[Change]:
    """The files install would change, without writing; refuses when the plugin is installed."""
    if scope not in SCOPES:
        raise InvalidInput(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    plugins = plugin_installations(project_dir, home)
    if plugins:
        where = ", ".join(sorted({p.file for p in plugins}))
        raise InvalidInput(
            f"the vlk-memact Claude Code plugin is installed ({where}); its hooks already run, and Claude Code "
            "would run settings hooks beside them. Remove the plugin (/plugin uninstall vlk-memact) or keep it."
        )
    command, prefix = executable(scope)
    changes = []
    path = settings_path(scope, project_dir, home)
    before = _read(path)
    after, notes = _with_hooks(before or {}, command, prefix)
    if after != (before or {}) or before is None:
        changes.append(Change(path, before, after, notes))
    if with_server:
        path = mcp_path(scope, project_dir, home)
        before = _read(path)
        after, notes = _with_server(before or {}, scope, project_dir, command, prefix)
        if after != (before or {}) or notes:
            changes.append(Change(path, before, after, notes))
    return changes


def plan_uninstall(scopes: tuple[str, ...], project_dir: Path, home: Path) -> list[Change]:
    changes = []
    for scope in scopes:
        path = settings_path(scope, project_dir, home)
        before = _read(path)
        if before is not None:
            after, notes = _without_hooks(before)
            if after != before:
                changes.append(Change(path, before, after, notes))
        path = mcp_path(scope, project_dir, home)
        before = _read(path)
        if before is not None:
            pending = next((c for c in changes if c.path == path), None)
            base = pending.after if pending else before
            after, notes = _without_server(base, scope, project_dir)
            if after != base:
                if pending:
                    changes[changes.index(pending)] = Change(path, before, after, pending.notes + notes)
                else:
                    changes.append(Change(path, before, after, notes))
    return changes


def report_of(change: Change, dry_run: bool) -> FileReport:
    """The change in the words every host's install reports (install_files.FileReport): `added the
    SessionStart and PreToolUse hooks`; dry_run marks nothing here (the report's line says `would`)."""
    report = FileReport(change.path, created=change.before is None,
                        deleted=change.before is not None and change.after == {})
    done: dict[str, list[str]] = {"added": [], "updated": [], "removed": []}
    for note in change.notes:  # "added the SessionStart hook", "removed the MCP server 'vlk-memact'", ...
        verb, _, what = note.partition(" ")
        if verb in done:
            done[verb].append(what)
        else:
            report.notes.append(note)
    for verb, items in done.items():
        hooks = [w for w in items if w.startswith("the ") and w.endswith(" hook")]
        getattr(report, verb).extend(hook_items([w[4:-5] for w in hooks]) + [w for w in items if w not in hooks])
    return report


def apply(changes: list[Change], roots: tuple[Path, ...] = ()) -> list[FileReport]:
    """Write every change (a backup of the old file in the user data directory, then an atomic replace; a file
    left empty is removed, with the folders left empty up to the root of roots that holds it)."""
    done = []
    for change in changes:
        report = report_of(change, dry_run=False)
        if change.before is None or change.after != change.before:
            stop = next((r for r in roots if r in change.path.parents), None)
            report.backup, report.deleted = write_json(change.path, change.after, HOST, stop)
        done.append(report)
    return done
