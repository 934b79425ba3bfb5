"""Recording: a log, error or observation becomes a PRESENT slot (vlk_record_state, and the hooks' captures)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..core import inputs
from ..core.model import NewHostCall, NewSlot, Origin, RecordResult, SessionKey, Slot, TemporalState
from ..fingerprint import FINGERPRINT_VERSION, fingerprint
from ..store import Transaction
from .base import MemoryBase
from .fix_memory import error_fixes
from .slot_cache import change_stamp
from .views import rank, recall_view

log = logging.getLogger(__name__)

MIN_QUOTED_CHARS = 20  # a record quoting this much of a hook's capture is the same evidence


class Recording(MemoryBase):
    """vlk_record_state: one PRESENT slot per new error, recalled lessons and known fixes in the answer."""

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
            began = change_stamp(tx)
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
                ),
                (text, context, payload),  # what add_content stored (or found stored: the same hash, the same texts)
            )
            repeats = tx.count_fingerprint(key, fp.key)
            pruned = slot.sequence_order % self.settings.prune_every == 0
            if pruned:
                # Retention, opportunistically: an endless loop must not grow the database without bound.
                tx.prune(key, self.settings.retention_past_per_session, self.settings.retention_days)
            # Recall on record: a lesson learned from this error, anywhere this session can see.
            recalled = tx.constraints_matching(key, fp.keys)
            if recalled:
                tx.fire([c.id for c in recalled])
            if host_call is not None:
                tx.add_host_call(key, host_call, slot.id)
            fixed = error_fixes(tx, key, fp.keys)  # fix memory: what fixed this error in another session
            ended = change_stamp(tx)
        if not pruned:  # the only PRESENT slot of the session this record changed is the one it added
            self._present.advance(key, began, ended, slot)
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
            recalled=[recall_view(c) for c in rank(recalled, set(fp.keys))],
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
