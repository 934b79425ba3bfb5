"""Codex CLI: its hook events in, its JSON out, over the same host-neutral core as Claude Code.

Codex (checked against 0.169.0) sends Claude-shaped events (`session_id, transcript_path, cwd,
hook_event_name`, and `tool_name, tool_input, tool_use_id` for tool events; its shell tool
`exec_command` reaches hooks as `Bash` with `{command}`) and reads Claude-shaped answers
(`hookSpecificOutput` with `permissionDecision: "deny"` or `additionalContext`, which it adds as a
developer message). What differs:
- there is no failure event, and PostToolUse carries only the output text (`tool_response`), no exit
  code. The outcome comes from the session's rollout (`transcript_path`): the `item_completed` record
  of a `CommandExecution` with `id == tool_use_id` holds `status` and `exit_code`. The hook reads the
  file's tail, waiting briefly for a record not yet written; a call whose record is not found is
  recorded as neither a failure nor a success (guessing from the output would call `grep` finding
  nothing, or a test run printing "error", a failure). Other tools: a PostToolUse is a success;
- the guard's warning for an allowed repeat goes out with that call's PostToolUse (next to its result),
  as on Gemini CLI: PreToolUse is used only to deny;
- SessionStart has startup, resume, clear and compact.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...core.errors import InvalidInput
from ..shared import capture, carryover, guard
from ..claude_code.adapter import envelope
from ..claude_code.adapter import tool_call as claude_tool_call

if TYPE_CHECKING:
    from ...engine import Memory

HOST = "codex"
EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse")
SESSION_SOURCES = ("startup", "resume", "clear", "compact")
SHELL_TOOL = "Bash"
EDIT_TOOLS = frozenset({"apply_patch", "Edit", "Write"})
SHELL_TOOLS = frozenset({SHELL_TOOL})
# Tools whose success changes nothing the next call sees (any other tool, write_stdin included, counts as a change).
READ_TOOLS = frozenset({"view_image", "get_goal"})
IGNORED_FIELDS: Mapping[str, frozenset[str]] = {SHELL_TOOL: frozenset({"description"})}
ROLLOUT_TAIL_BYTES = 512 * 1024  # the newest records; a call's record is written right after it ends
ROLLOUT_WAIT_SECONDS = 0.4  # how long a hook waits for a record not written yet
ROLLOUT_POLL_SECONDS = 0.02


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a shell call ended, as the rollout says (exit_code None: the record was not found)."""

    exit_code: int | None
    output: str | None = None


def _own(tool_name: str) -> bool:
    """vlk-memact's own MCP tools (Codex names them mcp__<server>__<tool>, as Claude Code does)."""
    return capture.is_own_tool(tool_name)


def tool_call(event: Mapping[str, Any]) -> capture.ToolCall:
    """The core's view of a Codex tool call (Codex's tool names)."""
    base = claude_tool_call(event)
    return capture.ToolCall(
        session_id=base.session_id, cwd=base.cwd, tool_name=base.tool_name, tool_input=base.tool_input,
        tool_use_id=base.tool_use_id, edit_tools=EDIT_TOOLS, shell_tools=SHELL_TOOLS, read_tools=READ_TOOLS,
        ignored_fields=IGNORED_FIELDS, host=HOST,
    )


def _find(tail: bytes, tool_use_id: str) -> Outcome | None:
    """The completed CommandExecution of this call in the rollout's newest records, newest first."""
    needle = json.dumps(tool_use_id).encode()
    for line in reversed(tail.splitlines()):
        if needle not in line or b"item_completed" not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue  # the first, cut line of the tail, or a record being written
        payload = record.get("payload") if isinstance(record, dict) else None
        item = payload.get("item") if isinstance(payload, dict) else None
        if not isinstance(item, dict) or item.get("id") != tool_use_id or payload.get("type") != "item_completed":
            continue
        code = item.get("exit_code")
        if isinstance(code, int) and not isinstance(code, bool):
            output = item.get("aggregated_output")
            return Outcome(code, output if isinstance(output, str) else None)
    return None


def rollout_outcome(transcript_path: str | None, tool_use_id: str | None,
                    wait_seconds: float = ROLLOUT_WAIT_SECONDS) -> Outcome:
    """The exit code of a shell call from the session's rollout file; Outcome(None) when it is not there."""
    if not transcript_path or not tool_use_id:
        return Outcome(None)
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            with open(transcript_path, "rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                handle.seek(max(0, size - ROLLOUT_TAIL_BYTES))
                found = _find(handle.read(), tool_use_id)
        except OSError:
            found = None
        if found is not None or time.monotonic() >= deadline:
            return found or Outcome(None)
        time.sleep(ROLLOUT_POLL_SECONDS)


def store_only(event: Mapping[str, Any]) -> bool:
    """PreToolUse (the guard) is answered from the store alone. PostToolUse is not: its outcome is known only
    once the rollout is read, and the engine is loaded for a failure."""
    return event.get("hook_event_name") == "PreToolUse"


STORE_ONLY_EVENTS = store_only


def _context(event_name: str, text: str | None) -> dict[str, Any] | None:
    return envelope(event_name, additionalContext=text) if text else None


def _session_start(event: Mapping[str, Any], memory: Memory) -> dict[str, Any] | None:
    source = event.get("source")
    source = source if source in SESSION_SOURCES else "startup"
    session_id = tool_session(event)
    return _context("SessionStart", carryover.session_start(memory, session_id, source, host=HOST))


def tool_session(event: Mapping[str, Any]) -> str:
    value = event.get("session_id")
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"Codex event field 'session_id' must be a non-empty string, got {type(value).__name__}")
    return value


def _prompt(event: Mapping[str, Any], memory: Memory) -> dict[str, Any] | None:
    return _context("UserPromptSubmit", carryover.prompt(memory, tool_session(event)))


def _pre_tool(event: Mapping[str, Any], memory: Memory) -> dict[str, Any] | None:
    call = tool_call(event)
    if _own(call.tool_name):
        return None
    decision = capture.before_call(memory, call, say_warning=False)
    if decision.action == guard.DENY and decision.text:
        # Never "allow": that would skip the user's approval rules. Deny, or say nothing.
        return envelope("PreToolUse", permissionDecision="deny", permissionDecisionReason=decision.text)
    return None  # a warning goes out with this call's PostToolUse


def _post_tool(event: Mapping[str, Any], memory: Memory, known: Outcome | None = None) -> dict[str, Any] | None:
    call = tool_call(event)
    if _own(call.tool_name):
        return None
    if call.tool_name in SHELL_TOOLS:
        transcript = event.get("transcript_path")
        outcome = known if known is not None else rollout_outcome(
            transcript if isinstance(transcript, str) else None, call.tool_use_id)
        if outcome.exit_code is None:
            return None  # not known to have failed, not known to have worked: nothing is recorded
    else:
        outcome = Outcome(0)
    texts: list[str] = []
    # The guard's facts as PreToolUse saw them: this call's outcome is not stored yet.
    warning = capture.before_call(memory, call)
    if warning.action == guard.WARN and warning.text:
        texts.append(warning.text)
    if outcome.exit_code:
        response = event.get("tool_response")
        output = outcome.output if outcome.output is not None else response if isinstance(response, str) else ""
        said = capture.on_failure(memory, call, f"Exit code {outcome.exit_code}\n{output}".strip())
        if said:
            texts.append(said)
    else:
        capture.on_success(memory, call)
    return _context("PostToolUse", "\n".join(texts) if texts else None)


_HANDLERS: dict[str, Callable[[Mapping[str, Any], Memory], dict[str, Any] | None]] = {
    "SessionStart": _session_start,
    "UserPromptSubmit": _prompt,
    "PreToolUse": _pre_tool,
    "PostToolUse": _post_tool,
}


def handle(event: dict[str, Any], memory: Memory, outcome: Outcome | None = None) -> dict[str, Any] | None:
    """The JSON object the hook prints for this Codex event, or None when it prints nothing.

    outcome: how a shell call ended when it is known already (learn/codex.py read it from the rollout it
    learns); otherwise PostToolUse reads it from the rollout's tail. Raises InvalidInput for a payload that is
    not a Codex hook event; events vlk-memact does not use get None.
    """
    if not isinstance(event, Mapping):
        raise InvalidInput(f"a Codex hook event is a JSON object, got {type(event).__name__}")
    if event.get("hook_event_name") == "PostToolUse":
        return _post_tool(event, memory, outcome)
    handler = _HANDLERS.get(event.get("hook_event_name"))  # type: ignore[arg-type]
    return handler(event, memory) if handler is not None else None
