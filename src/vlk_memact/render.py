"""Every text a user or a model reads, and the one token estimator; pure functions only.

The literal headers are the prototype's (spec §4, §5) so that prompts written for it keep working.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict

from .loops import one_line
from .model import (
    Conflict,
    ConstraintType,
    ContextResult,
    LoopReport,
    MergeReport,
    RecordResult,
    RevokeResult,
    Slot,
    SlotView,
    SummaryResult,
    TimeTravelResult,
)

CHARS_PER_TOKEN = 3.8  # spec §1: the prototype's estimate, kept so figures stay comparable
EVIDENCE_PREVIEW_CHARS = 200

CONTEXT_HEADER = (
    "=== VLK CHRONESTHESIA LAYER ===\n"
    "Active context: PRESENT (live) + FUTURE (constraints). PAST is archived.\n"
    "\n"
)
EMPTY_CONTEXT = "(No active PRESENT or FUTURE entries for this session.)\n"
PREVENTIVE_TAG = "[PREVENTIVE FUTURE CONSTRAINT]"
PROSPECTIVE_TAG = "[PROSPECTIVE CONSTRAINT]"
PRESENT_TAG = "[ACTIVE PRESENT STATE]"
CONFLICT_HEADER = "─── ⚠ CONFLICTING FUTURE CONSTRAINTS DETECTED ───"


def estimate_tokens(text: str | None) -> int:
    """ceil(characters / 3.8): the single estimator every figure in vlk-memact uses."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def constraint_tag(constraint_type: ConstraintType | str | None) -> str:
    return PROSPECTIVE_TAG if constraint_type == ConstraintType.PROSPECTIVE else PREVENTIVE_TAG


def constraint_lines(constraint: Slot) -> str:
    line = f"[id:{constraint.id}] {constraint_tag(constraint.constraint_type)}: {constraint.learning_summary}\n"
    if constraint.evidence:
        line += f"    Evidence: {one_line(constraint.evidence, EVIDENCE_PREVIEW_CHARS)}\n"
    return line


def present_lines(slot: Slot) -> str:
    where = f"File: {slot.file_context}" if slot.file_context else ""
    return f"[id:{slot.id}] {PRESENT_TAG} {where} | Log: {slot.raw_log}\n"


def conflict_block(conflicts: Sequence[Conflict]) -> str:
    if not conflicts:
        return ""
    lines = [f"\n{CONFLICT_HEADER}\n"]
    for c in conflicts:
        lines.append(
            f'  ⚠ Constraint #{c.first_id} vs #{c.second_id}: {c.description} ("{c.keyword_a}" ↔ "{c.keyword_b}")\n'
        )
    lines.append("  → Resolve with vlk_revoke_future before proceeding.\n")
    return "".join(lines)


def pipeline_line(loops: Sequence[LoopReport], merges: Sequence[MergeReport]) -> str:
    """One line saying what this fetch changed (fixes spec §5: the prototype only logged it)."""
    if not loops and not merges:
        return "[VLK PIPELINE] No loop intercepted, no constraint merged.\n"
    parts = []
    for loop in loops:
        ids = ", ".join(f"#{i}" for i in loop.archived_ids)
        parts.append(
            f"intercepted a loop of {loop.occurrences} ({loop.method}): archived {ids} "
            f"(~{loop.tokens_saved} tokens saved), anchor #{loop.anchor_id}"
        )
    for merge in merges:
        parts.append(
            f"merged {len(merge.merged_ids)} {merge.constraint_type} constraints into #{merge.consolidated_id}"
        )
    return "[VLK PIPELINE] " + "; ".join(parts) + ".\n"


def context_text(
    constraints: Sequence[Slot],
    present: Sequence[Slot],
    conflicts: Sequence[Conflict],
    loops: Sequence[LoopReport],
    merges: Sequence[MergeReport],
) -> str:
    """FUTURE constraints first (they steer the next step), then PRESENT slots oldest first."""
    body = [constraint_lines(c) for c in constraints]
    body += [present_lines(s) for s in present]
    text = CONTEXT_HEADER + ("".join(body) if body else EMPTY_CONTEXT)
    text += conflict_block(conflicts)
    return text + "\n" + pipeline_line(loops, merges)


def record_text(result: RecordResult) -> str:
    text = (
        f"📝 [VLK RECORD] PRESENT state recorded as timeline_id={result.timeline_id} "
        f"(content_id={result.content_id}) in session '{result.session_id}'. It will appear in subsequent "
        "vlk_fetch_context calls until archived via vlk_time_travel."
    )
    if result.truncated:
        text += "\nThe log was longer than the size limit: its head and tail were kept around a truncation marker."
    if result.repeats >= 2:
        ids = ", ".join(f"#{i}" for i in result.repeat_ids)
        text += (
            f"\n⚠ The same error ({result.fingerprint_kind}) is now active {result.repeats} times ({ids}). "
            "Repeating the same action will not fix it; a loop is archived and replaced by a "
            "[SYSTEM ANCHOR] on the next vlk_fetch_context once it reaches the threshold."
        )
    return text


def time_travel_text(result: TimeTravelResult) -> str:
    moved = ", ".join(f"#{i}" for i in result.moved_ids)
    text = (
        f"🧠 [VLK CHRONESTHESIA] Transitioned {len(result.moved_ids)} timeline slot(s) to PAST ({moved}) "
        f"(~{result.tokens_saved} tokens saved). FUTURE constraint #{result.constraint_id} injected:\n"
        f"---\n{result.learning}\n---\n"
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
        f"estimated tokens in active raw_log data (~{result.archived_tokens} archived)."
    )


def slots_json(slots: Sequence[SlotView]) -> str:
    """The prototype's listing format: a pretty JSON array, non-ASCII kept."""
    return json.dumps([asdict(s) for s in slots], ensure_ascii=False, indent=2)


def context_summary(result: ContextResult) -> dict[str, object]:
    """The structured part of a context result, without the text the content block already carries."""
    data = asdict(result)
    data.pop("text")
    return data
