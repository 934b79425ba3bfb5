"""The Codex CLI adapter in process (`codex.handle(event, memory)`, both stores), the outcome read from the
rollout, and the installer (hooks.json merge, trust written into config.toml).

Payloads and rollout records have the shape Codex 0.169.0 produced in tests/hosts/codex/test_codex_cli.py's runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from vlk_memact import Memory
from vlk_memact.core.errors import InvalidInput
from vlk_memact.hosts.codex import adapter as codex, install as codex_install

SESSION = "01a23721-6b8c-7c33-aa66-9f9a143d5c5a"
CMD = "ls /nonexistent-vlk-unit"
_ids = iter(range(10**6))


def rollout_line(call_id: str, exit_code: int, output: str = "") -> str:
    """An item_completed record of a CommandExecution, as Codex writes it to the rollout."""
    return json.dumps({"timestamp": "2026-12-02T14:21:07.427Z", "ordinal": 11, "type": "event_msg", "payload": {
        "type": "item_completed", "thread_id": SESSION, "turn_id": "t1", "item": {
            "type": "CommandExecution", "id": call_id, "command": ["/bin/bash", "-lc", CMD],
            "status": "failed" if exit_code else "completed", "aggregated_output": output,
            "exit_code": exit_code}}})


class Rollout:
    """A session rollout file the tests append records to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.write_text(json.dumps({"type": "session_meta", "payload": {"id": SESSION}}) + "\n", encoding="utf-8")

    def add(self, call_id: str, exit_code: int, output: str = "") -> None:
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(rollout_line(call_id, exit_code, output) + "\n")


@pytest.fixture
def rollout(tmp_path: Path) -> Rollout:
    return Rollout(tmp_path / "rollout.jsonl")


def tool_event(name: str, rollout: Rollout, command: str = CMD, call_id: str | None = None) -> dict[str, Any]:
    return {"session_id": SESSION, "turn_id": "t1", "transcript_path": str(rollout.path), "cwd": "/tmp/p",
            "hook_event_name": name, "model": "m1", "permission_mode": "bypassPermissions", "tool_name": "Bash",
            "tool_input": {"command": command}, "tool_use_id": call_id or f"call_{next(_ids)}"}


def failed(memory: Memory, rollout: Rollout, command: str = CMD, exit_code: int = 2,
           session: str = SESSION) -> dict[str, Any] | None:
    event = tool_event("PostToolUse", rollout, command) | {"session_id": session}
    output = f"ls: cannot access '{command.split()[-1]}': No such file or directory\n"
    event["tool_response"] = output
    rollout.add(event["tool_use_id"], exit_code, output)
    return codex.handle(event, memory)


def context(answer: dict[str, Any] | None) -> str:
    assert answer is not None
    return answer["hookSpecificOutput"]["additionalContext"]


def test_a_failure_is_recorded_with_the_exit_code_from_the_rollout(memory: Memory, rollout: Rollout):
    assert failed(memory, rollout) is None
    [slot] = memory.get_history(session_id=SESSION).slots
    assert slot.raw_log.startswith("Exit code 2\nls: cannot access")


def test_the_third_failure_announces_the_loop_and_the_fourth_repeat_is_denied(memory: Memory, rollout: Rollout):
    answers = [failed(memory, rollout) for _ in range(3)]
    assert answers[0] is None and "now live 2 times" in context(answers[1])
    assert "same error 3 times" in context(answers[2])
    denied = codex.handle(tool_event("PreToolUse", rollout), memory)
    assert denied == {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                             "permissionDecisionReason": denied["hookSpecificOutput"][
                                                 "permissionDecisionReason"]}}
    assert denied["hookSpecificOutput"]["permissionDecisionReason"].startswith("vlk-memact: not run.")


def test_after_a_change_the_repeat_runs_and_its_result_carries_the_warning(memory: Memory, rollout: Rollout):
    for _ in range(3):
        failed(memory, rollout)
    change = tool_event("PostToolUse", rollout, "echo x > fix.txt")
    change["tool_response"] = ""
    rollout.add(change["tool_use_id"], 0)
    assert codex.handle(change, memory) is None
    assert codex.handle(tool_event("PreToolUse", rollout), memory) is None
    assert "something has changed since it last failed" in context(failed(memory, rollout))


def test_a_success_is_never_a_failure_and_an_unknown_outcome_is_neither(memory: Memory, rollout: Rollout):
    failed(memory, rollout)
    unknown = tool_event("PostToolUse", rollout)
    unknown["tool_response"] = "Error: something went wrong\nProcess exited with code 1"
    assert codex.handle(unknown, memory) is None  # no record in the rollout: the output text decides nothing
    assert [s.temporal_state for s in memory.get_history(session_id=SESSION).slots] == ["PRESENT"]
    ok = tool_event("PostToolUse", rollout)
    ok["tool_response"] = "Traceback (most recent call last): printed, but exit 0"
    rollout.add(ok["tool_use_id"], 0, ok["tool_response"])
    assert codex.handle(ok, memory) is None
    [slot] = memory.get_history(session_id=SESSION).slots
    assert slot.temporal_state == "PAST" and slot.retired_reason == "resolved"


def test_the_rollout_record_is_waited_for_briefly(rollout: Rollout):
    timer = threading.Timer(0.1, rollout.add, args=("call_late", 3))
    timer.start()
    started = time.monotonic()
    assert codex.rollout_outcome(str(rollout.path), "call_late").exit_code == 3
    assert time.monotonic() - started < codex.ROLLOUT_WAIT_SECONDS + 0.3
    assert codex.rollout_outcome(str(rollout.path), "call_never", wait_seconds=0.05).exit_code is None
    assert codex.rollout_outcome(str(rollout.path.with_name("gone.jsonl")), "x", wait_seconds=0).exit_code is None
    assert codex.rollout_outcome(None, "x").exit_code is None


def test_the_rollout_outcome_ignores_other_calls_and_cut_lines(rollout: Rollout):
    rollout.add("call_a", 2)
    with open(rollout.path, "a", encoding="utf-8") as out:
        out.write(rollout_line("call_b", 0)[:40] + "\n")  # a record being written
    rollout.add("call_b", 0)
    assert codex.rollout_outcome(str(rollout.path), "call_a").exit_code == 2
    assert codex.rollout_outcome(str(rollout.path), "call_b").exit_code == 0


def test_sessions_start_with_the_projects_lesson_and_a_prompt_adds_only_news(memory: Memory, rollout: Rollout):
    for _ in range(3):
        failed(memory, rollout)
    start = {"session_id": "next", "cwd": "/tmp/p", "hook_event_name": "SessionStart", "source": "startup"}
    # One session's loop, no broken environment: nothing at the start, one line at its failure (issue 34).
    assert codex.handle({**start, "session_id": "between"}, memory) is None
    assert "failed the same way in session" in context(failed(memory, rollout, session="between"))
    text = context(codex.handle(start, memory))
    assert text.startswith("vlk-memact: what") and "earlier sessions of this project" in text and "nonexistent" in text
    prompt = {"session_id": "next", "cwd": "/tmp/p", "hook_event_name": "UserPromptSubmit", "prompt": "go"}
    assert codex.handle(prompt, memory) is None
    compacted = context(codex.handle({**start, "session_id": SESSION, "source": "compact"}, memory))
    assert "carried over the compaction" in compacted


def test_other_tools_succeed_and_our_own_tools_are_left_alone(memory: Memory, rollout: Rollout):
    mcp = {**tool_event("PostToolUse", rollout), "tool_name": "mcp__vlk-memact__vlk_fetch_context", "tool_input": {}}
    assert codex.handle(mcp, memory) is None
    assert codex.handle({**mcp, "hook_event_name": "PreToolUse"}, memory) is None
    assert memory.get_history(session_id=SESSION).slots == []


def test_unknown_events_print_nothing_and_malformed_ones_are_invalid(memory: Memory, rollout: Rollout):
    assert codex.handle({"session_id": SESSION, "hook_event_name": "Stop"}, memory) is None
    with pytest.raises(InvalidInput):
        codex.handle([], memory)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        codex.handle({"hook_event_name": "SessionStart", "session_id": ""}, memory)


def test_only_the_guard_is_answered_from_the_store_alone(rollout: Rollout):
    assert codex.store_only(tool_event("PreToolUse", rollout))
    assert not codex.store_only(tool_event("PostToolUse", rollout))


def test_the_hook_process_never_breaks_the_host(tmp_path: Path, rollout: Rollout):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DATABASE_URL": "bogus://x", "VLK_HOOK_SERVER": "0"}
    vlk = str(Path(sys.executable).with_name("vlk-memact"))
    for stdin in (b"{", json.dumps(tool_event("PreToolUse", rollout)).encode()):
        done = subprocess.run([vlk, "hook", "codex"], input=stdin, env=env, capture_output=True, timeout=60)
        assert done.returncode == 0 and done.stdout == b""
        assert b"vlk-memact hook codex" in done.stderr


# ---- the installer ---------------------------------------------------------------------------------


def test_install_merges_idempotently_and_uninstall_restores_the_file(tmp_path: Path):
    path = tmp_path / ".codex" / "hooks.json"
    path.parent.mkdir(parents=True)
    theirs = {"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/x/t.sh"}]}]}}
    path.write_text(json.dumps(theirs), encoding="utf-8")
    plan = codex_install.install(path, command="/venv/bin/vlk-memact hook codex")
    assert plan.changed and plan.events == list(codex_install.EVENTS) and plan.backup is not None
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["hooks"]["PostToolUse"][0] == theirs["hooks"]["PostToolUse"][0]
    assert data["hooks"]["PreToolUse"] == [{"matcher": "*", "hooks": [
        {"type": "command", "command": "/venv/bin/vlk-memact hook codex", "timeout": 10}]}]
    assert not codex_install.install(path, command="/venv/bin/vlk-memact hook codex").changed
    moved = codex_install.install(path, command="/new/bin/vlk-memact hook codex")  # another environment
    assert moved.changed and "/venv/" not in path.read_text(encoding="utf-8")
    assert codex_install.uninstall(path).changed
    assert json.loads(path.read_text(encoding="utf-8")) == {**theirs, "hooks": {**theirs["hooks"]}}
    assert not codex_install.uninstall(path).changed


def test_a_file_codex_would_reject_is_reported_and_bad_json_is_refused(tmp_path: Path):
    path = tmp_path / "hooks.json"
    path.write_text(json.dumps({"PreToolUse": []}), encoding="utf-8")
    plan = codex_install.install(path, command="/v/vlk-memact hook codex")
    assert any("top-level keys besides 'hooks'" in n for n in plan.notes)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(InvalidInput):
        codex_install.install(path)


def test_our_entries_are_told_apart_from_others():
    assert codex_install.is_ours({"type": "command", "command": "/v/bin/vlk-memact hook codex"})
    assert codex_install.is_ours({"command": "'/my venv/bin/python' -m vlk_memact hook codex"})
    assert not codex_install.is_ours({"command": "/v/bin/vlk-memact hook claude-code"})
    assert not codex_install.is_ours({"command": "/x/other.sh hook codex"})
    assert not codex_install.is_ours({"type": "prompt", "command": "/v/bin/vlk-memact hook codex"})


def test_trust_writes_codexs_hashes_into_config_toml_and_keeps_the_rest(tmp_path: Path):
    config = tmp_path / "config.toml"
    config.write_text('model = "m1"\n\n[hooks.state."/h/hooks.json:stop:0:0"]\ntrusted_hash = "sha256:old"\n'
                      'enabled = true\n\n[other]\nvalue = 1\n', encoding="utf-8")
    hashes = {"/h/hooks.json:pre_tool_use:1:0": "sha256:aa", "/h/hooks.json:stop:0:0": "sha256:bb"}
    assert codex_install.trust(config, hashes)
    data = tomllib.loads(config.read_text(encoding="utf-8"))
    assert data["model"] == "m1" and data["other"] == {"value": 1}
    assert data["hooks"]["state"]["/h/hooks.json:pre_tool_use:1:0"] == {"trusted_hash": "sha256:aa"}
    assert data["hooks"]["state"]["/h/hooks.json:stop:0:0"] == {"trusted_hash": "sha256:bb", "enabled": True}
    assert not codex_install.trust(config, hashes)  # already trusted


def test_doctor_reports_a_missing_command_and_no_codex_to_ask(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("VLK_CODEX_BIN", str(tmp_path / "no-codex"))
    assert codex_install.checks(tmp_path)[0].ok  # nothing installed
    codex_install.install(codex_install.hooks_path(tmp_path), command=f"{tmp_path}/gone/vlk-memact hook codex")
    checks = codex_install.checks(tmp_path, tmp_path)
    assert [c.name for c in checks] == ["codex hook command", "codex hooks trusted"]
    assert not checks[0].ok and "does not exist" in checks[0].detail
    assert not checks[1].ok and "did not list the hooks" in checks[1].detail


def test_uninstall_removes_a_file_it_created_and_the_trust_it_wrote(tmp_path: Path):
    path = tmp_path / ".codex" / "hooks.json"
    config = path.parent / "config.toml"
    codex_install.install(path, command="/v/bin/vlk-memact hook codex")
    keys = codex_install.trust_keys(path, json.loads(path.read_text(encoding="utf-8")))
    assert keys == [f"{path}:{e}:0:0" for e in ("session_start", "user_prompt_submit", "pre_tool_use",
                                                  "post_tool_use")]
    original = 'model = "m1"\n\n[hooks.state."/elsewhere:stop:0:0"]\ntrusted_hash = "sha256:theirs"\n'
    config.write_text(original, encoding="utf-8")
    codex_install.trust(config, {k: "sha256:ours" for k in keys})
    plan = codex_install.uninstall(path)
    assert plan.changed and not path.exists()
    assert tomllib.loads(config.read_text(encoding="utf-8")) == tomllib.loads(original)
