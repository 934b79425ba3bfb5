"""What every host's install and uninstall share: where a project install goes, how a host's file is written
and backed up, and the words that report what was done.

- Where: a project install writes into the root of the git repository of the working directory (the
  folder a host reads project settings from). Outside any repository it writes into the working
  directory, and says so; in the home folder it refuses (a project file there would be the user's own).
- Backups: before a file that exists is changed, a copy goes to `backups/<host>/` in the user data
  directory (beside the database, never inside the repository), under a name no later backup takes.
- Uninstall leaves a file it empties, and the folder install created for it, removed, not `{}`: install then
  uninstall in a fresh repository leaves `git status` clean.
- Words: one line per file, the same verbs for every host (added, updated, removed; "would" in a dry
  run), then one line that says where things stand.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...config import data_dir
from ...core.checks import Check, failed, passed
from ...core.errors import InvalidInput

HOST_NAMES = {"claude-code": "Claude Code", "gemini": "Gemini CLI", "opencode": "OpenCode", "codex": "Codex CLI"}
HOST_PROGRAMS = {"claude-code": "claude", "gemini": "gemini", "opencode": "opencode", "codex": "codex"}


def git_root(start: Path) -> Path | None:
    """The top folder of the git checkout holding start (a worktree's own top, where its files are), or None."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


def path_note(scope: str) -> str | None:
    """What a project install says when the command its committed files run is not on this machine's PATH."""
    if scope != "project" or shutil.which("vlk-memact"):
        return None
    return ("`vlk-memact` is not on PATH here: the project files run `vlk-memact` from PATH, so that they work in "
            "every teammate's checkout; put it on PATH on each machine (`pipx install vlk-memact`, or add the "
            f"folder of {Path(sys.executable).parent / 'vlk-memact'} to PATH) before starting the host.")


def project_folder(cwd: Path | None = None, home: Path | None = None, *, quiet: bool = False) -> Path:
    """The folder a project-scope install writes into: the git root of cwd; outside a repository cwd itself,
    with a warning on stderr; InvalidInput in the home folder, whose project files are the user's own."""
    here = (cwd or Path.cwd()).resolve()
    root = git_root(here)
    if root is not None:
        return root
    user_home = (home or Path(os.environ.get("HOME") or Path.home())).resolve()
    if here == user_home:
        raise InvalidInput(f"{here} is your home folder, not a project, and no git repository holds it: run this "
                           "inside your repository, or use --scope user. Nothing was written.")
    if not quiet:
        print(f"warning: {here} is in no git repository: the project files go into this folder, and the host "
              "reads them only when started here (run inside your repository to install for it).", file=sys.stderr)
    return here


def backup(path: Path, host: str) -> Path:
    """Copy path into the user data directory's backups/<host>/, under a new name (a later backup never replaces
    an earlier one); return the copy."""
    folder = data_dir() / "backups" / host
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    flat = _flat(path)
    for n in range(1000):
        copy = folder / f"{stamp}{f'-{n}' if n else ''}-{flat}"
        try:
            with open(copy, "xb") as out, open(path, "rb") as source:  # "x": never over an earlier backup
                shutil.copyfileobj(source, out)
        except FileExistsError:
            continue
        shutil.copystat(path, copy)
        return copy
    raise InvalidInput(f"{folder} holds 1000 backups of {path} made this second; nothing was written.")


def replace_file(path: Path, text: str, host: str) -> Path | None:
    """Write text to a host's file through a temporary file and a rename (a crash leaves the old file or the new
    one, never half of one), keeping its mode, after a backup of the old one; returns that backup."""
    existed = path.exists()
    copy = backup(path, host) if existed else None
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        if existed:
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return copy


def write_json(path: Path, data: Any, host: str, stop: Path | None = None) -> tuple[Path | None, bool]:
    """replace_file with the JSON of data; data that is empty ({}) removes the file instead, with the folders
    above it up to stop that are left empty (uninstall leaves no `{}` behind). (backup, removed)."""
    if data == {} and path.exists():
        path.unlink()
        remove_empty_folders(path.parent, stop)
        return None, True
    return replace_file(path, _earlier_text(path, data, host) or json.dumps(data, indent=2, ensure_ascii=False) + "\n",
                        host), False


def _earlier_text(path: Path, data: Any, host: str) -> str | None:
    """The text of a backup of path holding exactly data: an uninstall gives the file back byte for byte as it
    was before install (its formatting and key order too), not a re-serialised copy."""
    folder = data_dir() / "backups" / host
    for copy in sorted(folder.glob(f"*-{_flat(path)}"), reverse=True) if folder.is_dir() else []:
        try:
            text = copy.read_text(encoding="utf-8")
            if json.loads(text) == data:
                return text
        except (OSError, ValueError):
            continue
    return None


def _flat(path: Path) -> str:
    """path as one file name (its backups are named `<time>-<this>`)."""
    return str(path.resolve()).strip(os.sep).replace(os.sep, "_")[-150:]


def remove_empty_folders(folder: Path, stop: Path | None) -> None:
    """Remove folder and its parents while they are empty, never stop itself nor anything outside it."""
    if stop is None:
        return
    stop = stop.resolve()
    here = folder.resolve()
    while here != stop and stop in here.parents:
        try:
            here.rmdir()
        except OSError:
            return
        here = here.parent


NOT_ON_PATH_FIX = ("put vlk-memact on PATH (`pipx install vlk-memact`, or activate the environment it is installed in "
                   "before starting the host)")


def command_check(host: str, command: str, where: Path) -> Check:
    """doctor: the hook command an installed file runs exists (a deleted or moved virtualenv is the usual
    failure), said the same way for every host."""
    try:
        program = shlex.split(command)[0] if command else ""
    except ValueError:
        program = ""
    if program and os.sep not in program:  # a committed project file's `vlk-memact`, found on PATH
        found = shutil.which(program)
        if found:
            return passed("hosts", f"{host} hook command", f"{command} exists on PATH ({found}; {where})")
        return failed("hosts", f"{host} hook command", f"{program} is not on PATH ({where} runs it from PATH, "
                      "the same in every checkout)", NOT_ON_PATH_FIX)
    if program and os.access(program, os.X_OK):
        return passed("hosts", f"{host} hook command", f"{command} exists ({where})")
    return failed("hosts", f"{host} hook command", f"{program or '(none)'} does not exist or is not executable "
                  f"({where})", f"run `vlk-memact install {host}` again from the environment vlk-memact is installed "
                  f"in, or `vlk-memact uninstall {host}`")


def missing_program(host: str) -> str | None:
    """A note when the host's own command is not on PATH (its hooks then run only once it is installed)."""
    program = HOST_PROGRAMS[host]
    if shutil.which(program) or (host == "codex" and os.environ.get("VLK_CODEX_BIN")):  # codex_install's override
        return None
    return (f"`{program}` ({HOST_NAMES[host]}) is not on PATH: what is installed takes effect once {HOST_NAMES[host]} "
            "runs here.")


SERVER_ITEM = "the MCP server 'vlk-memact'"


def hook_items(events: list[str]) -> list[str]:
    """Hook events as one item of a report: `the SessionStart and PreToolUse hooks`."""
    events = list(dict.fromkeys(events))
    return [f"the {_listed(events)} hook{'s' if len(events) > 1 else ''}"] if events else []


@dataclass
class FileReport:
    """What an install or uninstall did (or, in a dry run, would do) to one file."""

    path: Path
    added: list[str] = field(default_factory=list)  # what went in: "the SessionStart hook", "the MCP server ..."
    updated: list[str] = field(default_factory=list)  # ours, brought up to date
    removed: list[str] = field(default_factory=list)
    backup: Path | None = None
    created: bool = False  # the file did not exist
    deleted: bool = False  # the file is gone: nothing but ours was in it
    notes: list[str] = field(default_factory=list)  # what the user should know about this file

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def file_line(report: FileReport, verb: str, dry_run: bool) -> str:
    """`<file>: added ...` (or `would add`), or what was already so."""
    if not report.changed:
        state = "already installed" if verb == "install" else "nothing of vlk-memact's in it"
        return f"{report.path}: {state}, nothing to change."
    done = []
    for items, past, future in ((report.added, "added", "would add"), (report.updated, "updated", "would update"),
                                (report.removed, "removed", "would remove")):
        if items:
            done.append(f"{future if dry_run else past} {_listed(items)}")
    extra = []
    if report.created:
        extra.append("a new file")
    if report.deleted:
        extra.append("the file " + ("would be" if dry_run else "was") + " removed: nothing else was in it")
    if report.backup:
        extra.append(f"backup: {report.backup}")
    return f"{report.path}: {'; '.join(done)}" + (f" ({'; '.join(extra)})" if extra else "") + "."


def print_reports(host: str, verb: str, reports: list[FileReport], dry_run: bool) -> None:
    """Every file's line and notes, then where things stand, in the same words for every host."""
    for report in reports:
        print(file_line(report, verb, dry_run))
        for note in report.notes:
            print(f"  note: {note}")
    name = HOST_NAMES[host]
    changed = any(r.changed for r in reports)
    if dry_run:
        print("Dry run: nothing was written." if changed else
              f"Dry run: nothing to change, vlk-memact is {'already' if verb == 'install' else 'not'} installed "
              f"for {name}.")
    elif verb == "install":
        print(f"vlk-memact is installed for {name}." if changed else
              f"Nothing changed: vlk-memact was already installed for {name}.")
    else:
        print(f"vlk-memact is uninstalled from {name}." if changed else
              f"Nothing changed: vlk-memact was not installed for {name}.")


# ---- what every host's installer reads and writes its settings with ----

PORTABLE_COMMAND = "vlk-memact"  # what committed project files run: found on PATH on each machine


def home_dir() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def executable(scope: str = "user") -> tuple[str, list[str]]:
    """The command that runs this vlk-memact: its console script in this environment, else `python -m`.

    A project scope's files are committed and run in every teammate's checkout, where this machine's
    environment does not exist: they run `vlk-memact` from PATH (install_files.path_note says when it is not)."""
    if scope == "project":
        return PORTABLE_COMMAND, []
    script = Path(sys.executable).parent / ("vlk-memact.exe" if os.name == "nt" else "vlk-memact")
    if script.is_file():
        return str(script), []
    found = shutil.which("vlk-memact")
    if found:
        return str(Path(found).resolve()), []
    return sys.executable, ["-m", "vlk_memact"]


def load_json_object(path: Path, not_json_hint: str) -> dict[str, Any]:
    """A host's JSON settings file as a dict ({} when missing or empty); InvalidInput, never a rewrite, when
    it is not plain JSON or not an object (not_json_hint says what the user can do)."""
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidInput(f"{path} is not plain JSON ({exc}); vlk-memact will not rewrite it. {not_json_hint}") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} must hold a JSON object, got {type(data).__name__}")
    return data


def remove_handlers(hooks: dict[str, Any], is_ours: Callable[[Any], bool]) -> list[str]:
    """Drop our handlers from a host's hook table, in place; return the events that lost one.

    Claude Code and Gemini CLI share the shape `{event: [{"matcher": ..., "hooks": [handler, ...]}]}`: a
    group left with no handler was ours and goes, an event left with no group goes, and everything that
    is not ours (other handlers, groups of another shape) stays as it was.
    """
    removed: list[str] = []
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                kept = [h for h in group["hooks"] if not is_ours(h)]
                if len(kept) != len(group["hooks"]):
                    removed.append(event)
                    if not kept:
                        continue
                    group = {**group, "hooks": kept}
            kept_groups.append(group)
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    return removed
