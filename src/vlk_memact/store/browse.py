"""Read queries the viewer needs, alike in both stores: sessions with their counts, pages, links, savings.

Kept apart from the queries the tools run because these serve a person browsing, not an agent: the
session list and the tenant-wide search read every row of the tenant, which is fine for a page a
person opens and wrong for a tool call. Written once over store/dialect.py; a backend supplies the
aggregates and the host-call walks its dialect spells its own way, and change_marker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.browsing import Saving, SessionOverview
from ..core.model import HostCall, SessionKey, Slot
from .dialect import SqlDialect, equalities, session_params
from .rows import SLOT_SELECT, host_call_from_row, slot_from_row


_SESSION_HOST = "SELECT host FROM host_sessions WHERE tenant = ? AND project = ? AND session_id = ? AND host IS NOT NULL"
_NEWEST_CALL_HOST = ("SELECT host FROM host_calls WHERE tenant = ? AND project = ? AND session_id = ? "
                     "AND host IS NOT NULL ORDER BY id DESC LIMIT 1")


class Browse(SqlDialect):
    """The Transaction protocol's browsing reads but change_marker (see store/__init__.py for what each does)."""

    # The limit most recently written-to sessions: (project, session, PRESENT, PAST, FUTURE counts); binds
    # (tenant, project, project, limit), project None meaning any.
    _SESSIONS: str
    # One session's (anchors, archived characters, first and last created_at); binds (tenant, project, session).
    _SESSION_TOTALS: str
    _ANY_PROJECT: str  # `t.project` is the second bound value, or that value is NULL (it is bound twice)
    # The anchors and lessons that archived slots, with what they archived; {where} filters x, then binds limit.
    _SAVINGS: str

    def _first_successes(self, key: SessionKey, slot_ids: Sequence[int]) -> list[tuple[Any, ...]]:
        """Per failure capture of these slots: (slot id, capture id, call_key, *the first success of the same
        call after it, in HOST_CALL_COLUMNS), ordered by slot id then capture id."""
        raise NotImplementedError

    def _calls_between(self, key: SessionKey, pairs: list[tuple[Any, ...]], steps: int) -> list[tuple[Any, ...]]:
        """For rows of _first_successes: (capture id, how many state-changing calls of other keys came between
        the capture and its success, the call's rank counted from the newest, *the call in HOST_CALL_COLUMNS)
        for the newest max(steps, 1) such calls of each, ordered by capture id then call id."""
        raise NotImplementedError

    def projects(self, tenant: str) -> list[tuple[str, int]]:
        rows = self._rows(
            "SELECT project, COUNT(DISTINCT session_id) FROM agent_timeline WHERE tenant = ? "
            "GROUP BY project ORDER BY MAX(id) DESC",
            (tenant,),
        )
        return [(p, int(n)) for p, n in rows]

    def sessions(self, tenant: str, project: str | None, limit: int) -> list[SessionOverview]:
        # Counts per state and the newest id come from the (tenant, project, session, state) index alone;
        # what needs the rows (loops, archived characters, times) is read for the chosen sessions only.
        found = []
        for name, session, present, past, future in self._rows(self._SESSIONS, (tenant, project, project, limit)):
            [(loops, chars, first, last)] = self._rows(self._SESSION_TOTALS, (tenant, name, session))
            host = self.session_host(SessionKey(tenant, name, session))
            found.append(SessionOverview(name, session, int(present), int(past), int(future), int(loops),
                                         int(chars), first, last, host))
        return found

    def totals(self, tenant: str, project: str | None) -> tuple[dict[str, int], int, int]:
        rows = self._rows("SELECT t.temporal_state, COUNT(*) FROM agent_timeline t WHERE t.tenant = ? AND "
                          + self._ANY_PROJECT + " GROUP BY t.temporal_state", (tenant, project, project))
        [(sessions, projects)] = self._rows(
            "SELECT COUNT(*), COUNT(DISTINCT project) FROM (SELECT DISTINCT t.project, t.session_id FROM "
            "agent_timeline t WHERE t.tenant = ? AND " + self._ANY_PROJECT + ") s", (tenant, project, project))
        return {str(state): int(n) for state, n in rows}, int(sessions), int(projects)

    def session_host(self, key: SessionKey) -> str | None:
        # What the session start said, else the newest call a hook recorded (a hook installed mid-session).
        for query in (_SESSION_HOST, _NEWEST_CALL_HOST):
            rows = self._rows(query, session_params(key))
            if rows:
                return str(rows[0][0])
        return None

    def recent(self, tenant: str, project: str | None, limit: int) -> list[Slot]:
        rows = self._rows(SLOT_SELECT + " WHERE t.tenant = ? AND " + self._ANY_PROJECT + " ORDER BY t.id DESC LIMIT ?",
                          (tenant, project, project, limit))
        return [slot_from_row(r) for r in rows]

    def page(self, key: SessionKey, before: int | None, limit: int) -> list[Slot]:
        rows = self._rows(
            SLOT_SELECT + " WHERE t.tenant = ? AND t.project = ? AND t.session_id = ? AND t.sequence_order < ? "
            "ORDER BY t.sequence_order DESC LIMIT ?",
            (key.tenant, key.project, key.session, before if before is not None else 2**62, limit),
        )
        return [slot_from_row(r) for r in rows]

    def tenant_slots(self, tenant: str, ids: Sequence[int]) -> list[Slot]:
        among, listed = self._in_ids(ids)
        # `|| ''`: found by id (primary key), not by walking the tenant's slots (dialect.SESSION_BY_ID)
        rows = self._rows(SLOT_SELECT + " WHERE t.id" + among + " AND t.tenant || '' = ? ORDER BY t.id", (listed, tenant))
        return [slot_from_row(r) for r in rows]

    def links(self, constraint_ids: Sequence[int]) -> list[tuple[int, int, str]]:
        among, listed = self._in_ids(constraint_ids)
        rows = self._rows(
            "SELECT constraint_id, source_id, relation FROM constraint_links "
            "WHERE constraint_id" + among + " ORDER BY constraint_id, source_id",
            (listed,),
        )
        return [(int(a), int(b), r) for a, b, r in rows]

    def resolving_calls(
        self, key: SessionKey, slot_ids: Sequence[int], steps: int
    ) -> list[tuple[int, HostCall, int, list[HostCall]]]:
        # A slot captured twice: the success after its newest capture.
        latest = {row[0]: row for row in self._first_successes(key, slot_ids)}
        if not latest:
            return []
        counts: dict[int, int] = {}
        between: dict[int, list[HostCall]] = {}
        for row in self._calls_between(key, list(latest.values()), steps):
            counts[row[0]] = int(row[1])
            if row[2] <= steps:
                between.setdefault(row[0], []).append(host_call_from_row(row[3:]))
        return [(slot, host_call_from_row(row[3:]), counts.get(row[1], 0), between.get(row[1], []))
                for slot, row in latest.items()]

    def search_tenant(self, tenant: str, project: str | None, query: str, limit: int) -> list[Slot]:
        # The same literal, case-folded match as search(), over every session of the tenant.
        contains, params = self._contains(query)
        rows = self._rows(
            SLOT_SELECT + " WHERE t.tenant = ? AND " + self._ANY_PROJECT + " AND " + contains
            + " ORDER BY t.id DESC LIMIT ?",
            (tenant, project, project, *params, limit),
        )
        return [slot_from_row(r) for r in rows]

    def savings(self, tenant: str, project: str | None, session: str | None, limit: int) -> list[Saving]:
        where, params = equalities("x.", (("tenant", tenant), ("project", project), ("session_id", session)))
        rows = self._rows(self._SAVINGS.format(where=where), (*params, limit))
        return [Saving(int(i), p, s, o, at, int(n), int(ch)) for i, p, s, o, at, n, ch in rows]
