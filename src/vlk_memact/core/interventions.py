"""What the memory said to an agent (an intervention), as the store keeps it and `vlk-memact impact` reads it.

Every text a hook or an MCP tool puts in front of the model is recorded where it is emitted: its kind, the
session and tool call it was about, the characters it cost, and what it named (a fix, a lesson). The
outcomes (did the agent change the call, apply the fix, meet the error again) are computed later from the
same session's recorded calls (engine/impact.py): never stored, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .model import SessionKey

DENY = "deny"  # the guard refused an unchanged repeat of a failing call
WARN = "warn"  # the guard let a call through with a warning
FIX_TOLD = "fix_told"  # fix memory said what fixed this error in an earlier session
FIX_WITHHELD = "fix_withheld"  # the same, held back by the VLK_HOLDOUT experiment (nothing was said)
CARRIED = "carried"  # a fact of earlier sessions carried at session start
LOOP = "loop"  # a loop announced (the same error repeated up to the threshold)
RECALL = "recall"  # a lesson recalled when its error came back
REPEAT = "repeat"  # the same error live again, below the loop threshold
KINDS = (DENY, WARN, FIX_TOLD, FIX_WITHHELD, CARRIED, LOOP, RECALL, REPEAT)
SAID = frozenset(KINDS) - {FIX_WITHHELD}  # the kinds that reached the model (and cost characters)


@dataclass(frozen=True, slots=True)
class NewIntervention:
    """One thing said (or withheld) at one point of a session."""

    key: SessionKey
    kind: str
    chars: int = 0  # characters of what the model saw (0 for a withheld fix)
    tool_use_id: str | None = None  # the tool call it was about (the denied call, the failure told a fix)
    call_key: str | None = None  # that call's identity (hosts/guard.call_key)
    tool: str | None = None
    target: str | None = None  # what the call acts on: a file, a program
    subject: str | None = None  # the uid of what it named: a fix, a lesson or loop anchor
    detail: str | None = None  # what it named, readable: the fix's line, the lesson
    data: dict[str, Any] = field(default_factory=dict)  # what its outcome is computed from (fix steps, error keys)
    host: str | None = None  # claude-code, gemini, codex, opencode; "mcp" for the MCP tools
    at: str | None = None  # when it was said (UTC 'YYYY-MM-DD HH:MM:SS.mmm'); None: when it is stored


@dataclass(frozen=True, slots=True)
class Intervention:
    """A stored intervention."""

    id: int
    uid: str
    tenant: str
    project: str
    session_id: str
    kind: str
    chars: int
    tool_use_id: str | None
    call_key: str | None
    tool: str | None
    target: str | None
    subject: str | None
    detail: str | None
    data: dict[str, Any]
    host: str | None
    created_at: str
