"""The host-integration checks of `vlk-memact doctor`, over what `hosts.install.installations()` finds.

Two things go wrong with hooks and MCP entries in practice: the command they run no longer exists
(the virtualenv that held vlk-memact was deleted or moved), and vlk-memact is installed twice (hooks
in two scopes, or hooks beside the plugin, so every event is recorded twice; two MCP entries under
different names, so the model sees every tool twice). Claude Code loads all of these together.
Gemini CLI's, OpenCode's and Codex CLI's have their checks in their installer modules (gemini_install.checks,
opencode_install.checks, codex_install.checks: for Codex, also the hooks it would skip as untrusted): doctor
checks every host that is installed, and says in one line of each other host that it is not.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

from ..core.checks import Check, failed, passed

HOSTS = "hosts"


def host_checks(project_dir: Path | None = None, home: Path | None = None) -> list[Check]:
    """Every host's vlk-memact installation for this project directory (each host module has its checks)."""
    from ..hosts.codex import install as codex_install
    from ..hosts.gemini import install as gemini_install
    from ..hosts.claude_code import install
    from ..hosts.shared import install_files
    from ..hosts.opencode import install as opencode_install

    here = (project_dir or Path.cwd()).resolve()
    project_dir = install_files.git_root(here) or here  # where a project install goes
    home = home or install.home_dir()
    return (_claude_code_checks(project_dir, home) + gemini_install.checks(project_dir, home)
            + opencode_install.checks(project_dir, home) + codex_install.checks(home))


def _claude_code_checks(project_dir: Path, home: Path) -> list[Check]:
    """Claude Code's vlk-memact hooks, MCP entries and plugin for this project directory."""
    from ..hosts.claude_code import install
    from ..hosts.shared import install_files

    checks = _unreadable_files(install, project_dir, home)
    found = install.installations(project_dir, home)
    if not found:
        checks.append(passed(HOSTS, "claude-code", "no hooks or MCP entry installed (optional: "
                             "`vlk-memact install claude-code`)"))
        return checks
    commands: dict[tuple[str | None, tuple[str, ...]], list[install.Installation]] = defaultdict(list)
    for item in found:
        commands[(item.command, tuple(item.args))].append(item)
    for (command, args), users in sorted(commands.items(), key=lambda kv: str(kv[0])):
        where = sorted({i.file for i in users})
        shown = " ".join([command or "(no command)", *args])
        if users[0].executable_exists:
            checks.append(passed(HOSTS, "claude-code command", f"{shown} exists ({len(users)} entries in "
                                 f"{', '.join(where)})"))
        elif command and os.sep not in command:  # a committed project file runs `vlk-memact` from PATH
            checks.append(failed(HOSTS, "claude-code command", f"{command} is not on PATH ({len(users)} entries in "
                                 f"{', '.join(where)} run it from PATH, the same in every checkout)",
                                 install_files.NOT_ON_PATH_FIX))
        else:
            checks.append(failed(HOSTS, "claude-code command", f"{shown} does not exist or is not executable "
                                 f"({len(users)} entries in {', '.join(where)})",
                                 "run `vlk-memact install claude-code` again from the environment vlk-memact is "
                                 "installed in (it rewrites the entries in place), or `vlk-memact uninstall "
                                 "claude-code`"))
    checks += _double_hooks(found)
    checks += _double_mcp(found)
    return checks


def _unreadable_files(install, project_dir: Path, home: Path) -> list[Check]:  # type: ignore[no-untyped-def]
    paths = {install.settings_path(s, project_dir, home) for s in install.SCOPES}
    paths |= {install.mcp_path(s, project_dir, home) for s in install.SCOPES}
    checks = []
    for path in sorted(paths):
        if not path.exists():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError) as exc:
            checks.append(failed(HOSTS, "claude-code settings", f"{path} is not readable JSON ({exc})",
                                 "fix the file (Claude Code ignores a file it cannot parse, with every hook in it)"))
            continue
        if not isinstance(data, dict):
            checks.append(failed(HOSTS, "claude-code settings", f"{path} holds JSON {type(data).__name__}, "
                                 "not an object", "fix the file"))
    return checks


def _double_hooks(found) -> list[Check]:  # type: ignore[no-untyped-def]
    """An event handled from more than one place (two scopes, or a scope and the plugin) runs twice."""
    sources: dict[str, set[str]] = defaultdict(set)
    plugins = [i for i in found if i.kind == "plugin"]
    for item in found:
        if item.kind == "hook":
            sources[item.name].add(f"{item.scope} ({item.file})")
    doubled = {event: places for event, places in sources.items() if len(places) > 1}
    hooked = sorted({i.scope for i in found if i.kind == "hook"})
    checks = []
    if doubled:
        places = sorted({p for ps in doubled.values() for p in ps})
        scopes = sorted({p.split(" ")[0] for p in places})
        checks.append(failed(HOSTS, "claude-code hooks installed once",
                             f"{', '.join(sorted(doubled))} run {max(len(p) for p in doubled.values())} times: "
                             f"hooks in {', '.join(places)}",
                             "keep one scope: `vlk-memact uninstall claude-code --scope "
                             f"{scopes[-1]}` (or --scope {' / '.join(scopes[:-1])})"))
    if plugins and hooked:
        checks.append(failed(HOSTS, "claude-code hooks installed once",
                             f"the vlk-memact plugin ({plugins[0].name}) and hooks in the {', '.join(hooked)} "
                             "settings both run on every event",
                             "`vlk-memact uninstall claude-code` (keeps the plugin), or disable the plugin with "
                             "`claude plugin disable vlk-memact`"))
    if not checks:
        what = f"the plugin ({plugins[0].name})" if plugins else (f"{len(sources)} events in the {hooked[0]} scope"
                                                                   if hooked else "no hooks")
        checks.append(passed(HOSTS, "claude-code hooks installed once", what))
    return checks


def _double_mcp(found) -> list[Check]:  # type: ignore[no-untyped-def]
    """Two MCP entries under different names are two servers: the model sees every tool twice.

    The same name in several scopes is one server (Claude Code picks local, then project, then user).
    """
    names: dict[str, list[str]] = defaultdict(list)
    for item in found:
        if item.kind == "mcp":
            names[item.name].append(f"{item.scope} ({item.file})")
    if any(i.kind == "plugin" for i in found):
        names.setdefault("plugin:vlk-memact", []).append("the plugin's .mcp.json")
    if len(names) > 1:
        return [failed(HOSTS, "claude-code MCP server installed once",
                       f"{len(names)} MCP servers run vlk-memact: " +
                       "; ".join(f"{name} in {', '.join(places)}" for name, places in sorted(names.items())),
                       "remove all but one (`claude mcp remove NAME -s SCOPE`, or `vlk-memact uninstall "
                       "claude-code --scope SCOPE`)")]
    if not names:
        return [passed(HOSTS, "claude-code MCP server installed once", "no MCP entry (hooks only)")]
    (name, places), = names.items()
    return [passed(HOSTS, "claude-code MCP server installed once", f"{name} in {', '.join(places)}")]
