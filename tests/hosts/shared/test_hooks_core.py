"""The hook's behaviour in process, through vlk_memact.hosts.claude_code.adapter.handle, on both stores: capture,
interception, the guard, resolution, carry-over, one session for hooks and tools, the injected texts."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hook_events import bash, failure, pre, prompt, run_failing, session_start, success, use_id

from vlk_memact import Memory, Settings
from vlk_memact.hosts.shared import guard, inject
from vlk_memact.hosts.claude_code.adapter import handle
from vlk_memact.core.model import Retired, TemporalState

ERROR = ("Exit code 1\nnode:internal/modules/cjs/loader:1228\nError: Cannot find module 'express'\n"
         "Require stack:\n- /app/index.js")
OTHER = "Exit code 2\nsrc/lib.rs:3:5: error[E0425]: cannot find value `x` in this scope"


def context_of(answer: dict | None) -> str | None:
    return None if answer is None else answer["hookSpecificOutput"].get("additionalContext")


def states(memory: Memory, session: str = "s1") -> dict[str, int]:
    summary = memory.summarize_session(session_id=session)
    return {"present": summary.present, "past": summary.past, "future": summary.future}


# ---- capture and interception ----


def test_an_ordinary_failure_is_recorded_and_nothing_is_said(memory: Memory) -> None:
    tid = use_id()
    event = failure("Bash", bash("npm test", "Run the tests"), ERROR, tool_use_id=tid)
    assert handle(event, memory) is None
    [slot] = memory.get_history(session_id="s1").slots
    assert slot.temporal_state == "PRESENT" and slot.raw_log == ERROR
    assert slot.file_context == "/work/project"  # no file in a Bash input: the working directory
    payload = json.loads(slot.tool_payload or "")
    assert payload == {"tool": "Bash", "input": {"command": "npm test", "description": "Run the tests"},
                       "tool_use_id": tid}


def test_the_file_of_the_tool_input_is_the_file_context(memory: Memory) -> None:
    event = failure("Edit", {"file_path": "/work/project/src/app.py", "old_string": "a", "new_string": "b"},
                    "EACCES: permission denied, open '/work/project/src/app.py'")
    handle(event, memory)
    assert memory.get_history(session_id="s1").slots[0].file_context == "/work/project/src/app.py"


def test_recording_is_idempotent_per_tool_use_id(memory: Memory) -> None:
    event = failure("Bash", bash("npm test"), ERROR)
    handle(event, memory)
    assert handle(event, memory) is None
    handle(event, memory)
    assert states(memory)["present"] == 1


def test_interrupts_and_vlk_memacts_own_tools_are_not_recorded(memory: Memory) -> None:
    handle(failure("Bash", bash("sleep 100"), "Interrupted by user", is_interrupt=True), memory)
    handle(failure("mcp__vlk-memact__vlk_time_travel", {"learning": "x"}, "Field 'raw_log_excerpt' is required."),
           memory)
    handle(failure("mcp__plugin_vlk-memact_vlk-memact__vlk_revoke_future", {"timeline_id": 9}, "No FUTURE"), memory)
    assert states(memory)["present"] == 0


def test_the_second_occurrence_says_the_error_is_live_again(memory: Memory) -> None:
    answers = run_failing(handle, memory, "npm test", ERROR, 2)
    assert answers[:3] == [None, None, None]
    text = context_of(answers[3])
    assert text is not None and text.startswith("vlk-memact:")
    assert "live 2 times" in text and "#1, #2" in text


def test_the_third_occurrence_announces_the_loop_with_its_anchor_and_evidence(memory: Memory) -> None:
    answers = run_failing(handle, memory, "npm test", ERROR, 3)
    text = context_of(answers[5])
    assert text is not None and text.startswith("vlk-memact:")
    anchor = [s for s in memory.get_history(session_id="s1").slots if s.origin == "anchor"][0]
    assert f"[id:{anchor.id}]" in text and "#1, #2, #3" in text and "3 times" in text
    assert "Cannot find module 'express'" in text  # the evidence
    assert "SYSTEM" not in text and "Mandatory" not in text  # facts, not a system command
    assert states(memory) == {"present": 0, "past": 3, "future": 1}


def test_a_redacted_secret_never_reaches_the_store_or_the_text(memory: Memory) -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    error = f"Exit code 128\nfatal: could not read from https://x-access-token:{secret}@github.com/o/r.git"
    answers = run_failing(handle, memory, f"git push https://x-access-token:{secret}@github.com/o/r.git", error, 3)
    dump = json.dumps([dataclasses.asdict(s) for s in memory.get_history(session_id="s1").slots])
    assert secret not in dump and "REDACTED" in dump
    assert all(secret not in json.dumps(a) for a in answers if a)


def test_a_lesson_learned_in_another_session_is_recalled_at_once(memory: Memory) -> None:
    handle(failure("Bash", bash("npm test"), ERROR, session="old"), memory)
    slot = memory.get_history(session_id="old").slots[0]
    memory.time_travel(target_timeline_ids=[slot.id], learning="Run npm install before npm test in this repo.",
                       raw_log_excerpt="Error: Cannot find module 'express'", session_id="old")
    text = context_of(handle(failure("Bash", bash("npm run test"), ERROR, session="new"), memory))
    assert text is not None and "seen before" in text
    assert "Run npm install before npm test" in text and "session 'old'" in text


# ---- the guard ----


def test_a_fourth_identical_call_with_nothing_changed_is_denied_with_the_anchor_as_reason(memory: Memory) -> None:
    run_failing(handle, memory, "npm test", ERROR, 3)
    answer = handle(pre("Bash", bash("npm  test ", "again")), memory)  # whitespace and description differ
    assert answer is not None
    out = answer["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse" and out["permissionDecision"] == "deny"
    anchor = [s for s in memory.get_history(session_id="s1").slots if s.origin == "anchor"][0]
    assert out["permissionDecisionReason"].startswith("vlk-memact:")
    assert f"[id:{anchor.id}]" in out["permissionDecisionReason"]


def test_a_different_command_is_not_guarded(memory: Memory) -> None:
    run_failing(handle, memory, "npm test", ERROR, 3)
    assert handle(pre("Bash", bash("npm install")), memory) is None
    assert handle(pre("Bash", bash("npm test", "x")), memory) is not None


def test_after_a_successful_edit_the_call_runs_with_the_anchor_as_warning(memory: Memory) -> None:
    run_failing(handle, memory, "npm test", ERROR, 3)
    edit = {"file_path": "/work/project/package.json", "old_string": "{", "new_string": '{"dependencies":{}'}
    handle(success("Edit", edit, {"filePath": "/work/project/package.json"}), memory)
    answer = handle(pre("Bash", bash("npm test")), memory)
    assert answer is not None and "permissionDecision" not in answer["hookSpecificOutput"]
    text = context_of(answer)
    assert text is not None and text.startswith("vlk-memact:") and "something has changed" in text


def test_another_successful_command_counts_as_a_change_but_a_read_does_not(memory: Memory) -> None:
    run_failing(handle, memory, "npm test", ERROR, 3)
    handle(success("Read", {"file_path": "/work/project/package.json"}, {"type": "text"}), memory)
    handle(success("Grep", {"pattern": "express"}, {"numFiles": 0}), memory)
    assert handle(pre("Bash", bash("npm test")), memory)["hookSpecificOutput"]["permissionDecision"] == "deny"
    handle(success("Bash", bash("npm install express")), memory)
    assert "permissionDecision" not in handle(pre("Bash", bash("npm test")), memory)["hookSpecificOutput"]


def test_a_failure_after_the_change_arms_the_guard_again(memory: Memory) -> None:
    run_failing(handle, memory, "npm test", ERROR, 3)
    handle(success("Bash", bash("npm install express")), memory)
    tid = use_id()
    handle(pre("Bash", bash("npm test"), tool_use_id=tid), memory)
    text = context_of(handle(failure("Bash", bash("npm test"), ERROR, tool_use_id=tid), memory))
    assert text is not None and "seen before" in text  # the anchor is recalled
    assert handle(pre("Bash", bash("npm test")), memory)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_a_revoked_anchor_no_longer_guards(memory: Memory) -> None:
    run_failing(handle, memory, "npm test", ERROR, 3)
    anchor = [s for s in memory.get_history(session_id="s1").slots if s.origin == "anchor"][0]
    memory.revoke_future(timeline_id=anchor.id, session_id="s1")
    assert handle(pre("Bash", bash("npm test")), memory) is None


@pytest.mark.parametrize(("mode", "expected"), [("warn", "warn"), ("off", None)])
def test_vlk_hook_guard_warn_never_denies_and_off_says_nothing(
    database_url: str, mode: str, expected: str | None
) -> None:
    with Memory(database_url, settings=Settings(hook_guard=mode), project="p") as memory:
        run_failing(handle, memory, "npm test", ERROR, 3)
        answer = handle(pre("Bash", bash("npm test")), memory)
        if expected is None:
            assert answer is None
        else:
            assert answer is not None and "permissionDecision" not in answer["hookSpecificOutput"]
            assert "nothing has changed" in (context_of(answer) or "")


def test_the_guard_is_per_session(memory: Memory) -> None:
    run_failing(handle, memory, "npm test", ERROR, 3, session="a")
    assert handle(pre("Bash", bash("npm test"), session="b"), memory) is None


# ---- resolution ----


def test_a_success_of_the_same_call_retires_its_live_failures_as_resolved(memory: Memory) -> None:
    run_failing(handle, memory, "cargo build", OTHER, 2)
    run_failing(handle, memory, "npm test", ERROR, 1)
    assert states(memory)["present"] == 3
    handle(success("Bash", bash("cargo  build")), memory)
    slots = memory.get_history(session_id="s1").slots
    resolved = [s for s in slots if s.retired_reason == Retired.RESOLVED.value]
    assert len(resolved) == 2 and all("E0425" in (s.raw_log or "") for s in resolved)
    assert [s.raw_log for s in slots if s.temporal_state == TemporalState.PRESENT.value] == [ERROR]
    assert "E0425" not in memory.fetch_context(session_id="s1").text  # the stale error left the context
    # ... and a success clears the guard for that call
    assert handle(pre("Bash", bash("cargo build")), memory) is None


def test_a_read_that_never_failed_stores_nothing(memory: Memory) -> None:
    for _ in range(5):
        handle(success("Read", {"file_path": "/a"}), memory)
    with memory.store.read() as tx:
        assert tx.host_calls(memory._key("s1")) == []  # noqa: SLF001


# ---- one session for hooks and tools ----


def test_a_model_record_of_the_error_the_hook_just_captured_is_the_same_evidence(memory: Memory) -> None:
    handle(failure("Bash", bash("npm test"), ERROR), memory)
    again = memory.record_state(raw_log="Error: Cannot find module 'express'", session_id="s1")
    assert again.already_recorded_by == "hook" and again.repeats == 1
    handle(failure("Bash", bash("npm test"), ERROR), memory)
    assert states(memory)["present"] == 2  # two real occurrences, no false third one
    third = memory.record_state(raw_log="Error: Cannot find module 'express'", session_id="s1")
    assert third.already_recorded_by == "hook"
    assert memory.fetch_context(session_id="s1").loops == []  # no false loop from double recording
    # a record of another error is a record
    assert memory.record_state(raw_log="TypeError: x is not a function", session_id="s1").already_recorded_by is None


def test_the_server_default_session_is_the_hosts(memory: Memory) -> None:
    view = Memory(store=memory.store, settings=memory.settings, project=memory.project, default_session="cc-123")
    assert view.record_state(raw_log="boom", session_id=None).session_id == "cc-123"
    assert view.record_state(raw_log="boom", session_id="  ").session_id == "cc-123"
    assert view.record_state(raw_log="boom", session_id="mine").session_id == "mine"
    assert memory.record_state(raw_log="boom", session_id=None).session_id == "default"


# ---- carry-over ----


def test_a_new_session_starts_with_the_projects_lessons_and_nothing_else(memory: Memory) -> None:
    run_failing(handle, memory, "npm test", ERROR, 3, session="first")
    memory.record_state(raw_log="a live error of the first session", session_id="first")
    memory.time_travel(target_timeline_ids=[memory.record_state(raw_log="x", session_id="first").timeline_id],
                       learning="Only for this task: the staging DB is read-only today.", raw_log_excerpt="x",
                       constraint_type="PROSPECTIVE", session_id="first")
    text = context_of(handle(session_start("startup", session="second"), memory))
    assert text is not None and text.startswith("vlk-memact:")
    assert "Cannot find module 'express'" in text and "session 'first'" in text
    assert "live error" not in text and "staging DB" not in text  # session notes stay in their session


def test_another_project_starts_empty(database_url: str) -> None:
    with Memory(database_url, project="one") as one:
        run_failing(handle, one, "npm test", ERROR, 3)
    with Memory(database_url, project="two") as two:
        assert handle(session_start("startup", session="s2"), two) is None


def test_after_compaction_the_session_gets_its_own_constraints_and_live_errors(memory: Memory) -> None:
    run_failing(handle, memory, "npm test", ERROR, 3)
    handle(failure("Bash", bash("cargo build"), OTHER), memory)
    text = context_of(handle(session_start("compact"), memory))
    assert text is not None and "E0425" in text and "Cannot find module 'express'" in text
    assert "live error" in text


def test_the_carry_over_stays_within_its_token_budget(database_url: str) -> None:
    settings = Settings(hook_context_tokens=200, consolidate_above=50)  # twelve lessons stay apart
    with Memory(database_url, settings=settings, project="p") as memory:
        for n in range(12):
            rec = memory.record_state(raw_log=f"error number {n}", session_id="old")
            memory.time_travel(target_timeline_ids=[rec.timeline_id], learning=f"Lesson {n}: " + "detail " * 20,
                               raw_log_excerpt=f"error number {n}", session_id="old")
        text = context_of(handle(session_start(session="new"), memory)) or ""
        assert 0 < len(text) <= 200 * 3.8 and "left out to stay within 200 tokens" in text
    with Memory(database_url, settings=Settings(hook_context_tokens=200), project="p") as memory:
        text = context_of(handle(session_start(session="newer"), memory)) or ""  # now one consolidated lesson
        assert 0 < len(text) <= 200 * 3.8 and text.endswith("…")  # cut, not dropped


def test_a_prompt_injects_only_what_changed_and_never_the_same_text_twice(memory: Memory) -> None:
    run_failing(handle, memory, "npm test", ERROR, 3, session="first")
    assert context_of(handle(session_start(session="s1"), memory))  # the anchor, at start
    assert handle(prompt(), memory) is None  # nothing new
    rec = memory.record_state(raw_log="psql: FATAL: role does not exist", session_id="s1")
    memory.time_travel(target_timeline_ids=[rec.timeline_id], learning="Create the role with createuser first.",
                       raw_log_excerpt="FATAL: role does not exist", session_id="s1")
    text = context_of(handle(prompt(), memory))
    assert text is not None and "createuser" in text and "express" not in text
    assert handle(prompt(), memory) is None


def test_a_conflict_is_announced_once(memory: Memory) -> None:
    for lesson in ("Retry the deploy when it times out.", "Never retry the deploy: it double-charges."):
        rec = memory.record_state(raw_log=f"build log {lesson}", session_id="s1")
        memory.time_travel(target_timeline_ids=[rec.timeline_id], learning=lesson, raw_log_excerpt="build",
                           session_id="s1")
    text = context_of(handle(prompt(), memory)) or ""
    assert "contradict" in text
    assert handle(prompt(), memory) is None


def test_an_anchor_announced_at_failure_is_not_repeated_by_the_next_prompt(memory: Memory) -> None:
    run_failing(handle, memory, "npm test", ERROR, 3)
    assert handle(prompt(), memory) is None


def test_unknown_events_get_nothing(memory: Memory) -> None:
    assert handle({"hook_event_name": "Notification", "session_id": "s1", "message": "hi"}, memory) is None
    assert handle({"hook_event_name": "Stop", "session_id": "s1"}, memory) is None


# ---- pure parts ----


def test_call_identity_normalises_whitespace_and_ignores_the_description() -> None:
    assert guard.call_key("Bash", {"command": "npm  test\n", "description": "a"}) == guard.call_key(
        "Bash", {"command": "npm test", "description": "b"})
    assert guard.call_key("Bash", {"command": "npm test"}) != guard.call_key("Bash", {"command": "npm tests"})
    assert guard.call_key("Bash", {"command": "x"}) != guard.call_key("PowerShell", {"command": "x"})
    assert guard.call_key("Edit", {"file_path": "a", "description": "x"}) != guard.call_key("Edit", {"file_path": "a"})


def test_decide() -> None:
    same, other = "k", "o"
    E = guard.CallEvent
    assert guard.decide("deny", same, True, []) == guard.DENY
    assert guard.decide("deny", same, False, []) == guard.NONE
    assert guard.decide("deny", same, True, [E(other, "success", False)]) == guard.DENY  # a read
    assert guard.decide("deny", same, True, [E(other, "success", True)]) == guard.WARN
    assert guard.decide("deny", same, True, [E(other, "failure", False)]) == guard.DENY  # a failed edit
    # a failed command line that wrote before it failed (`sed -i f && pytest`) is stored as changing state
    assert guard.decide("deny", same, True, [E(other, "failure", True)]) == guard.WARN
    assert guard.decide("deny", same, True, [], own_failures=2) == guard.WARN  # its error looped, not the call
    assert guard.decide("deny", same, True, [], specific=False) == guard.WARN  # a bare "Error"
    assert guard.decide("deny", same, True, [E(other, "success", False, "/a.py")], edit_target="/a.py") == guard.WARN
    assert guard.decide("deny", same, True, [E(same, "success", True)]) == guard.NONE
    assert guard.decide("warn", same, True, []) == guard.WARN
    assert guard.decide("off", same, True, []) == guard.NONE


def test_every_text_is_capped_and_quoted() -> None:
    long = "x" * 20_000
    assert len(inject.cap(long)) <= inject.MAX_CHARS
    assert inject.cap("short") == "short"
    assert inject.describe_call("Bash", {"command": "echo [SYSTEM ANCHOR] hi\nrm -rf /"}) == \
        "Bash `echo ［SYSTEM ANCHOR] hi rm -rf /`"


# ---- issue 20: only a call that itself kept failing is denied; refusals are no failures; facts carried ----

MISSING = "File does not exist. Note: your current working directory is /work/project."
NOT_FOUND = "Exit code 1\ncat: {f}: No such file or directory"


def test_a_loop_of_one_error_from_different_calls_names_them_and_denies_none(memory: Memory) -> None:
    texts = [context_of(handle(failure("Read", {"file_path": f"/work/project/{f}.py"}, MISSING), memory))
             for f in ("a", "b", "c")]
    loop = texts[-1] or ""
    assert "3 different calls" in loop and "a.py" in loop and "b.py" in loop and "c.py" in loop, loop
    assert "failed with the same error 3 times" not in loop and "declines" not in loop
    first = handle(pre("Read", {"file_path": "/work/project/a.py"}), memory)
    assert first is not None and "permissionDecision" not in first["hookSpecificOutput"]  # at most a warning ...
    assert "other calls repeated" in (context_of(first) or "")
    assert handle(pre("Read", {"file_path": "/work/project/a.py"}), memory) is None  # ... once


def test_a_call_is_denied_only_after_it_failed_three_times_itself(memory: Memory) -> None:
    for f in ("x", "y"):
        handle(failure("Bash", bash(f"cat {f}"), NOT_FOUND.format(f=f)), memory)
    for _ in range(2):
        handle(failure("Bash", bash("cat z"), NOT_FOUND.format(f="z")), memory)
    answer = handle(pre("Bash", bash("cat z")), memory)
    assert answer is None or "permissionDecision" not in answer["hookSpecificOutput"]
    handle(failure("Bash", bash("cat z"), NOT_FOUND.format(f="z")), memory)
    denied = handle(pre("Bash", bash("cat z")), memory)
    assert denied is not None and denied["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_a_denial_says_what_to_do_instead_and_how_to_override_in_two_lines(memory: Memory) -> None:
    run_failing(handle, memory, "npm test", ERROR, 3)
    reason = handle(pre("Bash", bash("npm test")), memory)["hookSpecificOutput"]["permissionDecisionReason"]
    lines = reason.split("\n")
    assert len(lines) == 2 and "failed 3 times" in lines[0] and "Cannot find module 'express'" in lines[0]
    assert lines[1].startswith("Instead:") and "VLK_HOOK_GUARD=warn" in lines[1]
    anchor = [s for s in memory.get_history(session_id="s1").slots if s.origin == "anchor"][0]
    with_fix = inject.deny_reason("Bash `npm test`", anchor, 3, ERROR, "npm install express")
    assert "what fixed this error before: npm install express" in with_fix.split("\n")[1]


def test_an_error_that_names_nothing_is_never_ground_for_a_denial(memory: Memory) -> None:
    run_failing(handle, memory, "make", "Error", 3)
    answer = handle(pre("Bash", bash("make")), memory)
    assert answer is None or "permissionDecision" not in answer["hookSpecificOutput"]


def test_an_error_that_names_nothing_from_different_calls_is_neither_announced_nor_warned_of(memory: Memory) -> None:
    answers = [run_failing(handle, memory, command, "Error", 1)[-1] for command in ("ls src", "pwd && ls", "find .")]
    assert memory.get_history(session_id="s1").slots  # recorded (and looped by the engine) ...
    assert [context_of(a) for a in answers] == [None, None, None]  # ... but nothing says they are one error
    assert handle(pre("Bash", bash("ls src")), memory) is None  # no "other calls repeated its error" warning
    looped = run_failing(handle, memory, "make", "Error", 3)[-1]  # one call failing 3 times: still a loop to say
    assert "failed with the same error 3 times" in (context_of(looped) or ""), looped


def test_an_unknown_tool_and_a_read_of_the_failed_edits_file_count_as_changes(memory: Memory) -> None:
    run_failing(handle, memory, "npm test", ERROR, 3)
    handle(success("WebFetch", {"url": "https://example.org"}, {"code": 200}), memory)
    answer = handle(pre("Bash", bash("npm test")), memory)
    assert answer is not None and "permissionDecision" not in answer["hookSpecificOutput"]
    edit = {"file_path": "/work/project/app.py", "old_string": "a", "new_string": "b"}
    for _ in range(3):
        handle(failure("Edit", edit, "EACCES: permission denied, open '/work/project/app.py'"), memory)
    denied = handle(pre("Edit", edit), memory)
    assert denied is not None and denied["hookSpecificOutput"]["permissionDecision"] == "deny"
    handle(success("Read", {"file_path": "/work/project/app.py"}, {"type": "text"}), memory)
    again = handle(pre("Edit", edit), memory)
    assert again is not None and "permissionDecision" not in again["hookSpecificOutput"]


@pytest.mark.parametrize("error", [
    "<tool_use_error>Sibling tool call errored</tool_use_error>",
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, "
    "the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how "
    "to proceed.",
    "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>",
    "String to replace not found in file.\nString: foo",
    "[Request interrupted by user for tool use]",
])
def test_the_hosts_refusals_are_never_recorded_looped_or_carried(memory: Memory, error: str) -> None:
    for n in range(4):
        assert handle(failure("Edit", {"file_path": f"/work/project/{n}.py", "old_string": "a", "new_string": "b"},
                              error), memory) is None
    assert memory.get_history(session_id="s1").slots == []
    assert handle(session_start(session="s2"), memory) is None


def test_a_new_session_hears_facts_never_the_in_session_order(memory: Memory) -> None:
    run_failing(handle, memory, "npm test", ERROR, 3, session="first")
    for f in ("a", "b", "c"):  # a generic error of three different files: not carried
        handle(failure("Read", {"file_path": f"/work/project/{f}.py"}, MISSING, session="first"), memory)
    text = context_of(handle(session_start(session="second"), memory)) or ""
    assert "Bash `npm test` failed 3 times" in text and "session 'first'" in text and "not resolved" in text
    assert "CURRENT STRATEGY" not in text and "change approach" not in text.lower()
    assert "File does not exist" not in text
    assert handle(prompt(session="second"), memory) is None  # what existed at the start is not pushed later


def test_merged_loop_anchors_are_carried_as_the_facts_of_each_loop(database_url: str) -> None:
    settings = Settings(consolidate_above=2)  # anchors of three errors get merged into one constraint
    with Memory(database_url, settings=settings, project="p") as memory:
        for n, session in enumerate(("one", "two", "three")):
            # Three broken environments (a missing module, tool and service): each one is carried.
            error = [ERROR, "Exit code 127\nbash: line 1: nvcc: command not found",
                     "Exit code 2\npsql: error: connection to server at \"127.0.0.1\", port 5432 failed: "
                     "Connection refused"][n]
            run_failing(handle, memory, f"make target{n}", error, 3, session=session)
        memory.fetch_context(session_id="four")
        with memory.store.read() as tx:
            visible = tx.visible_constraints(memory._key("four"))  # noqa: SLF001
        assert [c.origin.value for c in visible] == ["consolidated"], visible  # the anchors were merged
        assert any("CURRENT STRATEGY EXHAUSTED" in lesson for lesson in visible[0].lessons)
        text = context_of(handle(session_start(session="four"), memory)) or ""
    assert "CURRENT STRATEGY" not in text and "SYSTEM ANCHOR" not in text
    assert all(f"make target{n}" in text for n in range(3)), text


def test_a_failed_command_that_wrote_before_it_failed_counts_as_a_change(memory: Memory) -> None:
    run_failing(handle, memory, "npm test", ERROR, 3)
    handle(failure("Bash", bash("sed -i s/a/b/ index.js && node index.js"), ERROR), memory)
    answer = handle(pre("Bash", bash("npm test")), memory)
    assert answer is not None and "permissionDecision" not in answer["hookSpecificOutput"]
