"""The OpenCode adapter in process (`opencode.handle(event, memory)`, both stores), its installer, and the
plugin hooks it relies on, checked against the published types of the pinned @opencode-ai/plugin.

The events are the ones the plugin (hosts/opencode/plugin.js) sends; their tool fields are what
OpenCode 1.18.33 hands a plugin (recorded in tests/hosts/opencode/test_opencode_cli.py's runs): bash args
`{command, description}`, `metadata.exit` and `metadata.output` after a bash call.
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
from vlk_memact.hosts.opencode import adapter as opencode, install as opencode_install

SESSION = "ses_vlk_unit"
CWD = "/tmp/vlk-opencode-unit"
CMD = "ls /nonexistent-vlk-unit"
PLUGIN_TYPES = Path(__file__).resolve().parents[2] / "opencode" / "node_modules" / "@opencode-ai" / "plugin" / "dist" / "index.d.ts"
_ids = iter(range(10**6))


def before(command: str = CMD, tool: str = "bash", **args: Any) -> dict[str, Any]:
    return {"hook_event_name": "tool.execute.before", "session_id": SESSION, "cwd": CWD, "tool": tool,
            "call_id": f"call_{next(_ids)}", "args": {"command": command, "description": "run it", **args}
            if tool == "bash" else args}


def after(command: str = CMD, exit: int | None = 2, tool: str = "bash", **args: Any) -> dict[str, Any]:
    event = before(command, tool, **args)
    event["hook_event_name"] = "tool.execute.after"
    event["metadata"] = {"exit": exit if tool == "bash" else None}
    if exit:
        event["metadata"]["output"] = f"ls: cannot access '{command.split()[-1]}': No such file or directory\n"
    return event


def session(name: str, session_id: str = SESSION) -> dict[str, Any]:
    return {"hook_event_name": name, "session_id": session_id, "cwd": CWD}


def test_a_bash_failure_is_recorded_with_its_exit_code_and_says_nothing(memory: Memory):
    assert opencode.handle(after(), memory) is None
    [slot] = memory.get_history(session_id=SESSION).slots
    assert slot.raw_log.startswith("Exit code 2\nls: cannot access")
    payload = json.loads(slot.tool_payload)
    assert payload["tool"] == "bash" and payload["input"]["command"] == CMD


def test_the_third_failure_announces_the_loop_and_the_fourth_repeat_is_denied(memory: Memory):
    answers = [opencode.handle(after(), memory) for _ in range(3)]
    assert answers[0] is None
    assert "now live 2 times" in answers[1]["append"]
    assert "same error 3 times" in answers[2]["append"]
    denied = opencode.handle(before(), memory)
    assert denied["deny"].startswith("vlk-memact: not run.")
    # The description is not part of the call: a new one is the same call.
    assert "deny" in opencode.handle(before(description="again"), memory)


def test_after_an_edit_the_repeat_runs_and_its_result_carries_the_warning(memory: Memory):
    for _ in range(3):
        opencode.handle(after(), memory)
    assert opencode.handle(after(tool="write", filePath=f"{CWD}/fix.txt", content="x"), memory) is None
    assert opencode.handle(before(), memory) is None
    said = opencode.handle(after(), memory)["append"]
    assert "something has changed since it last failed" in said


def test_a_success_retires_the_live_failures_and_an_unknown_exit_is_neither(memory: Memory):
    opencode.handle(after(), memory)
    assert opencode.handle(after(exit=None), memory) is None  # killed: not a failure, not a success
    assert [s.temporal_state for s in memory.get_history(session_id=SESSION).slots] == ["PRESENT"]
    assert opencode.handle(after(exit=0), memory) is None
    [slot] = memory.get_history(session_id=SESSION).slots
    assert slot.temporal_state == "PAST" and slot.retired_reason == "resolved"


def test_edits_name_their_file_and_our_own_tools_are_left_alone(memory: Memory):
    call = opencode.tool_call(after(tool="edit", filePath="/p/a.py", oldString="x", newString="y"))
    assert call.tool_input["file_path"] == "/p/a.py" and call.changes_state
    assert opencode.handle(before(tool="vlk-memact_vlk_fetch_context"), memory) is None
    assert opencode.handle(after(tool="vlk-memact_vlk_record_state", raw_log="x"), memory) is None
    assert memory.get_history(session_id=SESSION).slots == []


def test_a_session_starts_with_the_projects_lesson_and_a_message_adds_only_news(memory: Memory):
    for _ in range(3):
        opencode.handle(after(), memory)
    # One session's loop, no broken environment: nothing at the start, one line at its failure (issue 34).
    assert "system" not in (opencode.handle(session("session.start", "ses_between"), memory) or {})
    assert opencode.handle(after() | {"session_id": "ses_between"}, memory) is not None
    start = opencode.handle(session("session.start", "ses_next"), memory)
    assert start["system"].startswith("vlk-memact: what") and "earlier sessions of this project" in start["system"]
    assert "nonexistent-vlk-unit" in start["system"]
    assert opencode.handle(session("chat.message", "ses_next"), memory) is None  # nothing new since


def test_a_continued_session_and_a_compaction_carry_the_sessions_own_errors(memory: Memory):
    opencode.handle(after(), memory)
    resumed = opencode.handle(session("session.start"), memory)
    assert "this session's memory so far" in resumed["system"] and "nonexistent-vlk-unit" in resumed["system"]
    compacted = opencode.handle(session("session.compacting"), memory)
    assert "carried over the compaction" in compacted["context"]


def test_unknown_events_print_nothing_and_malformed_ones_are_invalid(memory: Memory):
    assert opencode.handle(session("session.idle"), memory) is None
    with pytest.raises(InvalidInput):
        opencode.handle([], memory)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        opencode.handle({**after(), "session_id": 7}, memory)


def test_warn_mode_never_denies(database_url: str):
    with Memory(settings=replace(Settings(database_url=database_url), hook_guard="warn"), project="p") as memory:
        for _ in range(3):
            opencode.handle(after(), memory)
        assert opencode.handle(before(), memory) is None


def test_the_guard_and_a_non_failing_result_are_answered_from_the_store_alone():
    assert opencode.store_only(before())
    assert opencode.store_only(after(exit=0)) and opencode.store_only(after(exit=None))
    assert opencode.store_only(after(tool="read", filePath="/x"))
    assert not opencode.store_only(after()) and not opencode.store_only(session("session.start"))


def test_the_hook_process_never_breaks_the_host(tmp_path: Path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DATABASE_URL": "bogus://x", "VLK_HOOK_SERVER": "0"}
    vlk = str(Path(sys.executable).with_name("vlk-memact"))
    for stdin in (b"not json", json.dumps(after()).encode()):
        done = subprocess.run([vlk, "hook", "opencode"], input=stdin, env=env, capture_output=True, timeout=60)
        assert done.returncode == 0 and done.stdout == b""
        assert b"vlk-memact hook opencode" in done.stderr


def test_the_hook_process_answers_with_the_plugins_json(tmp_path: Path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path}/m.db",
           "VLK_HOOK_SERVER": "0"}
    vlk = str(Path(sys.executable).with_name("vlk-memact"))
    outs = [subprocess.run([vlk, "hook", "opencode"], input=json.dumps(after()).encode(), env=env,
                           capture_output=True, timeout=60).stdout for _ in range(3)]
    assert outs[0] == b"" and "same error 3 times" in json.loads(outs[2])["append"]


# ---- the installer ---------------------------------------------------------------------------------


def test_install_writes_one_plugin_idempotently_and_uninstall_removes_only_it(tmp_path: Path):
    project = tmp_path / "p"
    (project / ".git").mkdir(parents=True)
    (project / "sub").mkdir()
    theirs = project / ".opencode" / "plugins" / "theirs.js"
    theirs.parent.mkdir(parents=True)
    theirs.write_text("export const T = async () => ({});\n", encoding="utf-8")
    done = opencode_install.install("project", cwd=project / "sub", command=["/bin/vlk"])
    assert done.changed and done.path == project / ".opencode" / "plugins" / "vlk-memact.js"
    text = done.path.read_text(encoding="utf-8")
    assert text.startswith(opencode_install.MARKER) and 'const COMMAND = ["/bin/vlk"];' in text
    assert not opencode_install.install("project", cwd=project, command=["/bin/vlk"]).changed
    assert opencode_install.install("project", cwd=project, command=["/other/vlk"]).changed  # brought up to date
    assert opencode_install.command_of(done.path) == ["/other/vlk"]
    gone = opencode_install.uninstall("project", cwd=project)
    assert gone.changed and not done.path.exists() and theirs.exists()
    assert not opencode_install.uninstall("project", cwd=project).changed


def test_install_refuses_a_file_of_that_name_that_is_not_ours_and_uninstall_keeps_it(tmp_path: Path):
    target = opencode_install.plugin_dir("user", home=tmp_path) / "vlk-memact.js"
    target.parent.mkdir(parents=True)
    target.write_text("// mine\n", encoding="utf-8")
    with pytest.raises(InvalidInput):
        opencode_install.install("user", home=tmp_path)
    assert not opencode_install.uninstall("user", home=tmp_path).changed and target.exists()
    with pytest.raises(InvalidInput):
        opencode_install.plugin_dir("local")


def test_doctor_checks_report_a_missing_command_and_a_current_plugin(tmp_path: Path):
    project = tmp_path / "p"
    (project / ".git").mkdir(parents=True)
    assert opencode_install.checks(project, tmp_path)[0].ok
    opencode_install.install("project", cwd=project, command=[sys.executable, "-m", "vlk_memact"])
    [check] = opencode_install.checks(project, tmp_path)
    assert check.ok, check
    opencode_install.install("user", home=tmp_path, command=[str(tmp_path / "gone" / "vlk-memact")])
    checks = opencode_install.checks(project, tmp_path)
    assert [c.ok for c in checks] == [True, False, True]
    assert "does not exist" in checks[1].detail


def test_the_plugin_hooks_it_uses_are_in_the_pinned_plugin_types():
    if not PLUGIN_TYPES.exists():
        pytest.skip("npm ci --prefix tests/opencode") if not __import__("os").environ.get("CI") else pytest.fail(
            f"{PLUGIN_TYPES} missing: npm ci --prefix tests/opencode")
    types = PLUGIN_TYPES.read_text(encoding="utf-8")
    plugin = (Path(opencode.__file__).parent / "plugin.js").read_text(encoding="utf-8")
    for hook in ("chat.message", "tool.execute.before", "tool.execute.after", "experimental.chat.system.transform",
                 "experimental.session.compacting"):
        assert f'"{hook}"' in plugin and f'"{hook}"?: (input:' in types, hook
    assert "callID: string;" in types and "metadata: any;" in types
    assert "system: string[];" in types and "context: string[];" in types


def tool_error(error: str = "File not found: /p/missing.txt", tool: str = "read", **args: Any) -> dict[str, Any]:
    return {"hook_event_name": "tool.error", "session_id": SESSION, "cwd": CWD, "tool": tool,
            "call_id": f"call_{next(_ids)}", "args": args or {"filePath": "/p/missing.txt"}, "error": error}


def test_a_tool_call_that_threw_is_captured_and_its_notes_go_to_the_next_request(memory: Memory):
    assert opencode.handle(tool_error(), memory) is None
    [slot] = memory.get_history(session_id=SESSION).slots
    assert slot.raw_log == "File not found: /p/missing.txt" and slot.file_context == "/p/missing.txt"
    assert "now live 2 times" in opencode.handle(tool_error(), memory)["system"]
    assert "same error 3 times" in opencode.handle(tool_error(), memory)["system"]
    read = {**before(tool="read"), "args": {"filePath": "/p/missing.txt"}}
    assert opencode.handle(read, memory)["deny"].startswith("vlk-memact: not run.")


def test_our_own_deny_an_abort_and_a_refused_permission_are_not_failures(memory: Memory):
    for error in ("vlk-memact: not run. bash `x` already failed 3 times", "Tool execution aborted",
                  "The user rejected permission to use this specific tool call."):
        assert opencode.handle(tool_error(error), memory) is None
    assert memory.get_history(session_id=SESSION).slots == []
    assert not opencode.store_only(tool_error())


def test_session_start_says_whether_the_session_has_a_failure_for_the_plugin_to_arm(memory: Memory):
    assert opencode.handle(session("session.start", "ses_clean"), memory) == {"armed": False}
    opencode.handle(after(exit=0), memory)  # a success alone records nothing
    assert opencode.handle(session("session.start"), memory)["armed"] is False
    opencode.handle(after(), memory)
    assert opencode.handle(session("session.start"), memory)["armed"] is True


def test_the_plugin_skips_the_guard_and_successes_until_a_failure_and_asks_when_unsure():
    plugin = (Path(opencode.__file__).parent / "plugin.js").read_text(encoding="utf-8")
    assert "if (!armed.has(input.sessionID)) return;" in plugin  # before and after, unarmed: not handed over
    assert 'answer.armed !== false) armed.add(sessionID); // no answer: do not skip anything' in plugin
