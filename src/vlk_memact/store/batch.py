"""One long write transaction that the engine's own transactions join: what a store's batch() hands out.

Learning from past sessions feeds thousands of hook events through the engine, each of which opens its own
transactions. Inside `with store.batch() as batch:` every write() of the same thread becomes a savepoint of
the batch's transaction (undone alone when it raises, as a transaction of its own would be), except the write
that begins the transaction: with nothing before it to keep, undoing it alone is rolling the transaction back
(`abort`), which spares a savepoint's journal on the commonest path (a tool call's one write). Every read()
sees what the batch wrote so far, and dry_run() is a savepoint always undone. `batch.commit()` makes what
the batch holds durable and goes on in a new transaction, so that a long run commits in steps short enough
for other writers (live hooks) never to wait long; leaving the block commits, an exception rolls back what
was not committed. After a batch ended with an exception, open a new Memory: its caches may describe rows
the rollback removed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

log = logging.getLogger(__name__)


class Batch:
    """The batch a store's batch() yields: commit() commits what it holds and begins the next transaction."""

    def __init__(self, commit: Callable[[], None]) -> None:
        self._commit = commit
        self.commits = 0

    def commit(self) -> None:
        self._commit()
        self.commits += 1


class Joined(threading.local):
    """Per thread: whether a batch is open, its connection, how deep its savepoints are nested (each gets a name
    of its own), and how to begin its next transaction: after a commit none is open until a joined transaction
    needs one, so no lock is held while the caller does something else (reads the next session's files).
    abort: how to roll the open transaction back and end it as a commit would (the next one begins when needed)."""

    active: bool = False
    conn: Any = None
    depth: int = 0
    begin: Callable[[], None] | None = None
    abort: Callable[[], None] | None = None

    def ready(self) -> Any:
        """The batch's connection, inside its transaction (begun now if a commit ended the last one)."""
        if self.begin is not None:
            begin, self.begin = self.begin, None
            try:
                begin()
            except BaseException:
                self.begin = begin  # nothing begun: the next joined transaction tries again
                raise
        return self.conn

    def close(self) -> None:
        self.active, self.conn, self.depth, self.begin, self.abort = False, None, 0, None, None

    def savepoint(self) -> str:
        self.depth += 1
        return f"vlk_batch_{self.depth}"

    def released(self) -> None:
        self.depth -= 1


def savepoint(joined: Joined, make_tx: Callable[[Any], Any], keep: bool, driver_error: type[BaseException],
              fault: Callable[[BaseException], BaseException]) -> Iterator[Any]:
    """A transaction joined to the batch (both stores spell savepoints alike): released when keep and its body
    succeeds, else undone; a driver error becomes the store's typed error (fault)."""
    if keep and joined.begin is not None and joined.abort is not None:
        yield from _first(joined, make_tx, driver_error, fault)
        return
    conn = joined.ready()
    name = joined.savepoint()
    try:
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield make_tx(conn)
        except BaseException:
            _undo(conn, name, driver_error)
            raise
        if keep:
            conn.execute(f"RELEASE SAVEPOINT {name}")
        else:
            _undo(conn, name, driver_error)
    except driver_error as exc:
        raise fault(exc) from exc
    finally:
        joined.released()


def _first(joined: Joined, make_tx: Callable[[Any], Any], driver_error: type[BaseException],
           fault: Callable[[BaseException], BaseException]) -> Iterator[Any]:
    """The write that begins the batch's transaction, without a savepoint: when it raises, the transaction (this
    write alone) is rolled back and ended (joined.abort), and the next joined write begins a new one."""
    conn = joined.ready()
    try:
        try:
            yield make_tx(conn)
        except BaseException:
            assert joined.abort is not None
            joined.abort()
            raise
    except driver_error as exc:
        raise fault(exc) from exc


def _undo(conn: Any, name: str, driver_error: type[BaseException]) -> None:
    """What the failed joined transaction wrote goes; the batch goes on (unless the database ended it itself: a
    full disk, a broken connection; then the batch fails at its next statement)."""
    try:
        conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
        conn.execute(f"RELEASE SAVEPOINT {name}")
    except driver_error as exc:
        log.warning("ROLLBACK TO SAVEPOINT %s failed: %s", name, exc)
