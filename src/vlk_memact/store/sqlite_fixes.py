"""Fix memory over SQLite: store a fix with its fingerprint keys, find the fixes of an error, export them.

A mixin of the SQLite transaction (it uses self._conn), beside the browsing reads.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from ..core.model import Fix, NewFix, SessionKey
from .rows import FIX_COLUMNS, fix_from_record, fix_from_row, fix_record, fix_values

_FIX = f"SELECT {FIX_COLUMNS} FROM fixes f"
_INSERT = ("INSERT INTO fixes (uid, tenant, project, session_id, kind, fingerprint, fingerprint_keys, error, failed, "
           "passed, steps, left_out, slot_uids, scope, demoted, created_at) VALUES "
           "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, COALESCE(?, strftime('%Y-%m-%d %H:%M:%f','now'))) "
           "ON CONFLICT(uid) DO NOTHING RETURNING id")


class SqliteFixes:
    """The store's fix-memory operations (see the Transaction protocol)."""

    _conn: sqlite3.Connection

    def _insert_fix(self, fix: NewFix, uid: str, demoted: int, created_at: str | None) -> int | None:
        row = self._conn.execute(_INSERT, (uid, *fix_values(fix), demoted, created_at)).fetchone()
        if row is None:
            return None
        self._conn.executemany("INSERT OR IGNORE INTO fix_keys (tenant, key, fix_id) VALUES (?, ?, ?)",
                               [(fix.key.tenant, k, row[0]) for k in fix.fingerprint_keys])
        return int(row[0])

    def add_fix(self, fix: NewFix) -> int:
        found = self._insert_fix(fix, uuid.uuid4().hex, 0, None)
        assert found is not None  # a fresh uid never conflicts
        return found

    def fixes_matching(self, key: SessionKey, fingerprint_keys: Sequence[str], limit: int,
                       include_own: bool = False) -> list[Fix]:
        rows = self._conn.execute(
            _FIX + " WHERE f.id IN (SELECT fix_id FROM fix_keys WHERE tenant = ? AND key IN "
            "(SELECT value FROM json_each(?))) AND f.tenant = ? AND (f.project = ? OR f.scope = 'global') "
            "AND NOT (f.project = ? AND f.session_id = ?) ORDER BY f.id DESC LIMIT ?",
            (key.tenant, json.dumps(list(fingerprint_keys)), key.tenant, key.project, key.project,
             "\x1f" if include_own else key.session, limit),
        )
        return [fix_from_row(r) for r in rows]

    def fixes(self, tenant: str, project: str | None, session: str | None, limit: int) -> list[Fix]:
        query, params = _FIX + " WHERE f.tenant = ?", [tenant]
        if project is not None:
            query += " AND f.project = ?"
            params.append(project)
        if session is not None:
            query += " AND f.session_id = ?"
            params.append(session)
        rows = self._conn.execute(query + " ORDER BY f.id DESC LIMIT ?", (*params, limit))
        return [fix_from_row(r) for r in rows]

    def fixes_resolving(self, key: SessionKey, slot_uids: Sequence[str]) -> list[Fix]:
        if not slot_uids:
            return []
        rows = self._conn.execute(
            _FIX + " WHERE f.tenant = ? AND f.project = ? AND f.session_id = ? AND EXISTS (SELECT 1 FROM "
            "json_each(f.slot_uids) u WHERE u.value IN (SELECT value FROM json_each(?))) ORDER BY f.id DESC",
            (key.tenant, key.project, key.session, json.dumps(list(slot_uids))),
        )
        return [fix_from_row(r) for r in rows]

    def demote_fix(self, fix_id: int) -> None:
        self._conn.execute("UPDATE fixes SET demoted = demoted + 1 WHERE id = ?", (fix_id,))

    def _dump_fixes(self, tenant: str | None, project: str | None, session: str | None) -> Iterator[dict[str, Any]]:
        conditions, params = [], []
        for column, value in (("tenant", tenant), ("project", project), ("session_id", session)):
            if value is not None:
                conditions.append(f"f.{column} = ?")
                params.append(value)
        where = (" WHERE " + " AND ".join(conditions)) if conditions else ""
        for row in self._conn.execute(_FIX + where + " ORDER BY f.id", params).fetchall():
            yield fix_record(row)

    def _load_fix(self, record: dict[str, Any]) -> bool:
        fix, uid, demoted, created_at = fix_from_record(record)
        return self._insert_fix(fix, uid, demoted, created_at) is not None
