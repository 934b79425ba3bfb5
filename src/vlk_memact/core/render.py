"""Every text a user or a model reads, and the one token estimator; pure functions only.

The literal headers are the prototype's (spec §4, §5) so that prompts written for it keep working.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from operator import attrgetter
from json.encoder import encode_basestring as _json_string

from .model import (
    Conflict,
    ConflictPair,
    ConflictView,
    ConstraintType,
    ContextResult,
    ContextView,
    LoopReport,
    LoopView,
    MergeReport,
    Origin,
    Slot,
)
from .quoting import one_line, quoted_block, quoted_line

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
LONG_SLOT_MARKER = "\n[... {omitted} characters left out to fit the token budget; vlk_get_history shows the full log ...]\n"
OMISSION_LINE = (
    "[VLK BUDGET] Left out to stay within {max_tokens} tokens: {present} PRESENT slot(s) and "
    "{constraints} constraint(s); vlk_get_history and vlk_search_memory show everything.\n"
)
OMISSION_RESERVE = 60  # tokens kept free for OMISSION_LINE
PIPELINE_LINE_CHARS = 400
MIN_TRUNCATED_SLOT_TOKENS = 60  # below this, a slot that does not fit is left out rather than cut
# The two kinds of loop, as every place that names one explains them: the same text each time, or the same
# error in texts whose details differ (what fingerprint.group recognises: paths, ids, numbers, times).
LOOP_KINDS = {"exact": "identical logs", "fingerprint": "same error, details differ"}
ANCHOR_ORDER = ("CURRENT STRATEGY EXHAUSTED. Mandatory: completely change approach. Do not repeat the same action. "
                "Try another tool, another file, or consult the user.")
# What replaces the order once fix memory knows what fixed the error (constraint_lines adds the fix below it).
KNOWN_FIX = "A fix for this error is known (Fixed by, below): apply it instead of changing approach or repeating the call."


def with_known_fix(anchor: str) -> str:
    """An anchor's text once its error has a known fix: the fix, not the order to change approach (which was
    right while nothing worked, and wrong once something did)."""
    return anchor.replace(ANCHOR_ORDER, KNOWN_FIX)


def estimate_tokens(text: str | None) -> int:
    """ceil(characters / 3.8): the single estimator every figure in vlk-memact uses."""
    return chars_tokens(len(text)) if text else 0


def chars_tokens(chars: int) -> int:
    """The same estimate for a count of characters (summed over several logs, or in SQL)."""
    return math.ceil(chars / CHARS_PER_TOKEN) if chars else 0


def json_tokens(text: str) -> int:
    """The tokens of text inside a JSON string: what a model reads when its host passes structuredContent on.

    The string's own encoder (what json.dumps(text, ensure_ascii=False) runs, without building an encoder per
    call: a context prices dozens of parts)."""
    return chars_tokens(len(_json_string(text)) - 2) if text else 0


def structured_json(data: object) -> str:
    """structuredContent as hosts serialise it for the model (compact, non-ASCII kept, like JSON.stringify)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def constraint_tag(constraint_type: ConstraintType | str | None) -> str:
    return PROSPECTIVE_TAG if constraint_type == ConstraintType.PROSPECTIVE else PREVENTIVE_TAG


def lesson_text(constraint: Slot) -> str:
    """Anchors and consolidations are the server's own text (their data parts quoted when built)."""
    text = constraint.learning_summary or ""
    if constraint.origin in (Origin.ANCHOR, Origin.CONSOLIDATED):
        return one_line(text, len(text) + 1)
    return quoted_line(text, len(text) + 1)


def constraint_lines(constraint: Slot, session_id: str | None = None, fix: str | None = None) -> str:
    lesson = lesson_text(constraint)
    if fix and constraint.origin == Origin.ANCHOR:
        lesson = with_known_fix(lesson)  # the fix, not an order to change approach
    line = f"[id:{constraint.id}] {constraint_tag(constraint.constraint_type)}: {lesson}\n"
    if constraint.evidence:
        line += f"    Evidence: {quoted_line(constraint.evidence, EVIDENCE_PREVIEW_CHARS)}\n"
    if fix:
        line += f"    Fixed by: {fix}\n"  # fix memory: what resolved this error (already quoted, one line)
    if session_id is not None and constraint.session_id != session_id:
        scope = constraint.scope.value if constraint.scope else "session"
        fired = f", fired {constraint.fire_count} times" if constraint.fire_count else ""
        line += f"    Learned in session '{quoted_line(constraint.session_id, 60)}' ({scope} scope{fired}).\n"
    return line


def present_lines(slot: Slot, also: Sequence[int] = (), raw_log: str | None = None) -> str:
    """A PRESENT slot's entry; raw_log, when given, is shown instead of the slot's own (a log cut to fit)."""
    return _present_entry(slot.id, slot.file_context, slot.raw_log if raw_log is None else raw_log, also)


def _present_entry(slot_id: int, file_context: str | None, log: str | None, also: Sequence[int]) -> str:
    """present_lines from the only fields it shows."""
    where = f"File: {quoted_line(file_context, 300)}" if file_context else ""
    same = f"(the same error also as {', '.join(f'#{i}' for i in also)}) " if also else ""
    return f"[id:{slot_id}] {PRESENT_TAG} {same}{where} | Log: {quoted_block(log or '')}\n"


def fold_repeats(present: Sequence[Slot]) -> dict[int, list[int]]:
    """Newest slot of each fingerprint -> the older PRESENT slots of the same error, shown once."""
    newest: dict[str, Slot] = {}
    for slot in present:  # the highest sequence_order of each fingerprint (the later one on a tie)
        if slot.fingerprint:
            held = newest.get(slot.fingerprint)
            if held is None or slot.sequence_order >= held.sequence_order:
                newest[slot.fingerprint] = slot
    folded: dict[int, list[int]] = {s.id: [] for s in present}
    for slot in present:
        head = newest.get(slot.fingerprint or "")
        if head is not None and head.id != slot.id:
            folded.pop(slot.id)
            folded[head.id].append(slot.id)
    return folded


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
            f"intercepted a loop of {loop.occurrences} ({loop.method}: {LOOP_KINDS.get(loop.method, '')}): archived {ids} "
            f"(~{loop.tokens_saved} tokens saved), anchor #{loop.anchor_id}"
        )
    for merge in merges:
        parts.append(
            f"merged {len(merge.merged_ids)} {merge.constraint_type} constraints into #{merge.consolidated_id}"
        )
    return "[VLK PIPELINE] " + "; ".join(parts) + ".\n"


@dataclass(frozen=True)
class RenderedContext:
    """The context text and which slots made it in."""

    text: str
    constraint_ids: list[int]
    present_ids: list[int]
    omitted_constraint_ids: list[int]
    omitted_present_ids: list[int]


def truncate_to_tokens(text: str, tokens: int) -> str:
    """Keep the head and tail of text around a marker so that it costs at most `tokens`."""
    if estimate_tokens(text) <= tokens:
        return text
    budget = int(tokens * CHARS_PER_TOKEN) - len(LONG_SLOT_MARKER.format(omitted=len(text))) - 2
    budget = max(budget, 0)
    head, tail = budget * 2 // 5, budget - budget * 2 // 5
    omitted = len(text) - head - tail
    return text[:head] + LONG_SLOT_MARKER.format(omitted=omitted) + (text[-tail:] if tail else "")


def render_context(
    session_id: str,
    constraints: Sequence[Slot],
    present: Sequence[Slot],
    conflicts: Sequence[Conflict],
    loops: Sequence[LoopReport],
    merges: Sequence[MergeReport],
    max_tokens: int,
    project: str = "default",
    fixes: Mapping[int, str] | None = None,
) -> RenderedContext:
    """Fill the budget by priority: conflicts, constraints in rank order, PRESENT slots newest first.

    Constraints are shown before PRESENT slots and PRESENT slots oldest first; what did not fit is
    counted in one line. Neither form costs more than max_tokens: each part is priced as it reads
    inside the JSON of the structured result, and the rest of that result is reserved first (both
    estimated part by part, which can only over-count).
    """
    pipeline = one_line(pipeline_line(loops, merges), PIPELINE_LINE_CHARS) + "\n"
    # The structured result without its text, at most: every id listed once, and the largest possible
    # `tokens` (the ids split into shown and omitted lists can only get shorter).
    skeleton = RenderedContext("", [c.id for c in constraints], [s.id for s in present], [], [])
    report = estimate_tokens(structured_json(context_view(
        context_result(session_id, project, skeleton, max_tokens, max_tokens, conflicts, loops, merges)
    )))
    left = max_tokens - report - json_tokens(CONTEXT_HEADER) - json_tokens("\n" + pipeline)
    if not constraints and not present:
        left -= json_tokens(EMPTY_CONTEXT)
    folded = fold_repeats(present)
    # Each part is rendered and priced once, for both passes (only a cut log depends on the room left).
    fixes = fixes or {}
    constraint_parts = [(c.id, *_constraint_part(c, session_id, fixes.get(c.id))) for c in constraints]
    heads = sorted((s for s in present if s.id in folded), key=_SEQUENCE, reverse=True)
    present_parts = [(s, folded[s.id]) for s in heads]
    # Even at their least (a log cut to its marker) the entries cost more than the room: something will be
    # left out, so the first pass, which only finds that out, is skipped.
    surely_short = _exceeds(left, [c[2] for c in constraint_parts], (len(s.raw_log or "") for s in heads))
    fill = None if surely_short else _fill(
        conflicts, constraint_parts, present_parts, left, until_omission=True)
    if fill is None or fill.omitted_c or fill.omitted_p:  # something is left out: room for the line saying so
        fill = _fill(conflicts, constraint_parts, present_parts, left - OMISSION_RESERVE)
    shown_p = [s.id for s in present if s.id in fill.chosen]
    listed_p = sorted(i for head in shown_p for i in (head, *folded[head]))

    body = "".join(fill.constraint_parts) + "".join(fill.chosen[i] for i in shown_p)
    nothing_active = not (body or fill.omitted_c or fill.omitted_p)
    text = CONTEXT_HEADER + (EMPTY_CONTEXT if nothing_active else body) + fill.conflict_text
    if fill.omitted_c or fill.omitted_p:
        text += OMISSION_LINE.format(
            max_tokens=max_tokens, present=len(fill.omitted_p), constraints=len(fill.omitted_c)
        )
    text += "\n" + pipeline
    return RenderedContext(text, fill.shown_c, listed_p, fill.omitted_c, sorted(fill.omitted_p))


_SEQUENCE = attrgetter("sequence_order")


def _exceeds(left: int, constraint_costs: Sequence[int], log_chars: Iterable[int]) -> bool:
    """Whether the constraints and the least entries of the PRESENT slots cost more than left: summed only
    until they do (a long session passes it within its first few slots)."""
    total = sum(constraint_costs)
    if total > left:
        return True
    for chars in log_chars:
        total += _least_cut_tokens(chars)
        if total > left:
            return True
    return False


@dataclass
class _Fill:
    conflict_text: str = ""
    constraint_parts: list[str] = field(default_factory=list)
    shown_c: list[int] = field(default_factory=list)
    omitted_c: list[int] = field(default_factory=list)
    chosen: dict[int, str] = field(default_factory=dict)
    omitted_p: list[int] = field(default_factory=list)


def _priced(part: str) -> tuple[str, int]:
    return part, json_tokens(part)


# Every fetch renders and prices the same constraints and PRESENT slots again: quoting and JSON-escaping them
# is most of rendering. A Slot is immutable and wholly defined by its row (store/rows.py), so its text is
# kept by value; bounded, since a slot can hold a 64K-character log.
@lru_cache(maxsize=256)
def _constraint_part(constraint: Slot, session_id: str, fix: str | None) -> tuple[str, int]:
    return _priced(constraint_lines(constraint, session_id, fix))


def _present_part(slot: Slot, also: tuple[int, ...]) -> tuple[str, int]:
    return _present_part_of(slot.id, slot.file_context, slot.raw_log, also)


# Keyed by the fields shown rather than by the Slot: hashing every field of every PRESENT slot on each fetch
# cost more than the lookups it served.
@lru_cache(maxsize=256)
def _present_part_of(slot_id: int, file_context: str | None, raw_log: str | None,
                     also: tuple[int, ...]) -> tuple[str, int]:
    return _priced(_present_entry(slot_id, file_context, raw_log, also))


def _fill(
    conflicts: Sequence[Conflict],
    constraint_parts: Sequence[tuple[int, str, int]],
    present_parts: Sequence[tuple[Slot, list[int]]],
    left: int,
    until_omission: bool = False,
) -> _Fill:
    """What fits in `left` tokens, by priority (one pass of render_context): conflicts, then the constraints
    (id, text, cost) in rank order, then the PRESENT slots (slot, older copies) newest first, each rendered
    only when it might fit (once the budget is spent, most of a long session is left out unrendered).

    until_omission: stop at the first part left out (the caller then fills again with less room, and only
    needs to know that something was left out)."""
    fill = _Fill()
    for width in range(len(conflicts), -1, -1):  # as many conflict lines as fit, all of them if possible
        fill.conflict_text = conflict_block(conflicts[:width])
        if json_tokens(fill.conflict_text) <= left:
            break
    left -= json_tokens(fill.conflict_text)

    for constraint_id, part, cost in constraint_parts:
        if cost <= left:
            fill.constraint_parts.append(part)
            fill.shown_c.append(constraint_id)
            left -= cost
        else:
            fill.omitted_c.append(constraint_id)
            if until_omission:
                return fill

    # A repeated error is shown once, newest copy, naming the older copies (the loop detector archives
    # it when it reaches the threshold).
    for slot, also in present_parts:
        # Too small a room to cut into, and less than the slot's whole entry can cost: left out unrendered.
        if left < MIN_TRUNCATED_SLOT_TOKENS and left < _least_present_tokens(len(slot.raw_log or "")):
            fill.omitted_p += [slot.id, *also]
            if until_omission:
                return fill
            continue
        part, cost = _present_part(slot, tuple(also))
        if cost > left and left >= MIN_TRUNCATED_SLOT_TOKENS:
            part, cost = _cut_to_fit(slot.id, slot.file_context, slot.raw_log or "", tuple(also), left)
        if cost <= left:
            fill.chosen[slot.id] = part
            left -= cost
        else:
            fill.omitted_p += [slot.id, *also]
            if until_omission:
                return fill
    return fill


# What every PRESENT entry writes besides its log (an id of one digit; the final newline escaped in JSON).
_PRESENT_FRAME_CHARS = len(f"[id:0] {PRESENT_TAG} | Log: \\n")


@lru_cache(maxsize=4096)
def _least_cut_tokens(log_chars: int) -> int:
    """A lower bound of the cost of any entry of a slot whose log has log_chars characters, cut or whole:
    a cut log holds at least the marker (truncate_to_tokens)."""
    return chars_tokens(min(log_chars, _LEAST_MARKER_CHARS) + _PRESENT_FRAME_CHARS)


_LEAST_MARKER_CHARS = len(LONG_SLOT_MARKER.format(omitted=0))


@lru_cache(maxsize=4096)
def _least_present_tokens(log_chars: int) -> int:
    """A lower bound of the cost of an entry whose whole log has log_chars characters: quoting never shortens
    a log (a CRLF becomes a longer continuation), nor does JSON escaping."""
    return chars_tokens(log_chars + _PRESENT_FRAME_CHARS)


@lru_cache(maxsize=256)  # the same slot cut to the same room again on the next fetch (see _present_part)
def _cut_to_fit(
    slot_id: int, file_context: str | None, raw_log: str, also: tuple[int, ...], left: int
) -> tuple[str, int]:
    """The slot's entry, its log cut around a marker so that the line costs at most `left` (JSON-escaped)."""
    frame = json_tokens(_present_entry(slot_id, file_context, "", also)) + 1
    room = left - frame
    part, cost = "", left + 1
    for _ in range(6):  # escaping (newlines, quotes, control characters) makes a cut log cost more
        part = _present_entry(slot_id, file_context, truncate_to_tokens(raw_log, max(room, 0)), also)
        cost = json_tokens(part)
        if cost <= left or room <= 0:
            break
        room = min(room - 1, room * (left - frame) // max(cost - frame, 1))
    return part, cost


def context_result(
    session_id: str,
    project: str,
    rendered: RenderedContext,
    tokens: int,
    max_tokens: int,
    conflicts: Sequence[Conflict],
    loops: Sequence[LoopReport],
    merges: Sequence[MergeReport],
) -> ContextResult:
    """The context result of a rendering: its text, the ids it shows and omits, and what the pipeline did."""
    return ContextResult(
        session_id=session_id,
        project=project,
        text=rendered.text,
        tokens=tokens,
        max_tokens=max_tokens,
        constraint_ids=rendered.constraint_ids,
        present_ids=rendered.present_ids,
        omitted_constraint_ids=rendered.omitted_constraint_ids,
        omitted_present_ids=rendered.omitted_present_ids,
        loops=list(loops),
        merges=list(merges),
        conflicts=[ConflictView(c.first_id, c.second_id, c.description) for c in conflicts],
        tokens_saved=sum(loop.tokens_saved for loop in loops),
    )


def context_view(result: ContextResult) -> dict[str, object]:
    """vlk_fetch_context's structuredContent: the context text first, then the report (its loop signatures
    and conflict descriptions are already in the text, so they are not repeated)."""
    view = ContextView(
        context=result.text,
        session_id=result.session_id,
        project=result.project,
        tokens=result.tokens,
        max_tokens=result.max_tokens,
        constraint_ids=list(result.constraint_ids),
        present_ids=list(result.present_ids),
        omitted_constraint_ids=list(result.omitted_constraint_ids),
        omitted_present_ids=list(result.omitted_present_ids),
        loops=[
            LoopView(lp.anchor_id, lp.method, lp.occurrences, list(lp.archived_ids), lp.tokens_saved,
                     list(lp.superseded_ids))
            for lp in result.loops
        ],
        merges=list(result.merges),
        conflicts=[ConflictPair(c.first_id, c.second_id) for c in result.conflicts],
        tokens_saved=result.tokens_saved,
    )
    return plain_view(view)


def plain_view(view: object) -> dict[str, object]:
    """A view as a dict, its listed views as dicts too: what asdict gives, without its recursive deep copy
    (the largest part of building a structured result; the dict is serialized at once and dropped)."""
    return {name: [dict(vars(item)) if hasattr(item, "__dataclass_fields__") else item for item in value]
            if isinstance(value, list) else value for name, value in vars(view).items()}
