"""A store's batch (one long transaction the engine's own transactions join as savepoints) and its clock (writes
stamped at a moment of the past), on both stores: what `vlk-memact learn` runs the hooks' handlers in."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from vlk_memact import Memory
from vlk_memact.core.model import NewHostCall
from vlk_memact.store import LearnedSource, clock

PAST = datetime(2026, 3, 4, 5, 6, 7, 891000, tzinfo=UTC)


def test_writes_inside_a_stamped_block_carry_that_moment(memory: Memory) -> None:
    with memory.at(PAST):
        first = memory.record_state(raw_log="Error: Cannot find module 'express'", session_id="s")
        with memory.store.write() as tx:
            tx.add_host_call(memory._key("s"), NewHostCall("t1", "k", "failure"), first.timeline_id)  # noqa: SLF001
    later = memory.record_state(raw_log="Error: Cannot find module 'react'", session_id="s")
    slots = {s.id: s for s in memory.get_history(session_id="s").slots}
    assert slots[first.timeline_id].created_at == "2026-03-04 05:06:07"
    assert slots[later.timeline_id].created_at > "2026-03-04 05:06:07"
    with memory.store.read() as tx:
        [call] = tx.host_calls(memory._key("s"))  # noqa: SLF001
    assert call.created_at == "2026-03-04 05:06:07.891"


def test_ages_are_counted_from_the_stamped_moment(memory: Memory) -> None:
    key = memory._key("s")  # noqa: SLF001
    with memory.at(PAST), memory.store.write() as tx:
        tx.add_host_call(key, NewHostCall("t1", "k", "failure"), None)
    with memory.store.read() as tx:
        assert tx.host_calls(key, within_seconds=60) == []  # months ago, counted from now
    with memory.at(datetime(2026, 3, 4, 5, 6, 30, tzinfo=UTC)), memory.store.read() as tx:
        assert [c.tool_use_id for c in tx.host_calls(key, within_seconds=60)] == ["t1"]


def test_the_stamp_is_only_ever_the_format_it_writes() -> None:
    assert clock.stamp_of(datetime(2026, 1, 2, 3, 4, 5, 6000)) == "2026-01-02 03:04:05.006"
    assert clock.current() is None
    with clock.stamped(PAST):
        assert clock.before(7, precise=True) == "2026-03-04 05:06:00.891"
        assert clock.before(86400, precise=False) == "2026-03-03 05:06:07"
    assert clock.current() is None


def test_a_batch_commits_in_steps_and_its_joined_writes_read_their_own_rows(memory: Memory) -> None:
    with memory.store.batch() as batch:
        memory.record_state(raw_log="Error: one", session_id="s")
        assert len(memory.get_history(session_id="s").slots) == 1  # the read joins the batch
        batch.commit()
        memory.record_state(raw_log="Error: two", session_id="s")
    assert batch.commits == 1
    assert len(memory.get_history(session_id="s").slots) == 2


def test_a_failing_joined_write_is_undone_alone_and_the_batch_goes_on(memory: Memory) -> None:
    key = memory._key("s")  # noqa: SLF001
    with memory.store.batch():
        memory.record_state(raw_log="Error: kept", session_id="s")
        with pytest.raises(RuntimeError), memory.store.write() as tx:
            tx.add_host_call(key, NewHostCall("gone", "k", "failure"), None)
            raise RuntimeError("the handler failed")
        with memory.store.dry_run() as tx:
            tx.add_host_call(key, NewHostCall("dry", "k", "failure"), None)
    with memory.store.read() as tx:
        assert tx.host_calls(key) == []
    assert [s.raw_log for s in memory.get_history(session_id="s").slots] == ["Error: kept"]


def test_a_failing_write_that_began_the_transaction_ends_it_and_the_batch_goes_on(database_url: str) -> None:
    """The first joined write has no savepoint (nothing before it to keep): when it raises, the transaction is
    rolled back and ended as a commit would end it, so no lock is held and the next write begins a new one."""
    from vlk_memact import Settings

    quick = Settings.from_env({"VLK_BUSY_TIMEOUT_MS": "50", "VLK_LOCK_WAIT_MS": "200"})
    with Memory(database_url, settings=Settings.from_env({}), project="p") as learner, \
            Memory(database_url, settings=quick, project="p") as hook:
        key = learner._key("s")  # noqa: SLF001
        with learner.store.batch() as batch:
            with pytest.raises(RuntimeError), learner.store.write() as tx:
                tx.add_host_call(key, NewHostCall("gone", "k", "failure"), None)
                raise RuntimeError("the handler failed")
            hook.record_state(raw_log="Error: live", session_id="live")  # no lock left behind
            learner.record_state(raw_log="Error: kept", session_id="s")
            with pytest.raises(RuntimeError), learner.store.write() as tx:  # a later write: a savepoint, undone
                tx.add_host_call(key, NewHostCall("gone too", "k", "failure"), None)
                raise RuntimeError("the handler failed")
        assert batch.commits == 0
        hook.record_state(raw_log="Error: after", session_id="live")  # the batch released its lock
        with learner.store.read() as tx:
            assert tx.host_calls(key) == []
        assert [s.raw_log for s in learner.get_history(session_id="s").slots] == ["Error: kept"]


def test_the_write_that_begins_a_batch_transaction_opens_no_savepoint(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A tool call's record and what it told, in one transaction: the record begins it without a savepoint's
    journal (bench/goals.py mcp), what follows it is a savepoint."""
    statements: list[str] = []
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", project="p") as memory:
        memory.record_state(raw_log="Error: warm", session_id="s")
        memory.store.set_trace_callback(statements.append)
        with memory.one_transaction():
            memory.record_state(raw_log="Error: one", session_id="s")
        assert not [s for s in statements if s.startswith("SAVEPOINT")]
        with memory.one_transaction():
            memory.record_state(raw_log="Error: two", session_id="s")
            memory.record_state(raw_log="Error: three", session_id="s")
        assert len([s for s in statements if s.startswith("SAVEPOINT")]) == 1
        memory.store.set_trace_callback(None)


def test_an_exception_rolls_back_what_the_batch_had_not_committed(memory: Memory) -> None:
    with pytest.raises(KeyboardInterrupt), memory.store.batch() as batch:
        memory.record_state(raw_log="Error: committed", session_id="s")
        batch.commit()
        memory.record_state(raw_log="Error: lost", session_id="s")
        raise KeyboardInterrupt
    with Memory(store=memory.store, settings=memory.settings, project=memory.project) as fresh:
        assert [s.raw_log for s in fresh.get_history(session_id="s").slots] == ["Error: committed"]


def test_learned_sources_and_events_are_kept_per_tenant_and_project(memory: Memory) -> None:
    with memory.store.write() as tx:
        tx.save_learned_source("local", LearnedSource("/a.jsonl", "claude-code", "s1", "p", "10:20", 4))
        tx.save_learned_source("local", LearnedSource("/a.jsonl", "claude-code", "s1", "p", "12:30", 6))
        tx.add_learned_events("local", "p", ["toolu_1", "toolu_2", "toolu_1"])
    with memory.store.read() as tx:
        assert tx.learned_source("local", "/a.jsonl") == LearnedSource("/a.jsonl", "claude-code", "s1", "p",
                                                                        "12:30", 6)
        assert tx.learned_source("other", "/a.jsonl") is None
        assert tx.learned_events("local", "p", ["toolu_1", "toolu_3"]) == {"toolu_1"}
        assert tx.learned_events("local", "q", ["toolu_1"]) == set()


def test_between_a_commit_and_the_next_joined_write_a_batch_holds_no_lock(database_url: str) -> None:
    from vlk_memact import Settings

    quick = Settings.from_env({"VLK_BUSY_TIMEOUT_MS": "50", "VLK_LOCK_WAIT_MS": "200"})
    with Memory(database_url, settings=Settings.from_env({}), project="p") as learner, \
            Memory(database_url, settings=quick, project="p") as hook:
        with learner.store.batch() as batch:
            learner.record_state(raw_log="Error: learned", session_id="s")
            batch.commit()
            # Reading the next session's files now: another writer must get through at once.
            hook.record_state(raw_log="Error: live", session_id="live")
            learner.record_state(raw_log="Error: learned next", session_id="s")
        assert len(hook.get_history(session_id="s").slots) == 2
