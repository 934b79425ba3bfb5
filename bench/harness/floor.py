"""The floor of each engine operation: the same rows written and read with raw sqlite3 statements."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import uuid
from pathlib import Path

from harness.database import ACTIVE_PROJECT, TENANT
from harness.texts import PoolText
from vlk_memact.fingerprint import FINGERPRINT_VERSION

_COLUMNS = """t.id, t.session_id, t.sequence_order, t.temporal_state, t.origin, t.created_at, t.content_id,
    c.raw_log, c.file_context, c.tool_payload, t.learning_summary, t.constraint_type, t.evidence, t.fingerprint,
    t.fingerprint_keys, t.fingerprint_version, t.retired_reason, t.retired_by, t.lessons, t.tenant, t.project,
    t.scope, t.fire_count, t.last_fired_at, t.uid"""
_FROM = " FROM agent_timeline t LEFT JOIN memory_contents c ON c.id = t.content_id "


class Floor:
    """The same rows written and read with raw sqlite3 statements, under the engine's durability settings."""

    def __init__(self, path: Path, project: str = ACTIVE_PROJECT) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=5)
        self.conn.execute("PRAGMA busy_timeout = 5000")
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = FULL")
        self.conn.execute("PRAGMA foreign_keys = ON")
        self.project = project

    def close(self) -> None:
        self.conn.close()

    def record(self, session: str, text: str, item: PoolText) -> int:
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        content_id = c.execute(
            "INSERT INTO memory_contents (raw_log, file_context, tool_payload, content_hash) VALUES (?, ?, ?, ?) "
            "RETURNING id",
            (text, None, None, hashlib.sha256(text.encode()).hexdigest()),
        ).fetchone()[0]
        slot_id = c.execute(
            """INSERT INTO agent_timeline (uid, tenant, project, session_id, sequence_order, temporal_state, origin,
                   content_id, fingerprint, fingerprint_keys, fingerprint_version)
               VALUES (?, ?, ?, ?, (SELECT COALESCE(MAX(sequence_order), 0) + 1 FROM agent_timeline
                                    WHERE tenant = ? AND project = ? AND session_id = ?),
                       'PRESENT', 'record', ?, ?, ?, ?) RETURNING id""",
            (uuid.uuid4().hex, TENANT, self.project, session, TENANT, self.project, session, content_id, item.key,
             json.dumps(list(item.keys)), FINGERPRINT_VERSION),
        ).fetchone()[0]
        c.execute("COMMIT")
        return slot_id

    def context_rows(self, session: str) -> int:
        """PRESENT slots of the session with their content, and the FUTURE constraints it sees."""
        c = self.conn
        c.execute("BEGIN")
        present = c.execute(
            "SELECT " + _COLUMNS + _FROM + "WHERE t.tenant = ? AND t.project = ? AND t.session_id = ? "
            "AND t.temporal_state = 'PRESENT' ORDER BY t.sequence_order",
            (TENANT, self.project, session),
        ).fetchall()
        # The same filter as the engine's, written so that each scope is searched on its own index (the OR
        # distributed: a MULTI-INDEX OR), which is the floor for reading these rows.
        constraints = c.execute(
            "SELECT " + _COLUMNS + _FROM + """WHERE
                (t.tenant = ? AND t.temporal_state = 'FUTURE' AND t.scope = 'global')
                OR (t.tenant = ? AND t.temporal_state = 'FUTURE' AND t.scope = 'project' AND t.project = ?)
                OR (t.tenant = ? AND t.project = ? AND t.session_id = ? AND t.temporal_state = 'FUTURE'
                    AND (t.scope = 'session' OR t.scope IS NULL)) ORDER BY t.id""",
            (TENANT, TENANT, self.project, TENANT, self.project, session),
        ).fetchall()
        c.execute("COMMIT")
        return len(present) + len(constraints)

    def time_travel(self, session: str, ids: list[int], lesson: str, evidence: str) -> int:
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        rows = c.execute(
            "SELECT t.id, t.fingerprint, t.fingerprint_keys FROM agent_timeline t WHERE t.tenant = ? AND t.project = ? "
            "AND t.session_id = ? AND t.id IN (SELECT value FROM json_each(?)) AND t.temporal_state = 'PRESENT'",
            (TENANT, self.project, session, json.dumps(ids)),
        ).fetchall()
        keys = list(dict.fromkeys(k for row in rows for k in json.loads(row[2] or "[]")))
        constraint_id = c.execute(
            """INSERT INTO agent_timeline (uid, tenant, project, session_id, sequence_order, temporal_state, origin,
                   scope, learning_summary, constraint_type, evidence, fingerprint, fingerprint_keys,
                   fingerprint_version)
               VALUES (?, ?, ?, ?, (SELECT COALESCE(MAX(sequence_order), 0) + 1 FROM agent_timeline
                                    WHERE tenant = ? AND project = ? AND session_id = ?),
                       'FUTURE', 'lesson', 'session', ?, 'DERIVED', ?, ?, ?, ?) RETURNING id""",
            (uuid.uuid4().hex, TENANT, self.project, session, TENANT, self.project, session, lesson, evidence,
             rows[-1][1] if rows else None, json.dumps(keys), FINGERPRINT_VERSION),
        ).fetchone()[0]
        c.executemany("INSERT OR IGNORE INTO constraint_keys (key, constraint_id) VALUES (?, ?)",
                      [(k, constraint_id) for k in keys])
        moved = c.execute(
            "UPDATE agent_timeline SET temporal_state = 'PAST', retired_reason = 'time_travel', retired_by = ? "
            "WHERE tenant = ? AND temporal_state = 'PRESENT' AND id IN (SELECT value FROM json_each(?)) RETURNING id",
            (constraint_id, TENANT, json.dumps(ids)),
        ).fetchall()
        c.executemany("INSERT OR IGNORE INTO constraint_links (constraint_id, source_id, relation) VALUES (?, ?, ?)",
                      [(constraint_id, r[0], "archived") for r in moved])
        c.execute("COMMIT")
        return constraint_id

    def search(self, session: str, query: str, limit: int = 20) -> int:
        c = self.conn
        c.execute("BEGIN")
        rows = c.execute(
            "SELECT " + _COLUMNS + _FROM + """WHERE t.tenant = ? AND t.project = ? AND t.session_id = ?
                AND instr(lower(COALESCE(c.raw_log, '') || ' ' || COALESCE(c.file_context, '') || ' ' ||
                    COALESCE(t.learning_summary, '') || ' ' || COALESCE(t.evidence, '')), ?) > 0
                ORDER BY t.sequence_order DESC LIMIT ?""",
            (TENANT, self.project, session, query.lower(), limit),
        ).fetchall()
        c.execute("COMMIT")
        return len(rows)

    def history(self, session: str, limit: int = 50) -> int:
        c = self.conn
        c.execute("BEGIN")
        rows = c.execute(
            "SELECT " + _COLUMNS + _FROM + "WHERE t.tenant = ? AND t.project = ? AND t.session_id = ? "
            "ORDER BY t.sequence_order DESC LIMIT ?",
            (TENANT, self.project, session, limit),
        ).fetchall()
        c.execute("COMMIT")
        return len(rows)

