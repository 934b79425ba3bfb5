"""The texts and structured views of the tools' results: what the MCP tools and the CLI print for each call.

Pure functions over the result dataclasses; the context's own text is render.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

from .model import (
    RecalledConstraint,
    RecordResult,
    RecordView,
    RevokeResult,
    SlotView,
    SummaryResult,
    TimeTravelResult,
)
from .quoting import neutralize, quoted_line
from .render import EVIDENCE_PREVIEW_CHARS, plain_view, constraint_tag, structured_json


def record_text(result: RecordResult, notice: str | None = None) -> str:
    """The record's text block; notice: record_notice(result) when the caller has it already."""
    text = (
        f"📝 [VLK RECORD] PRESENT state recorded as timeline_id={result.timeline_id} "
        f"(content_id={result.content_id}) in session '{result.session_id}'. It will appear in subsequent "
        "vlk_fetch_context calls until archived via vlk_time_travel."
    )
    notice = record_notice(result) if notice is None else notice
    return text + "\n" + notice if notice else text


def record_notice(result: RecordResult) -> str:
    """What the model must read about a record, one note per line: redaction, truncation, each lesson
    recalled with its evidence, the repeat warning; empty when there is nothing to say."""
    lines = []
    if result.already_recorded_by == "hook":
        lines.append(f"The host's hook recorded this same error moments ago as #{result.timeline_id}: nothing new "
                     "was stored (the same evidence is not a second occurrence).")
    elif result.already_recorded_by == "call":
        lines.append(f"This tool call was already recorded as #{result.timeline_id}: nothing new was stored.")
    if result.redacted:
        lines.append(f"Secrets were replaced by placeholders before storing: {', '.join(result.redacted)}.")
    if result.truncated:
        lines.append("The log was longer than the size limit: its head and tail were kept around a truncation marker.")
    for fixed in result.fixed_before[:2]:
        lines.append(f"🔧 Fixed in an earlier session of this project by: {fixed}")
    for recall in result.recalled:
        where = "this session" if recall.learned_in_session == result.session_id else (
            f"session '{quoted_line(recall.learned_in_session, 60)}'")
        lines.append(f"⚡ Seen before in {where}: [id:{recall.constraint_id}] {recall.lesson}")
        if recall.evidence:
            lines.append(f"    Evidence: {quoted_line(recall.evidence, EVIDENCE_PREVIEW_CHARS)}")
    if result.repeats >= 2:
        ids = ", ".join(f"#{i}" for i in result.repeat_ids)
        lines.append(
            f"⚠ The same error ({result.fingerprint_kind}) is now active {result.repeats} times ({ids}). "
            "Repeating the same action will not fix it; a loop is archived and replaced by a "
            "[SYSTEM ANCHOR] on the next vlk_fetch_context once it reaches the threshold."
        )
    return "\n".join(lines)


def record_view(result: RecordResult, notice: str | None = None) -> dict[str, object]:
    """vlk_record_state's structuredContent: the notice first, then the record's data (lessons not repeated)."""
    view = RecordView(
        notice=record_notice(result) if notice is None else notice,
        session_id=result.session_id,
        project=result.project,
        timeline_id=result.timeline_id,
        content_id=result.content_id,
        sequence_order=result.sequence_order,
        fingerprint=result.fingerprint,
        fingerprint_kind=result.fingerprint_kind,
        repeats=result.repeats,
        repeat_ids=list(result.repeat_ids),
        truncated=result.truncated,
        recalled=[
            RecalledConstraint(r.constraint_id, r.learned_in_session, r.scope, r.constraint_type, r.fire_count)
            for r in result.recalled
        ],
        redacted=list(result.redacted),
        already_recorded_by=result.already_recorded_by,
        fixed_before=list(result.fixed_before),
    )
    return plain_view(view)


def time_travel_text(result: TimeTravelResult) -> str:
    moved = ", ".join(f"#{i}" for i in result.moved_ids)
    text = (
        f"🧠 [VLK CHRONESTHESIA] Transitioned {len(result.moved_ids)} timeline slot(s) to PAST ({moved}) "
        f"(~{result.tokens_saved} tokens saved). FUTURE constraint #{result.constraint_id} injected:\n"
        f"---\n{neutralize(result.learning)}\n---\n"
    )
    if result.ignored_ids:
        ignored = ", ".join(f"#{i}" for i in result.ignored_ids)
        text += f"Ignored ids (not PRESENT slots of session '{result.session_id}'): {ignored}.\n"
    text += (
        f"These lessons will be prefixed as {constraint_tag(result.constraint_type)} in subsequent context "
        "fetches. Old raw logs are archived and will no longer consume context."
    )
    return text


def revoke_text(result: RevokeResult) -> str:
    return (
        f"🗑️ [VLK REVOKE] FUTURE constraint #{result.constraint_id} revoked (moved to PAST). "
        "It will no longer appear in active context."
    )


def summary_text(result: SummaryResult) -> str:
    return (
        f"Session '{result.session_id}': {result.total} total timeline slots | {result.present} PRESENT (active) "
        f"| {result.past} PAST (archived) | {result.future} FUTURE (constraints) | ~{result.active_tokens} "
        f"estimated tokens in active raw_log data (~{result.archived_tokens} archived). Project: "
        f"'{result.project}', {result.visible_constraints} active constraint(s) visible to this session."
    )


def slots_json(slots: Sequence[SlotView]) -> str:
    """The prototype's listing: a JSON array of slots, non-ASCII kept (compact: the same data travels
    again as structuredContent, so indentation would only add bytes)."""
    return structured_json([asdict(s) for s in slots])
