"""What `vlk-memact learn` keeps about what it read, in a transaction, alike in both stores.

A source is one past session as a host keeps it (a session file, or one session of a host's database); its
row says how the source looked when it was read in full (its stamp: size and modification time, or the
host's update time), so that an unchanged source is skipped without being read again. Each event fed to
the hooks' handlers is kept by id per project, in the same transaction as what the event changed: a second
run, a session that grew (resumed) or a copy of a session in another file feeds only what is new, and an
interrupted run resumes after the last event it committed. Written once over store/dialect.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.model import SessionKey
from .dialect import SqlDialect, session_params

IDS_PER_STATEMENT = 500  # event ids looked up or inserted per statement


@dataclass(frozen=True)
class LearnedSource:
    """One source as learn last read it in full."""

    source: str  # a session file's path, or '<database path>#<session id>'
    host: str
    session_id: str
    project: str
    stamp: str  # how the source looked then; '' while one of its calls was still open (read it again)
    events: int  # events fed from it so far


class Learned(SqlDialect):
    """The Transaction protocol's learn records (see store/__init__.py for what each does)."""

    def learned_source(self, tenant: str, source: str) -> LearnedSource | None:
        rows = self._rows("SELECT source, host, session_id, project, stamp, events FROM learned_sources "
                          "WHERE tenant = ? AND source = ?", (tenant, source))
        return LearnedSource(*rows[0]) if rows else None

    def save_learned_source(self, tenant: str, learned: LearnedSource) -> None:
        self._exec(
            "INSERT INTO learned_sources (tenant, source, host, session_id, project, stamp, events) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, source) DO UPDATE SET host = excluded.host, "
            "session_id = excluded.session_id, project = excluded.project, stamp = excluded.stamp, "
            f"events = excluded.events, learned_at = {self._NOW_SQL}",
            (tenant, learned.source, learned.host, learned.session_id, learned.project, learned.stamp,
             learned.events),
        )

    def learned_events(self, tenant: str, project: str, event_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        unique = list(dict.fromkeys(event_ids))
        for start in range(0, len(unique), IDS_PER_STATEMENT):
            among, listed = self._in_texts(unique[start : start + IDS_PER_STATEMENT])
            found.update(r[0] for r in self._rows(
                "SELECT event_id FROM learned_events WHERE tenant = ? AND project = ? AND event_id" + among,
                (tenant, project, listed)))
        return found

    def add_learned_events(self, tenant: str, project: str, event_ids: Sequence[str]) -> None:
        for event_id in dict.fromkeys(event_ids):
            self._exec("INSERT INTO learned_events (tenant, project, event_id) VALUES (?, ?, ?) "
                       "ON CONFLICT DO NOTHING", (tenant, project, event_id))

    def stored_calls(self, key: SessionKey, tool_use_ids: Sequence[str], outcome: str) -> set[str]:
        found: set[str] = set()
        unique = list(dict.fromkeys(tool_use_ids))
        for start in range(0, len(unique), IDS_PER_STATEMENT):
            among, listed = self._in_texts(unique[start : start + IDS_PER_STATEMENT])
            found.update(r[0] for r in self._rows(
                "SELECT tool_use_id FROM host_calls WHERE tenant = ? AND project = ? AND session_id = ? "
                "AND outcome = ? AND tool_use_id" + among, (*session_params(key), outcome, listed)))
        return found

    def session_tally(self, key: SessionKey) -> tuple[int, int]:
        rows = self._rows(
            "SELECT (SELECT COUNT(*) FROM agent_timeline WHERE tenant = ? AND project = ? AND session_id = ? "
            "AND origin = 'anchor'), (SELECT COUNT(*) FROM fixes WHERE tenant = ? AND project = ? AND "
            "session_id = ? AND kind = 'fix')", (*session_params(key), *session_params(key)))
        return int(rows[0][0]), int(rows[0][1])
