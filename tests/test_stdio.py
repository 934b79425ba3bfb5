"""The server as an MCP host runs it: a child process speaking JSON-RPC over stdin/stdout.

Three views of the same process:
- the SDK's own stdio client, in legacy (initialize handshake) and auto (2026-07-28, stateless) mode;
- raw pipes, with hostile input a buggy or malicious client could send;
- two processes on one database file, as two host windows would start them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult

from mcp_clients import (
    CONTEXT_HEADER,
    LEGACY_PROTOCOL_VERSION,
    MODERN_PROTOCOL_VERSION,
    RECORD_PREFIX,
    SERVER_ARGS,
    SERVER_COMMAND,
    SYSTEM_ANCHOR,
    TOOL_NAMES,
    RawServer,
    initialize_params,
    is_jsonrpc_notification,
    is_jsonrpc_response,
    server_env,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

MODES = [
    pytest.param("legacy", LEGACY_PROTOCOL_VERSION, id="legacy"),
    pytest.param("auto", MODERN_PROTOCOL_VERSION, id="auto-2026-07-28"),
]

LOOPING_ERROR = "ModuleNotFoundError: No module named 'numpyy'"


# ---------------------------------------------------------------- SDK stdio client


@asynccontextmanager
async def stdio_server(db_file: Path, mode: str, stderr_file: Path) -> AsyncIterator[Client]:
    """A connected SDK client to a fresh `python -m vlk_memact` child; its stderr goes to a file."""
    params = StdioServerParameters(command=SERVER_COMMAND, args=SERVER_ARGS, env=server_env(db_file))
    with stderr_file.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode, read_timeout_seconds=30) as client:
            yield client


def text_of(result: CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


class Tools:
    """Calls tools and checks each successful result against the tool's declared outputSchema."""

    def __init__(self, client: Client, output_schemas: dict[str, dict[str, Any]]) -> None:
        self.client = client
        self.output_schemas = output_schemas

    @classmethod
    async def listed(cls, client: Client) -> Tools:
        listing = await client.list_tools()
        return cls(client, {t.name: t.output_schema for t in listing.tools if t.output_schema})

    async def ok(self, name: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        result = await self.client.call_tool(name, arguments)
        assert not result.is_error, f"{name} failed: {text_of(result)}"
        assert result.structured_content is not None, f"{name} returned no structuredContent"
        jsonschema.validate(result.structured_content, self.output_schemas[name])
        return text_of(result), result.structured_content


def assert_no_traceback(stderr_file: Path) -> None:
    stderr = stderr_file.read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in stderr, f"the server logged a crash:\n{stderr}"


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "protocol_version"), MODES)
async def test_the_sdk_client_sees_seven_titled_tools_with_output_schemas(
    tmp_path: Path, mode: str, protocol_version: str
) -> None:
    async with stdio_server(tmp_path / "vlk.db", mode, tmp_path / "stderr.txt") as client:
        assert client.protocol_version == protocol_version
        assert client.server_info is not None and client.server_info.name == "Vlk MemAct"
        listing = await client.list_tools()

    assert {t.name for t in listing.tools} == TOOL_NAMES
    assert len(listing.tools) == 7
    for tool in listing.tools:
        assert tool.title, f"{tool.name} has no title"
        assert tool.description, f"{tool.name} has no description"
        assert tool.output_schema is not None and tool.output_schema.get("type") == "object", tool.name
        assert tool.input_schema.get("type") == "object", tool.name
    assert_no_traceback(tmp_path / "stderr.txt")


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "protocol_version"), MODES)
async def test_three_identical_errors_become_a_system_anchor_that_history_search_summary_and_revoke_agree_on(
    tmp_path: Path, mode: str, protocol_version: str
) -> None:
    async with stdio_server(tmp_path / "vlk.db", mode, tmp_path / "stderr.txt") as client:
        assert client.protocol_version == protocol_version
        tools = await Tools.listed(client)

        recorded = []
        same_error = {"raw_log": LOOPING_ERROR, "file_context": "app.py"}
        for _ in range(3):
            text, data = await tools.ok("vlk_record_state", same_error)
            assert text.startswith(RECORD_PREFIX + str(data["timeline_id"]))
            recorded.append(data["timeline_id"])
        assert data["repeats"] == 3 and data["repeat_ids"] == recorded
        assert list(data)[0] == "notice" and data["notice"] and text.endswith("\n" + data["notice"])
        assert "is now active 3 times" in data["notice"], "the repeat warning travels in both forms"

        text, context = await tools.ok("vlk_fetch_context", {})
        assert text.startswith(CONTEXT_HEADER)
        assert list(context)[0] == "context" and context["context"] == text, "the context travels in both forms"
        assert SYSTEM_ANCHOR in text
        assert len(context["loops"]) == 1
        loop = context["loops"][0]
        assert sorted(loop["archived_ids"]) == recorded
        anchor_id = loop["anchor_id"]
        assert context["constraint_ids"] == [anchor_id]
        assert context["present_ids"] == []
        assert f"[id:{anchor_id}]" in text and LOOPING_ERROR not in text.split(SYSTEM_ANCHOR)[0]

        _, again = await tools.ok("vlk_fetch_context", {})
        assert again["loops"] == [], "a second fetch intercepts nothing new"
        assert again["constraint_ids"] == [anchor_id]

        text, history = await tools.ok("vlk_get_history", {"limit": 10})
        states = {slot["id"]: slot["temporal_state"] for slot in history["slots"]}
        assert states == {**{i: "PAST" for i in recorded}, anchor_id: "FUTURE"}
        assert json.loads(text) == history["slots"], "the text block is the JSON listing of the same slots"

        _, search = await tools.ok("vlk_search_memory", {"query": "NUMPYY"})
        assert set(recorded) <= {slot["id"] for slot in search["slots"]}, "archived logs stay searchable"

        _, summary = await tools.ok("vlk_summarize_session", {})
        assert (summary["present"], summary["past"], summary["future"], summary["total"]) == (0, 3, 1, 4)

        text, revoked = await tools.ok("vlk_revoke_future", {"timeline_id": anchor_id})
        assert revoked["constraint_id"] == anchor_id and f"#{anchor_id} revoked" in text

        text, after = await tools.ok("vlk_fetch_context", {})
        assert SYSTEM_ANCHOR not in text
        assert after["constraint_ids"] == [] and after["present_ids"] == []
        _, summary = await tools.ok("vlk_summarize_session", {})
        assert (summary["present"], summary["past"], summary["future"]) == (0, 4, 0)
    assert_no_traceback(tmp_path / "stderr.txt")


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "protocol_version"), MODES)
async def test_tool_failures_are_is_error_results_and_the_server_keeps_serving(
    tmp_path: Path, mode: str, protocol_version: str
) -> None:
    async with stdio_server(tmp_path / "vlk.db", mode, tmp_path / "stderr.txt") as client:
        tools = await Tools.listed(client)

        missing = await client.call_tool("vlk_revoke_future", {"timeline_id": 424242})
        assert missing.is_error
        assert "No FUTURE constraint found with id #424242" in text_of(missing)

        empty_lesson = await client.call_tool(
            "vlk_time_travel", {"target_timeline_ids": [1], "learning": "   ", "raw_log_excerpt": "boom"}
        )
        assert empty_lesson.is_error
        assert "'learning' is required and cannot be empty" in text_of(empty_lesson)

        with pytest.raises(MCPError) as unknown:
            await client.call_tool("vlk_no_such_tool", {})
        assert unknown.value.error.code == -32602

        text, data = await tools.ok("vlk_record_state", {"raw_log": "still alive after three failures"})
        assert text.startswith(RECORD_PREFIX)
        _, context = await tools.ok("vlk_fetch_context", {})
        assert context["present_ids"] == [data["timeline_id"]]
        _, summary = await tools.ok("vlk_summarize_session", {})
        assert summary["future"] == 0, "the failed time travel must not have stored a constraint"
    assert_no_traceback(tmp_path / "stderr.txt")


# ---------------------------------------------------------------- raw pipes

PING_RESULT: dict[str, Any] = {}


def hostile_steps() -> list[tuple[str, bytes, str | None]]:
    """(what, line, id of the request in it or None): lines a broken or malicious client could send."""

    def line(message: Any) -> bytes:
        return json.dumps(message).encode()

    def request(request_id: str, method: str, params: Any = None) -> bytes:
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        return line(message if params is None else {**message, "params": params})

    def record(request_id: str, arguments: Any) -> bytes:
        return request(request_id, "tools/call", {"name": "vlk_record_state", "arguments": arguments})

    huge_log = "E" + "x" * (2 * 1024 * 1024) + " RuntimeError: end"
    return [
        ("not JSON", b"this is { not json", None),
        ("a JSON array (no batches since 2025-06-18)", b"[" + request("in-batch", "ping") + b"]", None),
        ("an object without method", line({"jsonrpc": "2.0", "id": "no-method", "params": {}}), None),
        ("an unknown notification", line({"jsonrpc": "2.0", "method": "notifications/vlk_unknown"}), None),
        ("an unknown method", request("unknown-method", "vlk/no_such_method"), "unknown-method"),
        ("tools/call with string arguments", record("string-arguments", "raw_log=boom"), "string-arguments"),
        ("vlk_record_state with raw_log = 5", record("number-raw-log", {"raw_log": 5}), "number-raw-log"),
        ("a 2 MB raw_log", record("huge-raw-log", {"raw_log": huge_log}), "huge-raw-log"),
        ("invalid UTF-8 bytes", b"\xff\xfe\x80 \xc3\x28 not UTF-8 \xed\xa0\x80", None),
        ("a ping", request("plain-ping", "ping"), "plain-ping"),
    ]


def check_hostile_reply(request_id: str, response: dict[str, Any]) -> None:
    """What each hostile request with an id must be answered with."""
    if request_id == "unknown-method":
        assert response["error"]["code"] == -32601, response
    elif request_id == "string-arguments":
        assert response["error"]["code"] == -32602, response
    elif request_id == "number-raw-log":
        result = response["result"]
        assert result["isError"] is True, result
        assert "raw_log" in result["content"][0]["text"], result
    elif request_id == "huge-raw-log":
        result = response["result"]
        assert result.get("isError") is not True, result
        assert result["structuredContent"]["truncated"] is True
        assert result["content"][0]["text"].startswith(RECORD_PREFIX)
    elif request_id == "plain-ping":
        assert response["result"] == PING_RESULT, response
    else:
        raise AssertionError(f"no expectation for {request_id}")


def test_raw_stdio_survives_hostile_lines_answers_every_valid_request_and_exits_cleanly_on_eof(
    tmp_path: Path,
) -> None:
    stderr_file = tmp_path / "stderr.txt"
    with stderr_file.open("wb") as stderr:
        server = RawServer(server_env(tmp_path / "vlk.db"), stderr)
    try:
        init = server.call("initialize", initialize_params("2025-06-18"))
        assert init["result"]["protocolVersion"] == "2025-06-18"
        assert init["result"]["serverInfo"]["name"] == "Vlk MemAct"
        server.notify("notifications/initialized")

        for number, (what, line, request_id) in enumerate(hostile_steps()):
            seen_before = len(server.lines)
            server.send_line(line)
            # A fresh valid request after every hostile line: the server must still be serving.
            follow_up = server.request("tools/list" if number % 2 else "ping", request_id=f"after-{number}")
            expected = [follow_up] if request_id is None else [request_id, follow_up]
            responses = server.wait_for(*expected, timeout=60)

            if request_id is not None:
                check_hostile_reply(request_id, responses[0])
            if number % 2:
                assert len(responses[-1]["result"]["tools"]) == 7, what
            else:
                assert responses[-1]["result"] == PING_RESULT, what
            # Nothing else was answered: notifications and malformed lines got no reply (or only a
            # JSON-RPC error with a null id, which the spec allows for unparseable input).
            for raw in server.lines[seen_before:]:
                message = json.loads(raw)
                if message.get("id") not in expected:
                    answers_unparseable_input = message.get("id") is None and "error" in message
                    assert request_id is None and answers_unparseable_input, (what, message)

        final = server.call("tools/list")
        assert {t["name"] for t in final["result"]["tools"]} == TOOL_NAMES
        assert server.process.poll() is None, "the server died"

        exit_code = server.close_stdin_and_wait(timeout=5)
    finally:
        server.kill()

    assert exit_code == 0
    for raw in server.lines:
        message = json.loads(raw)  # every stdout line is JSON: no print() or banner reached stdout
        assert is_jsonrpc_response(message) or is_jsonrpc_notification(message), raw[:300]
    assert_no_traceback(stderr_file)


# ---------------------------------------------------------------- two processes, one file


@pytest.mark.anyio
async def test_two_server_processes_share_one_database_file_and_both_serve(tmp_path: Path) -> None:
    db_file = tmp_path / "shared.db"
    async with (
        stdio_server(db_file, "legacy", tmp_path / "first.stderr") as first,
        stdio_server(db_file, "auto", tmp_path / "second.stderr") as second,
    ):
        first_tools, second_tools = await Tools.listed(first), await Tools.listed(second)

        # Writes from both processes at once: none may fail on a lock, none may be lost.
        recorded: list[int] = []

        async def record(tools: Tools, who: str, count: int) -> None:
            for n in range(count):
                arguments = {"raw_log": f"{who} observation {n}", "session_id": "busy"}
                _, data = await tools.ok("vlk_record_state", arguments)
                recorded.append(data["timeline_id"])

        async with anyio.create_task_group() as group:
            for who, tools in (("first", first_tools), ("second", second_tools)):
                for worker in range(3):
                    group.start_soon(record, tools, f"{who}-{worker}", 5)
        assert len(set(recorded)) == 30
        _, history = await second_tools.ok("vlk_get_history", {"session_id": "busy", "limit": 100})
        assert sorted(slot["id"] for slot in history["slots"]) == sorted(recorded)

        # A loop split across the two processes is still one loop.
        for tools in (first_tools, second_tools, first_tools):
            await tools.ok("vlk_record_state", {"raw_log": LOOPING_ERROR})
        text, context = await second_tools.ok("vlk_fetch_context", {})
        assert SYSTEM_ANCHOR in text and len(context["loops"]) == 1
        assert len(context["loops"][0]["archived_ids"]) == 3
        text, context = await first_tools.ok("vlk_fetch_context", {})
        assert SYSTEM_ANCHOR in text and context["loops"] == [], "the other process already intercepted it"

    assert_no_traceback(tmp_path / "first.stderr")
    assert_no_traceback(tmp_path / "second.stderr")
