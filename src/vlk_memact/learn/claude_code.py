"""Claude Code's session files, made into the hook events Claude Code delivers (hosts/claude_code/adapter.py's).

A session file is JSON Lines: entries of type `user` / `assistant` carry `sessionId`, `cwd`, `timestamp`,
`uuid` and `message.content` blocks, `tool_use {id, name, input}` in the assistant's, `tool_result
{tool_use_id, content, is_error}` in the user's; other types (attachments, summaries, progress, snapshots,
api records) say nothing the hooks see. A subagent's calls (`isSidechain`, or a file of its own under
`<session>/subagents/`) fire the parent session's hooks, with `agent_id`. Copies of a session (a resumed
session starting a file that repeats earlier lines, checkpoint copies) are merged by entry `uuid` and by
`tool_use_id`. Written by many versions: a field may be missing, a line damaged or half written (the
session being written now): what cannot be read is skipped and counted, never fatal.

Per call, what Claude Code fires (verified with the pinned CLI, tests/hosts/claude_code/test_hooks_e2e.py): an error of its
own input checks (`<tool_use_error>`) or a call cancelled because a parallel one failed fires nothing; a
permission refusal or an interrupt fires PreToolUse and no failure; any other error fires PreToolUse then
PostToolUseFailure with the result text as `error`; a success PreToolUse then PostToolUse. Which kind an
error is, hosts/shared/failures.py says (the one classifier every path uses).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..hosts.shared import failures
from .events import EPOCH, HookEvent, Session, Source, file_stamp, json_lines, parse_time

HOST = "claude-code"
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
# Kinds of error results Claude Code fires no per-call hook for, and those it fires PreToolUse only for.
NO_EVENT = frozenset({failures.INPUT_CHECK, failures.SIBLING})
PRE_ONLY = frozenset({failures.PERMISSION, failures.INTERRUPT})
RESPONSE_CHARS = 2000  # of a success's result kept in PostToolUse's tool_response (the handler reads none)
_NOT_PROMPTS = ("<command-", "<local-command-", "Caveat: The messages below")


def _session_id_of(path: Path) -> str | None:
    """Claude Code names a session's file by its id, and a subagent's file is under <session id>/subagents/."""
    stem = path.name.split(".", 1)[0]
    if _UUID.match(stem):
        return stem
    for parent in path.parents:
        if parent.name == "subagents" and _UUID.match(parent.parent.name):
            return parent.parent.name
    return None


def sources(path: Path) -> list[Source]:
    """The session a file holds, from its name or its first entries (no source: nothing of Claude Code in it)."""
    session_id, started, cwd = _session_id_of(path), None, None
    for record in json_lines(path):
        if session_id is None and isinstance(record.get("sessionId"), str) and record["sessionId"]:
            session_id = record["sessionId"]
        if started is None and record.get("type") in ("user", "assistant") and record.get("timestamp"):
            started = parse_time(record.get("timestamp"), EPOCH)
        if cwd is None and isinstance(record.get("cwd"), str) and record["cwd"]:
            cwd = record["cwd"]
        if session_id and started is not None and cwd:
            break
    if session_id is None:
        return []
    if started is None:
        try:
            started = datetime.fromtimestamp(path.stat().st_mtime).astimezone()
        except OSError:
            started = EPOCH
    return [Source(str(path), file_stamp(path), session_id, started, cwd, path)]


def text_of(content: Any) -> str:
    """A message or tool result's content as text (a string, or the text of its blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(str(block.get("text") or ""))
                elif block.get("type") == "tool_result":
                    parts.append(text_of(block.get("content")))
        return "\n".join(parts)
    return "" if content is None else json.dumps(content, ensure_ascii=False, default=str)


def _entries(sources: Iterable[Source], session: Session) -> list[tuple[datetime, int, dict[str, Any]]]:
    """Every entry of the session's files once (by uuid), with its time, in time order (file order on ties)."""
    seen: set[str] = set()
    found = []
    last = EPOCH
    for source in sources:
        for record in json_lines(source.locator, session):
            uid = record.get("uuid")
            if isinstance(uid, str):
                if uid in seen:
                    continue
                seen.add(uid)
            last = parse_time(record.get("timestamp"), last)
            found.append((last, len(found), record))
    found.sort(key=lambda item: (item[0], item[1]))
    return found


def _is_prompt(record: dict[str, Any], text: str) -> bool:
    return bool(text.strip()) and not record.get("isMeta") and not record.get("isCompactSummary") \
        and not text.lstrip().startswith(_NOT_PROMPTS)


@dataclass(frozen=True)
class Call:
    """One tool call and its result, as the session's files hold them."""

    tool_use_id: str
    name: str
    input: Any
    called_at: datetime
    called: dict[str, Any]  # the assistant entry holding the tool_use
    returned_at: datetime
    returned: dict[str, Any]  # the user entry holding the tool_result
    text: str  # the result as text
    is_error: bool


@dataclass(frozen=True)
class Item:
    """What happened in a session, in time order: a prompt (text), a call (Call), or a compaction."""

    at: datetime
    kind: str  # "prompt", "call" or "compact"
    record: dict[str, Any]
    text: str = ""
    call: Call | None = None


def items(sources: list[Source], session: Session) -> list[Item]:
    """A session's prompts, completed calls and compactions, in time order (a call at its result's time);
    calls without a result yet are counted in session.open_calls."""
    found: list[Item] = []
    opened: dict[str, tuple[datetime, dict[str, Any], dict[str, Any]]] = {}
    done: set[str] = set()
    by_boundary = False
    for at, _, record in _entries(sorted(sources, key=lambda s: s.started), session):
        kind = record.get("type")
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        if kind == "system" and record.get("subtype") == "compact_boundary":
            by_boundary = True
            found.append(Item(at, "compact", record))
        elif kind == "user" and record.get("isCompactSummary"):
            if not by_boundary:  # versions without boundaries mark a compaction by its summary alone
                found.append(Item(at, "compact", record))
        elif kind == "assistant":
            for block in blocks:
                ident = block.get("id")
                if block.get("type") == "tool_use" and isinstance(ident, str) and ident and ident not in done:
                    opened.setdefault(ident, (at, record, block))
        elif kind == "user":
            results = [b for b in blocks if b.get("type") == "tool_result"]
            if not results:
                text = text_of(content)
                if _is_prompt(record, text):
                    found.append(Item(at, "prompt", record, text))
            for block in results:
                ident = block.get("tool_use_id")
                if not isinstance(ident, str) or ident in done:
                    continue
                if ident not in opened:
                    session.skip("tool result without its call")
                    continue
                done.add(ident)
                called_at, called, use = opened.pop(ident)
                call = Call(ident, str(use.get("name") or "?"), use.get("input") if use.get("input") is not None
                            else {}, called_at, called, at, record, text_of(block.get("content")),
                            bool(block.get("is_error")))
                found.append(Item(at, "call", record, call=call))
    session.open_calls = len(opened)
    return found


def _base(session: Session, transcript: str, event: str, record: dict[str, Any]) -> dict[str, Any]:
    cwd = record.get("cwd") if isinstance(record.get("cwd"), str) and record.get("cwd") else session.cwd
    payload = {"session_id": session.session_id, "transcript_path": transcript, "cwd": cwd or "/",
               "hook_event_name": event}
    if isinstance(record.get("permissionMode"), str):
        payload["permission_mode"] = record["permissionMode"]
    return payload


def _call_events(session: Session, transcript: str, call: Call) -> list[HookEvent]:
    """What Claude Code fires for one call: nothing, PreToolUse alone, or PreToolUse and its outcome."""
    kind = failures.non_failure(call.text) if call.is_error else None
    if kind in NO_EVENT:
        return []  # Claude Code fires no hook for its own input checks or a sibling's cancellation
    tool = {"tool_name": call.name, "tool_input": call.input, "tool_use_id": call.tool_use_id}
    agent = call.called.get("agentId")
    if call.called.get("isSidechain") and isinstance(agent, str):
        tool["agent_id"] = agent
    unit = call.tool_use_id
    pre = HookEvent(call.called_at, _base(session, transcript, "PreToolUse", call.called) | tool, unit=unit,
                    completes=kind in PRE_ONLY, call=kind in PRE_ONLY)
    if kind in PRE_ONLY:
        return [pre]  # a permission refusal or an interrupt: no failure event
    if call.is_error:
        post = _base(session, transcript, "PostToolUseFailure", call.returned) | tool | {
            "error": call.text, "is_interrupt": False}
        return [pre, HookEvent(call.returned_at, post, unit=unit, completes=True, call=True,
                               failed_call=unit)]
    response = call.returned.get("toolUseResult")
    if not isinstance(response, dict) or len(json.dumps(response, default=str)) > RESPONSE_CHARS:
        response = call.text[:RESPONSE_CHARS]
    post = _base(session, transcript, "PostToolUse", call.returned) | tool | {"tool_response": response}
    return [pre, HookEvent(call.returned_at, post, unit=unit, completes=True, call=True)]


def read(sources: list[Source]) -> Session:
    """One session (all its sources share its id) as the hook events Claude Code would have delivered."""
    first = min(sources, key=lambda s: s.started)
    session = Session(HOST, first.session_id, first.cwd)
    transcript = str(first.locator)
    for item in items(sources, session):
        if item.kind == "compact":
            session.events.append(HookEvent(item.at, _base(session, transcript, "SessionStart", item.record)
                                            | {"source": "compact"}))
        elif item.kind == "prompt":
            uid = item.record.get("uuid") or f"{session.session_id}@{item.at.isoformat()}"
            session.events.append(HookEvent(item.at, _base(session, transcript, "UserPromptSubmit", item.record)
                                            | {"prompt": item.text}, unit=f"prompt:{uid}", completes=True))
        elif item.call is not None:
            session.events += _call_events(session, transcript, item.call)
    session.events.sort(key=lambda e: e.at)  # stable: a call's PreToolUse stays before its outcome
    return session


def start_event(session: Session, source: str) -> dict[str, Any]:
    """SessionStart of a session (source: startup, or resume for one learned before that grew since)."""
    return {"session_id": session.session_id, "transcript_path": "", "cwd": session.cwd or "/",
            "hook_event_name": "SessionStart", "source": source}
