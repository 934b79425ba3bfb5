"""Memory: the temporal engine. One method per tool, one store transaction per method.

Decisions come from the pure modules (loops, consolidate, conflicts, render); this module only
validates input, applies decisions inside a transaction and returns typed results.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from . import inputs
from .config import Settings
from .conflicts import find_conflicts
from .consolidate import plan_consolidation
from .errors import NotFound
from .fingerprint import FINGERPRINT_VERSION, fingerprint
from .loops import detect_loops
from .model import (
    ConflictView,
    ConstraintType,
    ContextResult,
    HistoryResult,
    LoopReport,
    MergeReport,
    NewSlot,
    Origin,
    RecordResult,
    Retired,
    RevokeResult,
    SearchResult,
    Slot,
    SlotView,
    SummaryResult,
    TemporalState,
    TimeTravelResult,
)
from .render import CHARS_PER_TOKEN, context_text, estimate_tokens
from .store import Store, Transaction, open_store

log = logging.getLogger(__name__)

HISTORY_DEFAULT_LIMIT = 50
SEARCH_DEFAULT_LIMIT = 20
MAX_LESSON_KEYS = 16


class Memory:
    """The library API: `with Memory() as m: m.record_state(raw_log=...)`."""

    def __init__(
        self, database_url: str | None = None, *, settings: Settings | None = None, store: Store | None = None
    ) -> None:
        self.settings = settings if settings is not None else Settings.from_env()
        if store is None:
            url = database_url if database_url is not None else self.settings.database_url
            store = open_store(url, busy_timeout_ms=self.settings.busy_timeout_ms)
        self.store = store

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ---- vlk_record_state ----

    def record_state(
        self,
        raw_log: Any,
        file_context: Any = None,
        tool_payload: Any = None,
        session_id: Any = inputs.DEFAULT_SESSION,
    ) -> RecordResult:
        """Record a log, error or observation as a PRESENT slot."""
        sid = inputs.session_id(session_id)
        text, truncated = inputs.raw_log(raw_log, self.settings.max_raw_log_chars)
        context = inputs.optional_text("file_context", file_context, self.settings.max_field_chars)
        payload = inputs.tool_payload(tool_payload, self.settings.max_field_chars)
        fp = fingerprint(text)  # pure and CPU-bound: outside the write lock
        with self.store.write() as tx:
            content_id = tx.add_content(text, context, payload)
            slot = tx.insert_slot(
                NewSlot(
                    session_id=sid,
                    temporal_state=TemporalState.PRESENT,
                    origin=Origin.RECORD,
                    content_id=content_id,
                    fingerprint=fp.key,
                    fingerprint_keys=fp.keys,
                    fingerprint_version=FINGERPRINT_VERSION,
                )
            )
            repeats = tx.count_fingerprint(sid, fp.key)
        log.info("Recorded PRESENT state #%d (content_id=%d) in session %r at sequence %d",
                 slot.id, content_id, sid, slot.sequence_order)
        return RecordResult(
            session_id=sid,
            timeline_id=slot.id,
            content_id=content_id,
            sequence_order=slot.sequence_order,
            fingerprint=fp.key,
            fingerprint_kind=fp.kind,
            repeats=len(repeats),
            repeat_ids=repeats,
            truncated=truncated,
        )

    # ---- vlk_time_travel ----

    def time_travel(
        self,
        target_timeline_ids: Any,
        learning: Any,
        raw_log_excerpt: Any,
        constraint_type: Any = None,
        session_id: Any = inputs.DEFAULT_SESSION,
    ) -> TimeTravelResult:
        """Archive PRESENT slots to PAST and inject one FUTURE constraint grounded in evidence."""
        lesson = inputs.required_text("learning", learning, self.settings.max_lesson_chars)
        ids = inputs.timeline_ids("target_timeline_ids", target_timeline_ids)
        evidence = inputs.required_text(
            "raw_log_excerpt",
            raw_log_excerpt,
            self.settings.max_lesson_chars,
            hint="Provide 1-2 sentences of the raw error/log that grounds this lesson in evidence. "
            "This prevents unverified constraints from being injected.",
        )
        kind = inputs.constraint_type(constraint_type)
        sid = inputs.session_id(session_id)
        with self.store.write() as tx:
            present = [s for s in tx.slots_by_id(sid, ids) if s.temporal_state is TemporalState.PRESENT]
            if not present:
                raise NotFound(
                    f"None of the ids {ids} is a PRESENT slot of session '{sid}', so nothing was stored. "
                    "Take PRESENT ids from the [id:N] tags of vlk_fetch_context or from vlk_get_history."
                )
            primary, keys = _lesson_fingerprint(present)
            constraint = tx.insert_slot(
                NewSlot(
                    session_id=sid,
                    temporal_state=TemporalState.FUTURE,
                    origin=Origin.LESSON,
                    learning_summary=lesson,
                    constraint_type=kind,
                    evidence=evidence,
                    fingerprint=primary,
                    fingerprint_keys=keys,
                    fingerprint_version=FINGERPRINT_VERSION,
                )
            )
            moved = tx.retire(sid, [s.id for s in present], TemporalState.PRESENT, Retired.TIME_TRAVEL, constraint.id)
            tx.link(constraint.id, moved, "archived")
        saved = _tokens_of(s for s in present if s.id in moved)
        log.info("Time travel: moved %d slots from PRESENT to PAST in session %r, saved ~%d tokens",
                 len(moved), sid, saved)
        return TimeTravelResult(
            session_id=sid,
            constraint_id=constraint.id,
            constraint_type=kind.value,
            learning=lesson,
            evidence=evidence,
            moved_ids=moved,
            ignored_ids=[i for i in ids if i not in moved],
            tokens_saved=saved,
        )

    # ---- vlk_get_history / vlk_search_memory / vlk_summarize_session ----

    def get_history(self, limit: Any = None, session_id: Any = inputs.DEFAULT_SESSION) -> HistoryResult:
        """Every slot of the session in every state, newest first."""
        sid = inputs.session_id(session_id)
        n = inputs.limit(limit, HISTORY_DEFAULT_LIMIT, self.settings.max_list_limit)
        with self.store.read() as tx:
            slots = tx.history(sid, n)
        return HistoryResult(session_id=sid, limit=n, slots=[view(s) for s in slots])

    def search_memory(
        self, query: Any, limit: Any = None, session_id: Any = inputs.DEFAULT_SESSION
    ) -> SearchResult:
        """Literal, case-insensitive search over logs, file context, lessons and evidence."""
        text = inputs.query(query)
        sid = inputs.session_id(session_id)
        n = inputs.limit(limit, SEARCH_DEFAULT_LIMIT, self.settings.max_list_limit)
        with self.store.read() as tx:
            slots = tx.search(sid, text, n)
        return SearchResult(session_id=sid, query=text, limit=n, slots=[view(s) for s in slots])

    def summarize_session(self, session_id: Any = inputs.DEFAULT_SESSION) -> SummaryResult:
        """Counts per state; tokens of live logs and of archived ones, apart (fixes defect 12)."""
        sid = inputs.session_id(session_id)
        with self.store.read() as tx:
            counts = tx.counts(sid)
        present, present_chars = counts.get(TemporalState.PRESENT, (0, 0))
        past, past_chars = counts.get(TemporalState.PAST, (0, 0))
        future, _ = counts.get(TemporalState.FUTURE, (0, 0))
        return SummaryResult(
            session_id=sid,
            total=present + past + future,
            present=present,
            past=past,
            future=future,
            active_tokens=math.ceil(present_chars / CHARS_PER_TOKEN),
            archived_tokens=math.ceil(past_chars / CHARS_PER_TOKEN),
        )

    # ---- vlk_fetch_context ----

    def fetch_context(self, session_id: Any = inputs.DEFAULT_SESSION) -> ContextResult:
        """Intercept loops, consolidate, detect conflicts and render, all in one write transaction."""
        sid = inputs.session_id(session_id)
        with self.store.write() as tx:
            present = self._refresh_fingerprints(tx, tx.slots(sid, TemporalState.PRESENT))
            loops = self._intercept_loops(tx, sid, present)
            archived = {i for loop in loops for i in loop.archived_ids}
            present = [s for s in present if s.id not in archived]
            constraints = tx.slots(sid, TemporalState.FUTURE)
            merges = self._consolidate(tx, sid, constraints)
            if merges:
                constraints = tx.slots(sid, TemporalState.FUTURE)
            conflicts = find_conflicts(constraints)
        text = context_text(constraints, present, conflicts, loops, merges)
        return ContextResult(
            session_id=sid,
            text=text,
            tokens=estimate_tokens(text),
            constraint_ids=[c.id for c in constraints],
            present_ids=[s.id for s in present],
            loops=loops,
            merges=merges,
            conflicts=[ConflictView(c.first_id, c.second_id, c.description) for c in conflicts],
            tokens_saved=sum(loop.tokens_saved for loop in loops),
        )

    def _refresh_fingerprints(self, tx: Transaction, present: list[Slot]) -> list[Slot]:
        """Re-fingerprint PRESENT slots stored by an older algorithm, so grouping never mixes versions."""
        stale = [s for s in present if s.fingerprint_version != FINGERPRINT_VERSION and s.raw_log is not None]
        if not stale:
            return present
        updates = []
        fresh: dict[int, Slot] = {}
        for slot in stale:
            fp = fingerprint(slot.raw_log or "")
            updates.append((slot.id, fp.key, fp.keys, FINGERPRINT_VERSION))
            fresh[slot.id] = _replace_fingerprint(slot, fp.key, fp.keys)
        tx.update_fingerprints(updates)
        log.info("Re-fingerprinted %d PRESENT slots to algorithm version %d", len(stale), FINGERPRINT_VERSION)
        return [fresh.get(s.id, s) for s in present]

    def _intercept_loops(self, tx: Transaction, sid: str, present: list[Slot]) -> list[LoopReport]:
        reports = []
        by_id = {s.id: s for s in present}
        for group in detect_loops(present, self.settings.loop_threshold):
            anchor = tx.insert_slot(
                NewSlot(
                    session_id=sid,
                    temporal_state=TemporalState.FUTURE,
                    origin=Origin.ANCHOR,
                    learning_summary=group.anchor_text,
                    constraint_type=ConstraintType.DERIVED,
                    evidence=group.evidence,
                    fingerprint=group.fingerprint,
                    fingerprint_keys=group.fingerprint_keys,
                    fingerprint_version=FINGERPRINT_VERSION,
                )
            )
            moved = tx.retire(sid, group.slot_ids, TemporalState.PRESENT, Retired.LOOP, anchor.id)
            tx.link(anchor.id, moved, "archived")
            saved = _tokens_of(by_id[i] for i in moved)
            log.info("[AUTO-INTERCEPT] Session %r: archived %d looped slots (%s), ~%d tokens saved, anchor #%d",
                     sid, len(moved), group.method, saved, anchor.id)
            reports.append(LoopReport(anchor.id, group.method, len(group.slot_ids), moved, group.signature, saved))
        return reports

    def _consolidate(self, tx: Transaction, sid: str, constraints: list[Slot]) -> list[MergeReport]:
        # Conflicting constraints stay apart so that the agent can still revoke one of them.
        keep_apart = {i for c in find_conflicts(constraints) for i in (c.first_id, c.second_id)}
        reports = []
        for plan in plan_consolidation(
            constraints, self.settings.consolidate_above, self.settings.consolidated_max_chars, keep_apart
        ):
            merged = tx.insert_slot(
                NewSlot(
                    session_id=sid,
                    temporal_state=TemporalState.FUTURE,
                    origin=Origin.CONSOLIDATED,
                    learning_summary=plan.text,
                    constraint_type=plan.constraint_type,
                    lessons=plan.lessons,
                )
            )
            retired = tx.retire(sid, plan.merged_ids, TemporalState.FUTURE, Retired.CONSOLIDATED, merged.id)
            tx.link(merged.id, retired, "merged")
            log.info("[CONSOLIDATE] Session %r: merged %d %s constraints into #%d (%d distinct lessons, %d kept)",
                     sid, len(retired), plan.constraint_type.value, merged.id, plan.total, len(plan.lessons))
            reports.append(
                MergeReport(merged.id, plan.constraint_type.value, retired, plan.total, len(plan.lessons))
            )
        return reports

    # ---- vlk_revoke_future ----

    def revoke_future(self, timeline_id: Any, session_id: Any = inputs.DEFAULT_SESSION) -> RevokeResult:
        """Move one FUTURE constraint to PAST."""
        cid = inputs.timeline_id("timeline_id", timeline_id)
        sid = inputs.session_id(session_id)
        with self.store.write() as tx:
            moved = tx.retire(sid, [cid], TemporalState.FUTURE, Retired.REVOKED, None)
        if not moved:
            raise NotFound(
                f"No FUTURE constraint found with id #{cid} in session '{sid}'. "
                "Active constraint ids are the [id:N] tags of vlk_fetch_context."
            )
        log.info("[REVOKE] Session %r: revoked FUTURE constraint #%d", sid, cid)
        return RevokeResult(session_id=sid, constraint_id=cid)


def view(slot: Slot) -> SlotView:
    """A slot as listing tools return it."""
    return SlotView(
        id=slot.id,
        content_id=slot.content_id,
        session_id=slot.session_id,
        sequence_order=slot.sequence_order,
        temporal_state=slot.temporal_state.value,
        learning_summary=slot.learning_summary,
        created_at=slot.created_at,
        constraint_type=slot.constraint_type.value if slot.constraint_type else None,
        raw_log=slot.raw_log,
        file_context=slot.file_context,
        tool_payload=slot.tool_payload,
        evidence=slot.evidence,
        origin=slot.origin.value,
        fingerprint=slot.fingerprint,
        retired_reason=slot.retired_reason.value if slot.retired_reason else None,
        retired_by=slot.retired_by,
    )


def _tokens_of(slots: Any) -> int:
    """ceil(total characters / 3.8) over several logs, as the prototype sums before rounding."""
    return math.ceil(sum(len(s.raw_log or "") for s in slots) / CHARS_PER_TOKEN)


def _lesson_fingerprint(slots: Sequence[Slot]) -> tuple[str | None, tuple[str, ...]]:
    """A lesson is keyed by what it was learned from: the newest slot's key, and every slot's keys."""
    keys: dict[str, None] = {}
    for slot in reversed(slots):
        for key in slot.fingerprint_keys or ((slot.fingerprint,) if slot.fingerprint else ()):
            keys.setdefault(key, None)
    return slots[-1].fingerprint, tuple(keys)[:MAX_LESSON_KEYS]


def _replace_fingerprint(slot: Slot, key: str, keys: tuple[str, ...]) -> Slot:
    from dataclasses import replace

    return replace(slot, fingerprint=key, fingerprint_keys=keys, fingerprint_version=FINGERPRINT_VERSION)
