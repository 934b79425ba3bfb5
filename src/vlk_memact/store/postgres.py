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

import logging
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..config import mask_password
from ..core.errors import ConfigError, StoreError

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg.conninfo import conninfo_to_dict
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError as exc:  # the driver is an optional extra
    raise ConfigError("PostgreSQL needs: pip install 'vlk-memact[postgres]'") from exc

from .batch import Batch, Joined, savepoint
from .postgres_errors import is_connection_error, lock_timeout_error, postgres_error
from .postgres_schema import advisory_key, migrate
from .postgres_tx import PostgresTx

log = logging.getLogger(__name__)

LOCK_RETRY_SECONDS = 30.0  # total time a transaction keeps retrying to start before giving up
CONNECT_TIMEOUT_SECONDS = 10.0  # the first connection, at open
POOL_MAX_SIZE = 8  # connections per store: MCP tools run on worker threads, reads run in parallel
_TABLES = ("memory_contents", "agent_timeline", "constraint_links", "constraint_keys", "host_calls", "host_sessions",
           "learned_sources", "learned_events")
_WRITE = "BEGIN ISOLATION LEVEL READ COMMITTED"
# Errors after which starting the transaction again can succeed.
_TRANSIENT = (pg_errors.SerializationFailure, pg_errors.DeadlockDetected, pg_errors.LockNotAvailable)


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
        self._pool, schema = _open_pool(conninfo, self._schema, self._configure, self.url)
        # One write lock per schema: stores of other schemas on the same server do not wait for us.
        self._write_lock = advisory_key("write", schema)
        self._joined = Joined()  # the batch this thread's transactions join (store/batch.py)
        log.info("PostgreSQL store ready at %s (schema %s)", self.url, schema)

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        if self._schema is not None:
            conn.execute("SELECT set_config('search_path', quote_ident(%s), false)", (self._schema,))

    # ---- transactions ----

    @contextmanager
    def write(self) -> Iterator[PostgresTx]:
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
        if self._joined.active:
            yield from self._savepoint(keep=True)
            return
        yield from self._transaction(_WRITE, lock=True)

    @contextmanager
    def read(self) -> Iterator[PostgresTx]:
        """A REPEATABLE READ READ ONLY transaction: one snapshot, no lock, never blocks writers."""
        if self._joined.active and self._joined.conn is not None:  # what the open batch wrote so far is
            # visible in its transaction only (before its first write or after a commit, any snapshot is as good)
            try:
                yield PostgresTx(self._joined.ready())
            except psycopg.Error as exc:
                raise self._fault(exc, "read", midway=True) from exc
            return
        yield from self._transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", lock=False)

    @contextmanager
    def batch(self, durable: bool = True) -> Iterator[Batch]:
        """One write transaction at a time (write lock held) that this thread's write(), read() and dry_run()
        join (store/batch.py); batch.commit() releases the lock, taken again when a joined transaction needs it.
        durable=False changes nothing here: every commit is flushed before it returns (docs/guarantees.md)."""
        if self._joined.active:
            raise StoreError("a batch is already open in this thread; batches do not nest")

        def begin() -> None:
            self._joined.conn = self._begin(_WRITE, lock=True)

        def end(keep: bool) -> None:
            """Commit (keep) or roll back the open transaction; the next one begins when a joined write needs it."""
            conn, self._joined.conn = self._joined.conn, None
            self._joined.begin = begin
            if conn is None:
                return  # nothing begun since the last commit
            try:
                if not keep:
                    _rollback(conn)
                    return
                conn.execute("COMMIT")
            except psycopg.Error as exc:
                _rollback(conn)
                raise self._fault(exc, "commit" if is_connection_error(exc) else "write") from exc
            finally:
                self._pool.putconn(conn)

        def commit() -> None:
            end(keep=True)

        self._joined.active, self._joined.begin = True, begin
        self._joined.abort = lambda: end(keep=False)
        try:
            try:
                yield Batch(commit)
            except psycopg.Error as exc:
                raise self._fault(exc, "write", midway=True) from exc
            commit()
        finally:
            conn = self._joined.conn
            self._joined.close()
            if conn is not None:  # what was not committed, after an error
                _rollback(conn)
                self._pool.putconn(conn)

    def _savepoint(self, keep: bool) -> Iterator[PostgresTx]:
        """A transaction joined to the batch: a savepoint (store/batch.py)."""
        yield from savepoint(self._joined, PostgresTx, keep, psycopg.Error,
                             lambda exc: self._fault(exc, "write", midway=True))

    @contextmanager
    def dry_run(self) -> Iterator[PostgresTx]:
        """A write transaction (write lock held) that is rolled back, identity counters included.

        Identity sequences are not transactional, so the ids an insert used are given back by setval
        before the ROLLBACK, while the write lock still keeps every other writer out: the next real
        transaction gets the very ids the dry run showed. (Joined to a batch: a savepoint always undone.)
        """
        if self._joined.active:
            yield from self._savepoint(keep=False)
            return
        conn = self._begin(_WRITE, lock=True)
        try:
            counters = conn.execute(
                "SELECT s, pg_sequence_last_value(s::regclass) FROM unnest(%s::text[]) AS t, "
                "pg_get_serial_sequence(t, 'id') AS s",
                (["agent_timeline", "memory_contents"],),
            ).fetchall()
            try:
                yield PostgresTx(conn)
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

    def _transaction(self, begin: str, lock: bool) -> Iterator[PostgresTx]:
        doing = "write" if lock else "read"
        conn = self._begin(begin, lock)
        try:
            try:
                yield PostgresTx(conn)
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

    def sync(self) -> None:
        """Nothing to do: a batch's commits were durable when they returned."""

    def close(self) -> None:
        self._pool.close()


def _rollback(conn: psycopg.Connection[Any]) -> None:
    try:
        conn.execute("ROLLBACK")
    except psycopg.Error:
        pass  # a broken connection: the pool discards it on putconn


def _open_pool(
    conninfo: str, schema: str | None, configure: Callable[[psycopg.Connection[Any]], None], shown_url: str
) -> tuple[ConnectionPool[psycopg.Connection[Any]], str]:
    """Migrate on a connection of its own, then open the pool: an unreachable server fails here at once,
    not after the pool's reconnection attempts. Returns the pool and the schema the search_path names."""
    # A server that does not answer a connection attempt must not hang a call (unless the URL says otherwise).
    timeout = {} if "connect_timeout" in _params(conninfo) else {"connect_timeout": int(CONNECT_TIMEOUT_SECONDS)}
    pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
        conninfo,
        min_size=1,
        max_size=POOL_MAX_SIZE,
        kwargs={"autocommit": True, **timeout},  # we issue BEGIN / COMMIT ourselves, like the SQLite store
        configure=configure,
        open=False,
        name="vlk-memact",
    )
    try:
        with psycopg.connect(conninfo, autocommit=True, **timeout) as conn:
            configure(conn)
            migrate(conn, create_schema=schema)
            row = conn.execute("SELECT current_schema()").fetchone()
        pool.open(wait=True, timeout=CONNECT_TIMEOUT_SECONDS)
    except (psycopg.Error, PoolTimeout) as exc:
        pool.close()
        raise postgres_error(exc, conninfo, "open") from exc
    except BaseException:
        pool.close()
        raise
    schema_name = row[0] if row else None
    if schema_name is None:
        pool.close()
        raise StoreError(
            f"the search_path of {shown_url} names no existing schema; create it or use ?schema=NAME"
        )
    return pool, schema_name
