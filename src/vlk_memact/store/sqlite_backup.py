"""A consistent copy of a live SQLite database (the online backup API), checked before it replaces FILE.

The copy is taken in one backup step, that is inside one read transaction: in WAL mode that
snapshot never blocks the servers that keep writing, and no write of theirs can make the step
restart (SQLite restarts a multi-step backup whenever another connection writes). The copy is
written next to FILE, switched to a self-contained rollback-journal file, verified with
integrity_check, synced, and only then renamed over FILE: a failed backup never leaves a half file.
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import DatabaseCorrupt, InvalidInput, StoreError
from .health import open_read_only
from .sqlite_errors import path_of, sqlite_error


@dataclass(frozen=True, slots=True)
class BackupReport:
    source: str
    destination: str
    pages: int
    size_bytes: int
    slots: int
    integrity: str
    seconds: float


def backup_sqlite(target: str, destination: Path, busy_timeout_ms: int = 5000) -> BackupReport:
    """Copy the database `target` (a SQLite URI filename) to destination; raise a typed StoreError on failure."""
    source_path = path_of(target)
    if source_path is None:
        raise InvalidInput("an in-memory database has nothing to back up; set DATABASE_URL to a file.")
    source_file = Path(source_path)
    if not source_file.exists():
        raise InvalidInput(f"there is no database at {source_file} to back up (check DATABASE_URL).")
    destination = destination.expanduser().resolve()
    if destination == source_file.resolve() or destination.name.startswith(source_file.name + "-"):
        raise InvalidInput(f"the backup must go to another file than the database itself ({source_file}).")
    if destination.is_dir():
        raise InvalidInput(f"{destination} is a directory; give the backup a file name.")
    started = time.monotonic()
    partial = destination.with_name(f".{destination.name}.partial-{os.getpid()}")
    try:
        source = open_read_only(target, timeout=busy_timeout_ms / 1000)
    except sqlite3.Error as exc:
        raise sqlite_error(exc, target, "read") from exc
    try:
        copy = sqlite3.connect(partial, isolation_level=None)
    except sqlite3.Error as exc:
        source.close()
        raise _destination_error(exc, partial) from exc
    try:
        try:
            source.backup(copy)  # pages=-1: the whole database in one step, one snapshot
        except sqlite3.Error as exc:
            # Which side failed? The copy is a fresh local file: a read error is the source's.
            side = "write" if "readonly" in str(exc) or "full" in str(exc) else "read"
            raise (sqlite_error(exc, target, side) if side == "read" else _destination_error(exc, partial)) from exc
        try:
            copy.execute("PRAGMA journal_mode = DELETE")  # one self-contained file, no -wal beside it
            verdict = [row[0] for row in copy.execute("PRAGMA integrity_check")]
            pages = int(copy.execute("PRAGMA page_count").fetchone()[0])
            try:
                slots = int(copy.execute("SELECT COUNT(*) FROM agent_timeline").fetchone()[0])
            except sqlite3.Error:
                slots = 0  # a database vlk-memact never wrote to
        except sqlite3.Error as exc:
            raise _destination_error(exc, partial) from exc
        if verdict != ["ok"]:
            raise DatabaseCorrupt(
                f"The copy of {source_file} failed integrity_check ({'; '.join(verdict[:3])}), so no backup was "
                "written; the database itself is probably damaged: run `vlk-memact doctor`."
            )
    except BaseException:
        copy.close()
        source.close()
        partial.unlink(missing_ok=True)
        raise
    copy.close()
    source.close()
    try:
        with partial.open("rb+") as handle:
            os.fsync(handle.fileno())
        size = partial.stat().st_size
        os.replace(partial, destination)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise StoreError(f"could not write the backup {destination}: {exc.strerror}; choose another place.") from exc
    return BackupReport(str(source_file), str(destination), pages, size, slots, "ok", time.monotonic() - started)


def _destination_error(exc: sqlite3.Error, partial: Path) -> StoreError:
    error = sqlite_error(exc, "file:" + str(partial), "write")
    return type(error)(f"Could not write the backup next to {partial.parent}: {error}")
