"""Numbered, forward-only schema migrations for the SQLite store, recorded in PRAGMA user_version.

Version 0 is an empty file or a database written by the Rust prototype (spec §2.2); every step
runs in one transaction, so a failed upgrade leaves the file as it was.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable

from .interventions_schema import sqlite_interventions

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[Migration] = []
migration = MIGRATIONS.append


def content_hash(tenant: str, raw_log: str, file_context: str | None, tool_payload: str | None) -> str:
    """Identity of a content row: identical content of one tenant is stored once (never shared across tenants)."""
    blob = json.dumps([tenant, raw_log, file_context, tool_payload], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


@migration
def m001_prototype_schema(conn: sqlite3.Connection) -> None:
    """The Rust prototype's tables as it created them, so both empty and prototype files start here."""
    conn.execute(
        """CREATE TABLE IF NOT EXISTS memory_contents (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            raw_log TEXT NOT NULL,
            file_context TEXT,
            tool_payload TEXT)"""
    )
    conn.execute(
        """CREATE TABLE IF NOT EXISTS agent_timeline (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            content_id INTEGER,
            session_id TEXT NOT NULL,
            sequence_order INTEGER NOT NULL,
            temporal_state TEXT CHECK(temporal_state IN ('PRESENT','PAST','FUTURE')),
            learning_summary TEXT,
            created_at DATETIME DEFAULT CURRENT_TIMESTAMP,
            FOREIGN KEY(content_id) REFERENCES memory_contents(id))"""
    )
    columns = {row[1] for row in conn.execute("PRAGMA table_info(agent_timeline)")}
    if "constraint_type" not in columns:  # pre-v0.5 prototype files
        conn.execute(
            "ALTER TABLE agent_timeline ADD COLUMN constraint_type TEXT "
            "CHECK(constraint_type IS NULL OR constraint_type IN ('DERIVED','PROSPECTIVE'))"
        )


@migration
def m002_vlk_memact_schema(conn: sqlite3.Connection) -> None:
    """Content dedup, unique per-session sequences, evidence, fingerprints, provenance links."""
    # Content: add its hash, fold duplicates onto the oldest row, then make the hash unique.
    conn.execute("ALTER TABLE memory_contents ADD COLUMN content_hash TEXT")
    keep: dict[str, int] = {}
    remap: dict[int, int] = {}
    for cid, raw, ctx, payload in conn.execute(
        "SELECT id, raw_log, file_context, tool_payload FROM memory_contents ORDER BY id"
    ).fetchall():
        digest = content_hash("local", raw, ctx, payload)
        if digest in keep:
            remap[cid] = keep[digest]
        else:
            keep[digest] = cid
            conn.execute("UPDATE memory_contents SET content_hash = ? WHERE id = ?", (digest, cid))
    for duplicate, original in remap.items():
        conn.execute("UPDATE agent_timeline SET content_id = ? WHERE content_id = ?", (original, duplicate))
        conn.execute("DELETE FROM memory_contents WHERE id = ?", (duplicate,))
    conn.execute("CREATE UNIQUE INDEX idx_contents_hash ON memory_contents(content_hash)")

    # Timeline: rebuilt so the state is NOT NULL and (session, sequence) UNIQUE (defects 20, 21).
    # Prototype files may hold duplicate sequence numbers; renumbering keeps their order.
    conn.execute(
        """CREATE TABLE agent_timeline_v2 (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            content_id INTEGER REFERENCES memory_contents(id),
            session_id TEXT NOT NULL,
            sequence_order INTEGER NOT NULL,
            temporal_state TEXT NOT NULL CHECK(temporal_state IN ('PRESENT','PAST','FUTURE')),
            learning_summary TEXT,
            constraint_type TEXT CHECK(constraint_type IS NULL OR constraint_type IN ('DERIVED','PROSPECTIVE')),
            created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
            origin TEXT NOT NULL CHECK(origin IN ('record','lesson','anchor','consolidated')),
            evidence TEXT,
            fingerprint TEXT,
            fingerprint_keys TEXT,
            fingerprint_version INTEGER,
            retired_reason TEXT CHECK(retired_reason IS NULL OR
                retired_reason IN ('time_travel','loop','revoked','consolidated')),
            retired_by INTEGER REFERENCES agent_timeline(id),
            lessons TEXT,
            UNIQUE(session_id, sequence_order))"""
    )
    conn.execute(
        """INSERT INTO agent_timeline_v2 (id, content_id, session_id, sequence_order, temporal_state,
               learning_summary, constraint_type, created_at, origin)
           SELECT id, content_id, session_id,
                  ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY sequence_order, id),
                  COALESCE(temporal_state, 'PAST'), learning_summary, constraint_type,
                  COALESCE(created_at, CURRENT_TIMESTAMP),
                  CASE WHEN content_id IS NOT NULL THEN 'record'
                       WHEN learning_summary LIKE '[SYSTEM ANCHOR]%' THEN 'anchor'
                       WHEN learning_summary LIKE '[CONSOLIDATED CONSTRAINTS%' THEN 'consolidated'
                       ELSE 'lesson' END
           FROM agent_timeline"""
    )
    conn.execute("DROP TABLE agent_timeline")
    conn.execute("ALTER TABLE agent_timeline_v2 RENAME TO agent_timeline")
    conn.execute(
        "CREATE INDEX idx_timeline_active_context ON agent_timeline(session_id, temporal_state, sequence_order)"
    )
    conn.execute("CREATE INDEX idx_timeline_fingerprint ON agent_timeline(session_id, temporal_state, fingerprint)")
    conn.execute(
        """CREATE TABLE constraint_links (
            constraint_id INTEGER NOT NULL REFERENCES agent_timeline(id),
            source_id INTEGER NOT NULL REFERENCES agent_timeline(id),
            relation TEXT NOT NULL CHECK(relation IN ('archived','merged')),
            PRIMARY KEY(constraint_id, source_id))"""
    )
    conn.execute("CREATE INDEX idx_links_source ON constraint_links(source_id)")


@migration
def m003_scopes_projects_tenants(conn: sqlite3.Connection) -> None:
    """Constraints get a scope and fire counts; every row a tenant, a project and a portable uid.

    Rows written before this step belong to tenant 'local' and project 'default', and their
    constraints keep the session scope they had.
    """
    conn.execute(
        """CREATE TABLE agent_timeline_v3 (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            uid TEXT NOT NULL UNIQUE,
            content_id INTEGER REFERENCES memory_contents(id),
            tenant TEXT NOT NULL DEFAULT 'local',
            project TEXT NOT NULL DEFAULT 'default',
            session_id TEXT NOT NULL,
            sequence_order INTEGER NOT NULL,
            temporal_state TEXT NOT NULL CHECK(temporal_state IN ('PRESENT','PAST','FUTURE')),
            learning_summary TEXT,
            constraint_type TEXT CHECK(constraint_type IS NULL OR constraint_type IN ('DERIVED','PROSPECTIVE')),
            created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
            origin TEXT NOT NULL CHECK(origin IN ('record','lesson','anchor','consolidated')),
            scope TEXT CHECK(scope IS NULL OR scope IN ('session','project','global')),
            evidence TEXT,
            fingerprint TEXT,
            fingerprint_keys TEXT,
            fingerprint_version INTEGER,
            retired_reason TEXT CHECK(retired_reason IS NULL OR
                retired_reason IN ('time_travel','loop','revoked','consolidated')),
            retired_by INTEGER REFERENCES agent_timeline(id),
            lessons TEXT,
            fire_count INTEGER NOT NULL DEFAULT 0,
            last_fired_at TEXT,
            UNIQUE(tenant, project, session_id, sequence_order))"""
    )
    conn.execute(
        """INSERT INTO agent_timeline_v3 (id, uid, content_id, session_id, sequence_order, temporal_state,
               learning_summary, constraint_type, created_at, origin, scope, evidence, fingerprint,
               fingerprint_keys, fingerprint_version, retired_reason, retired_by, lessons)
           SELECT id, lower(hex(randomblob(16))), content_id, session_id, sequence_order, temporal_state, learning_summary, constraint_type,
                  created_at, origin, CASE WHEN origin = 'record' THEN NULL ELSE 'session' END, evidence,
                  fingerprint, fingerprint_keys, fingerprint_version, retired_reason, retired_by, lessons
           FROM agent_timeline"""
    )
    conn.execute("DROP TABLE agent_timeline")
    conn.execute("ALTER TABLE agent_timeline_v3 RENAME TO agent_timeline")
    conn.execute(
        "CREATE INDEX idx_timeline_active_context "
        "ON agent_timeline(tenant, project, session_id, temporal_state, sequence_order)"
    )
    conn.execute(
        "CREATE INDEX idx_timeline_fingerprint ON agent_timeline(tenant, project, session_id, temporal_state, fingerprint)"
    )
    conn.execute("CREATE INDEX idx_timeline_shared ON agent_timeline(tenant, temporal_state, scope, project)")
    conn.execute(
        """CREATE TABLE constraint_keys (
            key TEXT NOT NULL,
            constraint_id INTEGER NOT NULL REFERENCES agent_timeline(id),
            PRIMARY KEY(key, constraint_id)) WITHOUT ROWID"""
    )
    rows = conn.execute(
        "SELECT id, fingerprint_keys FROM agent_timeline WHERE origin != 'record' AND fingerprint_keys IS NOT NULL"
    ).fetchall()
    conn.executemany(
        "INSERT OR IGNORE INTO constraint_keys (key, constraint_id) VALUES (?, ?)",
        [(key, cid) for cid, keys in rows for key in json.loads(keys)],
    )


@migration
def m004_retention_indexes(conn: sqlite3.Connection) -> None:
    """Pruning deletes by content and by constraint: both need an index to stay off full scans."""
    conn.execute("CREATE INDEX idx_timeline_content ON agent_timeline(content_id)")
    conn.execute("CREATE INDEX idx_keys_constraint ON constraint_keys(constraint_id)")
    conn.execute("CREATE INDEX idx_timeline_retired_by ON agent_timeline(retired_by)")


@migration
def m005_host_calls(conn: sqlite3.Connection) -> None:
    """Host hooks: the calls they saw (guard, resolution, idempotent capture), what they injected per session,
    and 'resolved' as a reason to retire a slot (the timeline is rebuilt: SQLite cannot alter a CHECK)."""
    columns = [row[1] for row in conn.execute("PRAGMA table_info(agent_timeline)")]
    indexes = [row[0] for row in conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'agent_timeline' AND sql IS NOT NULL")]
    conn.execute(
        """CREATE TABLE agent_timeline_v5 (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            uid TEXT NOT NULL UNIQUE,
            content_id INTEGER REFERENCES memory_contents(id),
            tenant TEXT NOT NULL DEFAULT 'local',
            project TEXT NOT NULL DEFAULT 'default',
            session_id TEXT NOT NULL,
            sequence_order INTEGER NOT NULL,
            temporal_state TEXT NOT NULL CHECK(temporal_state IN ('PRESENT','PAST','FUTURE')),
            learning_summary TEXT,
            constraint_type TEXT CHECK(constraint_type IS NULL OR constraint_type IN ('DERIVED','PROSPECTIVE')),
            created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
            origin TEXT NOT NULL CHECK(origin IN ('record','lesson','anchor','consolidated')),
            scope TEXT CHECK(scope IS NULL OR scope IN ('session','project','global')),
            evidence TEXT,
            fingerprint TEXT,
            fingerprint_keys TEXT,
            fingerprint_version INTEGER,
            retired_reason TEXT CHECK(retired_reason IS NULL OR
                retired_reason IN ('time_travel','loop','revoked','consolidated','resolved')),
            retired_by INTEGER REFERENCES agent_timeline(id),
            lessons TEXT,
            fire_count INTEGER NOT NULL DEFAULT 0,
            last_fired_at TEXT,
            UNIQUE(tenant, project, session_id, sequence_order))"""
    )
    names = ", ".join(columns)
    conn.execute(f"INSERT INTO agent_timeline_v5 ({names}) SELECT {names} FROM agent_timeline")
    # Ids of pruned slots are never handed out again.
    sequence = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'agent_timeline'").fetchone()
    conn.execute("DROP TABLE agent_timeline")
    conn.execute("ALTER TABLE agent_timeline_v5 RENAME TO agent_timeline")
    if sequence is not None:
        conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'agent_timeline'", (sequence[0],))
    for index in indexes:
        conn.execute(index)
    conn.execute(
        """CREATE TABLE host_calls (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            tenant TEXT NOT NULL,
            project TEXT NOT NULL,
            session_id TEXT NOT NULL,
            tool_use_id TEXT,
            call_key TEXT NOT NULL,
            outcome TEXT NOT NULL CHECK(outcome IN ('failure','success')),
            changes_state INTEGER NOT NULL DEFAULT 0,
            slot_id INTEGER REFERENCES agent_timeline(id) ON DELETE SET NULL,
            claimed INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f','now')))"""
    )
    conn.execute("CREATE UNIQUE INDEX idx_host_calls_use ON host_calls(tenant, project, session_id, tool_use_id)")
    conn.execute("CREATE INDEX idx_host_calls_key ON host_calls(tenant, project, session_id, call_key, id)")
    conn.execute("CREATE INDEX idx_host_calls_session ON host_calls(tenant, project, session_id, id)")
    conn.execute("CREATE INDEX idx_host_calls_slot ON host_calls(slot_id)")
    conn.execute(
        """CREATE TABLE host_sessions (
            tenant TEXT NOT NULL,
            project TEXT NOT NULL,
            session_id TEXT NOT NULL,
            injected TEXT NOT NULL DEFAULT '[]',
            updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f','now')),
            PRIMARY KEY(tenant, project, session_id)) WITHOUT ROWID"""
    )


@migration
def m006_host_call_steps(conn: sqlite3.Connection) -> None:
    """A host call's tool, target (file or program) and compact summary: what fix memory names as a step and
    what tells a changed version of a call, or a read of the file an edit failed on, from another call."""
    for column in ("tool", "target", "summary"):
        conn.execute(f"ALTER TABLE host_calls ADD COLUMN {column} TEXT")
    conn.execute("CREATE INDEX idx_host_calls_target ON host_calls(tenant, project, session_id, target, id)")



@migration
def m007_fixes(conn: sqlite3.Connection) -> None:
    """Fix memory: what resolved an error in a session (the steps that ran between its last failure and the
    success), keyed on the error's fingerprint keys so a later session meeting the error is told."""
    conn.execute(
        """CREATE TABLE fixes (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            uid TEXT NOT NULL UNIQUE,
            tenant TEXT NOT NULL,
            project TEXT NOT NULL,
            session_id TEXT NOT NULL,
            kind TEXT NOT NULL CHECK(kind IN ('fix','retry')),
            fingerprint TEXT,
            fingerprint_keys TEXT NOT NULL DEFAULT '[]',
            error TEXT NOT NULL,
            failed TEXT NOT NULL,
            passed TEXT NOT NULL,
            steps TEXT NOT NULL DEFAULT '[]',
            left_out INTEGER NOT NULL DEFAULT 0,
            slot_uids TEXT NOT NULL DEFAULT '[]',
            scope TEXT NOT NULL DEFAULT 'project' CHECK(scope IN ('project','global')),
            demoted INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f','now')))"""
    )
    conn.execute("CREATE INDEX idx_fixes_project ON fixes(tenant, project, session_id, id)")
    conn.execute(
        """CREATE TABLE fix_keys (
            tenant TEXT NOT NULL,
            key TEXT NOT NULL,
            fix_id INTEGER NOT NULL REFERENCES fixes(id) ON DELETE CASCADE,
            PRIMARY KEY(tenant, key, fix_id)) WITHOUT ROWID"""
    )
    conn.execute("CREATE INDEX idx_fix_keys_fix ON fix_keys(fix_id)")


@migration
def m008_learned(conn: sqlite3.Connection) -> None:
    """What `vlk-memact learn` read from the hosts' past sessions: each source (a session file, or a session of
    a host's database) as it was when read in full, and each event fed, so that nothing is learned twice."""
    conn.execute(
        """CREATE TABLE learned_sources (
            tenant TEXT NOT NULL,
            source TEXT NOT NULL,
            host TEXT NOT NULL,
            session_id TEXT NOT NULL,
            project TEXT NOT NULL,
            stamp TEXT NOT NULL,
            events INTEGER NOT NULL DEFAULT 0,
            learned_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f','now')),
            PRIMARY KEY(tenant, source)) WITHOUT ROWID"""
    )
    conn.execute(
        """CREATE TABLE learned_events (
            tenant TEXT NOT NULL,
            project TEXT NOT NULL,
            event_id TEXT NOT NULL,
            PRIMARY KEY(tenant, project, event_id)) WITHOUT ROWID"""
    )


@migration
def m009_session_host(conn: sqlite3.Connection) -> None:
    """Which host's hooks wrote a session (claude-code, gemini, opencode, codex): `vlk-memact sessions` shows it.
    NULL for older rows and for sessions no hook wrote (the MCP tools, the command line)."""
    conn.execute("ALTER TABLE host_calls ADD COLUMN host TEXT")
    conn.execute("ALTER TABLE host_sessions ADD COLUMN host TEXT")


@migration
def m010_fingerprint_keys_version(conn: sqlite3.Connection) -> None:
    """The fingerprint version the stored keys are of (3: every earlier release), so that the engine keys
    lessons and fixes again when the algorithm changed (store/rekey.py); fixes record their own version."""
    conn.execute("CREATE TABLE fingerprint_keys_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO fingerprint_keys_version (version) VALUES (3)")
    conn.execute("ALTER TABLE fixes ADD COLUMN fingerprint_version INTEGER")


@migration
def m011_project_merges(conn: sqlite3.Connection) -> None:
    """Each path key merged into its repository's key (store/projects.py): a project is its repository."""
    conn.execute(
        """CREATE TABLE project_merges (
            path TEXT PRIMARY KEY,
            project TEXT NOT NULL,
            moved INTEGER NOT NULL DEFAULT 0,
            merged_at TEXT NOT NULL) WITHOUT ROWID"""
    )


migration(sqlite_interventions)  # what the memory said to agents (issue 33)


@migration
def m013_project_fingerprint(conn: sqlite3.Connection) -> None:
    """A failure's earlier sessions (the failure note, issue 34) are found by the project's fingerprint: the
    session-led index made that read walk every slot of the project."""
    conn.execute("CREATE INDEX idx_timeline_project_fingerprint ON agent_timeline(tenant, project, fingerprint, id)")

SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection) -> int:
    """Apply every step above the file's user_version; return the version reached."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise sqlite3.DatabaseError(
            f"database schema version {version} is newer than this vlk-memact ({SCHEMA_VERSION}); upgrade vlk-memact"
        )
    if version == SCHEMA_VERSION:
        return version
    # Table rebuilds need foreign keys off; the switch is ignored inside a transaction.
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        for number in range(version, SCHEMA_VERSION):
            conn.execute("BEGIN IMMEDIATE")
            try:
                # Another process may have migrated while we waited for the lock.
                current = conn.execute("PRAGMA user_version").fetchone()[0]
                if current > number:
                    conn.execute("COMMIT")
                    continue
                MIGRATIONS[number](conn)
                problems = conn.execute("PRAGMA foreign_key_check").fetchall()
                if problems:
                    raise sqlite3.IntegrityError(f"migration {number + 1} left dangling references: {problems[:5]}")
                conn.execute(f"PRAGMA user_version = {number + 1}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
    finally:
        conn.execute("PRAGMA foreign_keys = ON")
    return SCHEMA_VERSION
