"""Gemini CLI: its hook events in, its JSON out, over the same host-neutral core as Claude Code.

The behaviour is Claude Code's (capture, interception, guard, resolution, carry-over, the same texts);
what differs is where Gemini CLI (0.61) lets a hook speak:
- a failure has no event of its own: AfterTool carries it (gemini_events.parse_outcome tells it apart);
- BeforeTool can deny (`decision: "deny"`, the model reads the reason as the tool's result) or change
  the input, but cannot add context: the guard's warning for an allowed repeat goes out with that
  call's AfterTool instead, which is where Claude Code puts it too (next to the tool result);
- BeforeAgent plays UserPromptSubmit; SessionStart has startup, resume and clear (no compaction
  source: Gemini CLI's PreCompress fires before every turn, whether it compresses or not, and cannot
  inject, so it is not used);
- stdio MCP servers are not told the session: when the model calls one of our tools without a
  session_id, BeforeTool fills in the host's, so the model's calls and the hooks share one session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ...core.errors import InvalidInput
from ..shared import capture, carryover, fixes, guard
from . import events as ge

if TYPE_CHECKING:
    from ...engine import Memory

HOST = "gemini"
EVENTS = ("SessionStart", "BeforeAgent", "BeforeTool", "AfterTool")


def store_only(event: Mapping[str, Any]) -> bool:
    """Answered from the store alone (the hook process does not load the engine): the guard, and a result
    that is not a failure (resolution). Gemini CLI has one event for both outcomes, so the payload decides."""
    name = event.get("hook_event_name")
    if name == "BeforeTool":
        return True
    if name != "AfterTool":
        return False
    try:
        outcome = ge.parse_outcome(str(event.get("tool_name", "")), event.get("tool_response"))
    except ge.EventError:
        return False  # the full path reports what is wrong with it
    return not outcome.failed


# The adapter contract (commands.HANDLERS) names the events answered from the store alone; Gemini CLI has
# one event for a failure and a success, so it is a test of the payload instead of a list of names.
STORE_ONLY_EVENTS = store_only


def tool_call(event: ge.Event) -> capture.ToolCall:
    """The core's view of a Gemini CLI tool call (Gemini's tool names, the derived call id)."""
    assert event.call is not None
    call = event.call
    cwd = event.cwd
    if call.name == ge.SHELL_TOOL:
        where = call.input.get("dir_path")
        cwd = where if isinstance(where, str) and where.strip() else cwd  # the command's own directory
    return capture.ToolCall(
        session_id=event.session_id,
        cwd=cwd,
        tool_name=call.name,
        tool_input=dict(call.input),
        tool_use_id=call.call_id,
        edit_tools=ge.EDIT_TOOLS,
        shell_tools=ge.SHELL_TOOLS,
        read_tools=ge.READ_TOOLS,
        ignored_fields=ge.IGNORED_FIELDS,
        host=HOST,
    )


def _context(event_name: str, text: str | None) -> dict[str, Any] | None:
    return ge.context_envelope(event_name, text) if text else None


def _session_start(event: ge.Event, memory: Memory) -> dict[str, Any] | None:
    text = carryover.session_start(memory, event.session_id, event.source or "startup",
                                   fixes.lesson_lookup(memory, event.session_id), host=HOST)
    return _context("SessionStart", text)


def _before_agent(event: ge.Event, memory: Memory) -> dict[str, Any] | None:
    return _context("BeforeAgent", carryover.prompt(memory, event.session_id))


def _before_tool(event: ge.Event, memory: Memory) -> dict[str, Any] | None:
    assert event.call is not None
    if event.call.own_tool:
        given = event.call.input.get("session_id")
        if given is None or (isinstance(given, str) and not given.strip()):
            return ge.input_envelope({"session_id": event.session_id})
        return None
    decision = capture.before_call(memory, tool_call(event), say_warning=False)
    if decision.action == guard.DENY and decision.text:
        return ge.deny_envelope(decision.text)
    return None  # a warning cannot travel with BeforeTool: AfterTool of the same call carries it


def _after_tool(event: ge.Event, memory: Memory) -> dict[str, Any] | None:
    assert event.call is not None and event.outcome is not None
    if event.call.own_tool or event.outcome.interrupted:
        return None  # our own tools' errors are input mistakes; a cancel is the user's, not a failure
    call = tool_call(event)
    texts: list[str] = []
    # The guard's facts as BeforeTool saw them: this call's outcome is not stored yet.
    warning = capture.before_call(memory, call)
    if warning.action == guard.WARN and warning.text:
        texts.append(warning.text)
    if event.outcome.failed:
        said = capture.on_failure(memory, call, event.outcome.text)
        if said:
            texts.append(said)
    else:
        capture.on_success(memory, call)
    return _context("AfterTool", "\n".join(texts) if texts else None)


_HANDLERS: dict[str, Callable[[ge.Event, Memory], dict[str, Any] | None]] = {
    "SessionStart": _session_start,
    "BeforeAgent": _before_agent,
    "BeforeTool": _before_tool,
    "AfterTool": _after_tool,
}


def handle(event: Mapping[str, Any], memory: Memory) -> dict[str, Any] | None:
    """The JSON object the hook prints for this Gemini CLI event, or None when it prints nothing.

    Raises InvalidInput for a payload that is not a Gemini CLI hook event; events vlk-memact does not
    use get None.
    """
    try:
        parsed = ge.parse(event)
    except ge.EventError as exc:
        raise InvalidInput(f"Gemini CLI hook event: {exc}") from None
    handler = _HANDLERS.get(parsed.name)
    return handler(parsed, memory) if handler is not None else None
