"""Translate psycopg errors into the typed StoreErrors of vlk_memact.errors, naming the server, never its password.

A lost or refused connection is DatabaseUnavailable (retryable: the pool reconnects by itself);
the SQLSTATE classes PostgreSQL uses for a full disk, a read-only server, missing privileges and
damaged data get their own types, like the SQLite store's.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict

from ..core.errors import (
    DatabaseCorrupt,
    DatabaseLocked,
    DatabaseUnavailable,
    DiskFull,
    ReadOnlyDatabase,
    StoreError,
)

_OUTCOME = {
    "write": "so nothing of this call was saved",
    "read": "so this call could not read it",
    "open": "so it could not be opened",
    # A COMMIT whose answer never came: the server may have applied it before the connection dropped.
    "commit": "while this call was committing, so it may or may not have been saved (check with "
    "vlk_get_history before repeating a write)",
}


def server_of(conninfo: str) -> str:
    """HOST:PORT of a libpq connection string or URL, for messages (the password is never part of it)."""
    try:
        params: dict[str, Any] = conninfo_to_dict(conninfo)
    except psycopg.Error:
        return "the configured server"
    host = str(params.get("host") or params.get("hostaddr") or "the local socket")
    port = str(params.get("port") or "5432")
    return f"{host}:{port}"


def _password(conninfo: str) -> str | None:
    try:
        value = conninfo_to_dict(conninfo).get("password")
    except psycopg.Error:
        return None
    return str(value) if value else None


def _detail(exc: BaseException, conninfo: str) -> str:
    """The driver's message on one line, with any password cut out (libpq does not print it; be sure)."""
    text = re.sub(r"\s+", " ", str(exc)).strip() or type(exc).__name__
    secret = _password(conninfo)
    if secret:
        text = text.replace(secret, "***")
    return text[:300]


def is_connection_error(exc: BaseException) -> bool:
    """Did the server go away (refused, dropped, shutting down), as opposed to rejecting a statement?"""
    return isinstance(exc, psycopg.OperationalError) and not isinstance(
        exc, (pg_errors.LockNotAvailable, pg_errors.QueryCanceled, pg_errors.DiskFull)
    )


def unavailable(exc: BaseException, conninfo: str, doing: str, midway: bool = False) -> DatabaseUnavailable:
    server = server_of(conninfo)
    outcome = _OUTCOME.get(doing, _OUTCOME["write"])
    if midway and doing != "commit":
        return DatabaseUnavailable(
            f"The connection to the PostgreSQL server at {server} was lost during this call "
            f"({_detail(exc, conninfo)}), {outcome}; call again in a moment: vlk-memact reconnects by itself."
        )
    if doing == "open":
        return DatabaseUnavailable(
            f"vlk-memact could not open PostgreSQL database at {server}: the server cannot be reached "
            f"({_detail(exc, conninfo)}); check that it is running and accepts connections there, or fix the "
            "host and port in DATABASE_URL."
        )
    if doing == "commit":
        return DatabaseUnavailable(
            f"The connection to the PostgreSQL server at {server} was lost ({_detail(exc, conninfo)}) {outcome}; "
            "vlk-memact reconnects by itself once the server is back."
        )
    return DatabaseUnavailable(
        f"Cannot reach the PostgreSQL server at {server} ({_detail(exc, conninfo)}), {outcome}; check that the "
        "server is running and accepts connections (or fix DATABASE_URL), then call again: vlk-memact "
        "reconnects by itself."
    )


def lock_timeout_error(conninfo: str, waited_seconds: float) -> DatabaseLocked:
    """The retryable error after the store gave up waiting for another session's write lock."""
    return DatabaseLocked(
        f"The vlk-memact tables on {server_of(conninfo)} stayed locked by another session for "
        f"{waited_seconds:.1f} s, so this call did nothing; call again in a moment, and if it keeps happening "
        "look for a stuck session in pg_stat_activity."
    )


def postgres_error(exc: BaseException, conninfo: str, doing: str, midway: bool = False) -> StoreError:
    """The typed StoreError for a psycopg error met while `doing` ('open', 'read', 'write' or 'commit');
    midway: inside a transaction that had started (the connection was there, then went away)."""
    server = server_of(conninfo)
    outcome = _OUTCOME.get(doing, _OUTCOME["write"])
    detail = _detail(exc, conninfo)
    if isinstance(exc, pg_errors.DiskFull):
        return DiskFull(
            f"The PostgreSQL server at {server} has no disk space left ({detail}), {outcome}; free space on "
            "the server's data disk and call again: reads keep working meanwhile."
        )
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction):
        return ReadOnlyDatabase(
            f"The PostgreSQL server at {server} accepts only reads ({detail}: a standby, or "
            f"default_transaction_read_only), {outcome}; point DATABASE_URL at the primary: reads keep working."
        )
    if isinstance(exc, pg_errors.InsufficientPrivilege):
        return ReadOnlyDatabase(
            f"The PostgreSQL role of DATABASE_URL may not do this on {server} ({detail}), {outcome}; grant it "
            "INSERT, UPDATE, DELETE and SELECT on vlk-memact's tables (or use the role that created them)."
        )
    if isinstance(exc, (pg_errors.DataCorrupted, pg_errors.IndexCorrupted)):
        return DatabaseCorrupt(
            f"The PostgreSQL server at {server} reports damaged data ({detail}), {outcome}; nothing was "
            "repaired: run `vlk-memact doctor`, then restore from a backup (pg_dump or `vlk-memact export`)."
        )
    if isinstance(exc, pg_errors.LockNotAvailable):
        return DatabaseLocked(
            f"The vlk-memact tables on {server} stayed locked by another session ({detail}), {outcome}; call "
            "again in a moment, and if it keeps happening look for a stuck session in pg_stat_activity."
        )
    if is_connection_error(exc):
        return unavailable(exc, conninfo, doing, midway)
    return StoreError(f"The PostgreSQL server at {server} failed ({detail}), {outcome}; run `vlk-memact doctor`.")
