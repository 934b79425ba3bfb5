"""PostgresStore: the shared-server backend, on psycopg 3 and a psycopg_pool connection pool.

Selected by DATABASE_URL=postgresql://... (or postgres://). Any libpq URL works; two ways choose
the schema that holds vlk-memact's tables, so that several databases (or tests) share one server:

    postgresql://user@host/db?schema=vlk_team     vlk-memact's own parameter: the schema is created if
                                                  missing and becomes the whole search_path
    postgresql://user@host/db?options=-csearch_path%3Dvlk_team
                                                  libpq's: the schema must exist already

Without either, the tables go in the server's default schema (usually public).

Concurrency: see PostgresStore.write().

Search folds case with vlk_fold() (postgres_schema), which matches Python's str.casefold() used by
the SQLite store for every character except a few multi-character foldings outside Latin script
(Greek letters with ypogegrammeni, Armenian ligature 'և', 'ŉ', and precomposed letters that casefold
to a base letter plus a combining mark, e.g. 'ǰ'): those still match themselves case-insensitively
but not their expanded spelling.

Differences from the SQLite store that callers can see: ids used by a rolled-back transaction are not
reused (PostgreSQL identities are not transactional), so ids can have gaps after errors.
"""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..config import mask_password
from ..core.errors import ConfigError, StoreError
from ..core.model import HostCall, NewHostCall, NewSlot, Retired, SessionKey, Slot, TemporalState

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg.conninfo import conninfo_to_dict
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError as exc:  # the driver is an optional extra
    raise ConfigError("PostgreSQL needs: pip install 'vlk-memact[postgres]'") from exc

from .postgres_browse import _SELECT, _SEPARATOR, PostgresBrowse  # one slot SELECT, one separator
from .postgres_fixes import PostgresFixes
from .postgres_errors import is_connection_error, lock_timeout_error, postgres_error
from .postgres_schema import NOW_MILLIS, advisory_key, migrate
from .rows import (
    HOST_CALL_COLUMNS,
    HOST_CALLS_PER_SESSION,
    host_call_from_row,
    slot_from_row,
)
from .sqlite_schema import content_hash  # the same identity in both stores (pure hashing, no sqlite3 use)

log = logging.getLogger(__name__)

LOCK_RETRY_SECONDS = 30.0  # total time a transaction keeps retrying to start before giving up
CONNECT_TIMEOUT_SECONDS = 10.0  # the first connection, at open
POOL_MAX_SIZE = 8  # connections per store: MCP tools run on worker threads, reads run in parallel
_TABLES = ("memory_contents", "agent_timeline", "constraint_links", "constraint_keys", "host_calls", "host_sessions")
_HOST_CALL = (f"SELECT {HOST_CALL_COLUMNS} FROM host_calls "
              "WHERE tenant = %s AND project = %s AND session_id = %s")
_CONTENT_FIELDS = ("tenant", "hash", "raw_log", "file_context", "tool_payload")
# fmt: off
_SLOT_FIELDS = ("uid", "tenant", "project", "session_id", "sequence_order", "temporal_state", "origin", "scope",
                "content_hash", "learning_summary", "constraint_type", "created_at", "evidence", "fingerprint",
                "fingerprint_keys", "fingerprint_version", "retired_reason", "lessons", "fire_count", "last_fired_at")
# fmt: on
# Errors after which starting the transaction again can succeed.
_TRANSIENT = (pg_errors.SerializationFailure, pg_errors.DeadlockDetected, pg_errors.LockNotAvailable)

_SESSION = " t.tenant = %s AND t.project = %s AND t.session_id = %s "
# What a session sees: its own constraints, its project's, and the tenant's global ones.
_VISIBLE = """ t.tenant = %s AND t.temporal_state = 'FUTURE' AND (
    t.scope = 'global' OR (t.scope = 'project' AND t.project = %s)
    OR ((t.scope = 'session' OR t.scope IS NULL) AND t.project = %s AND t.session_id = %s)) """


def _key(key: SessionKey) -> tuple[str, str, str]:
    return (key.tenant, key.project, key.session)


def _visible(key: SessionKey) -> tuple[str, str, str, str]:
    return (key.tenant, key.project, key.project, key.session)


def postgres_target(url: str) -> tuple[str, str | None]:
    """Split a DATABASE_URL into the libpq URL and the `schema` parameter (None if absent).

    The other query parameters are passed to libpq untouched (they are libpq's, percent-encoded).
    """
    base, _, query = url.partition("?")
    kept, schema = [], None
    for part in query.split("&") if query else []:
        name, _, value = part.partition("=")
        if name == "schema":
            from urllib.parse import unquote

            schema = unquote(value)
            if not schema:
                raise ConfigError(f"DATABASE_URL {mask_password(url)!r} has an empty schema= parameter.")
        else:
            kept.append(part)
    return (base + ("?" + "&".join(kept) if kept else "")), schema


def _params(conninfo: str) -> dict[str, Any]:
    try:
        return conninfo_to_dict(conninfo)
    except psycopg.Error as exc:
        raise ConfigError(f"DATABASE_URL is not a valid PostgreSQL URL: {exc}") from None


class PostgresStore:
    """The Store protocol over one PostgreSQL schema, shared by threads and processes."""

    def __init__(self, url: str, busy_timeout_ms: int = 5000, lock_wait_ms: int | None = None) -> None:
        self.url = mask_password(url)
        conninfo, self._schema = postgres_target(url)
        self._conninfo = conninfo
        self._lock_timeout = f"{int(busy_timeout_ms)}ms"
        self._lock_wait = LOCK_RETRY_SECONDS if lock_wait_ms is None else lock_wait_ms / 1000
        self._writes_refused = False  # the server refused a write as read-only: writes start on fresh sessions
        # A server that does not answer a connection attempt must not hang a call (unless the URL says otherwise).
        timeout = {} if "connect_timeout" in _params(conninfo) else {"connect_timeout": int(CONNECT_TIMEOUT_SECONDS)}
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            conninfo,
            min_size=1,
            max_size=POOL_MAX_SIZE,
            kwargs={"autocommit": True, **timeout},  # we issue BEGIN / COMMIT ourselves, like the SQLite store
            configure=self._configure,
            open=False,
            name="vlk-memact",
        )
        try:
            # Migrate on a connection of its own: an unreachable server fails here at once, not
            # after the pool's reconnection attempts.
            with psycopg.connect(conninfo, autocommit=True, **timeout) as conn:
                self._configure(conn)
                migrate(conn, create_schema=self._schema)
                row = conn.execute("SELECT current_schema()").fetchone()
            self._pool.open(wait=True, timeout=CONNECT_TIMEOUT_SECONDS)
        except (psycopg.Error, PoolTimeout) as exc:
            self._pool.close()
            raise postgres_error(exc, conninfo, "open") from exc
        except BaseException:
            self._pool.close()
            raise
        schema = row[0] if row else None
        if schema is None:
            self._pool.close()
            raise StoreError(
                f"the search_path of {self.url} names no existing schema; create it or use ?schema=NAME"
            )
        # One write lock per schema: stores of other schemas on the same server do not wait for us.
        self._write_lock = advisory_key("write", schema)
        log.info("PostgreSQL store ready at %s (schema %s)", self.url, schema)

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        if self._schema is not None:
            conn.execute("SELECT set_config('search_path', quote_ident(%s), false)", (self._schema,))

    # ---- transactions ----

    @contextmanager
    def write(self) -> Iterator[_PostgresTx]:
        """A READ COMMITTED transaction holding the schema's write lock from its first statement.

        The engine reads then writes in one `with store.write()` block (next sequence number, PRESENT
        slots to archive, constraints to consolidate) and those reads span a session, a project and
        the tenant's global constraints. A with-block cannot be replayed, so SERIALIZABLE with retry
        is not an option here; instead every writer takes one transaction-level advisory lock
        (pg_advisory_xact_lock, released at COMMIT or ROLLBACK, never leaked by a crash), which is
        what BEGIN IMMEDIATE gives the SQLite store: writers run one at a time, readers never wait,
        and no writer can fail with a serialization error or deadlock against another. The UNIQUE
        (tenant, project, session_id, sequence_order) constraint stays as a backstop.

        The lock is per schema, not per session: consolidation retires project- and global-scoped
        constraints that other sessions read, so the smallest safe key would be the tenant, and
        write() is not told the tenant. Deployments are single-tenant in practice, so a per-tenant
        key would buy nothing; transactions are a few milliseconds, see tests/test_store_postgres.py.
        """
        yield from self._transaction("BEGIN ISOLATION LEVEL READ COMMITTED", lock=True)

    @contextmanager
    def read(self) -> Iterator[_PostgresTx]:
        """A REPEATABLE READ READ ONLY transaction: one snapshot, no lock, never blocks writers."""
        yield from self._transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", lock=False)

    @contextmanager
    def dry_run(self) -> Iterator[_PostgresTx]:
        """A write transaction (write lock held) that is rolled back, identity counters included.

        Identity sequences are not transactional, so the ids an insert used are given back by setval
        before the ROLLBACK, while the write lock still keeps every other writer out: the next real
        transaction gets the very ids the dry run showed.
        """
        conn = self._begin("BEGIN ISOLATION LEVEL READ COMMITTED", lock=True)
        try:
            counters = conn.execute(
                "SELECT s, pg_sequence_last_value(s::regclass) FROM unnest(%s::text[]) AS t, "
                "pg_get_serial_sequence(t, 'id') AS s",
                (["agent_timeline", "memory_contents"],),
            ).fetchall()
            try:
                yield _PostgresTx(conn)
            except psycopg.Error as exc:
                raise StoreError(f"database operation failed: {exc}") from exc
            finally:
                try:
                    for name, last in counters:
                        conn.execute("SELECT setval(%s::regclass, %s, %s)",
                                     (name, last if last is not None else 1, last is not None))
                except psycopg.Error:
                    pass  # the body failed and aborted the transaction: ids have a gap, as after any error
                _rollback(conn)
        finally:
            self._pool.putconn(conn)

    def _transaction(self, begin: str, lock: bool) -> Iterator[_PostgresTx]:
        doing = "write" if lock else "read"
        conn = self._begin(begin, lock)
        try:
            try:
                yield _PostgresTx(conn)
            except psycopg.Error as exc:
                _rollback(conn)
                if isinstance(exc, pg_errors.ReadOnlySqlTransaction):
                    # A session started read-only (a standby, default_transaction_read_only) stays so: until a
                    # write succeeds again, each write starts on fresh sessions (see _begin).
                    conn.close()
                    self._writes_refused = True
                raise self._fault(exc, doing, midway=True) from exc
            except BaseException:
                _rollback(conn)
                raise
            try:
                conn.execute("COMMIT")
            except psycopg.Error as exc:
                _rollback(conn)
                raise self._fault(exc, "commit" if is_connection_error(exc) else doing) from exc
            if lock:
                self._writes_refused = False
        finally:
            self._pool.putconn(conn)

    def _begin(self, begin: str, lock: bool) -> psycopg.Connection[Any]:
        """A pooled connection inside a new transaction (holding the write lock if asked).

        Only this step is retried, with jittered backoff: a lock wait past the busy timeout, a
        deadlock or serialization failure, or a connection the server dropped.
        """
        started = time.monotonic()
        deadline = started + self._lock_wait
        delay = 0.01
        doing = "write" if lock else "read"
        if lock and self._writes_refused and hasattr(self._pool, "drain"):  # psycopg_pool >= 3.3
            self._pool.drain()
        while True:
            conn = None
            try:
                conn = self._pool.getconn(timeout=max(0.1, deadline - time.monotonic()))
                conn.execute(begin)
                if lock:
                    conn.execute(
                        "SELECT set_config('lock_timeout', %s, true), pg_advisory_xact_lock(%s)",
                        (self._lock_timeout, self._write_lock),
                    )
                return conn
            except (psycopg.Error, PoolTimeout) as exc:
                if conn is not None:
                    _rollback(conn)
                    self._pool.putconn(conn)  # a broken connection is discarded and replaced by the pool
                lost = conn is None or conn.broken or is_connection_error(exc)
                if not (isinstance(exc, _TRANSIENT) or lost):
                    raise self._fault(exc, doing) from exc
                if time.monotonic() > deadline:
                    if lost:
                        raise self._fault(exc, doing) from exc
                    raise lock_timeout_error(self._conninfo, time.monotonic() - started) from exc
                if lost:
                    log.info("PostgreSQL connection unavailable (%s); retrying", type(exc).__name__)
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 0.5)

    def _fault(self, exc: BaseException, doing: str, midway: bool = False) -> StoreError:
        error = postgres_error(exc, self._conninfo, doing, midway)
        log.warning("%s", error)
        return error

    def optimize(self, vacuum: bool) -> None:
        """VACUUM ANALYZE our tables (space reusable, no blocking); with vacuum, VACUUM FULL to return it.

        VACUUM FULL rewrites each table under an ACCESS EXCLUSIVE lock: readers wait until it is done.
        """
        command = "VACUUM (FULL, ANALYZE) " if vacuum else "VACUUM (ANALYZE) "
        try:
            with self._pool.connection() as conn:  # autocommit: VACUUM cannot run in a transaction
                conn.execute(command + ", ".join(_TABLES))
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._fault(exc, "write") from exc

    def close(self) -> None:
        self._pool.close()


def _rollback(conn: psycopg.Connection[Any]) -> None:
    try:
        conn.execute("ROLLBACK")
    except psycopg.Error:
        pass  # a broken connection: the pool discards it on putconn


class _PostgresTx(PostgresBrowse, PostgresFixes):
    """The Transaction protocol on an open PostgreSQL transaction."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def _rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        log.debug("SQL %s %r", query, params)
        return self._conn.execute(query, params).fetchall()

    def _exec(self, query: str, params: Sequence[Any] = ()) -> None:
        log.debug("SQL %s %r", query, params)
        self._conn.execute(query, params)

    def _slots(self, query: str, params: Sequence[Any] = ()) -> list[Slot]:
        return [slot_from_row(r) for r in self._rows(query, params)]

    def add_content(
        self, tenant: str, raw_log: str, file_context: str | None, tool_payload: str | None
    ) -> int:
        digest = content_hash(tenant, raw_log, file_context, tool_payload)
        # Insert first, as the SQLite store does: a duplicate uses up an id in both stores, so ids stay equal.
        rows = self._rows(
            "INSERT INTO memory_contents (raw_log, file_context, tool_payload, content_hash) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (content_hash) DO NOTHING RETURNING id",
            (raw_log, file_context, tool_payload, digest),
        ) or self._rows("SELECT id FROM memory_contents WHERE content_hash = %s", (digest,))
        return int(rows[0][0])

    def insert_slot(self, slot: NewSlot) -> Slot:
        k = slot.key
        [(new_id,)] = self._rows(
            """INSERT INTO agent_timeline (uid, tenant, project, session_id, sequence_order,
                   temporal_state, origin, scope, content_id, learning_summary, constraint_type, evidence,
                   fingerprint, fingerprint_keys, fingerprint_version, lessons)
               VALUES (%s, %s, %s, %s, (SELECT COALESCE(MAX(sequence_order), 0) + 1 FROM agent_timeline
                                        WHERE tenant = %s AND project = %s AND session_id = %s),
                       %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
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
                json.dumps(list(slot.fingerprint_keys), ensure_ascii=False)
                if slot.fingerprint_keys
                else None,
                slot.fingerprint_version,
                json.dumps(list(slot.lessons), ensure_ascii=False) if slot.lessons else None,
            ),
        )
        if slot.temporal_state is TemporalState.FUTURE and slot.fingerprint_keys:
            self._exec(
                "INSERT INTO constraint_keys (key, constraint_id) SELECT DISTINCT unnest(%s::text[]), %s "
                "ON CONFLICT DO NOTHING",
                (list(slot.fingerprint_keys), new_id),
            )
        return self._slots(_SELECT + " WHERE t.id = %s", (new_id,))[0]

    def slots(self, key: SessionKey, state: TemporalState) -> list[Slot]:
        return self._slots(
            _SELECT + " WHERE" + _SESSION + "AND t.temporal_state = %s ORDER BY t.sequence_order",
            (*_key(key), state.value),
        )

    def slots_by_id(self, key: SessionKey, ids: Sequence[int]) -> list[Slot]:
        return self._slots(
            _SELECT + " WHERE" + _SESSION + "AND t.id = ANY(%s::bigint[]) ORDER BY t.sequence_order",
            (*_key(key), list(ids)),
        )

    def visible_constraints(self, key: SessionKey) -> list[Slot]:
        return self._slots(_SELECT + " WHERE" + _VISIBLE + "ORDER BY t.id", _visible(key))

    def constraints_matching(self, key: SessionKey, fingerprint_keys: Sequence[str]) -> list[Slot]:
        return self._slots(
            _SELECT
            + " WHERE t.id IN (SELECT constraint_id FROM constraint_keys WHERE key = ANY(%s::text[])) AND"
            + _VISIBLE
            + "ORDER BY t.id",
            (list(fingerprint_keys), *_visible(key)),
        )

    def fire(self, constraint_ids: Sequence[int]) -> None:
        self._exec(
            f"UPDATE agent_timeline SET fire_count = fire_count + 1, last_fired_at = {NOW_MILLIS} "
            "WHERE id = ANY(%s::bigint[])",
            (list(constraint_ids),),
        )

    def count_fingerprint(self, key: SessionKey, fingerprint: str) -> list[int]:
        rows = self._rows(
            "SELECT t.id FROM agent_timeline t WHERE" + _SESSION + "AND t.temporal_state = 'PRESENT' "
            "AND t.fingerprint = %s ORDER BY t.sequence_order",
            (*_key(key), fingerprint),
        )
        return [r[0] for r in rows]

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

    def link(self, constraint_id: int, source_ids: Sequence[int], relation: str) -> None:
        if not source_ids:
            return
        self._exec(
            "INSERT INTO constraint_links (constraint_id, source_id, relation) "
            "SELECT %s, s, %s FROM unnest(%s::bigint[]) AS s ON CONFLICT DO NOTHING",
            (constraint_id, relation, list(source_ids)),
        )

    def sources(self, constraint_id: int, relation: str) -> list[int]:
        rows = self._rows(
            "SELECT source_id FROM constraint_links WHERE constraint_id = %s AND relation = %s "
            "ORDER BY source_id",
            (constraint_id, relation),
        )
        return [r[0] for r in rows]

    def history(self, key: SessionKey, limit: int) -> list[Slot]:
        return self._slots(
            _SELECT + " WHERE" + _SESSION + "ORDER BY t.sequence_order DESC LIMIT %s", (*_key(key), limit)
        )

    def search(self, key: SessionKey, query: str, limit: int) -> list[Slot]:
        # strpos() on folded text: literal (no LIKE wildcards) and Unicode case-insensitive (fixes defect 19).
        return self._slots(
            _SELECT
            + " WHERE"
            + _SESSION
            + """AND strpos(vlk_fold(
                    COALESCE(c.raw_log, '') || %s || COALESCE(c.file_context, '') || %s ||
                    COALESCE(t.learning_summary, '') || %s || COALESCE(t.evidence, '')), vlk_fold(%s)) > 0
                ORDER BY t.sequence_order DESC LIMIT %s""",
            (*_key(key), _SEPARATOR, _SEPARATOR, _SEPARATOR, query, limit),
        )

    def counts(self, key: SessionKey) -> dict[TemporalState, tuple[int, int]]:
        rows = self._rows(
            """SELECT t.temporal_state, COUNT(*), COALESCE(SUM(length(c.raw_log)), 0)
               FROM agent_timeline t LEFT JOIN memory_contents c ON c.id = t.content_id
               WHERE"""
            + _SESSION
            + "GROUP BY t.temporal_state",
            _key(key),
        )
        return {TemporalState(state): (int(count), int(chars)) for state, count, chars in rows}

    def prune(self, key: SessionKey | None, keep_past: int, max_age_days: int) -> tuple[int, int]:
        where, params = ("", ()) if key is None else (" AND" + _SESSION, _key(key))
        # created_at is text in SQLite's format, so the age test compares strings, as the SQLite store does.
        doomed = self._rows(
            f"""SELECT id, content_id FROM (
                    SELECT t.id, t.content_id, t.created_at, row_number() OVER (
                        PARTITION BY t.tenant, t.project, t.session_id
                        ORDER BY t.sequence_order DESC) AS newest
                    FROM agent_timeline t WHERE t.temporal_state = 'PAST'{where}) AS past
                WHERE newest > %s OR created_at < to_char(
                    statement_timestamp() AT TIME ZONE 'UTC' - make_interval(days => %s),
                    'YYYY-MM-DD HH24:MI:SS')""",
            (*params, keep_past, max_age_days),
        )
        contents = 0
        if doomed:
            ids = [row[0] for row in doomed]
            self._exec(
                "UPDATE agent_timeline SET retired_by = NULL WHERE retired_by = ANY(%s::bigint[])", (ids,)
            )
            self._exec(
                "DELETE FROM constraint_links "
                "WHERE constraint_id = ANY(%s::bigint[]) OR source_id = ANY(%s::bigint[])",
                (ids, ids),
            )
            self._exec("DELETE FROM constraint_keys WHERE constraint_id = ANY(%s::bigint[])", (ids,))
            self._exec("DELETE FROM agent_timeline WHERE id = ANY(%s::bigint[])", (ids,))
            content_ids = sorted({row[1] for row in doomed if row[1] is not None})
            contents += self._count(
                "DELETE FROM memory_contents c WHERE c.id = ANY(%s::bigint[]) AND NOT EXISTS "
                "(SELECT 1 FROM agent_timeline t WHERE t.content_id = c.id)",
                (content_ids,),
            )
        if key is None:  # a full pass also sweeps content orphaned by anything else
            contents += self._count(
                "DELETE FROM memory_contents c "
                "WHERE NOT EXISTS (SELECT 1 FROM agent_timeline t WHERE t.content_id = c.id)"
            )
        self._prune_host_calls(key, max_age_days)
        return len(doomed), contents

    def _prune_host_calls(self, key: SessionKey | None, max_age_days: int) -> None:
        """Hook call records older than the retention age, or beyond the newest few thousand of a session."""
        where, params = ("", ()) if key is None else (" AND tenant = %s AND project = %s AND session_id = %s",
                                                      _key(key))
        self._exec(
            "DELETE FROM host_calls WHERE created_at < to_char(statement_timestamp() AT TIME ZONE 'UTC' - "
            f"make_interval(days => %s), 'YYYY-MM-DD HH24:MI:SS'){where}", (max_age_days, *params))
        if key is not None:
            self._exec(
                "DELETE FROM host_calls WHERE tenant = %s AND project = %s AND session_id = %s AND id <= "
                "(SELECT id FROM host_calls WHERE tenant = %s AND project = %s AND session_id = %s "
                "ORDER BY id DESC LIMIT 1 OFFSET %s)", (*_key(key), *_key(key), HOST_CALLS_PER_SESSION))

    # ---- host hooks (hosts/) ----

    def add_host_call(self, key: SessionKey, call: NewHostCall, slot_id: int | None) -> int | None:
        rows = self._rows(
            "INSERT INTO host_calls (tenant, project, session_id, tool_use_id, call_key, outcome, changes_state, "
            "slot_id, tool, target, summary) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT DO NOTHING RETURNING id",
            (*_key(key), call.tool_use_id, call.call_key, call.outcome, call.changes_state, slot_id,
             call.tool, call.target, call.summary),
        )
        return int(rows[0][0]) if rows else None

    def host_call_by_use_id(self, key: SessionKey, tool_use_id: str) -> HostCall | None:
        rows = self._rows(_HOST_CALL + " AND tool_use_id = %s", (*_key(key), tool_use_id))
        return host_call_from_row(rows[0]) if rows else None

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
        query, params = _HOST_CALL + " AND id > %s", [*_key(key), after_id]
        if call_key is not None:
            query += " AND call_key = %s"
            params.append(call_key)
        if outcome is not None:
            query += " AND outcome = %s"
            params.append(outcome)
        if target is not None:
            query += " AND target = %s"
            params.append(target)
        if within_seconds is not None:
            query += (" AND created_at >= to_char(statement_timestamp() AT TIME ZONE 'UTC' - "
                      "make_interval(secs => %s), 'YYYY-MM-DD HH24:MI:SS.MS')")
            params.append(within_seconds)
        if unclaimed:
            query += " AND NOT claimed"
        query += f" ORDER BY id {'DESC' if newest_first else 'ASC'} LIMIT %s"
        params.append(limit)
        return [host_call_from_row(r) for r in self._rows(query, params)]

    def claim_host_call(self, call_id: int) -> bool:
        return bool(self._rows("UPDATE host_calls SET claimed = true WHERE id = %s AND NOT claimed RETURNING id",
                               (call_id,)))

    def injected(self, key: SessionKey) -> list[str]:
        rows = self._rows(
            "SELECT injected FROM host_sessions WHERE tenant = %s AND project = %s AND session_id = %s", _key(key)
        )
        return list(json.loads(rows[0][0])) if rows else []

    def set_injected(self, key: SessionKey, items: Sequence[str]) -> None:
        self._exec(
            "INSERT INTO host_sessions (tenant, project, session_id, injected) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (tenant, project, session_id) DO UPDATE SET injected = excluded.injected, "
            f"updated_at = {NOW_MILLIS}",
            (*_key(key), json.dumps(list(items), ensure_ascii=False)),
        )

    def dump(self, tenant: str | None, project: str | None, session: str | None) -> Iterator[dict[str, Any]]:
        conditions, filters = [], []
        for column, value in (("tenant", tenant), ("project", project), ("session_id", session)):
            if value is not None:
                conditions.append(f"{column} = %s")
                filters.append(value)
        # A subquery, not a temporary table: a READ ONLY transaction may not create one.
        where = (" WHERE " + " AND ".join(conditions)) if conditions else ""
        chosen = f"(SELECT id FROM agent_timeline{where})"
        for row in self._rows(
            f"""SELECT t.tenant, c.content_hash, c.raw_log, c.file_context, c.tool_payload
                FROM memory_contents c JOIN (SELECT DISTINCT tenant, content_id FROM agent_timeline
                                             WHERE id IN {chosen}) t ON t.content_id = c.id
                ORDER BY c.id""",
            filters,
        ):
            yield dict(zip(_CONTENT_FIELDS, row, strict=True), type="content")
        for row in self._rows(
            f"""SELECT t.uid, t.tenant, t.project, t.session_id, t.sequence_order, t.temporal_state, t.origin,
                       t.scope, c.content_hash, t.learning_summary, t.constraint_type, t.created_at,
                       t.evidence,
                       t.fingerprint, t.fingerprint_keys, t.fingerprint_version, t.retired_reason, t.lessons,
                       t.fire_count, t.last_fired_at
                FROM agent_timeline t LEFT JOIN memory_contents c ON c.id = t.content_id
                WHERE t.id IN {chosen} ORDER BY t.id""",
            filters,
        ):
            record = dict(zip(_SLOT_FIELDS, row, strict=True), type="slot")
            record["fingerprint_keys"] = json.loads(record["fingerprint_keys"] or "[]")
            record["lessons"] = json.loads(record["lessons"] or "[]")
            yield record
        for uid, by in self._rows(
            f"""SELECT t.uid, b.uid FROM agent_timeline t JOIN agent_timeline b ON b.id = t.retired_by
                WHERE t.id IN {chosen} AND b.id IN {chosen} ORDER BY t.id""",
            filters * 2,
        ):
            yield {"type": "retired_by", "uid": uid, "by": by}
        for constraint, source, relation in self._rows(
            f"""SELECT a.uid, b.uid, l.relation FROM constraint_links l
                JOIN agent_timeline a ON a.id = l.constraint_id JOIN agent_timeline b ON b.id = l.source_id
                WHERE a.id IN {chosen} AND b.id IN {chosen} ORDER BY a.id, b.id""",
            filters * 2,
        ):
            yield {"type": "link", "constraint": constraint, "source": source, "relation": relation}
        for constraint, key in self._rows(
            f"""SELECT a.uid, k.key FROM constraint_keys k JOIN agent_timeline a ON a.id = k.constraint_id
                WHERE a.id IN {chosen} ORDER BY a.id, k.key COLLATE "C" """,
            filters,
        ):
            yield {"type": "key", "constraint": constraint, "key": key}
        yield from self._dump_fixes(tenant, project, session)

    def load(self, record: dict[str, Any]) -> bool:
        kind = record.get("type")
        if kind == "content":
            digest = content_hash(
                record["tenant"], record["raw_log"], record.get("file_context"), record.get("tool_payload")
            )
            if digest != record.get("hash"):
                raise ValueError(f"content hash mismatch for {record.get('hash')!r}: the record was altered")
            return (
                self._count(
                    "INSERT INTO memory_contents (raw_log, file_context, tool_payload, content_hash) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT (content_hash) DO NOTHING",
                    (record["raw_log"], record.get("file_context"), record.get("tool_payload"), digest),
                )
                == 1
            )
        if kind == "slot":
            if self._id_of(record["uid"]) is not None:
                return False
            content_id = None
            if record.get("content_hash"):
                found = self._rows(
                    "SELECT id FROM memory_contents WHERE content_hash = %s", (record["content_hash"],)
                )
                if not found:
                    raise ValueError(
                        f"slot {record['uid']} names content {record['content_hash']} not loaded before it"
                    )
                content_id = found[0][0]
            session = (record["tenant"], record["project"], record["session_id"])
            # Keep the exported sequence number unless the session already uses it; then append.
            self._exec(
                """INSERT INTO agent_timeline (uid, tenant, project, session_id, sequence_order,
                       temporal_state, origin, scope, content_id, learning_summary, constraint_type,
                       created_at, evidence, fingerprint, fingerprint_keys, fingerprint_version,
                       retired_reason, lessons, fire_count, last_fired_at)
                   VALUES (%s, %s, %s, %s, CASE WHEN EXISTS (
                               SELECT 1 FROM agent_timeline
                               WHERE tenant = %s AND project = %s AND session_id = %s
                                   AND sequence_order = %s)
                           THEN (SELECT MAX(sequence_order) + 1 FROM agent_timeline
                                 WHERE tenant = %s AND project = %s AND session_id = %s)
                           ELSE %s END,
                           %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
                (
                    record["uid"],
                    *session,
                    *session,
                    record["sequence_order"],
                    *session,
                    record["sequence_order"],
                    record["temporal_state"],
                    record["origin"],
                    record.get("scope"),
                    content_id,
                    record.get("learning_summary"),
                    record.get("constraint_type"),
                    record["created_at"],
                    record.get("evidence"),
                    record.get("fingerprint"),
                    json.dumps(record["fingerprint_keys"], ensure_ascii=False)
                    if record.get("fingerprint_keys")
                    else None,
                    record.get("fingerprint_version"),
                    record.get("retired_reason"),
                    json.dumps(record["lessons"], ensure_ascii=False) if record.get("lessons") else None,
                    record.get("fire_count", 0),
                    record.get("last_fired_at"),
                ),
            )
            return True
        if kind == "retired_by":
            slot, by = self._id_of(record["uid"]), self._id_of(record["by"])
            return (
                slot is not None
                and by is not None
                and self._count(
                    "UPDATE agent_timeline SET retired_by = %s "
                    "WHERE id = %s AND retired_by IS DISTINCT FROM %s",
                    (by, slot, by),
                )
                == 1
            )
        if kind == "link":
            constraint, source = self._id_of(record["constraint"]), self._id_of(record["source"])
            return (
                constraint is not None
                and source is not None
                and self._count(
                    "INSERT INTO constraint_links (constraint_id, source_id, relation) VALUES (%s, %s, %s) "
                    "ON CONFLICT DO NOTHING",
                    (constraint, source, record["relation"]),
                )
                == 1
            )
        if kind == "key":
            constraint = self._id_of(record["constraint"])
            return (
                constraint is not None
                and self._count(
                    "INSERT INTO constraint_keys (key, constraint_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                    (record["key"], constraint),
                )
                == 1
            )
        if kind == "fix":
            return self._load_fix(record)
        raise ValueError(f"unknown export record type {kind!r}")

    def _id_of(self, uid: str) -> int | None:
        rows = self._rows("SELECT id FROM agent_timeline WHERE uid = %s", (uid,))
        return int(rows[0][0]) if rows else None

    def _count(self, query: str, params: Sequence[Any] = ()) -> int:
        log.debug("SQL %s %r", query, params)
        return self._conn.execute(query, params).rowcount
