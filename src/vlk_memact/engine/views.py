"""How the engine shows stored slots in its results: recalled lessons, their order, token totals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.model import ConstraintType, RecallView, Scope, Slot
from ..core.render import chars_tokens, lesson_text


def rank(constraints: Sequence[Slot], live_keys: set[str]) -> list[Slot]:
    """Constraints about a live error first, then the most fired, then the most recent."""
    newest_first = sorted(
        constraints, key=lambda c: (max(c.last_fired_at or "", c.created_at or ""), c.id), reverse=True
    )
    return sorted(newest_first, key=lambda c: (not live_keys.intersection(c.fingerprint_keys), -c.fire_count))


def recall_view(constraint: Slot) -> RecallView:
    return RecallView(
        constraint_id=constraint.id,
        learned_in_session=constraint.session_id,
        scope=(constraint.scope or Scope.SESSION).value,
        constraint_type=(constraint.constraint_type or ConstraintType.DERIVED).value,
        lesson=lesson_text(constraint),
        evidence=constraint.evidence,
        fire_count=constraint.fire_count + 1,
    )


def tokens_of(slots: Any) -> int:
    """ceil(total characters / 3.8) over several logs, as the prototype sums before rounding."""
    return chars_tokens(sum(len(s.raw_log or "") for s in slots))
