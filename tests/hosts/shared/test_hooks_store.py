"""The store's part of the hooks, on both stores: host calls, injected items, retention, and the migration
that adds them (SQLite 5, PostgreSQL 4; their tool, target and summary: SQLite 6, PostgreSQL 5) to a
database written before it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from vlk_memact import Memory
from vlk_memact.core.model import NewHostCall, Retired, TemporalState


def sqlite_at_version(path: Path, version: int) -> sqlite3.Connection:
    """A SQLite file as an older vlk-memact left it: the first `version` migrations applied (autocommit)."""
    from vlk_memact.store import sqlite_schema

    conn = sqlite3.connect(path, isolation_level=None)
    for number, step in enumerate(sqlite_schema.MIGRATIONS[:version]):
        conn.execute("BEGIN")
        step(conn)
        conn.execute(f"PRAGMA user_version = {number + 1}")
        conn.execute("COMMIT")
    return conn


def test_host_calls_are_unique_per_session_and_tool_use_id(memory: Memory) -> None:
    key, other = memory._key("s1"), memory._key("s2")  # noqa: SLF001
    with memory.store.write() as tx:
        first = tx.add_host_call(key, NewHostCall("toolu_1", "k1", "failure"), None)
        assert first is not None
        assert tx.add_host_call(key, NewHostCall("toolu_1", "k1", "failure"), None) is None
        assert tx.add_host_call(other, NewHostCall("toolu_1", "k1", "failure"), None) is not None
        assert tx.add_host_call(key, NewHostCall(None, "k2", "success", True), None) is not None
        assert tx.add_host_call(key, NewHostCall(None, "k2", "success", True), None) is not None  # no id: no key
        tx.add_host_call(key, NewHostCall("toolu_2", "k1", "failure"), None)
    with memory.store.read() as tx:
        found = tx.host_call_by_use_id(key, "toolu_1")
        assert found is not None and (found.call_key, found.outcome, found.changes_state) == ("k1", "failure", False)
        assert tx.host_call_by_use_id(key, "toolu_9") is None
        assert [c.tool_use_id for c in tx.host_calls(key, call_key="k1", newest_first=True)] == ["toolu_2", "toolu_1"]
        assert len(tx.host_calls(key, outcome="success")) == 2
        assert all(c.changes_state for c in tx.host_calls(key, outcome="success"))
        assert [c.tool_use_id for c in tx.host_calls(key, after_id=first)][-1] == "toolu_2"
        assert len(tx.host_calls(key, limit=2)) == 2
        assert len(tx.host_calls(key, within_seconds=60)) == 4
        assert len(tx.host_calls(other)) == 1


def test_a_capture_is_claimed_once(memory: Memory) -> None:
    key = memory._key("s1")  # noqa: SLF001
    with memory.store.write() as tx:
        call = tx.add_host_call(key, NewHostCall("toolu_1", "k", "failure"), None)
        assert call is not None and tx.claim_host_call(call) and not tx.claim_host_call(call)
        assert tx.host_calls(key, unclaimed=True) == []


def test_injected_items_are_kept_per_session(memory: Memory) -> None:
    key, other = memory._key("s1"), memory._key("s2")  # noqa: SLF001
    with memory.store.write() as tx:
        assert tx.injected(key) == []
        tx.set_injected(key, ["c:1", "x:1-2"])
        tx.set_injected(key, ["c:1", "x:1-2", "c:7"])
    with memory.store.read() as tx:
        assert tx.injected(key) == ["c:1", "x:1-2", "c:7"] and tx.injected(other) == []


def test_retention_drops_old_host_calls_and_a_pruned_slot_leaves_its_call(memory: Memory) -> None:
    rec = memory.record_state(raw_log="boom", session_id="s1", host_call=NewHostCall("toolu_1", "k", "failure"))
    key = memory._key("s1")  # noqa: SLF001
    with memory.store.write() as tx:
        tx.retire(key.tenant, [rec.timeline_id], TemporalState.PRESENT, Retired.RESOLVED, None)
    with memory.store.write() as tx:
        tx.prune(key, 0, 30)  # keep no PAST slot: the resolved slot goes, its call stays (slot_id cleared)
        [call] = tx.host_calls(key)
        assert call.slot_id is None
        tx.prune(None, 0, 0)  # everything older than 0 days
    with memory.store.read() as tx:
        assert tx.host_calls(key) in ([], [call])  # same-second rows may survive a 0-day cut


def test_a_resolved_slot_is_past_with_its_reason(memory: Memory) -> None:
    rec = memory.record_state(raw_log="boom", session_id="s1")
    key = memory._key("s1")  # noqa: SLF001
    with memory.store.write() as tx:
        assert tx.retire(key.tenant, [rec.timeline_id], TemporalState.PRESENT, Retired.RESOLVED, None) == [
            rec.timeline_id]
    [slot] = memory.get_history(session_id="s1").slots
    assert (slot.temporal_state, slot.retired_reason) == ("PAST", "resolved")


def test_a_sqlite_file_of_schema_4_is_upgraded_in_place(tmp_path: Path) -> None:
    from vlk_memact.store import sqlite_schema

    path = tmp_path / "old.db"
    conn = sqlite_at_version(path, 4)
    conn.execute("INSERT INTO memory_contents (raw_log, content_hash) VALUES ('old error', 'h1')")
    for seq in (1, 2, 3):
        conn.execute("INSERT INTO agent_timeline (uid, content_id, session_id, sequence_order, temporal_state, origin) "
                     f"VALUES ('u{seq}', 1, 's', {seq}, 'PRESENT', 'record')")
    conn.execute("DELETE FROM agent_timeline WHERE id = 3")  # the highest id was pruned: it must not come back
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' "
                                          "AND tbl_name = 'agent_timeline'")}
    conn.close()

    with Memory(f"sqlite:///{path}", project="default") as memory:
        history = memory.get_history(session_id="s").slots
        assert [s.raw_log for s in history] == ["old error", "old error"]
        rec = memory.record_state(raw_log="new error", session_id="s")
        assert rec.timeline_id == 4
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == sqlite_schema.SCHEMA_VERSION
    assert indexes <= {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    conn.execute("UPDATE agent_timeline SET temporal_state = 'PAST', retired_reason = 'resolved' WHERE id = 1")


def test_a_postgres_schema_of_version_3_is_upgraded(postgres_url: str) -> None:
    import psycopg

    from vlk_memact.store import postgres_schema
    from vlk_memact.store.postgres import postgres_target

    conninfo, schema = postgres_target(postgres_url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        conn.execute(f"CREATE TABLE {postgres_schema.VERSION_TABLE} (version integer PRIMARY KEY, name text NOT "
                     "NULL, applied_at text NOT NULL DEFAULT 'x')")
        for number, step in enumerate(postgres_schema.MIGRATIONS[:3]):
            with conn.transaction():
                step(conn)
                conn.execute(f"INSERT INTO {postgres_schema.VERSION_TABLE} (version, name) VALUES (%s, %s)",
                             (number + 1, step.__name__))
        conn.execute("INSERT INTO agent_timeline (uid, session_id, sequence_order, temporal_state, origin) "
                     "VALUES ('u1', 's', 1, 'PRESENT', 'record')")
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("UPDATE agent_timeline SET retired_reason = 'resolved'")
    with Memory(postgres_url, project="default") as memory:
        assert len(memory.get_history(session_id="s").slots) == 1
        key = memory._key("s")  # noqa: SLF001
        with memory.store.write() as tx:
            [slot] = tx.slots(key, TemporalState.PRESENT)
            assert tx.retire(key.tenant, [slot.id], TemporalState.PRESENT, Retired.RESOLVED, None) == [slot.id]
            assert tx.add_host_call(key, NewHostCall("t", "k", "failure"), slot.id) is not None


def test_a_host_call_keeps_its_tool_target_and_summary(memory: Memory) -> None:
    key = memory._key("s1")  # noqa: SLF001
    with memory.store.write() as tx:
        tx.add_host_call(key, NewHostCall("t1", "k1", "success", True, "Bash", "cp", "cp .env.example .env"), None)
        tx.add_host_call(key, NewHostCall("t2", "k2", "failure"), None)
    with memory.store.read() as tx:
        first, second = tx.host_calls(key)
    assert (first.tool, first.target, first.summary) == ("Bash", "cp", "cp .env.example .env")
    assert (second.tool, second.target, second.summary) == (None, None, None)


def test_host_calls_of_schema_5_read_after_the_upgrade_to_6(tmp_path: Path) -> None:
    from vlk_memact.store import sqlite_schema

    path = tmp_path / "v5.db"
    conn = sqlite_at_version(path, 5)
    conn.execute("INSERT INTO host_calls (tenant, project, session_id, tool_use_id, call_key, outcome) "
                 "VALUES ('local', 'default', 's', 'toolu_old', 'k', 'failure')")
    conn.close()
    with Memory(f"sqlite:///{path}", project="default") as memory:
        key = memory._key("s")  # noqa: SLF001
        with memory.store.read() as tx:
            old = tx.host_call_by_use_id(key, "toolu_old")
        assert old is not None and (old.call_key, old.tool, old.target, old.summary) == ("k", None, None, None)
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == sqlite_schema.SCHEMA_VERSION
