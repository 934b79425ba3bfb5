"""The Transaction protocol on an open SQLite transaction: the shared operations over sqlite3, and what
SQLite spells its own way (id lists through json_each, times through strftime, index hints, pruning in chunks).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from ..core.model import Fix, Retired, SessionKey, Slot, TemporalState
from .dialect import SEARCHED, SEPARATOR, session_params
from .export import Export
from .fixes import FIX_SELECT
from .host_calls import HostCalls
from .learned import Learned
from .retention import Retention
from .projects import Projects
from .rekey import Rekey
from .rows import SLOT_SELECT, fix_from_row, slot_from_row
from .sqlite_browse import SqliteBrowse
from .timeline import Timeline

_IN_JSON = " IN (SELECT value FROM json_each(?))"  # a column among the values of a JSON list
# What a session sees: its own constraints, its project's, and the tenant's global ones. One branch per
# scope, each with a full index prefix, so SQLite answers it with a multi-index OR instead of reading
# every FUTURE row of the tenant.
_VISIBLE = """ ((t.tenant = ? AND t.temporal_state = 'FUTURE' AND t.scope = 'global')
    OR (t.tenant = ? AND t.temporal_state = 'FUTURE' AND t.scope = 'project' AND t.project = ?)
    OR (t.tenant = ? AND t.project = ? AND t.session_id = ? AND t.temporal_state = 'FUTURE'
        AND (t.scope = 'session' OR t.scope IS NULL))) """


class SqliteTx(Timeline, HostCalls, Retention, SqliteBrowse, Export, Learned, Rekey, Projects):
    """The Transaction protocol on an open SQLite transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def change_stamp(self) -> tuple[Any, int, int]:
        """Equal across two transactions only if nothing was committed in between: PRAGMA data_version moves
        with any other connection's commit, total_changes with this connection's writes (context_cache.py)."""
        return self._conn, self._conn.execute("PRAGMA data_version").fetchone()[0], self._conn.total_changes

    # ---- driver calls ----

    def _rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._conn.execute(query, params).fetchall()

    def _stream(self, query: str, params: Sequence[Any] = ()) -> Iterable[tuple[Any, ...]]:
        return self._conn.execute(query, params)

    def _exec(self, query: str, params: Sequence[Any] = ()) -> None:
        self._conn.execute(query, params)

    def _count(self, query: str, params: Sequence[Any] = ()) -> int:
        return self._conn.execute(query, params).rowcount

    # ---- the dialect ----

    _NOW_SQL = "strftime('%Y-%m-%d %H:%M:%f','now')"
    _KEY_ORDER = "k.key"
    _PRUNE_BATCH = 500  # ids per JSON list

    def _in_ids(self, ids: Sequence[int]) -> tuple[str, Any]:
        return _IN_JSON, json.dumps(list(ids))

    def _in_texts(self, values: Sequence[str]) -> tuple[str, Any]:
        return _IN_JSON, json.dumps(list(values))

    def _days_ago_sql(self, days: int) -> tuple[str, Any]:
        return "datetime('now', ?)", f"-{days} days"

    def _seconds_ago_sql(self, seconds: int) -> tuple[str, Any]:
        return "strftime('%Y-%m-%d %H:%M:%f', 'now', ?)", f"-{seconds} seconds"

    def _visible(self, key: SessionKey) -> tuple[str, tuple[Any, ...]]:
        return _VISIBLE, (key.tenant, key.tenant, key.project, key.tenant, key.project, key.session)

    def _contains(self, query: str) -> tuple[str, tuple[Any, ...]]:
        # instr() on text folded by vlk_fold (Python's str.casefold, registered on the connection).
        return f"instr({SEARCHED}, ?) > 0", (SEPARATOR, SEPARATOR, SEPARATOR, query.casefold())

    def _index_keys(self, constraint_id: int, keys: Sequence[str]) -> int:
        return self._conn.executemany("INSERT OR IGNORE INTO constraint_keys (key, constraint_id) VALUES (?, ?)",
                                      [(k, constraint_id) for k in keys]).rowcount

    def _link(self, constraint_id: int, source_ids: Sequence[int], relation: str) -> int:
        return self._conn.executemany(
            "INSERT OR IGNORE INTO constraint_links (constraint_id, source_id, relation) VALUES (?, ?, ?)",
            [(constraint_id, source, relation) for source in source_ids],
        ).rowcount

    def _index_fix_keys(self, tenant: str, fix_id: int, keys: Sequence[str]) -> None:
        self._conn.executemany("INSERT OR IGNORE INTO fix_keys (tenant, key, fix_id) VALUES (?, ?, ?)",
                               [(tenant, k, fix_id) for k in keys])

    def _pin_export(self, where: str, filters: Sequence[Any]) -> tuple[str, list[Any]]:
        self._exec("DROP TABLE IF EXISTS temp.vlk_export")
        self._exec(f"CREATE TEMP TABLE vlk_export AS SELECT t.id FROM agent_timeline t{where}", filters)
        return "(SELECT id FROM temp.vlk_export)", []

    def _unpin_export(self) -> None:
        self._exec("DROP TABLE temp.vlk_export")

    # ---- operations of its own ----

    def constraints_matching(self, key: SessionKey, fingerprint_keys: Sequence[str]) -> list[Slot]:
        # The visible constraints drive (a handful of rows through the multi-index OR); a generic key may be
        # shared by thousands of constraints in other projects, so the key index only answers EXISTS.
        rows = self._rows(
            SLOT_SELECT + " WHERE" + _VISIBLE + "AND EXISTS (SELECT 1 FROM constraint_keys k "
            "WHERE k.constraint_id = t.id AND k.key" + _IN_JSON + ") ORDER BY t.id",
            (*self._visible(key)[1], json.dumps(list(fingerprint_keys))),
        )
        return [slot_from_row(r) for r in rows]

    def retire(
        self, tenant: str, ids: Sequence[int], from_state: TemporalState, reason: Retired, by: int | None
    ) -> list[int]:
        rows = self._rows(
            "UPDATE agent_timeline SET temporal_state = 'PAST', retired_reason = ?, retired_by = ? "
            # `+column` keeps those columns off the index so the id list drives the update.
            "WHERE +tenant = ? AND +temporal_state = ? AND id" + _IN_JSON + " RETURNING id",
            (reason.value, by, tenant, from_state.value, json.dumps(list(ids))),
        )
        return sorted(r[0] for r in rows)

    def update_fingerprints(self, updates: Sequence[tuple[int, str, tuple[str, ...], int]]) -> None:
        self._conn.executemany(
            "UPDATE agent_timeline SET fingerprint = ?, fingerprint_keys = ?, fingerprint_version = ? WHERE id = ?",
            [(fp, json.dumps(list(keys), ensure_ascii=False), version, sid) for sid, fp, keys, version in updates],
        )

    def fixes_resolving(self, key: SessionKey, slot_uids: Sequence[str]) -> list[Fix]:
        if not slot_uids:
            return []
        rows = self._rows(
            FIX_SELECT + " WHERE f.tenant = ? AND f.project = ? AND f.session_id = ? AND EXISTS (SELECT 1 FROM "
            "json_each(f.slot_uids) u WHERE u.value" + _IN_JSON + ") ORDER BY f.id DESC",
            (*session_params(key), json.dumps(list(slot_uids))),
        )
        return [fix_from_row(r) for r in rows]
