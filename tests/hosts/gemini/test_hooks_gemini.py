"""The Gemini CLI adapter in process: recorded payloads through `gemini.handle(event, memory)`, on both stores.

The same behaviour as Claude Code's adapter (capture, interception, guard, resolution, carry-over),
through Gemini CLI's envelopes: AfterTool context, BeforeTool deny, BeforeAgent and SessionStart context.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from vlk_memact import Memory, Settings
from vlk_memact.core.errors import InvalidInput
from vlk_memact.hosts.gemini import adapter as gemini

FIXTURES = Path(__file__).resolve().parents[2] / "data" / "gemini-hooks"
_clock = iter(range(10**6))


def event(name: str, **changes: Any) -> dict[str, Any]:
    """A recorded payload, with a fresh timestamp (each call is a new tool call) unless one is given."""
    payload = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    payload["timestamp"] = f"2026-12-01T22:00:{next(_clock):06d}Z"
    payload.update(changes)
    return payload


def fail(**changes: Any) -> dict[str, Any]:
    return event("AfterTool-run_shell_command-failure", **changes)


def before(**changes: Any) -> dict[str, Any]:
    return event("BeforeTool-run_shell_command-failure", **changes)


def context_of(answer: dict[str, Any] | None) -> str | None:
    return None if answer is None else answer["hookSpecificOutput"]["additionalContext"]


def three_failures(memory: Memory, **changes: Any) -> list[dict[str, Any] | None]:
    return [gemini.handle(fail(**changes), memory) for _ in range(3)]


def test_an_ordinary_failure_is_recorded_and_says_nothing(memory: Memory):
    assert gemini.handle(fail(), memory) is None
    [slot] = memory.get_history(session_id=fail()["session_id"]).slots
    assert slot.temporal_state == "PRESENT"
    assert slot.raw_log.startswith("Exit code 2\nls: cannot access")
    payload = json.loads(slot.tool_payload)
    assert payload["tool"] == "run_shell_command" and payload["input"]["command"] == "ls /nonexistent-vlk-fixture"
    assert payload["tool_use_id"].startswith("gemini-")


def test_the_third_identical_failure_announces_the_loop(memory: Memory):
    first, second, third = three_failures(memory)
    assert first is None
    assert context_of(second).startswith("vlk-memact:")  # the same error live again
    text = context_of(third)
    assert text.startswith("vlk-memact:") and "3 times" in text and "loop anchor [id:" in text
    assert third == {"hookSpecificOutput": {"hookEventName": "AfterTool", "additionalContext": text}}


def test_a_hook_run_twice_on_one_payload_records_once(memory: Memory):
    payload = fail()
    assert gemini.handle(payload, memory) is None
    assert gemini.handle(dict(payload), memory) is None
    assert len(memory.get_history(session_id=payload["session_id"]).slots) == 1


def test_an_unchanged_repeat_of_a_looping_call_is_denied(memory: Memory):
    three_failures(memory)
    answer = gemini.handle(before(), memory)
    assert answer is not None and answer["decision"] == "deny"
    assert answer["reason"].startswith("vlk-memact: not run.")
    # The description is not part of the call: the same command described differently is still the same.
    again = before(tool_input={"command": "ls  /nonexistent-vlk-fixture", "description": "other words"})
    assert gemini.handle(again, memory)["decision"] == "deny"  # type: ignore[index]
    # Another command is not guarded.
    assert gemini.handle(before(tool_input={"command": "ls /tmp"}), memory) is None


def test_after_an_edit_the_repeat_runs_and_its_result_carries_the_warning(memory: Memory):
    three_failures(memory)
    assert gemini.handle(event("AfterTool-write_file"), memory) is None
    assert gemini.handle(before(), memory) is None  # allowed: BeforeTool cannot carry context
    text = context_of(gemini.handle(fail(), memory))
    assert text is not None and text.startswith("vlk-memact:")
    assert "something has changed since it last failed" in text  # the warning BeforeTool could not carry


def test_a_successful_read_of_another_file_is_no_change_and_the_repeat_stays_denied(memory: Memory):
    three_failures(memory)
    session = fail()["session_id"]
    read = event("AfterTool-read_file", session_id=session, tool_input={"file_path": "/tmp/README.md"},
                 tool_response={"llmContent": "# readme", "returnDisplay": ""})
    assert gemini.handle(read, memory) is None
    answer = gemini.handle(before(), memory)
    assert answer is not None and answer["decision"] == "deny"


def test_warn_mode_never_denies(database_url: str):
    with Memory(database_url, settings=replace(Settings(), hook_guard="warn"), project="p") as memory:
        three_failures(memory)
        assert gemini.handle(before(), memory) is None
        assert context_of(gemini.handle(fail(), memory)) is not None


def test_off_mode_does_not_guard(database_url: str):
    with Memory(database_url, settings=replace(Settings(), hook_guard="off"), project="p") as memory:
        three_failures(memory)
        assert gemini.handle(before(), memory) is None


def test_a_success_of_the_same_call_retires_its_live_failures(memory: Memory):
    sid = fail()["session_id"]
    gemini.handle(fail(), memory)
    gemini.handle(fail(), memory)
    success = event("AfterTool-run_shell_command-success", tool_input=fail()["tool_input"])
    assert gemini.handle(success, memory) is None
    slots = memory.get_history(session_id=sid).slots
    assert [(s.temporal_state, s.retired_reason) for s in slots] == [("PAST", "resolved")] * 2
    assert "nonexistent-vlk-fixture" not in memory.fetch_context(session_id=sid).text


def test_a_success_ends_the_guard_for_that_call(memory: Memory):
    three_failures(memory)
    gemini.handle(event("AfterTool-run_shell_command-success", tool_input=fail()["tool_input"]), memory)
    assert gemini.handle(before(), memory) is None


def test_tool_errors_of_edits_and_reads_are_captured_on_their_file(memory: Memory):
    gemini.handle(event("AfterTool-replace"), memory)
    gemini.handle(event("AfterTool-read_file"), memory)
    slots = memory.get_history(session_id=fail()["session_id"]).slots
    assert sorted(Path(s.file_context or "").name for s in slots) == ["missing.txt", "notes.txt"]


def test_a_cancelled_command_and_our_own_tools_are_not_recorded(memory: Memory):
    cancelled = fail(tool_response={"llmContent": "Command was cancelled by user before it could complete. There "
                                                  "was no output before it was cancelled.", "returnDisplay": ""})
    assert gemini.handle(cancelled, memory) is None
    own = event("AfterTool-mcp_vlk-memact_vlk_summarize_session",
                tool_response={"llmContent": "bad input", "error": {"message": "bad input", "type": "mcp_tool_error"}})
    assert gemini.handle(own, memory) is None
    assert memory.get_history(session_id=fail()["session_id"]).slots == []


def test_our_own_tools_get_the_hosts_session_when_the_model_gives_none(memory: Memory):
    payload = event("BeforeTool-mcp_vlk-memact_vlk_summarize_session")
    assert gemini.handle(payload, memory) == {
        "hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": {"session_id": payload["session_id"]}}}
    given = event("BeforeTool-mcp_vlk-memact_vlk_summarize_session", tool_input={"session_id": "mine"})
    assert gemini.handle(given, memory) is None


def test_a_new_session_starts_with_the_projects_lesson_and_a_prompt_adds_only_news(memory: Memory):
    three_failures(memory)
    # A loop of one session that is no broken environment waits for its failure (issue 34); met again in a second
    # session and still unresolved, it is carried.
    assert gemini.handle(event("SessionStart-startup", session_id="between"), memory) is None
    assert "failed the same way in session" in (context_of(gemini.handle(fail(session_id="between"), memory)) or "")
    start = gemini.handle(event("SessionStart-startup", session_id="next"), memory)
    text = context_of(start)
    assert text is not None and text.startswith("vlk-memact:") and "nonexistent-vlk-fixture" in text
    assert start["hookSpecificOutput"]["hookEventName"] == "SessionStart"  # type: ignore[index]
    # Nothing new since: the prompt says nothing (never the same text twice).
    assert gemini.handle(event("BeforeAgent", session_id="next"), memory) is None
    # A lesson the model stored through the MCP tools: the next prompt says so, once.
    gemini.handle(fail(session_id="next", tool_input={"command": "make build"}), memory)
    [slot] = [s for s in memory.get_history(session_id="next").slots if "make build" in (s.tool_payload or "")]
    memory.time_travel(target_timeline_ids=[slot.id], learning="make needs the generated headers first",
                       raw_log_excerpt="No such file or directory", session_id="next")
    news = context_of(gemini.handle(event("BeforeAgent", session_id="next"), memory))
    assert news is not None and news.startswith("vlk-memact:") and "generated headers" in news
    assert gemini.handle(event("BeforeAgent", session_id="next"), memory) is None


def test_a_resumed_session_gets_its_own_live_errors_back(memory: Memory):
    gemini.handle(fail(), memory)
    text = context_of(gemini.handle(event("SessionStart-resume"), memory))
    assert text is not None and "nonexistent-vlk-fixture" in text


def test_the_models_own_record_of_a_captured_error_is_the_same_evidence(memory: Memory):
    payload = fail()
    gemini.handle(payload, memory)
    [slot] = memory.get_history(session_id=payload["session_id"]).slots
    again = memory.record_state(raw_log=slot.raw_log, session_id=payload["session_id"])
    assert again.already_recorded_by == "hook" and again.timeline_id == slot.id
    assert len(memory.get_history(session_id=payload["session_id"]).slots) == 1


def test_events_the_adapter_does_not_use_print_nothing(memory: Memory):
    for name in ("PreCompress", "SessionEnd", "AfterAgent"):
        assert gemini.handle(event(name), memory) is None


def test_a_malformed_payload_is_an_invalid_input(memory: Memory):
    with pytest.raises(InvalidInput, match="Gemini CLI hook event"):
        gemini.handle({"hook_event_name": "AfterTool", "session_id": "s"}, memory)


def test_the_hook_process_never_breaks_the_host(tmp_path: Path):
    """`vlk-memact hook gemini`: exit 0 and empty stdout on a broken URL and on garbage; JSON on a real event."""
    command = [str(Path(sys.executable).with_name("vlk-memact")), "hook", "gemini"]
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "DATABASE_URL": f"sqlite:///{tmp_path}/v.db"}
    ok = subprocess.run(command, input=json.dumps(before()), env=env, capture_output=True, text=True, timeout=60)
    assert (ok.returncode, ok.stdout) == (0, "")
    for stdin, url in (("not json", env["DATABASE_URL"]), (json.dumps(fail()), "bogus://x")):
        bad = subprocess.run(command, input=stdin, env={**env, "DATABASE_URL": url}, capture_output=True, text=True,
                             timeout=60)
        assert (bad.returncode, bad.stdout) == (0, "")
        assert "vlk-memact hook gemini" in bad.stderr
    log = (tmp_path / ".local" / "share" / "vlk-memact" / "hooks.log").read_text(encoding="utf-8")
    assert "DATABASE_URL" in log and log.count("\n") == 2
    for _ in range(3):
        out = subprocess.run(command, input=json.dumps(fail()), env=env, capture_output=True, text=True, timeout=60)
    assert json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"].startswith("vlk-memact:")


def test_the_guard_and_a_non_failing_result_are_answered_from_the_store_alone():
    assert gemini.store_only(before())
    assert gemini.store_only(event("AfterTool-run_shell_command-success"))
    assert gemini.store_only(event("AfterTool-write_file"))
    assert not gemini.store_only(fail())
    assert not gemini.store_only(event("AfterTool-replace"))
    assert not gemini.store_only(event("SessionStart-startup"))
    assert not gemini.store_only({"hook_event_name": "AfterTool"})  # the full path says what is wrong


def test_a_success_in_a_store_only_hook_process_retires_the_failures(tmp_path: Path):
    command = [str(Path(sys.executable).with_name("vlk-memact")), "hook", "gemini"]
    url = f"sqlite:///{tmp_path}/v.db"
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "DATABASE_URL": url, "VLK_PROJECT": "p"}
    for payload in (fail(), fail(), event("AfterTool-run_shell_command-success", tool_input=fail()["tool_input"])):
        done = subprocess.run(command, input=json.dumps(payload), env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stderr == "", done.stderr
    with Memory(url, settings=Settings(), project="p") as memory:
        slots = memory.get_history(session_id=fail()["session_id"]).slots
    assert [(s.temporal_state, s.retired_reason) for s in slots] == [("PAST", "resolved")] * 2


def test_a_later_session_is_told_what_fixed_the_error_after_its_aftertool(memory: Memory):
    gemini.handle(fail(session_id="g1"), memory)
    written = event("AfterTool-write_file", session_id="g1")
    gemini.handle(written, memory)
    gemini.handle(event("AfterTool-run_shell_command-success", session_id="g1", tool_input=fail()["tool_input"]),
                  memory)
    text = context_of(gemini.handle(fail(session_id="g2"), memory)) or ""
    path = written["tool_input"]["file_path"]
    assert text.startswith(f"vlk-memact: fixed in an earlier session by: write_file {path}"), text
    assert text.endswith("(then ls /nonexistent-vlk-fixture passed)"), text
