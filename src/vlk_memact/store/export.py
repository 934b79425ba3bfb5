"""Export and import of a transaction (dump and load), alike in both stores: the records and their order.

Records name rows by uid and content hash, never by local id, so a dump of either store loads into
either. Written once over store/dialect.py; a backend supplies how it pins the set of exported slots
(SQLite: a temporary table; PostgreSQL: a subquery, as a READ ONLY transaction may not create a table).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from .dialect import equalities
from .fixes import Fixes
from .sqlite_schema import content_hash

_CONTENT_FIELDS = ("tenant", "hash", "raw_log", "file_context", "tool_payload")
# fmt: off
_SLOT_FIELDS = ("uid", "tenant", "project", "session_id", "sequence_order", "temporal_state", "origin", "scope",
                "content_hash", "learning_summary", "constraint_type", "created_at", "evidence", "fingerprint",
                "fingerprint_keys", "fingerprint_version", "retired_reason", "lessons", "fire_count", "last_fired_at")
# fmt: on
# An imported slot keeps its exported sequence number unless its session already uses it; then it is appended.
_LOAD_SLOT = """INSERT INTO agent_timeline (uid, tenant, project, session_id, sequence_order,
                       temporal_state, origin, scope, content_id, learning_summary, constraint_type,
                       created_at, evidence, fingerprint, fingerprint_keys, fingerprint_version,
                       retired_reason, lessons, fire_count, last_fired_at)
                   VALUES (?, ?, ?, ?, CASE WHEN EXISTS (
                               SELECT 1 FROM agent_timeline
                               WHERE tenant = ? AND project = ? AND session_id = ?
                                   AND sequence_order = ?)
                           THEN (SELECT MAX(sequence_order) + 1 FROM agent_timeline
                                 WHERE tenant = ? AND project = ? AND session_id = ?)
                           ELSE ? END,
                           ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""


def _slot_values(record: dict[str, Any], content_id: int | None) -> tuple[Any, ...]:
    """The values of _LOAD_SLOT for a slot record."""
    session = (record["tenant"], record["project"], record["session_id"])
    sequence = record["sequence_order"]
    return (record["uid"], *session, *session, sequence, *session, sequence, record["temporal_state"],
            record["origin"], record.get("scope"), content_id, record.get("learning_summary"),
            record.get("constraint_type"), record["created_at"], record.get("evidence"), record.get("fingerprint"),
            json.dumps(record["fingerprint_keys"], ensure_ascii=False) if record.get("fingerprint_keys") else None,
            record.get("fingerprint_version"), record.get("retired_reason"),
            json.dumps(record["lessons"], ensure_ascii=False) if record.get("lessons") else None,
            record.get("fire_count", 0), record.get("last_fired_at"))


class Export(Fixes):
    """The Transaction protocol's dump and load (see store/__init__.py); an export carries the fixes too."""

    _KEY_ORDER: str  # k.key in byte order (SQLite's own; PostgreSQL's needs COLLATE "C")

    def _pin_export(self, where: str, filters: Sequence[Any]) -> tuple[str, list[Any]]:
        """(a parenthesized set of the ids of the slots `where` selects from agent_timeline t, its parameters)."""
        raise NotImplementedError

    def _unpin_export(self) -> None:
        """Release what _pin_export made."""

    def dump(self, tenant: str | None, project: str | None, session: str | None) -> Iterator[dict[str, Any]]:
        where, filters = equalities("t.", (("tenant", tenant), ("project", project), ("session_id", session)))
        chosen, params = self._pin_export(f" WHERE {where}" if where else "", filters)
        for row in self._stream(
            f"""SELECT t.tenant, c.content_hash, c.raw_log, c.file_context, c.tool_payload
                FROM memory_contents c JOIN (SELECT DISTINCT tenant, content_id FROM agent_timeline
                                             WHERE id IN {chosen}) t ON t.content_id = c.id
                ORDER BY c.id""",
            params,
        ):
            yield dict(zip(_CONTENT_FIELDS, row, strict=True), type="content")
        for row in self._stream(
            f"""SELECT t.uid, t.tenant, t.project, t.session_id, t.sequence_order, t.temporal_state, t.origin,
                       t.scope, c.content_hash, t.learning_summary, t.constraint_type, t.created_at, t.evidence,
                       t.fingerprint, t.fingerprint_keys, t.fingerprint_version, t.retired_reason, t.lessons,
                       t.fire_count, t.last_fired_at
                FROM agent_timeline t LEFT JOIN memory_contents c ON c.id = t.content_id
                WHERE t.id IN {chosen} ORDER BY t.id""",
            params,
        ):
            record = dict(zip(_SLOT_FIELDS, row, strict=True), type="slot")
            record["fingerprint_keys"] = json.loads(record["fingerprint_keys"] or "[]")
            record["lessons"] = json.loads(record["lessons"] or "[]")
            yield record
        for uid, by in self._stream(
            f"""SELECT t.uid, b.uid FROM agent_timeline t JOIN agent_timeline b ON b.id = t.retired_by
                WHERE t.id IN {chosen} AND b.id IN {chosen} ORDER BY t.id""",
            params * 2,
        ):
            yield {"type": "retired_by", "uid": uid, "by": by}
        for constraint, source, relation in self._stream(
            f"""SELECT a.uid, b.uid, l.relation FROM constraint_links l
                JOIN agent_timeline a ON a.id = l.constraint_id JOIN agent_timeline b ON b.id = l.source_id
                WHERE a.id IN {chosen} AND b.id IN {chosen} ORDER BY a.id, b.id""",
            params * 2,
        ):
            yield {"type": "link", "constraint": constraint, "source": source, "relation": relation}
        for constraint, key in self._stream(
            f"""SELECT a.uid, k.key FROM constraint_keys k JOIN agent_timeline a ON a.id = k.constraint_id
                WHERE a.id IN {chosen} ORDER BY a.id, {self._KEY_ORDER}""",
            params,
        ):
            yield {"type": "key", "constraint": constraint, "key": key}
        self._unpin_export()
        yield from self._dump_fixes(tenant, project, session)
        yield from self._dump_interventions(tenant, project, session)  # type: ignore[attr-defined]

    def load(self, record: dict[str, Any]) -> bool:
        kind = record.get("type")
        if kind == "content":
            digest = content_hash(record["tenant"], record["raw_log"], record.get("file_context"),
                                  record.get("tool_payload"))
            if digest != record.get("hash"):
                raise ValueError(f"content hash mismatch for {record.get('hash')!r}: the record was altered")
            return self._count(
                "INSERT INTO memory_contents (raw_log, file_context, tool_payload, content_hash) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (content_hash) DO NOTHING",
                (record["raw_log"], record.get("file_context"), record.get("tool_payload"), digest),
            ) == 1
        if kind == "slot":
            if self._id_of(record["uid"]) is not None:
                return False
            content_id = None
            if record.get("content_hash"):
                found = self._rows("SELECT id FROM memory_contents WHERE content_hash = ?", (record["content_hash"],))
                if not found:
                    raise ValueError(
                        f"slot {record['uid']} names content {record['content_hash']} not loaded before it"
                    )
                content_id = found[0][0]
            self._exec(_LOAD_SLOT, _slot_values(record, content_id))
            return True
        if kind == "retired_by":
            slot, by = self._id_of(record["uid"]), self._id_of(record["by"])
            return slot is not None and by is not None and self._count(
                "UPDATE agent_timeline SET retired_by = ? WHERE id = ? AND (retired_by IS NULL OR retired_by <> ?)",
                (by, slot, by),
            ) == 1
        if kind == "link":
            constraint, source = self._id_of(record["constraint"]), self._id_of(record["source"])
            return constraint is not None and source is not None and self._link(
                constraint, [source], record["relation"]) == 1
        if kind == "key":
            constraint = self._id_of(record["constraint"])
            return constraint is not None and self._index_keys(constraint, [record["key"]]) == 1
        if kind == "fix":
            return self._load_fix(record)
        if kind == "intervention":
            return self._load_intervention(record)  # type: ignore[attr-defined]
        raise ValueError(f"unknown export record type {kind!r}")

    def _id_of(self, uid: str) -> int | None:
        rows = self._rows("SELECT id FROM agent_timeline WHERE uid = ?", (uid,))
        return int(rows[0][0]) if rows else None
