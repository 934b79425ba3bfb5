"""The server inside the real Claude Code CLI (pinned), configured with --mcp-config, driven by a scripted model.

What Claude Code 2.1.328 does, as its requests show: MCP tools are deferred, named `mcp__<server>__<tool>`
in a `role: "system"` message ("The following deferred tools are now available via ToolSearch ...")
and absent from `tools`; a `ToolSearch` call with `select:a,b` (or keywords, matched against names and
descriptions, not titles) returns `tool_reference` blocks, and from the next request on the tools are
in `tools` with `defer_loading: true`. The server's instructions go into the system prompt under
"# MCP Server Instructions". A tool result is the structuredContent as compact JSON (non-ASCII kept)
instead of the text block; an isError result is its text. The assertions read the tool results inside
the model's next requests: what the model really receives.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_code_harness import require_claude_code, run_claude
from scripted_anthropic import ModelRequest, ScriptedModel, ToolResult, ToolUse, tool_search

from vlk_memact.core.render import estimate_tokens, structured_json

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

SERVER = "vlk"
RECORD, FETCH, TRAVEL = (f"mcp__{SERVER}__vlk_{name}" for name in ("record_state", "fetch_context", "time_travel"))
TYPE_ERROR = (
    "TypeError: Cannot read properties of undefined (reading 'map')\n"
    "    at TodoList (src/components/TodoList.jsx:14:23)\n    at renderWithHooks (react-dom.development.js:16305:18)"
)
IMPORT_ERROR = "ModuleNotFoundError: No module named 'yaml'\n  File \"tools/gen.py\", line 3, in <module>"
LESSON = "yaml is not installed in this environment: add pyyaml to requirements-dev.txt and pip install it."
EXCERPT = "ModuleNotFoundError: No module named 'yaml'"
FETCH_BUDGET = 600


def server_command() -> list[str]:
    """The worktree's installed entry point, as a user configures it (fall back to -m when not installed)."""
    script = Path(sys.executable).with_name("vlk-memact")
    return [str(script)] if script.exists() else [sys.executable, "-m", "vlk_memact"]


def mcp_config(db_file: Path) -> dict[str, Any]:
    command, *args = server_command()
    env = {"DATABASE_URL": f"sqlite:///{db_file}", "VLK_PROJECT": "e2e-project", "VLK_LOG_LEVEL": "WARNING"}
    return {"mcpServers": {SERVER: {"type": "stdio", "command": command, "args": args, "env": env}}}


def structured(result: ToolResult) -> dict[str, Any]:
    """The tool result as the model read it: Claude Code's JSON of the structuredContent."""
    assert not result.is_error, result.text
    data = result.json()
    assert isinstance(data, dict)
    assert result.text == structured_json(data), "Claude Code passes structuredContent on as compact JSON"
    return data


def previous_result(request: ModelRequest, name: str) -> dict[str, Any]:
    """A scripted turn reading the last tool result, as a model reads the ids it was given."""
    [result] = request.tool_results()
    assert result.tool_use_id.startswith(name), result
    return structured(result)


def test_the_model_receives_the_anchor_the_lesson_and_the_repeat_warning(tmp_path: Path) -> None:
    require_claude_code()
    load = tool_search(RECORD, FETCH, TRAVEL)
    records = [ToolUse(RECORD, {"raw_log": TYPE_ERROR, "file_context": "src/components/TodoList.jsx"},
                       id=f"record-{i}") for i in (1, 2, 3)]
    other = ToolUse(RECORD, {"raw_log": IMPORT_ERROR, "file_context": "tools/gen.py"}, id="record-import")
    fetch = ToolUse(FETCH, {}, id="fetch-1")

    def travel(request: ModelRequest) -> ToolUse:
        present = previous_result(request, "fetch-1")["present_ids"]
        return ToolUse(TRAVEL, {"target_timeline_ids": present, "learning": LESSON, "raw_log_excerpt": EXCERPT},
                       id="travel")

    fetch_again = ToolUse(FETCH, {"max_tokens": FETCH_BUDGET}, id="fetch-2")
    wrong = ToolUse(TRAVEL, {"target_timeline_ids": [999999], "learning": "x", "raw_log_excerpt": "y"}, id="wrong")
    recall = ToolUse(RECORD, {"raw_log": IMPORT_ERROR}, id="record-again")
    script = [load, *records, other, fetch, travel, fetch_again, wrong, recall, "Fixed the approach."]

    db_file = tmp_path / "vlk.db"
    work = tmp_path / "project"
    work.mkdir()
    with ScriptedModel(script) as model:
        run = run_claude("Fix the failing build.", cwd=work, model=model, mcp_config=mcp_config(db_file),
                         allowed_tools=[f"mcp__{SERVER}"], timeout=180)
    assert run.returncode == 0 and not run.is_error, run.describe()
    assert run.result == "Fixed the approach."
    model.assert_done()

    # Deferred: the first request names the tools without schemas; ToolSearch loads them.
    first = model.main_requests[0]
    assert RECORD in first.text() and RECORD not in first.tool_names
    assert "Vlk MemAct is your working memory" in first.text(), "the server instructions reach the model"
    loaded = model.tool_result(load.id)
    assert [b.get("tool_name") for b in loaded.block["content"]] == [RECORD, FETCH, TRAVEL]
    assert {RECORD, FETCH, TRAVEL} <= set(model.main_requests[1].tool_names)

    # The repeat warning reaches the model with the second and third record.
    first_record = structured(model.tool_result("record-1"))
    assert first_record["notice"] == "" and list(first_record)[0] == "notice"
    for i, count in ((2, 2), (3, 3)):
        notice = structured(model.tool_result(f"record-{i}"))["notice"]
        assert f"is now active {count} times" in notice and "Repeating the same action will not fix it" in notice

    # The context itself, with the [SYSTEM ANCHOR] and its evidence, the live error and the [id:N] tags.
    context = structured(model.tool_result("fetch-1"))
    text = context["context"]
    anchor = context["loops"][0]["anchor_id"]
    import_id = structured(model.tool_result("record-import"))["timeline_id"]
    assert f"[id:{anchor}] [PREVENTIVE FUTURE CONSTRAINT]: [SYSTEM ANCHOR] Loop detected" in text
    assert "Evidence: TypeError: Cannot read properties of undefined (reading 'map')" in text
    assert f"[id:{import_id}] [ACTIVE PRESENT STATE]" in text and "No module named 'yaml'" in text
    assert context["constraint_ids"] == [anchor] and context["present_ids"] == [import_id]
    assert sorted(context["loops"][0]["archived_ids"]) == sorted(
        structured(model.tool_result(f"record-{i}"))["timeline_id"] for i in (1, 2, 3))

    # Time travel, then the lesson with its evidence in the next context, within the budget asked for.
    travelled = structured(model.tool_result("travel"))
    lesson_id = travelled["constraint_id"]
    assert travelled["moved_ids"] == [import_id] and travelled["learning"] == LESSON
    again = model.tool_result("fetch-2")
    assert estimate_tokens(again.text) <= FETCH_BUDGET, "max_tokens bounds what the model receives"
    text = structured(again)["context"]
    assert f"[id:{lesson_id}] [PREVENTIVE FUTURE CONSTRAINT]: {LESSON}" in text
    assert f"Evidence: {EXCERPT}" in text and f"[id:{anchor}]" in text and "[SYSTEM ANCHOR]" in text
    assert f"[id:{import_id}] [ACTIVE PRESENT STATE]" not in text, "the time-travelled slot left the context"

    # A wrong call reaches the model as an error result that says what to fix.
    failed = model.tool_result("wrong")
    assert failed.is_error and "None of the ids [999999] is a PRESENT slot" in failed.text
    assert "[id:N] tags of vlk_fetch_context" in failed.text

    # The same error again: the lesson and its evidence are recalled in the record result itself.
    notice = structured(model.tool_result("record-again"))["notice"]
    assert f"⚡ Seen before in this session: [id:{lesson_id}] {LESSON}" in notice
    assert f"Evidence: {EXCERPT}" in notice
    print(f"\nclaude -p with the vlk server: {run.seconds:.1f} s wall, {len(model.main_requests)} model requests")


def test_a_keyword_tool_search_finds_the_memory_tools(tmp_path: Path) -> None:
    require_claude_code()
    search = ToolUse("ToolSearch", {"query": "memory error loop lesson", "max_results": 5}, id="search")
    with ScriptedModel([search, "ok"]) as model:
        run = run_claude("Which tools remember errors?", cwd=tmp_path, model=model,
                         mcp_config=mcp_config(tmp_path / "vlk.db"), allowed_tools=[f"mcp__{SERVER}"])
    assert run.returncode == 0, run.describe()
    model.assert_done()
    found = model.tool_result("search")
    names = [b.get("tool_name") for b in found.block.get("content", []) if isinstance(b, dict)]
    names += re.findall(r"mcp__vlk__vlk_\w+", found.text)
    assert RECORD in names and FETCH in names, found.block
