"""Fix memory in a transaction, alike in both stores: keep a fix under its fingerprint keys, find, export it.

Written once over store/dialect.py; a backend supplies how it indexes a fix's keys and how it finds
the fixes that resolved given failures (a search inside a JSON list, which each dialect spells its way).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from ..core.model import Fix, NewFix, SessionKey
from .dialect import SqlDialect, equalities
from .rows import FIX_COLUMNS, fix_from_record, fix_from_row, fix_record, fix_values

FIX_SELECT = f"SELECT {FIX_COLUMNS} FROM fixes f"


class Fixes(SqlDialect):
    """The Transaction protocol's fix-memory operations but fixes_resolving (see store/__init__.py)."""

    def _index_fix_keys(self, tenant: str, fix_id: int, keys: Sequence[str]) -> None:
        """Index a fix under its fingerprint keys (a key twice: once)."""
        raise NotImplementedError

    def _insert_fix(self, fix: NewFix, uid: str, demoted: int, created_at: str | None) -> int | None:
        rows = self._rows(
            "INSERT INTO fixes (uid, tenant, project, session_id, kind, fingerprint, fingerprint_keys, error, "
            "failed, passed, steps, left_out, slot_uids, scope, demoted, created_at) VALUES "
            f"(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, COALESCE(?, {self._NOW})) "
            "ON CONFLICT (uid) DO NOTHING RETURNING id",
            (uid, *fix_values(fix), demoted, created_at),
        )
        if not rows:
            return None
        fix_id = int(rows[0][0])
        self._index_fix_keys(fix.key.tenant, fix_id, fix.fingerprint_keys)
        return fix_id

    def add_fix(self, fix: NewFix) -> int:
        found = self._insert_fix(fix, uuid.uuid4().hex, 0, None)
        assert found is not None  # a fresh uid never conflicts
        return found

    def has_fixes(self, tenant: str) -> bool:
        return bool(self._rows("SELECT 1 FROM fixes WHERE tenant = ? LIMIT 1", (tenant,)))

    def fixes_matching(self, key: SessionKey, fingerprint_keys: Sequence[str], limit: int,
                       include_own: bool = False) -> list[Fix]:
        among, listed = self._in_texts(fingerprint_keys)
        rows = self._rows(
            FIX_SELECT + " WHERE f.id IN (SELECT fix_id FROM fix_keys WHERE tenant = ? AND key" + among + ") "
            "AND f.tenant = ? AND (f.project = ? OR f.scope = 'global') "
            "AND NOT (f.project = ? AND f.session_id = ?) ORDER BY f.id DESC LIMIT ?",
            (key.tenant, listed, key.tenant, key.project, key.project,
             "\x1f" if include_own else key.session, limit),
        )
        return [fix_from_row(r) for r in rows]

    def fixes(self, tenant: str, project: str | None, session: str | None, limit: int) -> list[Fix]:
        where, params = equalities("f.", (("tenant", tenant), ("project", project), ("session_id", session)))
        rows = self._rows(FIX_SELECT + f" WHERE {where} ORDER BY f.id DESC LIMIT ?", (*params, limit))
        return [fix_from_row(r) for r in rows]

    def demote_fix(self, fix_id: int) -> None:
        self._exec("UPDATE fixes SET demoted = demoted + 1 WHERE id = ?", (fix_id,))

    def _dump_fixes(self, tenant: str | None, project: str | None, session: str | None) -> Iterator[dict[str, Any]]:
        where, params = equalities("f.", (("tenant", tenant), ("project", project), ("session_id", session)))
        for row in self._rows(FIX_SELECT + (f" WHERE {where}" if where else "") + " ORDER BY f.id", params):
            yield fix_record(row)

    def _load_fix(self, record: dict[str, Any]) -> bool:
        fix, uid, demoted, created_at = fix_from_record(record)
        return self._insert_fix(fix, uid, demoted, created_at) is not None
