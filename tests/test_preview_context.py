"""The dry run of vlk_fetch_context: the same text as the next real fetch, and nothing changed.

Runs on SQLite and PostgreSQL (the `memory` fixture): PostgreSQL identity counters are not
transactional, so the ids the dry run shows are given back before its rollback.
"""

from __future__ import annotations

from typing import Any

from vlk_memact import Memory

LOOPING = 'Traceback (most recent call last):\n  File "/app/main.py", line {line}, in run\nKeyError: \'user_{i}\''


def _everything(memory: Memory) -> list[Any]:
    """Every row the store holds, as export records (uids, states, fire counts, links, keys)."""
    with memory.store.read() as tx:
        return list(tx.dump(None, None, None))


def _seed_a_loop_and_enough_lessons_to_consolidate(memory: Memory) -> None:
    for i in range(3):
        memory.record_state(raw_log=LOOPING.format(line=40 + i, i=i), session_id="s1")
    memory.record_state(raw_log="warning: unused variable `x`", file_context="src/lib.rs", session_id="s1")
    for i in range(6):
        slot = memory.record_state(raw_log=f"npm ERR! code E{400 + i}", session_id="s1")
        memory.time_travel(target_timeline_ids=[slot.timeline_id], learning=f"Lesson number {i}: pin the version.",
                           raw_log_excerpt=f"npm ERR! code E{400 + i}", session_id="s1")
    memory.time_travel(target_timeline_ids=[memory.record_state(raw_log="x", session_id="s1").timeline_id],
                       learning="Always retry the install.", raw_log_excerpt="x", session_id="s1")
    memory.time_travel(target_timeline_ids=[memory.record_state(raw_log="y", session_id="s1").timeline_id],
                       learning="Never retry the install.", raw_log_excerpt="y", session_id="s1")


def test_preview_equals_the_next_real_fetch_and_changes_nothing(memory: Memory) -> None:
    _seed_a_loop_and_enough_lessons_to_consolidate(memory)
    before = _everything(memory)

    preview = memory.preview_context(session_id="s1")
    assert _everything(memory) == before  # nothing archived, merged, inserted or counted
    again = memory.preview_context(session_id="s1")
    assert again.text == preview.text

    real = memory.fetch_context(session_id="s1")
    assert preview.loops and preview.merges, "the seed must make the pipeline archive and consolidate"
    assert real.text == preview.text
    assert real.loops == preview.loops and real.merges == preview.merges
    assert (real.constraint_ids, real.present_ids, real.tokens) == (preview.constraint_ids, preview.present_ids,
                                                                    preview.tokens)
    assert _everything(memory) != before  # the real call did write


def test_preview_after_a_fetch_is_the_idempotent_fetch(memory: Memory) -> None:
    _seed_a_loop_and_enough_lessons_to_consolidate(memory)
    memory.fetch_context(session_id="s1", max_tokens=300)
    before = _everything(memory)
    preview = memory.preview_context(session_id="s1", max_tokens=300)
    assert _everything(memory) == before
    assert preview.text == memory.fetch_context(session_id="s1", max_tokens=300).text
    assert preview.tokens <= 300


def test_a_failing_preview_leaves_the_store_usable(memory: Memory) -> None:
    memory.record_state(raw_log="error: one", session_id="s1")
    try:
        memory.preview_context(session_id="s1", max_tokens=10)  # below the minimum budget
    except Exception as exc:  # InvalidInput, raised before any transaction
        assert "max_tokens" in str(exc)
    assert memory.preview_context(session_id="s1").text == memory.fetch_context(session_id="s1").text
