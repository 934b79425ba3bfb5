"""Pure consolidation: merge many FUTURE constraints into one short lesson per type (spec §7).

Fixes defect 8: triggers only above the threshold, counts characters, keeps the newest lessons
(skipping one that does not fit instead of stopping), truncates a single over-long lesson instead
of dropping it, flattens an earlier consolidation instead of nesting it, keeps PROSPECTIVE apart.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from .model import ConstraintType, Origin, Scope, Slot
from .quoting import neutralize

SEPARATOR = " | "


@dataclass(frozen=True, slots=True)
class MergePlan:
    """Constraints to retire and the single constraint that replaces them."""

    constraint_type: ConstraintType
    scope: Scope
    merged_ids: tuple[int, ...]
    lessons: tuple[str, ...]  # kept lessons, oldest first
    total: int  # distinct lessons before the cap
    fingerprint_keys: tuple[str, ...]  # every key the merged constraints were learned from, for recall

    @property
    def text(self) -> str:
        body = SEPARATOR.join(self.lessons)
        if len(self.lessons) == self.total:
            noun = "lesson" if self.total == 1 else "lessons"
            return f"[CONSOLIDATED CONSTRAINTS from {self.total} prior {noun}]: {body}"
        return f"[CONSOLIDATED CONSTRAINTS from {self.total} lessons, truncated to {len(self.lessons)} newest]: {body}"


def lesson_key(text: str) -> str:
    """Case- and whitespace-insensitive identity of a lesson."""
    return " ".join(text.split()).casefold()


def plan_consolidation(
    constraints: Sequence[Slot],
    above: int,
    max_chars: int,
    keep_apart: Collection[int] = (),
) -> list[MergePlan]:
    """Plan merges when there are more than `above` active constraints, one per type and scope.

    Merging never widens or narrows who sees a lesson. Constraints in `keep_apart` (those in a
    conflict) stay separate so that the agent can revoke one.
    """
    if len(constraints) <= above:
        return []
    plans = []
    for kind in (ConstraintType.DERIVED, ConstraintType.PROSPECTIVE):
        for scope in (Scope.SESSION, Scope.PROJECT, Scope.GLOBAL):
            members = sorted(
                (c for c in constraints
                 if _type_of(c) is kind and (c.scope or Scope.SESSION) is scope and c.id not in keep_apart),
                key=lambda c: c.id,
            )
            if len(members) < 2:
                continue
            lessons = _distinct_lessons(members)
            if not lessons:
                continue
            kept = _newest_that_fit(lessons, max_chars)
            keys = tuple(dict.fromkeys(k for c in members for k in c.fingerprint_keys))
            plans.append(MergePlan(kind, scope, tuple(c.id for c in members), tuple(kept), len(lessons), keys))
    return plans


def _type_of(constraint: Slot) -> ConstraintType:
    return constraint.constraint_type or ConstraintType.DERIVED


def _distinct_lessons(members: Sequence[Slot]) -> list[str]:
    """Lessons oldest first, an earlier consolidation flattened, each duplicate at its newest place."""
    flat: list[str] = []
    for c in members:
        if c.origin is Origin.CONSOLIDATED and c.lessons:
            flat.extend(c.lessons)
        elif c.learning_summary and c.learning_summary.strip():
            text = " ".join(c.learning_summary.split())
            # A lesson is the agent's text: once merged it must not pass for a server marker.
            flat.append(text if c.origin is Origin.ANCHOR else neutralize(text))
    newest_index = {lesson_key(text): i for i, text in enumerate(flat)}
    return [text for i, text in enumerate(flat) if newest_index[lesson_key(text)] == i]


def _newest_that_fit(lessons: Sequence[str], max_chars: int) -> list[str]:
    kept: list[str] = []
    used = 0
    for text in reversed(lessons):
        cost = len(text) + (len(SEPARATOR) if kept else 0)
        if used + cost <= max_chars:
            kept.append(text)
            used += cost
        elif not kept:
            kept.append(text[: max_chars - 1] + "…")
            used = max_chars
    kept.reverse()
    return kept
