"""What a session start carries (issue 34): only what is likely to come back (an unresolved loop met in two
sessions, a broken environment not fixed since, a registered lesson); everything else waits for its failure,
where one line says that it failed the same way in an earlier session."""

from __future__ import annotations

from hook_events import bash, failure, run_failing, session_start, success

from vlk_memact import Memory
from vlk_memact.hosts.claude_code.adapter import handle
from test_hooks_core import ERROR, MISSING, context_of

TEST_FAILURE = "Exit code 1\nFAILED tests/test_api.py::test_limits - AssertionError: assert 41 == 42"


def test_a_loop_of_one_session_that_is_no_environment_waits_for_its_failure(memory: Memory) -> None:
    run_failing(handle, memory, "pytest tests/test_api.py", TEST_FAILURE, 3, session="first")
    assert handle(session_start(session="second"), memory) is None  # nothing at the start
    told = context_of(handle(failure("Bash", bash("pytest tests/test_api.py"), TEST_FAILURE, "second"), memory))
    assert told is not None and "failed the same way in session 'first' on 20" in told, told
    assert told.endswith("not resolved there.")


def test_an_unresolved_loop_met_in_two_sessions_is_carried(memory: Memory) -> None:
    run_failing(handle, memory, "pytest tests/test_api.py", TEST_FAILURE, 3, session="first")
    run_failing(handle, memory, "pytest tests/test_api.py", TEST_FAILURE, 3, session="second")
    text = context_of(handle(session_start(session="third"), memory)) or ""
    assert "failed 6 times with" in text and "session 'second'" in text and "and 1 earlier session" in text, text
    assert text.count("\n- ") == 1 and "not resolved there" in text  # one error: one fact, not one per loop


def test_a_broken_environment_is_carried_until_something_fixes_it(memory: Memory) -> None:
    run_failing(handle, memory, "npm test", ERROR, 3, session="first")
    text = context_of(handle(session_start(session="second"), memory)) or ""
    assert "(a missing module)" in text and "Cannot find module 'express'" in text, text
    handle(failure("Bash", bash("npm test"), ERROR, "second"), memory)
    handle(success("Bash", bash("npm install express"), session="second"), memory)
    handle(success("Bash", bash("npm test"), session="second"), memory)
    # Fixed in an earlier session and not met since: dropped (the fix is told if the error comes back).
    assert handle(session_start(session="third"), memory) is None


def test_a_typo_is_no_missing_tool(memory: Memory) -> None:
    typo = "Exit code 127\n/bin/bash: line 387: find.: command not found"
    run_failing(handle, memory, 'find. -name "x.py"', typo, 3, session="first")
    assert handle(session_start(session="second"), memory) is None


def test_a_registered_lesson_is_always_carried_and_ranks_first(memory: Memory) -> None:
    run_failing(handle, memory, "npm test", ERROR, 3, session="first")
    slot = memory.record_state(raw_log="Exit code 1\nstaging refused the deploy", session_id="first").timeline_id
    memory.time_travel(target_timeline_ids=[slot], learning="Deploys go through make deploy, never kubectl apply.",
                       raw_log_excerpt="staging refused the deploy", constraint_type="PROSPECTIVE",
                       session_id="first", scope="project")
    text = context_of(handle(session_start(session="second"), memory)) or ""
    lines = text.splitlines()
    assert "make deploy" in lines[1] and "Cannot find module 'express'" in lines[2], text


def test_a_loop_of_an_error_that_names_nothing_is_not_recalled_in_a_later_session(memory: Memory) -> None:
    for _ in range(3):
        handle(failure("Read", {"file_path": "/work/project/status.md"}, MISSING, session="first"), memory)
    assert memory.get_history(session_id="first").slots  # recorded, and looped in its session
    # "File does not exist." names nothing: a later session's same failure hears neither a recall nor a note.
    assert handle(failure("Read", {"file_path": "/work/project/status.md"}, MISSING, session="second"), memory) is None
