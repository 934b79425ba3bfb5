"""The scripted Messages API of tests/scripted_anthropic.py, spoken to directly over HTTP (no CLI needed)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest
from scripted_anthropic import SCRIPT_EXHAUSTED, SIDE_REPLY, ModelRequest, ScriptedModel, Text, ToolUse

MAIN_TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}, {"name": "ToolSearch", "input_schema": {}}]


def post(model: ScriptedModel, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
    request = urllib.request.Request(model.base_url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json", "x-api-key": "k"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["content-type"], response.read()


def sse_events(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for chunk in data.decode().strip().split("\n\n"):
        name, payload = chunk.split("\n", 1)
        assert name.startswith("event: ") and payload.startswith("data: ")
        events.append((name[len("event: "):], json.loads(payload[len("data: "):])))
    return events


def main_body(stream: bool, messages: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"model": "claude-x", "max_tokens": 100, "stream": stream, "tools": MAIN_TOOLS,
            "messages": messages or [{"role": "user", "content": "go"}]}


def test_a_streamed_tool_use_turn_follows_the_messages_event_grammar() -> None:
    call = ToolUse("Bash", {"command": "ls -la"}, id="toolu_ls")
    with ScriptedModel([[Text("Looking."), call]]) as model:
        content_type, data = post(model, "/v1/messages?beta=true", main_body(stream=True))
    assert content_type == "text/event-stream"
    events = sse_events(data)
    names = [name for name, _ in events]
    assert names == ["message_start", "content_block_start", "content_block_delta", "content_block_stop",
                     "content_block_start", "content_block_delta", "content_block_stop", "message_delta",
                     "message_stop"]
    assert all(payload["type"] == name for name, payload in events)
    assert events[1][1]["content_block"] == {"type": "text", "text": ""}
    assert events[2][1]["delta"] == {"type": "text_delta", "text": "Looking."}
    assert events[4][1]["content_block"] == {"type": "tool_use", "id": "toolu_ls", "name": "Bash", "input": {}}
    assert json.loads(events[5][1]["delta"]["partial_json"]) == {"command": "ls -la"}
    assert events[7][1]["delta"]["stop_reason"] == "tool_use"
    model.assert_done()


def test_a_non_streaming_request_gets_one_json_message() -> None:
    with ScriptedModel(["plain answer"]) as model:
        content_type, data = post(model, "/v1/messages", main_body(stream=False))
    message = json.loads(data)
    assert content_type == "application/json"
    assert message["content"] == [{"type": "text", "text": "plain answer"}] and message["stop_reason"] == "end_turn"
    assert message["role"] == "assistant" and message["usage"]["input_tokens"] > 0


def test_side_requests_and_token_counts_do_not_consume_the_script() -> None:
    with ScriptedModel(["the only turn"]) as model:
        _, title = post(model, "/v1/messages", {"model": "claude-haiku", "max_tokens": 50,
                                                "messages": [{"role": "user", "content": "title this"}]})
        _, counted = post(model, "/v1/messages/count_tokens", {"model": "m", "messages": [{"role": "user",
                                                                                          "content": "x" * 400}]})
        _, main = post(model, "/v1/messages", main_body(stream=False))
    assert json.loads(title)["content"][0]["text"] == SIDE_REPLY
    assert json.loads(counted)["input_tokens"] >= 100
    assert json.loads(main)["content"][0]["text"] == "the only turn"
    assert [r.main for r in model.requests] == [False, False, True] and len(model.side_requests) == 2
    model.assert_done()


def test_an_exhausted_script_answers_and_is_reported() -> None:
    with ScriptedModel([]) as model:
        _, data = post(model, "/v1/messages", main_body(stream=False))
    assert json.loads(data)["content"][0]["text"] == SCRIPT_EXHAUSTED
    with pytest.raises(AssertionError, match="no scripted turn left"):
        model.assert_done()


def test_a_script_function_reads_the_tool_results_it_was_sent() -> None:
    seen: list[ModelRequest] = []

    def script(request: ModelRequest) -> Any:
        seen.append(request)
        results = request.tool_results()
        return f"got {results[0].text}" if results else ToolUse("Bash", {"command": "true"}, id="toolu_1")

    result_message = {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "exit 0"}]}]}
    with ScriptedModel(script) as model:
        post(model, "/v1/messages", main_body(stream=False))
        _, data = post(model, "/v1/messages", main_body(False, [{"role": "user", "content": "go"}, result_message]))
    assert json.loads(data)["content"][0]["text"] == "got exit 0"
    assert model.tool_result("toolu_1").text == "exit 0" and [r.index for r in seen] == [0, 1]
    assert "exit 0" in model.last_main().text()
