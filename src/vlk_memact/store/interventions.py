"""Interventions in a transaction, alike in both stores: keep one, read a tenant's, export, import, prune.

Written once over store/dialect.py (see there); every read names its tenant, so one tenant never sees
another's (tenant isolation), and retention drops them at the age it drops hook call records.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

from ..core.interventions import Intervention, NewIntervention
from ..core.model import SessionKey
from .dialect import SqlDialect, equalities
from .rows import HOST_CALLS_PER_SESSION

_FIELDS = ("uid", "tenant", "project", "session_id", "kind", "chars", "tool_use_id", "call_key", "tool", "target",
           "subject", "detail", "data", "host", "created_at")
_SELECT = "SELECT id, " + ", ".join(_FIELDS) + " FROM interventions"
_INSERT = ("INSERT INTO interventions (" + ", ".join(_FIELDS) + ") VALUES (" + ", ".join("?" * (len(_FIELDS) - 1))
           + ", COALESCE(?, {now})) ON CONFLICT (uid) DO NOTHING")


def _from_row(row: tuple[Any, ...]) -> Intervention:
    values = dict(zip(("id", *_FIELDS), row, strict=True))
    try:
        data = json.loads(values["data"] or "{}")
    except ValueError:
        data = {}
    values["data"] = data if isinstance(data, dict) else {}
    return Intervention(**values)


class Interventions(SqlDialect):
    """The Transaction protocol's intervention operations (see store/__init__.py)."""

    def add_intervention(self, new: NewIntervention) -> None:
        key = new.key
        self._exec(_INSERT.format(now=self._NOW), (
            uuid.uuid4().hex, key.tenant, key.project, key.session, new.kind, new.chars, new.tool_use_id,
            new.call_key, new.tool, new.target, new.subject, new.detail,
            json.dumps(new.data, ensure_ascii=False, sort_keys=True), new.host, new.at))

    def interventions(self, tenant: str, project: str | None, since: str | None = None,
                      session: str | None = None, limit: int = 100_000) -> list[Intervention]:
        where, params = equalities("", (("tenant", tenant), ("project", project), ("session_id", session)))
        if since:
            where += " AND created_at >= ?"
            params.append(since)
        rows = self._rows(f"{_SELECT} WHERE {where} ORDER BY id LIMIT ?", (*params, limit))
        return [_from_row(r) for r in rows]

    def session_intervened(self, key: SessionKey, kind: str, subject: str) -> bool:
        """Whether the session already holds an intervention of this kind naming this subject."""
        return bool(self._rows(
            "SELECT 1 FROM interventions WHERE tenant = ? AND project = ? AND session_id = ? AND kind = ? "
            "AND subject = ? LIMIT 1", (key.tenant, key.project, key.session, kind, subject)))

    def _dump_interventions(self, tenant: str | None, project: str | None,
                            session: str | None) -> Iterator[dict[str, Any]]:
        where, params = equalities("", (("tenant", tenant), ("project", project), ("session_id", session)))
        for row in self._stream(f"{_SELECT}" + (f" WHERE {where}" if where else "") + " ORDER BY id", params):
            record = dict(zip(_FIELDS, row[1:], strict=True), type="intervention")
            record["data"] = json.loads(record["data"] or "{}")
            yield record

    def _load_intervention(self, record: dict[str, Any]) -> bool:
        missing = [f for f in ("uid", "tenant", "project", "session_id", "kind") if not record.get(f)]
        if missing:
            raise ValueError(f"intervention record lacks {', '.join(missing)}")
        data = dict(record.get("data") or {})
        if isinstance(record.get("outcome"), dict):  # what followed, as computed where it was exported
            data["outcome"] = record["outcome"]
        return self._count(_INSERT.format(now=self._NOW), (
            *(record.get(f) for f in _FIELDS[:5]), int(record.get("chars") or 0),
            *(record.get(f) for f in _FIELDS[6:12]),
            json.dumps(data, ensure_ascii=False, sort_keys=True), record.get("host"), record.get("created_at"))) == 1

    def _prune_interventions(self, key: SessionKey | None, max_age_days: int) -> None:
        """Interventions older than the retention age (of one session, or of every session), and beyond the
        newest few thousand of a session (a session that loops for days says something on every failure)."""
        before, ago = self._days_ago(max_age_days)
        where, params = ("", ()) if key is None else (" AND tenant = ? AND project = ? AND session_id = ?",
                                                      (key.tenant, key.project, key.session))
        self._exec(f"DELETE FROM interventions WHERE created_at < {before}{where}", (ago, *params))
        if key is not None:
            k = (key.tenant, key.project, key.session)
            self._exec(
                "DELETE FROM interventions WHERE tenant = ? AND project = ? AND session_id = ? AND id <= "
                "(SELECT id FROM interventions WHERE tenant = ? AND project = ? AND session_id = ? "
                "ORDER BY id DESC LIMIT 1 OFFSET ?)", (*k, *k, HOST_CALLS_PER_SESSION))
