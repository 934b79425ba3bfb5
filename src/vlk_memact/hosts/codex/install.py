"""`vlk-memact install|uninstall codex`: our entries in Codex CLI's hooks.json, and how they get trusted.

Codex reads user hooks from `$CODEX_HOME/hooks.json` (default `~/.codex/hooks.json`), in the shape
`{"hooks": {Event: [{"matcher": ..., "hooks": [{"type": "command", "command": ..., "timeout": s}]}]}}`
(any other top-level key makes Codex reject the whole file). Install merges four entries
(SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, each running `vlk-memact hook codex`),
keeps everything else, is idempotent, and backs the file up in the user data directory before changing
it (install_files); uninstall removes exactly our entries (and the file, when nothing else is left in it).

Trust. Codex runs a user hook only once it is trusted (a `trusted_hash` per hook under `[hooks.state]`
in `$CODEX_HOME/config.toml`, written when you approve it in `codex` → `/hooks`), and skips the others
without a word. `install codex --trust` writes those hashes for our four entries itself, taking them
from Codex's own `codex app-server` (`hooks/list`): the hash is Codex's, not recomputed here.
`codex exec --dangerously-bypass-hook-trust` runs untrusted hooks for one run. `checks()` (for
`vlk-memact doctor`) asks the same `hooks/list` which of our hooks Codex would skip.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.checks import Check, failed, passed
from ...core.errors import InvalidInput
from ..shared.install_files import executable, home_dir, load_json_object, remove_handlers
from ..shared.install_files import FileReport, command_check, hook_items, print_reports, replace_file, write_json

HOST = "codex"
# Event -> matcher (None: the event has none). Every tool: any call can fail, be guarded or resolve.
EVENTS: dict[str, str | None] = {"SessionStart": None, "UserPromptSubmit": None, "PreToolUse": "*",
                                 "PostToolUse": "*"}
TIMEOUT_SECONDS = 10  # Codex kills a hook after this; the hook's own deadline (VLK_HOOK_DEADLINE_MS) is far below
HOOK_ARGS = ("hook", HOST)
LIST_TIMEOUT_SECONDS = 20.0


def codex_home(home: Path | None = None) -> Path:
    """$CODEX_HOME, else ~/.codex."""
    configured = os.environ.get("CODEX_HOME")
    if configured and (home is None or home == home_dir()):  # another HOME (a test) has its own
        return Path(configured)
    return (home or home_dir()) / ".codex"


def hooks_path(home: Path | None = None) -> Path:
    return codex_home(home) / "hooks.json"


def hook_command() -> str:
    """The command our entries run: this installation's own entry point, so PATH does not matter."""
    command, prefix = executable()
    return shlex.join([command, *prefix, *HOOK_ARGS])


def is_ours(handler: Any) -> bool:
    """A handler running `vlk-memact hook codex` (a console script or `python -m vlk_memact`)."""
    if not isinstance(handler, Mapping) or handler.get("type", "command") != "command":
        return False
    try:
        words = shlex.split(str(handler.get("command") or ""))
    except ValueError:
        return False
    if len(words) < 3 or tuple(words[-2:]) != HOOK_ARGS:
        return False
    return Path(words[0]).name.startswith("vlk-memact") or words[1:3] == ["-m", "vlk_memact"]


def _load(path: Path) -> dict[str, Any]:
    return load_json_object(path, "Fix it, then run this again.")


def _write(path: Path, data: Mapping[str, Any]) -> Path | None:
    return write_json(path, dict(data), HOST)[0]


@dataclass
class Plan:
    path: Path
    changed: bool
    events: list[str] = field(default_factory=list)
    backup: Path | None = None
    notes: list[str] = field(default_factory=list)
    created: bool = False  # install made the file
    deleted: bool = False  # uninstall removed it: nothing but ours was in it

    def report(self, verb: str) -> FileReport:
        """This plan in the words every host's install reports."""
        items = hook_items(self.events) if self.changed else []
        return FileReport(self.path, added=items if verb == "install" else [],
                          removed=items if verb == "uninstall" else [], backup=self.backup, created=self.created,
                          deleted=self.deleted, notes=list(self.notes))


def install(path: Path, *, dry_run: bool = False, command: str | None = None) -> Plan:
    """Merge our four entries into hooks.json; a second run changes nothing."""
    existed = path.exists()
    data = _load(path)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInput(f"{path}: 'hooks' must be an object, got {type(hooks).__name__}")
    wanted = {"type": "command", "command": command or hook_command(), "timeout": TIMEOUT_SECONDS}
    changed: list[str] = []
    for event, matcher in EVENTS.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise InvalidInput(f"{path}: hooks.{event} must be a list, got {type(groups).__name__}")
        ours = [h for g in groups if isinstance(g, dict) for h in g.get("hooks", []) if is_ours(h)]
        if ours == [wanted]:
            continue
        table = {event: groups}
        remove_handlers(table, is_ours)  # an older or doubled entry of ours goes; everyone else's stays
        groups[:] = table.get(event, [])
        group: dict[str, Any] = {"hooks": [wanted]}
        if matcher is not None:
            group = {"matcher": matcher, **group}
        groups.append(group)
        changed.append(event)
    notes = []
    foreign = sorted(k for k in data if k != "hooks")
    if foreign:
        notes.append(f"{path} has top-level keys besides 'hooks' ({', '.join(foreign)}): Codex rejects such a "
                     "file and runs none of its hooks; move them out.")
    if not changed or dry_run:
        return Plan(path, bool(changed), changed, notes=notes, created=not existed)
    return Plan(path, True, changed, _write(path, data), notes, created=not existed)


def _snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def trust_keys(path: Path, data: Mapping[str, Any]) -> list[str]:
    """The keys Codex gives our entries in this file (`<file>:<event>:<group>:<handler>`, as `hooks/list`
    reports them): where their trust lives in config.toml."""
    hooks = data.get("hooks")
    keys = []
    for event, groups in (hooks.items() if isinstance(hooks, Mapping) else []):
        for g, group in enumerate(groups if isinstance(groups, list) else []):
            handlers = group.get("hooks", []) if isinstance(group, Mapping) else []
            keys += [f"{path}:{_snake(event)}:{g}:{h}" for h, handler in enumerate(handlers) if is_ours(handler)]
    return keys


def uninstall(path: Path, *, dry_run: bool = False) -> Plan:
    """Remove exactly our entries (and the trust install --trust wrote for them); every other hook stays. A
    file left with no hook at all is removed (install created it, or it held only ours)."""
    if not path.exists():
        return Plan(path, False)
    data = _load(path)
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return Plan(path, False)
    keys = trust_keys(path, data)
    removed = list(dict.fromkeys(remove_handlers(hooks, is_ours)))
    alone = data == {"hooks": {}}
    if not removed or dry_run:
        return Plan(path, bool(removed), removed, deleted=bool(removed) and alone)
    untrust(path.parent / "config.toml", keys)
    if alone:
        path.unlink()
        return Plan(path, True, removed, deleted=True)
    return Plan(path, True, removed, _write(path, data))


# ---- trust, as Codex itself reports it -------------------------------------------------------------


def codex_binary() -> str | None:
    """The `codex` on PATH (VLK_CODEX_BIN names another)."""
    return os.environ.get("VLK_CODEX_BIN") or shutil.which("codex")


def listed_hooks(codex: str, cwd: Path, home: Path | None = None,
                 timeout: float = LIST_TIMEOUT_SECONDS) -> list[dict[str, Any]]:
    """Every hook Codex would load in `cwd`, with its key, currentHash and trustStatus (`codex app-server`,
    JSON-RPC `hooks/list`). Raises OSError or ValueError when Codex does not answer."""
    env = dict(os.environ)
    if home is not None:
        env["HOME"] = str(home)
        env["CODEX_HOME"] = str(codex_home(home))
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientInfo": {"name": "vlk-memact",
                                                                                       "version": "1"}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
    ]
    with subprocess.Popen([codex, "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, env=env, cwd=cwd, text=True) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(requests[0]) + "\n")
            proc.stdin.flush()
            reply = _reply(proc, 1, timeout)
            if "result" not in reply:
                raise ValueError(f"codex app-server refused initialize: {reply.get('error')}")
            for request in requests[1:]:
                proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            reply = _reply(proc, 2, timeout)
        finally:
            proc.kill()
    result = reply.get("result")
    if not isinstance(result, dict):
        raise ValueError(f"codex app-server hooks/list failed: {reply.get('error')}")
    return [h for entry in result.get("data", []) if isinstance(entry, dict)
            for h in entry.get("hooks", []) if isinstance(h, dict)]


def _reply(proc: subprocess.Popen[str], wanted: int, timeout: float) -> dict[str, Any]:
    import selectors
    import time

    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(max(0.0, deadline - time.monotonic())):
                break
            line = proc.stdout.readline()
            if not line:
                raise ValueError("codex app-server closed its output")
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("id") == wanted:
                return message
    raise TimeoutError(f"codex app-server did not answer within {timeout:.0f} s")


def _ours_listed(hooks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [h for h in hooks if h.get("handlerType") == "command" and is_ours({"command": h.get("command")})]


def _toml_key(key: str) -> str:
    return json.dumps(key)  # a TOML basic string is a JSON string for these keys (paths, colons)


def trust(config: Path, hashes: Mapping[str, str]) -> bool:
    """Write `trusted_hash` for each hook key into config.toml (a targeted edit: every other line stays)."""
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    original = text
    for key, value in hashes.items():
        header = f"[hooks.state.{_toml_key(key)}]"
        line = f"trusted_hash = {json.dumps(value)}"
        at = text.find(header)
        if at < 0:
            text += ("" if not text or text.endswith("\n") else "\n") + f"\n{header}\n{line}\n"
            continue
        start = at + len(header)
        nxt = re.search(r"^\[", text[start:], flags=re.MULTILINE)
        end = start + nxt.start() if nxt else len(text)
        body = text[start:end]
        if re.search(r"^trusted_hash\s*=.*$", body, flags=re.MULTILINE):
            body = re.sub(r"^trusted_hash\s*=.*$", line, body, count=1, flags=re.MULTILINE)
        else:
            body = f"\n{line}" + body
        text = text[:start] + body + text[end:]
    if text == original:
        return False
    replace_file(config, text, HOST)
    return True


def untrust(config: Path, keys: list[str]) -> bool:
    """Remove the `[hooks.state."<key>"]` tables of these keys that hold nothing but a trusted_hash."""
    if not keys or not config.exists():
        return False
    text = original = config.read_text(encoding="utf-8")
    for key in keys:
        table = re.compile(r"\n*^\[hooks\.state\." + re.escape(_toml_key(key)) + r"\]\n"
                           r"trusted_hash\s*=\s*\"[^\"\n]*\"\n(?=\n|\[|\Z)", re.MULTILINE)
        text = table.sub("\n", text, count=1)
    if text == original:
        return False
    text = text.strip("\n") + "\n" if text.strip() else ""
    replace_file(config, text, HOST)
    return True


def trust_ours(cwd: Path, home: Path | None = None) -> FileReport:
    """Trust our installed hooks with the hashes Codex reports; what was done to config.toml."""
    codex = codex_binary()
    if codex is None:
        raise InvalidInput(MISSING_CODEX)
    ours = _ours_listed(listed_hooks(codex, cwd, home))
    if not ours:
        raise InvalidInput("Codex does not list the vlk-memact hooks; run `vlk-memact install codex` first")
    hashes = {str(h["key"]): str(h["currentHash"]) for h in ours if h.get("key") and h.get("currentHash")}
    config = codex_home(home) / "config.toml"
    existed = config.exists()
    if not trust(config, hashes):
        return FileReport(config, notes=[f"the {len(hashes)} vlk-memact hooks were already trusted"])
    return FileReport(config, added=[f"the trust of the {len(hashes)} vlk-memact hooks (Codex's own hashes)"],
                      created=not existed)


TRUST_HELP = ("Codex runs only hooks you trust, and skips the others silently. Trust these four: start `codex` "
              "and approve them in /hooks, or run `vlk-memact install codex --trust` (writes Codex's own hashes "
              "into config.toml). `codex exec --dangerously-bypass-hook-trust` runs untrusted hooks for one run. "
              "`vlk-memact doctor` says which hooks Codex would skip.")


MISSING_CODEX = ("the `codex` command is not on PATH (nor VLK_CODEX_BIN): --trust asks Codex for its own hashes of "
                 "the hooks, so it needs Codex installed. Install Codex CLI first, or leave out --trust and approve the "
                 "hooks in `codex` → /hooks later. Nothing was written.")


def run_command(args: Any) -> int:
    """`vlk-memact install|uninstall codex [--trust] [--dry-run]`."""
    if args.scope not in (None, "user"):
        raise InvalidInput(f"vlk-memact installs Codex hooks for the user ($CODEX_HOME/hooks.json), not {args.scope!r}")
    path = hooks_path()
    if args.command == "uninstall":
        plan = uninstall(path, dry_run=args.dry_run)
        print_reports(HOST, "uninstall", [plan.report("uninstall")] if plan.changed else [], args.dry_run)
        return 0
    trusting = getattr(args, "trust", False)
    if trusting and codex_binary() is None:
        raise InvalidInput(MISSING_CODEX)  # said before anything is written, in a dry run too
    plan = install(path, dry_run=args.dry_run)
    reports = [plan.report("install")]
    if trusting and not args.dry_run:
        reports.append(trust_ours(Path.cwd()))
    elif trusting:
        reports.append(FileReport(codex_home() / "config.toml",
                                  added=["the trust of the vlk-memact hooks (Codex's own hashes)"]))
    else:
        reports[0].notes.append(TRUST_HELP)
    print_reports(HOST, "install", reports, args.dry_run)
    return 0


def installed(home: Path | None = None) -> list[str]:
    """The events our hooks.json entries cover (unreadable file: none)."""
    try:
        data = _load(hooks_path(home))
    except (InvalidInput, OSError):
        return []
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return []
    return [event for event, groups in hooks.items() if isinstance(groups, list)
            for g in groups if isinstance(g, dict) for h in g.get("hooks", []) if is_ours(h)]


def checks(home: Path | None = None, cwd: Path | None = None) -> list[Check]:
    """doctor: our hooks are complete, run a vlk-memact that exists, and Codex would run them (trusted)."""
    path = hooks_path(home)
    events = installed(home)
    if not events:
        return [passed("hosts", "codex", "no hooks installed (optional: `vlk-memact install codex`)")]
    out: list[Check] = []
    missing = [e for e in EVENTS if e not in events]
    if missing:
        out.append(failed("hosts", "codex hooks", f"{path} lacks the {', '.join(missing)} hooks",
                          "run `vlk-memact install codex` again"))
    data = _load(path)
    commands = {h.get("command") for groups in data["hooks"].values() if isinstance(groups, list)
                for g in groups if isinstance(g, dict) for h in g.get("hooks", []) if is_ours(h)}
    out += [command_check(HOST, command, path) for command in sorted(str(c) for c in commands)]
    out.append(_trust_check(cwd or Path.cwd(), home))
    return out


def _trust_check(cwd: Path, home: Path | None) -> Check:
    codex = codex_binary()
    if codex is None:
        return failed("hosts", "codex hooks trusted", "the `codex` command is not on PATH, so whether Codex "
                      "trusts the vlk-memact hooks cannot be asked", "put `codex` on PATH (or set "
                      "VLK_CODEX_BIN) and run doctor again; untrusted hooks are skipped silently")
    try:
        ours = _ours_listed(listed_hooks(codex, cwd, home))
    except (OSError, ValueError) as exc:
        return failed("hosts", "codex hooks trusted", f"`{codex} app-server` did not list the hooks ({exc})",
                      "check that `codex` runs; untrusted hooks are skipped silently")
    skipped = [h for h in ours if h.get("trustStatus") not in ("trusted", "managed") or h.get("enabled") is False]
    if not ours:
        return failed("hosts", "codex hooks trusted", "Codex does not list the vlk-memact hooks (is hooks.json "
                      "valid for this Codex?)", "run `vlk-memact install codex` again")
    if skipped:
        what = ", ".join(f"{h.get('eventName')} ({h.get('trustStatus')}"
                         f"{', disabled' if h.get('enabled') is False else ''})" for h in skipped)
        return failed("hosts", "codex hooks trusted", f"Codex would skip {len(skipped)} of the {len(ours)} "
                      f"vlk-memact hooks: {what}", "approve them in `codex` → /hooks, or run `vlk-memact install "
                      "codex --trust`")
    return passed("hosts", "codex hooks trusted", f"Codex runs all {len(ours)} vlk-memact hooks (trusted)")
