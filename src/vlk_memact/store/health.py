"""The database checks of `vlk-memact doctor`, for each backend, without opening a Store.

A Store refuses to open a damaged or unreachable database (that is its job); the doctor must look
at exactly those. So these checks open their own short-lived connections, read-only wherever they
can, never migrate, never write, and never try to repair anything.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from ..core.checks import Check, failed, passed
from .sqlite_errors import (
    SQLITE_CORRUPT,
    SQLITE_NOTADB,
    SQLITE_READONLY,
    is_read_only_url,
    path_of,
    result_code,
)
from .sqlite_schema import SCHEMA_VERSION as SQLITE_SCHEMA_VERSION

DB = "database"
WAL_LIMIT_BYTES = 256 << 20  # a WAL this large means checkpoints cannot keep up (a reader that never ends)
FREE_SPACE_BYTES = 64 << 20  # below this, the next burst of writes may fail with "disk is full"
RESTORE_FIX = (
    "restore a backup over it (`vlk-memact backup FILE` makes them), or move it aside together with its -wal "
    "and -shm files (mv {path} {path}.damaged) so that a new database is created at the next start; do not "
    "delete it before a copy is safe"
)


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} bytes"


# ---------------------------------------------------------------- SQLite


def sqlite_checks(target: str, busy_timeout_ms: int = 1000, default_location: bool = False) -> list[Check]:
    """Checks of the SQLite database a URI filename names (see sqlite.sqlite_target). default_location: the
    file in the user data directory, whose folder is created at the first start (a folder a URL names is not)."""
    name = path_of(target)
    if name is None:
        return [passed(DB, "database file", "in memory (sqlite::memory:): nothing is kept after the process ends")]
    path = Path(name)
    folder = path.parent
    read_only_url = is_read_only_url(target)
    creatable = "mode=rwc" in target
    checks: list[Check] = []
    if not path.exists():
        if not creatable:
            return [failed(DB, "database file", f"{path} does not exist",
                           "check DATABASE_URL (with mode=rw or mode=ro the file must exist already)")]
        if folder.is_dir() and os.access(folder, os.W_OK | os.X_OK) and not _read_only_fs(folder):
            return [passed(DB, "database file", f"{path} does not exist yet; it is created at the first start")]
        if not folder.exists() and not default_location:
            return [failed(DB, "database file", f"{path} is in {folder}, which does not exist",
                           f"create it (mkdir -p {folder}), or fix DATABASE_URL: a folder it names is not created")]
        made_in = next((f for f in folder.parents if f.is_dir()), None) if not folder.exists() else None
        if made_in is not None and os.access(made_in, os.W_OK | os.X_OK) and not _read_only_fs(made_in):
            return [passed(DB, "database file", f"{path} does not exist yet; it and its folder are created at the "
                           "first start")]
        return [failed(DB, "database file", f"{path} does not exist and {made_in or folder} is not writable",
                       f"create {folder} writable by this user, or point DATABASE_URL at a writable place")]
    wal = path.with_name(path.name + "-wal")
    checks.append(passed(DB, "database file", f"{path} ({_size(path.stat().st_size)})"))
    checks.append(_sqlite_permissions(path, read_only_url))
    opened = _sqlite_open(target, path)
    checks.append(opened[0])
    conn = opened[1]
    if conn is not None:
        try:
            checks.append(_sqlite_schema(conn))
            checks.append(_sqlite_quick_check(conn, path))
        finally:
            conn.close()
        if not read_only_url and checks[1].ok:
            checks.append(_sqlite_write_lock(target, path, busy_timeout_ms))
    wal_size = wal.stat().st_size if wal.exists() else 0
    if wal_size > WAL_LIMIT_BYTES:
        checks.append(failed(DB, "WAL size", f"{wal} is {_size(wal_size)}",
                             "run `vlk-memact maintenance` (it checkpoints the WAL); if it grows back, look for a "
                             "process that keeps a read transaction open"))
    else:
        checks.append(passed(DB, "WAL size", f"{_size(wal_size)} (limit {_size(WAL_LIMIT_BYTES)})"))
    checks.append(_free_space(folder))
    return checks


def _read_only_fs(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _sqlite_permissions(path: Path, read_only_url: bool) -> Check:
    folder = path.parent
    if not os.access(path, os.R_OK):
        return failed(DB, "permissions", f"{path} is not readable by this user",
                      f"chmod u+r {path} (or run vlk-memact as its owner)")
    if read_only_url:
        return passed(DB, "permissions", "read-only by DATABASE_URL (mode=ro): reads work, every write fails")
    problems = []
    if _read_only_fs(folder):
        problems.append(f"{folder} is on a read-only file system")
    if not os.access(path, os.W_OK):
        problems.append(f"{path} is not writable")
    if not os.access(folder, os.W_OK | os.X_OK):
        problems.append(f"{folder} is not writable (SQLite creates the -wal and -shm files there)")
    if problems:
        return failed(DB, "permissions", "; ".join(problems) + ": reads work, every write fails",
                      f"chmod u+w {path} {folder} (or remount the file system read-write), or add mode=ro to "
                      "DATABASE_URL if read-only is intended")
    return passed(DB, "permissions", "the file and its directory are readable and writable")


def _sqlite_open(target: str, path: Path) -> tuple[Check, sqlite3.Connection | None]:
    conn = None
    try:
        conn = open_read_only(target)
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "agent_timeline" not in tables:
            return passed(DB, "opens", f"opens as SQLite {sqlite3.sqlite_version}; no vlk-memact tables yet"), conn
        slots = conn.execute("SELECT COUNT(*) FROM agent_timeline").fetchone()[0]
    except sqlite3.Error as exc:
        if conn is not None:
            conn.close()
        if result_code(exc) in (SQLITE_CORRUPT, SQLITE_NOTADB):
            what = "is not a database or is damaged" if result_code(exc) == SQLITE_NOTADB else "is damaged"
            return failed(DB, "opens", f"{path} {what} (SQLite: {exc})", RESTORE_FIX.format(path=path)), None
        return failed(DB, "opens", f"{path} cannot be read (SQLite: {exc})",
                      "see the permissions check; the file must be readable by this user"), None
    return passed(DB, "opens", f"opens as SQLite {sqlite3.sqlite_version}; {slots} slots"), conn


def open_read_only(target: str, timeout: float = 5.0) -> sqlite3.Connection:
    """A read-only connection that never writes the file, also in a directory this user may not write to."""
    base = target.partition("?")[0]
    try:
        return _read_only_connection(base + "?mode=ro", timeout)
    except sqlite3.Error as exc:
        # A WAL database in a directory we may not write to opens only immutable (nothing can write it then).
        path = path_of(target)
        if result_code(exc) != SQLITE_READONLY or path is None or Path(path + "-wal").exists():
            raise
        return _read_only_connection(base + "?mode=ro&immutable=1", timeout)


def _read_only_connection(uri: str, timeout: float) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, timeout=timeout)
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


def _sqlite_schema(conn: sqlite3.Connection) -> Check:
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.Error as exc:
        return failed(DB, "schema version", f"unreadable (SQLite: {exc})", "run `vlk-memact doctor` again after the "
                      "other failures are fixed")
    if version > SQLITE_SCHEMA_VERSION:
        return failed(DB, "schema version", f"{version}, newer than this vlk-memact ({SQLITE_SCHEMA_VERSION})",
                      "upgrade vlk-memact (pip install -U vlk-memact): an older release cannot use this file")
    if version < SQLITE_SCHEMA_VERSION:
        return passed(DB, "schema version", f"{version}; upgraded to {SQLITE_SCHEMA_VERSION} at the next start")
    return passed(DB, "schema version", f"{version} (current)")


def _sqlite_quick_check(conn: sqlite3.Connection, path: Path) -> Check:
    try:
        verdict = [row[0] for row in conn.execute("PRAGMA quick_check")]
    except sqlite3.Error as exc:
        verdict = [f"SQLite: {exc}"]
    if verdict == ["ok"]:
        return passed(DB, "integrity (quick_check)", "ok")
    return failed(DB, "integrity (quick_check)", "; ".join(verdict[:3]), RESTORE_FIX.format(path=path))


def _sqlite_write_lock(target: str, path: Path, busy_timeout_ms: int) -> Check:
    """Can a writer get the lock now? A process holding it for long is what makes writes time out."""
    try:
        conn = sqlite3.connect(target.replace("mode=rwc", "mode=rw"), uri=True, isolation_level=None,
                               timeout=busy_timeout_ms / 1000)
    except sqlite3.Error as exc:
        return failed(DB, "write lock", f"cannot open for writing (SQLite: {exc})", "see the permissions check")
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
    except sqlite3.Error as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return failed(DB, "write lock", f"another process has held the write lock for over "
                          f"{busy_timeout_ms} ms (SQLite: {exc})",
                          f"find it with `fuser {path}` (or lsof) and end it if it is stuck; writes wait for it")
        return failed(DB, "write lock", f"SQLite: {exc}", "see the permissions check")
    finally:
        conn.close()
    return passed(DB, "write lock", "free (no process holds it)")


def _free_space(folder: Path) -> Check:
    try:
        free = shutil.disk_usage(folder).free
    except OSError as exc:
        return failed(DB, "free space", f"cannot tell for {folder}: {exc.strerror}", "check that the directory exists")
    if free < FREE_SPACE_BYTES:
        return failed(DB, "free space", f"{_size(free)} free on the disk holding {folder}",
                      "free space on that disk: writes fail with 'disk is full' when it runs out, and succeed again "
                      "as soon as there is room")
    return passed(DB, "free space", f"{_size(free)} free on the disk holding {folder}")


# ---------------------------------------------------------------- PostgreSQL


def postgres_checks(url: str) -> list[Check]:
    """Checks of the PostgreSQL database a DATABASE_URL names: reachability, schema, integrity, permissions."""
    try:
        import psycopg
    except ImportError:
        return [failed(DB, "driver", "psycopg is not installed", "pip install 'vlk-memact[postgres]'")]
    from .postgres import postgres_target
    from .postgres_errors import server_of
    from .postgres_schema import SCHEMA_VERSION, VERSION_TABLE

    conninfo, schema = postgres_target(url)
    server = server_of(conninfo)
    try:
        conn = psycopg.connect(conninfo, autocommit=True, connect_timeout=5)
    except psycopg.Error as exc:
        from .postgres_errors import _detail

        return [failed(DB, "server reachable", f"cannot reach {server} ({_detail(exc, conninfo)})",
                       "start the server, or fix the host, port, user and database in DATABASE_URL")]
    checks = []
    with conn:
        if schema is not None:
            conn.execute("SELECT set_config('search_path', quote_ident(%s), false)", (schema,))
        version_text = conn.execute("SHOW server_version").fetchone()
        current = conn.execute("SELECT current_schema()").fetchone()
        checks.append(passed(DB, "server reachable", f"{server}, PostgreSQL {version_text[0] if version_text else '?'}"))
        if not current or current[0] is None:
            checks.append(failed(DB, "schema", "the search_path names no existing schema",
                                 "add ?schema=NAME to DATABASE_URL (it is created), or create the schema"))
            return checks
        name = current[0]
        if conn.execute("SELECT to_regclass(%s)", (VERSION_TABLE,)).fetchone() == (None,):
            checks.append(passed(DB, "schema version", f"schema {name} has no vlk-memact tables yet; "
                                 "created at the first start"))
            return checks
        row = conn.execute(f"SELECT COALESCE(MAX(version), 0) FROM {VERSION_TABLE}").fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            checks.append(failed(DB, "schema version", f"{version} in schema {name}, newer than this vlk-memact "
                                 f"({SCHEMA_VERSION})", "upgrade vlk-memact (pip install -U vlk-memact)"))
        else:
            checks.append(passed(DB, "schema version", f"{version} in schema {name}" +
                                 (" (current)" if version == SCHEMA_VERSION else f"; upgraded to {SCHEMA_VERSION} "
                                  "at the next start")))
        checks.append(_postgres_integrity(conn))
        checks.append(_postgres_permissions(conn))
        checks.append(_postgres_space(conn))
    return checks


_TABLES = ("memory_contents", "agent_timeline", "constraint_links", "constraint_keys")


def _postgres_integrity(conn: Any) -> Check:
    """The nearest thing to quick_check: read every table in full, and check the indexes with amcheck if present."""
    import psycopg

    try:
        counts = {t: conn.execute(f"SELECT COUNT(*) FROM (SELECT * FROM {t} OFFSET 0) AS scan").fetchone()[0]
                  for t in _TABLES}
        failures = conn.execute("SELECT checksum_failures FROM pg_stat_database "
                                "WHERE datname = current_database()").fetchone()
        amcheck = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'amcheck'").fetchone()
        indexes = 0
        if amcheck:
            for (index,) in conn.execute(
                "SELECT i.indexrelid::regclass::text FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid "
                "JOIN pg_am a ON a.oid = (SELECT relam FROM pg_class WHERE oid = i.indexrelid) "
                "WHERE c.relnamespace = current_schema()::regnamespace AND a.amname = 'btree'"
            ).fetchall():
                conn.execute("SELECT bt_index_check(%s::regclass)", (index,))
                indexes += 1
    except psycopg.Error as exc:
        return failed(DB, "integrity", f"reading the tables failed: {exc}",
                      "restore from a backup (pg_dump, or `vlk-memact export` files); see the server log")
    if failures and failures[0]:
        return failed(DB, "integrity", f"the server counted {failures[0]} data checksum failures in this database",
                      "restore from a backup; check the server's disk")
    how = f"{indexes} indexes checked with amcheck" if amcheck else "amcheck not installed (CREATE EXTENSION amcheck " \
        "to check indexes too)"
    return passed(DB, "integrity", f"every table read in full ({counts['agent_timeline']} slots); {how}")


def _postgres_permissions(conn: Any) -> Check:
    read_only = conn.execute("SELECT pg_is_in_recovery(), current_setting('default_transaction_read_only')").fetchone()
    if read_only[0]:
        return failed(DB, "permissions", "the server is a standby (read-only)", "point DATABASE_URL at the primary")
    if read_only[1] == "on":
        return failed(DB, "permissions", "default_transaction_read_only is on: every write fails",
                      "ALTER ROLE ... SET default_transaction_read_only = off, or use another role")
    missing = [t for t in _TABLES if not conn.execute(
        "SELECT has_table_privilege(%s, 'SELECT, INSERT, UPDATE, DELETE')", (t,)).fetchone()[0]]
    if missing:
        return failed(DB, "permissions", f"this role may not read and write {', '.join(missing)}",
                      "GRANT SELECT, INSERT, UPDATE, DELETE ON those tables to the role of DATABASE_URL")
    return passed(DB, "permissions", "this role may read and write every vlk-memact table")


def _postgres_space(conn: Any) -> Check:
    import psycopg

    size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    try:
        wal = conn.execute("SELECT COALESCE(SUM(size), 0) FROM pg_ls_waldir()").fetchone()[0]
        wal_text = f"; WAL {_size(int(wal))}"
    except psycopg.Error:
        wal_text = "; WAL size not visible to this role (needs pg_monitor)"
    return passed(DB, "size", f"database {_size(int(size))}{wal_text} (free disk space is the server's to watch)")
