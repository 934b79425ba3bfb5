"""What a reader makes of a past session: the hook events its host would have delivered, in order.

A unit is what is learned once: a tool call (its events before and after it ran) or a prompt, named by an
id unique in its project (a Claude Code tool_use_id; for hosts whose call ids repeat across sessions, the
session id and the call id). Events without a unit (a compaction) are fed with the new events around them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..hosts.shared.session_stores import open_text

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
LIVE_SECONDS = 5.0  # a live hook stores a call within moments of the time the session file gives it


@dataclass(frozen=True)
class HookEvent:
    """One event the host would have delivered to its hook, at the moment it happened."""

    at: datetime
    payload: dict[str, Any]
    unit: str | None = None  # the call or prompt it belongs to (learned once); None: fed with new events
    completes: bool = False  # once fed, its unit is learned
    call: bool = False  # it completes a tool call (what learn counts as calls; a prompt does not)
    failed_call: str | None = None  # the tool_use_id of a call the host reports as failed (what learn counts)
    options: Mapping[str, Any] = field(default_factory=dict)  # keyword arguments of the handler
    # For a host whose hook events carry no call id (Gemini CLI): the call's key (capture.ToolCall.key) and the
    # id learn stores it under. A call the live hooks stored (under another id) with this key within
    # LIVE_SECONDS of `at` was captured live: it is not fed again.
    live_key: tuple[str, str] | None = None


@dataclass(frozen=True)
class Source:
    """One thing a host keeps (a session file, or a session of its database), as it is now."""

    key: str  # a file's path, or '<database>#<session id>'
    stamp: str  # changes whenever the source does (size and modification time, the host's update time)
    session_id: str
    started: datetime
    cwd: str | None
    locator: Any = None  # what the reader needs to read it (the path, the database and session id)


@dataclass
class Session:
    """One past session as its sources hold it, made into its host's hook events."""

    host: str
    session_id: str
    cwd: str | None
    events: list[HookEvent] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)  # what could not be read, by reason
    open_calls: int = 0  # calls without a result yet: the session is being written, they come next time

    def skip(self, reason: str, count: int = 1) -> None:
        self.skipped[reason] += count


def parse_time(value: Any, fallback: datetime) -> datetime:
    """An ISO 8601 time (a trailing Z, or none: UTC), or milliseconds since the epoch; fallback otherwise."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value / 1000 if value > 1e11 else value, UTC)
        except (OverflowError, OSError, ValueError):
            return fallback
    if not isinstance(value, str) or not value:
        return fallback
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return fallback
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def file_stamp(path: Any) -> str:
    """Size and modification time of a file: equal stamps, unchanged file ('' when it cannot be read)."""
    try:
        info = path.stat()
    except OSError:
        return ""
    return f"{info.st_size}:{info.st_mtime_ns}"


def json_lines(path: Path, session: Session | None = None) -> Iterator[dict[str, Any]]:
    """The JSON objects of a session file (gzipped or not), in order; damaged lines counted in session.skipped."""
    try:
        with open_text(path) as handle:
            for line in handle:
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    if session is not None:
                        session.skip("damaged or half-written line")
                    continue
                if isinstance(record, dict):
                    yield record
                elif session is not None:
                    session.skip("line that is not a JSON object")
    except (OSError, EOFError) as exc:
        if session is not None:
            session.skip(f"unreadable file ({type(exc).__name__})")
