"""The Claude Code CLI harness proves itself: a scripted Bash call runs for real and its output reaches the model.

Needs `npm ci --prefix tests/claude-code` (and tests/conformance for Node 22); CI fails without it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from claude_code_harness import AGENT_SDK_TYPES, PINNED_VERSION, require_claude_code, run_claude
from scripted_anthropic import ScriptedModel, ToolUse

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def test_a_scripted_bash_call_runs_and_its_result_reaches_the_next_request(tmp_path: Path) -> None:
    require_claude_code()
    marker = tmp_path / "ran.txt"
    call = ToolUse("Bash", {"command": f"echo vlk-harness-$((6 * 7)) | tee {marker}", "description": "echo"})
    with ScriptedModel([call, "All done."]) as model:
        run = run_claude("Run the echo.", cwd=tmp_path, model=model, allowed_tools=["Bash"])
    assert run.returncode == 0 and not run.is_error, run.describe()
    assert run.result == "All done."
    model.assert_done()
    assert marker.read_text().strip() == "vlk-harness-42"  # the command really ran
    assert len(model.main_requests) == 2
    result = model.tool_result(call.id)
    assert "vlk-harness-42" in result.text and not result.is_error
    assert model.last_tool_results() == [result]
    first = model.main_requests[0]
    assert "Run the echo." in first.text() and "Bash" in first.tool_names
    assert first.headers["user-agent"].startswith(f"claude-cli/{PINNED_VERSION}")


def test_a_failing_command_comes_back_as_an_error_result(tmp_path: Path) -> None:
    require_claude_code()
    call = ToolUse("Bash", {"command": "echo broken >&2; exit 3", "description": "fail"})
    with ScriptedModel([call, "Saw it."]) as model:
        run = run_claude("Run it.", cwd=tmp_path, model=model, allowed_tools=["Bash"])
    assert run.returncode == 0, run.describe()
    model.assert_done()
    result = model.tool_result(call.id)
    assert result.is_error and "Exit code 3" in result.text and "broken" in result.text


def test_the_agent_sdk_hook_types_are_pinned_beside_the_cli() -> None:
    require_claude_code()
    types = AGENT_SDK_TYPES.read_text()
    assert "PostToolUseFailureHookInput" in types and "additionalContext" in types


def test_a_settings_file_installs_hooks_whose_context_reaches_the_model(tmp_path: Path) -> None:
    require_claude_code()
    reply = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "vlk-harness: hook ran"}}
    hook = tmp_path / "hook.py"
    hook.write_text(f"import json, sys\njson.load(sys.stdin)\nprint(json.dumps({reply!r}))\n")
    command = f"{sys.executable} {hook}"
    settings = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": command, "timeout": 30}]}]}}
    with ScriptedModel(["ok"]) as model:
        run = run_claude("hello", cwd=tmp_path, model=model, settings=settings)
    assert run.returncode == 0, run.describe()
    assert "vlk-harness: hook ran" in model.main_requests[0].text()
