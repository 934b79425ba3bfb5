"""Read queries the viewer needs, over SQLite: sessions with their counts, pages, links, savings.

A mixin of the SQLite transaction (it uses self._conn), kept apart from the queries the tools run
because these serve a person browsing, not an agent: the session list and the tenant-wide search
read every row of the tenant, which is fine for a page a person opens and wrong for a tool call.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from ..core.model import HostCall, Saving, SessionKey, SessionOverview, Slot
from .rows import HOST_CALL_COLUMNS, SLOT_COLUMNS, host_call_from_row, slot_from_row

_SELECT = f"""SELECT {SLOT_COLUMNS}
FROM agent_timeline t LEFT JOIN memory_contents c ON c.id = t.content_id"""
_SEPARATOR = "\x1f"


def _three(key: SessionKey) -> tuple[str, str, str]:
    return key.tenant, key.project, key.session


class SqliteBrowse:
    """The store's browsing reads (see the Transaction protocol)."""

    _conn: sqlite3.Connection

    def projects(self, tenant: str) -> list[tuple[str, int]]:
        rows = self._conn.execute(
            "SELECT project, COUNT(DISTINCT session_id) FROM agent_timeline WHERE tenant = ? "
            "GROUP BY project ORDER BY MAX(id) DESC",
            (tenant,),
        )
        return [(p, n) for p, n in rows]

    def sessions(self, tenant: str, project: str | None, limit: int) -> list[SessionOverview]:
        # Counts per state and the newest id come from the (tenant, project, session, state) index alone;
        # what needs the rows (loops, archived characters, times) is read for the chosen sessions only.
        chosen = self._conn.execute(
            """SELECT project, session_id, SUM(temporal_state = 'PRESENT'), SUM(temporal_state = 'PAST'),
                   SUM(temporal_state = 'FUTURE')
               FROM agent_timeline WHERE tenant = ? AND (? IS NULL OR project = ?)
               GROUP BY project, session_id ORDER BY MAX(id) DESC LIMIT ?""",
            (tenant, project, project, limit),
        ).fetchall()
        found = []
        for name, session, present, past, future in chosen:
            loops, chars, first, last = self._conn.execute(
                """SELECT SUM(t.origin = 'anchor'),
                       COALESCE(SUM(CASE WHEN t.retired_reason IN ('loop', 'time_travel')
                                         THEN LENGTH(c.raw_log) END), 0),
                       MIN(t.created_at), MAX(t.created_at)
                   FROM agent_timeline t LEFT JOIN memory_contents c ON c.id = t.content_id
                   WHERE t.tenant = ? AND t.project = ? AND t.session_id = ?""",
                (tenant, name, session),
            ).fetchone()
            found.append(SessionOverview(name, session, present, past, future, loops, chars, first, last))
        return found

    def page(self, key: SessionKey, before: int | None, limit: int) -> list[Slot]:
        rows = self._conn.execute(
            _SELECT + " WHERE t.tenant = ? AND t.project = ? AND t.session_id = ? AND t.sequence_order < ? "
            "ORDER BY t.sequence_order DESC LIMIT ?",
            (key.tenant, key.project, key.session, before if before is not None else 2**62, limit),
        )
        return [slot_from_row(r) for r in rows]

    def tenant_slots(self, tenant: str, ids: Sequence[int]) -> list[Slot]:
        rows = self._conn.execute(
            _SELECT + " WHERE t.id IN (SELECT value FROM json_each(?)) AND t.tenant = ? ORDER BY t.id",
            (json.dumps(list(ids)), tenant),
        )
        return [slot_from_row(r) for r in rows]

    def links(self, constraint_ids: Sequence[int]) -> list[tuple[int, int, str]]:
        rows = self._conn.execute(
            "SELECT constraint_id, source_id, relation FROM constraint_links "
            "WHERE constraint_id IN (SELECT value FROM json_each(?)) ORDER BY constraint_id, source_id",
            (json.dumps(list(constraint_ids)),),
        )
        return [(a, b, r) for a, b, r in rows]

    def resolving_calls(
        self, key: SessionKey, slot_ids: Sequence[int], steps: int
    ) -> list[tuple[int, HostCall, int, list[HostCall]]]:
        # Per failure capture of these slots (indexed by slot_id): the first success of the same call after it
        # (the call_key index). The key is given as values, not as f's columns, so the planner sees the ranges.
        success = ", ".join(f"s.{c.strip()}" for c in HOST_CALL_COLUMNS.split(","))
        rows = self._conn.execute(
            f"""SELECT f.slot_id, f.id, f.call_key, {success}
               FROM host_calls f JOIN host_calls s ON s.id = (
                   SELECT MIN(x.id) FROM host_calls x WHERE x.tenant = ? AND x.project = ?
                       AND x.session_id = ? AND x.call_key = f.call_key AND x.id > f.id
                       AND x.outcome = 'success')
               WHERE f.slot_id IN (SELECT value FROM json_each(?)) AND f.outcome = 'failure'
                   AND f.tenant = ? AND f.project = ? AND f.session_id = ?
               ORDER BY f.slot_id, f.id""",
            (*_three(key), json.dumps(list(slot_ids)), *_three(key)),
        ).fetchall()
        latest = {row[0]: row for row in rows}  # a slot captured twice: the success after its newest capture
        if not latest:
            return []
        # The state-changing calls of other keys between each failure and its success (the session index): how
        # many, and the last `steps` of them.
        pairs = [[row[1], row[3], row[2]] for row in latest.values()]
        found = self._conn.execute(
            f"""SELECT failure, total, n, {HOST_CALL_COLUMNS} FROM (
                   SELECT p.failure, m.*, ROW_NUMBER() OVER (PARTITION BY p.failure ORDER BY m.id DESC) AS n,
                          COUNT(*) OVER (PARTITION BY p.failure) AS total
                   FROM (SELECT json_extract(value, '$[0]') AS failure, json_extract(value, '$[1]') AS success,
                                json_extract(value, '$[2]') AS call_key FROM json_each(?)) p
                   JOIN host_calls m ON m.tenant = ? AND m.project = ? AND m.session_id = ?
                       AND m.id > p.failure AND m.id < p.success AND m.outcome = 'success' AND m.changes_state
                       AND m.call_key <> p.call_key)
               WHERE n <= ? ORDER BY failure, id""",
            (json.dumps(pairs), *_three(key), max(steps, 1)),
        )
        counts: dict[int, int] = {}
        between: dict[int, list[HostCall]] = {}
        for row in found:
            counts[row[0]] = int(row[1])
            if row[2] <= steps:
                between.setdefault(row[0], []).append(host_call_from_row(row[3:]))
        return [(slot, host_call_from_row(row[3:]), counts.get(row[1], 0), between.get(row[1], []))
                for slot, row in latest.items()]

    def search_tenant(self, tenant: str, project: str | None, query: str, limit: int) -> list[Slot]:
        # The same literal, case-folded match as search(), over every session of the tenant.
        rows = self._conn.execute(
            _SELECT
            + """ WHERE t.tenant = ? AND (? IS NULL OR t.project = ?) AND instr(vlk_fold(
                    COALESCE(c.raw_log, '') || ? || COALESCE(c.file_context, '') || ? ||
                    COALESCE(t.learning_summary, '') || ? || COALESCE(t.evidence, '')), ?) > 0
                ORDER BY t.id DESC LIMIT ?""",
            (tenant, project, project, _SEPARATOR, _SEPARATOR, _SEPARATOR, query.casefold(), limit),
        )
        return [slot_from_row(r) for r in rows]

    def savings(self, tenant: str, project: str | None, session: str | None, limit: int) -> list[Saving]:
        # Only the filters given, so that a project or a session narrows the index range, not the rows read.
        where, params = "tenant = ?", [tenant]
        for column, value in (("project", project), ("session_id", session)):
            if value is not None:
                where += f" AND {column} = ?"
                params.append(value)
        rows = self._conn.execute(
            f"""SELECT a.id, a.project, a.session_id, a.origin, a.created_at, COUNT(s.id),
                   COALESCE(SUM(LENGTH(c.raw_log)), 0)
               FROM (SELECT id, project, session_id, origin, created_at FROM agent_timeline x
                     WHERE {where} AND origin IN ('anchor', 'lesson')
                         AND EXISTS (SELECT 1 FROM agent_timeline r WHERE r.retired_by = x.id)
                     ORDER BY id DESC LIMIT ?) a
               JOIN agent_timeline s ON s.retired_by = a.id AND s.retired_reason IN ('loop', 'time_travel')
               LEFT JOIN memory_contents c ON c.id = s.content_id
               GROUP BY a.id ORDER BY a.created_at, a.id""",
            (*params, limit),
        )
        return [Saving(*row) for row in rows]

    def change_marker(self, tenant: str) -> tuple[int, int]:
        # `+tenant` keeps the tenant off the indexes: walking the rowid down finds the newest row at once.
        row = self._conn.execute("SELECT id FROM agent_timeline WHERE +tenant = ? ORDER BY id DESC LIMIT 1",
                                 (tenant,)).fetchone()
        top = row[0] if row else 0
        future = self._conn.execute(
            "SELECT COUNT(*) FROM agent_timeline WHERE tenant = ? AND temporal_state = 'FUTURE'", (tenant,)
        ).fetchone()[0]
        return int(top), int(future)
