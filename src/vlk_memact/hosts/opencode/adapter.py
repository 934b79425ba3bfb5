"""OpenCode: the events of vlk-memact's OpenCode plugin in, its answers out, over the host-neutral core.

OpenCode (checked against 1.18.33) has no command hooks: a JS plugin (opencode_install.PLUGIN, written by
`vlk-memact install opencode`) runs inside it and hands each plugin hook to `vlk-memact hook opencode`
as one JSON object on stdin, then applies the answer:

    plugin hook                               event sent              answer applied
    experimental.chat.system.transform /      session.start           {"system": text}: kept by the plugin and
      chat.message (first of a session)                               pushed into every system prompt;
                                                                      {"armed": bool}: a failure is recorded
    chat.message (later ones)                 chat.message            {"system": text}: added to the kept text
    tool.execute.before                       tool.execute.before     {"deny": reason}: thrown, so the model reads
                                                                      it as the tool result and the call never runs
    tool.execute.after                        tool.execute.after      {"append": text}: added to the tool output
    event (a tool part turned "error")        tool.error              {"system": text}: in the next request only
    experimental.session.compacting           session.compacting      {"context": text}: into the summary prompt

Every event carries `session_id` and `cwd` (the plugin's `directory`: tool inputs have no cwd). Until a
session has a recorded failure, the plugin does not hand over tool.execute.before or a successful
tool.execute.after (capture.before_call and on_success would find nothing to do): a clean session starts
no hook process per tool call.
A tool call that throws (a read of a missing file, an edit whose text is not found, our own deny) never
reaches `tool.execute.after`; the plugin sees it as a `message.part.updated` event whose tool part turned
to status "error" (with the input and the message), after the result has gone into the conversation, so
what there is to say about it goes into the next request's system prompt. The plugin skips the parts of
calls it denied itself; a call the user aborted or refused permission for is not a failure of the approach.
A bash call whose exit is unknown (killed, timed out) is recorded as neither outcome.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ...core.errors import InvalidInput
from ..shared import capture, carryover, guard
from ..gemini.events import OWN_TOOLS
from ..shared.inject import PREFIX

if TYPE_CHECKING:
    from ...engine import Memory

HOST = "opencode"
EVENTS = ("session.start", "chat.message", "tool.execute.before", "tool.execute.after", "tool.error",
          "session.compacting")
# Errors of tool parts that are not failures of the approach: the user stopped the call or refused it.
NOT_FAILURES = ("aborted", "rejected permission", "user dismissed")
SHELL_TOOL = "bash"
# OpenCode's built-in tools that change files (packages/opencode/src/tool/registry.ts).
EDIT_TOOLS = frozenset({"edit", "write", "patch", "multiedit", "apply_patch"})
SHELL_TOOLS = frozenset({SHELL_TOOL})
# Built-in tools whose success changes nothing the next call sees (any other tool counts as a change).
READ_TOOLS = frozenset({"read", "glob", "grep", "list", "todoread", "todowrite"})
IGNORED_FIELDS: Mapping[str, frozenset[str]] = {SHELL_TOOL: frozenset({"description", "timeout"})}
# OpenCode names the file of a call in camelCase; the core reads file_path.
_RENAMED = {"filePath": "file_path"}


def _text(event: Mapping[str, Any], name: str, required: bool = True) -> str | None:
    value = event.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise InvalidInput(f"OpenCode event field '{name}' must be a non-empty string, got {type(value).__name__}")
    return value


def exit_code(event: Mapping[str, Any]) -> int | None:
    """The bash exit code of a tool.execute.after event (`metadata.exit`), None when OpenCode gave none."""
    metadata = event.get("metadata")
    value = metadata.get("exit") if isinstance(metadata, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def store_only(event: Mapping[str, Any]) -> bool:
    """Answered from the store alone: the guard, and a result that is not a failure (resolution)."""
    name = event.get("hook_event_name")
    if name == "tool.execute.before":
        return True
    return name == "tool.execute.after" and not exit_code(event)


STORE_ONLY_EVENTS = store_only


def tool_call(event: Mapping[str, Any]) -> capture.ToolCall:
    """The core's view of an OpenCode tool call (OpenCode's tool names; filePath read as file_path)."""
    args = event.get("args")
    if args is None:
        args = {}
    if isinstance(args, Mapping):
        args = {_RENAMED.get(str(k), str(k)): v for k, v in args.items()}
    cwd = _text(event, "cwd", required=False)
    tool = _text(event, "tool") or ""
    if tool == SHELL_TOOL and isinstance(args, Mapping):
        where = args.get("workdir")
        cwd = where if isinstance(where, str) and where.strip() else cwd  # the command's own directory
    return capture.ToolCall(
        session_id=_text(event, "session_id") or "",
        cwd=cwd,
        tool_name=tool,
        tool_input=args,
        tool_use_id=_text(event, "call_id", required=False),
        edit_tools=EDIT_TOOLS,
        shell_tools=SHELL_TOOLS,
        read_tools=READ_TOOLS,
        ignored_fields=IGNORED_FIELDS,
        host=HOST,
    )


def _own(call: capture.ToolCall) -> bool:
    """vlk-memact's own MCP tools (OpenCode names an MCP tool <server>_<tool>): their errors are input mistakes."""
    return any(call.tool_name.endswith("_" + name) for name in OWN_TOOLS)


def _recorded(memory: Memory, session_id: str, outcome: str | None = None) -> bool:
    """Has the session recorded a call (of this outcome)? Then it is being continued (`opencode run
    --continue/--session`), and with a failure among them the guard and resolution have work."""
    key = memory.session_key(session_id)
    with memory.reading() as tx:
        return bool(tx.host_calls(key, outcome=outcome, limit=1))


def _system(text: str | None) -> dict[str, Any] | None:
    return {"system": text} if text else None


def _session_start(event: Mapping[str, Any], memory: Memory) -> dict[str, Any]:
    """The session's lessons, and `armed`: whether it has a failure already (until it has one, the plugin does
    not hand over the guard's and the successes' events: the core would answer nothing to them)."""
    session_id = _text(event, "session_id") or ""
    source = "resume" if _recorded(memory, session_id) else "startup"
    text = carryover.session_start(memory, session_id, source, host=HOST)
    return {**(_system(text) or {}), "armed": _recorded(memory, session_id, "failure")}


def _chat_message(event: Mapping[str, Any], memory: Memory) -> dict[str, Any] | None:
    return _system(carryover.prompt(memory, _text(event, "session_id") or ""))


def _compacting(event: Mapping[str, Any], memory: Memory) -> dict[str, Any] | None:
    text = carryover.session_start(memory, _text(event, "session_id") or "", "compact", host=HOST)
    return {"context": text} if text else None


def _before(event: Mapping[str, Any], memory: Memory) -> dict[str, Any] | None:
    call = tool_call(event)
    if _own(call):
        return None
    decision = capture.before_call(memory, call, say_warning=False)
    if decision.action == guard.DENY and decision.text:
        return {"deny": decision.text}
    return None  # a warning goes out with this call's tool.execute.after (next to its result)


def _after(event: Mapping[str, Any], memory: Memory) -> dict[str, Any] | None:
    call = tool_call(event)
    if _own(call):
        return None
    code = exit_code(event) if call.tool_name == SHELL_TOOL else 0
    if code is None:
        return None  # killed or timed out: not known to have failed, not known to have worked
    texts: list[str] = []
    # The guard's facts as tool.execute.before saw them: this call's outcome is not stored yet.
    warning = capture.before_call(memory, call)
    if warning.action == guard.WARN and warning.text:
        texts.append(warning.text)
    if code != 0:
        metadata = event.get("metadata")
        raw = metadata.get("output") if isinstance(metadata, Mapping) else None
        if not isinstance(raw, str) or not raw.strip():
            raw = event.get("output") if isinstance(event.get("output"), str) else ""
        said = capture.on_failure(memory, call, f"Exit code {code}\n{raw}".strip())
        if said:
            texts.append(said)
    else:
        capture.on_success(memory, call)
    return {"append": "\n".join(texts)} if texts else None


def _tool_error(event: Mapping[str, Any], memory: Memory) -> dict[str, Any] | None:
    call = tool_call(event)
    error = event.get("error")
    error = error if isinstance(error, str) else ""
    lowered = error.lower()
    if _own(call) or error.startswith(PREFIX) or any(word in lowered for word in NOT_FAILURES):
        return None
    texts: list[str] = []
    warning = capture.before_call(memory, call)
    if warning.action == guard.WARN and warning.text:
        texts.append(warning.text)
    said = capture.on_failure(memory, call, error)
    if said:
        texts.append(said)
    return _system("\n".join(texts) if texts else None)


_HANDLERS: dict[str, Callable[[Mapping[str, Any], Memory], dict[str, Any] | None]] = {
    "session.start": _session_start,
    "chat.message": _chat_message,
    "tool.execute.before": _before,
    "tool.execute.after": _after,
    "tool.error": _tool_error,
    "session.compacting": _compacting,
}


def handle(event: Mapping[str, Any], memory: Memory) -> dict[str, Any] | None:
    """The JSON object the plugin applies for this event, or None when there is nothing to say.

    Raises InvalidInput for a payload that is not an event of vlk-memact's OpenCode plugin.
    """
    if not isinstance(event, Mapping):
        raise InvalidInput(f"an OpenCode plugin event is a JSON object, got {type(event).__name__}")
    handler = _HANDLERS.get(event.get("hook_event_name"))  # type: ignore[arg-type]
    return handler(event, memory) if handler is not None else None
