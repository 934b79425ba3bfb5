"""The MCP layer through the SDK's in-memory client, in both protocol eras."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from vlk_memact import Memory
from vlk_memact.server import INSTRUCTIONS, build_server

pytestmark = pytest.mark.anyio

TOOLS = [
    "vlk_time_travel",
    "vlk_get_history",
    "vlk_search_memory",
    "vlk_summarize_session",
    "vlk_fetch_context",
    "vlk_revoke_future",
    "vlk_record_state",
]
REQUIRED = {
    "vlk_time_travel": ["target_timeline_ids", "learning", "raw_log_excerpt"],
    "vlk_record_state": ["raw_log"],
    "vlk_search_memory": ["query"],
    "vlk_revoke_future": ["timeline_id"],
    "vlk_get_history": [],
    "vlk_summarize_session": [],
    "vlk_fetch_context": [],
}


@pytest.fixture(params=[("legacy", False), ("auto", False), ("auto", True)], ids=["legacy", "auto", "auto-inline"])
async def client(request: pytest.FixtureRequest, memory: Memory) -> AsyncIterator[Client]:
    mode, inline = request.param
    async with Client(build_server(memory, inline=inline), mode=mode) as c:
        yield c


@pytest.mark.parametrize("inline", [False, True])
async def test_inline_runs_every_tool_on_the_event_loop_and_the_default_in_a_worker_thread(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, inline: bool
) -> None:
    """stdio serves with inline=True (one client: no thread hand-off per call) over SQLite; HTTP and
    PostgreSQL keep the threads."""
    seen: list[int] = []
    for name in ("record_state", "fetch_context"):
        real = getattr(memory, name)
        monkeypatch.setattr(memory, name, lambda *a, _real=real, **k: (seen.append(threading.get_ident()), _real(*a, **k))[1])
    async with Client(build_server(memory, inline=inline)) as c:
        recorded = await c.call_tool("vlk_record_state", {"raw_log": "ValueError: bad value 42"})
        fetched = await c.call_tool("vlk_fetch_context", {})
    assert not recorded.is_error and not fetched.is_error
    assert "ValueError: bad value 42" in fetched.content[0].text
    assert len(seen) == 2
    loop_thread = threading.get_ident()
    in_place = inline and hasattr(memory.store, "attempt")  # PostgreSQL keeps the threads (its waits are remote)
    assert all((t == loop_thread) is in_place for t in seen), (inline, seen, loop_thread)


async def test_inline_moves_a_write_that_would_wait_for_a_lock_to_a_thread_and_keeps_answering_reads(
    tmp_path: Path,
) -> None:
    """Another process holds the write lock: the record leaves the event loop to wait, a read is answered
    meanwhile, and the record lands once the lock is released."""
    import sqlite3

    import anyio

    memory = Memory(f"sqlite:///{tmp_path / 'vlk.db'}")
    memory.record_state("first error")
    other = sqlite3.connect(tmp_path / "vlk.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    done: dict[str, Any] = {}
    async with Client(build_server(memory, inline=True)) as c:
        async def record() -> None:
            done["record"] = await c.call_tool("vlk_record_state", {"raw_log": "second error"})

        async with anyio.create_task_group() as tg:
            tg.start_soon(record)
            await anyio.sleep(0.2)
            history = await c.call_tool("vlk_get_history", {})
            assert "record" not in done  # still waiting for the lock, off the loop
            assert [s["raw_log"] for s in history.structured_content["slots"]] == ["first error"]
            other.execute("ROLLBACK")
        assert not done["record"].is_error
    other.close()
    assert [s.raw_log for s in memory.get_history().slots] == ["second error", "first error"]
    memory.close()


async def call(client: Client, tool: str, **args: Any) -> tuple[str, dict[str, Any]]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    return result.content[0].text, result.structured_content or {}


async def error(client: Client, tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args)
    assert result.is_error
    return result.content[0].text


async def test_both_eras_negotiate(memory: Memory) -> None:
    async with Client(build_server(memory), mode="legacy") as c:
        assert c.protocol_version == "2025-11-25"
    async with Client(build_server(memory), mode="auto") as c:
        assert c.protocol_version == "2026-07-28"


async def test_the_seven_tools_keep_the_prototype_names_order_and_required_fields(client: Client) -> None:
    tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == TOOLS
    for tool in tools:
        assert tool.title and tool.description
        assert sorted(tool.input_schema.get("required", [])) == sorted(REQUIRED[tool.name])
        assert "session_id" in tool.input_schema["properties"]
        assert tool.output_schema and tool.output_schema["type"] == "object"
        assert tool.annotations is not None and tool.annotations.open_world_hint is False


async def test_annotations_are_honest(client: Client) -> None:
    tools = {t.name: t.annotations for t in (await client.list_tools()).tools}
    for name in ("vlk_get_history", "vlk_search_memory", "vlk_summarize_session"):
        assert tools[name].read_only_hint is True and tools[name].idempotent_hint is True
    assert tools["vlk_fetch_context"].read_only_hint is False and tools["vlk_fetch_context"].idempotent_hint is True
    assert tools["vlk_time_travel"].destructive_hint is True and tools["vlk_revoke_future"].destructive_hint is True
    assert tools["vlk_record_state"].read_only_hint is False


async def test_constraint_type_schema_lists_its_values(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    schema = tools["vlk_time_travel"].input_schema["properties"]["constraint_type"]
    assert schema["enum"] == ["DERIVED", "PROSPECTIVE"]


async def test_a_full_session_through_the_tools(client: Client) -> None:
    ids = []
    for line in (42, 44, 47):
        text, data = await call(client, "vlk_record_state",
                                raw_log=f"thread 'main' (123) panicked at src/main.rs:{line}:5:\nindex out of bounds",
                                file_context="src/main.rs", tool_payload={"cmd": "cargo test"})
        assert text.startswith(f"📝 [VLK RECORD] PRESENT state recorded as timeline_id={data['timeline_id']} ")
        ids.append(data["timeline_id"])
    text, data = await call(client, "vlk_fetch_context")
    assert text.startswith("=== VLK CHRONESTHESIA LAYER ===\n")
    assert "[SYSTEM ANCHOR] Loop detected (fingerprint)" in text
    assert data["loops"][0]["archived_ids"] == ids and data["context"] == text  # both forms carry the context
    anchor = data["loops"][0]["anchor_id"]
    assert f"[id:{anchor}] [PREVENTIVE FUTURE CONSTRAINT]: [SYSTEM ANCHOR]" in text

    text, data = await call(client, "vlk_get_history", limit=2)
    listed = json.loads(text)
    assert [s["id"] for s in listed] == [s["id"] for s in data["slots"]] == [anchor, ids[-1]]
    assert list(listed[0])[:10] == ["id", "content_id", "session_id", "sequence_order", "temporal_state",
                                    "learning_summary", "created_at", "constraint_type", "raw_log", "file_context"]
    assert listed[1]["tool_payload"] == '{"cmd":"cargo test"}'

    text, data = await call(client, "vlk_search_memory", query="INDEX OUT")
    assert {s["id"] for s in data["slots"]} == {*ids, anchor}  # the anchor matches through its evidence

    text, _ = await call(client, "vlk_summarize_session")
    assert text.startswith("Session 'default': 4 total timeline slots | 0 PRESENT (active) | 3 PAST (archived) "
                           "| 1 FUTURE (constraints) | ~0 estimated tokens in active raw_log data")

    text, data = await call(client, "vlk_revoke_future", timeline_id=anchor)
    assert text == (f"🗑️ [VLK REVOKE] FUTURE constraint #{anchor} revoked (moved to PAST). "
                    "It will no longer appear in active context.")


async def test_time_travel_text_names_moved_and_ignored_ids(client: Client) -> None:
    _, rec = await call(client, "vlk_record_state", raw_log="boom")
    text, data = await call(client, "vlk_time_travel", target_timeline_ids=[rec["timeline_id"], 99],
                            learning="Pin rustc", raw_log_excerpt="boom", constraint_type="PROSPECTIVE")
    assert text.startswith("🧠 [VLK CHRONESTHESIA] Transitioned 1 timeline slot(s) to PAST (#1)")
    assert "Ignored ids (not PRESENT slots of session 'default'): #99." in text
    assert "prefixed as [PROSPECTIVE CONSTRAINT]" in text
    assert data["moved_ids"] == [1] and data["ignored_ids"] == [99]


@pytest.mark.parametrize(
    ("tool", "args", "needle"),
    [
        ("vlk_time_travel", {"target_timeline_ids": [1], "learning": " ", "raw_log_excerpt": "x"}, "learning"),
        ("vlk_time_travel", {"target_timeline_ids": "1", "learning": "L", "raw_log_excerpt": "x"}, "target_timeline_ids"),
        ("vlk_time_travel", {"target_timeline_ids": [1], "learning": "L"}, "raw_log_excerpt"),
        ("vlk_time_travel", {"target_timeline_ids": [-4], "learning": "L", "raw_log_excerpt": "x"}, "positive"),
        ("vlk_time_travel", {"target_timeline_ids": [7], "learning": "L", "raw_log_excerpt": "x"}, "nothing was stored"),
        ("vlk_record_state", {"raw_log": ""}, "raw_log"),
        ("vlk_record_state", {"raw_log": 5}, "raw_log"),
        ("vlk_record_state", {}, "raw_log"),
        ("vlk_record_state", {"raw_log": "x", "session_id": 7}, "session_id"),
        # a host's refusal is no failure of the task (hosts/shared/failures.py, the same classifier as the hooks)
        ("vlk_record_state", {"raw_log": "<tool_use_error>Sibling tool call errored</tool_use_error>"},
         "sibling cancellation"),
        ("vlk_record_state", {"raw_log": "The user doesn't want to proceed with this tool use."}, "permission refusal"),
        ("vlk_search_memory", {"query": "  "}, "query"),
        ("vlk_get_history", {"limit": 0}, "limit"),
        ("vlk_get_history", {"limit": "many"}, "limit"),
        ("vlk_revoke_future", {"timeline_id": 12345}, "#12345 in session 'default'"),
        ("vlk_revoke_future", {"timeline_id": 0}, "timeline_id"),
    ],
)
async def test_bad_input_is_an_is_error_result_that_names_what_to_fix(
    client: Client, tool: str, args: dict[str, Any], needle: str
) -> None:
    assert needle in await error(client, tool, **args)
    # The server keeps serving and nothing was half-stored.
    _, data = await call(client, "vlk_summarize_session")
    assert data["total"] == 0


async def test_an_unknown_tool_is_a_protocol_error(client: Client) -> None:
    with pytest.raises(MCPError) as info:
        await client.call_tool("vlk_nope", {})
    assert info.value.error.code == -32602 and "vlk_nope" in info.value.error.message


@pytest.mark.filterwarnings("ignore:ping is removed")
async def test_ping_answers(memory: Memory) -> None:
    async with Client(build_server(memory), mode="legacy") as c:
        await c.send_ping()


async def test_instructions_teach_the_protocol(client: Client) -> None:
    assert client.instructions == INSTRUCTIONS
    assert client.server_info is not None and client.server_info.name == "Vlk MemAct"
    assert "vlk_record_state" in INSTRUCTIONS and "vlk_fetch_context" in INSTRUCTIONS


async def test_structured_content_matches_the_output_schema(client: Client) -> None:
    import jsonschema

    tools = {t.name: t for t in (await client.list_tools()).tools}
    await call(client, "vlk_record_state", raw_log="x")
    for name, args in [("vlk_record_state", {"raw_log": "y"}), ("vlk_fetch_context", {}),
                       ("vlk_get_history", {}), ("vlk_search_memory", {"query": "x"}),
                       ("vlk_summarize_session", {})]:
        _, data = await call(client, name, **args)
        jsonschema.validate(data, tools[name].output_schema)


async def test_scopes_recall_and_budget_through_the_tools(client: Client) -> None:
    raw = "ModuleNotFoundError: No module named 'yaml'"
    _, rec = await call(client, "vlk_record_state", raw_log=raw, session_id="monday")
    _, travel = await call(client, "vlk_time_travel", target_timeline_ids=[rec["timeline_id"]],
                           learning="pip install pyyaml", raw_log_excerpt=raw, session_id="monday", scope="project")
    assert travel["scope"] == "project"
    text, data = await call(client, "vlk_record_state", raw_log=raw, session_id="tuesday")
    assert data["recalled"][0]["constraint_id"] == travel["constraint_id"]
    assert "⚡ Seen before in session 'monday'" in text
    text, data = await call(client, "vlk_fetch_context", session_id="tuesday", max_tokens=250)
    assert data["max_tokens"] == 250 and data["tokens"] <= 250 and "pip install pyyaml" in text
    assert "scope" in await error(client, "vlk_time_travel", target_timeline_ids=[data["present_ids"][0]],
                                      learning="x", raw_log_excerpt="y", scope="team", session_id="tuesday")
    assert "max_tokens" in await error(client, "vlk_fetch_context", max_tokens=10)
    text, data = await call(client, "vlk_summarize_session", session_id="tuesday")
    assert data["project"] == "test-project" and "Project: 'test-project'" in text


async def test_argument_type_errors_read_as_one_sentence_per_field(client: Client) -> None:
    text = await error(client, "vlk_time_travel", target_timeline_ids=["a"], learning="L")
    assert text.startswith("Invalid arguments for vlk_time_travel: 'target_timeline_ids.0': Input should be a valid "
                           "integer")
    assert "'raw_log_excerpt': Field required (give 1-2 sentences of the raw error/log" in text
    assert "pydantic" not in text and "vlk_time_travelArguments" not in text
