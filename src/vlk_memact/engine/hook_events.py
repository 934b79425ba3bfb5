"""The engine's public API for hook events and the edges that read the store (a mixin of Memory and StoreOnly).

Hooks (hosts/), the viewer, ops, the server and learn/ hold the host-facing or page-facing logic; the engine owns
the storage. They reach it only through what is here: the session rule (`session_key`), typed read and write
transactions of this memory's store (`reading`, `writing`: the read model every edge composes, joined to a hook
event's one transaction inside `one_transaction`), and the few hook steps whose reads and writes must not be split
(`tell_fixes`: the fix lookup, the demotion of a fix that did not hold and the bookkeeping of what was told, in ONE
write transaction, so two hooks of one session cannot both tell or both demote). tests/test_engine_boundary.py
fails on any `._key(` or `.store` outside engine/ and store/.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .fix_memory import FIXES_LOOKED_AT, match_keys, working

if TYPE_CHECKING:
    from ..core.model import Fix, HostCall, NewHostCall, SessionKey, Slot
    from ..store import Store, Transaction

CALLS_LOOKED_AT = 200  # a session's recent calls read to tell an applied fix
FAILURES_LOOKED_AT = 50  # a call's latest outcomes the guard reads
EVENTS_LOOKED_AT = 200  # the session's calls since its latest failure the guard reads


@dataclass(frozen=True)
class GuardFacts:
    """What the guard decides on (hosts/shared/capture.before_call, hosts/shared/guard.decide)."""

    newest: Slot  # the call's newest failure
    same: int  # its failures since it last worked, with that error
    anchor: Slot  # the active constraint standing for the looped ones
    since: list[HostCall]  # the session's calls after the newest failure
    warned: bool  # this call was already warned about under this anchor


class HookEvents:
    """Public engine access for hook events and read-model edges; see the module docstring."""

    store: Store

    def _key(self, session_id: Any) -> SessionKey:  # pragma: no cover - provided by the class it is mixed into
        raise NotImplementedError

    def session_key(self, session_id: Any) -> SessionKey:
        """The (tenant, project, session) key every engine method files a session's rows under."""
        return self._key(session_id)

    @property
    def database_url(self) -> str:
        """Where this memory is stored (for logs and the viewer's header)."""
        return str(self.store.url)

    def reading(self) -> AbstractContextManager[Transaction]:
        """A read transaction of this memory's store: the typed read model (store/contract) for an edge's page,
        report or hook rule. Reads only; nothing it returns is cached by the engine."""
        return self.store.read()

    def writing(self) -> AbstractContextManager[Transaction]:
        """A write transaction of this memory's store; inside `one_transaction` it joins the event's transaction."""
        return self.store.write()

    @contextmanager
    def batched(self) -> Iterator[Any]:
        """The store's batch (learn/: many sessions, one commit each, `batch.commit()` between them)."""
        with self.store.batch() as batch:
            yield batch

    @property
    def write_attempt(self) -> Callable[[], AbstractContextManager[None]] | None:
        """The store's no-wait write attempt (store/sqlite.py `attempt`: the first write that would wait raises
        WouldWait), None for a store without one (server/tools.run_in_place)."""
        return getattr(self.store, "attempt", None)

    def told(self, key: SessionKey) -> list[str]:
        """What was already said to this session (`c:<id>`, `f:<id>`, `w:<id>:<call>`)."""
        with self.store.read() as tx:
            return tx.injected(key)

    def remember_told(self, key: SessionKey, items: Collection[str]) -> None:
        """Add items to what was said to this session, so that a later hook does not say them again."""
        if not items:
            return
        with self.store.write() as tx:
            _remember(tx, key, items)

    def set_told(self, key: SessionKey, items: Sequence[str], host: str | None = None) -> None:
        """Replace what was said to this session (a start, a compaction, a resume: the model holds exactly this);
        host (when given) names the host whose hooks run the session."""
        with self.store.write() as tx:
            tx.set_injected(key, items, host)

    def tell_fixes(self, key: SessionKey, failure: Slot, most: int) -> list[Fix]:
        """The working fixes to tell after this failure, at most `most`, recorded as told; fixes told earlier in the
        session that were applied and did not hold are demoted. One write transaction: the lookup, the demotion and
        the bookkeeping cannot interleave with another hook of the session."""
        with self.store.write() as tx:
            injected = functools.cache(lambda: tx.injected(key))  # what the session was told: read once, if needed
            found, demote = fixes_for_failure(tx, key, failure.error_keys, injected)
            for fix_id in demote:
                tx.demote_fix(fix_id)
            shown = found[:most]
            if shown:
                _remember(tx, key, [f"f:{f.id}" for f in shown], injected())
            return shown

    def guard_facts(self, key: SessionKey, call_key: str) -> GuardFacts | None:
        """The guard's lookups for a call, in one read transaction: None unless the call kept failing since it last
        worked, with one error looped under an active constraint."""
        with self.store.read() as tx:
            history = tx.host_calls(key, call_key=call_key, newest_first=True, limit=FAILURES_LOOKED_AT)
            run = []  # this call's failures since it last worked, newest first
            for row in history:
                if row.outcome == "success":
                    break
                if row.outcome == "failure":
                    run.append(row)
            if not run:
                return None
            slots = {s.id: s for s in tx.slots_by_id(key, [f.slot_id for f in run if f.slot_id is not None])}
            newest = slots.get(run[0].slot_id) if run[0].slot_id is not None else None
            if newest is None:
                return None
            same = [slots[f.slot_id] for f in run if f.slot_id in slots and same_error(slots[f.slot_id], newest)]
            from ..core.model import Retired

            looped = [s for s in same if s.retired_reason is Retired.LOOP]
            anchor = _active_anchor(tx, key, looped) if looped else None
            if anchor is None:
                return None
            since = tx.host_calls(key, after_id=run[0].id, limit=EVENTS_LOOKED_AT)
            warned = f"w:{anchor.id}:{call_key}" in tx.injected(key)
        return GuardFacts(newest, len(same), anchor, since, warned)

    def known_fix(self, key: SessionKey, error_keys: Sequence[str]) -> str | None:
        """The line of the latest working fix of this error (this project's sessions, this one included)."""
        from .fix_memory import fix_line, fix_of

        with self.store.read() as tx:
            found = fix_of(tx, key, error_keys)
        return fix_line(found) if found is not None else None

    def worth_resolving(self, key: SessionKey, call_key: str, target: str | None, changes: bool) -> bool:
        """Would a success of this call change anything the guard or resolution looks at? Not when nothing failed
        in this session, nor (a read) when neither this call nor a call on its file failed: then nothing is
        written (no fsync on every tool call)."""
        with self.store.read() as tx:
            if changes:
                return bool(tx.host_calls(key, outcome="failure", limit=1))
            return bool(tx.host_calls(key, call_key=call_key, outcome="failure", limit=1) or (
                target and tx.host_calls(key, target=target, outcome="failure", limit=1)))

    def resolve_success(self, key: SessionKey, success: NewHostCall,
                        resolver: Callable[[Transaction, SessionKey, NewHostCall, int], list[int]]) -> None:
        """In one write transaction: store the success, let the host's resolver (hosts/shared/fixes.resolve: which
        failures it resolves, their fix planned and kept) name the failures it resolves, and retire those still
        live from the context. A success delivered twice is stored and resolved once."""
        from ..core.model import Retired, TemporalState

        with self.store.write() as tx:
            success_id = tx.add_host_call(key, success, None)
            if success_id is None:
                return
            ids = resolver(tx, key, success, success_id)
            live = [s.id for s in tx.slots_by_id(key, ids) if s.temporal_state is TemporalState.PRESENT] if ids else []
            if live:
                tx.retire(key.tenant, live, TemporalState.PRESENT, Retired.RESOLVED, None)

    def merged_paths(self) -> tuple[str, ...]:
        """The checkout path keys merged into this memory's project (engine/projects.py)."""
        from .projects import merged_paths

        return tuple(merged_paths(self.store, getattr(self, "project")))


def same_error(slot: Slot, newest: Slot) -> bool:
    """One error fingerprint: the same stored fingerprint, or (no fingerprint) the same text."""
    if slot.fingerprint and newest.fingerprint:
        return slot.fingerprint == newest.fingerprint
    return (slot.raw_log or "").strip() == (newest.raw_log or "").strip()


def _active_anchor(tx: Transaction, key: SessionKey, looped: list[Slot]) -> Slot | None:
    """The active constraint standing for these looped failures: their anchor, or what replaced it (a newer
    anchor of the same error, a consolidation); None once revoked."""
    from ..core.model import Origin

    keys = list(dict.fromkeys(k for s in looped for k in s.fingerprint_keys))
    by = {s.retired_by for s in looped}
    candidates = [c for c in tx.constraints_matching(key, keys) if c.origin in (Origin.ANCHOR, Origin.CONSOLIDATED)]
    if not candidates:
        return None
    return next((c for c in candidates if c.id in by), candidates[-1])


def _remember(tx: Transaction, key: SessionKey, items: Collection[str], known: Sequence[str] | None = None) -> None:
    """Add items to what the session was told (known: what it was told, when already read in tx)."""
    known = tx.injected(key) if known is None else known
    new = [i for i in items if i not in known]
    if new:
        tx.set_injected(key, [*known, *new])


def applied(fix: Fix, successes: Sequence[HostCall]) -> bool:
    """Did these successes run one of the fix's steps again (the same call; by its summary for a step stored
    without its key)? Two heredocs writing the same file share a summary, not a key."""
    keys = {c.call_key for c in successes if c.outcome == "success"}
    summaries = {c.summary for c in successes if c.outcome == "success"}
    return any(s.call_key in keys if s.call_key else s.summary in summaries for s in fix.steps)


def fixes_for_failure(tx: Transaction, key: SessionKey, error_keys: Sequence[str],
                      injected: Callable[[], Sequence[str]]) -> tuple[list[Fix], list[int]]:
    """The working fixes to tell after a failure of these error keys, and the ids of fixes told earlier in the
    session that were applied and did not hold (to demote). Reads only; injected() (what the session was told) is
    called only when a fix matches."""
    if not error_keys:
        return [], []
    found = tx.fixes_matching(key, match_keys(error_keys), FIXES_LOOKED_AT)
    if not found:
        return [], []
    told = {item for item in injected() if item.startswith("f:")}
    demote: list[int] = []
    earlier = [f for f in found if f"f:{f.id}" in told and f.demoted == 0]
    if earlier:
        successes = tx.host_calls(key, outcome="success", newest_first=True, limit=CALLS_LOOKED_AT)
        demote = [f.id for f in earlier if applied(f, successes)]
    fresh = [f for f in working([f for f in found if f.id not in demote]) if f"f:{f.id}" not in told]
    return fresh, demote
