"""The SQLite store: schema, migrations from every earlier version, URLs, threads and processes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from vlk_memact import ConfigError, Memory, StoreError
from vlk_memact.store import open_store
from vlk_memact.store.sqlite import sqlite_target
from vlk_memact.store.sqlite_schema import SCHEMA_VERSION

PROTOTYPE_SCHEMA = """
CREATE TABLE memory_contents (id INTEGER PRIMARY KEY AUTOINCREMENT, raw_log TEXT NOT NULL,
    file_context TEXT, tool_payload TEXT);
CREATE TABLE agent_timeline (id INTEGER PRIMARY KEY AUTOINCREMENT, content_id INTEGER,
    session_id TEXT NOT NULL, sequence_order INTEGER NOT NULL,
    temporal_state TEXT CHECK(temporal_state IN ('PRESENT','PAST','FUTURE')), learning_summary TEXT,
    created_at DATETIME DEFAULT CURRENT_TIMESTAMP, FOREIGN KEY(content_id) REFERENCES memory_contents(id));
CREATE INDEX idx_timeline_session_state ON agent_timeline(session_id, temporal_state);
CREATE INDEX idx_timeline_sequence ON agent_timeline(session_id, sequence_order);
CREATE INDEX idx_timeline_active_context ON agent_timeline(session_id, temporal_state, sequence_order);
"""


def prototype_db(path: Path, with_constraint_type: bool = True) -> None:
    """A file as the Rust prototype left it, with the races and NULLs it allowed."""
    conn = sqlite3.connect(path)
    conn.executescript(PROTOTYPE_SCHEMA)
    if with_constraint_type:
        conn.execute("ALTER TABLE agent_timeline ADD COLUMN constraint_type TEXT "
                     "CHECK(constraint_type IS NULL OR constraint_type IN ('DERIVED','PROSPECTIVE'))")
    conn.executemany("INSERT INTO memory_contents (raw_log) VALUES (?)", [("error msg",), ("error msg",), ("other",)])
    rows = [
        (1, "s", 1, "PRESENT", None),
        (2, "s", 2, "PRESENT", None),
        (3, "s", 2, "PRESENT", None),  # a duplicate sequence number from two racing processes
        (None, "s", 3, "FUTURE", "Use cache"),
        (None, "s", 4, None, "[SYSTEM ANCHOR] Loop detected (exact): ..."),  # NULL state was allowed
    ]
    conn.executemany("INSERT INTO agent_timeline (content_id, session_id, sequence_order, temporal_state, "
                     "learning_summary) VALUES (?, ?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()


def columns(path: Path, table: str) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}


# ---- schema ----

def test_a_new_file_gets_the_latest_schema_in_wal_mode(db_path: Path) -> None:
    Memory(f"sqlite:///{db_path}").close()
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    indexes = {r[1]: r for r in conn.execute("PRAGMA index_list(agent_timeline)")}
    assert "idx_timeline_active_context" in indexes and "idx_timeline_fingerprint" in indexes
    cols = [r[2] for r in conn.execute("PRAGMA index_info(idx_timeline_active_context)")]
    assert cols == ["tenant", "project", "session_id", "temporal_state", "sequence_order"]
    assert {"content_hash"} <= columns(db_path, "memory_contents")
    assert {"evidence", "fingerprint", "origin", "retired_by"} <= columns(db_path, "agent_timeline")


def test_the_schema_rejects_what_the_prototype_allowed(file_memory: Memory, db_path: Path) -> None:
    file_memory.record_state(raw_log="x")
    conn = sqlite3.connect(db_path)
    conn.execute("PRAGMA foreign_keys = ON")
    base = ("INSERT INTO agent_timeline (content_id, project, session_id, sequence_order, temporal_state, origin) "
            "VALUES ")
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(base + "(NULL, 'test-project', 'default', 1, 'PRESENT', 'record')")  # duplicate sequence
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(base + "(NULL, 'p', 'default', 9, NULL, 'record')")  # NULL state
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(base + "(NULL, 'p', 'default', 9, 'LATER', 'record')")  # bad state
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(base + "(999, 'p', 'default', 9, 'PRESENT', 'record')")  # dangling content
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("DELETE FROM memory_contents")  # referenced content


def test_query_plans_use_indexes(file_memory: Memory, db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    session = "tenant='local' AND project='p' AND session_id='s'"
    plans = {
        "active": f"SELECT id FROM agent_timeline WHERE {session} AND temporal_state='PRESENT' ORDER BY sequence_order",
        "fingerprint": f"SELECT id FROM agent_timeline WHERE {session} AND temporal_state='PRESENT' AND fingerprint='k'",
        "history": f"SELECT id FROM agent_timeline WHERE {session} ORDER BY sequence_order DESC LIMIT 5",
        "next_sequence": f"SELECT COALESCE(MAX(sequence_order),0)+1 FROM agent_timeline WHERE {session}",
        "shared": "SELECT id FROM agent_timeline WHERE tenant='local' AND temporal_state='FUTURE' AND scope='project' "
                  "AND project='p'",
        "recall": "SELECT constraint_id FROM constraint_keys WHERE key IN ('a', 'b')",
    }
    for name, sql in plans.items():
        plan = " ".join(str(r[-1]) for r in conn.execute("EXPLAIN QUERY PLAN " + sql))
        assert "USING" in plan and "SCAN agent_timeline" not in plan.replace("USING COVERING INDEX", ""), (name, plan)


# ---- migrations ----

@pytest.mark.parametrize("with_constraint_type", [True, False], ids=["v0.5-prototype", "pre-v0.5-prototype"])
def test_a_prototype_database_is_upgraded_without_losing_rows(db_path: Path, with_constraint_type: bool) -> None:
    prototype_db(db_path, with_constraint_type)
    with Memory(f"sqlite:///{db_path}", project="default") as m:
        history = m.get_history(session_id="s").slots
        assert [s.sequence_order for s in history] == [5, 4, 3, 2, 1]  # renumbered, order kept
        by_id = {s.id: s for s in history}
        assert by_id[1].content_id == by_id[2].content_id == 1  # duplicate content folded
        assert by_id[5].temporal_state == "PAST" and by_id[5].origin == "anchor"
        assert by_id[4].origin == "lesson" and by_id[4].learning_summary == "Use cache"
        # The upgraded file works: the next record gets the next unique sequence number.
        assert m.record_state(raw_log="new", session_id="s").sequence_order == 6
        # Migrated slots have no fingerprint yet; the pipeline computes it, so they join a new loop.
        m.record_state(raw_log="error msg", session_id="s")
        [loop] = m.fetch_context(session_id="s").loops
        assert loop.archived_ids == [1, 2, 7]
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_opening_twice_is_a_no_op(db_path: Path) -> None:
    with Memory(f"sqlite:///{db_path}") as m:
        m.record_state(raw_log="x")
    before = db_path.read_bytes()
    Memory(f"sqlite:///{db_path}").close()
    with Memory(f"sqlite:///{db_path}") as m:
        assert m.summarize_session().present == 1
    assert len(db_path.read_bytes()) == len(before)


def test_a_database_from_a_newer_version_is_refused(db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="newer than this vlk-memact"):
        Memory(f"sqlite:///{db_path}")


def test_a_failed_migration_leaves_the_file_as_it_was(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prototype_db(db_path)
    from vlk_memact.store import sqlite_schema

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE memory_contents ADD COLUMN content_hash TEXT")
        raise sqlite3.OperationalError("disk on fire")

    monkeypatch.setattr(sqlite_schema, "MIGRATIONS", [sqlite_schema.MIGRATIONS[0], broken])
    with pytest.raises(StoreError, match="disk on fire"):
        Memory(f"sqlite:///{db_path}")
    assert "content_hash" not in columns(db_path, "memory_contents")
    assert sqlite3.connect(db_path).execute("PRAGMA user_version").fetchone()[0] == 1


# ---- DATABASE_URL ----

def test_database_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert sqlite_target("sqlite::memory:") == ":memory:"
    assert sqlite_target("sqlite:vlk.db?mode=rwc") == f"file:{tmp_path}/vlk.db?mode=rwc"
    (tmp_path / "a").mkdir()
    assert sqlite_target(f"sqlite:///{tmp_path}/a/b.db") == f"file:{tmp_path}/a/b.db?mode=rwc"
    # A folder the URL names that is not there is a mistyped URL more often than a wish: an error that says
    # so, nothing created (the default location is created: the next test).
    with pytest.raises(ConfigError, match=r"names a file in .*/rel, which does not exist; create the folder first"):
        sqlite_target("sqlite:rel/c.db")
    assert not (tmp_path / "rel").exists()
    with pytest.raises(ConfigError, match="mode"):
        sqlite_target("sqlite:x.db?mode=bogus")
    with pytest.raises(ConfigError, match="names no file"):
        sqlite_target("sqlite:")
    with pytest.raises(ConfigError, match="not supported"):
        open_store("mysql://localhost/db")


def test_the_default_database_lives_in_the_user_data_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    target = sqlite_target(None)
    assert target == f"file:{tmp_path}/data/vlk-memact/vlk.db?mode=rwc"
    assert (tmp_path / "data" / "vlk-memact").is_dir()  # created, unlike a folder a URL names


def test_a_read_only_url_can_read_but_not_write(db_path: Path) -> None:
    with Memory(f"sqlite:///{db_path}") as m:
        m.record_state(raw_log="x")
    with Memory(f"sqlite:///{db_path}?mode=ro") as m:
        assert m.summarize_session().present == 1
        with pytest.raises(StoreError):
            m.record_state(raw_log="y")


# ---- threads and processes ----

def test_one_store_serves_many_threads(file_memory: Memory) -> None:
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(25):
                file_memory.record_state(raw_log=f"thread {n} log {i}", session_id="shared")
                file_memory.fetch_context(session_id="shared")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    slots = file_memory.get_history(limit=500, session_id="shared").slots
    assert sorted(s.sequence_order for s in slots) == list(range(1, len(slots) + 1))
    assert sum(1 for s in slots if s.raw_log) == 200


WRITER = """
import sys
from vlk_memact import Memory
with Memory(sys.argv[1]) as m:
    for i in range(int(sys.argv[3])):
        m.record_state(raw_log=f"{sys.argv[2]} log {i}", session_id="shared")
        m.record_state(raw_log=f"{sys.argv[2]} private {i}", session_id=sys.argv[2])
        if i % 10 == 0:
            m.fetch_context(session_id="shared")
"""


def test_several_processes_on_one_file_lose_nothing(db_path: Path) -> None:
    url = f"sqlite:///{db_path}"
    Memory(url).close()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, url, f"p{n}", "60"]) for n in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    with Memory(url) as m:
        shared = m.get_history(limit=500, session_id="shared").slots
        assert sorted(s.sequence_order for s in shared) == list(range(1, len(shared) + 1))
        assert sum(1 for s in shared if s.raw_log) == 240
        for n in range(4):
            assert m.summarize_session(session_id=f"p{n}").present == 60


def test_attempt_gives_up_at_once_on_a_held_lock_and_then_waits_as_before(db_path: Path) -> None:
    """store.attempt() (stdio serves tools on its event loop under it): the first write of a call that would
    wait for a lock raises WouldWait before it changes anything; outside it, a write waits as it always did."""
    import time

    from vlk_memact.store import WouldWait
    from vlk_memact.store.sqlite_connect import waiting_refused

    memory = Memory(f"sqlite:///{db_path}")
    memory.record_state("first error")
    store = memory.store
    other = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # another process's writer
    try:
        started = time.monotonic()
        with store.attempt(), pytest.raises(WouldWait):
            memory.record_state("second error")
        assert time.monotonic() - started < 0.5  # gave up at once, not after the busy timeout
        # Meanwhile a write outside attempt() waits for the lock (released 0.3 s later) and succeeds.
        threading.Timer(0.3, lambda: other.execute("ROLLBACK")).start()
        started = time.monotonic()
        memory.record_state("third error")
        assert time.monotonic() - started >= 0.25
    finally:
        if other.in_transaction:
            other.execute("ROLLBACK")
        other.close()
    logs = [s.raw_log for s in memory.get_history(limit=10).slots]
    assert "second error" not in logs and {"first error", "third error"} <= set(logs)

    # Another thread of this process holding the store's lock: WouldWait too.
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with store.write():
            holding.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(5)
        with store.attempt(), pytest.raises(WouldWait):
            memory.fetch_context()
    finally:
        release.set()
        holder.join()

    # Once a call holds its first lock, it no longer refuses to wait; the scope ends with the refusal.
    with store.attempt():
        assert waiting_refused()
        memory.record_state("fourth error")
        assert not waiting_refused()
    assert not waiting_refused()
    memory.close()
