"""Fix memory over PostgreSQL: store a fix with its fingerprint keys, find the fixes of an error, export them.

A mixin of the PostgreSQL transaction (it uses self._rows and self._exec), beside the browsing reads.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from ..core.model import Fix, NewFix, SessionKey
from .postgres_schema import NOW_MILLIS
from .rows import FIX_COLUMNS, fix_from_record, fix_from_row, fix_record, fix_values

_FIX = f"SELECT {FIX_COLUMNS} FROM fixes f"
_INSERT = ("INSERT INTO fixes (uid, tenant, project, session_id, kind, fingerprint, fingerprint_keys, error, failed, "
           "passed, steps, left_out, slot_uids, scope, demoted, created_at) VALUES "
           "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
           f"COALESCE(%s, {NOW_MILLIS})) "
           "ON CONFLICT (uid) DO NOTHING RETURNING id")


class PostgresFixes:
    """The store's fix-memory operations (see the Transaction protocol)."""

    def _rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError  # provided by the transaction class

    def _exec(self, query: str, params: Sequence[Any] = ()) -> None:
        raise NotImplementedError  # provided by the transaction class

    def _insert_fix(self, fix: NewFix, uid: str, demoted: int, created_at: str | None) -> int | None:
        rows = self._rows(_INSERT, (uid, *fix_values(fix), demoted, created_at))
        if not rows:
            return None
        fix_id = int(rows[0][0])
        for k in dict.fromkeys(fix.fingerprint_keys):
            self._exec("INSERT INTO fix_keys (tenant, key, fix_id) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                       (fix.key.tenant, k, fix_id))
        return fix_id

    def add_fix(self, fix: NewFix) -> int:
        found = self._insert_fix(fix, uuid.uuid4().hex, 0, None)
        assert found is not None  # a fresh uid never conflicts
        return found

    def fixes_matching(self, key: SessionKey, fingerprint_keys: Sequence[str], limit: int,
                       include_own: bool = False) -> list[Fix]:
        rows = self._rows(
            _FIX + " WHERE f.id IN (SELECT fix_id FROM fix_keys WHERE tenant = %s AND key = ANY(%s)) "
            "AND f.tenant = %s AND (f.project = %s OR f.scope = 'global') "
            "AND NOT (f.project = %s AND f.session_id = %s) ORDER BY f.id DESC LIMIT %s",
            (key.tenant, list(fingerprint_keys), key.tenant, key.project, key.project,
             "\x1f" if include_own else key.session, limit),
        )
        return [fix_from_row(r) for r in rows]

    def fixes(self, tenant: str, project: str | None, session: str | None, limit: int) -> list[Fix]:
        query, params = _FIX + " WHERE f.tenant = %s", [tenant]
        if project is not None:
            query += " AND f.project = %s"
            params.append(project)
        if session is not None:
            query += " AND f.session_id = %s"
            params.append(session)
        return [fix_from_row(r) for r in self._rows(query + " ORDER BY f.id DESC LIMIT %s", (*params, limit))]

    def fixes_resolving(self, key: SessionKey, slot_uids: Sequence[str]) -> list[Fix]:
        if not slot_uids:
            return []
        rows = self._rows(
            _FIX + " WHERE f.tenant = %s AND f.project = %s AND f.session_id = %s AND f.slot_uids::jsonb ?| %s "
            "ORDER BY f.id DESC",
            (key.tenant, key.project, key.session, list(slot_uids)),
        )
        return [fix_from_row(r) for r in rows]

    def demote_fix(self, fix_id: int) -> None:
        self._exec("UPDATE fixes SET demoted = demoted + 1 WHERE id = %s", (fix_id,))

    def _dump_fixes(self, tenant: str | None, project: str | None, session: str | None) -> Iterator[dict[str, Any]]:
        conditions, params = [], []
        for column, value in (("tenant", tenant), ("project", project), ("session_id", session)):
            if value is not None:
                conditions.append(f"f.{column} = %s")
                params.append(value)
        where = (" WHERE " + " AND ".join(conditions)) if conditions else ""
        for row in self._rows(_FIX + where + " ORDER BY f.id", params):
            yield fix_record(row)

    def _load_fix(self, record: dict[str, Any]) -> bool:
        fix, uid, demoted, created_at = fix_from_record(record)
        return self._insert_fix(fix, uid, demoted, created_at) is not None
