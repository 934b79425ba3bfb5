"""The Transaction protocol on an open PostgreSQL transaction: the shared operations over psycopg, and what
PostgreSQL spells its own way (arrays and unnest for lists, times through to_char, a byte-order collation).

The shared statements are written with sqlite3's `?` placeholders; psycopg_style turns them into
psycopg's `%s` (once per distinct statement). This module's own statements use `%s` directly.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import psycopg

from ..core.model import Fix, Retired, SessionKey, Slot, TemporalState
from .dialect import SEARCHED, SEPARATOR, session_params
from .export import Export
from .fixes import FIX_SELECT
from .host_calls import HostCalls
from .learned import Learned
from .postgres_browse import PostgresBrowse
from .postgres_schema import NOW_MILLIS
from .retention import Retention
from .projects import Projects
from .rekey import Rekey
from .rows import SLOT_SELECT, fix_from_row, slot_from_row
from .timeline import Timeline

log = logging.getLogger(__name__)

# A `?` placeholder: not jsonb's ?| and ?& operators (this module's own SQL uses them; the shared SQL does not).
_QMARK = re.compile(r"\?(?![|&])")
# What a session sees: its own constraints, its project's, and the tenant's global ones.
_VISIBLE = """ t.tenant = %s AND t.temporal_state = 'FUTURE' AND (
    t.scope = 'global' OR (t.scope = 'project' AND t.project = %s)
    OR ((t.scope = 'session' OR t.scope IS NULL) AND t.project = %s AND t.session_id = %s)) """


@lru_cache(maxsize=1024)
def psycopg_style(query: str) -> str:
    """The statement with psycopg's `%s` placeholders for sqlite3's `?`."""
    return _QMARK.sub("%s", query)


class PostgresTx(Timeline, HostCalls, Retention, PostgresBrowse, Export, Learned, Rekey, Projects):
    """The Transaction protocol on an open PostgreSQL transaction."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    # ---- driver calls ----

    def _rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        query = psycopg_style(query)
        log.debug("SQL %s %r", query, params)
        return self._conn.execute(query, params).fetchall()

    def _stream(self, query: str, params: Sequence[Any] = ()) -> Iterable[tuple[Any, ...]]:
        return self._rows(query, params)

    def _exec(self, query: str, params: Sequence[Any] = ()) -> None:
        query = psycopg_style(query)
        log.debug("SQL %s %r", query, params)
        self._conn.execute(query, params)

    def _count(self, query: str, params: Sequence[Any] = ()) -> int:
        query = psycopg_style(query)
        log.debug("SQL %s %r", query, params)
        return self._conn.execute(query, params).rowcount

    # ---- the dialect ----

    _NOW_SQL = NOW_MILLIS
    _KEY_ORDER = 'k.key COLLATE "C"'
    _PRUNE_BATCH = sys.maxsize  # all at once: an array parameter has no practical bound

    def _in_ids(self, ids: Sequence[int]) -> tuple[str, Any]:
        return " = ANY(%s::bigint[])", list(ids)

    def _in_texts(self, values: Sequence[str]) -> tuple[str, Any]:
        return " = ANY(%s::text[])", list(values)

    def _days_ago_sql(self, days: int) -> tuple[str, Any]:
        # created_at is text in SQLite's format, so age tests compare strings, as the SQLite store does.
        return ("to_char(statement_timestamp() AT TIME ZONE 'UTC' - make_interval(days => %s), "
                "'YYYY-MM-DD HH24:MI:SS')"), days

    def _seconds_ago_sql(self, seconds: int) -> tuple[str, Any]:
        return ("to_char(statement_timestamp() AT TIME ZONE 'UTC' - make_interval(secs => %s), "
                "'YYYY-MM-DD HH24:MI:SS.MS')"), seconds

    def _visible(self, key: SessionKey) -> tuple[str, tuple[Any, ...]]:
        return _VISIBLE, (key.tenant, key.project, key.project, key.session)

    def _contains(self, query: str) -> tuple[str, tuple[Any, ...]]:
        # strpos() on text folded by vlk_fold (postgres_schema; see postgres.py for how it differs from casefold).
        return f"strpos({SEARCHED}, vlk_fold(%s)) > 0", (SEPARATOR, SEPARATOR, SEPARATOR, query)

    def _index_keys(self, constraint_id: int, keys: Sequence[str]) -> int:
        return self._count(
            "INSERT INTO constraint_keys (key, constraint_id) SELECT DISTINCT unnest(%s::text[]), %s "
            "ON CONFLICT DO NOTHING",
            (list(keys), constraint_id),
        )

    def _link(self, constraint_id: int, source_ids: Sequence[int], relation: str) -> int:
        if not source_ids:
            return 0
        return self._count(
            "INSERT INTO constraint_links (constraint_id, source_id, relation) "
            "SELECT %s, s, %s FROM unnest(%s::bigint[]) AS s ON CONFLICT DO NOTHING",
            (constraint_id, relation, list(source_ids)),
        )

    def _index_fix_keys(self, tenant: str, fix_id: int, keys: Sequence[str]) -> None:
        for k in dict.fromkeys(keys):
            self._exec("INSERT INTO fix_keys (tenant, key, fix_id) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                       (tenant, k, fix_id))

    def _pin_export(self, where: str, filters: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"(SELECT t.id FROM agent_timeline t{where})", list(filters)

    # ---- operations of its own ----

    def constraints_matching(self, key: SessionKey, fingerprint_keys: Sequence[str]) -> list[Slot]:
        rows = self._rows(
            SLOT_SELECT + " WHERE t.id IN (SELECT constraint_id FROM constraint_keys WHERE key = ANY(%s::text[])) "
            "AND" + _VISIBLE + "ORDER BY t.id",
            (list(fingerprint_keys), *self._visible(key)[1]),
        )
        return [slot_from_row(r) for r in rows]

    def retire(
        self, tenant: str, ids: Sequence[int], from_state: TemporalState, reason: Retired, by: int | None
    ) -> list[int]:
        rows = self._rows(
            "UPDATE agent_timeline SET temporal_state = 'PAST', retired_reason = %s, retired_by = %s "
            "WHERE tenant = %s AND temporal_state = %s AND id = ANY(%s::bigint[]) RETURNING id",
            (reason.value, by, tenant, from_state.value, list(ids)),
        )
        return sorted(r[0] for r in rows)

    def update_fingerprints(self, updates: Sequence[tuple[int, str, tuple[str, ...], int]]) -> None:
        if not updates:
            return
        self._exec(
            """UPDATE agent_timeline t
               SET fingerprint = u.fp, fingerprint_keys = u.keys, fingerprint_version = u.v
               FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::integer[]) AS u(id, fp, keys, v)
               WHERE t.id = u.id""",
            (
                [sid for sid, _, _, _ in updates],
                [fp for _, fp, _, _ in updates],
                [json.dumps(list(keys), ensure_ascii=False) for _, _, keys, _ in updates],
                [version for _, _, _, version in updates],
            ),
        )

    def fixes_resolving(self, key: SessionKey, slot_uids: Sequence[str]) -> list[Fix]:
        if not slot_uids:
            return []
        rows = self._rows(
            FIX_SELECT + " WHERE f.tenant = %s AND f.project = %s AND f.session_id = %s AND f.slot_uids::jsonb ?| %s "
            "ORDER BY f.id DESC",
            (*session_params(key), list(slot_uids)),
        )
        return [fix_from_row(r) for r in rows]
