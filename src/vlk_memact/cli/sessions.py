"""Which session a command reads when none is named, and `vlk-memact sessions`, the list to choose from.

The hooks write to the host's session id, in the project of the git repository they run in; a person at the
command line rarely knows that id. So a command without --session takes, in this order: the session of the
host it runs under (CLAUDE_CODE_SESSION_ID or VLK_HOST_SESSION_ID: the agent's own Bash tool), else the
current project's most recently written-to session, else `default` (nothing recorded yet). It says which
on stderr, so stdout stays what the command prints (JSON stays JSON).
"""

from __future__ import annotations

import argparse
import sys

from ..config import Settings
from ..core import inputs, render
from ..core.browsing import SessionOverview
from ..engine import Memory

ALL_SESSIONS_HINT = "--session ID for another; `vlk-memact sessions` lists them"


def note(text: str) -> None:
    print(f"vlk-memact: {text}", file=sys.stderr, flush=True)


def session_for(memory: Memory, args: argparse.Namespace, settings: Settings) -> str:
    """The session this command works on: --session, the host's, the project's latest, or `default`."""
    if args.session:
        return str(args.session)
    if settings.host_session_id:
        note(f"session {settings.host_session_id!r} (the session of the host this runs under: "
             f"CLAUDE_CODE_SESSION_ID or VLK_HOST_SESSION_ID); {ALL_SESSIONS_HINT}")
        return settings.host_session_id
    latest = memory.latest_session()
    if latest is None:
        note(f"session {inputs.DEFAULT_SESSION!r}: nothing is recorded in project {memory.project!r} yet "
             "(`vlk-memact sessions --all` lists every project's sessions)")
        return inputs.DEFAULT_SESSION
    host = f"{latest.host}, " if latest.host else ""
    note(f"session {latest.session_id!r} (the latest of project {memory.project!r}: {host}last written "
         f"{_minute(latest.last_at)} UTC); {ALL_SESSIONS_HINT}")
    return latest.session_id


def _minute(stamp: str | None) -> str:
    return (stamp or "")[:16] or "-"


def _row(found: SessionOverview) -> dict[str, object]:
    return {"session": found.session_id, "project": found.project, "host": found.host, "started": found.first_at,
            "last": found.last_at, "present": found.present, "past": found.past, "future": found.future,
            "loops": found.loops}


def sessions_text(memory: Memory, args: argparse.Namespace) -> str:
    """The project's (or every project's) sessions, newest first: a table, or JSON with --json."""
    found = memory.list_sessions(limit=args.limit, every_project=args.all)
    if args.json:
        return render.structured_json([_row(s) for s in found])
    if not found:
        where = "any project" if args.all else f"project {memory.project!r}"
        note(f"no session is recorded in {where} yet" + ("" if args.all else " (--all: every project's)"))
        return ""
    header = ["SESSION", "HOST", "STARTED (UTC)", "LAST (UTC)", "PRESENT", "PAST", "FUTURE", "LOOPS"]
    rows = [[s.session_id, s.host or "-", _minute(s.first_at), _minute(s.last_at), str(s.present), str(s.past),
             str(s.future), str(s.loops)] for s in found]
    if args.all:
        header.append("PROJECT")
        for row, s in zip(rows, found, strict=True):
            row.append(s.project)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(r, widths, strict=True)).rstrip()
             for r in [header, *rows]]
    if not args.all:
        note(f"sessions of project {memory.project!r}, newest first (--all: every project's)")
    return "\n".join(lines)


def total_text(memory: Memory) -> str:
    """`summary --all`: every session of every project, added up."""
    states, sessions, projects = memory.totals(every_project=True)
    present, past, future = (states.get(s, 0) for s in ("PRESENT", "PAST", "FUTURE"))
    return (f"All projects: {sessions} session(s) in {projects} project(s) | {present + past + future} total "
            f"timeline slots | {present} PRESENT (active) | {past} PAST (archived) | {future} FUTURE (constraints).")
