"""Translate sqlite3 errors into the typed StoreErrors of vlk_memact.errors, with a message that says what to do.

SQLite reports the cause in its result code (exposed by Python 3.11 as `sqlite_errorcode`); the
message names the file, says whether anything was saved and what the user can do. Nothing here
retries or repairs: the store decides that (a lock is retried, a damaged file is never touched).
"""

from __future__ import annotations

import getpass
import shutil
import sqlite3
from pathlib import Path
from urllib.parse import unquote

try:
    import resource
except ImportError:  # not on Windows
    resource = None  # type: ignore[assignment]

from ..core.errors import (
    DatabaseCorrupt,
    DatabaseIOError,
    DatabaseLocked,
    DiskFull,
    ReadOnlyDatabase,
    StoreError,
)

# Primary result codes (https://www.sqlite.org/rescode.html).
SQLITE_PERM, SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY = 3, 5, 6, 8
SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_NOTADB = 10, 11, 13, 14, 26
LOW_SPACE_BYTES = 1 << 20  # below this, an I/O error while writing is a full disk reported through another path

# What the failed call did to the data, by the kind of operation that failed.
_OUTCOME = {
    "write": "so nothing of this call was saved",
    "read": "so this call could not read it",
    "open": "so it could not be opened",
}


def path_of(target: str) -> str | None:
    """The file a SQLite URI filename names (None for ':memory:')."""
    if not target.startswith("file:"):
        return None
    return unquote(target[len("file:") :].partition("?")[0])


def result_code(exc: sqlite3.Error) -> int:
    """The primary result code of a sqlite3 error (0 when the driver gave none)."""
    return (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF


def is_read_only_url(target: str) -> bool:
    return "mode=ro" in target.partition("?")[2].split("&")


def sqlite_error(exc: sqlite3.Error, target: str, doing: str) -> StoreError:
    """The typed StoreError for a sqlite3 error met while `doing` ('open', 'read' or 'write')."""
    path = path_of(target) or "the in-memory database"
    outcome = _OUTCOME.get(doing, _OUTCOME["write"])
    code = result_code(exc)
    detail = f"SQLite: {exc}"
    if code == SQLITE_FULL or (code == SQLITE_IOERR and doing == "write" and _low_space(path)):
        return DiskFull(
            f"The disk holding {path} is full ({detail}), {outcome}; free space on that disk (or point "
            "DATABASE_URL at a file on another one) and call again: reads keep working meanwhile."
        )
    if code in (SQLITE_READONLY, SQLITE_PERM):
        if is_read_only_url(target):
            return ReadOnlyDatabase(
                f"The database {path} is opened read-only (mode=ro in DATABASE_URL), {outcome}; "
                "remove mode=ro from DATABASE_URL to record: reads keep working."
            )
        return ReadOnlyDatabase(
            f"The database {path} is read-only for this process ({detail}: file or directory permissions, "
            f"or a read-only file system), {outcome}; make the file and its directory writable by user "
            f"{_user()} (chmod u+w), or point DATABASE_URL at a writable file: reads keep working meanwhile."
        )
    if code in (SQLITE_CORRUPT, SQLITE_NOTADB):
        return DatabaseCorrupt(
            f"{path} is not a vlk-memact database or is damaged ({detail}), {outcome}; the file was left "
            "untouched: run `vlk-memact doctor`, then restore a backup over it or move it aside so that a "
            "new database is created."
        )
    if code in (SQLITE_BUSY, SQLITE_LOCKED):
        return DatabaseLocked(
            f"The database {path} is locked by another process ({detail}), {outcome}; call again in a moment, "
            f"and if it keeps happening look for a stuck process holding the file (fuser {path})."
        )
    if code == SQLITE_CANTOPEN:
        return DatabaseIOError(
            f"vlk-memact could not open SQLite database {path} ({detail}); check that its directory exists and that user "
            f"{_user()} may read and write both, or point DATABASE_URL at another file."
        )
    if code == SQLITE_IOERR:
        limit = _file_size_limit()
        if limit is not None and doing == "write":
            return DatabaseIOError(
                f"The operating system refused to write {path} ({detail}): this process may write files of "
                f"at most {limit} bytes (ulimit -f), {outcome}; raise that limit and call again."
            )
        return DatabaseIOError(
            f"The operating system failed a read or write of {path} ({detail}), {outcome}; check the disk "
            "(free space, dmesg) and call again."
        )
    return StoreError(f"The database {path} failed ({detail}), {outcome}; run `vlk-memact doctor` for a diagnosis.")


def lock_timeout_error(target: str, waited_seconds: float) -> DatabaseLocked:
    """The retryable error after the store gave up waiting for another process's write lock."""
    path = path_of(target) or "the in-memory database"
    return DatabaseLocked(
        f"The database {path} stayed locked by another process for {waited_seconds:.1f} s, so this call did "
        f"nothing; call again in a moment, and if it keeps happening look for a stuck process holding the "
        f"file (fuser {path})."
    )


def _low_space(path: str) -> bool:
    try:
        return shutil.disk_usage(Path(path).parent).free < LOW_SPACE_BYTES
    except OSError:
        return False


def _file_size_limit() -> int | None:
    if resource is None:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else soft


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry for this uid
        import os

        return str(os.getuid())
