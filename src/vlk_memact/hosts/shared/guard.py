"""The guard's rule, pure: is this the same call, did anything change since it last failed, deny or warn?

Trigger: a tool call identical (same tool, same input, whitespace-normalised) to one that *itself*
failed at least the loop threshold times in this session with one error fingerprint, whose loop still
has an active anchor.
Why: re-running an unchanged failing command cannot help; the host would spend a turn and the
model's context on the same error again. A loop is about an error: other calls sharing it (a harness
format error, "File does not exist." for three different files) say nothing about this call, and
denying it on their account blocked calls that would have worked (issue 20, bench/results/guard.md).
Outcome: if nothing state-changing succeeded in the session since that call last failed, deny (the
reason says what to do instead and how to override); if something did, or the call's own failures are
fewer, or its error names nothing, allow with at most one warning. A call the guard cannot classify
counts as a change. `VLK_HOOK_GUARD=warn` never denies; `off` does nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import read_only

# Claude Code's tool names; another host passes its own sets.
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
SHELL_TOOLS = frozenset({"Bash", "PowerShell"})
# Tools whose success changes nothing the next call sees. Anything else (an unknown tool, a subagent, a web
# fetch, waiting on a background shell) counts as a change: precision first.
READ_TOOLS = frozenset({"Read", "Grep", "Glob", "LS", "NotebookRead", "TodoWrite", "TodoRead", "ToolSearch"})
# Fields that describe a call to the user but do not change what runs: two calls differing only there
# are the same call.
IGNORED_FIELDS: Mapping[str, frozenset[str]] = {
    "Bash": frozenset({"description"}),
    "PowerShell": frozenset({"description"}),
}

DENY = "deny"
WARN = "warn"
NONE = "none"


@dataclass(frozen=True, slots=True)
class CallEvent:
    """One call the session made after the guarded call last failed."""

    call_key: str
    outcome: str  # "failure" or "success"
    changes_state: bool  # a success that can change state; a failure that wrote before it failed
    target: str | None = None  # the file of a file tool, the program of a command


_SPACES = re.compile(r"(?<=\S)[ \t]+")


def _normalise(value: Any) -> Any:
    """Whitespace-normalised, but a line's indentation is kept: it is content in an edit, a heredoc or a
    `python -c` program (bench/results/guard.md shows a fix that differed from the failing edit only there)."""
    if isinstance(value, str):
        lines = value.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        return "\n".join(_SPACES.sub(" ", line).rstrip() for line in lines).strip("\n")
    if isinstance(value, Mapping):
        return {str(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalise(v) for v in value]
    return value


def call_key(tool_name: str, tool_input: Any, ignored: Mapping[str, Collection[str]] = IGNORED_FIELDS) -> str:
    """The identity of a call: same tool and same input up to whitespace (and ignored fields) = same key."""
    skip = ignored.get(tool_name, ())
    if isinstance(tool_input, Mapping):
        tool_input = {k: v for k, v in tool_input.items() if k not in skip}
    blob = json.dumps([tool_name, _normalise(tool_input)], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def changes_state(
    tool_name: str,
    edit_tools: Collection[str] = EDIT_TOOLS,
    shell_tools: Collection[str] = SHELL_TOOLS,
    tool_input: Any = None,
    read_tools: Collection[str] = READ_TOOLS,
) -> bool:
    """Can a success of this tool change what the next call sees? Edits can; a shell command can unless it
    only reads (ls, cat, grep, git diff: read_only.py) and runs in the foreground; known reads cannot; a
    tool the guard does not know can."""
    if tool_name in shell_tools:
        if isinstance(tool_input, Mapping) and tool_input.get("run_in_background"):
            return True  # a background process changes what later calls see
        command = tool_input.get("command") if isinstance(tool_input, Mapping) else None
        return not (isinstance(command, str) and read_only.is_read_only(command))
    if tool_name in edit_tools:
        return True
    return tool_name not in read_tools


def decide(
    mode: str,
    key: str,
    looped: bool,
    since: Sequence[CallEvent],
    *,
    own_failures: int | None = None,
    threshold: int = 3,
    specific: bool = True,
    edit_target: str | None = None,
) -> str:
    """DENY, WARN or NONE for a call with this key.

    looped: the call's failures were archived into a loop whose anchor is still active.
    since: the session's calls after this call last failed, oldest first.
    own_failures: how often this very call failed with its latest error fingerprint since it last worked
    (None: at least the threshold, the rule before issue 20).
    specific: the error names something (not a bare "Error"): only then is an identical failure predictable.
    edit_target: the file of a failed edit; a successful read of it since counts as a change.
    """
    if mode == "off" or not looped:
        return NONE
    if any(e.call_key == key and e.outcome == "success" for e in since):
        return NONE  # it has worked since: not a failing call any more
    repeated = own_failures is None or own_failures >= threshold
    if not repeated or not specific or mode == "warn" or changed_since(key, since, edit_target):
        return WARN
    return DENY


def changed_since(key: str, since: Sequence[CallEvent], edit_target: str | None = None) -> bool:
    """Did a state-changing call other than this one succeed in these events (or a read of the file the
    failed edit was about: the model now knows what the edit must match), or fail after writing (a failure
    row is stored with changes_state only then: `sed -i f && pytest`)?"""
    return any(
        e.call_key != key and (e.changes_state or (e.outcome == "success" and edit_target and e.target == edit_target))
        for e in since
    )
