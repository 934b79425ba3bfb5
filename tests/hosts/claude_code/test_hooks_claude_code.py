"""Claude Code's hook events and envelopes: every event recorded from the real CLI (tests/data/claude-code-hooks,
made by tests/record_claude_code_hooks.py) goes through handle(); our field names are checked against the
hook types of the official @anthropic-ai/claude-agent-sdk pinned in tests/claude-code (sdk.d.ts)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from claude_code_harness import AGENT_SDK_TYPES, require_claude_code

from vlk_memact import Memory, Settings
from vlk_memact.hosts.claude_code import adapter as claude_code
from vlk_memact.hosts.claude_code.adapter import handle

FIXTURES = Path(__file__).resolve().parents[2] / "data" / "claude-code-hooks"
RECORDED = sorted(FIXTURES.glob("*.json"))

# What handle() reads from each event, and what it may write in hookSpecificOutput.
READS = {
    "base": {"session_id", "cwd", "hook_event_name"},
    "SessionStart": {"source"},
    "UserPromptSubmit": set(),
    "PreToolUse": {"tool_name", "tool_input", "tool_use_id"},
    "PostToolUse": {"tool_name", "tool_input", "tool_use_id"},
    "PostToolUseFailure": {"tool_name", "tool_input", "tool_use_id", "error", "is_interrupt"},
}
WRITES = {
    "SessionStart": {"hookEventName", "additionalContext"},
    "UserPromptSubmit": {"hookEventName", "additionalContext"},
    "PreToolUse": {"hookEventName", "permissionDecision", "permissionDecisionReason", "additionalContext"},
    "PostToolUseFailure": {"hookEventName", "additionalContext"},
}


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def sdk_type_fields(source: str, name: str) -> set[str]:
    """The property names of `export declare type NAME = ... { ... };` in sdk.d.ts (top-level fields only)."""
    match = re.search(rf"export declare type {name} = [^{{]*\{{(.*?)\n\}};", source, re.S)
    assert match, f"{name} is not declared in sdk.d.ts"
    body = re.sub(r"/\*\*.*?\*/", "", match.group(1), flags=re.S)
    return set(re.findall(r"^ {4}(\w+)\??:", body, re.M))


@pytest.fixture(scope="module")
def sdk() -> str:
    require_claude_code()
    return AGENT_SDK_TYPES.read_text()


def test_every_event_vlk_memact_uses_was_recorded_from_the_real_cli() -> None:
    seen = {json.loads(p.read_text())["hook_event_name"] for p in RECORDED}
    assert seen == set(claude_code.EVENTS)
    sources = {json.loads(p.read_text()).get("source") for p in RECORDED}
    assert {"startup", "resume", "compact"} <= sources


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_the_fields_we_read_are_in_the_recorded_payloads(path: Path) -> None:
    event = json.loads(path.read_text())
    kind = event["hook_event_name"]
    assert READS["base"] | (READS[kind] - {"is_interrupt"}) <= set(event)


@pytest.mark.parametrize("kind", claude_code.EVENTS)
def test_the_fields_we_read_are_declared_by_the_agent_sdk(sdk: str, kind: str) -> None:
    declared = sdk_type_fields(sdk, f"{kind}HookInput") | sdk_type_fields(sdk, "BaseHookInput")
    assert READS["base"] | READS[kind] <= declared


@pytest.mark.parametrize("kind", sorted(WRITES))
def test_the_fields_we_write_are_declared_by_the_agent_sdk(sdk: str, kind: str) -> None:
    assert WRITES[kind] <= sdk_type_fields(sdk, f"{kind}HookSpecificOutput")
    assert "hookSpecificOutput" in sdk_type_fields(sdk, "SyncHookJSONOutput")
    assert re.search(r"export declare type HookPermissionDecision = [^;]*'deny'", sdk)


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_each_recorded_event_is_handled_and_answers_in_its_envelope(path: Path, memory: Memory) -> None:
    event = json.loads(path.read_text())
    answer = handle(event, memory)
    if answer is not None:
        assert set(answer) == {"hookSpecificOutput"}
        output = answer["hookSpecificOutput"]
        assert output["hookEventName"] == event["hook_event_name"]
        assert set(output) <= WRITES[event["hook_event_name"]]
        json.dumps(answer)  # printable


def test_recorded_failures_are_captured_with_their_tool_use_id_and_file(memory: Memory) -> None:
    for name in ("PostToolUseFailure-bash_fail", "PostToolUseFailure-read_fail"):
        handle(load(name), memory)
    session = load("PostToolUseFailure-bash_fail")["session_id"]
    slots = memory.get_history(session_id=session).slots
    by_tool = {json.loads(s.tool_payload or "{}")["tool"]: s for s in slots}
    assert by_tool["Bash"].raw_log == "Exit code 1\nError: Cannot find module express"
    assert by_tool["Bash"].file_context == "/work/project"
    assert by_tool["Read"].file_context == "/work/project/missing.txt"
    assert json.loads(by_tool["Bash"].tool_payload or "")["tool_use_id"] == "toolu_rec_bash_fail"


def test_the_recorded_session_loops_and_is_guarded(memory: Memory) -> None:
    """The recorded failing Bash call, replayed as the CLI would send it three more times."""
    pre, failure = load("PreToolUse-bash_fail"), load("PostToolUseFailure-bash_fail")
    for n in range(3):
        assert handle({**pre, "tool_use_id": f"t{n}"}, memory) is None
        answer = handle({**failure, "tool_use_id": f"t{n}"}, memory)
    assert answer is not None and "loop anchor" in answer["hookSpecificOutput"]["additionalContext"]
    denied = handle({**pre, "tool_use_id": "t9"}, memory)
    assert denied is not None and denied["hookSpecificOutput"]["permissionDecision"] == "deny"
    handle(load("PostToolUse-edit_ok"), memory)
    allowed = handle({**pre, "tool_use_id": "t10"}, memory)
    assert allowed is not None and "permissionDecision" not in allowed["hookSpecificOutput"]


def test_a_session_start_of_every_source_is_quiet_on_an_empty_memory(database_url: str) -> None:
    with Memory(database_url, settings=Settings(), project="empty") as memory:
        for path in RECORDED:
            event = json.loads(path.read_text())
            if event["hook_event_name"] in ("SessionStart", "UserPromptSubmit"):
                assert handle(event, memory) is None


def test_malformed_events_are_clear_errors(memory: Memory) -> None:
    from vlk_memact import InvalidInput

    with pytest.raises(InvalidInput, match="session_id"):
        handle({"hook_event_name": "PreToolUse", "tool_name": "Bash"}, memory)
    with pytest.raises(InvalidInput, match="JSON object"):
        handle([1, 2], memory)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="tool_name"):
        handle({**load("PreToolUse-bash_ok"), "tool_name": 7}, memory)
