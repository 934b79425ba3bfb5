"""OpenCode's sessions, made into the events vlk-memact's OpenCode plugin hands its hook (hosts/opencode/adapter.py's).

OpenCode (1.17 and later) keeps every session in one SQLite database (opencode.db, WAL, read here read-only
through store/foreign.py): `session {id, parent_id, directory, time_created, time_updated}`, `message
{id, session_id, time_created, data: {role}}` and `part {message_id, session_id, time_created, data}`,
a tool part being `{type: "tool", tool, callID, state: {status, input, output, error, metadata: {exit},
time: {start, end}}}`. Older versions kept the same records as JSON files under storage/ (session/<project>/
<session>.json, message/<session>/<message>.json, part/<message>/<part>.json).

What the plugin sends (hosts/opencode/plugin.js): `session.start` first, `chat.message` for each later user
message, `tool.execute.before` before a call runs; a call that completed gives `tool.execute.after` with
the bash exit code (`metadata.exit`); a call that threw (its part in status `error`) gives `tool.error`
with its message. A call still running has neither and is learned next time.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from ..core.errors import StoreError
from ..store.foreign import read_rows
from .events import EPOCH, HookEvent, Session, Source, file_stamp, parse_time

HOST = "opencode"
_SESSIONS = ("SELECT s.id, s.directory, s.time_created, s.time_updated, "
             "(SELECT COUNT(*) || ':' || COALESCE(MAX(p.time_updated), 0) FROM part p WHERE p.session_id = s.id) "
             "FROM session s ORDER BY s.time_created")


def _json(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def sources(path: Path) -> list[Source]:
    """The sessions of an OpenCode database, or the session of an older storage/session/*/*.json document."""
    if path.suffix == ".json":
        doc = _json(path.read_text(encoding="utf-8", errors="replace")) if path.is_file() else {}
        if not isinstance(doc.get("id"), str):
            return []
        folder = path.parent.parent.parent  # storage/
        parts = [p for m in (folder / "message" / doc["id"]).glob("*.json")
                 for p in [m, *(folder / "part" / m.stem).glob("*.json")]]
        stamp = f"{file_stamp(path)}:{len(parts)}:{max((p.stat().st_mtime_ns for p in parts), default=0)}"
        time = doc.get("time") if isinstance(doc.get("time"), dict) else {}
        return [Source(str(path), stamp, doc["id"], parse_time(time.get("created"), EPOCH),
                       doc.get("directory") if isinstance(doc.get("directory"), str) else None, ("storage", path))]
    [rows] = read_rows(path, [(_SESSIONS, ())])
    return [Source(f"{path}#{sid}", f"{updated}:{parts}", sid, parse_time(created, EPOCH),
                   directory if isinstance(directory, str) else None, ("db", path, sid))
            for sid, directory, created, updated, parts in rows if isinstance(sid, str)]


def _records(source: Source, session: Session) -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """(message time, message, its parts) of a session, oldest first."""
    kind = source.locator[0]
    if kind == "db":
        _, path, sid = source.locator
        try:
            messages, parts = read_rows(path, [
                ("SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id", (sid,)),
                ("SELECT message_id, time_created, data FROM part WHERE session_id = ? ORDER BY time_created, id",
                 (sid,))])
        except StoreError:
            session.skip("unreadable OpenCode database")
            return []
        by_message: dict[str, list[dict[str, Any]]] = {}
        for message_id, _, data in parts:
            part = _json(data)
            if part:
                by_message.setdefault(message_id, []).append(part)
            else:
                session.skip("unreadable part")
        return [(created, _json(data) | {"id": mid}, by_message.get(mid, [])) for mid, created, data in messages]
    folder = source.locator[1].parent.parent.parent
    found = []
    for path in (folder / "message" / source.session_id).glob("*.json"):
        message = _json(path.read_text(encoding="utf-8", errors="replace"))
        if not message:
            session.skip("unreadable message file")
            continue
        parts = [_json(p.read_text(encoding="utf-8", errors="replace"))
                 for p in sorted((folder / "part" / path.stem).glob("*.json"))]
        time = message.get("time") if isinstance(message.get("time"), dict) else {}
        ident = message.get("id") or path.stem
        found.append((time.get("created") or 0, message | {"id": ident}, [p for p in parts if p]))
    return sorted(found, key=lambda item: (item[0] if isinstance(item[0], (int, float)) else 0, item[1]["id"]))


def read(sources: list[Source]) -> Session:
    """One OpenCode session as the events the plugin would have handed its hook."""
    first = min(sources, key=lambda s: s.started)
    session = Session(HOST, first.session_id, first.cwd)
    base = {"session_id": session.session_id, "cwd": session.cwd or "/"}
    users = 0
    for source in sources:
        for created, message, parts in _records(source, session):
            at = parse_time(created, first.started)
            if message.get("role") == "user":
                users += 1
                if users > 1:  # the first one starts the session instead (the driver's session.start)
                    session.events.append(HookEvent(at, base | {"hook_event_name": "chat.message"},
                                                    unit=f"{session.session_id}:prompt:{message['id']}", completes=True))
            for part in parts:
                if part.get("type") == "tool":
                    _tool(session, base, at, part)
    session.events.sort(key=lambda e: e.at)
    return session


def _tool(session: Session, base: dict[str, Any], at: datetime, part: dict[str, Any]) -> None:
    state = part.get("state") if isinstance(part.get("state"), dict) else {}
    status, call_id, tool = state.get("status"), part.get("callID"), part.get("tool")
    if not isinstance(call_id, str) or not isinstance(tool, str):
        session.skip("tool part without a call id or a tool")
        return
    if status not in ("completed", "error"):
        session.open_calls += 1
        return
    times = state.get("time") if isinstance(state.get("time"), dict) else {}
    started, ended = parse_time(times.get("start"), at), parse_time(times.get("end"), at)
    args = state.get("input") if isinstance(state.get("input"), dict) else {}
    call = {"tool": tool, "call_id": call_id, "args": args}
    unit = f"{session.session_id}:{call_id}"
    session.events.append(HookEvent(started, base | call | {"hook_event_name": "tool.execute.before"}, unit=unit))
    if status == "error":
        error = state.get("error")
        thrown = base | call | {"hook_event_name": "tool.error", "error": str(error or "")}
        session.events.append(HookEvent(ended, thrown, unit=unit, completes=True, call=True, failed_call=call_id))
        return
    metadata = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
    exit_code = metadata.get("exit")
    exit_code = exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None
    after = base | call | {"hook_event_name": "tool.execute.after", "metadata": {"exit": exit_code}}
    failed = tool == "bash" and bool(exit_code)
    if failed:
        after["metadata"]["output"] = metadata.get("output")
        after["output"] = state.get("output")
    session.events.append(HookEvent(ended, after, unit=unit, completes=True, call=True,
                                    failed_call=call_id if failed else None))


def start_event(session: Session, source: str) -> dict[str, Any]:
    """session.start, what the plugin sends first for a session (the handler tells a resumed one itself)."""
    return {"session_id": session.session_id, "cwd": session.cwd or "/", "hook_event_name": "session.start"}
