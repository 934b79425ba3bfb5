"""Claude Code hook events as the CLI sends them (field names as in tests/data/claude-code-hooks/, recorded
from the real CLI), built for in-process tests of vlk_memact.hosts.claude_code.adapter.handle."""

from __future__ import annotations

import itertools
from typing import Any

_ids = itertools.count(1)
CWD = "/work/project"


def base(event: str, session: str = "s1", cwd: str = CWD) -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": f"/root/.claude/projects/-work-project/{session}.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": event,
    }


def use_id() -> str:
    return f"toolu_{next(_ids):024d}"


def pre(tool: str, tool_input: dict[str, Any], session: str = "s1", tool_use_id: str | None = None) -> dict[str, Any]:
    return {**base("PreToolUse", session), "tool_name": tool, "tool_input": tool_input,
            "tool_use_id": tool_use_id or use_id()}


def failure(tool: str, tool_input: dict[str, Any], error: str, session: str = "s1", tool_use_id: str | None = None,
            is_interrupt: bool = False) -> dict[str, Any]:
    return {**base("PostToolUseFailure", session), "tool_name": tool, "tool_input": tool_input,
            "tool_use_id": tool_use_id or use_id(), "error": error, "is_interrupt": is_interrupt}


def success(tool: str, tool_input: dict[str, Any], response: Any = None, session: str = "s1",
            tool_use_id: str | None = None) -> dict[str, Any]:
    if response is None:
        response = {"stdout": "", "stderr": "", "interrupted": False, "isImage": False} if tool == "Bash" else {}
    return {**base("PostToolUse", session), "tool_name": tool, "tool_input": tool_input, "tool_response": response,
            "tool_use_id": tool_use_id or use_id()}


def session_start(source: str = "startup", session: str = "s1", cwd: str = CWD) -> dict[str, Any]:
    event = {**base("SessionStart", session, cwd), "source": source}
    event.pop("permission_mode")
    return event


def prompt(text: str = "go on", session: str = "s1") -> dict[str, Any]:
    return {**base("UserPromptSubmit", session), "prompt": text}


def bash(command: str, description: str | None = None) -> dict[str, Any]:
    return {"command": command, **({"description": description} if description else {})}


def run_failing(handle: Any, memory: Any, command: str, error: str, times: int, session: str = "s1") -> list[Any]:
    """PreToolUse then PostToolUseFailure of the same command, `times` times; the handler's answers."""
    answers = []
    for _ in range(times):
        tid = use_id()
        answers.append(handle(pre("Bash", bash(command), session, tid), memory))
        answers.append(handle(failure("Bash", bash(command), error, session, tid), memory))
    return answers
