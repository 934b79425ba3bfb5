"""SqliteStore: the embedded default, on the stdlib sqlite3 module.

One connection per store, shared by the SDK's worker threads behind a lock (spec-independent
pitfall: sqlite3 objects are thread-bound by default). WAL, a busy timeout and BEGIN IMMEDIATE
make several processes on one file safe; a UNIQUE index keeps sequence numbers unique.
"""

from __future__ import annotations

import json
import logging
import random
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote

from ..errors import ConfigError, DatabaseCorrupt, DatabaseIOError, ReadOnlyDatabase, StoreError
from ..model import HostCall, NewHostCall, NewSlot, Retired, SessionKey, Slot, TemporalState
from .rows import (
    HOST_CALL_COLUMNS,
    HOST_CALLS_PER_SESSION,
    host_call_from_row,
    slot_from_row,
)
from .sqlite_browse import _SELECT, _SEPARATOR, SqliteBrowse  # one slot SELECT, one separator
from .sqlite_fixes import SqliteFixes
from .sqlite_errors import is_read_only_url, lock_timeout_error, path_of, sqlite_error
from .sqlite_schema import content_hash, migrate

log = logging.getLogger(__name__)

MEMORY = ":memory:"
LOCK_RETRY_SECONDS = 30.0  # total time a writer keeps retrying a locked database before giving up
_SLOT_FIELDS = ("uid", "tenant", "project", "session_id", "sequence_order", "temporal_state", "origin", "scope",
                "content_hash", "learning_summary", "constraint_type", "created_at", "evidence", "fingerprint",
                "fingerprint_keys", "fingerprint_version", "retired_reason", "lessons", "fire_count", "last_fired_at")
_PRUNE_CHUNK = 500

_SESSION = " t.tenant = ? AND t.project = ? AND t.session_id = ? "
# What a session sees: its own constraints, its project's, and the tenant's global ones. One branch per
# scope, each with a full index prefix, so SQLite answers it with a multi-index OR instead of reading
# every FUTURE row of the tenant.
_VISIBLE = """ ((t.tenant = ? AND t.temporal_state = 'FUTURE' AND t.scope = 'global')
    OR (t.tenant = ? AND t.temporal_state = 'FUTURE' AND t.scope = 'project' AND t.project = ?)
    OR (t.tenant = ? AND t.project = ? AND t.session_id = ? AND t.temporal_state = 'FUTURE'
        AND (t.scope = 'session' OR t.scope IS NULL))) """


def _key(key: SessionKey) -> tuple[str, str, str]:
    return (key.tenant, key.project, key.session)


def _visible(key: SessionKey) -> tuple[str, ...]:
    return (key.tenant, key.tenant, key.project, key.tenant, key.project, key.session)


def default_path() -> Path:
    """A file in the user's data directory, never the working directory (fixes defect 18)."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("vlk-memact", appauthor=False)) / "vlk.db"


def sqlite_target(url: str | None, create_dirs: bool = True) -> str:
    """Turn a DATABASE_URL into a SQLite URI filename (or ':memory:'); create_dirs makes the file's folder."""
    if url is None:
        path = default_path()
        if create_dirs:
            _make_folder(path.parent)
        return "file:" + quote(str(path)) + "?mode=rwc"
    rest = url[len("sqlite:") :]
    if rest in (MEMORY, "//" + MEMORY, "///" + MEMORY):
        return MEMORY
    if rest.startswith("//"):
        rest = rest[2:]  # sqlite:///abs/path -> /abs/path ; sqlite://rel/path -> rel/path
    path_part, _, query = rest.partition("?")
    if not path_part:
        raise ConfigError(f"DATABASE_URL {url!r} names no file; use sqlite:PATH or sqlite::memory:.")
    params = dict(parse_qsl(query))
    mode = params.get("mode", "rwc")
    if mode not in ("ro", "rw", "rwc"):
        raise ConfigError(f"DATABASE_URL mode must be ro, rw or rwc, got {mode!r}.")
    path = Path(path_part).expanduser().resolve()
    if mode == "rwc" and create_dirs:
        _make_folder(path.parent)
    return "file:" + quote(str(path)) + f"?mode={mode}"


def _make_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatabaseIOError(
            f"Cannot create the folder {folder} for the database ({exc.strerror}); create it writable by this "
            "user, or point DATABASE_URL at another place."
        ) from exc


_HOST_CALL = (f"SELECT {HOST_CALL_COLUMNS} FROM host_calls "
              "WHERE tenant = ? AND project = ? AND session_id = ?")


def _fold(text: str | None) -> str | None:
    return None if text is None else text.casefold()


class SqliteStore:
    """The Store protocol over one SQLite file.

    Faults of the environment (a full disk, a read-only or damaged file, a stuck writer) leave the
    store as typed StoreErrors (store/sqlite_errors.py) with every failed transaction rolled back.
    After an error that a new connection could cure (the file made writable again, a damaged file
    restored from a backup or moved aside), the next call opens the file afresh: the process works
    again once the fault is gone, without a restart.
    """

    def __init__(self, target: str, busy_timeout_ms: int = 5000, lock_wait_ms: int | None = None) -> None:
        self.url = target
        self._busy_timeout_ms = busy_timeout_ms
        self._lock_wait = LOCK_RETRY_SECONDS if lock_wait_ms is None else lock_wait_ms / 1000
        self._lock = threading.RLock()  # the writing connection (and everything, for :memory:)
        self._read_lock = threading.Lock()  # the reading connection of a file: reads never queue behind a write
        self._stale = False  # the connection met an error that reopening the file may cure
        self._reader_stale = False
        self._read_only = False  # writes were refused: every write reopens first, to see a chmod at once
        self._reader: sqlite3.Connection | None = None  # opened at the first read
        self._reader_immutable = False
        self._opened_immutable = False
        self._trace: Callable[[str], object] | None = None
        self._conn = self._connect(writable=target != MEMORY and not is_read_only_url(target))
        log.info("SQLite store ready at %s", target)

    def _connect(self, writable: bool) -> sqlite3.Connection:
        self._opened_immutable = False
        try:
            return self._open(self.url, writable=writable)
        except sqlite3.Error as exc:
            error = sqlite_error(exc, self.url, "open")
            path = path_of(self.url)
            # SQLite cannot read a WAL database in a directory it may not write to unless the -wal file
            # exists; without one nothing can be writing to it, so an immutable view is safe and reads work.
            if isinstance(error, ReadOnlyDatabase) and path and not Path(path + "-wal").exists():
                try:
                    conn = self._open("file:" + quote(path) + "?mode=ro&immutable=1", writable=False)
                except sqlite3.Error:
                    raise error from exc
                if writable:
                    log.warning("%s Serving reads only until then.", error)
                    self._read_only = True
                self._opened_immutable = True
                return conn
            raise error from exc

    def _open(self, target: str, writable: bool) -> sqlite3.Connection:
        conn = sqlite3.connect(
            target,
            uri=target != MEMORY,
            check_same_thread=False,
            isolation_level=None,  # we issue BEGIN / COMMIT ourselves
            timeout=self._busy_timeout_ms / 1000,
        )
        try:
            conn.set_trace_callback(self._trace)
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            if writable:
                mode = self._with_lock_retry(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
                if mode.lower() != "wal":
                    raise StoreError(f"could not switch {target} to WAL journaling (got {mode!r})")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.create_function("vlk_fold", 1, _fold, deterministic=True)
            if writable or target == MEMORY:
                self._with_lock_retry(lambda: migrate(conn))
            else:
                conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # fail here, not at the first read
            return conn
        except BaseException:
            conn.close()
            raise

    def _connection(self, writing: bool = False) -> sqlite3.Connection:
        """The open connection, reopened first if the last one met a fault a new one may not have."""
        if self._stale or (writing and self._read_only):
            self._stale = True  # until a new connection is open: the old one is closed now
            self._conn.close()
            if writing:  # a write is the only way to learn that writing works again
                self._read_only = False
            self._conn = self._connect(writable=not is_read_only_url(self.url))  # raises while the fault lasts
            self._stale = False
            log.info("Reopened the SQLite database %s after an earlier error", self.url)
        return self._conn

    # ---- transactions ----

    @contextmanager
    def write(self) -> Iterator[_SqliteTx]:
        with self._lock:
            conn = self._connection(writing=True)
            self._begin(conn, "BEGIN IMMEDIATE", "write")
            yield from self._run(conn, "write")

    @contextmanager
    def read(self) -> Iterator[_SqliteTx]:
        if self.url == MEMORY:  # one in-memory database per connection: share the writer's
            with self._lock:
                conn = self._connection()
                self._begin(conn, "BEGIN", "read")
                yield from self._run(conn, "read")
            return
        with self._read_lock:
            conn = self._reading_connection()
            self._begin(conn, "BEGIN", "read")
            yield from self._run(conn, "read")

    def _reading_connection(self) -> sqlite3.Connection:
        """A connection of its own for reads (WAL readers never wait for a writer), reopened after a fault."""
        # An immutable view (see _connect) sees no later change: it is reopened for every read until the
        # directory is writable again and a normal connection works.
        if self._reader is None or self._reader_stale or self._reader_immutable:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
            self._reader = self._connect(writable=False)
            self._reader_immutable = self._opened_immutable
            self._reader_stale = False
        return self._reader

    def _begin(self, conn: sqlite3.Connection, begin: str, doing: str) -> None:
        try:
            self._with_lock_retry(lambda: conn.execute(begin))
        except sqlite3.Error as exc:
            raise self._fault(exc, doing) from exc

    @contextmanager
    def dry_run(self) -> Iterator[_SqliteTx]:
        """BEGIN IMMEDIATE then ROLLBACK: AUTOINCREMENT counters live in sqlite_sequence, rolled back too."""
        with self._lock:
            conn = self._connection(writing=True)
            self._begin(conn, "BEGIN IMMEDIATE", "write")
            yield from self._run(conn, "write", commit=False)

    def _run(self, conn: sqlite3.Connection, doing: str, commit: bool = True) -> Iterator[_SqliteTx]:
        try:
            yield _SqliteTx(conn)
        except sqlite3.Error as exc:
            _rollback(conn)
            raise self._fault(exc, doing) from exc
        except BaseException:
            _rollback(conn)
            raise
        if not commit:
            _rollback(conn)
            return
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            _rollback(conn)
            raise self._fault(exc, doing) from exc

    def _fault(self, exc: sqlite3.Error, doing: str) -> StoreError:
        """The typed error for exc; mark the connection for reopening when a fresh one may fare better."""
        error = sqlite_error(exc, self.url, doing)
        if self.url != MEMORY and isinstance(error, REOPEN_AFTER):
            self._stale = self._reader_stale = True
        if isinstance(error, ReadOnlyDatabase) and not is_read_only_url(self.url):
            self._read_only = True
        log.warning("%s", error)
        return error

    def _with_lock_retry(self, action):  # type: ignore[no-untyped-def]
        """Retry an action the busy timeout could not get through, with jittered backoff, up to the lock wait."""
        started = time.monotonic()
        deadline = started + self._lock_wait
        delay = 0.01
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                message = str(exc).lower()
                if "locked" not in message and "busy" not in message:
                    raise
                if time.monotonic() > deadline:
                    error = lock_timeout_error(self.url, time.monotonic() - started)
                    log.warning("%s", error)
                    raise error from exc
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 0.5)

    def optimize(self, vacuum: bool) -> None:
        with self._lock:
            conn = self._connection()
            try:
                if vacuum:
                    self._with_lock_retry(lambda: conn.execute("VACUUM"))
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                conn.execute("PRAGMA optimize")
            except sqlite3.Error as exc:
                raise self._fault(exc, "write") from exc

    def set_trace_callback(self, trace: Callable[[str], object] | None) -> None:
        """Call trace(sql) for every statement of every connection of this store (None stops it): a debugger."""
        with self._lock, self._read_lock:
            self._trace = trace
            for conn in (self._conn, self._reader):
                if conn is not None:
                    conn.set_trace_callback(trace)

    def close(self) -> None:
        with self._lock, self._read_lock:
            self._conn.close()
            if self._reader is not None:
                self._reader.close()


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back if a transaction is still open: SQLite ends it by itself after a full disk or an I/O error."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error as exc:  # the original error is the one worth reporting
            log.warning("ROLLBACK failed after an error: %s", exc)


# Errors after which the connection is reopened at the next call: its file handle may be the problem
# (opened read-only, a damaged file since restored or moved aside, a failed disk write).
REOPEN_AFTER = (ReadOnlyDatabase, DatabaseCorrupt, DatabaseIOError)


class _SqliteTx(SqliteBrowse, SqliteFixes):
    """The Transaction protocol on an open SQLite transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def change_stamp(self) -> tuple[Any, int, int]:
        """Equal across two transactions only if nothing was committed in between: PRAGMA data_version moves
        with any other connection's commit, total_changes with this connection's writes (context_cache.py)."""
        return self._conn, self._conn.execute("PRAGMA data_version").fetchone()[0], self._conn.total_changes

    def add_content(self, tenant: str, raw_log: str, file_context: str | None, tool_payload: str | None) -> int:
        digest = content_hash(tenant, raw_log, file_context, tool_payload)
        row = self._conn.execute(
            "INSERT INTO memory_contents (raw_log, file_context, tool_payload, content_hash) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(content_hash) DO NOTHING RETURNING id",
            (raw_log, file_context, tool_payload, digest),
        ).fetchone()
        if row is None:
            row = self._conn.execute("SELECT id FROM memory_contents WHERE content_hash = ?", (digest,)).fetchone()
        return int(row[0])

    def insert_slot(self, slot: NewSlot) -> Slot:
        k = slot.key
        row = self._conn.execute(
            """INSERT INTO agent_timeline (uid, tenant, project, session_id, sequence_order, temporal_state, origin,
                   scope, content_id, learning_summary, constraint_type, evidence, fingerprint, fingerprint_keys,
                   fingerprint_version, lessons)
               VALUES (?, ?, ?, ?, (SELECT COALESCE(MAX(sequence_order), 0) + 1 FROM agent_timeline
                                    WHERE tenant = ? AND project = ? AND session_id = ?),
                       ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
               RETURNING id""",
            (
                uuid.uuid4().hex,
                *_key(k),
                *_key(k),
                slot.temporal_state.value,
                slot.origin.value,
                slot.scope.value if slot.scope else None,
                slot.content_id,
                slot.learning_summary,
                slot.constraint_type.value if slot.constraint_type else None,
                slot.evidence,
                slot.fingerprint,
                json.dumps(list(slot.fingerprint_keys), ensure_ascii=False) if slot.fingerprint_keys else None,
                slot.fingerprint_version,
                json.dumps(list(slot.lessons), ensure_ascii=False) if slot.lessons else None,
            ),
        ).fetchone()
        if slot.temporal_state is TemporalState.FUTURE and slot.fingerprint_keys:
            self._conn.executemany(
                "INSERT OR IGNORE INTO constraint_keys (key, constraint_id) VALUES (?, ?)",
                [(fk, row[0]) for fk in slot.fingerprint_keys],
            )
        return slot_from_row(self._conn.execute(_SELECT + " WHERE t.id = ?", (row[0],)).fetchone())

    def slots(self, key: SessionKey, state: TemporalState) -> list[Slot]:
        rows = self._conn.execute(
            _SELECT + " WHERE" + _SESSION + "AND t.temporal_state = ? ORDER BY t.sequence_order",
            (*_key(key), state.value),
        )
        return [slot_from_row(r) for r in rows]

    def slots_by_id(self, key: SessionKey, ids: Sequence[int]) -> list[Slot]:
        rows = self._conn.execute(
            _SELECT + " WHERE" + _SESSION + "AND t.id IN (SELECT value FROM json_each(?)) ORDER BY t.sequence_order",
            (*_key(key), json.dumps(list(ids))),
        )
        return [slot_from_row(r) for r in rows]

    def visible_constraints(self, key: SessionKey) -> list[Slot]:
        rows = self._conn.execute(_SELECT + " WHERE" + _VISIBLE + "ORDER BY t.id", _visible(key))
        return [slot_from_row(r) for r in rows]

    def constraints_matching(self, key: SessionKey, fingerprint_keys: Sequence[str]) -> list[Slot]:
        # The visible constraints drive (a handful of rows through the multi-index OR); a generic key may be
        # shared by thousands of constraints in other projects, so the key index only answers EXISTS.
        rows = self._conn.execute(
            _SELECT + " WHERE" + _VISIBLE + "AND EXISTS (SELECT 1 FROM constraint_keys k WHERE k.constraint_id = t.id "
            "AND k.key IN (SELECT value FROM json_each(?))) ORDER BY t.id",
            (*_visible(key), json.dumps(list(fingerprint_keys))),
        )
        return [slot_from_row(r) for r in rows]

    def fire(self, constraint_ids: Sequence[int]) -> None:
        self._conn.execute(
            "UPDATE agent_timeline SET fire_count = fire_count + 1, last_fired_at = strftime('%Y-%m-%d %H:%M:%f','now') "
            "WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(constraint_ids)),),
        )

    def count_fingerprint(self, key: SessionKey, fingerprint: str) -> list[int]:
        rows = self._conn.execute(
            # `+`: sort the few rows of this fingerprint (idx_timeline_fingerprint) instead of walking every
            # PRESENT slot of the session in order (idx_timeline_active_context), which SQLite picks otherwise.
            "SELECT t.id FROM agent_timeline t WHERE" + _SESSION + "AND t.temporal_state = 'PRESENT' "
            "AND t.fingerprint = ? ORDER BY +t.sequence_order",
            (*_key(key), fingerprint),
        )
        return [r[0] for r in rows]

    def retire(
        self, tenant: str, ids: Sequence[int], from_state: TemporalState, reason: Retired, by: int | None
    ) -> list[int]:
        rows = self._conn.execute(
            "UPDATE agent_timeline SET temporal_state = 'PAST', retired_reason = ?, retired_by = ? "
            # `+column` keeps those columns off the index so the id list drives the update.
            "WHERE +tenant = ? AND +temporal_state = ? AND id IN (SELECT value FROM json_each(?)) RETURNING id",
            (reason.value, by, tenant, from_state.value, json.dumps(list(ids))),
        ).fetchall()
        return sorted(r[0] for r in rows)

    def update_fingerprints(self, updates: Sequence[tuple[int, str, tuple[str, ...], int]]) -> None:
        self._conn.executemany(
            "UPDATE agent_timeline SET fingerprint = ?, fingerprint_keys = ?, fingerprint_version = ? WHERE id = ?",
            [(fp, json.dumps(list(keys), ensure_ascii=False), version, sid) for sid, fp, keys, version in updates],
        )

    def link(self, constraint_id: int, source_ids: Sequence[int], relation: str) -> None:
        self._conn.executemany(
            "INSERT OR IGNORE INTO constraint_links (constraint_id, source_id, relation) VALUES (?, ?, ?)",
            [(constraint_id, source, relation) for source in source_ids],
        )

    def sources(self, constraint_id: int, relation: str) -> list[int]:
        rows = self._conn.execute(
            "SELECT source_id FROM constraint_links WHERE constraint_id = ? AND relation = ? ORDER BY source_id",
            (constraint_id, relation),
        )
        return [r[0] for r in rows]

    def history(self, key: SessionKey, limit: int) -> list[Slot]:
        rows = self._conn.execute(
            _SELECT + " WHERE" + _SESSION + "ORDER BY t.sequence_order DESC LIMIT ?", (*_key(key), limit)
        )
        return [slot_from_row(r) for r in rows]

    def search(self, key: SessionKey, query: str, limit: int) -> list[Slot]:
        # instr() on case-folded text: literal (no LIKE wildcards) and Unicode-aware (fixes defect 19).
        rows = self._conn.execute(
            _SELECT
            + " WHERE"
            + _SESSION
            + """AND instr(vlk_fold(
                    COALESCE(c.raw_log, '') || ? || COALESCE(c.file_context, '') || ? ||
                    COALESCE(t.learning_summary, '') || ? || COALESCE(t.evidence, '')), ?) > 0
                ORDER BY t.sequence_order DESC LIMIT ?""",
            (*_key(key), _SEPARATOR, _SEPARATOR, _SEPARATOR, query.casefold(), limit),
        )
        return [slot_from_row(r) for r in rows]

    def counts(self, key: SessionKey) -> dict[TemporalState, tuple[int, int]]:
        rows = self._conn.execute(
            """SELECT t.temporal_state, COUNT(*), COALESCE(SUM(LENGTH(c.raw_log)), 0)
               FROM agent_timeline t LEFT JOIN memory_contents c ON c.id = t.content_id
               WHERE""" + _SESSION + "GROUP BY t.temporal_state",
            _key(key),
        )
        return {TemporalState(state): (count, chars) for state, count, chars in rows}

    def prune(self, key: SessionKey | None, keep_past: int, max_age_days: int) -> tuple[int, int]:
        where, params = ("", ()) if key is None else (" AND" + _SESSION, _key(key))
        doomed = self._conn.execute(
            f"""SELECT id, content_id FROM (
                    SELECT t.id, t.content_id, t.created_at, ROW_NUMBER() OVER (
                        PARTITION BY t.tenant, t.project, t.session_id ORDER BY t.sequence_order DESC) AS newest
                    FROM agent_timeline t WHERE t.temporal_state = 'PAST'{where})
                WHERE newest > ? OR created_at < datetime('now', ?)""",
            (*params, keep_past, f"-{max_age_days} days"),
        ).fetchall()
        contents = 0
        for start in range(0, len(doomed), _PRUNE_CHUNK):
            chunk = doomed[start : start + _PRUNE_CHUNK]
            ids = json.dumps([row[0] for row in chunk])
            self._conn.execute("UPDATE agent_timeline SET retired_by = NULL WHERE retired_by IN "
                               "(SELECT value FROM json_each(?))", (ids,))
            self._conn.execute("DELETE FROM constraint_links WHERE constraint_id IN (SELECT value FROM json_each(?)) "
                               "OR source_id IN (SELECT value FROM json_each(?))", (ids, ids))
            self._conn.execute("DELETE FROM constraint_keys WHERE constraint_id IN (SELECT value FROM json_each(?))",
                               (ids,))
            self._conn.execute("DELETE FROM agent_timeline WHERE id IN (SELECT value FROM json_each(?))", (ids,))
            content_ids = json.dumps(sorted({row[1] for row in chunk if row[1] is not None}))
            contents += self._conn.execute(
                "DELETE FROM memory_contents WHERE id IN (SELECT value FROM json_each(?)) AND NOT EXISTS "
                "(SELECT 1 FROM agent_timeline t WHERE t.content_id = memory_contents.id)",
                (content_ids,),
            ).rowcount
        if key is None:  # a full pass also sweeps content orphaned by anything else
            contents += self._conn.execute(
                "DELETE FROM memory_contents WHERE NOT EXISTS "
                "(SELECT 1 FROM agent_timeline t WHERE t.content_id = memory_contents.id)"
            ).rowcount
        self._prune_host_calls(key, max_age_days)
        return len(doomed), contents

    def _prune_host_calls(self, key: SessionKey | None, max_age_days: int) -> None:
        """Hook call records older than the retention age, or beyond the newest few thousand of a session."""
        where, params = ("", ()) if key is None else (" AND tenant = ? AND project = ? AND session_id = ?", _key(key))
        self._conn.execute(f"DELETE FROM host_calls WHERE created_at < datetime('now', ?){where}",
                           (f"-{max_age_days} days", *params))
        if key is not None:
            self._conn.execute(
                "DELETE FROM host_calls WHERE tenant = ? AND project = ? AND session_id = ? AND id <= "
                "(SELECT id FROM host_calls WHERE tenant = ? AND project = ? AND session_id = ? "
                "ORDER BY id DESC LIMIT 1 OFFSET ?)", (*_key(key), *_key(key), HOST_CALLS_PER_SESSION))

    # ---- host hooks (hosts/) ----

    def add_host_call(self, key: SessionKey, call: NewHostCall, slot_id: int | None) -> int | None:
        row = self._conn.execute(
            "INSERT INTO host_calls (tenant, project, session_id, tool_use_id, call_key, outcome, changes_state, "
            "slot_id, tool, target, summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING RETURNING id",
            (*_key(key), call.tool_use_id, call.call_key, call.outcome, int(call.changes_state), slot_id,
             call.tool, call.target, call.summary),
        ).fetchone()
        return None if row is None else int(row[0])

    def host_call_by_use_id(self, key: SessionKey, tool_use_id: str) -> HostCall | None:
        row = self._conn.execute(_HOST_CALL + " AND tool_use_id = ?", (*_key(key), tool_use_id)).fetchone()
        return None if row is None else host_call_from_row(row)

    def host_calls(
        self,
        key: SessionKey,
        *,
        call_key: str | None = None,
        outcome: str | None = None,
        target: str | None = None,
        after_id: int = 0,
        within_seconds: int | None = None,
        unclaimed: bool = False,
        newest_first: bool = False,
        limit: int = 100,
    ) -> list[HostCall]:
        query, params = _HOST_CALL + " AND id > ?", [*_key(key), after_id]
        if call_key is not None:
            query += " AND call_key = ?"
            params.append(call_key)
        if outcome is not None:
            query += " AND outcome = ?"
            params.append(outcome)
        if target is not None:
            query += " AND target = ?"
            params.append(target)
        if within_seconds is not None:
            query += " AND created_at >= strftime('%Y-%m-%d %H:%M:%f', 'now', ?)"
            params.append(f"-{within_seconds} seconds")
        if unclaimed:
            query += " AND claimed = 0"
        query += f" ORDER BY id {'DESC' if newest_first else 'ASC'} LIMIT ?"
        params.append(limit)
        return [host_call_from_row(r) for r in self._conn.execute(query, params)]

    def claim_host_call(self, call_id: int) -> bool:
        return self._conn.execute("UPDATE host_calls SET claimed = 1 WHERE id = ? AND claimed = 0",
                                  (call_id,)).rowcount == 1

    def injected(self, key: SessionKey) -> list[str]:
        row = self._conn.execute(
            "SELECT injected FROM host_sessions WHERE tenant = ? AND project = ? AND session_id = ?", _key(key)
        ).fetchone()
        return [] if row is None else list(json.loads(row[0]))

    def set_injected(self, key: SessionKey, items: Sequence[str]) -> None:
        self._conn.execute(
            "INSERT INTO host_sessions (tenant, project, session_id, injected) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (tenant, project, session_id) DO UPDATE SET injected = excluded.injected, "
            "updated_at = strftime('%Y-%m-%d %H:%M:%f','now')",
            (*_key(key), json.dumps(list(items), ensure_ascii=False)),
        )

    def dump(self, tenant: str | None, project: str | None, session: str | None) -> Iterator[dict[str, Any]]:
        conditions, params = [], []
        for column, value in (("tenant", tenant), ("project", project), ("session_id", session)):
            if value is not None:
                conditions.append(f"t.{column} = ?")
                params.append(value)
        where = (" WHERE " + " AND ".join(conditions)) if conditions else ""
        self._conn.execute("DROP TABLE IF EXISTS temp.vlk_export")
        self._conn.execute(f"CREATE TEMP TABLE vlk_export AS SELECT t.id FROM agent_timeline t{where}", params)
        chosen = "(SELECT id FROM temp.vlk_export)"
        for row in self._conn.execute(
            f"""SELECT DISTINCT t.tenant, c.content_hash, c.raw_log, c.file_context, c.tool_payload
                FROM agent_timeline t JOIN memory_contents c ON c.id = t.content_id
                WHERE t.id IN {chosen} ORDER BY c.id"""
        ):
            yield dict(zip(("tenant", "hash", "raw_log", "file_context", "tool_payload"), row, strict=True), type="content")
        for row in self._conn.execute(
            f"""SELECT t.uid, t.tenant, t.project, t.session_id, t.sequence_order, t.temporal_state, t.origin,
                       t.scope, c.content_hash, t.learning_summary, t.constraint_type, t.created_at, t.evidence,
                       t.fingerprint, t.fingerprint_keys, t.fingerprint_version, t.retired_reason, t.lessons,
                       t.fire_count, t.last_fired_at
                FROM agent_timeline t LEFT JOIN memory_contents c ON c.id = t.content_id
                WHERE t.id IN {chosen} ORDER BY t.id"""
        ):
            record = dict(zip(_SLOT_FIELDS, row, strict=True), type="slot")
            record["fingerprint_keys"] = json.loads(record["fingerprint_keys"] or "[]")
            record["lessons"] = json.loads(record["lessons"] or "[]")
            yield record
        for uid, by in self._conn.execute(
            f"""SELECT t.uid, b.uid FROM agent_timeline t JOIN agent_timeline b ON b.id = t.retired_by
                WHERE t.id IN {chosen} AND b.id IN {chosen} ORDER BY t.id"""
        ):
            yield {"type": "retired_by", "uid": uid, "by": by}
        for constraint, source, relation in self._conn.execute(
            f"""SELECT a.uid, b.uid, l.relation FROM constraint_links l
                JOIN agent_timeline a ON a.id = l.constraint_id JOIN agent_timeline b ON b.id = l.source_id
                WHERE a.id IN {chosen} AND b.id IN {chosen} ORDER BY a.id, b.id"""
        ):
            yield {"type": "link", "constraint": constraint, "source": source, "relation": relation}
        for constraint, key in self._conn.execute(
            f"""SELECT a.uid, k.key FROM constraint_keys k JOIN agent_timeline a ON a.id = k.constraint_id
                WHERE a.id IN {chosen} ORDER BY a.id, k.key"""
        ):
            yield {"type": "key", "constraint": constraint, "key": key}
        self._conn.execute("DROP TABLE temp.vlk_export")
        yield from self._dump_fixes(tenant, project, session)

    def load(self, record: dict[str, Any]) -> bool:
        kind = record.get("type")
        if kind == "content":
            digest = content_hash(record["tenant"], record["raw_log"], record.get("file_context"),
                                  record.get("tool_payload"))
            if digest != record.get("hash"):
                raise ValueError(f"content hash mismatch for {record.get('hash')!r}: the record was altered")
            return self._conn.execute(
                "INSERT INTO memory_contents (raw_log, file_context, tool_payload, content_hash) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(content_hash) DO NOTHING",
                (record["raw_log"], record.get("file_context"), record.get("tool_payload"), digest),
            ).rowcount == 1
        if kind == "slot":
            if self._id_of(record["uid"]) is not None:
                return False
            content_id = None
            if record.get("content_hash"):
                found = self._conn.execute("SELECT id FROM memory_contents WHERE content_hash = ?",
                                           (record["content_hash"],)).fetchone()
                if found is None:
                    raise ValueError(f"slot {record['uid']} names content {record['content_hash']} not loaded before it")
                content_id = found[0]
            session = (record["tenant"], record["project"], record["session_id"])
            taken = self._conn.execute(
                "SELECT 1 FROM agent_timeline WHERE tenant = ? AND project = ? AND session_id = ? AND sequence_order = ?",
                (*session, record["sequence_order"]),
            ).fetchone()
            sequence = record["sequence_order"] if taken is None else self._conn.execute(
                "SELECT COALESCE(MAX(sequence_order), 0) + 1 FROM agent_timeline "
                "WHERE tenant = ? AND project = ? AND session_id = ?", session).fetchone()[0]
            self._conn.execute(
                """INSERT INTO agent_timeline (uid, tenant, project, session_id, sequence_order, temporal_state, origin,
                       scope, content_id, learning_summary, constraint_type, created_at, evidence, fingerprint,
                       fingerprint_keys, fingerprint_version, retired_reason, lessons, fire_count, last_fired_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (record["uid"], *session, sequence, record["temporal_state"], record["origin"], record.get("scope"),
                 content_id, record.get("learning_summary"), record.get("constraint_type"), record["created_at"],
                 record.get("evidence"), record.get("fingerprint"),
                 json.dumps(record["fingerprint_keys"], ensure_ascii=False) if record.get("fingerprint_keys") else None,
                 record.get("fingerprint_version"), record.get("retired_reason"),
                 json.dumps(record["lessons"], ensure_ascii=False) if record.get("lessons") else None,
                 record.get("fire_count", 0), record.get("last_fired_at")),
            )
            return True
        if kind == "retired_by":
            slot, by = self._id_of(record["uid"]), self._id_of(record["by"])
            return slot is not None and by is not None and self._conn.execute(
                "UPDATE agent_timeline SET retired_by = ? WHERE id = ? AND retired_by IS NOT ?", (by, slot, by)
            ).rowcount == 1
        if kind == "link":
            constraint, source = self._id_of(record["constraint"]), self._id_of(record["source"])
            return constraint is not None and source is not None and self._conn.execute(
                "INSERT OR IGNORE INTO constraint_links (constraint_id, source_id, relation) VALUES (?, ?, ?)",
                (constraint, source, record["relation"]),
            ).rowcount == 1
        if kind == "key":
            constraint = self._id_of(record["constraint"])
            return constraint is not None and self._conn.execute(
                "INSERT OR IGNORE INTO constraint_keys (key, constraint_id) VALUES (?, ?)", (record["key"], constraint)
            ).rowcount == 1
        if kind == "fix":
            return self._load_fix(record)
        raise ValueError(f"unknown export record type {kind!r}")

    def _id_of(self, uid: str) -> int | None:
        row = self._conn.execute("SELECT id FROM agent_timeline WHERE uid = ?", (uid,)).fetchone()
        return None if row is None else int(row[0])
