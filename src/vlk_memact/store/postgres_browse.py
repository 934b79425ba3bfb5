"""The viewer's reads (store/browse.py) as PostgreSQL spells them: the session aggregates, the host-call walks.

A mixin of the PostgreSQL transaction; PostgreSQL counts with FILTER and walks the calls with LATERAL
joins over arrays, where SQLite (sqlite_browse.py) sums booleans and reads JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.model import SessionKey
from .browse import Browse
from .dialect import session_params
from .rows import HOST_CALL_COLUMNS, host_call_columns


class PostgresBrowse(Browse):
    """The PostgreSQL parts of the store's browsing reads (see browse.Browse)."""

    _SESSIONS = """SELECT project, session_id, COUNT(*) FILTER (WHERE temporal_state = 'PRESENT'),
                   COUNT(*) FILTER (WHERE temporal_state = 'PAST'), COUNT(*) FILTER (WHERE temporal_state = 'FUTURE')
               FROM agent_timeline WHERE tenant = %s AND (%s::text IS NULL OR project = %s)
               GROUP BY project, session_id ORDER BY MAX(id) DESC LIMIT %s"""
    _SESSION_TOTALS = """SELECT COUNT(*) FILTER (WHERE t.origin = 'anchor'),
                       COALESCE(SUM(length(c.raw_log)) FILTER (WHERE t.retired_reason IN ('loop', 'time_travel')), 0),
                       MIN(t.created_at), MAX(t.created_at)
                   FROM agent_timeline t LEFT JOIN memory_contents c ON c.id = t.content_id
                   WHERE t.tenant = %s AND t.project = %s AND t.session_id = %s"""
    _ANY_PROJECT = "(%s::text IS NULL OR t.project = %s)"
    _SAVINGS = """SELECT a.id, a.project, a.session_id, a.origin, a.created_at, COUNT(s.id),
                   COALESCE(SUM(length(c.raw_log)), 0)
               FROM (SELECT x.id, x.project, x.session_id, x.origin, x.created_at FROM agent_timeline x
                     WHERE {where} AND x.origin IN ('anchor', 'lesson')
                         AND EXISTS (SELECT 1 FROM agent_timeline r WHERE r.retired_by = x.id)
                     ORDER BY x.id DESC LIMIT %s) a
               JOIN agent_timeline s ON s.retired_by = a.id AND s.retired_reason IN ('loop', 'time_travel')
               LEFT JOIN memory_contents c ON c.id = s.content_id
               GROUP BY a.id, a.project, a.session_id, a.origin, a.created_at ORDER BY a.created_at, a.id"""

    def _first_successes(self, key: SessionKey, slot_ids: Sequence[int]) -> list[tuple[Any, ...]]:
        # A LATERAL join finds the success along the call_key index. The key is given as values, not as f's
        # columns, so the planner sees the ranges.
        return self._rows(
            f"""SELECT f.slot_id, f.id, f.call_key, {host_call_columns("s")}
               FROM host_calls f JOIN LATERAL (
                   SELECT {HOST_CALL_COLUMNS} FROM host_calls x WHERE x.tenant = %s AND x.project = %s
                       AND x.session_id = %s AND x.call_key = f.call_key AND x.id > f.id
                       AND x.outcome = 'success' ORDER BY x.id LIMIT 1) s ON true
               WHERE f.slot_id = ANY(%s::bigint[]) AND f.outcome = 'failure'
                   AND f.tenant = %s AND f.project = %s AND f.session_id = %s
               ORDER BY f.slot_id, f.id""",
            (*session_params(key), list(slot_ids), *session_params(key)),
        )

    def _calls_between(self, key: SessionKey, pairs: list[tuple[Any, ...]], steps: int) -> list[tuple[Any, ...]]:
        # Newest first along the session index, per (capture, its success, call key) given as arrays; the
        # window counts before the limit applies.
        return self._rows(
            f"""SELECT p.failure, m.total, m.kept, {host_call_columns("m")}
               FROM unnest(%s::bigint[], %s::bigint[], %s::text[]) AS p(failure, success, call_key)
               CROSS JOIN LATERAL (
                   SELECT {HOST_CALL_COLUMNS}, COUNT(*) OVER () AS total, ROW_NUMBER() OVER (ORDER BY m.id DESC) AS kept
                   FROM host_calls m WHERE m.tenant = %s AND m.project = %s AND m.session_id = %s
                       AND m.id > p.failure AND m.id < p.success AND m.outcome = 'success' AND m.changes_state
                       AND m.call_key <> p.call_key
                   ORDER BY m.id DESC LIMIT %s) m
               ORDER BY p.failure, m.id""",
            ([row[1] for row in pairs], [row[3] for row in pairs], [row[2] for row in pairs],
             *session_params(key), max(steps, 1)),
        )

    def change_marker(self, tenant: str) -> tuple[int, int]:
        [(top, future)] = self._rows(
            """SELECT COALESCE((SELECT id FROM agent_timeline WHERE tenant = %s ORDER BY id DESC LIMIT 1), 0),
                      (SELECT COUNT(*) FROM agent_timeline WHERE tenant = %s AND temporal_state = 'FUTURE')""",
            (tenant, tenant),
        )
        return int(top), int(future)
