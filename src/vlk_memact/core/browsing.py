"""Read models for browsing the memory: a tenant's sessions and what archiving saved (the viewer, the CLI)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SessionOverview:
    """One session of a tenant with its counts, for a list of sessions."""

    project: str
    session_id: str
    present: int
    past: int
    future: int  # FUTURE slots the session itself holds (active constraints it learned)
    loops: int  # loop anchors the session's pipeline created
    archived_chars: int  # characters of the session's logs archived by a loop or time travel
    first_at: str
    last_at: str
    host: str | None = None  # the host whose hooks wrote the session; None when none did (MCP tools, CLI)


@dataclass(frozen=True)
class Saving:
    """A constraint (loop anchor or time-travel lesson) and what archiving its slots saved."""

    constraint_id: int
    project: str
    session_id: str
    origin: str  # "anchor" or "lesson"
    created_at: str
    archived: int  # slots it archived
    archived_chars: int
