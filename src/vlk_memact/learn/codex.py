"""Codex CLI's rollouts, made into the hook events Codex delivers (hosts/codex/adapter.py's).

A rollout ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl) is JSON Lines `{timestamp, type, payload}`:
`session_meta` (the session's id and cwd) first, then `response_item`s (`function_call {name, arguments,
call_id}`, `custom_tool_call`, `function_call_output {call_id, output}`, messages) and `event_msg`s
(`item_completed` of a `UserMessage`, or of a `CommandExecution` whose id is the call id, with `exit_code`
and `aggregated_output`; older versions: `user_message`, `exec_command_end`). Codex's hooks see its shell
tool (`exec_command`, `shell`) as `Bash` with `{command}`, and PostToolUse carries no exit code: the live
hook reads it from the rollout, the learner hands over the one it read (hosts.codex.handle's `outcome`), so
a shell call is a failure exactly when its exit code is not 0, and a call without one is neither.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from ..hosts.codex.adapter import SHELL_TOOL, Outcome
from .events import EPOCH, HookEvent, Session, Source, file_stamp, json_lines, parse_time

HOST = "codex"
SHELL_NAMES = frozenset({"exec_command", "shell", "container.exec", "local_shell"})


def sources(path: Path) -> list[Source]:
    """The session a rollout holds, from its session_meta record."""
    for record in json_lines(path):
        payload = record.get("payload")
        if record.get("type") == "session_meta" and isinstance(payload, dict):
            session_id = payload.get("id") or payload.get("session_id")
            if isinstance(session_id, str) and session_id:
                started = parse_time(payload.get("timestamp") or record.get("timestamp"), EPOCH)
                cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
                return [Source(str(path), file_stamp(path), session_id, started, cwd, path)]
        break  # a rollout starts with its session_meta
    return []


def _command(name: str, arguments: Any) -> dict[str, Any]:
    """The tool input Codex's hooks show: {command} for the shell, the parsed arguments otherwise."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            arguments = {"input": arguments}
    if not isinstance(arguments, dict):
        arguments = {"input": arguments}
    if name in SHELL_NAMES:
        command = arguments.get("cmd", arguments.get("command"))
        if isinstance(command, list):  # ["bash", "-lc", "cmd"] runs cmd
            words = command[2:] if command[:2] in (["bash", "-lc"], ["/bin/bash", "-lc"]) else command
            command = " ".join(str(c) for c in words if c)
        return {"command": command if isinstance(command, str) else json.dumps(command)}
    return arguments


def _outcomes(records: list[tuple[datetime, dict[str, Any]]]) -> dict[str, Outcome]:
    """call id -> how its command ended (exit code, output), from the rollout's command records."""
    found: dict[str, Outcome] = {}
    for _, record in records:
        payload = record.get("payload") if isinstance(record.get("payload"), dict) else {}
        item = payload.get("item") if payload.get("type") == "item_completed" else None
        if isinstance(item, dict) and item.get("type") == "CommandExecution":
            ident, code, output = item.get("id"), item.get("exit_code"), item.get("aggregated_output")
        elif payload.get("type") == "exec_command_end":
            ident, code = payload.get("call_id"), payload.get("exit_code")
            output = payload.get("aggregated_output") or "\n".join(
                str(payload.get(k) or "") for k in ("stdout", "stderr") if payload.get(k))
        else:
            continue
        if isinstance(ident, str) and isinstance(code, int) and not isinstance(code, bool):
            found[ident] = Outcome(code, output if isinstance(output, str) else None)
    return found


def read(sources: list[Source]) -> Session:
    """One session's rollouts as the hook events Codex would have delivered."""
    first = min(sources, key=lambda s: s.started)
    session = Session(HOST, first.session_id, first.cwd)
    records: list[tuple[datetime, dict[str, Any]]] = []
    last = first.started
    for source in sorted(sources, key=lambda s: s.started):
        for record in json_lines(source.locator, session):
            last = parse_time(record.get("timestamp"), last)
            records.append((last, record))
    outcomes = _outcomes(records)
    transcript = str(first.locator)
    base = {"session_id": session.session_id, "transcript_path": transcript, "cwd": session.cwd or "/"}
    calls: dict[str, tuple[datetime, dict[str, Any]]] = {}
    done: set[str] = set()
    for at, record in records:
        payload = record.get("payload") if isinstance(record.get("payload"), dict) else {}
        kind = payload.get("type")
        if record.get("type") == "compacted":
            session.events.append(HookEvent(at, base | {"hook_event_name": "SessionStart", "source": "compact"}))
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            call_id = payload.get("call_id") or payload.get("id")
            name = str(payload.get("name") or ("local_shell" if kind == "local_shell_call" else "?"))
            arguments = payload.get("arguments", payload.get("input", payload.get("action")))
            if isinstance(call_id, str) and call_id not in calls and call_id not in done:
                shell = name in SHELL_NAMES
                calls[call_id] = (at, {"tool_name": SHELL_TOOL if shell else name,
                                       "tool_input": _command(name if shell else "", arguments),
                                       "tool_use_id": call_id})
        elif kind in ("function_call_output", "custom_tool_call_output"):
            _finish(session, base, calls, done, outcomes, at, payload)
        elif _prompt(payload) is not None:
            ident = (payload.get("item") or {}).get("id") if kind == "item_completed" else None
            prompt = base | {"hook_event_name": "UserPromptSubmit", "prompt": _prompt(payload)}
            session.events.append(HookEvent(at, prompt, unit=f"{session.session_id}:prompt:{ident or at.isoformat()}",
                                            completes=True))
    session.open_calls = len(calls)
    session.events.sort(key=lambda e: e.at)
    return session


def _prompt(payload: dict[str, Any]) -> str | None:
    """The text of a user's prompt record (a completed UserMessage, or an older user_message)."""
    item = payload.get("item")
    if payload.get("type") == "item_completed" and isinstance(item, dict) and item.get("type") == "UserMessage":
        parts = item.get("content") if isinstance(item.get("content"), list) else []
        return "\n".join(str(p.get("text") or "") for p in parts if isinstance(p, dict)) or None
    if payload.get("type") == "user_message" and isinstance(payload.get("message"), str):
        return payload["message"]
    return None


def _finish(session: Session, base: dict[str, Any], calls: dict[str, tuple[datetime, dict[str, Any]]],
            done: set[str], outcomes: dict[str, Outcome], at: datetime, payload: dict[str, Any]) -> None:
    """A call's output: its PreToolUse, then its PostToolUse with the outcome the rollout recorded."""
    call_id = payload.get("call_id")
    if not isinstance(call_id, str) or call_id in done:
        return
    opened = calls.pop(call_id, None)
    if opened is None:
        session.skip("tool output without its call")
        return
    done.add(call_id)
    called_at, tool = opened
    unit = f"{session.session_id}:{call_id}"
    output = payload.get("output")
    output = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, default=str)
    session.events.append(HookEvent(called_at, base | {"hook_event_name": "PreToolUse"} | tool, unit=unit))
    outcome = outcomes.get(call_id, Outcome(None)) if tool["tool_name"] == SHELL_TOOL else Outcome(0)
    session.events.append(HookEvent(
        at, base | {"hook_event_name": "PostToolUse", "tool_response": output[:2000]} | tool, unit=unit,
        completes=True, call=True, failed_call=call_id if outcome.exit_code else None,
        options={"outcome": outcome}))


def start_event(session: Session, source: str) -> dict[str, Any]:
    """SessionStart of a session (startup, or resume for one learned before that grew since)."""
    return {"session_id": session.session_id, "transcript_path": "", "cwd": session.cwd or "/",
            "hook_event_name": "SessionStart", "source": source}
