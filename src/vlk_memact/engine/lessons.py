"""Lessons: time travel turns PRESENT evidence into a FUTURE constraint; revoke_future retires one.

The fixes a lesson carries are read by fix_memory.py (lesson_fixes, error_fixes).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..core import inputs
from ..core.errors import NotFound
from ..core.model import (
    ConstraintType,
    NewSlot,
    Origin,
    Retired,
    RevokeResult,
    Scope,
    Slot,
    TemporalState,
    TimeTravelResult,
)
from ..fingerprint import FINGERPRINT_VERSION
from .base import MemoryBase
from .views import tokens_of

log = logging.getLogger(__name__)

MAX_LESSON_KEYS = 16


class Lessons(MemoryBase):
    """vlk_time_travel and vlk_revoke_future."""

    def time_travel(
        self,
        target_timeline_ids: Any,
        learning: Any,
        raw_log_excerpt: Any,
        constraint_type: Any = None,
        session_id: Any = inputs.DEFAULT_SESSION,
        scope: Any = None,
    ) -> TimeTravelResult:
        """Archive PRESENT slots to PAST and inject one FUTURE constraint grounded in evidence."""
        found: list[str] = []
        lesson = self._redact(inputs.required_text("learning", learning, self.settings.max_lesson_chars), found)
        ids = inputs.timeline_ids("target_timeline_ids", target_timeline_ids)
        evidence = self._redact(inputs.required_text(
            "raw_log_excerpt",
            raw_log_excerpt,
            self.settings.max_lesson_chars,
            hint="Provide 1-2 sentences of the raw error/log that grounds this lesson in evidence. "
            "This prevents unverified constraints from being injected.",
        ), found)
        kind = inputs.constraint_type(constraint_type)
        # A scar from a failure protects the whole project; foresight is usually about the task at hand.
        where = inputs.scope(scope, Scope.PROJECT if kind is ConstraintType.DERIVED else Scope.SESSION)
        key = self._key(session_id)
        sid = key.session
        with self.store.write() as tx:
            present = [s for s in tx.slots_by_id(key, ids) if s.temporal_state is TemporalState.PRESENT]
            if not present:
                raise NotFound(
                    f"None of the ids {ids} is a PRESENT slot of session '{sid}', so nothing was stored. "
                    "Take PRESENT ids from the [id:N] tags of vlk_fetch_context or from vlk_get_history."
                )
            primary, keys = _lesson_fingerprint(present)
            constraint = tx.insert_slot(
                NewSlot(
                    key=key,
                    temporal_state=TemporalState.FUTURE,
                    origin=Origin.LESSON,
                    scope=where,
                    learning_summary=lesson,
                    constraint_type=kind,
                    evidence=evidence,
                    fingerprint=primary,
                    fingerprint_keys=keys,
                    fingerprint_version=FINGERPRINT_VERSION,
                )
            )
            moved = tx.retire(
                key.tenant, [s.id for s in present], TemporalState.PRESENT, Retired.TIME_TRAVEL, constraint.id
            )
            tx.link(constraint.id, moved, "archived")
        saved = tokens_of(s for s in present if s.id in moved)
        log.info("Time travel: moved %d slots from PRESENT to PAST in session %r, saved ~%d tokens",
                 len(moved), sid, saved)
        return TimeTravelResult(
            session_id=sid,
            constraint_id=constraint.id,
            constraint_type=kind.value,
            scope=where.value,
            learning=lesson,
            evidence=evidence,
            moved_ids=moved,
            ignored_ids=[i for i in ids if i not in moved],
            tokens_saved=saved,
        )

    def revoke_future(self, timeline_id: Any, session_id: Any = inputs.DEFAULT_SESSION) -> RevokeResult:
        """Move one FUTURE constraint to PAST."""
        cid = inputs.timeline_id("timeline_id", timeline_id)
        key = self._key(session_id)
        sid = key.session
        with self.store.write() as tx:
            # Whatever its scope, a constraint can be revoked from any session that sees it.
            visible = {c.id for c in tx.visible_constraints(key)}
            moved = tx.retire(key.tenant, [cid], TemporalState.FUTURE, Retired.REVOKED, None) if cid in visible else []
        if not moved:
            raise NotFound(
                f"No FUTURE constraint found with id #{cid} in session '{sid}'. "
                "Active constraint ids are the [id:N] tags of vlk_fetch_context."
            )
        log.info("[REVOKE] Session %r: revoked FUTURE constraint #%d", sid, cid)
        return RevokeResult(session_id=sid, constraint_id=cid)


def _lesson_fingerprint(slots: Sequence[Slot]) -> tuple[str | None, tuple[str, ...]]:
    """A lesson is keyed by what it was learned from: the newest slot's key, and every slot's keys."""
    keys: dict[str, None] = {}
    for slot in reversed(slots):
        for key in slot.error_keys:
            keys.setdefault(key, None)
    return slots[-1].fingerprint, tuple(keys)[:MAX_LESSON_KEYS]
