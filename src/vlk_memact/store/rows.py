"""The row shapes both stores return for a slot and a host call, and their conversion to the model."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ..core.model import (
    ConstraintType,
    Fix,
    FixStep,
    HostCall,
    NewFix,
    Origin,
    Retired,
    Scope,
    SessionKey,
    Slot,
    TemporalState,
)

# Both backends select exactly these columns, in this order, from agent_timeline t LEFT JOIN
# memory_contents c: SLOT_SELECT, which every slot read starts with.
SLOT_COLUMNS = """t.id, t.session_id, t.sequence_order, t.temporal_state, t.origin, t.created_at,
    t.content_id, c.raw_log, c.file_context, c.tool_payload, t.learning_summary, t.constraint_type,
    t.evidence, t.fingerprint, t.fingerprint_keys, t.fingerprint_version, t.retired_reason,
    t.retired_by, t.lessons, t.tenant, t.project, t.scope, t.fire_count, t.last_fired_at, t.uid"""
SLOT_SELECT = f"""SELECT {SLOT_COLUMNS}
FROM agent_timeline t LEFT JOIN memory_contents c ON c.id = t.content_id"""
# The same columns with the content's (raw_log, file_context, tool_payload) left NULL: no read of the log texts.
SLOT_SELECT_NO_CONTENT = "SELECT " + SLOT_COLUMNS.replace("c.raw_log, c.file_context, c.tool_payload",
                                                         "NULL, NULL, NULL") + " FROM agent_timeline t"
# What tells one stored version of a slot from another: its id and uid (an id reused after a restore or a
# rolled-back insert is another row), its content id (a content row is never rewritten) and every column
# any statement updates. Every other column of SLOT_COLUMNS is written once, by the insert.
SLOT_VERSION_COLUMNS = """t.id, t.uid, t.content_id, t.fingerprint, t.fingerprint_keys, t.fingerprint_version,
    t.retired_reason, t.retired_by, t.fire_count, t.last_fired_at"""


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


def host_call_columns(alias: str) -> str:
    """HOST_CALL_COLUMNS of the host_calls row named alias in a join (`s.id, s.session_id, …`)."""
    return ", ".join(f"{alias}.{c.strip()}" for c in HOST_CALL_COLUMNS.split(","))


def host_call_from_row(row: Sequence[Any]) -> HostCall:
    """A HostCall from a row of HOST_CALL_COLUMNS."""
    return HostCall(row[0], row[1], row[2], row[3], row[4], bool(row[5]), row[6], bool(row[7]), row[8],
                    row[9], row[10], row[11])


# Both backends select these columns of fixes, in this order (JSON lists are stored as text).
FIX_COLUMNS = ("f.id, f.uid, f.tenant, f.project, f.session_id, f.kind, f.fingerprint, f.fingerprint_keys, f.error, "
               "f.failed, f.passed, f.steps, f.left_out, f.slot_uids, f.scope, f.demoted, f.created_at")
FIX_FIELDS = ("uid", "tenant", "project", "session_id", "kind", "fingerprint", "fingerprint_keys", "error", "failed",
              "passed", "steps", "left_out", "slot_uids", "scope", "demoted", "created_at")  # an export record


def fix_from_row(row: Sequence[Any]) -> Fix:
    """A Fix from a row of FIX_COLUMNS."""
    (id_, uid, tenant, project, session, kind, fp, keys, error, failed, passed, steps, left_out, slot_uids, scope,
     demoted, created) = row
    return Fix(id_, uid, tenant, project, session, kind, fp, tuple(json.loads(keys or "[]")), error, failed, passed,
               tuple(FixStep(*s) for s in json.loads(steps or "[]")), left_out, tuple(json.loads(slot_uids or "[]")),
               scope, demoted, created)


def fix_values(fix: NewFix) -> tuple[Any, ...]:
    """The values of an insert, in FIX_FIELDS order from kind to scope (tenant, project, session first)."""
    return (*_session_of(fix), fix.kind, fix.fingerprint, json.dumps(list(fix.fingerprint_keys), ensure_ascii=False),
            fix.error, fix.failed, fix.passed,
            json.dumps([[s.tool_use_id, s.tool, s.summary, s.call_key] for s in fix.steps], ensure_ascii=False),
            fix.left_out, json.dumps(list(fix.slot_uids)), fix.scope)


def _session_of(fix: NewFix) -> tuple[str, str, str]:
    return (fix.key.tenant, fix.key.project, fix.key.session)


def fix_record(row: Sequence[Any]) -> dict[str, Any]:
    """An export record of a row of FIX_COLUMNS (its local id left out)."""
    record = dict(zip(FIX_FIELDS, row[1:], strict=True), type="fix")
    for name in ("fingerprint_keys", "steps", "slot_uids"):
        record[name] = json.loads(record[name] or "[]")
    return record


def fix_from_record(record: dict[str, Any]) -> tuple[NewFix, str, int, str | None]:
    """(the fix, its uid, demoted, created_at) of an export record; ValueError names what is wrong."""
    try:
        steps = tuple(FixStep(s[0], s[1], str(s[2]), s[3] if len(s) > 3 else None) for s in record.get("steps") or ())
        fix = NewFix(
            SessionKey(str(record["tenant"]), str(record["project"]), str(record["session_id"])),
            str(record["kind"]), record.get("fingerprint"), tuple(str(k) for k in record.get("fingerprint_keys") or ()),
            str(record.get("error") or ""), str(record.get("failed") or ""), str(record.get("passed") or ""),
            steps, int(record.get("left_out") or 0), tuple(str(u) for u in record.get("slot_uids") or ()),
            str(record.get("scope") or "project"),
        )
        return fix, str(record["uid"]), int(record.get("demoted") or 0), record.get("created_at")
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise ValueError(f"fix record {record.get('uid')!r} is malformed: {exc}") from exc
