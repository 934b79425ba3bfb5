"""fetch_context keeps its last result while nothing is committed (context_cache.py), and never longer."""

from __future__ import annotations

from pathlib import Path

from vlk_memact import Memory
from vlk_memact.config import Settings

PROJECT = "test-project"  # conftest.PROJECT: the project of the file_memory fixture




def record(m: Memory, text: str, sid: str = "default") -> int:
    return m.record_state(raw_log=text, session_id=sid).timeline_id


def test_an_unchanged_database_gives_the_kept_result(file_memory: Memory) -> None:
    record(file_memory, "error A")
    first = file_memory.fetch_context()
    assert file_memory.fetch_context() is first
    assert file_memory.fetch_context(max_tokens=300) is not first  # another budget, another result


def test_a_write_of_this_memory_is_seen_at_once(file_memory: Memory) -> None:
    record(file_memory, "error A")
    file_memory.fetch_context()
    new = record(file_memory, "error B")
    assert f"[id:{new}]" in file_memory.fetch_context().text


def test_a_commit_of_another_connection_is_seen_at_once(file_memory: Memory, db_path: Path,
                                                         settings: Settings) -> None:
    record(file_memory, "error A")
    file_memory.fetch_context()
    with Memory(f"sqlite:///{db_path}", settings=settings, project=PROJECT) as other:
        new = record(other, "error B")
    assert f"[id:{new}]" in file_memory.fetch_context().text


def test_a_fetch_that_intercepted_a_loop_is_not_kept(file_memory: Memory) -> None:
    for _ in range(3):
        record(file_memory, "error A")
    first = file_memory.fetch_context()
    second = file_memory.fetch_context()
    assert first.loops and not second.loops and second is not first
    assert file_memory.fetch_context() is second  # the second wrote nothing: kept
