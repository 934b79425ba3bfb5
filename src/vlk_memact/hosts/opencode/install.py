"""`vlk-memact install|uninstall opencode`: one plugin file in OpenCode's plugin folder, nothing else.

OpenCode loads every JS module in `<project>/.opencode/plugins/` (scope `project`, the default: the git
root of the current directory, install_files.project_folder) and in `~/.config/opencode/plugins/` (scope `user`;
XDG_CONFIG_HOME is honoured). Install writes `vlk-memact.js` there (plugin.js with this
installation's command filled in); the first line marks it as ours. A second install changes nothing,
an older copy of ours is brought up to date, a file of that name that is not ours is refused. Uninstall
removes our file only (and the plugins folder if we created it and it is empty): other plugins and
every setting stay as they were. `installations()` and `checks()` serve `vlk-memact doctor`.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ...core.checks import Check, failed, passed
from ...core.errors import InvalidInput
from ..shared.install_files import executable, home_dir
from ..shared.install_files import NOT_ON_PATH_FIX, FileReport, path_note, print_reports, project_folder

HOST = "opencode"
SCOPES = ("project", "user")
DEFAULT_SCOPE = "project"
FILE_NAME = "vlk-memact.js"
MARKER = "// vlk-memact for OpenCode: written by `vlk-memact install opencode`"
TIMEOUT_MS = 10_000  # the plugin's own cap per event; the hook's deadline (VLK_HOOK_DEADLINE_MS) is far below


def plugin_dir(scope: str, cwd: Path | None = None, home: Path | None = None, quiet: bool = True) -> Path:
    """The plugins folder OpenCode reads for this scope."""
    if scope not in SCOPES:
        raise InvalidInput(f"OpenCode has the scopes {' and '.join(SCOPES)}, not {scope!r}")
    if scope == "user":
        config = os.environ.get("XDG_CONFIG_HOME")
        own_home = home is None or home == home_dir()  # another HOME (a test, doctor --home) has its own
        base = Path(config) if config and own_home else (home or home_dir()) / ".config"
        return base / "opencode" / "plugins"
    return project_folder(cwd, home, quiet=quiet) / ".opencode" / "plugins"


def hook_command(scope: str = "user") -> list[str]:
    """The argv (without `hook opencode`) that runs this installation's vlk-memact, so PATH does not matter;
    for a project (committed, for every checkout): `vlk-memact` on PATH (install_files.executable)."""
    command, prefix = executable(scope)
    return [command, *prefix]


def plugin_text(command: list[str] | None = None) -> str:
    """The plugin file for this installation."""
    template = resources.files(__package__).joinpath("plugin.js").read_text(encoding="utf-8")
    return (template.replace("__COMMAND__", json.dumps(command or hook_command()))
            .replace("__TIMEOUT_MS__", str(TIMEOUT_MS)))


def is_ours(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.readline().startswith(MARKER)
    except (OSError, UnicodeDecodeError):
        return False


def command_of(path: Path) -> list[str] | None:
    """The command an installed plugin runs (its COMMAND line), None when unreadable."""
    try:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("const COMMAND = "):
                value = json.loads(line[len("const COMMAND = "):].rstrip(";"))
                return [str(v) for v in value] if isinstance(value, list) and value else None
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return None


@dataclass
class Result:
    """What install or uninstall did (or would do) to the plugin file, as every host's install reports it."""

    path: Path
    changed: bool
    report: FileReport


PLUGIN_ITEM = "the vlk-memact plugin"


def install(scope: str, *, cwd: Path | None = None, home: Path | None = None, dry_run: bool = False,
            command: list[str] | None = None, quiet: bool = True) -> Result:
    """Write (or update) our plugin file; a second run changes nothing."""
    path = plugin_dir(scope, cwd, home, quiet=quiet) / FILE_NAME
    text = plugin_text(command or hook_command(scope))
    if path.exists():
        if not is_ours(path):
            raise InvalidInput(f"{path} exists and was not written by vlk-memact; move it, then run this again.")
        if path.read_text(encoding="utf-8") == text:
            return Result(path, False, FileReport(path))
        report = FileReport(path, updated=[PLUGIN_ITEM])
    else:
        report = FileReport(path, added=[PLUGIN_ITEM], created=True)
    report.notes.append("OpenCode loads it at its next start.")
    note = path_note(scope) if command is None else None
    if note:
        report.notes.append(note)
    if dry_run:
        return Result(path, True, report)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{FILE_NAME}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)  # OpenCode never loads half a file
    return Result(path, True, report)


def uninstall(scope: str, *, cwd: Path | None = None, home: Path | None = None, dry_run: bool = False) -> Result:
    """Remove our plugin file (only ours); an empty plugins folder goes with it."""
    folder = plugin_dir(scope, cwd, home)
    path = folder / FILE_NAME
    if not path.exists():
        return Result(path, False, FileReport(path))
    if not is_ours(path):
        return Result(path, False, FileReport(path, notes=["kept: not written by vlk-memact"]))
    report = FileReport(path, removed=[PLUGIN_ITEM], deleted=True)
    if dry_run:
        return Result(path, True, report)
    path.unlink()
    for empty in (folder, folder.parent) if scope == "project" else (folder,):
        try:
            empty.rmdir()  # only when empty: .opencode/plugins, then .opencode
        except OSError:
            break
    return Result(path, True, report)


def run_command(args: Any) -> int:
    """`vlk-memact install|uninstall opencode [--scope project|user] [--dry-run]`."""
    if args.scope not in (None, *SCOPES):
        raise InvalidInput(f"OpenCode has the scopes {' and '.join(SCOPES)}, not {args.scope!r}")
    if args.command == "install":
        result = install(args.scope or DEFAULT_SCOPE, dry_run=args.dry_run, quiet=False)
        print_reports(HOST, "install", [result.report], args.dry_run)
        return 0
    reports = []
    for scope in (args.scope,) if args.scope else SCOPES:
        try:
            result = uninstall(scope, dry_run=args.dry_run)
        except InvalidInput:
            if args.scope:
                raise
            continue  # the home folder is no project
        if result.changed or result.report.notes:
            reports.append(result.report)
    print_reports(HOST, "uninstall", reports, args.dry_run)
    return 0


def installations(cwd: Path | None = None, home: Path | None = None) -> list[Path]:
    """The vlk-memact plugin files OpenCode would load here."""
    found = []
    for scope in SCOPES:
        try:
            path = plugin_dir(scope, cwd, home) / FILE_NAME
        except InvalidInput:
            continue  # the home folder: no project scope there
        if path.exists() and is_ours(path):
            found.append(path)
    return found


def checks(cwd: Path | None = None, home: Path | None = None) -> list[Check]:
    """doctor: each installed plugin runs a vlk-memact that exists, and is the current plugin text."""
    found = installations(cwd, home)
    if not found:
        return [passed("hosts", "opencode", "no plugin installed (optional: `vlk-memact install opencode`)")]
    out = []
    for path in found:
        command = command_of(path)
        program = command[0] if command else None
        if program and os.sep not in program and not shutil.which(program):  # a project's: run from PATH
            out.append(failed("hosts", "opencode plugin command", f"{path} runs {program} from PATH (the same in "
                              "every checkout), and it is not on PATH", NOT_ON_PATH_FIX))
        elif not program or not os.access(shutil.which(program) or program, os.X_OK):
            out.append(failed("hosts", "opencode plugin command", f"{path} runs {program or '(unreadable)'}, "
                              "which does not exist or is not executable",
                              "run `vlk-memact install opencode` again from the environment vlk-memact is "
                              "installed in (it rewrites the plugin), or `vlk-memact uninstall opencode`"))
        elif path.read_text(encoding="utf-8") != plugin_text(command):
            out.append(failed("hosts", "opencode plugin current", f"{path} was written by another version",
                              "run `vlk-memact install opencode` again"))
        else:
            out.append(passed("hosts", "opencode plugin", f"{path} runs {' '.join(command or [])}"))
    if len(found) > 1:
        out.append(passed("hosts", "opencode plugin installed once",
                          f"{len(found)} copies ({', '.join(map(str, found))}); the first one OpenCode loads "
                          "answers, the other stays silent"))
    return out
