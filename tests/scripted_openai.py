"""A scripted OpenAI-compatible model on loopback, for the OpenCode and Codex CLI end-to-end tests.

It speaks the two wire formats these hosts use, streamed as server-sent events with chunked transfer
framing (OpenCode's Bun fetch rejects a close-delimited stream and retries for about 90 s):
- `POST .../chat/completions` (OpenCode through `@ai-sdk/openai-compatible`);
- `POST .../responses` (Codex CLI, `wire_api = "responses"`).
Every request is kept, so a test reads exactly what the model was shown. A request that offers tools
is an agent turn and gets the next scripted reply (`shell(...)`, `call(...)`, `text(...)`); any other
request (a session title, a summary) gets a short text. Nothing here knows about vlk-memact; the server
plumbing is tests/host_harness.py's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from host_harness import QuietHandler, RecordedRequest, ScriptedServer

MODEL = "m1"


@dataclass(frozen=True)
class Reply:
    """One scripted model reply: a tool call (name, arguments) or a text."""

    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    text: str | None = None


def call(name: str, **args: Any) -> Reply:
    return Reply(tool=name, args=args)


def text(value: str) -> Reply:
    return Reply(text=value)


class Request(RecordedRequest):
    """A chat/completions or responses request, read as the model would read it."""

    def messages(self) -> list[dict[str, Any]]:
        """Chat messages (chat/completions) or input items (responses)."""
        items = self.body.get("messages")
        if items is None:
            items = self.body.get("input")
        return items if isinstance(items, list) else []

    @staticmethod
    def _item_text(item: Any) -> str:
        if not isinstance(item, dict):
            return str(item)
        chunks: list[str] = []
        content = item.get("content")
        if isinstance(content, str):
            chunks.append(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict):
                    chunks.append(str(part.get("text", "")))
        output = item.get("output")  # responses: function_call_output
        if isinstance(output, str):
            chunks.append(output)
        elif isinstance(output, list):
            chunks.extend(str(p.get("text", "")) for p in output if isinstance(p, dict))
        return "\n".join(c for c in chunks if c)

    def system(self) -> str:
        """The system prompt (chat) or instructions plus system/developer messages (responses)."""
        chunks = [str(self.body.get("instructions") or "")]
        chunks += [self._item_text(m) for m in self.messages()
                   if isinstance(m, dict) and m.get("role") in ("system", "developer")]
        return "\n".join(c for c in chunks if c)

    def text(self) -> str:
        """Everything the model is shown in this request, as one string."""
        return "\n".join([self.system(), *(self._item_text(m) for m in self.messages()
                                          if not (isinstance(m, dict) and m.get("role") in ("system",)))])

    def since_last_call(self) -> str:
        """What this request adds after the model's last tool call: that call's result and anything the host
        put next to it (a developer message, appended output)."""
        items = self.messages()
        last = 0
        for i, item in enumerate(items):
            if isinstance(item, dict) and (item.get("tool_calls") or item.get("type") == "function_call"):
                last = i + 1
        return "\n".join(self._item_text(m) for m in items[last:])


class ScriptedOpenAI(ScriptedServer[Request, Reply]):
    """A loopback OpenAI-compatible API that answers agent turns from a script and records every request."""

    url_path = "/v1"

    def __init__(self) -> None:
        super().__init__(done=text("done."), side=text("ok"))

    # ---- chat/completions --------------------------------------------------------------------------

    def chat_events(self, request: Request) -> list[str]:
        reply, n = self.take(request)
        base = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 0, "model": MODEL}
        if reply.tool:
            delta = {"role": "assistant", "content": None, "tool_calls": [{
                "index": 0, "id": f"call_{n}", "type": "function",
                "function": {"name": reply.tool, "arguments": json.dumps(reply.args)}}]}
            finish = "tool_calls"
        else:
            delta = {"role": "assistant", "content": reply.text}
            finish = "stop"
        chunks = [
            {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
             "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}},
        ]
        return [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]

    # ---- responses -----------------------------------------------------------------------------------

    def responses_events(self, request: Request) -> list[str]:
        reply, n = self.take(request)
        rid = f"resp_{n}"
        if reply.tool:
            item: dict[str, Any] = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}",
                                    "name": reply.tool, "arguments": json.dumps(reply.args), "status": "completed"}
        else:
            item = {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": reply.text, "annotations": []}]}
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
        events = [
            ("response.created", {"type": "response.created",
                                  "response": {"id": rid, "object": "response", "status": "in_progress",
                                               "model": MODEL, "output": []}}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                            "item": {**item, "status": "in_progress"}}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed",
                                    "response": {"id": rid, "object": "response", "status": "completed",
                                                 "model": MODEL, "output": [item], "usage": usage}}),
        ]
        return [f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events]

    # ---- the server ----------------------------------------------------------------------------------

    def handler(self) -> type[QuietHandler]:
        api = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    models = {"object": "list", "data": [{"id": MODEL, "object": "model"}]}
                    self.send_body(200, json.dumps(models).encode(), "application/json")
                else:
                    self.send_body(404, b"{}", "application/json")

            def do_POST(self) -> None:
                body = self.read_json()
                request = Request(self.path, body if isinstance(body, dict) else {})
                path = self.path.split("?")[0].rstrip("/")
                if path.endswith("/chat/completions"):
                    events = api.chat_events(request)
                elif path.endswith("/responses"):
                    events = api.responses_events(request)
                else:
                    self.send_body(404, b'{"error": {"message": "not scripted"}}', "application/json")
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for event in events:
                    data = event.encode()
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        return Handler


def host_fixtures(workspace: Any, shell: Any, session_id: Any) -> tuple[Any, Any, Any]:
    """The fixtures every real-CLI module of an OpenAI-API host (Codex, OpenCode) starts from: `api` (one scripted
    model for the module's sessions, which run one after another), `ws` (a fresh installed workspace per test) and
    `loop` (the module's loop session, run once). Assign them at module level: `api, ws, loop = host_fixtures(...)`."""
    import pytest
    from host_harness import run_loop

    @pytest.fixture(scope="module")
    def api() -> Any:
        with ScriptedOpenAI() as server:
            yield server

    @pytest.fixture
    def ws(tmp_path: Any, api: ScriptedOpenAI) -> Any:
        return workspace(tmp_path, api).installed()

    @pytest.fixture(scope="module")
    def loop(tmp_path_factory: Any, api: ScriptedOpenAI) -> Any:
        root = tmp_path_factory.mktemp("loop")
        return run_loop(workspace(root, api).installed(), root, shell, text("stopped."), session_id=session_id)

    return api, ws, loop
