"""The viewer's reads (store/browse.py) as SQLite spells them: the session aggregates, the host-call walks.

A mixin of the SQLite transaction; SQLite sums booleans and walks the calls with json_each, where
PostgreSQL (postgres_browse.py) uses FILTER, LATERAL joins and arrays.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..core.model import SessionKey
from .browse import Browse
from .dialect import session_params
from .rows import HOST_CALL_COLUMNS, host_call_columns


class SqliteBrowse(Browse):
    """The SQLite parts of the store's browsing reads (see browse.Browse)."""

    _SESSIONS = """SELECT project, session_id, SUM(temporal_state = 'PRESENT'), SUM(temporal_state = 'PAST'),
                   SUM(temporal_state = 'FUTURE')
               FROM agent_timeline WHERE tenant = ? AND (? IS NULL OR project = ?)
               GROUP BY project, session_id ORDER BY MAX(id) DESC LIMIT ?"""
    _SESSION_TOTALS = """SELECT SUM(t.origin = 'anchor'),
                       COALESCE(SUM(CASE WHEN t.retired_reason IN ('loop', 'time_travel')
                                         THEN LENGTH(c.raw_log) END), 0),
                       MIN(t.created_at), MAX(t.created_at)
                   FROM agent_timeline t LEFT JOIN memory_contents c ON c.id = t.content_id
                   WHERE t.tenant = ? AND t.project = ? AND t.session_id = ?"""
    _ANY_PROJECT = "(? IS NULL OR t.project = ?)"
    _SAVINGS = """SELECT a.id, a.project, a.session_id, a.origin, a.created_at, COUNT(s.id),
                   COALESCE(SUM(LENGTH(c.raw_log)), 0)
               FROM (SELECT id, project, session_id, origin, created_at FROM agent_timeline x
                     WHERE {where} AND origin IN ('anchor', 'lesson')
                         AND EXISTS (SELECT 1 FROM agent_timeline r WHERE r.retired_by = x.id)
                     ORDER BY id DESC LIMIT ?) a
               JOIN agent_timeline s ON s.retired_by = a.id AND s.retired_reason IN ('loop', 'time_travel')
               LEFT JOIN memory_contents c ON c.id = s.content_id
               GROUP BY a.id ORDER BY a.created_at, a.id"""

    def _first_successes(self, key: SessionKey, slot_ids: Sequence[int]) -> list[tuple[Any, ...]]:
        # The success through the call_key index, the captures through slot_id's. The key is given as values,
        # not as f's columns, so the planner sees the ranges.
        return self._rows(
            f"""SELECT f.slot_id, f.id, f.call_key, {host_call_columns("s")}
               FROM host_calls f JOIN host_calls s ON s.id = (
                   SELECT MIN(x.id) FROM host_calls x WHERE x.tenant = ? AND x.project = ?
                       AND x.session_id = ? AND x.call_key = f.call_key AND x.id > f.id
                       AND x.outcome = 'success')
               WHERE f.slot_id IN (SELECT value FROM json_each(?)) AND f.outcome = 'failure'
                   AND f.tenant = ? AND f.project = ? AND f.session_id = ?
               ORDER BY f.slot_id, f.id""",
            (*session_params(key), json.dumps(list(slot_ids)), *session_params(key)),
        )

    def _calls_between(self, key: SessionKey, pairs: list[tuple[Any, ...]], steps: int) -> list[tuple[Any, ...]]:
        # Along the session index, per (capture, its success, call key) given as JSON.
        return self._rows(
            f"""SELECT failure, total, n, {HOST_CALL_COLUMNS} FROM (
                   SELECT p.failure, m.*, ROW_NUMBER() OVER (PARTITION BY p.failure ORDER BY m.id DESC) AS n,
                          COUNT(*) OVER (PARTITION BY p.failure) AS total
                   FROM (SELECT json_extract(value, '$[0]') AS failure, json_extract(value, '$[1]') AS success,
                                json_extract(value, '$[2]') AS call_key FROM json_each(?)) p
                   JOIN host_calls m ON m.tenant = ? AND m.project = ? AND m.session_id = ?
                       AND m.id > p.failure AND m.id < p.success AND m.outcome = 'success' AND m.changes_state
                       AND m.call_key <> p.call_key)
               WHERE n <= ? ORDER BY failure, id""",
            (json.dumps([[row[1], row[3], row[2]] for row in pairs]), *session_params(key), max(steps, 1)),
        )

    def change_marker(self, tenant: str) -> tuple[int, int]:
        # `+tenant` keeps the tenant off the indexes: walking the rowid down finds the newest row at once.
        rows = self._rows("SELECT id FROM agent_timeline WHERE +tenant = ? ORDER BY id DESC LIMIT 1", (tenant,))
        top = rows[0][0] if rows else 0
        [(future,)] = self._rows(
            "SELECT COUNT(*) FROM agent_timeline WHERE tenant = ? AND temporal_state = 'FUTURE'", (tenant,)
        )
        return int(top), int(future)
