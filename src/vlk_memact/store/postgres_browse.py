"""Read queries the viewer needs, over PostgreSQL: sessions with their counts, pages, links, savings.

A mixin of the PostgreSQL transaction (it uses self._rows), kept apart from the queries the tools
run because these serve a person browsing: the session list and the tenant-wide search read every
row of the tenant, which is fine for a page a person opens and wrong for a tool call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.model import HostCall, Saving, SessionKey, SessionOverview, Slot
from .rows import HOST_CALL_COLUMNS, SLOT_COLUMNS, host_call_from_row, slot_from_row

_SELECT = f"""SELECT {SLOT_COLUMNS}
FROM agent_timeline t LEFT JOIN memory_contents c ON c.id = t.content_id"""
_SEPARATOR = "\x1f"


def _three(key: SessionKey) -> tuple[str, str, str]:
    return key.tenant, key.project, key.session


class PostgresBrowse:
    """The store's browsing reads (see the Transaction protocol)."""

    def _rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError  # provided by the transaction class

    def projects(self, tenant: str) -> list[tuple[str, int]]:
        rows = self._rows(
            "SELECT project, COUNT(DISTINCT session_id) FROM agent_timeline WHERE tenant = %s "
            "GROUP BY project ORDER BY MAX(id) DESC",
            (tenant,),
        )
        return [(p, int(n)) for p, n in rows]

    def sessions(self, tenant: str, project: str | None, limit: int) -> list[SessionOverview]:
        # Counts per state and the newest id from the (tenant, project, session, state) index; what needs
        # the rows (loops, archived characters, times) is read for the chosen sessions only.
        chosen = self._rows(
            """SELECT project, session_id, COUNT(*) FILTER (WHERE temporal_state = 'PRESENT'),
                   COUNT(*) FILTER (WHERE temporal_state = 'PAST'), COUNT(*) FILTER (WHERE temporal_state = 'FUTURE')
               FROM agent_timeline WHERE tenant = %s AND (%s::text IS NULL OR project = %s)
               GROUP BY project, session_id ORDER BY MAX(id) DESC LIMIT %s""",
            (tenant, project, project, limit),
        )
        found = []
        for name, session, present, past, future in chosen:
            [(loops, chars, first, last)] = self._rows(
                """SELECT COUNT(*) FILTER (WHERE t.origin = 'anchor'),
                       COALESCE(SUM(length(c.raw_log)) FILTER (WHERE t.retired_reason IN ('loop', 'time_travel')), 0),
                       MIN(t.created_at), MAX(t.created_at)
                   FROM agent_timeline t LEFT JOIN memory_contents c ON c.id = t.content_id
                   WHERE t.tenant = %s AND t.project = %s AND t.session_id = %s""",
                (tenant, name, session),
            )
            found.append(SessionOverview(name, session, int(present), int(past), int(future), int(loops),
                                         int(chars), first, last))
        return found

    def page(self, key: SessionKey, before: int | None, limit: int) -> list[Slot]:
        rows = self._rows(
            _SELECT + " WHERE t.tenant = %s AND t.project = %s AND t.session_id = %s AND t.sequence_order < %s "
            "ORDER BY t.sequence_order DESC LIMIT %s",
            (key.tenant, key.project, key.session, before if before is not None else 2**62, limit),
        )
        return [slot_from_row(r) for r in rows]

    def tenant_slots(self, tenant: str, ids: Sequence[int]) -> list[Slot]:
        rows = self._rows(_SELECT + " WHERE t.id = ANY(%s::bigint[]) AND t.tenant = %s ORDER BY t.id",
                          (list(ids), tenant))
        return [slot_from_row(r) for r in rows]

    def links(self, constraint_ids: Sequence[int]) -> list[tuple[int, int, str]]:
        rows = self._rows(
            "SELECT constraint_id, source_id, relation FROM constraint_links "
            "WHERE constraint_id = ANY(%s::bigint[]) ORDER BY constraint_id, source_id",
            (list(constraint_ids),),
        )
        return [(int(a), int(b), r) for a, b, r in rows]

    def resolving_calls(
        self, key: SessionKey, slot_ids: Sequence[int], steps: int
    ) -> list[tuple[int, HostCall, int, list[HostCall]]]:
        # Per failure capture of these slots (indexed by slot_id): the first success of the same call after it
        # (the call_key index). The key is given as values, not as f's columns, so the planner sees the ranges.
        success = ", ".join(f"s.{c.strip()}" for c in HOST_CALL_COLUMNS.split(","))
        rows = self._rows(
            f"""SELECT f.slot_id, f.id, f.call_key, {success}
               FROM host_calls f JOIN LATERAL (
                   SELECT {HOST_CALL_COLUMNS} FROM host_calls x WHERE x.tenant = %s AND x.project = %s
                       AND x.session_id = %s AND x.call_key = f.call_key AND x.id > f.id
                       AND x.outcome = 'success' ORDER BY x.id LIMIT 1) s ON true
               WHERE f.slot_id = ANY(%s::bigint[]) AND f.outcome = 'failure'
                   AND f.tenant = %s AND f.project = %s AND f.session_id = %s
               ORDER BY f.slot_id, f.id""",
            (*_three(key), list(slot_ids), *_three(key)),
        )
        latest = {row[0]: row for row in rows}  # a slot captured twice: the success after its newest capture
        if not latest:
            return []
        # The state-changing calls of other keys between each failure and its success, newest first along the
        # session index: how many, and the last `steps` of them (the window counts before the limit applies).
        values = list(latest.values())
        found = self._rows(
            f"""SELECT p.failure, m.total, m.kept, {", ".join(f"m.{c.strip()}" for c in HOST_CALL_COLUMNS.split(","))}
               FROM unnest(%s::bigint[], %s::bigint[], %s::text[]) AS p(failure, success, call_key)
               CROSS JOIN LATERAL (
                   SELECT {HOST_CALL_COLUMNS}, COUNT(*) OVER () AS total, ROW_NUMBER() OVER (ORDER BY m.id DESC) AS kept
                   FROM host_calls m WHERE m.tenant = %s AND m.project = %s AND m.session_id = %s
                       AND m.id > p.failure AND m.id < p.success AND m.outcome = 'success' AND m.changes_state
                       AND m.call_key <> p.call_key
                   ORDER BY m.id DESC LIMIT %s) m
               ORDER BY p.failure, m.id""",
            ([row[1] for row in values], [row[3] for row in values], [row[2] for row in values],
             *_three(key), max(steps, 1)),
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
        rows = self._rows(
            _SELECT
            + """ WHERE t.tenant = %s AND (%s::text IS NULL OR t.project = %s) AND strpos(vlk_fold(
                    COALESCE(c.raw_log, '') || %s || COALESCE(c.file_context, '') || %s ||
                    COALESCE(t.learning_summary, '') || %s || COALESCE(t.evidence, '')), vlk_fold(%s)) > 0
                ORDER BY t.id DESC LIMIT %s""",
            (tenant, project, project, _SEPARATOR, _SEPARATOR, _SEPARATOR, query, limit),
        )
        return [slot_from_row(r) for r in rows]

    def savings(self, tenant: str, project: str | None, session: str | None, limit: int) -> list[Saving]:
        # Only the filters given, so that a project or a session narrows the index range, not the rows read.
        where, params = "x.tenant = %s", [tenant]
        for column, value in (("project", project), ("session_id", session)):
            if value is not None:
                where += f" AND x.{column} = %s"
                params.append(value)
        rows = self._rows(
            f"""SELECT a.id, a.project, a.session_id, a.origin, a.created_at, COUNT(s.id),
                   COALESCE(SUM(length(c.raw_log)), 0)
               FROM (SELECT x.id, x.project, x.session_id, x.origin, x.created_at FROM agent_timeline x
                     WHERE {where} AND x.origin IN ('anchor', 'lesson')
                         AND EXISTS (SELECT 1 FROM agent_timeline r WHERE r.retired_by = x.id)
                     ORDER BY x.id DESC LIMIT %s) a
               JOIN agent_timeline s ON s.retired_by = a.id AND s.retired_reason IN ('loop', 'time_travel')
               LEFT JOIN memory_contents c ON c.id = s.content_id
               GROUP BY a.id, a.project, a.session_id, a.origin, a.created_at ORDER BY a.created_at, a.id""",
            (*params, limit),
        )
        return [Saving(int(i), p, s, o, at, int(n), int(ch)) for i, p, s, o, at, n, ch in rows]

    def change_marker(self, tenant: str) -> tuple[int, int]:
        [(top, future)] = self._rows(
            """SELECT COALESCE((SELECT id FROM agent_timeline WHERE tenant = %s ORDER BY id DESC LIMIT 1), 0),
                      (SELECT COUNT(*) FROM agent_timeline WHERE tenant = %s AND temporal_state = 'FUTURE')""",
            (tenant, tenant),
        )
        return int(top), int(future)
