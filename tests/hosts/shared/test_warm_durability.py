"""The warm server answers a hook before the fsync of the event's commit, and syncs right after (issue 37):
the commit is in SQLite's write-ahead log before the answer (safe from a crash of any process), the fsync follows
once the answer has left, and every other transaction keeps synchronous=FULL (docs/guarantees.md)."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from hook_events import bash, failure

from vlk_memact.hosts.shared import warm, warm_server
from vlk_memact.store.sqlite import SqliteStore

pytestmark = pytest.mark.timeout(60)
FULL, NORMAL = 2, 1


def synchronous(store: SqliteStore) -> int:
    with store.write() as tx:
        return int(tx._rows("PRAGMA synchronous", ())[0][0])  # noqa: SLF001 - the PRAGMA is the subject here


def wal_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files os.fsync is called on from now on (SQLite's own fsyncs are in C and not counted)."""
    synced: list[str] = []
    real = os.fsync

    def counted(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", counted)
    return synced


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="reads file names from /proc")
def test_a_batch_that_is_not_durable_yet_commits_without_fsync_until_sync(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "vlk.db"
    store = SqliteStore(f"file:{db}")
    synced = wal_fsyncs(monkeypatch)
    with store.batch(durable=False):
        with store.write() as tx:
            assert int(tx._rows("PRAGMA synchronous", ())[0][0]) == NORMAL  # noqa: SLF001
            tx._rows("INSERT INTO memory_contents (raw_log, content_hash) VALUES ('x', 'h1') RETURNING id", ())  # noqa: SLF001
    assert synchronous(store) == FULL  # every other transaction fsyncs at its commit, as before
    store.sync()
    assert synced == [str(db) + "-wal"]
    store.sync()  # nothing new to make durable: no second fsync
    assert synced == [str(db) + "-wal"]
    with store.batch():  # durable: the commit's own fsync, nothing left for sync()
        with store.write() as tx:
            tx._rows("INSERT INTO memory_contents (raw_log, content_hash) VALUES ('y', 'h2') RETURNING id", ())  # noqa: SLF001
    store.sync()
    assert synced == [str(db) + "-wal"]
    store.close()
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM memory_contents").fetchone()[0] == 2


def test_a_batch_that_fails_leaves_the_connection_at_full(tmp_path: Path) -> None:
    store = SqliteStore(f"file:{tmp_path / 'vlk.db'}")
    with pytest.raises(RuntimeError), store.batch(durable=False):
        with store.write() as tx:
            tx._rows("INSERT INTO memory_contents (raw_log, content_hash) VALUES ('x', 'h1') RETURNING id", ())  # noqa: SLF001
        raise RuntimeError("the hook's handler failed")
    assert synchronous(store) == FULL
    store.close()


def test_the_warm_server_answers_before_the_fsync_and_syncs_right_after(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The client has its answer while the server's sync is held back; the sync then runs on the Memory that
    answered, and the failure is stored."""
    db = tmp_path / "vlk.db"
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{db}")
    monkeypatch.setenv("VLK_PROJECT", "p")
    monkeypatch.setenv("VLK_HOOK_SERVER_IDLE_SECONDS", "30")
    path = str(tmp_path / "hooks.sock")
    monkeypatch.setattr(warm, "socket_path", lambda: path)
    release, synced_with = threading.Event(), []
    real_durable = warm_server.durable

    def held_back(used: list) -> None:
        release.wait(20)
        synced_with.extend(used)
        real_durable(used)

    monkeypatch.setattr(warm_server, "durable", held_back)
    server = threading.Thread(target=warm_server.serve, args=(path,), daemon=True)
    server.start()
    deadline = time.monotonic() + 10
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.02)
    event = failure("Bash", bash("python run.py"), "Traceback (most recent call last):\nNameError: name 'x' is not "
                    "defined", session="s1")
    reply = warm.ask("claude-code", [], json.dumps(event).encode())
    assert reply is not None and not reply.get("problem") and not reply.get("line"), reply
    assert not synced_with, "the answer waited for the sync"
    release.set()
    deadline = time.monotonic() + 10
    while not synced_with and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(synced_with) == 1 and synced_with[0].store._unsynced is False  # noqa: SLF001
    rows = sqlite3.connect(db).execute("SELECT c.raw_log FROM agent_timeline t JOIN memory_contents c "
                                       "ON c.id = t.content_id WHERE t.session_id = 's1'").fetchall()
    assert rows and "NameError" in rows[0][0]


def test_a_batch_that_cannot_begin_leaves_the_connection_at_full(tmp_path: Path) -> None:
    """Another process holds the write lock: the not-yet-durable batch gives up (WouldWait under attempt()) and its
    connection is back at synchronous=FULL for the next, durable, transaction."""
    from vlk_memact.core.errors import WouldWait

    db = tmp_path / "vlk.db"
    store = SqliteStore(f"file:{db}")
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(WouldWait), store.attempt(), store.batch(durable=False):
            with store.write() as tx:
                tx._rows("SELECT 1", ())  # noqa: SLF001
    finally:
        other.execute("ROLLBACK")
    assert synchronous(store) == FULL
    store.close()
