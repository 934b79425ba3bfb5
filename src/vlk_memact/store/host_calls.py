"""The host hooks' records in a transaction, alike in both stores: the tool calls a hook saw, what it injected.

Written once over store/dialect.py (the time windows are the dialects' own). Booleans are bound as
Python bools: sqlite3 stores them as 1 and 0, PostgreSQL as true and false.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..core.model import HostCall, NewHostCall, SessionKey
from . import clock
from .dialect import SqlDialect, equalities, session_params
from .rows import HOST_CALL_COLUMNS, host_call_from_row

_HOST_CALL = f"SELECT {HOST_CALL_COLUMNS} FROM host_calls WHERE tenant = ? AND project = ? AND session_id = ?"
# The same test when slot ids are given: `|| ''` and `+ 0` keep these columns off the indexes (dialect.SESSION_BY_ID).
_HOST_CALL_OF_SLOTS = (f"SELECT {HOST_CALL_COLUMNS} FROM host_calls WHERE tenant = ? AND project = ? "
                       "AND session_id || '' = ? AND id + 0 > ?")
_ADD = ("INSERT INTO host_calls (tenant, project, session_id, tool_use_id, call_key, outcome, changes_state, slot_id, "
        "tool, target, summary, host{stamped}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?{stamp}) "
        "ON CONFLICT DO NOTHING RETURNING id")
# Stamped by the column default (now), or with a created_at of its own (clock.stamped()).
_ADD_NOW = _ADD.format(stamped="", stamp="")
_ADD_STAMPED = _ADD.format(stamped=", created_at", stamp=", ?")


class HostCalls(SqlDialect):
    """The Transaction protocol's host-hook operations (see store/__init__.py for what each does)."""

    def add_host_call(self, key: SessionKey, call: NewHostCall, slot_id: int | None) -> int | None:
        stamp = clock.current()
        rows = self._rows(
            _ADD_NOW if stamp is None else _ADD_STAMPED,
            (*session_params(key), call.tool_use_id, call.call_key, call.outcome, bool(call.changes_state), slot_id,
             call.tool, call.target, call.summary, call.host, *(() if stamp is None else (stamp,))),
        )
        return int(rows[0][0]) if rows else None

    def host_call_by_use_id(self, key: SessionKey, tool_use_id: str) -> HostCall | None:
        rows = self._rows(_HOST_CALL + " AND tool_use_id = ?", (*session_params(key), tool_use_id))
        return host_call_from_row(rows[0]) if rows else None

    def host_calls(
        self,
        key: SessionKey,
        *,
        call_key: str | None = None,
        outcome: str | None = None,
        target: str | None = None,
        after_id: int = 0,
        within_seconds: int | None = None,
        unclaimed: bool = False,
        slot_ids: Sequence[int] = (),
        newest_first: bool = False,
        limit: int = 100,
    ) -> list[HostCall]:
        # A few slots' calls are found through idx_host_calls_slot, not by walking the session's calls by id.
        query = _HOST_CALL_OF_SLOTS if slot_ids else _HOST_CALL + " AND id > ?"
        params = [*session_params(key), after_id]
        where, given = equalities("", (("call_key", call_key), ("outcome", outcome), ("target", target)))
        if where:
            query += " AND " + where
            params += given
        if within_seconds is not None:
            since, ago = self._seconds_ago(within_seconds)
            query += f" AND created_at >= {since}"
            params.append(ago)
        if unclaimed:
            query += " AND claimed = ?"
            params.append(False)
        if slot_ids:
            query += f" AND slot_id IN ({', '.join('?' for _ in slot_ids)})"
            params += list(slot_ids)
        query += f" ORDER BY id {'DESC' if newest_first else 'ASC'} LIMIT ?"
        params.append(limit)
        return [host_call_from_row(r) for r in self._rows(query, params)]

    def claim_host_call(self, call_id: int) -> bool:
        changed = self._count("UPDATE host_calls SET claimed = ? WHERE id = ? AND claimed = ?", (True, call_id, False))
        return changed == 1

    def injected(self, key: SessionKey) -> list[str]:
        rows = self._rows(
            "SELECT injected FROM host_sessions WHERE tenant = ? AND project = ? AND session_id = ?",
            session_params(key),
        )
        return list(json.loads(rows[0][0])) if rows else []

    def set_injected(self, key: SessionKey, items: Sequence[str], host: str | None = None) -> None:
        self._exec(
            "INSERT INTO host_sessions (tenant, project, session_id, injected, host) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (tenant, project, session_id) DO UPDATE SET injected = excluded.injected, "
            f"host = COALESCE(excluded.host, host_sessions.host), updated_at = {self._NOW}",
            (*session_params(key), json.dumps(list(items), ensure_ascii=False), host),
        )
