"""Gemini CLI hook payloads: parsed from fixtures recorded from the real CLI, checked against its published types.

The fixtures in tests/data/gemini-hooks/ were written by `python tests/gemini_harness.py record DIR`
(a hook that dumps its stdin, under the pinned CLI and the scripted model). The types are those of
the pinned `@google/gemini-cli-core` (dist/src/hooks/types.d.ts), read as text: no TypeScript needed.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from gemini_harness import CLI_DIR, CORE_TYPES, INSTALL

from vlk_memact.hosts.gemini import events as ge

FIXTURES = Path(__file__).resolve().parents[2] / "data" / "gemini-hooks"


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


# ---- parsing the recorded payloads -------------------------------------------------------------

def test_a_failing_shell_command_is_a_failure_with_its_exit_code_and_output():
    event = ge.parse(fixture("AfterTool-run_shell_command-failure"))
    assert event.name == "AfterTool"
    assert event.call is not None and event.outcome is not None
    assert event.call.name == "run_shell_command"
    assert event.outcome.failed and not event.outcome.interrupted
    assert event.outcome.exit_code == 2
    # Worded as Claude Code words a failed command: the same failure reads the same under both hosts.
    assert event.outcome.text == "Exit code 2\nls: cannot access '/nonexistent-vlk-fixture': No such file or directory"
    # The CLI's wrapper and the per-run process group line are not part of the error.
    assert "untrusted_context" not in event.outcome.text and "PGID" not in event.outcome.text
    assert event.call.file_context == event.cwd  # a command works in the session's directory


def test_a_succeeding_shell_command_is_a_success():
    event = ge.parse(fixture("AfterTool-run_shell_command-success"))
    assert event.outcome is not None
    assert not event.outcome.failed and event.outcome.exit_code == 0
    assert event.outcome.text == "fixed"


@pytest.mark.parametrize(
    ("name", "kind"),
    [("AfterTool-replace", "Could not find an exact match"), ("AfterTool-read_file", "File not found")],
)
def test_a_tool_error_is_a_failure_with_the_error_message_on_the_tools_file(name: str, kind: str):
    payload = fixture(name)
    event = ge.parse(payload)
    assert event.outcome is not None and event.call is not None
    assert event.outcome.failed
    assert event.outcome.text == payload["tool_response"]["error"]["message"]
    assert kind in event.outcome.text
    assert event.call.file_context == payload["tool_input"]["file_path"]


def test_a_written_file_is_a_success_of_an_edit_tool():
    event = ge.parse(fixture("AfterTool-write_file"))
    assert event.outcome is not None and event.call is not None
    assert not event.outcome.failed
    assert event.call.name in ge.EDIT_TOOLS


def test_vlk_memacts_own_mcp_tools_are_recognised_before_and_after():
    for name in ("BeforeTool-mcp_vlk-memact_vlk_summarize_session", "AfterTool-mcp_vlk-memact_vlk_summarize_session"):
        event = ge.parse(fixture(name))
        assert event.call is not None
        assert event.call.own_tool
        assert event.call.mcp_server == "vlk-memact"
    # An MCP result is a list of parts: read as text.
    after = ge.parse(fixture("AfterTool-mcp_vlk-memact_vlk_summarize_session"))
    assert after.outcome is not None and after.outcome.text.startswith("Session 'default'")


def test_another_servers_tool_with_a_similar_name_is_not_ours():
    payload = fixture("BeforeTool-run_shell_command-failure") | {"tool_name": "mcp_other_fetch_context",
                                                                "mcp_context": {"server_name": "other",
                                                                                "tool_name": "fetch_context"}}
    call = ge.parse(payload).call
    assert call is not None and not call.own_tool


def test_session_start_sources_and_the_prompt_are_read():
    assert ge.parse(fixture("SessionStart-startup")).source == "startup"
    resumed = ge.parse(fixture("SessionStart-resume"))
    assert resumed.source == "resume"
    assert resumed.session_id == fixture("SessionStart-startup")["session_id"]  # resume keeps the session
    assert ge.parse(fixture("BeforeAgent")).prompt == "record the fixtures"


def test_events_the_adapter_does_not_use_still_parse():
    for name in ("PreCompress", "SessionEnd", "AfterAgent"):
        event = ge.parse(fixture(name))
        assert event.call is None and event.outcome is None


def test_the_derived_call_id_is_stable_for_one_payload_and_differs_between_calls():
    before = fixture("AfterTool-run_shell_command-failure")
    assert ge.parse(before).call.call_id == ge.parse(json.loads(json.dumps(before))).call.call_id  # type: ignore[union-attr]
    later = before | {"timestamp": "2099-01-01T00:00:00.000Z"}
    assert ge.parse(later).call.call_id != ge.parse(before).call.call_id  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("content", "failed", "interrupted", "exit_code", "text"),
    [
        ("Output: (empty)\nExit Code: 1\nProcess Group PGID: 7", True, False, 1, "Exit code 1"),
        ("Output: a\nb\nExit Code: 127\nBackground PIDs: 9\nProcess Group PGID: 7", True, False, 127,
         "Exit code 127\na\nb"),
        ("Output: x\nSignal: 9\nProcess Group PGID: 7", True, False, None, "x\nSignal: 9"),
        ("Output: (empty)\nError: spawn bash ENOENT", True, False, None, "Error: spawn bash ENOENT"),
        # A command whose own last output line starts with "Error: " and that exited 0 did not fail.
        ("Output: Error: deprecated flag\nProcess Group PGID: 7", False, False, 0, "Error: deprecated flag"),
        ("Command was cancelled by user before it could complete. There was no output before it was cancelled.",
         False, True, None, None),
        ("Command was automatically cancelled because it exceeded the timeout of 5.0 minutes without output.",
         True, False, None, None),
        ("Output: Exit Code: 3 appears inside the output, not on its own line\nProcess Group PGID: 7",
         False, False, 0, "Exit Code: 3 appears inside the output, not on its own line"),
    ],
)
def test_shell_outcomes_follow_the_lines_the_shell_tool_writes(content, failed, interrupted, exit_code, text):
    outcome = ge.parse_outcome("run_shell_command", {"llmContent": f"<untrusted_context>\n{content}\n</untrusted_context>"})
    assert (outcome.failed, outcome.interrupted, outcome.exit_code) == (failed, interrupted, exit_code)
    assert outcome.text == (text if text is not None else content)


@pytest.mark.parametrize(
    "payload",
    [
        [],
        "text",
        {"session_id": "s"},
        {"hook_event_name": "AfterTool", "session_id": ""},
        {"hook_event_name": "AfterTool", "session_id": "s", "tool_name": "x", "tool_input": "no"},
        {"hook_event_name": "AfterTool", "session_id": "s", "tool_name": "x", "tool_input": {}},
    ],
)
def test_malformed_payloads_raise_an_event_error_that_says_what_is_wrong(payload):
    with pytest.raises(ge.EventError):
        ge.parse(payload)


# ---- the envelopes ----------------------------------------------------------------------------

def test_envelopes_have_the_shapes_the_cli_reads():
    assert ge.context_envelope("AfterTool", "vlk-memact: x") == {
        "hookSpecificOutput": {"hookEventName": "AfterTool", "additionalContext": "vlk-memact: x"}}
    assert ge.deny_envelope("vlk-memact: y") == {"decision": "deny", "reason": "vlk-memact: y"}
    assert ge.input_envelope({"session_id": "s"}) == {
        "hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": {"session_id": "s"}}}


# ---- against the types the CLI publishes ------------------------------------------------------

def _types_text() -> str:
    if not CORE_TYPES.exists():
        reason = f"{CORE_TYPES} missing: run `{INSTALL}`"
        if os.environ.get("CI"):
            pytest.fail(reason + " (CI is set, so this fails instead of skipping)")
        pytest.skip(reason)
    return CORE_TYPES.read_text(encoding="utf-8")


def _interface(text: str, name: str) -> tuple[dict[str, bool], str | None]:
    """Top-level fields of `export interface NAME` (field -> required) and the interface it extends."""
    match = re.search(rf"export interface {name}(?: extends (\w+))? \{{(.*?)\n\}}", text, re.DOTALL)
    assert match, f"interface {name} not found in types.d.ts"
    fields: dict[str, bool] = {}
    depth = 0
    for line in match.group(2).splitlines():
        stripped = line.strip()
        if depth == 0:
            field = re.match(r"(\w+)(\??):", stripped)
            if field:
                fields[field.group(1)] = field.group(2) != "?"
        depth += stripped.count("{") - stripped.count("}")
    return fields, match.group(1)


def _all_fields(text: str, name: str) -> dict[str, bool]:
    fields, parent = _interface(text, name)
    while parent:
        more, parent = _interface(text, parent)
        fields = more | fields
    return fields


def _enum(text: str, name: str) -> set[str]:
    match = re.search(rf"export declare enum {name} \{{(.*?)\}}", text, re.DOTALL)
    assert match, f"enum {name} not found"
    return set(re.findall(r'= "([^"]+)"', match.group(1)))


INPUTS = {
    "SessionStart": ("SessionStartInput", "SessionStart-startup"),
    "BeforeAgent": ("BeforeAgentInput", "BeforeAgent"),
    "BeforeTool": ("BeforeToolInput", "BeforeTool-run_shell_command-failure"),
    "AfterTool": ("AfterToolInput", "AfterTool-run_shell_command-failure"),
    "PreCompress": ("PreCompressInput", "PreCompress"),
    "SessionEnd": ("SessionEndInput", "SessionEnd"),
    "AfterAgent": ("AfterAgentInput", "AfterAgent"),
}


@pytest.mark.parametrize("event", sorted(INPUTS))
def test_every_recorded_payload_has_exactly_the_fields_of_its_published_input_type(event: str):
    text = _types_text()
    interface, name = INPUTS[event]
    fields = _all_fields(text, interface)
    payload = fixture(name)
    assert payload["hook_event_name"] == event
    required = {f for f, req in fields.items() if req}
    assert required <= payload.keys(), f"{name} lacks {required - payload.keys()}"
    assert payload.keys() <= fields.keys(), f"{name} has fields the types do not declare: {payload.keys() - fields.keys()}"


def test_the_fields_the_adapter_reads_are_the_published_ones():
    text = _types_text()
    base = _all_fields(text, "HookInput")
    assert {"session_id", "cwd", "hook_event_name", "timestamp"} <= base.keys()
    assert {"tool_name", "tool_input", "tool_response", "mcp_context"} <= _all_fields(text, "AfterToolInput").keys()
    assert {"server_name", "tool_name"} <= _interface(text, "McpToolContext")[0].keys()
    assert "prompt" in _all_fields(text, "BeforeAgentInput")
    assert _enum(text, "SessionStartSource") == ge.SESSION_SOURCES
    assert {"SessionStart", "BeforeAgent", "BeforeTool", "AfterTool"} <= _enum(text, "HookEventName")


def test_the_envelopes_use_the_published_output_fields():
    text = _types_text()
    output = _interface(text, "HookOutput")[0]
    assert {"decision", "reason", "hookSpecificOutput"} <= output.keys()
    decisions = re.search(r"export type HookDecision = (.*?);", text, re.DOTALL)
    assert decisions and "'deny'" in decisions.group(1)
    for interface, key in (("AfterToolOutput", "additionalContext"), ("SessionStartOutput", "additionalContext"),
                           ("BeforeAgentOutput", "additionalContext"), ("BeforeToolOutput", "tool_input")):
        block = re.search(rf"export interface {interface} extends HookOutput \{{(.*?)\n\}}", text, re.DOTALL)
        assert block and f"{key}?:" in block.group(1) and "hookEventName:" in block.group(1), interface


def test_the_edit_and_shell_tool_names_are_the_clis():
    core = CORE_TYPES.parents[1] / "tools" / "definitions" / "base-declarations.js"
    if not core.exists():
        _types_text()
    source = core.read_text(encoding="utf-8")
    names = dict(re.findall(r"export const (\w+_TOOL_NAME) = '([^']+)';", source))
    assert {names["EDIT_TOOL_NAME"], names["WRITE_FILE_TOOL_NAME"]} == ge.EDIT_TOOLS
    assert names["SHELL_TOOL_NAME"] == ge.SHELL_TOOL
    tool_names = (CORE_TYPES.parents[1] / "tools" / "tool-names.js").read_text(encoding="utf-8")
    assert "EDIT_TOOL_NAMES = new Set([EDIT_TOOL_NAME, WRITE_FILE_TOOL_NAME])" in tool_names


def test_the_pinned_cli_version_is_the_one_the_fixtures_were_recorded_with():
    package = json.loads((CLI_DIR / "package.json").read_text(encoding="utf-8"))
    assert package["dependencies"]["@google/gemini-cli"] == "0.61.0"
    assert package["dependencies"]["@google/gemini-cli-core"] == "0.61.0"
