"""A scripted Anthropic Messages API on loopback, for the Claude Code CLI tests (tests/claude_code_harness.py).

Why: what a host really puts into the model's requests (tool results, hook context, deferred tools)
can only be seen by running the host. `ScriptedModel` is a loopback HTTP server speaking the Anthropic
Messages API the way the CLI uses it; its replies come from a script, so a test decides which tools
the "model" calls, and every request body is recorded so the test asserts on what the model received.

A script is a list of turns, or a callable `(request: ModelRequest) -> turn | None` (None: the script
is done). A turn is a string (one text block), a `Text`/`ToolUse` block, a list of blocks, or a callable
of the request returning one of those. A turn with tool uses ends with `stop_reason: tool_use`, else
`end_turn`. Once the script is exhausted the model answers `SCRIPT_EXHAUSTED` text (so the CLI stops)
and notes the request in `model.errors`; `model.assert_done()` checks the script ran to its end.

Only *main* requests (those offering the CLI's agent tools: `Bash` or `ToolSearch`) consume the script;
side requests (title or topic generation, quota probes, small-model calls without the main tools) get
a short text answer, `count_tokens` an estimate, and `GET /v1/models*` a model list. `model.requests`
holds every request, `model.main_requests` the main ones. Nothing here knows about vlk-memact.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from host_harness import LoopbackServer, QuietHandler

SCRIPT_EXHAUSTED = "SCRIPT_EXHAUSTED: the scripted model has no turn left."
SIDE_REPLY = "ok"
MAIN_TOOL_NAMES = frozenset({"Bash", "ToolSearch"})


# ---------------------------------------------------------------- the model's side: script blocks


@dataclass(frozen=True)
class Text:
    """A text block of the model's reply."""

    text: str


_tool_ids = itertools.count(1)


@dataclass(frozen=True)
class ToolUse:
    """A tool call of the model; `id` defaults to a fresh `toolu_vlk_NNNN` (name it to find its result)."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""

    def __post_init__(self) -> None:
        if not self.id:
            object.__setattr__(self, "id", f"toolu_vlk_{next(_tool_ids):04d}")


Block = Text | ToolUse
Turn = str | Block | Sequence[str | Block] | Callable[["ModelRequest"], Any]


def tool_search(*names: str) -> ToolUse:
    """The ToolSearch call that loads deferred tools by exact name (`select:a,b`)."""
    return ToolUse("ToolSearch", {"query": "select:" + ",".join(names), "max_results": max(5, len(names))})


def _blocks(turn: Any, request: ModelRequest) -> list[Block]:
    while callable(turn) and not isinstance(turn, (Text, ToolUse)):
        turn = turn(request)
    if isinstance(turn, (str, Text, ToolUse)):
        turn = [turn]
    blocks: list[Block] = []
    for item in turn:
        blocks.append(Text(item) if isinstance(item, str) else item)
        if not isinstance(blocks[-1], (Text, ToolUse)):
            raise TypeError(f"a turn holds str, Text or ToolUse, not {type(item).__name__}")
    return blocks or [Text("")]


# ---------------------------------------------------------------- the CLI's side: recorded requests


def content_text(content: Any) -> str:
    """The text of a message or tool_result content (a string or a list of blocks), blocks joined by newlines."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(block)
        elif block.get("type") == "text":
            parts.append(block.get("text", ""))
        elif block.get("type") == "tool_result":
            parts.append(content_text(block.get("content")))
        elif block.get("type") == "tool_use":
            parts.append(json.dumps(block.get("input"), ensure_ascii=False))
        elif block.get("type") == "tool_reference":
            parts.append(str(block.get("tool_name", "")))
    return "\n".join(parts)


@dataclass(frozen=True)
class ToolResult:
    """One tool_result block the CLI sent back, with its content flattened to text."""

    tool_use_id: str
    text: str
    is_error: bool
    block: Mapping[str, Any]

    def json(self) -> Any:
        """The text parsed as JSON (what an MCP tool's structuredContent becomes in Claude Code)."""
        return json.loads(self.text)


@dataclass
class ModelRequest:
    """One HTTP request the CLI made to the model server."""

    method: str
    path: str
    headers: Mapping[str, str]  # names in lower case
    body: Any
    main: bool = False
    index: int = 0  # the position among main requests (0-based); -1 for side requests

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    @property
    def tool_names(self) -> list[str]:
        return [t.get("name", "") for t in (self.body or {}).get("tools", []) or []]

    def tool_results(self, *, last_only: bool = True) -> list[ToolResult]:
        """The tool_result blocks of the last user message (or of every message)."""
        messages = [m for m in self.messages if m.get("role") == "user"]
        if last_only:
            messages = messages[-1:]
        out = []
        for message in messages:
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    out.append(
                        ToolResult(
                            tool_use_id=block.get("tool_use_id", ""),
                            text=content_text(block.get("content")),
                            is_error=bool(block.get("is_error", False)),
                            block=block,
                        )
                    )
        return out

    def system_text(self) -> str:
        system = (self.body or {}).get("system", "")
        return content_text(system)

    def text(self) -> str:
        """Every text the model is shown in this request: system prompt, messages, tool results."""
        parts = [self.system_text()]
        parts += [content_text(m.get("content")) for m in self.messages]
        return "\n".join(parts)


def is_main_request(method: str, path: str, body: Any) -> bool:
    """A request of the agent loop: POST /v1/messages offering the CLI's own agent tools."""
    if method != "POST" or not path.split("?")[0].endswith("/v1/messages") or not isinstance(body, dict):
        return False
    names = {t.get("name") for t in body.get("tools", []) or [] if isinstance(t, dict)}
    return bool(names & MAIN_TOOL_NAMES)


def estimate_tokens(body: Any) -> int:
    return max(1, math.ceil(len(json.dumps(body, ensure_ascii=False)) / 4))


# ---------------------------------------------------------------- the server


def _message(blocks: list[Block], model: str, input_tokens: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, Text):
            content.append({"type": "text", "text": block.text})
        else:
            content.append({"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input)})
    stop = "tool_use" if any(isinstance(b, ToolUse) for b in blocks) else "end_turn"
    return {
        "id": f"msg_vlk_{next(_tool_ids):04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": max(1, estimate_tokens(content))},
    }


def _sse_events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    start = {**message, "content": [], "stop_reason": None, "usage": {**message["usage"], "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        opening: dict[str, Any]
        if block["type"] == "text":
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        start_block = {"type": "content_block_start", "index": index, "content_block": opening}
        events.append(("content_block_start", start_block))
        events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": message["usage"]["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


class ScriptedModel(LoopbackServer):
    """A Messages API on 127.0.0.1 (port 0) whose main replies come from a script; records every request."""

    def __init__(
        self,
        script: Iterable[Turn] | Callable[[ModelRequest], Any] = (),
        *,
        side_reply: str | Callable[[ModelRequest], str] = SIDE_REPLY,
        is_main: Callable[[str, str, Any], bool] = is_main_request,
    ) -> None:
        self._script_fn = script if callable(script) else None
        self._turns = [] if callable(script) else list(script)
        self._side_reply = side_reply
        self._is_main = is_main
        self._lock = threading.RLock()  # a script function may read the requests
        super().__init__()
        self.requests: list[ModelRequest] = []
        self.errors: list[str] = []
        self.turns_used = 0

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return type("Handler", (_Handler,), {"model": self})

    # what was received
    @property
    def main_requests(self) -> list[ModelRequest]:
        with self._lock:
            return [r for r in self.requests if r.main]

    @property
    def side_requests(self) -> list[ModelRequest]:
        with self._lock:
            return [r for r in self.requests if not r.main]

    def last_main(self) -> ModelRequest:
        main = self.main_requests
        assert main, f"the CLI sent no main request (requests: {[r.path for r in self.requests]})"
        return main[-1]

    def last_tool_results(self) -> list[ToolResult]:
        """The tool_result contents of the last main request."""
        return self.last_main().tool_results()

    def tool_result(self, tool_use_id: str) -> ToolResult:
        """The result the CLI sent back for one scripted tool call (the first main request carrying it)."""
        for request in self.main_requests:
            for result in request.tool_results(last_only=True):
                if result.tool_use_id == tool_use_id:
                    return result
        raise AssertionError(f"no main request carried a tool_result for {tool_use_id!r}")

    def assert_done(self) -> None:
        """The whole script was used and no request went unanswered."""
        left = len(self._turns) - self.turns_used if self._script_fn is None else 0
        assert not self.errors, "scripted model errors: " + "; ".join(self.errors)
        assert left == 0, f"{left} scripted turn(s) were never requested"

    # answering
    def _next_turn(self, request: ModelRequest) -> list[Block]:
        if self._script_fn is not None:
            turn = self._script_fn(request)
            if turn is None:
                self.errors.append(f"main request #{request.index}: the script function returned None")
                return [Text(SCRIPT_EXHAUSTED)]
            return _blocks(turn, request)
        if self.turns_used >= len(self._turns):
            self.errors.append(f"main request #{request.index}: no scripted turn left")
            return [Text(SCRIPT_EXHAUSTED)]
        turn = self._turns[self.turns_used]
        self.turns_used += 1
        return _blocks(turn, request)

    def _answer(self, method: str, path: str, headers: Mapping[str, str], body: Any) -> tuple[int, Any, bool]:
        """(status, payload, stream) for one request; payload is a message dict or a JSON value."""
        with self._lock:
            main = self._is_main(method, path, body)
            index = sum(1 for r in self.requests if r.main) if main else -1
            lowered = {k.lower(): v for k, v in headers.items()}
            request = ModelRequest(method, path, lowered, body, main=main, index=index)
            self.requests.append(request)
        route = path.split("?")[0].rstrip("/")
        if method == "GET" and "/v1/models" in route:
            return 200, {"data": [{"type": "model", "id": "claude-scripted", "display_name": "Scripted"}],
                         "has_more": False, "first_id": "claude-scripted", "last_id": "claude-scripted"}, False
        if method == "POST" and route.endswith("/v1/messages/count_tokens"):
            return 200, {"input_tokens": estimate_tokens(body)}, False
        if method != "POST" or not route.endswith("/v1/messages") or not isinstance(body, dict):
            return 404, {"type": "error", "error": {"type": "not_found_error", "message": f"{method} {path}"}}, False
        model_name = str(body.get("model", "claude-scripted"))
        if main:
            try:
                with self._lock:
                    blocks = self._next_turn(request)
            except Exception as exc:  # a broken script must show in the test, not hang the CLI
                self.errors.append(f"main request #{index}: script raised {exc!r}")
                blocks = [Text(SCRIPT_EXHAUSTED)]
        else:
            reply = self._side_reply(request) if callable(self._side_reply) else self._side_reply
            blocks = [Text(reply)]
        return 200, _message(blocks, model_name, estimate_tokens(body)), bool(body.get("stream"))


class _Handler(QuietHandler):
    model: ScriptedModel

    def _read_body(self) -> Any:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("content-encoding", "").lower() == "gzip":
            raw = gzip.decompress(raw)
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _handle(self, method: str) -> None:
        body = self._read_body() if method == "POST" else None
        status, payload, stream = self.model._answer(method, self.path, dict(self.headers), body)
        if stream:
            data = "".join(f"event: {name}\ndata: {json.dumps(event)}\n\n" for name, event in _sse_events(payload))
            self.send_body(status, data.encode(), "text/event-stream", request_id="req_vlk_scripted")
        else:
            self.send_body(status, json.dumps(payload).encode(), "application/json", request_id="req_vlk_scripted")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_GET(self) -> None:
        self._handle("GET")
