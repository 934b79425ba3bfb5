"""What each page shows, read from one store snapshot per page; no HTML here.

Reads go through the store's read transactions (as export does); the only write, revoke, and the
context preview go through Memory, the same calls the MCP tools make.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..core import inputs
from ..core.browsing import Saving, SessionOverview
from ..core.conflicts import find_conflicts
from ..core.model import (
    Conflict,
    Fix,
    FixStep,
    HostCall,
    Origin,
    Retired,
    SessionKey,
    Slot,
    TemporalState,
)
from ..core.render import chars_tokens as tokens  # the one estimator, for characters summed in SQL
from ..engine import Memory
from ..engine.fix_memory import RETRY, match_keys, working
from ..store import Transaction

TIMELINE_PAGE = 300  # slots per timeline page, newest page first
SEARCH_LIMIT = 100
STEPS_SHOWN = 6  # changes listed under a resolved failure (the last ones before the success)
KEY_FIXES_READ = 200  # the newest fixes matching a page's lessons by their error (one query per page)
CHART_LIMIT = 500  # the chart shows the newest 500 loop anchors and lessons that archived slots
MAX_PROJECT_FILTER_CHARS = inputs.MAX_PROJECT_CHARS


@dataclass(frozen=True)
class Overview:
    projects: list[tuple[str, int]]  # (project, sessions), most recently written to first
    sessions: list[SessionOverview]
    total_sessions: int
    savings: list[Saving]


def overview(memory: Memory, project: str | None, limit: int) -> Overview:
    """The most recently active sessions of the tenant (of one project if given), and the chart's data."""
    with memory.reading() as tx:
        projects = tx.projects(memory.tenant)
        sessions = tx.sessions(memory.tenant, project, limit)
        savings = tx.savings(memory.tenant, project, None, CHART_LIMIT)
    total = sum(n for name, n in projects if project is None or name == project)
    return Overview(projects, sessions, total, savings)


@dataclass(frozen=True)
class Card:
    """A constraint with what it came from: a loop anchor, a lesson or a consolidation."""

    constraint: Slot
    archived: list[Slot] = field(default_factory=list)  # slots it was learned from (any session)
    merged: list[Slot] = field(default_factory=list)  # constraints it replaced
    tokens_saved: int = 0
    resolution: Resolution | None = None  # the failures it was learned from were resolved later (the newest)
    fix: FixView | None = None  # the newest fix of the failures it was learned from, else its error's latest


@dataclass(frozen=True)
class Resolution:
    """A captured failure that a host hook later saw succeed: the same tool call, when, and what changed
    in between (the edits and commands the hooks recorded, by their redacted summaries).

    From the hooks' host_calls (kept for a while per session). A live failure is retired as RESOLVED by
    that success; one already archived (by a loop, or into a lesson) keeps its reason, and its anchor or
    lesson shows that the failure it came from was resolved. The changes in between are what happened, not
    a judgement of which of them was the fix.
    """

    slot_id: int  # the failure
    succeeded_at: str  # to the second, as slots show their time
    tool_use_id: str | None
    passed: str | None  # the summary of the call that succeeded (None on rows older than the summaries)
    changes_between: int  # state-changing calls (edits, commands) between the failure and the success
    steps: tuple[HostCall, ...] = ()  # the last STEPS_SHOWN of them, oldest first


def _resolutions(tx: Transaction, slots: Iterable[Slot]) -> dict[int, Resolution]:
    """Slot id -> its resolution, for the slots a hook captured and then saw succeed (one query per session)."""
    by_session: dict[SessionKey, list[int]] = defaultdict(list)
    for slot in slots:
        by_session[SessionKey(slot.tenant, slot.project, slot.session_id)].append(slot.id)
    found = {}
    for key, ids in by_session.items():
        for slot_id, call, between, steps in tx.resolving_calls(key, sorted(set(ids)), STEPS_SHOWN):
            found[slot_id] = Resolution(slot_id, call.created_at[:19], call.tool_use_id, call.summary, between,
                                        tuple(steps))
    return found


@dataclass(frozen=True)
class FixView:
    """A recorded fix (fix memory) as the viewer shows it: what ran between the failure and the success, what
    then passed, and the failures it resolved (its evidence).

    Where the hooks kept a fix, it is what the carry-over and the recall tell later sessions, so the viewer
    shows that record rather than its own reading of the host calls (the Resolution, kept as the fallback).
    """

    fix: Fix
    evidence: tuple[Slot, ...]  # the failures it resolved that this page has loaded, oldest first
    other_failures: int  # the failures it resolved that this page has not loaded

    @property
    def retry(self) -> bool:
        return self.fix.kind == RETRY

    @property
    def changed(self) -> bool:
        """The call that passed is the last step itself (the failing call was changed, then passed)."""
        return bool(self.fix.steps) and self.fix.steps[-1].summary == self.fix.passed

    @property
    def steps(self) -> tuple[FixStep, ...]:
        """The steps before the call that passed (that call is shown once, as what passed)."""
        return self.fix.steps[:-1] if self.changed else self.fix.steps

    @property
    def passed_step(self) -> FixStep | None:
        return self.fix.steps[-1] if self.changed else None


def _fixes(tx: Transaction, slots: Iterable[Slot]) -> dict[int, Fix]:
    """Slot id -> the newest recorded fix that resolved it (one query per session: a fix is kept in the session
    of the failures it resolved)."""
    by_session: dict[SessionKey, dict[str, int]] = defaultdict(dict)
    for slot in slots:
        if slot.uid:
            by_session[SessionKey(slot.tenant, slot.project, slot.session_id)][slot.uid] = slot.id
    found: dict[int, Fix] = {}
    for key, uids in by_session.items():
        for fix in tx.fixes_resolving(key, sorted(uids)):  # newest first: the first one seen wins
            for uid in fix.slot_uids:
                if uid in uids:
                    found.setdefault(uids[uid], fix)
    return found


def _key_fixes(tx: Transaction, key: SessionKey, constraints: Iterable[Slot]) -> dict[int, Fix]:
    """Constraint id -> the latest working fix of its error anywhere in the project (or a global one), as the
    carry-over tells it (fix_memory.fix_of), for all the page's constraints in one query."""
    wanted = {c.id: set(match_keys(c.fingerprint_keys)) for c in constraints if c.fingerprint_keys}
    every = sorted(set().union(*wanted.values())) if wanted else []
    if not every:
        return {}
    found = tx.fixes_matching(key, every, KEY_FIXES_READ, include_own=True)
    fixes = {}
    for constraint_id, keys in wanted.items():
        mine = working([f for f in found if keys.intersection(f.fingerprint_keys)])
        if mine:
            fixes[constraint_id] = mine[0]
    return fixes


def _fix_view(fix: Fix, known: dict[str, Slot]) -> FixView:
    evidence = sorted((known[u] for u in set(fix.slot_uids) if u in known), key=lambda s: s.id)
    return FixView(fix, tuple(evidence), len(set(fix.slot_uids)) - len(evidence))


def _newest_fix(fixes: Iterable[Fix], known: dict[str, Slot]) -> FixView | None:
    fix = max(fixes, key=lambda f: f.id, default=None)
    return _fix_view(fix, known) if fix is not None else None


def _newest(resolutions: Iterable[Resolution]) -> Resolution | None:
    return max(resolutions, key=lambda r: (r.succeeded_at, r.slot_id), default=None)


@dataclass(frozen=True)
class Timeline:
    key: SessionKey
    slots: list[Slot]  # oldest first
    cards: dict[int, Card]  # constraint id -> its card
    older: int | None  # sequence number to pass as `before` for the previous page, None if none
    present: int
    past: int
    future: int
    savings: list[Saving]
    successors: dict[int, Slot]  # retired_by ids outside this page, by id
    resolutions: dict[int, Resolution] = field(default_factory=dict)  # RESOLVED slot id -> what resolved it
    fixes: dict[int, FixView] = field(default_factory=dict)  # RESOLVED slot id -> its recorded fix


def timeline(memory: Memory, key: SessionKey, before: int | None) -> Timeline:
    """One page of a session in sequence order, with every constraint's provenance resolved."""
    with memory.reading() as tx:
        newest_first = tx.page(key, before, TIMELINE_PAGE + 1)
        page = newest_first[:TIMELINE_PAGE]
        constraints = [s for s in page if s.origin is not Origin.RECORD]
        links = tx.links([c.id for c in constraints])
        wanted = {source for _, source, _ in links} | {s.retired_by for s in page if s.retired_by}
        linked = {s.id: s for s in tx.tenant_slots(key.tenant, sorted(wanted))}
        counts = tx.counts(key)
        savings = tx.savings(key.tenant, key.project, key.session, CHART_LIMIT)
        sources = [linked[source] for _, source, relation in links if relation == "archived" and source in linked]
        resolved = [s for s in page if s.retired_reason == Retired.RESOLVED]
        resolutions = _resolutions(tx, resolved + sources)
        fixed = _fixes(tx, resolved + sources)
        by_error = _key_fixes(tx, key, constraints)
    known = {s.uid: s for s in [*page, *linked.values()] if s.uid}
    archived: dict[int, list[Slot]] = defaultdict(list)
    merged: dict[int, list[Slot]] = defaultdict(list)
    for constraint_id, source, relation in links:
        if source in linked:
            (archived if relation == "archived" else merged)[constraint_id].append(linked[source])
    cards = {}
    for c in constraints:
        own = [s for s in archived[c.id] if s.retired_by == c.id]
        cards[c.id] = Card(c, archived[c.id], merged[c.id], tokens(sum(len(s.raw_log or "") for s in own)),
                           _newest(resolutions[s.id] for s in archived[c.id] if s.id in resolutions),
                           _newest_fix((fixed[s.id] for s in archived[c.id] if s.id in fixed), known)
                           or _newest_fix([by_error[c.id]] if c.id in by_error else [], known))
    older = page[-1].sequence_order if len(newest_first) > TIMELINE_PAGE else None
    return Timeline(
        key=key,
        slots=list(reversed(page)),
        cards=cards,
        older=older,
        present=counts.get(TemporalState.PRESENT, (0, 0))[0],
        past=counts.get(TemporalState.PAST, (0, 0))[0],
        future=counts.get(TemporalState.FUTURE, (0, 0))[0],
        savings=savings,
        successors=linked,
        resolutions=resolutions,
        fixes={s.id: _fix_view(fixed[s.id], known) for s in resolved if s.id in fixed},
    )


@dataclass(frozen=True)
class Lessons:
    key: SessionKey
    constraints: list[Slot]  # most fired first, then newest
    conflicts: dict[int, list[Conflict]]  # constraint id -> the conflicts it is part of
    sources: dict[int, list[Slot]]  # constraint id -> slots it was learned from
    resolutions: dict[int, Resolution] = field(default_factory=dict)  # constraint id -> its source's, newest
    fixes: dict[int, FixView] = field(default_factory=dict)  # constraint id -> its sources' fix, else its error's


def lessons(memory: Memory, key: SessionKey) -> Lessons:
    """The active constraints the session sees (its own, its project's, global), conflicts flagged."""
    with memory.reading() as tx:
        constraints = tx.visible_constraints(key)
        links = tx.links([c.id for c in constraints])
        linked = {s.id: s for s in tx.tenant_slots(key.tenant, sorted({s for _, s, r in links if r == "archived"}))}
        resolved = _resolutions(tx, linked.values())
        fixed = _fixes(tx, linked.values())
        by_error = _key_fixes(tx, key, constraints)
    found = find_conflicts(constraints)  # the same detection the context's conflict block uses
    by_id: dict[int, list[Conflict]] = defaultdict(list)
    for conflict in found:
        by_id[conflict.first_id].append(conflict)
        by_id[conflict.second_id].append(conflict)
    sources: dict[int, list[Slot]] = defaultdict(list)
    for constraint_id, source, relation in links:
        if relation == "archived" and source in linked:
            sources[constraint_id].append(linked[source])
    ordered = sorted(constraints, key=lambda c: (max(c.last_fired_at or "", c.created_at), c.id), reverse=True)
    ordered.sort(key=lambda c: -c.fire_count)
    resolutions = {c: r for c, r in ((c, _newest(resolved[s.id] for s in slots if s.id in resolved))
                                     for c, slots in sources.items()) if r is not None}
    known = {s.uid: s for s in linked.values() if s.uid}
    fixes = {c: f for c, f in ((c, _newest_fix((fixed[s.id] for s in slots if s.id in fixed), known))
                               for c, slots in sources.items()) if f is not None}
    for constraint_id, fix in by_error.items():  # fixed elsewhere: the fix later sessions are told
        fixes.setdefault(constraint_id, _fix_view(fix, known))
    return Lessons(key, ordered, dict(by_id), dict(sources), resolutions, fixes)


def search(memory: Memory, query: str, project: str | None, session: str | None) -> list[Slot]:
    """Search one session (the tool's search) or every session of the tenant, newest first."""
    text = inputs.query(query)
    if session is not None and project is not None:
        key = SessionKey(memory.tenant, project, inputs.session_id(session))
        with memory.reading() as tx:
            return tx.search(key, text, SEARCH_LIMIT)
    with memory.reading() as tx:
        return tx.search_tenant(memory.tenant, project, text, SEARCH_LIMIT)
