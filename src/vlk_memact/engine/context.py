"""The context pipeline (vlk_fetch_context): re-fingerprint, intercept loops, consolidate, find conflicts,
then render within the token budget; preview_context runs the same pipeline and rolls it back."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from ..core import inputs
from ..core.conflicts import find_conflicts
from ..core.consolidate import plan_consolidation
from ..core.model import (
    Conflict,
    ConstraintType,
    ContextResult,
    LoopReport,
    MergeReport,
    NewSlot,
    Origin,
    Retired,
    Scope,
    SessionKey,
    Slot,
    TemporalState,
)
from ..core.render import context_result, estimate_tokens, render_context
from ..fingerprint import FINGERPRINT_VERSION, fingerprint
from ..store import Transaction
from .base import MemoryBase
from .fix_memory import lesson_fixes
from .views import rank, tokens_of

log = logging.getLogger(__name__)

MAX_ANCHOR_KEYS = 32


class Context(MemoryBase):
    """vlk_fetch_context and its dry run: the pipeline's decisions come from the pure core, applied in one
    transaction."""

    def fetch_context(self, session_id: Any = inputs.DEFAULT_SESSION, max_tokens: Any = None) -> ContextResult:
        """Intercept loops, consolidate, detect conflicts and render within a token budget, in one transaction."""
        key = self._key(session_id)
        budget = inputs.max_tokens(max_tokens, self.settings.context_max_tokens)
        with self.store.write() as tx:
            stamp = tx.change_stamp() if hasattr(tx, "change_stamp") else None
            kept = self._contexts.get((key, budget), stamp)
            if kept is not None:
                return kept  # nothing committed since this very result was computed (context_cache.py)
            pipeline = self._pipeline(tx, key, logging.INFO)
            fixes = lesson_fixes(tx, key, pipeline[0])
            wrote = stamp is not None and tx.change_stamp() != stamp
        result = _context_result(key, budget, *pipeline, fixes=fixes)
        if not wrote:
            self._contexts.put((key, budget), stamp, result)
        return result

    def intercept_loops(self, session_id: Any = inputs.DEFAULT_SESSION) -> list[LoopReport]:
        """The loops fetch_context would intercept now, intercepted by the same pipeline, without rendering the
        context: a hook's failure event reads only the loops, on every failed tool call. The constraints are
        consolidated when a loop added one (its anchor); otherwise they are as the last pipeline left them, and the
        next fetch_context runs the whole pipeline anyway, so the hot path does not read them."""
        key = self._key(session_id)
        with self.store.write() as tx:
            _, loops = self._present_and_loops(tx, key, logging.INFO)
            if loops:
                constraints = tx.visible_constraints(key)
                self._consolidate(tx, key, constraints, find_conflicts(constraints), logging.INFO)
            return loops

    def preview_context(self, session_id: Any = inputs.DEFAULT_SESSION, max_tokens: Any = None) -> ContextResult:
        """What fetch_context would return now, by the same pipeline in a transaction that is rolled back."""
        key = self._key(session_id)
        budget = inputs.max_tokens(max_tokens, self.settings.context_max_tokens)
        with self.store.dry_run() as tx:
            pipeline = self._pipeline(tx, key, logging.DEBUG)
            fixes = lesson_fixes(tx, key, pipeline[0])
        return _context_result(key, budget, *pipeline, fixes=fixes)

    def _pipeline(
        self, tx: Transaction, key: SessionKey, level: int
    ) -> tuple[list[Slot], list[Slot], list[Conflict], list[LoopReport], list[MergeReport]]:
        """(constraints, PRESENT slots, conflicts, loops, merges) after the pipeline ran in tx."""
        present, loops = self._present_and_loops(tx, key, level)
        constraints = tx.visible_constraints(key)
        conflicts = find_conflicts(constraints)
        merges = self._consolidate(tx, key, constraints, conflicts, level)
        if merges:
            constraints = tx.visible_constraints(key)
            conflicts = find_conflicts(constraints)
        return constraints, present, conflicts, loops, merges

    def _present_and_loops(self, tx: Transaction, key: SessionKey, level: int) -> tuple[list[Slot], list[LoopReport]]:
        """The pipeline's first steps: the PRESENT slots (re-fingerprinted if stale) left after the loops it
        intercepted, and those loops."""
        present = self._refresh_fingerprints(tx, self._present.slots(tx, key, TemporalState.PRESENT), level)
        loops = self._intercept_loops(tx, key, present, level)
        archived = {i for loop in loops for i in loop.archived_ids}
        return [s for s in present if s.id not in archived], loops

    def _refresh_fingerprints(self, tx: Transaction, present: list[Slot], level: int) -> list[Slot]:
        """Re-fingerprint PRESENT slots stored by an older algorithm, so grouping never mixes versions."""
        stale = [s for s in present if s.fingerprint_version != FINGERPRINT_VERSION and s.raw_log is not None]
        if not stale:
            return present
        updates = []
        fresh: dict[int, Slot] = {}
        for slot in stale:
            fp = fingerprint(slot.raw_log or "")
            updates.append((slot.id, fp.key, fp.keys, FINGERPRINT_VERSION))
            fresh[slot.id] = replace(slot, fingerprint=fp.key, fingerprint_keys=fp.keys,
                                     fingerprint_version=FINGERPRINT_VERSION)
        tx.update_fingerprints(updates)
        log.log(level, "Re-fingerprinted %d PRESENT slots to algorithm version %d", len(stale), FINGERPRINT_VERSION)
        return [fresh.get(s.id, s) for s in present]

    def _intercept_loops(
        self, tx: Transaction, key: SessionKey, present: list[Slot], level: int
    ) -> list[LoopReport]:
        groups = self._loops.detect(key, present, self.settings.loop_threshold)
        if not groups:
            return []
        reports = []
        by_id = {s.id: s for s in present}
        anchors = [c for c in tx.visible_constraints(key) if c.origin is Origin.ANCHOR]
        for group in groups:
            # The same error looping again replaces its older anchor: one anchor per error, with the full count.
            older = [a for a in anchors if set(a.fingerprint_keys) & set(group.fingerprint_keys)]
            earlier = sorted({i for a in older for i in tx.sources(a.id, "archived")})
            # A loop is a lesson about this code base: anchors protect the whole project.
            anchor = tx.insert_slot(
                NewSlot(
                    key=key,
                    temporal_state=TemporalState.FUTURE,
                    origin=Origin.ANCHOR,
                    scope=Scope.PROJECT,
                    learning_summary=group.anchor_text(len(group.slot_ids) + len(earlier)),
                    constraint_type=ConstraintType.DERIVED,
                    evidence=group.evidence,
                    fingerprint=group.fingerprint,
                    fingerprint_keys=tuple(dict.fromkeys((*group.fingerprint_keys, *(
                        k for a in older for k in a.fingerprint_keys))))[:MAX_ANCHOR_KEYS],
                    fingerprint_version=FINGERPRINT_VERSION,
                )
            )
            moved = tx.retire(key.tenant, group.slot_ids, TemporalState.PRESENT, Retired.LOOP, anchor.id)
            tx.link(anchor.id, [*earlier, *moved], "archived")
            superseded = tx.retire(
                key.tenant, [a.id for a in older], TemporalState.FUTURE, Retired.CONSOLIDATED, anchor.id
            )
            tx.link(anchor.id, superseded, "merged")
            anchors = [a for a in anchors if a.id not in superseded] + [anchor]
            saved = tokens_of(by_id[i] for i in moved)
            log.log(level, "[AUTO-INTERCEPT] Session %r: archived %d looped slots (%s), ~%d tokens saved, anchor #%d",
                     key.session, len(moved), group.method, saved, anchor.id)
            reports.append(
                LoopReport(anchor.id, group.method, len(group.slot_ids), moved, group.signature, saved, superseded)
            )
        return reports

    def _consolidate(
        self, tx: Transaction, key: SessionKey, constraints: list[Slot], conflicts: list[Conflict], level: int
    ) -> list[MergeReport]:
        # Conflicting constraints stay apart so that the agent can still revoke one of them.
        keep_apart = {i for c in conflicts for i in (c.first_id, c.second_id)}
        reports = []
        for plan in plan_consolidation(
            constraints, self.settings.consolidate_above, self.settings.consolidated_max_chars, keep_apart
        ):
            merged = tx.insert_slot(
                NewSlot(
                    key=key,
                    temporal_state=TemporalState.FUTURE,
                    origin=Origin.CONSOLIDATED,
                    scope=plan.scope,
                    learning_summary=plan.text,
                    constraint_type=plan.constraint_type,
                    lessons=plan.lessons,
                    fingerprint_keys=plan.fingerprint_keys,
                    fingerprint_version=FINGERPRINT_VERSION,
                )
            )
            retired = tx.retire(key.tenant, plan.merged_ids, TemporalState.FUTURE, Retired.CONSOLIDATED, merged.id)
            tx.link(merged.id, retired, "merged")
            log.log(level, "[CONSOLIDATE] Session %r: merged %d %s constraints into #%d (%d distinct lessons, %d kept)",
                     key.session, len(retired), plan.constraint_type.value, merged.id, plan.total, len(plan.lessons))
            reports.append(
                MergeReport(
                    merged.id, plan.constraint_type.value, plan.scope.value, retired, plan.total, len(plan.lessons)
                )
            )
        return reports


def _context_result(
    key: SessionKey, budget: int, constraints: list[Slot], present: list[Slot], conflicts: list[Conflict],
    loops: list[LoopReport], merges: list[MergeReport], fixes: dict[int, str] | None = None,
) -> ContextResult:
    """Render the pipeline's outcome within the budget (outside the transaction: rendering is pure)."""
    live_keys = {k for s in present for k in s.fingerprint_keys}
    rendered = render_context(
        key.session, rank(constraints, live_keys), present, conflicts, loops, merges, budget, key.project, fixes
    )
    return context_result(
        key.session, key.project, rendered, estimate_tokens(rendered.text), budget, conflicts, loops, merges
    )
