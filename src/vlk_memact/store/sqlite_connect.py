"""Opening a SQLite connection the way the store needs it, and retrying what a locked database refused.

Apart from SqliteStore so that the store class keeps to its connections' lifecycle and transactions.
"""

from __future__ import annotations

import logging
import random
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from ..core.errors import StoreError, WouldWait
from .sqlite_errors import lock_timeout_error
from .sqlite_schema import migrate

log = logging.getLogger("vlk_memact.store.sqlite")
T = TypeVar("T")

MEMORY = ":memory:"


# Set by no_wait() for one call; cleared by the first transaction that gets its lock, so that a call never
# stops half done: only its first lock can refuse to wait.
_NO_WAIT: ContextVar[bool] = ContextVar("vlk_sqlite_no_wait", default=False)


@contextmanager
def no_wait() -> Iterator[None]:
    """Within it, the first write that would wait for a lock raises WouldWait at once instead."""
    token = _NO_WAIT.set(True)
    try:
        yield
    finally:
        _NO_WAIT.reset(token)


def waiting_refused() -> bool:
    return _NO_WAIT.get()


def busy_for_write(conn: sqlite3.Connection, now_ms: int, busy_timeout_ms: int, refuse: bool) -> int:
    """Give the writing connection the busy timeout of this write (none when it refuses to wait); it is set
    only when it changes, so a run of writes of one kind costs no statement. Returns the timeout now set."""
    wanted = 0 if refuse else busy_timeout_ms
    if now_ms != wanted:
        conn.execute(f"PRAGMA busy_timeout = {int(wanted)}")
    return wanted


def begin_write(conn: sqlite3.Connection, retry: Callable[[Callable[[], object]], object], refuse: bool) -> None:
    """BEGIN IMMEDIATE, retried up to the lock wait; when it refuses to wait (no_wait), tried once (WouldWait if
    the database is locked), after which the call waits as usual: it holds its first lock."""
    if not refuse:
        retry(lambda: conn.execute("BEGIN IMMEDIATE"))
        return
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if is_lock_error(exc):
            raise WouldWait("another process is writing to the database") from exc
        raise
    _NO_WAIT.set(False)


def is_lock_error(exc: sqlite3.Error) -> bool:
    message = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in message or "busy" in message)


def _fold(text: str | None) -> str | None:
    return None if text is None else text.casefold()


def open_connection(
    target: str, writable: bool, busy_timeout_ms: int, trace: Callable[[str], object] | None,
    retry: Callable[[Callable[[], T]], T],
) -> sqlite3.Connection:
    """A connection with the store's PRAGMAs (WAL, synchronous=FULL, foreign keys), migrated when writable."""
    conn = sqlite3.connect(
        target,
        uri=target != MEMORY,
        check_same_thread=False,
        isolation_level=None,  # we issue BEGIN / COMMIT ourselves
        timeout=busy_timeout_ms / 1000,
    )
    try:
        conn.set_trace_callback(trace)
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        if writable:
            mode = retry(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
            if mode.lower() != "wal":
                raise StoreError(f"could not switch {target} to WAL journaling (got {mode!r})")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.create_function("vlk_fold", 1, _fold, deterministic=True)
        if writable or target == MEMORY:
            retry(lambda: migrate(conn))
        else:
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # fail here, not at the first read
        return conn
    except BaseException:
        conn.close()
        raise


def with_lock_retry(action: Callable[[], T], lock_wait: float, url: str) -> T:
    """Retry an action the busy timeout could not get through, with jittered backoff, up to the lock wait."""
    started = time.monotonic()
    deadline = started + lock_wait
    delay = 0.01
    while True:
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if not is_lock_error(exc):
                raise
            if time.monotonic() > deadline:
                error = lock_timeout_error(url, time.monotonic() - started)
                log.warning("%s", error)
                raise error from exc
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.5)
