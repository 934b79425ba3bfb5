"""A hook event is one store transaction: its writes (capture, loop check, fix note) share one commit, so
one durable commit (one fsync) per event, and what it wrote before a failure is kept (issue 37)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hook_events import bash, failure, pre, success

from vlk_memact import Memory, Settings
from vlk_memact.hosts.claude_code import adapter as claude_code
from vlk_memact.hosts.shared import runner


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(settings=Settings.from_env({"DATABASE_URL": f"sqlite:///{tmp_path / 'vlk.db'}"}), project="p") as m:
        yield m


def answer(memory: Memory, event: dict[str, Any], handle: Any = claude_code.handle) -> tuple[Any, Any, list[str]]:
    statements: list[str] = []
    memory.store.set_trace_callback(statements.append)

    @contextlib.contextmanager
    def opener(*_: object) -> Iterator[Memory]:
        yield memory

    settings = Settings.from_env({})
    try:
        _, reply, problem = runner.answer_event(handle, json.dumps(event).encode(), settings, opener=opener)
    finally:
        memory.store.set_trace_callback(None)
    return reply, problem, [s.upper() for s in statements if s.split()[0].upper() in ("BEGIN", "COMMIT", "ROLLBACK")]


def write_transactions(statements: list[str]) -> list[str]:
    """How each write transaction ended (COMMIT, ROLLBACK); a read's BEGIN ... COMMIT is skipped (one thread:
    a transaction ends before the next begins)."""
    ended, writing = [], False
    for statement in statements:
        if statement.startswith("BEGIN"):
            writing = statement.startswith("BEGIN IMMEDIATE")
        elif writing:
            ended.append(statement)
            writing = False
    return ended


def test_a_failure_event_is_one_transaction_and_one_commit(memory: Memory) -> None:
    for _ in range(3):  # the third failure forms a loop: capture, record, loop, announcement
        reply, problem, transactions = answer(memory, failure("Bash", bash("pytest"), "Exit code 1\nE KeyError: 'k'"))
        assert problem is None
        assert write_transactions(transactions) == ["COMMIT"], transactions
    assert reply is not None  # the loop was announced from what the one transaction wrote
    with sqlite3.connect(memory.store.url.removeprefix("sqlite:///")) as db:
        assert db.execute("SELECT COUNT(*) FROM host_calls").fetchone()[0] == 3


def test_a_read_only_event_takes_no_write_lock(memory: Memory) -> None:
    answer(memory, failure("Bash", bash("pytest"), "Exit code 1\nE KeyError: 'k'"))
    _, problem, transactions = answer(memory, pre("Bash", bash("pytest")))
    assert problem is None and write_transactions(transactions) == [] and transactions  # reads only


def test_what_an_event_wrote_before_it_failed_is_kept(memory: Memory) -> None:
    def handle(event: dict[str, Any], memory: Memory) -> None:
        claude_code.handle(event, memory)  # captures the failure
        raise RuntimeError("a defect after the capture")

    _, problem, transactions = answer(memory, failure("Bash", bash("make"), "Exit code 2\nmake: *** [all] Error 2"),
                                      handle)
    assert problem and "RuntimeError" in problem
    assert write_transactions(transactions) == ["COMMIT"]
    assert "make: ***" in memory.fetch_context(session_id="s1").text


def test_a_success_after_failures_is_one_transaction(memory: Memory) -> None:
    for _ in range(2):
        answer(memory, failure("Bash", bash("pytest"), "Exit code 1\nE KeyError: 'k'"))
    answer(memory, pre("Bash", bash("sed -i s/a/b/ f.py")))
    _, problem, transactions = answer(memory, success("Bash", bash("pytest")))
    assert problem is None
    assert write_transactions(transactions) == ["COMMIT"]


def test_an_event_that_has_not_written_waits_for_no_other_thread(memory: Memory) -> None:
    """The warm server answers events of one project on several threads: an event's transaction takes the
    write lock at its first write, not when it starts, so a PreToolUse never queues behind another event."""
    import threading

    reading, done = threading.Event(), threading.Event()

    def event_that_reads() -> None:
        with memory.one_transaction():
            memory.get_history(session_id="s1")  # a read, like the guard's facts
            reading.set()
            done.wait(10)

    worker = threading.Thread(target=event_that_reads)
    worker.start()
    assert reading.wait(10)
    writer = threading.Thread(target=lambda: memory.record_state(raw_log="KeyError: 'w'", session_id="s2"))
    writer.start()
    writer.join(5)
    finished = not writer.is_alive()
    done.set()
    worker.join(10)
    writer.join(10)
    assert finished, "a write waited for an event that had only read"
