"""The row shapes both stores return for a slot and a host call, and their conversion to the model."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ..model import ConstraintType, HostCall, Origin, Retired, Scope, Slot, TemporalState

# Both backends select exactly these columns, in this order, from agent_timeline t LEFT JOIN
# memory_contents c (each backend keeps its own SQL around them).
SLOT_COLUMNS = """t.id, t.session_id, t.sequence_order, t.temporal_state, t.origin, t.created_at,
    t.content_id, c.raw_log, c.file_context, c.tool_payload, t.learning_summary, t.constraint_type,
    t.evidence, t.fingerprint, t.fingerprint_keys, t.fingerprint_version, t.retired_reason,
    t.retired_by, t.lessons, t.tenant, t.project, t.scope, t.fire_count, t.last_fired_at, t.uid"""


# Enum construction by value is slow; these lookups are what every row goes through.
_STATES = {m.value: m for m in TemporalState}
_ORIGINS = {m.value: m for m in Origin}
_TYPES = {m.value: m for m in ConstraintType}
_RETIRED = {m.value: m for m in Retired}
_SCOPES = {m.value: m for m in Scope}


@lru_cache(maxsize=512)  # bounded: a row can hold a 64K-character log
def _decode(row: tuple[Any, ...]) -> Slot:
    return _build(row)


def slot_from_row(row: Sequence[Any]) -> Slot:
    """A Slot from a row of SLOT_COLUMNS. Slots are immutable and wholly defined by their row, so the
    rows every fetch reads again (the session's PRESENT slots, its constraints) are decoded once."""
    return _decode(tuple(row))


def _build(row: Sequence[Any]) -> Slot:
    """Decode a row (JSON lists stored as text are parsed here)."""
    (id_, session, seq, state, origin, created, content_id, raw, ctx, payload, summary, ctype, evidence,
     fp, fp_keys, fp_version, retired, retired_by, lessons, tenant, project, scope, fires, fired_at, uid) = row
    return Slot(
        id=id_,
        session_id=session,
        sequence_order=seq,
        temporal_state=_STATES[state],
        origin=_ORIGINS[origin],
        created_at=created,
        content_id=content_id,
        raw_log=raw,
        file_context=ctx,
        tool_payload=payload,
        learning_summary=summary,
        constraint_type=_TYPES[ctype] if ctype else None,
        evidence=evidence,
        fingerprint=fp,
        fingerprint_keys=tuple(json.loads(fp_keys)) if fp_keys else (),
        fingerprint_version=fp_version,
        retired_reason=_RETIRED[retired] if retired else None,
        retired_by=retired_by,
        lessons=tuple(json.loads(lessons)) if lessons else (),
        tenant=tenant,
        project=project,
        scope=_SCOPES[scope] if scope else None,
        fire_count=fires,
        last_fired_at=fired_at,
        uid=uid,
    )


# Both backends select these columns of host_calls, in this order (booleans are 0/1 in SQLite).
HOST_CALL_COLUMNS = ("id, session_id, tool_use_id, call_key, outcome, changes_state, slot_id, claimed, created_at, "
                     "tool, target, summary")
HOST_CALLS_PER_SESSION = 2000  # kept per session by prune: the guard and resolution only look at recent calls


def host_call_from_row(row: Sequence[Any]) -> HostCall:
    """A HostCall from a row of HOST_CALL_COLUMNS."""
    return HostCall(row[0], row[1], row[2], row[3], row[4], bool(row[5]), row[6], bool(row[7]), row[8],
                    row[9], row[10], row[11])
