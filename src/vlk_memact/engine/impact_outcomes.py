"""What followed each intervention, computed from the session's recorded calls and slots (never guessed).

- a denial: did the agent then run another call of the same tool and target ("changed"), the same call again
  ("overridden"), and did a call of that tool and target succeed afterwards;
- a fix told (or withheld): did a later success run one of its steps (the same call key; a step stored without
  a key by its summary) -- "applied" -- and did the failing call (or a changed version on the same target)
  succeed afterwards -- "resolved"; the steps from this session's first failure of that call to the success,
  and the steps the session that found the fix spent from the error's first failure to its success;
- a fact carried at session start: did an error sharing its fingerprint keys come back in that session.

A step is a recorded host call (a failure, a state-changing success, a read of a file that failed): the same
measure on both sides of a comparison. A session without hook calls (an MCP-only host) has no calls to look
at: its fix outcomes are "not observable", except resolution by the agent archiving the error it was told about.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core import interventions as kinds
from ..core.interventions import Intervention
from ..core.model import HostCall, SessionKey, Slot, TemporalState

if TYPE_CHECKING:
    from ..store import Transaction

CALLS_READ = 2000  # a session's calls read (what retention keeps of a session: store/rows.py)
SLOTS_READ = 2000


@dataclass
class Outcome:
    """What followed one intervention (None: not observable from what was recorded)."""

    intervention: Intervention
    changed: bool | None = None
    overridden: bool | None = None
    succeeded: bool | None = None
    applied: bool | None = None
    resolved: bool | None = None
    steps_here: int | None = None
    steps_before: int | None = None
    met_again: bool | None = None
    changed_to: str | None = None  # a denial: the first changed call after it, as its summary names it

    @property
    def steps_saved(self) -> int:
        """The finding session's steps minus this one's, for an applied and resolved fix; never below zero."""
        if not (self.applied and self.resolved) or self.steps_here is None or self.steps_before is None:
            return 0
        return max(0, self.steps_before - self.steps_here)


class SessionCalls:
    """A session's recorded calls and slots, read once per session."""

    def __init__(self, tx: Transaction, key: SessionKey) -> None:
        self.calls: list[HostCall] = tx.host_calls(key, limit=CALLS_READ)
        self.by_use = {c.tool_use_id: i for i, c in enumerate(self.calls) if c.tool_use_id}
        self._tx, self._key = tx, key
        self._slots: list[Slot] | None = None

    @property
    def slots(self) -> list[Slot]:
        if self._slots is None:
            self._slots = self._tx.history(self._key, SLOTS_READ)
        return self._slots

    def after(self, iv: Intervention) -> int:
        """The index of the first call after the intervention: after the call it was about, else by time."""
        index = self.by_use.get(iv.tool_use_id) if iv.tool_use_id else None
        if index is not None:
            return index + 1
        return next((i for i, c in enumerate(self.calls) if c.created_at >= iv.created_at), len(self.calls))


def _same_target(call: HostCall, iv: Intervention) -> bool:
    return call.tool == iv.tool and iv.target is not None and call.target == iv.target


def _resolving(calls: list[HostCall], start: int, iv: Intervention) -> int | None:
    """The index of the first success from start of the failing call or of a changed version on its target."""
    return next((i for i in range(start, len(calls)) if calls[i].outcome == "success"
                 and (calls[i].call_key == iv.call_key or _same_target(calls[i], iv))), None)


def denial(session: SessionCalls, iv: Intervention) -> Outcome:
    later = session.calls[session.after(iv):]
    changed = [c for c in later if c.call_key != iv.call_key and c.tool == iv.tool
               and (iv.target is None or c.target == iv.target)]
    return Outcome(
        iv,
        changed=bool(changed),
        overridden=any(c.call_key == iv.call_key for c in later),
        succeeded=any(c.outcome == "success" and (c.call_key == iv.call_key or _same_target(c, iv)) for c in later),
        changed_to=changed[0].summary if changed else None,
    )


def _archived_by_agent(session: SessionCalls, iv: Intervention) -> bool | None:
    """For a session without hook calls: was the slot the intervention was about archived (the agent's own
    vlk_time_travel, or a resolution)?"""
    slot_id = iv.data.get("slot")
    if not isinstance(slot_id, int):
        return None
    slot = next((s for s in session.slots if s.id == slot_id), None)
    return slot is not None and slot.temporal_state is TemporalState.PAST and slot.retired_reason is not None \
        and slot.retired_reason.value in ("time_travel", "resolved")


def told_fix(session: SessionCalls, iv: Intervention, finding: SessionCalls | None) -> Outcome:
    index = session.by_use.get(iv.tool_use_id) if iv.tool_use_id else None
    if index is None:  # the MCP tools: no calls recorded, only the agent's own archiving is seen
        return Outcome(iv, resolved=_archived_by_agent(session, iv))
    calls = session.calls
    later = calls[index + 1:]
    step_keys = {k for k, _ in iv.data.get("steps", []) if k}
    summaries = {s for k, s in iv.data.get("steps", []) if not k}
    applied = any(c.outcome == "success" and (c.call_key in step_keys or c.summary in summaries) for c in later)
    end = _resolving(calls, index + 1, iv)
    first = next((i for i in range(index + 1) if calls[i].outcome == "failure" and calls[i].call_key == iv.call_key),
                 index)
    return Outcome(iv, applied=applied, resolved=end is not None,
                   steps_here=None if end is None else end - first,
                   steps_before=finding_steps(finding, iv) if finding is not None else None)


def finding_steps(finding: SessionCalls, iv: Intervention) -> int | None:
    """The steps the session that found the fix spent from the error's first failure to the success after it."""
    uids = set(iv.data.get("slot_uids", []))
    slots = {s.id: s.uid for s in finding.slots if s.uid in uids}
    failed = [i for i, c in enumerate(finding.calls) if c.outcome == "failure" and c.slot_id in slots]
    if not failed:
        return None
    passed = iv.data.get("passed")
    end = next((i for i in range(failed[-1] + 1, len(finding.calls)) if finding.calls[i].outcome == "success"
                and finding.calls[i].summary == passed), None)
    return None if end is None else end - failed[0]


def recalled(session: SessionCalls, iv: Intervention) -> Outcome:
    """A lesson recalled after a failure: did the failing call then succeed (hooks), or did the agent archive the
    error (the MCP tools)?"""
    index = session.by_use.get(iv.tool_use_id) if iv.tool_use_id else None
    if index is None:
        return Outcome(iv, resolved=_archived_by_agent(session, iv))
    return Outcome(iv, resolved=_resolving(session.calls, index + 1, iv) is not None)


def carried(session: SessionCalls, iv: Intervention) -> Outcome:
    keys = set(iv.data.get("keys", []))
    if not keys:
        return Outcome(iv)
    met = any(s.temporal_state is not TemporalState.FUTURE and s.created_at >= iv.created_at[:19]
              and keys.intersection(s.error_keys) for s in session.slots if s.origin.value == "record")
    return Outcome(iv, met_again=met)


FROZEN = ("changed", "overridden", "succeeded", "applied", "resolved", "steps_here", "steps_before", "met_again",
          "changed_to")
SESSIONS_CACHED = 64


class Outcomes:
    """Outcomes over one transaction, reading each session involved once (the newest SESSIONS_CACHED kept)."""

    def __init__(self, tx: Transaction) -> None:
        self.tx = tx
        self.sessions: dict[tuple[str, str, str], SessionCalls] = {}

    def session(self, tenant: str, project: str, session: str) -> SessionCalls:
        where = (tenant, project, session)
        if where not in self.sessions:
            if len(self.sessions) >= SESSIONS_CACHED:
                self.sessions.pop(next(iter(self.sessions)))
            self.sessions[where] = SessionCalls(self.tx, SessionKey(*where))
        return self.sessions[where]

    def of(self, iv: Intervention) -> Outcome:
        here = self.session(iv.tenant, iv.project, iv.session_id)
        frozen = iv.data.get("outcome")
        if isinstance(frozen, dict) and not here.calls:
            # Imported from another database without the session's records: what followed, as computed there.
            return Outcome(iv, **{k: frozen.get(k) for k in FROZEN})
        if iv.kind == kinds.DENY:
            return denial(here, iv)
        if iv.kind in (kinds.FIX_TOLD, kinds.FIX_WITHHELD):
            fix_session = iv.data.get("fix_session")
            finding = self.session(iv.tenant, iv.data.get("fix_project") or iv.project, fix_session) \
                if isinstance(fix_session, str) else None
            return told_fix(here, iv, finding)
        if iv.kind == kinds.CARRIED:
            return carried(here, iv)
        if iv.kind == kinds.RECALL:
            return recalled(here, iv)
        return Outcome(iv)


def outcomes(tx: Transaction, found: list[Intervention]) -> list[Outcome]:
    """The outcome of each intervention."""
    reader = Outcomes(tx)
    return [reader.of(iv) for iv in found]


def with_outcomes(tx: Transaction, records: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Export records, each intervention with what followed it as computed now ("outcome"): an import into a
    database without the session's call records reports the same figures (hook calls are not exported)."""
    reader = Outcomes(tx)
    for record in records:
        if record.get("type") == "intervention":
            fields = {k: v for k, v in record.items() if k != "type"}
            outcome = reader.of(Intervention(id=0, **fields))
            record = {**record, "outcome": {k: getattr(outcome, k) for k in FROZEN}}
        yield record
