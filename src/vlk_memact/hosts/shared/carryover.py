"""What a session starts with, and what a new prompt learns; host-neutral.

SessionStart injects the project's and the global lessons (and, after a resume or a compaction, the
session's own constraints and live errors) within VLK_HOOK_CONTEXT_TOKENS. A prompt injects only what
changed since the last injection in the session (a new constraint, a new conflict): never the same
text twice (the duplicated-injection complaint of other memory hooks).

A fresh start carries only what is likely to come back (issue 34: of the facts carried before, 6% concerned an
error met again in that session): the lessons the model or the user registered (vlk_time_travel, learn), and a
loop of an earlier session only while it is unresolved and either already failed in two sessions or is a broken
environment (a missing tool, module, variable or service: hosts/shared/failures.py; a typo such as `find.: command not
found` names no tool) that nothing has fixed since. A
loop that was fixed (a later run passed, or fix memory holds its fix) is dropped: if it comes back, the failure
hook says so then, in one line (hosts/shared/fixes.py: "failed the same way in session X on day Y; fixed by ...").

A carried loop is what happened, never the in-session order of its anchor ("CURRENT STRATEGY EXHAUSTED ...
change approach": right in the session it stopped, false in next week's, issue 20): which call failed, how
often, with what error, in which sessions. Errors that name nothing (a bare "Error", "File does not exist.", a
syntax error of different code) and host refusals are never carried. Lessons rank first, then loops by sessions,
occurrences and recency.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...core.inputs import MAX_CONTEXT_TOKENS
from ...core.model import ConflictView, Origin, Retired, Scope, SessionKey, Slot, TemporalState
from ...core.quoting import quoted_line
from ...core.render import CHARS_PER_TOKEN, estimate_tokens
from . import capture, failures, guard, inject, said

if TYPE_CHECKING:
    from ...engine import Memory

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
FACTS_HEADING = "what happened in earlier sessions of this project (facts recorded by vlk-memact):"
EXPAND_DEPTH = 4  # consolidations of consolidations, followed this deep
SESSIONS_CHECKED = 6  # resolution looked up in at most this many (session, call) pairs per loop
FACT_ERROR_CHARS = 160  # the error of a carried loop: enough to recognise it, short enough for many facts
RECURRENCES_READ = 50  # earlier failures of a loop's error read to tell the sessions it failed in
_SYNTAX = re.compile(r"(?i)syntax ?error|invalid syntax|unexpected (?:token|indent|EOF)|parse error")
# Fix memory (issue 21) answers "what fixed this error?" for an anchor; None until it is wired.
FixLookup = Callable[[Slot], "str | None"]


@dataclass(frozen=True)
class Fact:
    """One line a new session hears, and how much it is likely to matter."""

    rank: tuple[int, int, int, int]
    text: str
    constraint_id: int


def _items(constraints: list[Slot], conflicts: list[ConflictView]) -> list[str]:
    return [f"c:{c.id}" for c in constraints] + [f"x:{c.first_id}-{c.second_id}" for c in conflicts]


def _ranked(memory: Memory, session_id: str) -> tuple[SessionKey, list[Slot], list[ConflictView], list[Slot]]:
    """Run the pipeline (loops, consolidation, conflicts) and read what it left: constraints in the engine's
    rank order, conflicts, live errors."""
    context = memory.fetch_context(session_id=session_id, max_tokens=MAX_CONTEXT_TOKENS)
    key = memory.session_key(session_id)
    with memory.reading() as tx:
        constraints = tx.visible_constraints(key)
        present = tx.slots(key, TemporalState.PRESENT)
    order = {cid: i for i, cid in enumerate([*context.constraint_ids, *context.omitted_constraint_ids])}
    constraints.sort(key=lambda c: order.get(c.id, len(order)))
    return key, constraints, list(context.conflicts), present


def session_start(memory: Memory, session_id: str, source: str, fixes: FixLookup | None = None,
                  host: str | None = None) -> str | None:
    """The context a session starts (or restarts) with; None when there is nothing to carry.

    fixes: what fixed an anchor's error, from fix memory (issue 21); its line is added to the fact.
    host: the host whose hook this is, kept with the session (`vlk-memact sessions`)."""
    key, constraints, conflicts, present = _ranked(memory, session_id)
    if source not in CONTINUED:
        # A fresh start: what earlier sessions of the project (and global lessons) established, as facts.
        constraints = [c for c in constraints if c.scope in (Scope.PROJECT, Scope.GLOBAL)]
        text = _facts_text(memory, key, constraints, fixes)
        # Everything that existed at the start counts as told: what was left out stays in vlk_fetch_context
        # and is not pushed by the next prompt.
        memory.set_told(key, _items(constraints, conflicts), host)
        return said.carried(memory, key, text, host)  # kept as interventions (issue 33)
    own = [c for c in constraints if c.session_id == key.session or not _quotes_a_refusal(c)]
    text, shown, _ = inject.context_text(
        HEADINGS.get(source, HEADINGS["startup"]), own, conflicts, present, key.session,
        memory.settings.hook_context_tokens,
    )
    # After a compaction or a resume, the model holds exactly what was injected now.
    memory.set_told(key, _items(shown, conflicts if text else []), host)
    return said.carried(memory, key, text, host)


def _quotes_a_refusal(constraint: Slot) -> bool:
    return failures.non_failure(constraint.evidence) is not None


def _is_order(text: str | None) -> bool:
    """The in-session anchor order (loops.ANCHOR_TEMPLATE), which is never carried."""
    return bool(text) and ("CURRENT STRATEGY EXHAUSTED" in text or "SYSTEM ANCHOR]" in text)


def _facts_text(memory: Memory, key: SessionKey, constraints: list[Slot], fixes: FixLookup | None) -> str | None:
    facts: dict[str, Fact] = {}
    seen: set[int] = set()
    with memory.reading() as tx:
        for constraint in constraints:
            for fact in _facts_of(tx, key, constraint, constraint.id, fixes, seen, EXPAND_DEPTH):
                facts.setdefault(fact.text, fact)
    ranked = sorted(facts.values(), key=lambda f: f.rank, reverse=True)
    budget = min(memory.settings.hook_context_tokens, int(inject.MAX_CHARS / CHARS_PER_TOKEN))
    lines = [f"{inject.PREFIX} {FACTS_HEADING}"]
    used = estimate_tokens(lines[0]) + 20
    left_out = 0
    for fact in ranked:
        line = "- " + fact.text
        room = int((budget - used - 1) * CHARS_PER_TOKEN)
        if estimate_tokens(line) > budget - used - 1 and room >= inject.MIN_CUT_CHARS:
            line = line[: room - 1] + "…"  # a long lesson (a consolidation) is cut rather than dropped
        if used + estimate_tokens(line) + 1 <= budget:
            lines.append(line)
            used += estimate_tokens(line) + 1
        else:
            left_out += 1
    if len(lines) == 1:
        return None
    if left_out:
        lines.append(f"({left_out} more left out to stay within {memory.settings.hook_context_tokens} tokens; "
                     "vlk_fetch_context shows them.)")
    return inject.cap("\n".join(lines))


def _facts_of(tx, key: SessionKey, slot: Slot, shown_as: int, fixes: FixLookup | None, seen: set[int],
              depth: int) -> list[Fact]:
    """The facts one constraint stands for: a loop's, a lesson's, or those of what a consolidation merged."""
    if slot.id in seen:
        return []
    seen.add(slot.id)
    if slot.origin is Origin.ANCHOR:
        fact = _loop_fact(tx, key, slot, shown_as, fixes)
        return [fact] if fact else []
    if slot.origin is Origin.CONSOLIDATED and depth > 0:
        merged = tx.tenant_slots(key.tenant, tx.sources(slot.id, "merged"))
        if any(m.origin in (Origin.ANCHOR, Origin.CONSOLIDATED) for m in merged) or any(
                _is_order(lesson) for lesson in slot.lessons):
            return [f for m in merged for f in _facts_of(tx, key, m, shown_as, fixes, seen, depth - 1)]
    if _is_order(slot.learning_summary) or _quotes_a_refusal(slot):
        return []
    if slot.origin is Origin.CONSOLIDATED and any(_is_order(lesson) for lesson in slot.lessons):
        return []
    # A lesson the agent wrote down (vlk_time_travel): it is what it learned, said as it said it. Lessons
    # rank above loops: someone chose to record them.
    return [Fact((3, 0, 0, slot.id), inject.describe_constraint(slot, key.session), shown_as)]


def _loop_fact(tx, key: SessionKey, anchor: Slot, shown_as: int, fixes: FixLookup | None) -> Fact | None:
    """A loop of an earlier session as what happened, when it is likely to come back (see the module docstring):
    unresolved, and failed in two sessions or a broken environment."""
    archived = [s for s in tx.tenant_slots(key.tenant, tx.sources(anchor.id, "archived"))
                if failures.is_failure(s.raw_log)]
    if not archived:
        return None
    newest = max(archived, key=lambda s: s.id)
    if failures.is_generic(newest.raw_log):
        return None
    calls = capture._calls_of(archived, guard.IGNORED_FIELDS)  # noqa: SLF001 - one reader of tool payloads
    keys = list(dict.fromkeys(k for k, _ in calls if k))
    from ...core.loops import error_excerpt  # here: claude_code imports this module on the guard's path too

    error = error_excerpt(newest.raw_log or "", FACT_ERROR_CHARS)
    if _SYNTAX.search(error) and len(keys) != 1:
        return None  # syntax errors of different code: nothing in common but the word
    met = [newest, *(tx.project_failures(key, newest.fingerprint, RECURRENCES_READ) if newest.fingerprint else [])]
    sessions = list(dict.fromkeys(s.session_id for s in sorted([*met, *archived], key=lambda s: s.id, reverse=True)))
    environment = failures.broken_environment(newest.raw_log)
    if (len(sessions) < 2 and environment is None) or (fixes is not None and fixes(anchor)):
        return None  # met in one session only, or fix memory knows its fix: the failure hook tells it then
    latest = [s for s in met if s.session_id == sessions[0]]
    if _resolved(tx, key, latest, capture._calls_of(latest, guard.IGNORED_FIELDS)) or (  # noqa: SLF001
            sessions[0] == anchor.session_id and _resolved(tx, key, archived, calls)):
        return None  # fixed in the latest session it failed in, and not met since
    names = list(dict.fromkeys(_short(d) for _, d in calls))
    what = names[0] if len(names) == 1 else f"{len(names)} different calls ({inject._names(names, 2)})"  # noqa: SLF001
    when = f"session '{quoted_line(sessions[0], 12)}' ({max(met, key=lambda s: s.id).created_at[:10]})"
    if len(sessions) > 1:
        when += f" and {len(sessions) - 1} earlier session{'s' if len(sessions) > 2 else ''}"
    missing = f" (a missing {environment})" if environment else ""
    quoted = quoted_line(error, FACT_ERROR_CHARS)
    text = f"[id:{anchor.id}] {what} failed {len(archived)} times{missing} with \"{quoted}\" in {when}; not resolved there."
    rank = (2, len(sessions), len(archived), anchor.id)
    return Fact(rank, text, shown_as)


def _short(call: str, limit: int = 90) -> str:
    """A call's name short enough for a list of facts (the full command is in vlk_get_history)."""
    return call if len(call) <= limit else call[: limit - 2].rstrip() + "…`"


def _resolved(tx, key: SessionKey, archived: list[Slot], calls: list[tuple[str | None, str]]) -> bool:
    """Did one of the failing calls later succeed in the session it failed in (or a success resolve them)?"""
    if any(s.retired_reason is Retired.RESOLVED for s in archived):
        return True
    pairs = list(dict.fromkeys((s.session_id, k) for s, (k, _) in zip(archived, calls, strict=True) if k))
    for session, call_key in pairs[:SESSIONS_CHECKED]:
        where = SessionKey(key.tenant, key.project, session)
        if tx.host_calls(where, call_key=call_key, outcome="success", limit=1):
            return True
    return False


def prompt(memory: Memory, session_id: str) -> str | None:
    """What changed in the session's memory since the last injection; None when nothing did."""
    key, constraints, conflicts, _ = _ranked(memory, session_id)
    with memory.reading() as tx:
        known = set(tx.injected(key))
        # A consolidation of constraints the model was already told about says nothing new.
        merged_known = {c.id for c in constraints if c.origin is Origin.CONSOLIDATED and f"c:{c.id}" not in known
                        and all(f"c:{i}" in known for i in tx.sources(c.id, "merged") or [-1])}
    fresh = [c for c in constraints if f"c:{c.id}" not in known and c.id not in merged_known]
    fresh_conflicts = [c for c in conflicts if f"x:{c.first_id}-{c.second_id}" not in known]
    if not fresh and not fresh_conflicts:
        if merged_known:
            memory.remember_told(key, [f"c:{i}" for i in sorted(merged_known)])
        return None
    text, shown, _ = inject.context_text(UPDATE_HEADING, fresh, fresh_conflicts, [], key.session,
                                         memory.settings.hook_context_tokens)
    memory.remember_told(key, _items(shown, fresh_conflicts if text else []) + [f"c:{i}" for i in sorted(merged_known)])
    return text
