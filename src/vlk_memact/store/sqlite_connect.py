"""Opening a SQLite connection the way the store needs it, and retrying what a locked database refused.

Apart from SqliteStore so that the store class keeps to its connections' lifecycle and transactions.
"""

from __future__ import annotations

import logging
import random
import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar

from ..core.errors import StoreError
from .sqlite_errors import lock_timeout_error
from .sqlite_schema import migrate

log = logging.getLogger("vlk_memact.store.sqlite")
T = TypeVar("T")

MEMORY = ":memory:"


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
            message = str(exc).lower()
            if "locked" not in message and "busy" not in message:
                raise
            if time.monotonic() > deadline:
                error = lock_timeout_error(url, time.monotonic() - started)
                log.warning("%s", error)
                raise error from exc
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.5)
