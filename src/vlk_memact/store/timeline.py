"""The timeline operations of a transaction that both stores run alike: contents, slots, constraints, search.

Written once over store/dialect.py; what a backend does its own way (the key-driven constraint
lookup, retiring, rewriting fingerprints in bulk) stays in its transaction class (sqlite_tx, postgres_tx).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from ..core.model import NewSlot, SessionKey, Slot, TemporalState
from . import clock
from .dialect import SESSION, SESSION_BY_ID, SqlDialect, session_params
from .rows import SLOT_COLUMNS, SLOT_SELECT, SLOT_SELECT_NO_CONTENT, SLOT_VERSION_COLUMNS, slot_from_row
from .sqlite_schema import content_hash  # the same identity in both stores (pure hashing, no sqlite3 use)

_INSERT_SLOT = """INSERT INTO agent_timeline (uid, tenant, project, session_id, sequence_order, temporal_state, origin,
                   scope, content_id, learning_summary, constraint_type, evidence, fingerprint, fingerprint_keys,
                   fingerprint_version, lessons{stamped})
               VALUES (?, ?, ?, ?, (SELECT COALESCE(MAX(sequence_order), 0) + 1 FROM agent_timeline
                                    WHERE tenant = ? AND project = ? AND session_id = ?),
                       ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?{stamp})
               RETURNING {returning}"""
# The insert as the column default stamps it (now), and with a created_at of its own (clock.stamped()).
# The new row as SLOT_COLUMNS reads it, less the content's three columns: the slot is built from what the insert
# returns and the content its caller stored, without reading the row back.
_SLOT_COLUMNS = [c.strip() for c in SLOT_COLUMNS.split(",")]
_CONTENT_AT = _SLOT_COLUMNS.index("c.raw_log")  # where raw_log, file_context and tool_payload sit in such a row
_RETURNED = ", ".join(c.removeprefix("t.") for c in _SLOT_COLUMNS if not c.startswith("c."))
_INSERT_NOW = _INSERT_SLOT.format(stamped="", stamp="", returning=_RETURNED)
_INSERT_STAMPED = _INSERT_SLOT.format(stamped=", created_at", stamp=", ?", returning=_RETURNED)


def _json_list(values: Sequence[str]) -> str | None:
    """A list column's text: JSON, or NULL for an empty list."""
    return json.dumps(list(values), ensure_ascii=False) if values else None


class Timeline(SqlDialect):
    """The Transaction protocol's timeline operations (see store/__init__.py for what each does)."""

    def add_content(self, tenant: str, raw_log: str, file_context: str | None, tool_payload: str | None) -> int:
        digest = content_hash(tenant, raw_log, file_context, tool_payload)
        # Insert first, then look up: a duplicate uses up an id in both stores, so ids stay equal.
        rows = self._rows(
            "INSERT INTO memory_contents (raw_log, file_context, tool_payload, content_hash) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (content_hash) DO NOTHING RETURNING id",
            (raw_log, file_context, tool_payload, digest),
        ) or self._rows("SELECT id FROM memory_contents WHERE content_hash = ?", (digest,))
        return int(rows[0][0])

    def insert_slot(self, slot: NewSlot, content: tuple[str | None, str | None, str | None] | None = None) -> Slot:
        k = session_params(slot.key)
        stamp = clock.current()
        [returned] = self._rows(
            _INSERT_NOW if stamp is None else _INSERT_STAMPED,
            (
                uuid.uuid4().hex,
                *k,
                *k,
                slot.temporal_state.value,
                slot.origin.value,
                slot.scope.value if slot.scope else None,
                slot.content_id,
                slot.learning_summary,
                slot.constraint_type.value if slot.constraint_type else None,
                slot.evidence,
                slot.fingerprint,
                _json_list(slot.fingerprint_keys),
                slot.fingerprint_version,
                _json_list(slot.lessons),
                *(() if stamp is None else (stamp[:19],)),  # slots are stamped to the second (CURRENT_TIMESTAMP)
            ),
        )
        new_id = returned[0]
        if slot.temporal_state is TemporalState.FUTURE and slot.fingerprint_keys:
            self._index_keys(new_id, slot.fingerprint_keys)
        if content is None and slot.content_id is not None:  # the caller did not say what it stored: read it
            return slot_from_row(self._rows(SLOT_SELECT + " WHERE t.id = ?", (new_id,))[0])
        held = content if slot.content_id is not None and content is not None else (None, None, None)
        return slot_from_row((*returned[:_CONTENT_AT], *held, *returned[_CONTENT_AT:]))

    def slots(self, key: SessionKey, state: TemporalState) -> list[Slot]:
        rows = self._rows(
            SLOT_SELECT + " WHERE" + SESSION + "AND t.temporal_state = ? ORDER BY t.sequence_order",
            (*session_params(key), state.value),
        )
        return [slot_from_row(r) for r in rows]

    def slot_versions(self, key: SessionKey, state: TemporalState) -> list[tuple[Any, ...]]:
        rows = self._rows(
            "SELECT " + SLOT_VERSION_COLUMNS + " FROM agent_timeline t WHERE" + SESSION
            + "AND t.temporal_state = ? ORDER BY t.sequence_order",
            (*session_params(key), state.value),
        )
        return [tuple(r) for r in rows]

    def slots_by_id(self, key: SessionKey, ids: Sequence[int]) -> list[Slot]:
        among, listed = self._in_ids(ids)
        rows = self._rows(
            SLOT_SELECT + " WHERE" + SESSION_BY_ID + "AND t.id" + among + " ORDER BY t.sequence_order",
            (*session_params(key), listed),
        )
        return [slot_from_row(r) for r in rows]

    def visible_constraints(self, key: SessionKey) -> list[Slot]:
        visible, params = self._visible(key)
        return [slot_from_row(r) for r in self._rows(SLOT_SELECT + " WHERE" + visible + "ORDER BY t.id", params)]

    def fire(self, constraint_ids: Sequence[int]) -> None:
        among, listed = self._in_ids(constraint_ids)
        self._exec(
            f"UPDATE agent_timeline SET fire_count = fire_count + 1, last_fired_at = {self._NOW} WHERE id" + among,
            (listed,),
        )

    def count_fingerprint(self, key: SessionKey, fingerprint: str) -> list[int]:
        rows = self._rows(
            # `+`: sort the few rows of this fingerprint (idx_timeline_fingerprint) instead of walking every
            # PRESENT slot of the session in order (idx_timeline_active_context), which SQLite picks otherwise.
            "SELECT t.id FROM agent_timeline t WHERE" + SESSION + "AND t.temporal_state = 'PRESENT' "
            "AND t.fingerprint = ? ORDER BY +t.sequence_order",
            (*session_params(key), fingerprint),
        )
        return [r[0] for r in rows]

    def project_failures(self, key: SessionKey, fingerprint: str, limit: int, content: bool = True) -> list[Slot]:
        # idx_timeline_project_fingerprint, newest first; only failures (origin 'record') of any state.
        rows = self._rows(
            (SLOT_SELECT if content else SLOT_SELECT_NO_CONTENT)
            + " WHERE t.tenant = ? AND t.project = ? AND t.fingerprint = ? AND t.origin = 'record' "
            "ORDER BY t.id DESC LIMIT ?",
            (key.tenant, key.project, fingerprint, limit),
        )
        return [slot_from_row(r) for r in rows]

    def sources(self, constraint_id: int, relation: str) -> list[int]:
        rows = self._rows(
            "SELECT source_id FROM constraint_links WHERE constraint_id = ? AND relation = ? ORDER BY source_id",
            (constraint_id, relation),
        )
        return [r[0] for r in rows]

    def history(self, key: SessionKey, limit: int) -> list[Slot]:
        rows = self._rows(
            SLOT_SELECT + " WHERE" + SESSION + "ORDER BY t.sequence_order DESC LIMIT ?", (*session_params(key), limit)
        )
        return [slot_from_row(r) for r in rows]

    def search(self, key: SessionKey, query: str, limit: int) -> list[Slot]:
        # Literal (no LIKE wildcards) and Unicode case-insensitive (fixes defect 19).
        contains, params = self._contains(query)
        rows = self._rows(
            SLOT_SELECT + " WHERE" + SESSION + "AND " + contains + " ORDER BY t.sequence_order DESC LIMIT ?",
            (*session_params(key), *params, limit),
        )
        return [slot_from_row(r) for r in rows]

    def counts(self, key: SessionKey) -> dict[TemporalState, tuple[int, int]]:
        rows = self._rows(
            """SELECT t.temporal_state, COUNT(*), COALESCE(SUM(LENGTH(c.raw_log)), 0)
               FROM agent_timeline t LEFT JOIN memory_contents c ON c.id = t.content_id
               WHERE""" + SESSION + "GROUP BY t.temporal_state",
            session_params(key),
        )
        return {TemporalState(state): (int(count), int(chars)) for state, count, chars in rows}

    def link(self, constraint_id: int, source_ids: Sequence[int], relation: str) -> None:
        self._link(constraint_id, source_ids, relation)
