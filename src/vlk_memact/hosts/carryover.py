"""What a session starts with, and what a new prompt learns; host-neutral.

SessionStart injects the project's and the global lessons (and, after a resume or a compaction, the
session's own constraints and live errors) within VLK_HOOK_CONTEXT_TOKENS. A prompt injects only what
changed since the last injection in the session (a new constraint, a new conflict): never the same
text twice (the duplicated-injection complaint of other memory hooks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..inputs import MAX_CONTEXT_TOKENS
from ..model import ConflictView, Origin, Scope, SessionKey, Slot, TemporalState
from . import inject

if TYPE_CHECKING:
    from ..engine import Memory

# Sources after which the model's context still holds (a summary of) the session so far.
CONTINUED = frozenset({"resume", "compact", "fork"})
HEADINGS = {
    "startup": "what earlier sessions of this project learned (facts recorded by vlk-memact):",
    "clear": "what earlier sessions of this project learned (facts recorded by vlk-memact):",
    "resume": "this session's memory so far (lessons and errors still live):",
    "fork": "this session's memory so far (lessons and errors still live):",
    "compact": "this session's memory, carried over the compaction (lessons and errors still live):",
}
UPDATE_HEADING = "new in this session's memory since the last note:"


def _items(constraints: list[Slot], conflicts: list[ConflictView]) -> list[str]:
    return [f"c:{c.id}" for c in constraints] + [f"x:{c.first_id}-{c.second_id}" for c in conflicts]


def _ranked(memory: Memory, session_id: str) -> tuple[SessionKey, list[Slot], list[ConflictView], list[Slot]]:
    """Run the pipeline (loops, consolidation, conflicts) and read what it left: constraints in the engine's
    rank order, conflicts, live errors."""
    context = memory.fetch_context(session_id=session_id, max_tokens=MAX_CONTEXT_TOKENS)
    key = memory._key(session_id)  # noqa: SLF001 - the same session rule as every engine method
    with memory.store.read() as tx:
        constraints = tx.visible_constraints(key)
        present = tx.slots(key, TemporalState.PRESENT)
    order = {cid: i for i, cid in enumerate([*context.constraint_ids, *context.omitted_constraint_ids])}
    constraints.sort(key=lambda c: order.get(c.id, len(order)))
    return key, constraints, list(context.conflicts), present


def session_start(memory: Memory, session_id: str, source: str) -> str | None:
    """The context a session starts (or restarts) with; None when there is nothing to carry."""
    key, constraints, conflicts, present = _ranked(memory, session_id)
    if source not in CONTINUED:
        # A fresh start: the project's and global lessons, not a previous run's session-only notes.
        constraints = [c for c in constraints if c.scope in (Scope.PROJECT, Scope.GLOBAL)]
        present = []
        shown_ids = {c.id for c in constraints}
        conflicts = [c for c in conflicts if c.first_id in shown_ids and c.second_id in shown_ids]
    text, shown, _ = inject.context_text(
        HEADINGS.get(source, HEADINGS["startup"]), constraints, conflicts, present, key.session,
        memory.settings.hook_context_tokens,
    )
    with memory.store.write() as tx:
        # After a start, a compaction or a resume, the model holds exactly what was injected now.
        tx.set_injected(key, _items(shown, conflicts if text else []))
    return text


def prompt(memory: Memory, session_id: str) -> str | None:
    """What changed in the session's memory since the last injection; None when nothing did."""
    key, constraints, conflicts, _ = _ranked(memory, session_id)
    with memory.store.read() as tx:
        known = set(tx.injected(key))
        # A consolidation of constraints the model was already told about says nothing new.
        merged_known = {c.id for c in constraints if c.origin is Origin.CONSOLIDATED and f"c:{c.id}" not in known
                        and all(f"c:{i}" in known for i in tx.sources(c.id, "merged") or [-1])}
    fresh = [c for c in constraints if f"c:{c.id}" not in known and c.id not in merged_known]
    fresh_conflicts = [c for c in conflicts if f"x:{c.first_id}-{c.second_id}" not in known]
    if not fresh and not fresh_conflicts:
        if merged_known:
            with memory.store.write() as tx:
                tx.set_injected(key, [*tx.injected(key), *(f"c:{i}" for i in sorted(merged_known))])
        return None
    text, shown, _ = inject.context_text(UPDATE_HEADING, fresh, fresh_conflicts, [], key.session,
                                         memory.settings.hook_context_tokens)
    with memory.store.write() as tx:
        now = tx.injected(key)
        added = _items(shown, fresh_conflicts if text else []) + [f"c:{i}" for i in sorted(merged_known)]
        tx.set_injected(key, [*now, *(i for i in added if i not in now)])
    return text
