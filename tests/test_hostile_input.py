"""Hostile protocol input, generated: one long-lived stdio server must survive all of it.

A single `python -m vlk_memact` child per module, initialized once, is fed thousands of generated
lines: random bytes, random JSON, JSON-RPC shapes with wrong types, unknown methods, and tools/call
with random tool names and argument objects (every parameter of every tool with wrong types, huge
strings, deep nesting, lone surrogates, invalid UTF-8). After EACH hostile line a valid request
(`ping`, or `tools/list` now and then) with a fresh id must be answered, and every line the server
writes must be JSON-RPC output. Generation is derandomized, so CI sees the same inputs every run.

The tests are the steps of that one session, in the order of this file: the last two end the server and
read its log. So the module runs on one xdist worker (xdist_group) and keeps its order under
`--random-order` (random_order(disabled=True)); it still runs anywhere among the other modules.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_clients import TOOL_NAMES, server_env
from stdio_harness import ServerPipe

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240), pytest.mark.xdist_group("hostile_input"),
              pytest.mark.random_order(disabled=True)]

PROBE_TIMEOUT = 30.0
TOOLS_LIST_EVERY = 10  # every 10th probe is tools/list (7 tools), the others ping


def examples(count: int) -> settings:
    return settings(
        max_examples=count,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )


class HostileSession:
    """The server child plus bookkeeping: how many hostile inputs it took, and the probe counter."""

    def __init__(self, server: ServerPipe, stderr_file: Path) -> None:
        self.server = server
        self.stderr_file = stderr_file
        self.inputs = 0
        self.by_kind: dict[str, int] = {}

    def survive(self, kind: str, line: bytes) -> None:
        """Send one hostile line, then prove the server still answers a valid request."""
        self.inputs += 1
        self.by_kind[kind] = self.by_kind.get(kind, 0) + 1
        self.server.send_line(line)
        probe_number = self.inputs
        method = "tools/list" if probe_number % TOOLS_LIST_EVERY == 0 else "ping"
        probe = self.server.request(method, request_id=f"alive-{probe_number}")
        (response,) = self.server.wait_for(probe, timeout=PROBE_TIMEOUT)
        assert "result" in response, (kind, line[:300], response)
        if method == "ping":
            assert response["result"] == {}, response
        else:
            assert {t["name"] for t in response["result"]["tools"]} == TOOL_NAMES, response


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileSession]:
    folder = tmp_path_factory.mktemp("hostile")
    stderr_file = folder / "server.stderr"
    with stderr_file.open("wb") as stderr:
        server = ServerPipe(server_env(folder / "vlk.db", VLK_PROJECT="hostile-input"), stderr)
    try:
        server.initialize()
        yield HostileSession(server, stderr_file)
    finally:
        server.kill()


# ---------------------------------------------------------------- strategies

SURROGATES = st.integers(0xD800, 0xDFFF).map(chr)
ODD_CHARACTERS = st.sampled_from('\x00\u2028\u2029\ufeff\r\t"\\')
# Any text, sometimes with a lone surrogate or an odd character inside (json.dumps escapes them as \uXXXX).
TEXT = st.one_of(
    st.text(max_size=30),
    st.tuples(st.text(max_size=8), st.one_of(SURROGATES, ODD_CHARACTERS), st.text(max_size=8)).map("".join),
)
# Rare but present: strings of 64 KiB and of ~1 MB (above the raw_log and field limits).
HUGE_TEXT = st.sampled_from([2**16, 2**20]).map(lambda n: "E" * (n - 20) + " RuntimeError: huge")
NUMBERS = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, -1, 2**31, 2**63, -(2**63) - 1, 1e308, -0.0, 0.5]),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXT)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(TEXT, inner, max_size=5),
    max_leaves=12,
)


@st.composite
def argument_values(draw: st.DrawFn) -> Any:
    """Any JSON value for a tool argument; one in 40 is a huge string."""
    return draw(HUGE_TEXT if draw(st.integers(0, 39)) == 0 else JSON_VALUES)


def deep(depth: int, kind: str) -> str:
    """JSON nested `depth` levels deep, written as text (json.dumps would hit the recursion limit)."""
    if kind == "array":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


def encode(value: Any) -> bytes:
    """JSON text; lone surrogates become \\udXXX escapes, NaN becomes the non-JSON token NaN."""
    return json.dumps(value, ensure_ascii=True).encode("ascii")


# Methods a client may call; wrong shapes and unknown names are built around them.
KNOWN_METHODS = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "prompts/list",
    "logging/setLevel",
    "completion/complete",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
]
PARAMETERS = {  # every parameter of every tool
    "raw_log",
    "file_context",
    "tool_payload",
    "session_id",
    "max_tokens",
    "limit",
    "query",
    "target_timeline_ids",
    "learning",
    "raw_log_excerpt",
    "constraint_type",
    "scope",
    "timeline_id",
}
WRONG_ID = st.one_of(
    st.dictionaries(TEXT, SCALARS, max_size=3),
    st.lists(SCALARS, max_size=3),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.integers(min_value=2**63),
    TEXT,
)


@st.composite
def wrong_shapes(draw: st.DrawFn) -> bytes:
    """JSON-RPC-looking objects where some member has the wrong type or is missing."""
    message: dict[str, Any] = {}
    if draw(st.booleans()):
        message["jsonrpc"] = draw(st.one_of(st.just("2.0"), st.just("1.0"), st.just(2.0), SCALARS))
    if draw(st.booleans()):
        message["id"] = draw(WRONG_ID)
    message["method"] = draw(st.one_of(st.sampled_from(KNOWN_METHODS), SCALARS, JSON_VALUES))
    if draw(st.booleans()):
        message["params"] = draw(st.one_of(SCALARS, st.lists(SCALARS, max_size=4), JSON_VALUES))
    for extra in draw(
        st.lists(st.sampled_from(["result", "error", "extra", "_meta"]), max_size=2, unique=True)
    ):
        message[extra] = draw(JSON_VALUES)
    return encode(message)


@st.composite
def unknown_methods(draw: st.DrawFn) -> bytes:
    method = draw(TEXT.filter(lambda m: m not in KNOWN_METHODS))
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if draw(st.booleans()):  # a request, else a notification
        message["id"] = draw(st.one_of(st.integers(0, 2**53), TEXT.map(lambda t: "hostile-" + t)))
    if draw(st.booleans()):
        message["params"] = draw(st.dictionaries(TEXT, JSON_VALUES, max_size=4))
    return encode(message)


@st.composite
def tool_calls(draw: st.DrawFn) -> bytes:
    """tools/call with a random (mostly real) tool name and arguments of random types and sizes."""
    name = draw(st.one_of(st.sampled_from(sorted(TOOL_NAMES)), TEXT, JSON_VALUES))
    arguments: Any
    if draw(st.integers(0, 9)) == 0:  # not an object at all
        arguments = draw(st.one_of(SCALARS, st.lists(SCALARS, max_size=3)))
    else:
        keys = draw(st.lists(st.one_of(st.sampled_from(sorted(PARAMETERS)), TEXT), max_size=6, unique=True))
        arguments = {key: draw(argument_values()) for key in keys}
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if draw(st.booleans()):
        params["_meta"] = draw(JSON_VALUES)
    return encode(
        {"jsonrpc": "2.0", "id": draw(st.integers(0, 2**53)), "method": "tools/call", "params": params}
    )


@st.composite
def deep_nesting(draw: st.DrawFn) -> bytes:
    depth = draw(st.sampled_from([64, 1000, 10_000, 100_000]))
    kind = draw(st.sampled_from(["array", "object"]))
    where = draw(st.sampled_from(["line", "params", "arguments", "id"]))
    nested = deep(depth, kind)
    if where == "line":
        return nested.encode()
    if where == "id":
        return f'{{"jsonrpc":"2.0","id":{nested},"method":"ping"}}'.encode()
    if where == "params":
        return f'{{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{nested}}}'.encode()
    tool = draw(st.sampled_from(sorted(TOOL_NAMES)))
    return (
        f'{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"{tool}",'
        f'"arguments":{{"raw_log":{nested},"tool_payload":{nested}}}}}}}'
    ).encode()


RAW_BYTES = st.binary(max_size=300).map(lambda b: b.replace(b"\n", b" "))
NON_JSON_NUMBERS = st.sampled_from(
    [b"NaN", b"Infinity", b"-Infinity", b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}']
)


# ---------------------------------------------------------------- the tests (they share one server, in order)


@examples(250)
@given(line=st.one_of(RAW_BYTES, NON_JSON_NUMBERS))
def test_random_bytes_and_invalid_utf8_lines_never_stop_the_server(
    hostile: HostileSession, line: bytes
) -> None:
    hostile.survive("bytes", line)


@examples(250)
@given(value=JSON_VALUES)
def test_random_json_values_never_stop_the_server(hostile: HostileSession, value: Any) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        value = str(value)
    hostile.survive("json", encode(value))


@examples(500)
@given(line=wrong_shapes())
def test_json_rpc_shapes_with_wrong_types_never_stop_the_server(hostile: HostileSession, line: bytes) -> None:
    hostile.survive("shape", line)


@examples(200)
@given(line=unknown_methods())
def test_unknown_methods_and_notifications_never_stop_the_server(
    hostile: HostileSession, line: bytes
) -> None:
    hostile.survive("unknown-method", line)


@examples(760)
@given(line=tool_calls())
def test_tool_calls_with_random_names_and_wrongly_typed_arguments_never_stop_the_server(
    hostile: HostileSession, line: bytes
) -> None:
    hostile.survive("tools/call", line)


@examples(40)
@given(line=deep_nesting())
def test_deeply_nested_json_anywhere_in_a_message_never_stops_the_server(
    hostile: HostileSession, line: bytes
) -> None:
    hostile.survive("deep", line)


def test_a_tools_call_whose_tool_name_is_an_object_or_an_array_is_an_invalid_params_error(
    hostile: HostileSession,
) -> None:
    # Found by the generated tool calls above: an unhashable name must not crash the unknown-tool guard.
    for name in ({"name": "vlk_record_state"}, ["vlk_record_state"]):
        response = hostile.server.call("tools/call", {"name": name, "arguments": {"raw_log": "x"}})
        assert response["error"]["code"] == -32602, response


def test_after_all_hostile_input_the_server_is_alive_still_serves_tools_and_exits_0_on_eof(
    hostile: HostileSession,
) -> None:
    server = hostile.server
    assert server.process.poll() is None, "the server died"
    record = server.wait_for(
        server.tool_request("vlk_record_state", {"raw_log": "still serving after the hostile input"})
    )[0]
    assert record["result"].get("isError") is not True, record
    assert record["result"]["structuredContent"]["timeline_id"] > 0

    exit_code = server.close_stdin_and_wait(timeout=30)
    print(
        f"\n[hostile input] {hostile.inputs} generated hostile lines, each followed by an answered probe "
        f"({hostile.by_kind}); {server.lines_read} stdout lines, all JSON-RPC "
        f"(error codes: {dict(server.error_codes)}); exit code {exit_code}"
    )
    assert exit_code == 0


def test_no_hostile_input_made_the_server_log_a_traceback(hostile: HostileSession) -> None:
    """Runs last: by then the server has exited and its stderr is complete."""
    hostile.server.kill()
    stderr = hostile.stderr_file.read_text(encoding="utf-8", errors="replace")
    crashes = Counter(line for line in stderr.splitlines() if re.match(r"^\w+(Error|Exception)\b", line))
    tracebacks = stderr.count("Traceback (most recent call last)")
    assert tracebacks == 0, (
        f"{tracebacks} unhandled exceptions logged: {dict(crashes)}; the last:\n{stderr[-2500:]}"
    )
