"""SqliteStore: the embedded default, on the stdlib sqlite3 module.

One connection per store, shared by the SDK's worker threads behind a lock (spec-independent
pitfall: sqlite3 objects are thread-bound by default). WAL, a busy timeout and BEGIN IMMEDIATE
make several processes on one file safe; a UNIQUE index keeps sequence numbers unique.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from urllib.parse import parse_qsl, quote

from ..core.errors import (
    ConfigError,
    DatabaseCorrupt,
    DatabaseIOError,
    ReadOnlyDatabase,
    StoreError,
    WouldWait,
)
from .batch import Batch, Joined, savepoint
from .sqlite_connect import (
    MEMORY,
    begin_write,
    busy_for_write,
    no_wait,
    open_connection,
    waiting_refused,
    with_lock_retry,
)
from .sqlite_errors import is_read_only_url, path_of, sqlite_error
from .sqlite_tx import SqliteTx

log = logging.getLogger(__name__)

LOCK_RETRY_SECONDS = 30.0  # total time a writer keeps retrying a locked database before giving up


def default_path() -> Path:
    """A file in the user's data directory, never the working directory (fixes defect 18)."""
    from ..config import data_dir

    return data_dir() / "vlk.db"


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
    if create_dirs and mode == "rwc" and not path.parent.is_dir():
        # Named by the user: a folder that is not there is more likely a typo than a wish (the default
        # location, above, is created).
        raise ConfigError(f"DATABASE_URL {url!r} names a file in {path.parent}, which does not exist; create the "
                          f"folder first (mkdir -p {path.parent}) or fix the URL.")
    return "file:" + quote(str(path)) + f"?mode={mode}"


def _make_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatabaseIOError(
            f"Cannot create the folder {folder} for the database ({exc.strerror}); create it writable by this "
            "user, or point DATABASE_URL at another place."
        ) from exc


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
        self._joined = Joined()  # the batch this thread's transactions join (store/batch.py)
        self._unsynced = False  # a batch(durable=False) committed what sync() has not yet made durable
        self._sync_lock = threading.Lock()
        self._conn = self._connect(writable=target != MEMORY and not is_read_only_url(target))
        self._conn_busy_ms = busy_timeout_ms  # the writing connection's busy timeout now (0 under no_wait)
        log.info("SQLite store ready at %s", target)

    def _connect(self, writable: bool) -> sqlite3.Connection:
        self._opened_immutable = False
        try:
            return open_connection(self.url, writable, self._busy_timeout_ms, self._trace, self._with_lock_retry)
        except sqlite3.Error as exc:
            error = sqlite_error(exc, self.url, "open")
            path = path_of(self.url)
            # SQLite cannot read a WAL database in a directory it may not write to unless the -wal file
            # exists; without one nothing can be writing to it, so an immutable view is safe and reads work.
            if isinstance(error, ReadOnlyDatabase) and path and not Path(path + "-wal").exists():
                try:
                    conn = open_connection("file:" + quote(path) + "?mode=ro&immutable=1", False, self._busy_timeout_ms,
                                           self._trace, self._with_lock_retry)
                except sqlite3.Error:
                    raise error from exc
                if writable:
                    log.warning("%s Serving reads only until then.", error)
                    self._read_only = True
                self._opened_immutable = True
                return conn
            raise error from exc

    def _connection(self, writing: bool = False) -> sqlite3.Connection:
        """The open connection, reopened first if the last one met a fault a new one may not have."""
        if self._stale or (writing and self._read_only):
            self._stale = True  # until a new connection is open: the old one is closed now
            self._conn.close()
            if writing:  # a write is the only way to learn that writing works again
                self._read_only = False
            self._conn = self._connect(writable=not is_read_only_url(self.url))  # raises while the fault lasts
            self._conn_busy_ms = self._busy_timeout_ms
            self._stale = False
            log.info("Reopened the SQLite database %s after an earlier error", self.url)
        return self._conn

    # ---- transactions ----

    def attempt(self) -> AbstractContextManager[None]:
        """Within it, the first write that would wait for a lock, this process's or another's, raises WouldWait
        before it changes anything; later writes of the same call wait as usual (server/tools.run_in_place)."""
        return no_wait()

    @contextmanager
    def write(self) -> Iterator[SqliteTx]:
        if self._joined.active:
            yield from self._savepoint(keep=True)
            return
        yield from self._writing(commit=True)

    @contextmanager
    def read(self) -> Iterator[SqliteTx]:
        if self._joined.active and self._joined.begin is None:  # the batch's open transaction: what it wrote
            # so far is visible on its connection only (before its first write, or after a commit, the
            # reading connection sees the same and takes no write lock)
            yield from self._run(self._joined.ready(), "read", commit=None)
            return
        if self.url == MEMORY:  # one in-memory database per connection: share the writer's
            with self._lock:
                conn = self._connection()
                self._begin_read(conn)
                yield from self._run(conn, "read")
            return
        with self._read_lock:
            conn = self._reading_connection()
            self._begin_read(conn)
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

    def _begin_read(self, conn: sqlite3.Connection) -> None:
        try:
            self._with_lock_retry(lambda: conn.execute("BEGIN"))
        except sqlite3.Error as exc:
            raise self._fault(exc, "read") from exc

    @contextmanager
    def dry_run(self) -> Iterator[SqliteTx]:
        """BEGIN IMMEDIATE then ROLLBACK: AUTOINCREMENT counters live in sqlite_sequence, rolled back too."""
        if self._joined.active:
            yield from self._savepoint(keep=False)
            return
        yield from self._writing(commit=False)

    @contextmanager
    def batch(self, durable: bool = True) -> Iterator[Batch]:
        """One write transaction at a time that this thread's write(), read() and dry_run() join
        (store/batch.py); after batch.commit() the next one begins when a joined transaction needs it. The
        write lock is taken when a transaction of the batch begins and released when it commits, so a batch
        that has not written yet (a hook event that only reads) waits for no other thread's writes.

        durable=False: its commits skip the fsync (synchronous=NORMAL: in the write-ahead log, safe from a crash
        of any process, not yet from a power cut) until sync(); the warm hook server answers first, then syncs
        (docs/guarantees.md)."""
        if self._joined.active:
            raise StoreError("a batch is already open in this thread; batches do not nest")
        held = [False]

        def release() -> None:
            if held[0]:
                held[0] = False
                self._lock.release()

        def begin() -> None:
            refuse = waiting_refused()  # under attempt(): WouldWait rather than wait, as a lone write()
            if not self._lock.acquire(blocking=not refuse):  # re-entrant: this thread's joined writes take it again
                raise WouldWait(f"another thread is writing to {self.url}")
            held[0] = True
            try:
                conn = self._joined.conn = self._connection(writing=True)
                self._conn_busy_ms = busy_for_write(conn, self._conn_busy_ms, self._busy_timeout_ms, refuse)
                if not durable:
                    conn.execute("PRAGMA synchronous = NORMAL")  # back to FULL when the commit ends
                begin_write(conn, self._with_lock_retry, refuse)
            except BaseException as exc:
                if not durable and self._joined.conn is not None:
                    self._restore_full(self._joined.conn)  # no transaction began: the connection stays at FULL
                release()
                if isinstance(exc, sqlite3.Error):
                    raise self._fault(exc, "write") from exc
                raise

        def end(keep: bool) -> None:
            """Commit (keep) or roll back the open transaction; the next one begins when a joined write needs it."""
            conn = self._joined.conn
            try:
                if conn is not None and conn.in_transaction:
                    if not keep:
                        _rollback(conn)
                        return
                    try:
                        conn.execute("COMMIT")
                        if not durable:
                            self._unsynced = True
                    except sqlite3.Error as exc:
                        _rollback(conn)
                        raise self._fault(exc, "write") from exc
            finally:
                self._joined.begin = begin
                if not durable and held[0] and conn is not None:
                    self._restore_full(conn)
                release()

        def commit() -> None:
            end(keep=True)

        self._joined.active, self._joined.conn, self._joined.begin = True, None, begin
        self._joined.abort = lambda: end(keep=False)
        try:
            try:
                yield Batch(commit)
            except sqlite3.Error as exc:
                raise self._fault(exc, "write") from exc
            commit()
        except BaseException:
            if held[0] and self._joined.conn is not None:
                _rollback(self._joined.conn)  # what was not committed
                if not durable:
                    self._restore_full(self._joined.conn)
            raise
        finally:
            release()
            self._joined.close()

    def _savepoint(self, keep: bool) -> Iterator[SqliteTx]:
        """A transaction joined to the batch: a savepoint (store/batch.py)."""
        yield from savepoint(self._joined, SqliteTx, keep, sqlite3.Error, lambda exc: self._fault(exc, "write"))

    def _writing(self, commit: bool) -> Iterator[SqliteTx]:
        refuse = waiting_refused()
        if not self._lock.acquire(blocking=not refuse):
            raise WouldWait(f"another thread is writing to {self.url}")
        try:
            conn = self._connection(writing=True)
            try:
                self._conn_busy_ms = busy_for_write(conn, self._conn_busy_ms, self._busy_timeout_ms, refuse)
                begin_write(conn, self._with_lock_retry, refuse)
            except sqlite3.Error as exc:
                raise self._fault(exc, "write") from exc
            yield from self._run(conn, "write", commit=commit)
        finally:
            self._lock.release()

    def _run(self, conn: sqlite3.Connection, doing: str, commit: bool | None = True) -> Iterator[SqliteTx]:
        """Yield a transaction on conn, then commit, roll back (commit False) or leave it open (None: a read
        joined to a batch)."""
        try:
            yield SqliteTx(conn)
        except sqlite3.Error as exc:
            if commit is not None:
                _rollback(conn)
            raise self._fault(exc, doing) from exc
        except BaseException:
            if commit is not None:
                _rollback(conn)
            raise
        if commit is None:
            return
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
        return with_lock_retry(action, self._lock_wait, self.url)

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

    def _restore_full(self, conn: sqlite3.Connection) -> None:
        """Every other transaction of the connection commits with an fsync again; a connection that cannot say
        so is reopened (it opens with synchronous=FULL)."""
        try:
            conn.execute("PRAGMA synchronous = FULL")
        except sqlite3.Error as exc:
            log.warning("could not restore synchronous=FULL (%s); the connection is reopened", exc)
            self._stale = True

    def sync(self) -> None:
        """Make durable what batch(durable=False) committed: one fsync of the write-ahead log, the one its
        commits skipped (a checkpoint since has synced it already). Returns once it is on disk."""
        path = path_of(self.url)
        with self._sync_lock:
            if not self._unsynced or path is None:
                return
            self._unsynced = False
            try:
                fd = os.open(path + "-wal", os.O_RDONLY)
            except FileNotFoundError:
                return  # the last connection closed: its checkpoint synced the log into the file and removed it
            try:
                os.fsync(fd)
            except OSError:
                self._unsynced = True
                raise
            finally:
                os.close(fd)

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
