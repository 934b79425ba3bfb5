"""Reading another program's SQLite database, read-only: OpenCode keeps its past sessions in one.

Only the store imports database drivers, so the learner (learn/opencode.py) and the install note
(hosts/shared/session_stores.py) read OpenCode's database through here. The file is opened `mode=ro`, so nothing
is ever written and a running OpenCode (its WAL writer) is never disturbed; a folder we may not write to (no
`-shm` file can be made) falls back to an immutable view. Each query runs in one read transaction: one
consistent snapshot even while OpenCode writes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..core.errors import StoreError

BUSY_TIMEOUT_MS = 5000


def _connect(path: Path, immutable: bool) -> sqlite3.Connection:
    uri = "file:" + quote(str(path)) + ("?immutable=1" if immutable else "?mode=ro")
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000,
                           check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def read_rows(path: Path, queries: Sequence[tuple[str, Sequence[Any]]]) -> list[list[tuple[Any, ...]]]:
    """The rows of each query, all read in one snapshot of the database at path; StoreError says why not."""
    for immutable in (False, True):
        try:
            conn = _connect(path, immutable)
        except sqlite3.Error as exc:
            problem = exc
            continue
        try:
            conn.execute("BEGIN")
            found = [conn.execute(query, tuple(params)).fetchall() for query, params in queries]
            conn.execute("COMMIT")
            return found
        except sqlite3.OperationalError as exc:
            problem = exc
            if "unable to open" not in str(exc) and "readonly" not in str(exc).lower():
                break
        except sqlite3.Error as exc:
            problem = exc
            break
        finally:
            conn.close()
    raise StoreError(f"cannot read the database {path}: {problem}")


def tables(path: Path) -> set[str]:
    """The table names of the database at path (empty when it is not a database we can read)."""
    try:
        [rows] = read_rows(path, [("SELECT name FROM sqlite_master WHERE type = 'table'", ())])
    except StoreError:
        return set()
    return {r[0] for r in rows}
