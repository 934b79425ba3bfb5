"""Retention: PAST slots and unreferenced content are pruned; an endless loop keeps the file bounded."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from vlk_memact import Memory, Settings
from vlk_memact.cli import main


def rows(db: Path, sql: str) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchone()[0]


def test_maintenance_keeps_the_newest_past_slots_per_session(db_path: Path) -> None:
    settings = Settings(retention_past_per_session=6, prune_every=10_000)
    with Memory(f"sqlite:///{db_path}", settings=settings, project="p") as m:
        for round_ in range(5):
            for _ in range(3):
                m.record_state(raw_log=f"Error 503 at 10:00:0{round_}", session_id="s")
            m.fetch_context(session_id="s")
        m.record_state(raw_log="still active", session_id="s")
        before = m.summarize_session(session_id="s")
        done = m.maintenance()
        after = m.summarize_session(session_id="s")
        assert done.slots_deleted == before.past - 6 and after.past == 6
        assert (after.present, after.future) == (before.present, before.future)  # live state untouched
        assert "appeared" in m.fetch_context(session_id="s").text
    assert rows(db_path, "PRAGMA integrity_check") == "ok"
    assert rows(db_path, "SELECT COUNT(*) FROM memory_contents c WHERE NOT EXISTS "
                         "(SELECT 1 FROM agent_timeline t WHERE t.content_id = c.id)") == 0
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_maintenance_prunes_by_age(db_path: Path) -> None:
    with Memory(f"sqlite:///{db_path}", settings=Settings(retention_days=7), project="p") as m:
        ids = [m.record_state(raw_log=f"old {w}").timeline_id for w in ("alpha", "beta")]
        m.time_travel(target_timeline_ids=ids, learning="Lesson", raw_log_excerpt="old")
        with sqlite3.connect(db_path) as conn:
            conn.execute("UPDATE agent_timeline SET created_at = datetime('now', '-8 days') WHERE id = ?", (ids[0],))
        assert m.maintenance().slots_deleted == 1
        assert [s.id for s in m.get_history().slots if s.temporal_state == "PAST"] == [ids[1]]


def test_the_cli_runs_maintenance(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--database-url", f"sqlite:///{db_path}", "maintenance", "--vacuum"]) == 0
    assert capsys.readouterr().out.startswith("Pruned 0 PAST slots and 0 unreferenced contents")


def test_an_endless_loop_keeps_the_database_bounded(db_path: Path) -> None:
    settings = Settings(retention_past_per_session=60, prune_every=50)
    sizes = []
    with Memory(f"sqlite:///{db_path}", settings=settings, project="p") as m:
        for i in range(1500):
            m.record_state(raw_log=f"Error 503: upstream timed out at 2026-11-30T10:{i % 60:02d}:{i % 59:02d}Z "
                                   f"request {i}", session_id="loop")
            if i % 3 == 2:
                m.fetch_context(session_id="loop")
            if i % 250 == 249:
                m.store.optimize(vacuum=False)  # checkpoint the WAL, as a long-running server does
                sizes.append(db_path.stat().st_size + Path(f"{db_path}-wal").stat().st_size)
        summary = m.summarize_session(session_id="loop")
    assert summary.past <= 60 + 50 * 2
    assert rows(db_path, "SELECT COUNT(*) FROM memory_contents") <= 60 + 50 * 2 + 10
    # After warming up, the file stops growing: free pages are reused.
    assert sizes[-1] <= sizes[1] * 1.1, sizes
