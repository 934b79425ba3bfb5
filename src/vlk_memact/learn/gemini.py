"""Gemini CLI's chat files, made into the hook events Gemini CLI delivers (hosts/gemini/adapter.py's).

A chat (~/.gemini/tmp/<project>/chats/session-*.jsonl, Gemini CLI 0.58+) starts with a metadata line
(`sessionId`, `projectHash`, `startTime`), then messages `{id, timestamp, type, content}`: `user` (a prompt,
or the function responses sent back), `gemini` (its `toolCalls` once they completed: `{id, name, args,
result: [{functionResponse: {response: {output | error}}}], status, timestamp, resultDisplay}`), `info`,
`error`; a message updated later is appended again in full (the last line of an id wins), and `{"$set":
...}` lines update the metadata (or the message list). Older versions wrote one `session-*.json` document
with the same messages. The working directory is <project>/.project_root.

Per completed call: BeforeTool, then AfterTool whose `tool_response` is what the hook receives
(`llmContent`: the output or the error, `returnDisplay`, `error: {message}` when the call failed); whether
that is a failure, hosts.gemini_events.parse_outcome decides, as for the live hook. A call the user
cancelled fires BeforeTool only. The live hook derives a call's id from the moment its event fired, which the
chat does not keep: a call the live hooks already captured is recognised by its call key and its time
(events.HookEvent.live_key) and not fed again.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from ..hosts.gemini import adapter as hooks_gemini
from ..hosts.gemini import events as ge
from ..hosts.shared.session_stores import gemini_cwd, open_text
from .events import EPOCH, HookEvent, Session, Source, file_stamp, json_lines, parse_time

HOST = "gemini"


def _document(path: Path, session: Session | None = None) -> list[dict[str, Any]]:
    """The records of a chat: its JSON Lines, or the metadata and messages of an older JSON document."""
    if path.name.endswith(".jsonl"):
        return list(json_lines(path, session))
    try:
        with open_text(path) as handle:
            value = json.load(handle)
    except (OSError, ValueError):
        if session is not None:
            session.skip("unreadable chat document")
        return []
    if not isinstance(value, dict):
        return []
    messages = value.get("messages") if isinstance(value.get("messages"), list) else []
    return [{k: v for k, v in value.items() if k != "messages"}, *[m for m in messages if isinstance(m, dict)]]


def sources(path: Path) -> list[Source]:
    """The session a chat file holds, from its metadata."""
    records = json_lines(path) if path.name.endswith(".jsonl") else iter(_document(path))
    for record in records:
        session_id = record.get("sessionId")
        if isinstance(session_id, str) and session_id:
            started = parse_time(record.get("startTime"), EPOCH)
            return [Source(str(path), file_stamp(path), session_id, started, gemini_cwd(path), path)]
        break
    return []


def _messages(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chat's messages, each as its last record says, in the order they first appeared."""
    found: dict[str, dict[str, Any]] = {}
    for record in records:
        updated = record.get("$set")
        batch = updated.get("messages") if isinstance(updated, dict) else None
        for message in (batch if isinstance(batch, list) else [record]):
            if isinstance(message, dict) and isinstance(message.get("id"), str) and message.get("type"):
                found[message["id"]] = message
    return list(found.values())


def _response(call: dict[str, Any]) -> dict[str, Any]:
    """What AfterTool's tool_response holds for a completed call, from the chat's record of it."""
    response: dict[str, Any] = {}
    results = call.get("result") if isinstance(call.get("result"), list) else []
    for part in results:
        answer = part.get("functionResponse", {}).get("response") if isinstance(part, dict) else None
        if isinstance(answer, dict):
            response = answer
            break
    error = response.get("error")
    body = response.get("output", error if error is not None else "")
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False, default=str)
    shown = call.get("resultDisplay")
    out: dict[str, Any] = {"llmContent": text, "returnDisplay": shown if isinstance(shown, str) else ""}
    if error is not None or call.get("status") == "error":
        message = error if isinstance(error, str) else text
        out["error"] = {"message": message or str(shown or "the tool failed")}
    return out


def read(sources: list[Source]) -> Session:
    """One session's chat files as the hook events Gemini CLI would have delivered."""
    first = min(sources, key=lambda s: s.started)
    session = Session(HOST, first.session_id, first.cwd)
    records = [r for source in sorted(sources, key=lambda s: s.started) for r in _document(source.locator, session)]
    base = {"session_id": session.session_id, "transcript_path": str(first.locator), "cwd": session.cwd or "/"}
    last = first.started
    for message in _messages(records):
        at = last = parse_time(message.get("timestamp"), last)
        if message.get("type") == "user":
            text = _prompt(message.get("content"))
            if text:
                session.events.append(HookEvent(at, base | {"hook_event_name": "BeforeAgent", "prompt": text,
                                                             "timestamp": message.get("timestamp")},
                                                unit=f"{session.session_id}:prompt:{message['id']}", completes=True))
        for call in message.get("toolCalls") or []:
            if isinstance(call, dict):
                _call(session, base, at, call)
    session.events.sort(key=lambda e: e.at)
    return session


def _prompt(content: Any) -> str | None:
    """A user message's typed text (not the function responses, not the CLI's session context)."""
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        if any(isinstance(p, dict) and "functionResponse" in p for p in content):
            return None
        text = "\n".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    else:
        return None
    return None if not text.strip() or text.lstrip().startswith("<session_context>") else text


def _call(session: Session, base: dict[str, Any], asked_at: datetime, call: dict[str, Any]) -> None:
    """BeforeTool and AfterTool of one completed call (BeforeTool only for a cancelled one)."""
    name, ident = call.get("name"), call.get("id")
    if not isinstance(name, str) or not isinstance(ident, str):
        session.skip("tool call without a name or an id")
        return
    status = call.get("status")
    if status not in ("success", "error", "cancelled"):
        session.open_calls += 1  # still running when the file was written
        return
    unit = f"{session.session_id}:{ident}"
    args = call.get("args") if isinstance(call.get("args"), dict) else {}
    tool = {"tool_name": name, "tool_input": args}
    session.events.append(HookEvent(asked_at, base | tool | {"hook_event_name": "BeforeTool",
                                                             "timestamp": asked_at.isoformat()},
                                    unit=unit, completes=status == "cancelled", call=status == "cancelled"))
    if status == "cancelled":
        return
    done_at = parse_time(call.get("timestamp"), asked_at)
    stamp = call.get("timestamp") if isinstance(call.get("timestamp"), str) else done_at.isoformat()
    response = _response(call)
    after = base | tool | {"hook_event_name": "AfterTool", "timestamp": stamp, "tool_response": response}
    # The id the handler records the call under is derived from the event (gemini_events.derive_call_id); the
    # live hook derived another, from the moment its event fired: a call it captured is known by key and time.
    parsed = hooks_gemini.tool_call(ge.parse(after))
    failed = parsed.tool_use_id if ge.parse_outcome(name, response).failed else None
    session.events.append(HookEvent(done_at, after, unit=unit, completes=True, call=True, failed_call=failed,
                                    live_key=(parsed.key, str(parsed.tool_use_id))))


def start_event(session: Session, source: str) -> dict[str, Any]:
    """SessionStart of a session (startup, or resume for one learned before that grew since)."""
    return {"session_id": session.session_id, "transcript_path": "", "cwd": session.cwd or "/",
            "hook_event_name": "SessionStart", "source": source}
