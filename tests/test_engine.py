"""The engine over SQLite: the prototype's behavioural expectations (spec §12) and the fixes of issue 2."""

from __future__ import annotations

import pytest

from vlk_memact import InvalidInput, Memory, NotFound
from vlk_memact.core.model import TemporalState


def record(m: Memory, text: str, sid: str = "default", **kw: object) -> int:
    return m.record_state(raw_log=text, session_id=sid, **kw).timeline_id


def states(m: Memory, sid: str = "default") -> dict[str, int]:
    s = m.summarize_session(session_id=sid)
    return {"PRESENT": s.present, "PAST": s.past, "FUTURE": s.future, "total": s.total}


# ---- record ----

def test_sequences_start_at_one_and_history_is_newest_first(memory: Memory) -> None:
    ids = [record(memory, f"log {i}") for i in range(3)]
    history = memory.get_history().slots
    assert [s.sequence_order for s in history] == [3, 2, 1]
    assert [s.id for s in history] == ids[::-1]
    assert all(s.temporal_state == "PRESENT" and s.learning_summary is None for s in history)


def test_record_returns_the_timeline_id_and_the_content_id(memory: Memory) -> None:
    record(memory, "first")
    memory.time_travel(target_timeline_ids=[1], learning="lesson", raw_log_excerpt="first")
    result = memory.record_state(raw_log="second")
    assert result.timeline_id == 3 and result.content_id == 2
    assert memory.get_history(limit=1).slots[0].id == result.timeline_id


def test_identical_content_is_stored_once(memory: Memory) -> None:
    a = memory.record_state(raw_log="same", file_context="a.py")
    b = memory.record_state(raw_log="same", file_context="a.py", session_id="other")
    c = memory.record_state(raw_log="same", file_context="b.py")
    assert a.content_id == b.content_id != c.content_id
    assert a.timeline_id != b.timeline_id


def test_tool_payload_objects_are_kept_and_returned(memory: Memory) -> None:
    memory.record_state(raw_log="x", tool_payload={"cmd": "cargo test", "args": [1]})
    assert memory.get_history().slots[0].tool_payload == '{"args":[1],"cmd":"cargo test"}'


def test_record_reports_active_repeats_of_the_same_error(memory: Memory) -> None:
    for i in range(2):
        record(memory, f"Error 503: timeout at 14:32:0{i}")
    result = memory.record_state(raw_log="Error 503: timeout at 14:32:09")
    assert result.repeats == 3 and result.repeat_ids == [1, 2, 3]


@pytest.mark.parametrize("raw", [None, "", "   ", 5, ["x"]])
def test_record_rejects_missing_or_non_text_logs_and_stores_nothing(memory: Memory, raw: object) -> None:
    with pytest.raises(InvalidInput, match="raw_log"):
        memory.record_state(raw_log=raw)
    assert states(memory)["total"] == 0


# ---- time travel ----

def test_time_travel_archives_the_two_newest_of_three(memory: Memory) -> None:
    ids = [record(memory, f"log {i}") for i in range(3)]
    result = memory.time_travel(target_timeline_ids=ids[1:], learning="Use X", raw_log_excerpt="log 2 failed")
    assert states(memory) == {"PRESENT": 1, "PAST": 2, "FUTURE": 1, "total": 4}
    future = memory.get_history(limit=1).slots[0]
    assert future.temporal_state == "FUTURE" and future.content_id is None and future.raw_log is None
    assert result.moved_ids == ids[1:] and result.ignored_ids == []


def test_tokens_saved_are_characters_over_3_8(memory: Memory) -> None:
    record(memory, "A" * 3800)
    assert memory.time_travel(target_timeline_ids=[1], learning="L", raw_log_excerpt="A").tokens_saved == 1000


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"learning": "  "}, "learning"),
        ({"target_timeline_ids": []}, "target_timeline_ids"),
        ({"raw_log_excerpt": ""}, "raw_log_excerpt"),
        ({"raw_log_excerpt": " \n "}, "raw_log_excerpt"),
        ({"constraint_type": "MAYBE"}, "constraint_type"),
        ({"target_timeline_ids": ["1"]}, "target_timeline_ids"),
        ({"target_timeline_ids": [0]}, "target_timeline_ids"),
        ({"session_id": 3}, "session_id"),
    ],
)
def test_time_travel_names_the_bad_field_and_stores_nothing(memory: Memory, kwargs: dict, field: str) -> None:
    record(memory, "boom")
    args = {"target_timeline_ids": [1], "learning": "L", "raw_log_excerpt": "boom", **kwargs}
    with pytest.raises(InvalidInput, match=field):
        memory.time_travel(**args)
    assert states(memory) == {"PRESENT": 1, "PAST": 0, "FUTURE": 0, "total": 1}


def test_the_excerpt_error_explains_why_evidence_is_needed(memory: Memory) -> None:
    with pytest.raises(InvalidInput, match="grounds this lesson in evidence"):
        memory.time_travel(target_timeline_ids=[1], learning="L", raw_log_excerpt="")


def test_time_travel_with_no_present_id_is_an_error_and_stores_nothing(memory: Memory) -> None:
    record(memory, "in a", sid="a")
    with pytest.raises(NotFound, match="session 'b'"):
        memory.time_travel(target_timeline_ids=[1, 99], learning="L", raw_log_excerpt="x", session_id="b")
    assert states(memory, "b")["total"] == 0
    assert states(memory, "a") == {"PRESENT": 1, "PAST": 0, "FUTURE": 0, "total": 1}


def test_time_travel_reports_ignored_ids(memory: Memory) -> None:
    record(memory, "one")
    record(memory, "two", sid="other")
    result = memory.time_travel(target_timeline_ids=[1, 2, 42], learning="L", raw_log_excerpt="one")
    assert result.moved_ids == [1] and result.ignored_ids == [2, 42]


def test_evidence_is_stored_and_visible_in_history_search_and_context(memory: Memory) -> None:
    record(memory, "boom")
    memory.time_travel(target_timeline_ids=[1], learning="Pin the toolchain", raw_log_excerpt="rustc 1.70 mismatch")
    assert memory.get_history(limit=1).slots[0].evidence == "rustc 1.70 mismatch"
    assert memory.search_memory(query="1.70 MISMATCH").slots[0].learning_summary == "Pin the toolchain"
    assert "Evidence: rustc 1.70 mismatch" in memory.fetch_context().text


def test_two_travels_over_five_slots(memory: Memory) -> None:
    for i in range(5):
        record(memory, f"log {i}")
    memory.time_travel(target_timeline_ids=[1, 2], learning="A", raw_log_excerpt="x")
    memory.time_travel(target_timeline_ids=[3, 4, 5], learning="B", raw_log_excerpt="y")
    assert states(memory) == {"PRESENT": 0, "PAST": 5, "FUTURE": 2, "total": 7}


def test_prospective_is_stored_and_rendered_as_prospective(memory: Memory) -> None:
    record(memory, "deploy window")
    result = memory.time_travel(target_timeline_ids=[1], learning="Freeze Friday", raw_log_excerpt="x",
                                constraint_type="PROSPECTIVE")
    assert result.constraint_type == "PROSPECTIVE"
    assert "[PROSPECTIVE CONSTRAINT]: Freeze Friday" in memory.fetch_context().text


# ---- context, loops ----

def test_context_hides_past_and_shows_future(memory: Memory) -> None:
    record(memory, "old failure")
    record(memory, "live failure")
    memory.time_travel(target_timeline_ids=[1], learning="Lesson one", raw_log_excerpt="old failure")
    text = memory.fetch_context().text
    assert "old failure" not in text.split("Evidence:")[0] and "live failure" in text and "Lesson one" in text


def test_empty_session_context_has_the_placeholder(memory: Memory) -> None:
    assert "(No active PRESENT or FUTURE entries for this session.)" in memory.fetch_context(session_id="new").text


def test_three_identical_errors_are_archived_behind_one_anchor(memory: Memory) -> None:
    for _ in range(3):
        record(memory, "error msg")
    result = memory.fetch_context()
    assert states(memory) == {"PRESENT": 0, "PAST": 3, "FUTURE": 1, "total": 4}
    assert "[ACTIVE PRESENT STATE]" not in result.text
    assert "[SYSTEM ANCHOR]" in result.text and "Loop detected" in result.text
    [loop] = result.loops
    assert loop.archived_ids == [1, 2, 3] and loop.method == "exact" and result.tokens_saved > 0
    anchor = memory.get_history(limit=1).slots[0]
    assert anchor.evidence == "error msg" and anchor.origin == "anchor"
    archived = [s for s in memory.get_history().slots if s.temporal_state == "PAST"]
    assert {s.retired_by for s in archived} == {anchor.id}


def test_a_fingerprint_loop_leaves_the_different_error_present(memory: Memory) -> None:
    for second in (1, 4, 7):
        record(memory, f"Error 503: timeout at 14:32:0{second}")
    record(memory, "Error 404: not found")
    text = memory.fetch_context().text
    assert text.count("[ACTIVE PRESENT STATE]") == 1 and "Error 404: not found" in text


def test_trimmed_repeats_count_as_one_error(memory: Memory) -> None:
    for raw in ("error", "  error  ", "error"):
        record(memory, raw)
    assert len(memory.fetch_context().loops) == 1


def test_four_repeats_say_four_times(memory: Memory) -> None:
    for _ in range(4):
        record(memory, "same failure")
    assert "appeared 4 times" in memory.fetch_context().text


def test_every_loop_that_reached_three_is_archived_in_one_fetch(memory: Memory) -> None:
    # Deliberate difference from the prototype, which archived only the largest group per fetch.
    for _ in range(4):
        record(memory, "error A")
    for _ in range(3):
        record(memory, "error B")
    result = memory.fetch_context()
    assert [loop.occurrences for loop in result.loops] == [4, 3]
    assert states(memory)["PRESENT"] == 0


def test_intercept_loops_archives_what_fetch_context_would_and_renders_nothing(memory: Memory) -> None:
    ids = [record(memory, "error A") for _ in range(3)]
    other = record(memory, "error B")
    loops = memory.intercept_loops()
    assert [(loop.occurrences, sorted(loop.archived_ids)) for loop in loops] == [(3, sorted(ids))]
    assert states(memory)["PRESENT"] == 1
    context = memory.fetch_context()
    assert not context.loops and f"[id:{loops[0].anchor_id}]" in context.text and f"[id:{other}]" in context.text


def test_loop_detection_is_per_session(memory: Memory) -> None:
    for _ in range(3):
        record(memory, "boom", sid="a")
    record(memory, "boom", sid="b")
    assert memory.fetch_context(session_id="a").loops
    assert not memory.fetch_context(session_id="b").loops
    assert states(memory, "b")["PRESENT"] == 1


def test_fetching_twice_changes_nothing_the_second_time(memory: Memory) -> None:
    for _ in range(3):
        record(memory, "boom")
    for i in range(7):
        record(memory, f"distinct {i}")
        memory.time_travel(target_timeline_ids=[memory.get_history(limit=1).slots[0].id], learning=f"Rule {i}",
                           raw_log_excerpt="x")
    first = memory.fetch_context()
    history = memory.get_history(limit=500).slots
    second = memory.fetch_context()
    assert first.loops and first.merges
    assert not second.loops and not second.merges
    assert memory.get_history(limit=500).slots == history
    assert second.text.split("[VLK PIPELINE]")[0] == first.text.split("[VLK PIPELINE]")[0]


# ---- consolidation and conflicts through fetch ----

def lessons(memory: Memory, texts: list[str], sid: str = "default", scope: str | None = None) -> list[int]:
    ids = []
    for text in texts:
        slot = record(memory, f"failure for {text}", sid=sid)
        ids.append(memory.time_travel(target_timeline_ids=[slot], learning=text, raw_log_excerpt="x",
                                      session_id=sid, scope=scope).constraint_id)
    return ids


def test_three_constraints_are_left_alone(memory: Memory) -> None:
    lessons(memory, ["Rule 0", "Rule 1", "Rule 2"])
    assert not memory.fetch_context().merges and states(memory)["FUTURE"] == 3


def test_six_constraints_become_one(memory: Memory) -> None:
    ids = lessons(memory, [f"Rule {i}" for i in range(6)])
    result = memory.fetch_context()
    assert states(memory)["FUTURE"] == 1
    assert "[CONSOLIDATED CONSTRAINTS from 6 prior lessons]" in result.text and "Rule 0" in result.text
    [merge] = result.merges
    assert merge.merged_ids == ids
    merged = [s for s in memory.get_history(limit=100).slots if s.id in ids]
    assert {s.retired_reason for s in merged} == {"consolidated"}
    assert {s.retired_by for s in merged} == {merge.consolidated_id}


def test_a_later_consolidation_flattens_the_earlier_one(memory: Memory) -> None:
    lessons(memory, [f"Rule {i}" for i in range(6)])
    memory.fetch_context()
    lessons(memory, [f"Later {i}" for i in range(5)])
    text = memory.fetch_context().text
    assert text.count("[CONSOLIDATED CONSTRAINTS") == 1
    assert "from 11 prior lessons" in text


def test_two_lessons_that_conflict_are_flagged(memory: Memory) -> None:
    lessons(memory, ["Use cache for API responses", "Do not cache API responses"])
    text = memory.fetch_context().text
    assert "CONFLICTING FUTURE CONSTRAINTS" in text and "vlk_revoke_future" in text


def test_conflicts_stay_visible_when_consolidation_runs(memory: Memory) -> None:
    lessons(memory, ["Always retry on 503 with exponential backoff", "Never retry on 503 — use cache instead"])
    lessons(memory, [f"Rule {i}" for i in range(5)])
    result = memory.fetch_context()
    assert result.merges and len(result.conflicts) == 1
    assert "CONFLICTING FUTURE CONSTRAINTS" in result.text


def test_identical_negative_lessons_do_not_conflict(memory: Memory) -> None:
    lessons(memory, ["Never retry the upload", "never retry the upload"])
    assert memory.fetch_context().conflicts == []


# ---- revoke ----

def test_revoked_constraints_leave_the_context(memory: Memory) -> None:
    [cid] = lessons(memory, ["Use cache"])
    memory.revoke_future(timeline_id=cid)
    assert "Use cache" not in memory.fetch_context().text
    assert [s.retired_reason for s in memory.get_history().slots if s.id == cid] == ["revoked"]


@pytest.mark.parametrize("bad", [0, -1, "5", None])
def test_revoke_rejects_non_ids(memory: Memory, bad: object) -> None:
    with pytest.raises(InvalidInput, match="timeline_id"):
        memory.revoke_future(timeline_id=bad)


def test_revoking_a_missing_or_foreign_id_names_the_id_and_session(memory: Memory) -> None:
    [cid] = lessons(memory, ["Use cache"], sid="a", scope="session")
    with pytest.raises(NotFound, match=f"#{cid} in session 'b'"):
        memory.revoke_future(timeline_id=cid, session_id="b")
    with pytest.raises(NotFound, match="#999"):
        memory.revoke_future(timeline_id=999, session_id="a")


# ---- search, history, summary ----

def test_search_finds_logs_lessons_and_file_context(memory: Memory) -> None:
    record(memory, "#[derive(Serialize)] missing", file_context="src/model.rs")
    lessons(memory, ["Add serde derive"])
    assert memory.search_memory(query="#[derive(Serialize)]").slots
    assert memory.search_memory(query="serde derive").slots[0].learning_summary == "Add serde derive"
    assert memory.search_memory(query="src/MODEL.rs").slots
    assert memory.search_memory(query="absent").slots == []


def test_search_treats_wildcards_literally(memory: Memory) -> None:
    record(memory, "progress 50% done")
    record(memory, "progress 50 percent")
    record(memory, "snake_case name")
    record(memory, "snakeXcase name")
    assert [s.raw_log for s in memory.search_memory(query="50%").slots] == ["progress 50% done"]
    assert [s.raw_log for s in memory.search_memory(query="snake_case").slots] == ["snake_case name"]
    assert memory.search_memory(query="%").slots[0].raw_log == "progress 50% done"


def test_search_is_unicode_case_insensitive(memory: Memory) -> None:
    record(memory, "ÉCHEC: Straße gesperrt")
    assert memory.search_memory(query="échec: STRASSE").slots


def test_search_and_history_stay_in_their_session(memory: Memory) -> None:
    record(memory, "secret of a", sid="a")
    assert memory.search_memory(query="secret", session_id="b").slots == []
    assert memory.get_history(session_id="b").slots == []


def test_limits_are_capped_and_validated(memory: Memory) -> None:
    for i in range(3):
        record(memory, f"log {i}")
    assert memory.get_history(limit=10_000).limit == 500
    assert len(memory.get_history(limit=2).slots) == 2
    with pytest.raises(InvalidInput, match="limit"):
        memory.get_history(limit=-1)


def test_summary_counts_states_and_splits_tokens(memory: Memory) -> None:
    for i in range(3):
        record(memory, "x" * 38)
        memory.record_state(raw_log=f"distinct {i}")
    memory.time_travel(target_timeline_ids=[1, 3], learning="L", raw_log_excerpt="x")
    s = memory.summarize_session()
    assert (s.total, s.present, s.past, s.future) == (7, 4, 2, 1)
    assert s.archived_tokens == 20
    assert memory.summarize_session(session_id="empty").total == 0


def test_empty_session_id_is_the_default_session(memory: Memory) -> None:
    record(memory, "x", sid="")
    assert memory.summarize_session(session_id="default").present == 1
    assert memory.summarize_session(session_id=None).present == 1


def test_sql_injection_attempts_are_plain_text(memory: Memory) -> None:
    evil = "x'); DROP TABLE agent_timeline; --"
    record(memory, evil, sid=evil)
    assert memory.search_memory(query=evil, session_id=evil).slots[0].raw_log == evil
    assert memory.summarize_session(session_id=evil).present == 1


def test_unicode_and_control_characters_round_trip(memory: Memory) -> None:
    text = "İstanbul ẞ \u202e emoji 🎉 tab\there \x1b[31mred\x1b[0m"
    record(memory, text)
    assert memory.get_history().slots[0].raw_log == text
    record(memory, "bad \ud800 surrogate and \x00 nul")
    assert memory.get_history(limit=1).slots[0].raw_log == "bad \ufffd surrogate and \ufffd nul"


def test_fingerprints_of_an_older_algorithm_are_refreshed_before_grouping(memory: Memory) -> None:
    for i in range(3):
        record(memory, f"Error 503: timeout at 14:32:0{i}")
    # Simulate rows written by an older fingerprint version.
    with memory.store.write() as tx:
        tx.update_fingerprints([(i, f"old-{i}", (f"old-{i}",), 0) for i in (1, 2, 3)])
    assert memory.fetch_context().loops


def test_present_state_enum_is_a_string() -> None:
    assert TemporalState.PRESENT == "PRESENT"


def test_listings_stop_at_the_size_cap_newest_first() -> None:
    from vlk_memact import Settings

    with Memory("sqlite::memory:", settings=Settings(max_listing_chars=25_000), project="p") as m:
        for i in range(5):
            m.record_state(raw_log=chr(97 + i) * 10_000)
        history = m.get_history()
        assert [s.raw_log[0] for s in history.slots] == ["e", "d"] and not history.complete
        assert m.search_memory(query="a").complete


def test_a_query_cannot_match_across_fields(memory: Memory) -> None:
    memory.record_state(raw_log="beta", file_context="x.py")
    with pytest.raises(InvalidInput, match="control characters"):
        memory.search_memory(query="beta\x1fx.py")


def test_retries_with_one_word_changed_are_intercepted_through_group(memory: Memory) -> None:
    # Three keys (the service name is a plain word), one error: fingerprint.group joins them.
    for service in ("billing", "search", "checkout"):
        record(memory, f"deploy failed: could not reach service {service} on the staging cluster after retries")
    record(memory, "deploy failed: could not reach the artifact store")
    result = memory.fetch_context()
    assert len(result.loops) == 1 and len(result.loops[0].archived_ids) == 3
    assert {k: v for k, v in states(memory).items() if k != "total"} == {"PRESENT": 1, "PAST": 3, "FUTURE": 1}


def test_look_alike_errors_with_different_codes_stay_apart_in_the_engine(memory: Memory) -> None:
    for code in ("ORA-00942", "ORA-01017", "ORA-12154"):
        record(memory, f"nightly migration step failed with {code} while running the batch job")
    assert not memory.fetch_context().loops
    assert states(memory)["PRESENT"] == 3
