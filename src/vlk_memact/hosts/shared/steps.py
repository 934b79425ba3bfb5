"""What a tool call acts on (its target) and a compact account of what ran (its summary); pure.

Fix memory names the steps that fixed an error by these summaries, and tells a changed version of a
failing call (same program or script, or same file, other arguments or content) from another call by
the target; the guard counts a successful read of the file an edit failed on as a change by the target.
Only what ran is described: a command by its command line, an edit by its file and what it removed and
added, a write by its file. Summaries are redacted and capped like every stored text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Any

from . import shell

FILE_FIELDS = ("file_path", "notebook_path", "path")
SUMMARY_CHARS = 240
DIFF_SIDE_CHARS = 80  # each of the removed and the added text in an edit's summary
# A program whose next word says what runs (a script, a module, a subcommand): the target keeps both.
RUNNERS = frozenset(
    {
        "python", "python2", "python3", "py", "pypy", "pypy3", "node", "deno", "bun", "ruby", "perl", "php",
        "bash", "sh", "zsh", "dash", "fish", "npm", "npx", "yarn", "pnpm", "uv", "uvx", "poetry", "pipenv",
        "cargo", "go", "make", "git", "docker", "kubectl", "mvn", "gradle", "dotnet", "rustup", "pip", "pip3",
        "conda", "java", "rake", "bundle", "mix", "swift", "tox", "nox", "hatch", "pdm",
    }
)
# Words before the program that do not change which program runs.
_WRAPPERS = frozenset({"sudo", "env", "time", "nice", "nohup", "exec", "command", "builtin", "stdbuf", "timeout"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_VERSION_SUFFIX = re.compile(r"(?<=[a-z])[0-9.]+$")


def file_of(tool_input: Any) -> str | None:
    """The file a call is about (Edit, Write, Read, NotebookEdit, ...), or None."""
    if isinstance(tool_input, Mapping):
        for name in FILE_FIELDS:
            value = tool_input.get(name)
            if isinstance(value, str) and value.strip():
                return value.strip()
    return None


def command_of(tool_input: Any) -> str | None:
    """The command line of a shell call, or None."""
    if isinstance(tool_input, Mapping):
        command = tool_input.get("command")
        if isinstance(command, str) and command.strip():
            return command
    return None


def program_of(command: str) -> str | None:
    """The program (and script, module or subcommand of a runner) a command line runs: `python -m pytest`,
    `sh check_env.sh`, `npm run`, `cargo test`; `cd DIR &&` and environment assignments are skipped. A runner is
    named without its version (`python3.11 x.py` is `python x.py`): the same script whichever python runs it."""
    for simple in shell.parse(command.strip()).commands:
        words = list(simple.words)
        while words and (_ASSIGNMENT.match(words[0]) or words[0] in _WRAPPERS):
            skip = 2 if words[0] == "timeout" and len(words) > 1 and not words[1].startswith("-") else 1
            words = words[skip:]
        words = [w for w in words if w not in ("(", ")")]
        if not words or words[0] in ("cd", "pushd", "popd", "source", ".", "export", "set", "true", ":"):
            continue
        program = words[0].rsplit("/", 1)[-1]
        base = _VERSION_SUFFIX.sub("", program)
        if base not in RUNNERS and program not in RUNNERS:
            return program
        program = base if base in RUNNERS else program  # python3.11 and python run one program (issue 34)
        rest = words[1:]
        if rest[:1] == ["-m"] and len(rest) > 1:
            return f"{program} -m {rest[1]}"
        following = next((w for w in rest if not w.startswith("-") and not _ASSIGNMENT.match(w)), None)
        return f"{program} {following}" if following else program
    return None


def target_of(tool_name: str, tool_input: Any, shell_tools: Collection[str]) -> str | None:
    """What the call acts on: the file of a file tool, the program of a shell command; None when unknown."""
    if tool_name in shell_tools:
        command = command_of(tool_input)
        return program_of(command) if command is not None else None
    return file_of(tool_input)


def _redact(text: str) -> str:
    from ...core.redact import redact  # compiled on first use: most hook events never summarise a step

    return redact(text).text


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _first_line(command: str) -> str:
    lines = [line for line in command.strip().splitlines() if line.strip()]
    first = lines[0].strip() if lines else ""
    return first + (" …" if len(lines) > 1 else "")


def _edit_pairs(tool_input: Mapping[str, Any]) -> list[tuple[str, str]]:
    edits = tool_input.get("edits")
    if isinstance(edits, list):
        items = [e for e in edits if isinstance(e, Mapping)]
    else:
        items = [tool_input]
    pairs = []
    for item in items:
        old, new = item.get("old_string"), item.get("new_string")
        if isinstance(old, str) or isinstance(new, str):
            pairs.append((old if isinstance(old, str) else "", new if isinstance(new, str) else ""))
    return pairs


def _diff(old: str, new: str) -> str:
    """What an edit removed and added, without the lines both sides share at their start and end."""
    a, b = old.splitlines(), new.splitlines()
    while a and b and a[0].strip() == b[0].strip():
        a, b = a[1:], b[1:]
    while a and b and a[-1].strip() == b[-1].strip():
        a, b = a[:-1], b[:-1]
    removed, added = " / ".join(s.strip() for s in a if s.strip()), " / ".join(s.strip() for s in b if s.strip())
    parts = []
    if removed:
        parts.append(f"-{_one_line(removed, DIFF_SIDE_CHARS)!r}")
    if added:
        parts.append(f"+{_one_line(added, DIFF_SIDE_CHARS)!r}")
    return " ".join(parts) or "(whitespace only)"


def summary_of(tool_name: str, tool_input: Any, shell_tools: Collection[str], edit_tools: Collection[str]) -> str:
    """One redacted line of at most SUMMARY_CHARS saying what the call ran; never the model's prose."""
    if tool_name in shell_tools and (command := command_of(tool_input)) is not None:
        text = _first_line(command)
    elif isinstance(tool_input, Mapping) and (path := file_of(tool_input)) is not None:
        pairs = _edit_pairs(tool_input) if tool_name in edit_tools else []
        if pairs:
            diffs = "; ".join(_diff(old, new) for old, new in pairs[:3])
            more = f" (+{len(pairs) - 3} more edits)" if len(pairs) > 3 else ""
            text = f"{tool_name} {path}: {diffs}{more}"
        elif tool_name in edit_tools:
            content = tool_input.get("content")
            lines = f" ({len(content.splitlines())} lines)" if isinstance(content, str) else ""
            text = f"{tool_name} {path}{lines}"
        else:
            text = f"{tool_name} {path}"
    else:
        try:
            shown = json.dumps(tool_input, ensure_ascii=False, sort_keys=True, default=str)
        except (TypeError, ValueError):
            shown = ""
        text = f"{tool_name} {shown}" if shown not in ("", "{}", "null") else tool_name
    return _one_line(_redact(text), SUMMARY_CHARS)
