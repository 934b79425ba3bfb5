"""Memory: the temporal engine. One method per tool, one store transaction per method.

Decisions come from the pure modules (loops, consolidate, conflicts, render); this module only
validates input, applies decisions inside a transaction and returns typed results.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from types import TracebackType
from typing import Any

from . import inputs
from .config import Settings, detect_project
from .conflicts import find_conflicts
from .context_cache import ContextCache
from .consolidate import plan_consolidation
from .errors import NotFound
from .fix_memory import error_fixes, lesson_fixes
from .fingerprint import FINGERPRINT_VERSION, fingerprint
from .loops import detect_loops
from .model import (
    Conflict,
    ConstraintType,
    ContextResult,
    HistoryResult,
    LoopReport,
    MaintenanceResult,
    MergeReport,
    NewHostCall,
    NewSlot,
    Origin,
    RecallView,
    RecordResult,
    Retired,
    RevokeResult,
    Scope,
    SearchResult,
    SessionKey,
    Slot,
    SlotView,
    SummaryResult,
    TemporalState,
    TimeTravelResult,
)
from .redact import redact
from .render import chars_tokens, context_result, estimate_tokens, lesson_text, render_context
from .store import Store, Transaction, open_store

log = logging.getLogger(__name__)

DEFAULT_TENANT = "local"
HISTORY_DEFAULT_LIMIT = 50
SEARCH_DEFAULT_LIMIT = 20
MAX_LESSON_KEYS = 16
MAX_ANCHOR_KEYS = 32
MIN_QUOTED_CHARS = 20  # a record quoting this much of a hook's capture is the same evidence


class Memory:
    """The library API: `with Memory() as m: m.record_state(raw_log=...)`."""

    def __init__(
        self,
        database_url: str | None = None,
        *,
        settings: Settings | None = None,
        store: Store | None = None,
        project: str | None = None,
        tenant: str = DEFAULT_TENANT,
        default_session: str | None = None,
    ) -> None:
        self.settings = settings if settings is not None else Settings.from_env()
        # The session a call without session_id lands in: the host's, when a host names one (stdio server
        # under Claude Code), so the model's own calls and the host's hooks share one session.
        self.default_session = default_session
        self.project = inputs.project(project or self.settings.project or detect_project())
        self.tenant = tenant
        self._tenants: dict[str, Memory] = {}
        self._contexts = ContextCache()
        if store is None:
            url = database_url if database_url is not None else self.settings.database_url
            store = open_store(url, busy_timeout_ms=self.settings.busy_timeout_ms, lock_wait_ms=self.settings.lock_wait_ms)
        self.store = store

    def for_tenant(self, tenant: str) -> Memory:
        """The same store seen as another tenant: nothing of one tenant is visible to another."""
        if tenant == self.tenant:
            return self
        view = self._tenants.get(tenant)
        if view is None:
            view = Memory(settings=self.settings, store=self.store, project=self.project, tenant=tenant,
                          default_session=self.default_session)
            self._tenants[tenant] = view
        return view

    def for_project(self, project: str) -> Memory:
        """The same store and tenant seen from another project (the viewer browses every project)."""
        if project == self.project:
            return self
        return Memory(settings=self.settings, store=self.store, project=project, tenant=self.tenant)

    def _key(self, session_id: Any) -> SessionKey:
        if self.default_session and (session_id is None or (isinstance(session_id, str) and not session_id.strip())):
            session_id = self.default_session
        return SessionKey(self.tenant, self.project, inputs.session_id(session_id))

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
        *,
        host_call: NewHostCall | None = None,
    ) -> RecordResult:
        """Record a log, error or observation as a PRESENT slot.

        host_call: the tool call a host hook captured this failure from; recording it again (same
        tool_use_id) stores nothing. Without it, a record of an error a hook captured moments ago is
        folded into that capture: the same evidence, not a second occurrence.
        """
        key = self._key(session_id)
        found: list[str] = []
        # Secrets are replaced before anything is stored, fingerprinted or truncated (a cut could split one).
        text = self._redact(inputs.required_text("raw_log", raw_log, None), found)
        text, truncated = inputs.truncate_log(text, self.settings.max_raw_log_chars)
        context = self._redact(inputs.optional_text("file_context", file_context, self.settings.max_field_chars), found)
        payload = self._redact(inputs.tool_payload(tool_payload, self.settings.max_field_chars), found)
        fp = fingerprint(text)  # pure and CPU-bound: outside the write lock
        with self.store.write() as tx:
            earlier = self._recorded_already(tx, key, text, fp.keys, host_call)
            if earlier is not None:
                slot, by = earlier
                repeats = tx.count_fingerprint(key, slot.fingerprint) if slot.fingerprint else [slot.id]
                return RecordResult(
                    session_id=key.session, project=key.project, timeline_id=slot.id,
                    content_id=slot.content_id or 0, sequence_order=slot.sequence_order,
                    fingerprint=slot.fingerprint or fp.key, fingerprint_kind=fp.kind, repeats=len(repeats),
                    repeat_ids=repeats, redacted=list(dict.fromkeys(found)), already_recorded_by=by,
                )
            content_id = tx.add_content(key.tenant, text, context, payload)
            slot = tx.insert_slot(
                NewSlot(
                    key=key,
                    temporal_state=TemporalState.PRESENT,
                    origin=Origin.RECORD,
                    content_id=content_id,
                    fingerprint=fp.key,
                    fingerprint_keys=fp.keys,
                    fingerprint_version=FINGERPRINT_VERSION,
                )
            )
            repeats = tx.count_fingerprint(key, fp.key)
            if slot.sequence_order % self.settings.prune_every == 0:
                # Retention, opportunistically: an endless loop must not grow the database without bound.
                tx.prune(key, self.settings.retention_past_per_session, self.settings.retention_days)
            # Recall on record: a lesson learned from this error, anywhere this session can see.
            recalled = tx.constraints_matching(key, fp.keys)
            if recalled:
                tx.fire([c.id for c in recalled])
            if host_call is not None:
                tx.add_host_call(key, host_call, slot.id)
            fixed = error_fixes(tx, key, fp.keys)  # fix memory: what fixed this error in another session
        # DEBUG: one line on stderr per record (every failed tool call of a host) is noise, and a write per call.
        log.debug("Recorded PRESENT state #%d (content_id=%d) in session %r at sequence %d",
                 slot.id, content_id, key.session, slot.sequence_order)
        return RecordResult(
            session_id=key.session,
            project=key.project,
            timeline_id=slot.id,
            content_id=content_id,
            sequence_order=slot.sequence_order,
            fingerprint=fp.key,
            fingerprint_kind=fp.kind,
            repeats=len(repeats),
            repeat_ids=repeats,
            truncated=truncated,
            recalled=[_recall_view(c) for c in _rank(recalled, set(fp.keys))],
            redacted=list(dict.fromkeys(found)),
            fixed_before=fixed,
        )

    def _recorded_already(
        self, tx: Transaction, key: SessionKey, text: str, keys: Sequence[str], host_call: NewHostCall | None
    ) -> tuple[Slot, str] | None:
        """The slot this record is already stored as: the same captured tool call ("call"), or, for a record
        without a call, a hook's capture of the same error moments ago ("hook", claimed once)."""
        if host_call is not None:
            seen = tx.host_call_by_use_id(key, host_call.tool_use_id) if host_call.tool_use_id else None
            found = tx.slots_by_id(key, [seen.slot_id]) if seen is not None and seen.slot_id is not None else []
            return (found[0], "call") if found else None
        captures = tx.host_calls(key, outcome="failure", within_seconds=self.settings.hook_dedupe_seconds,
                                 unclaimed=True, newest_first=True, limit=20)
        if not captures:
            return None
        slots = {s.id: s for s in tx.slots_by_id(key, [c.slot_id for c in captures if c.slot_id is not None])}
        wanted, quoted = set(keys), " ".join(text.split())
        for capture in captures:
            slot = slots.get(capture.slot_id or 0)
            if slot is None or slot.temporal_state is not TemporalState.PRESENT:
                continue
            # Sharing a fingerprint key is what makes the loop detector group two slots; a model quoting part
            # of the captured output (at least a line's worth) is the same error too.
            captured = " ".join((slot.raw_log or "").split())
            if not wanted.isdisjoint(slot.fingerprint_keys) or quoted == captured or (
                len(quoted) >= MIN_QUOTED_CHARS and (quoted in captured or captured in quoted)
            ):
                if tx.claim_host_call(capture.id):
                    return slot, "hook"
        return None

    def _redact(self, text: str | None, found: list[str]) -> Any:
        """The text with recognisable secrets replaced (unless VLK_REDACT_SECRETS=0); kinds go to found."""
        if text is None or not self.settings.redact_secrets:
            return text
        result = redact(text)
        found.extend(result.kinds)
        return result.text

    # ---- vlk_time_travel ----

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
        saved = _tokens_of(s for s in present if s.id in moved)
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

    # ---- vlk_get_history / vlk_search_memory / vlk_summarize_session ----

    def get_history(self, limit: Any = None, session_id: Any = inputs.DEFAULT_SESSION) -> HistoryResult:
        """Every slot of the session in every state, newest first."""
        key = self._key(session_id)
        n = inputs.limit(limit, HISTORY_DEFAULT_LIMIT, self.settings.max_list_limit)
        with self.store.read() as tx:
            slots = tx.history(key, n)
        kept = self._within_listing_size(slots)
        return HistoryResult(key.session, n, [view(s) for s in kept], complete=len(kept) == len(slots))

    def search_memory(
        self, query: Any, limit: Any = None, session_id: Any = inputs.DEFAULT_SESSION
    ) -> SearchResult:
        """Literal, case-insensitive search over logs, file context, lessons and evidence."""
        text = inputs.query(query)
        key = self._key(session_id)
        n = inputs.limit(limit, SEARCH_DEFAULT_LIMIT, self.settings.max_list_limit)
        with self.store.read() as tx:
            slots = tx.search(key, text, n)
        kept = self._within_listing_size(slots)
        return SearchResult(key.session, text, n, [view(s) for s in kept], complete=len(kept) == len(slots))

    def _within_listing_size(self, slots: list[Slot]) -> list[Slot]:
        """The newest slots whose text fits VLK_MAX_LISTING_CHARS (at least one), so a listing stays well
        under the 10 MiB message cap of common MCP clients."""
        kept: list[Slot] = []
        used = 0
        for slot in slots:
            used += sum(len(t or "") for t in (slot.raw_log, slot.file_context, slot.tool_payload,
                                               slot.learning_summary, slot.evidence))
            if kept and used > self.settings.max_listing_chars:
                break
            kept.append(slot)
        return kept

    def summarize_session(self, session_id: Any = inputs.DEFAULT_SESSION) -> SummaryResult:
        """Counts per state; tokens of live logs and of archived ones, apart (fixes defect 12)."""
        key = self._key(session_id)
        with self.store.read() as tx:
            counts = tx.counts(key)
            visible = len(tx.visible_constraints(key))
        present, present_chars = counts.get(TemporalState.PRESENT, (0, 0))
        past, past_chars = counts.get(TemporalState.PAST, (0, 0))
        future, _ = counts.get(TemporalState.FUTURE, (0, 0))
        return SummaryResult(
            session_id=key.session,
            project=key.project,
            total=present + past + future,
            present=present,
            past=past,
            future=future,
            active_tokens=chars_tokens(present_chars),
            archived_tokens=chars_tokens(past_chars),
            visible_constraints=visible,
        )

    # ---- vlk_fetch_context ----

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
        """The loops fetch_context would intercept now, intercepted by the same pipeline (consolidation included),
        without rendering the context: a hook's failure event reads only the loops, on every failed tool call."""
        key = self._key(session_id)
        with self.store.write() as tx:
            return self._pipeline(tx, key, logging.INFO)[3]

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
        present = self._refresh_fingerprints(tx, tx.slots(key, TemporalState.PRESENT), level)
        loops = self._intercept_loops(tx, key, present, level)
        archived = {i for loop in loops for i in loop.archived_ids}
        present = [s for s in present if s.id not in archived]
        constraints = tx.visible_constraints(key)
        conflicts = find_conflicts(constraints)
        merges = self._consolidate(tx, key, constraints, conflicts, level)
        if merges:
            constraints = tx.visible_constraints(key)
            conflicts = find_conflicts(constraints)
        return constraints, present, conflicts, loops, merges

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
        groups = detect_loops(present, self.settings.loop_threshold)
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
            saved = _tokens_of(by_id[i] for i in moved)
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

    # ---- vlk_revoke_future ----

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


    # ---- maintenance ----

    def maintenance(self, vacuum: bool = False) -> MaintenanceResult:
        """Apply the retention policy to every session, then give the space back to the file system."""
        with self.store.write() as tx:
            slots, contents = tx.prune(None, self.settings.retention_past_per_session, self.settings.retention_days)
        self.store.optimize(vacuum)
        log.info("Maintenance: pruned %d PAST slots and %d contents", slots, contents)
        return MaintenanceResult(slots, contents, self.settings.retention_days,
                                 self.settings.retention_past_per_session, vacuum)


def _context_result(
    key: SessionKey, budget: int, constraints: list[Slot], present: list[Slot], conflicts: list[Conflict],
    loops: list[LoopReport], merges: list[MergeReport], fixes: dict[int, str] | None = None,
) -> ContextResult:
    """Render the pipeline's outcome within the budget (outside the transaction: rendering is pure)."""
    live_keys = {k for s in present for k in s.fingerprint_keys}
    rendered = render_context(
        key.session, _rank(constraints, live_keys), present, conflicts, loops, merges, budget, key.project, fixes
    )
    return context_result(
        key.session, key.project, rendered, estimate_tokens(rendered.text), budget, conflicts, loops, merges
    )


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
        project=slot.project,
        scope=slot.scope.value if slot.scope else None,
        fire_count=slot.fire_count,
        last_fired_at=slot.last_fired_at,
    )


def _rank(constraints: Sequence[Slot], live_keys: set[str]) -> list[Slot]:
    """Constraints about a live error first, then the most fired, then the most recent."""
    newest_first = sorted(
        constraints, key=lambda c: (max(c.last_fired_at or "", c.created_at or ""), c.id), reverse=True
    )
    return sorted(newest_first, key=lambda c: (not live_keys.intersection(c.fingerprint_keys), -c.fire_count))


def _recall_view(constraint: Slot) -> RecallView:
    return RecallView(
        constraint_id=constraint.id,
        learned_in_session=constraint.session_id,
        scope=(constraint.scope or Scope.SESSION).value,
        constraint_type=(constraint.constraint_type or ConstraintType.DERIVED).value,
        lesson=lesson_text(constraint),
        evidence=constraint.evidence,
        fire_count=constraint.fire_count + 1,
    )


def _tokens_of(slots: Any) -> int:
    """ceil(total characters / 3.8) over several logs, as the prototype sums before rounding."""
    return chars_tokens(sum(len(s.raw_log or "") for s in slots))


def _lesson_fingerprint(slots: Sequence[Slot]) -> tuple[str | None, tuple[str, ...]]:
    """A lesson is keyed by what it was learned from: the newest slot's key, and every slot's keys."""
    keys: dict[str, None] = {}
    for slot in reversed(slots):
        for key in slot.error_keys:
            keys.setdefault(key, None)
    return slots[-1].fingerprint, tuple(keys)[:MAX_LESSON_KEYS]
