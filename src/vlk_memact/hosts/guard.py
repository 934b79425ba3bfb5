"""The guard's rule, pure: is this the same call, did anything change since it last failed, deny or warn?

Trigger: a tool call identical (same tool, same input, whitespace-normalised) to one whose failures
formed a loop that still has an active anchor.
Why: re-running an unchanged failing command cannot help; the host would spend a turn and the
model's context on the same error again.
Outcome: if nothing state-changing succeeded in the session since that call last failed, deny (the
anchor is the reason the model reads); if something did, allow with the anchor as a warning.
`VLK_HOOK_GUARD=warn` never denies; `off` does nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Claude Code's tool names; another host passes its own sets.
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
SHELL_TOOLS = frozenset({"Bash", "PowerShell"})
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
    changes_state: bool


def _normalise(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split())
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
    tool_name: str, edit_tools: Collection[str] = EDIT_TOOLS, shell_tools: Collection[str] = SHELL_TOOLS
) -> bool:
    """Can a success of this tool change what the next call sees? Edits and shell commands can; reads cannot."""
    return tool_name in edit_tools or tool_name in shell_tools


def decide(mode: str, key: str, looped: bool, since: Sequence[CallEvent]) -> str:
    """DENY, WARN or NONE for a call with this key.

    looped: the call's failures formed a loop whose anchor is still active.
    since: the session's calls after this call last failed, oldest first.
    """
    if mode == "off" or not looped:
        return NONE
    if any(e.call_key == key and e.outcome == "success" for e in since):
        return NONE  # it has worked since: not a failing call any more
    return WARN if changed_since(key, since) or mode == "warn" else DENY


def changed_since(key: str, since: Sequence[CallEvent]) -> bool:
    """Did a state-changing call other than this one succeed in these events?"""
    return any(e.outcome == "success" and e.changes_state and e.call_key != key for e in since)
