"""Gemini CLI's hook events, read: what was called, did it fail, with what text, on which file.

Gemini CLI (`@google/gemini-cli`, checked against 0.61.0) sends one JSON object on stdin per event,
with `session_id, transcript_path, cwd, hook_event_name, timestamp` and, for tool events, `tool_name`,
`tool_input`, `tool_response{llmContent, returnDisplay, error?}` (AfterTool) and `mcp_context` (MCP
tools). Unlike Claude Code it has no failure event and no tool-call id:
- a failure is `tool_response.error` (every tool but the shell reports failure there), or, for
  `run_shell_command`, the `Exit Code: N` / `Error:` / `Signal:` lines the shell tool writes into
  `llmContent` (it never sets `error` for a non-zero exit);
- the call id is derived from the session, the event's timestamp, the tool and its input, so a hook
  run twice for one call records once.
Pure functions, no I/O: the adapter (gemini.py) and the tests use them on recorded payloads.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SHELL_TOOL = "run_shell_command"
# Gemini CLI's EDIT_TOOL_NAMES (packages/core/src/tools/tool-names.ts): the tools that change files.
EDIT_TOOLS = frozenset({"replace", "write_file"})
SHELL_TOOLS = frozenset({SHELL_TOOL})
# Built-in tools that only read local files or the tool list: their success changes nothing a retry would see
# (web_fetch and google_web_search are not here: the guard counts a network fetch as a change).
READ_TOOLS = frozenset({"read_file", "read_many_files", "list_directory", "glob", "search_file_content", "grep",
                        "write_todos"})
# Fields that describe a call to the user without changing what runs.
IGNORED_FIELDS: Mapping[str, frozenset[str]] = {SHELL_TOOL: frozenset({"description"})}
# vlk-memact's own MCP tools: their errors are the model's input mistakes, not the project's failures.
OWN_TOOLS = frozenset({
    "vlk_record_state", "vlk_fetch_context", "vlk_time_travel", "vlk_revoke_future",
    "vlk_get_history", "vlk_search_memory", "vlk_summarize_session",
})
# Input fields that name the file a tool works on, in the order they are tried.
FILE_FIELDS = ("file_path", "absolute_path", "path", "dir_path")

SESSION_SOURCES = frozenset({"startup", "resume", "clear"})

_WRAPPER = re.compile(r"^\s*<untrusted_context>\n?(.*?)\n?</untrusted_context>\s*$", re.DOTALL)
# The lines the shell tool appends after the output, in this order (packages/core/src/tools/shell.ts).
_TRAILER = re.compile(r"^(Error|Exit Code|Signal|Background PIDs|Process Group PGID): (.*)$")
_USER_CANCEL = "Command was cancelled by user"
_TIMED_OUT = "Command was automatically cancelled"


class EventError(ValueError):
    """The payload is not a Gemini CLI hook event this adapter can read."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call as the guard and the capture see it."""

    name: str
    input: Mapping[str, Any]
    call_id: str  # derived: Gemini CLI gives tool calls no id in hook payloads
    file_context: str | None  # the file the tool works on, else the working directory
    own_tool: bool  # one of vlk-memact's MCP tools
    mcp_server: str | None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an AfterTool payload says happened."""

    failed: bool
    interrupted: bool  # cancelled by the user: not a failure of the command
    text: str  # the error (failure) or the output (success), without the CLI's wrapper and noise lines
    exit_code: int | None


@dataclass(frozen=True, slots=True)
class Event:
    """One parsed Gemini CLI hook event."""

    name: str  # hook_event_name
    session_id: str
    cwd: str | None
    timestamp: str | None
    source: str | None = None  # SessionStart
    prompt: str | None = None  # BeforeAgent
    call: ToolCall | None = None  # BeforeTool, AfterTool
    outcome: Outcome | None = None  # AfterTool


def _text_of(content: Any) -> str:
    """llmContent as text: a string, a Part, or a list of Parts (MCP tools return lists)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        value = content.get("text")
        return value if isinstance(value, str) else ""
    if isinstance(content, list):
        return "\n".join(t for t in (_text_of(c) for c in content) if t)
    return ""


def unwrap(text: str) -> str:
    """The tool's own text, without the `<untrusted_context>` wrapper Gemini CLI puts around it."""
    match = _WRAPPER.match(text)
    return match.group(1) if match else text


def parse_outcome(tool_name: str, response: Any) -> Outcome:
    """Failure or success of one tool call, from its `tool_response`."""
    if not isinstance(response, Mapping):
        raise EventError("AfterTool without a tool_response object")
    body = unwrap(_text_of(response.get("llmContent")))
    error = response.get("error")
    if isinstance(error, Mapping) and error:
        message = error.get("message")
        text = message if isinstance(message, str) and message.strip() else body
        return Outcome(failed=True, interrupted=False, text=text, exit_code=None)
    if tool_name == SHELL_TOOL:
        return _shell_outcome(body)
    return Outcome(failed=False, interrupted=False, text=body, exit_code=None)


def _shell_outcome(body: str) -> Outcome:
    """run_shell_command's `Output: ...` block and trailer lines, as Claude Code words a failed command:
    `Exit code N`, then the output (so the same failure reads the same under both hosts)."""
    if body.startswith(_USER_CANCEL):
        return Outcome(failed=False, interrupted=True, text=body, exit_code=None)
    if body.startswith(_TIMED_OUT):  # a timeout is the command failing, not the user stopping it
        return Outcome(failed=True, interrupted=False, text=body, exit_code=None)
    lines = body.split("\n")
    trailer: dict[str, str] = {}
    while lines and (match := _TRAILER.match(lines[-1])) and match.group(1) not in trailer:
        trailer[match.group(1)] = match.group(2)
        lines.pop()
    output = "\n".join(lines).removeprefix("Output: ")
    if output.strip() == "(empty)":
        output = ""
    code = trailer.get("Exit Code", "").strip()
    exit_code = int(code) if re.fullmatch(r"-?\d+", code) else None
    if "Error" in trailer and exit_code is None and output:
        # The shell tool's own Error line comes with empty output (the command could not start);
        # after real output it is the command's last line, not a failure.
        output += "\nError: " + trailer.pop("Error")
    failed = exit_code not in (None, 0) or "Error" in trailer or "Signal" in trailer
    if not failed:
        exit_code = 0
    # Process group and background PIDs differ on every run and say nothing about the failure.
    parts = [f"Exit code {exit_code}" if failed and exit_code else "", output.rstrip("\n"),
             f"Error: {trailer['Error']}" if "Error" in trailer else "",
             f"Signal: {trailer['Signal']}" if "Signal" in trailer else ""]
    text = "\n".join(p for p in parts if p)
    return Outcome(failed=failed, interrupted=False, text=text, exit_code=exit_code)


def derive_call_id(session_id: str, timestamp: str | None, tool_name: str, tool_input: Any) -> str:
    """A stable id for one call: a hook run twice on one AfterTool payload derives the same id."""
    blob = json.dumps([session_id, timestamp, tool_name, tool_input], sort_keys=True, ensure_ascii=False,
                      default=str)
    return "gemini-" + hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _file_context(tool_input: Mapping[str, Any], cwd: str | None) -> str | None:
    for name in FILE_FIELDS:
        value = tool_input.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return cwd


def _string(payload: Mapping[str, Any], name: str, required: bool = False) -> str | None:
    value = payload.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise EventError(f"field {name!r} must be a non-empty string, got {type(value).__name__}")
    return value


def parse(payload: Any) -> Event:
    """One hook payload (the decoded stdin JSON) as an Event; EventError says what is wrong with it."""
    if not isinstance(payload, Mapping):
        raise EventError(f"a hook event is a JSON object, got {type(payload).__name__}")
    name = _string(payload, "hook_event_name", required=True)
    session = _string(payload, "session_id", required=True)
    assert name is not None and session is not None
    cwd = _string(payload, "cwd")
    timestamp = _string(payload, "timestamp")
    if name == "SessionStart":
        source = payload.get("source")
        return Event(name, session, cwd, timestamp, source=source if source in SESSION_SOURCES else "startup")
    if name == "BeforeAgent":
        prompt = payload.get("prompt")
        return Event(name, session, cwd, timestamp, prompt=prompt if isinstance(prompt, str) else None)
    if name not in ("BeforeTool", "AfterTool"):
        return Event(name, session, cwd, timestamp)
    tool = _string(payload, "tool_name", required=True)
    assert tool is not None
    tool_input = payload.get("tool_input")
    if tool_input is None:
        tool_input = {}
    if not isinstance(tool_input, Mapping):
        raise EventError(f"field 'tool_input' must be an object, got {type(tool_input).__name__}")
    mcp = payload.get("mcp_context")
    mcp = mcp if isinstance(mcp, Mapping) else {}
    mcp_tool = mcp.get("tool_name")
    # Gemini names MCP tools mcp_<server>_<tool>; mcp_context names the tool itself when present.
    named_ours = tool.startswith("mcp_") and any(tool.endswith(f"_{t}") for t in OWN_TOOLS)
    own = mcp_tool in OWN_TOOLS or named_ours
    call = ToolCall(
        name=tool,
        input=dict(tool_input),
        call_id=derive_call_id(session, timestamp, tool, tool_input),
        file_context=_file_context(tool_input, cwd),
        own_tool=own,
        mcp_server=mcp.get("server_name") if isinstance(mcp.get("server_name"), str) else None,
    )
    outcome = parse_outcome(tool, payload.get("tool_response")) if name == "AfterTool" else None
    return Event(name, session, cwd, timestamp, call=call, outcome=outcome)


# ---- what goes back to the CLI ----------------------------------------------------------------

# Gemini CLI escapes `<` and `>` in additionalContext (to &lt; &gt;) before the model sees it; the
# texts we inject avoid angle brackets so the model reads them as written.

def context_envelope(event_name: str, text: str) -> dict[str, Any]:
    """additionalContext for SessionStart, BeforeAgent and AfterTool (reaches the model's next request)."""
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}


def deny_envelope(reason: str) -> dict[str, Any]:
    """BeforeTool: the call does not run; the model reads `Tool execution blocked: <reason>` as its result."""
    return {"decision": "deny", "reason": reason}


def input_envelope(tool_input: Mapping[str, Any]) -> dict[str, Any]:
    """BeforeTool: run the call with these input fields (merged into the model's input)."""
    return {"hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": dict(tool_input)}}
