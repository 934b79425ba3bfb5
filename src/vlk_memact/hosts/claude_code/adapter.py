"""Claude Code: its hook events in, its JSON envelopes out. Everything else is the host-neutral core.

Field names follow the hook types of @anthropic-ai/claude-agent-sdk (sdk.d.ts; checked by
tests/hosts/claude_code/test_hooks_claude_code.py against the pinned package) and payloads recorded from the real CLI.
`handle(event, memory)` is the whole decision, in process: `vlk-memact hook claude-code` is this
function plus stdin, stdout, a deadline and never breaking the host (runner.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ...core.errors import InvalidInput
from ..shared import capture, carryover, fixes, guard

if TYPE_CHECKING:
    from ...engine import Memory

HOST = "claude-code"
EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure")
SESSION_SOURCES = ("startup", "resume", "clear", "compact", "fork")
# Events answered from the store alone (the guard, resolution): the hook process does not load the engine.
STORE_ONLY_EVENTS = frozenset({"PreToolUse", "PostToolUse"})


def _text(event: Mapping[str, Any], name: str, required: bool = True) -> str | None:
    value = event.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise InvalidInput(f"Claude Code event field '{name}' must be a non-empty string, got {type(value).__name__}")
    return value


def tool_call(event: Mapping[str, Any]) -> capture.ToolCall:
    """The tool call of a PreToolUse, PostToolUse or PostToolUseFailure event."""
    tool_input = event.get("tool_input")
    return capture.ToolCall(
        session_id=_text(event, "session_id") or "",
        cwd=_text(event, "cwd", required=False),
        tool_name=_text(event, "tool_name") or "",
        tool_input=tool_input if tool_input is not None else {},
        tool_use_id=_text(event, "tool_use_id", required=False),
        host=HOST,
    )


def envelope(event_name: str, **fields: Any) -> dict[str, Any]:
    """hookSpecificOutput, the shape Claude Code reads additionalContext and decisions from (it requires
    hookEventName; plain stdout would reach the model only on SessionStart and UserPromptSubmit)."""
    return {"hookSpecificOutput": {"hookEventName": event_name, **fields}}


def _context(event_name: str, text: str | None) -> dict[str, Any] | None:
    return envelope(event_name, additionalContext=text) if text else None


def _session_start(event: Mapping[str, Any], memory: Memory) -> dict[str, Any] | None:
    source = event.get("source")
    source = source if source in SESSION_SOURCES else "startup"
    session = _text(event, "session_id") or ""
    lookup = fixes.lesson_lookup(memory, session)
    return _context("SessionStart", carryover.session_start(memory, session, source, lookup, host=HOST))


def _prompt(event: Mapping[str, Any], memory: Memory) -> dict[str, Any] | None:
    return _context("UserPromptSubmit", carryover.prompt(memory, _text(event, "session_id") or ""))


def _pre_tool(event: Mapping[str, Any], memory: Memory) -> dict[str, Any] | None:
    call = tool_call(event)
    if capture.is_own_tool(call.tool_name):
        return None
    decision = capture.before_call(memory, call)
    if decision.action == guard.DENY:
        # Never "allow": that would skip the user's permission rules. Deny, or say nothing about permission.
        return envelope("PreToolUse", permissionDecision="deny", permissionDecisionReason=decision.text)
    if decision.action == guard.WARN:
        return envelope("PreToolUse", additionalContext=decision.text)
    return None


def _post_tool(event: Mapping[str, Any], memory: Memory) -> dict[str, Any] | None:
    call = tool_call(event)
    if not capture.is_own_tool(call.tool_name):
        capture.on_success(memory, call)
    return None


def _post_tool_failure(event: Mapping[str, Any], memory: Memory) -> dict[str, Any] | None:
    call = tool_call(event)
    if event.get("is_interrupt") is True or capture.is_own_tool(call.tool_name):
        return None  # the user stopped it: not a failure of the approach
    error = event.get("error")
    return _context("PostToolUseFailure", capture.on_failure(memory, call, error if isinstance(error, str) else ""))


_HANDLERS: dict[str, Callable[[Mapping[str, Any], Memory], dict[str, Any] | None]] = {
    "SessionStart": _session_start,
    "UserPromptSubmit": _prompt,
    "PreToolUse": _pre_tool,
    "PostToolUse": _post_tool,
    "PostToolUseFailure": _post_tool_failure,
}


def handle(event: dict[str, Any], memory: Memory) -> dict[str, Any] | None:
    """The JSON object the hook prints for this event, or None when it prints nothing.

    Raises InvalidInput for an event that is not a Claude Code hook payload; events vlk-memact does not
    use get None.
    """
    if not isinstance(event, Mapping):
        raise InvalidInput(f"a Claude Code hook event is a JSON object, got {type(event).__name__}")
    handler = _HANDLERS.get(event.get("hook_event_name"))  # type: ignore[arg-type]
    return handler(event, memory) if handler is not None else None
