"""Retention in a transaction (prune), alike in both stores: what is deleted, and in which order.

PAST slots beyond the newest few of a session or older than the retention age go, with their links,
keys and the content no slot references any more; so do old hook call records. Written once over
store/dialect.py; a backend says only how many slots one statement deletes.
"""

from __future__ import annotations

from typing import Any

from ..core.model import SessionKey
from .dialect import SESSION, session_params
from .interventions import Interventions
from .rows import HOST_CALLS_PER_SESSION

# Content no slot references any more (the statement that names it binds any further condition).
_ORPHANED = "NOT EXISTS (SELECT 1 FROM agent_timeline t WHERE t.content_id = memory_contents.id)"


class Retention(Interventions):
    """The Transaction protocol's prune (see store/__init__.py for what it does)."""

    _PRUNE_BATCH: int  # slots deleted per statement

    def prune(self, key: SessionKey | None, keep_past: int, max_age_days: int) -> tuple[int, int]:
        where, params = ("", ()) if key is None else (" AND" + SESSION, session_params(key))
        before, ago = self._days_ago(max_age_days)
        doomed = self._rows(
            f"""SELECT id, content_id FROM (
                    SELECT t.id, t.content_id, t.created_at, ROW_NUMBER() OVER (
                        PARTITION BY t.tenant, t.project, t.session_id ORDER BY t.sequence_order DESC) AS newest
                    FROM agent_timeline t WHERE t.temporal_state = 'PAST'{where}) AS past
                WHERE newest > ? OR created_at < {before}""",
            (*params, keep_past, ago),
        )
        contents = 0
        for start in range(0, len(doomed), self._PRUNE_BATCH):
            batch = doomed[start : start + self._PRUNE_BATCH]
            among, ids = self._in_ids([row[0] for row in batch])
            self._exec("UPDATE agent_timeline SET retired_by = NULL WHERE retired_by" + among, (ids,))
            self._exec("DELETE FROM constraint_links WHERE constraint_id" + among + " OR source_id" + among, (ids, ids))
            self._exec("DELETE FROM constraint_keys WHERE constraint_id" + among, (ids,))
            self._exec("DELETE FROM agent_timeline WHERE id" + among, (ids,))
            among, content_ids = self._in_ids(sorted({row[1] for row in batch if row[1] is not None}))
            contents += self._count(f"DELETE FROM memory_contents WHERE id{among} AND {_ORPHANED}", (content_ids,))
        if key is None:  # a full pass also sweeps content orphaned by anything else
            contents += self._count(f"DELETE FROM memory_contents WHERE {_ORPHANED}")
        self._prune_host_calls(key, max_age_days)
        self._prune_interventions(key, max_age_days)
        return len(doomed), contents

    def _prune_host_calls(self, key: SessionKey | None, max_age_days: int) -> None:
        """Hook call records older than the retention age, or beyond the newest few thousand of a session."""
        before, ago = self._days_ago(max_age_days)
        where, params = ("", ()) if key is None else (" AND tenant = ? AND project = ? AND session_id = ?",
                                                      session_params(key))
        self._exec(f"DELETE FROM host_calls WHERE created_at < {before}{where}", (ago, *params))
        if key is not None:
            k: tuple[Any, ...] = session_params(key)
            self._exec(
                "DELETE FROM host_calls WHERE tenant = ? AND project = ? AND session_id = ? AND id <= "
                "(SELECT id FROM host_calls WHERE tenant = ? AND project = ? AND session_id = ? "
                "ORDER BY id DESC LIMIT 1 OFFSET ?)", (*k, *k, HOST_CALLS_PER_SESSION))
