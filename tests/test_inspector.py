"""The server driven by an independent client: the MCP Inspector CLI (TypeScript SDK), pinned in tests/node.

Each Inspector invocation starts its own `python -m vlk_memact` child from a config file that pins the
protocol era, performs one method and exits; state carries over between invocations through the
DATABASE_URL file only. Needs `npm ci --prefix tests/node` (CI fails without it, a dev machine skips).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcp_clients import (
    CONTEXT_HEADER,
    LEGACY_PROTOCOL_VERSION,
    MODERN_PROTOCOL_VERSION,
    RECORD_PREFIX,
    SERVER_ARGS,
    SERVER_COMMAND,
    SYSTEM_ANCHOR,
    TOOL_NAMES,
    server_env,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

NODE_DIR = Path(__file__).parent / "node"
INSPECTOR = NODE_DIR / "node_modules" / ".bin" / "mcp-inspector"
INSPECTOR_PACKAGE = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "inspector" / "package.json"
PINNED_VERSION = json.loads((NODE_DIR / "package.json").read_text())["dependencies"][
    "@modelcontextprotocol/inspector"
]
INSTALL = "npm ci --prefix tests/node"

ERAS = [
    pytest.param("legacy", LEGACY_PROTOCOL_VERSION, id="legacy"),
    pytest.param("modern", MODERN_PROTOCOL_VERSION, id="modern"),
]

ERA_NAMES = ["legacy", "modern"]

EXIT_OK = 0
EXIT_TOOL_ERROR = 5  # the tool returned isError:true, or no such tool


def require_inspector() -> Path:
    """The pinned Inspector binary; skip without it on a dev machine, fail in CI (env CI set)."""
    in_ci = bool(os.environ.get("CI"))

    def missing(reason: str) -> None:
        if in_ci:
            pytest.fail(f"{reason} CI must run `{INSTALL}` before pytest.")
        pytest.skip(f"{reason} Run `{INSTALL}` to enable the MCP Inspector tests.")

    if shutil.which("node") is None:
        missing("`node` is not on PATH.")
    if not INSPECTOR.exists():
        missing(f"{INSPECTOR} is missing.")
    installed = json.loads(INSPECTOR_PACKAGE.read_text())["version"]
    if installed != PINNED_VERSION:
        pytest.fail(f"tests/node has Inspector {installed}, but {PINNED_VERSION} is pinned: run `{INSTALL}`.")
    return INSPECTOR


@dataclass
class Run:
    """One finished Inspector invocation."""

    exit_code: int
    stdout: str
    stderr: str

    @property
    def result(self) -> dict[str, Any]:
        """The MCP result of `--format json` output: {"result": ...} on stdout."""
        assert self.stdout.strip(), f"no output (exit {self.exit_code}); stderr:\n{self.stderr}"
        return json.loads(self.stdout)["result"]

    @property
    def error_envelope(self) -> dict[str, Any]:
        """The one JSON line the CLI writes to stderr on failure: {"error": {"code": ...}}."""
        lines = [line for line in self.stderr.splitlines() if line.startswith('{"error"')]
        assert len(lines) == 1, f"expected one error envelope on stderr, got:\n{self.stderr}"
        return json.loads(lines[0])["error"]

    def describe(self) -> str:
        return f"exit {self.exit_code}\n--- stdout\n{self.stdout[:2000]}\n--- stderr\n{self.stderr[-4000:]}"


class Inspector:
    """Runs `mcp-inspector --cli` against one server entry in a config file, in one protocol era."""

    def __init__(self, binary: Path, workdir: Path, db_file: Path, era: str) -> None:
        self.binary = binary
        self.workdir = workdir
        self.config = workdir / f"mcp-{era}.json"
        entry = {
            "type": "stdio",
            "command": SERVER_COMMAND,
            "args": SERVER_ARGS,
            "env": server_env(db_file),
            "protocolEra": era,
        }
        self.config.write_text(json.dumps({"mcpServers": {"vlk": entry}}, indent=2))
        self.env = {
            **os.environ,
            "MCP_INSPECTOR_SECRET_STORE": "memory",  # no keychain on a headless machine
            "MCP_CLIENT_CONFIG_PATH": str(workdir / "client.json"),  # never touch ~/.mcp-inspector
        }

    def run(self, *args: str) -> Run:
        command = [str(self.binary), "--cli", "--config", str(self.config), "--server", "vlk"]
        command += [*args, "--format", "json", "--quiet"]
        done = subprocess.run(
            command,
            cwd=self.workdir,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
        return Run(done.returncode, done.stdout, done.stderr)

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> Run:
        arguments_json = json.dumps(arguments or {})
        return self.run("--method", "tools/call", "--tool-name", tool, "--tool-args-json", arguments_json)

    def call_ok(self, tool: str, arguments: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        run = self.call(tool, arguments)
        assert run.exit_code == EXIT_OK, run.describe()
        result = run.result
        assert result.get("isError") is not True, run.describe()
        return result["content"][0]["text"], result["structuredContent"]


@pytest.fixture
def inspector_factory(tmp_path: Path):  # noqa: ANN201 - a factory of Inspector
    binary = require_inspector()
    db_file = tmp_path / "vlk.db"
    return lambda era: Inspector(binary, tmp_path, db_file, era)


@pytest.mark.parametrize(("era", "protocol_version"), ERAS)
def test_the_inspector_connects_in_the_configured_protocol_era(
    inspector_factory: Any, era: str, protocol_version: str
) -> None:
    run = inspector_factory(era).run("--method", "initialize")

    assert run.exit_code == EXIT_OK, run.describe()
    assert run.result["protocolVersion"] == protocol_version
    assert run.result["serverInfo"]["name"] == "Vlk MemAct"
    assert "tools" in run.result["capabilities"]


@pytest.mark.parametrize("era", ERA_NAMES)
def test_the_inspector_lists_seven_tools_as_json_without_schema_portability_errors(
    inspector_factory: Any, era: str
) -> None:
    # --strict makes the CLI exit 6 on any error-severity schema portability problem.
    run = inspector_factory(era).run("--method", "tools/list", "--strict")

    assert run.exit_code == EXIT_OK, run.describe()
    tools = run.result["tools"]
    assert {t["name"] for t in tools} == TOOL_NAMES and len(tools) == 7
    for tool in tools:
        assert tool.get("title"), tool["name"]
        assert tool["inputSchema"]["type"] == "object", tool["name"]
        assert tool["outputSchema"]["type"] == "object", tool["name"]


@pytest.mark.parametrize("era", ERA_NAMES)
def test_errors_recorded_by_separate_inspector_runs_are_intercepted_by_a_later_fetch(
    inspector_factory: Any, era: str
) -> None:
    inspector = inspector_factory(era)
    error = "npm ERR! code E404 404 Not Found - GET https://registry.npmjs.org/left-padd"

    recorded = []
    for _ in range(3):
        text, data = inspector.call_ok("vlk_record_state", {"raw_log": error, "file_context": "package.json"})
        assert text.startswith(RECORD_PREFIX + str(data["timeline_id"]))
        recorded.append(data["timeline_id"])
    assert len(set(recorded)) == 3 and data["repeats"] == 3, "each run must see the earlier runs' records"
    assert "is now active 3 times" in data["notice"] and text.endswith("\n" + data["notice"])

    text, context = inspector.call_ok("vlk_fetch_context")
    assert text.startswith(CONTEXT_HEADER)
    assert SYSTEM_ANCHOR in text and context["context"] == text, "both forms carry the context"
    assert len(context["loops"]) == 1
    assert sorted(context["loops"][0]["archived_ids"]) == sorted(recorded)
    anchor_id = context["loops"][0]["anchor_id"]

    text, again = inspector.call_ok("vlk_fetch_context")
    assert SYSTEM_ANCHOR in text and again["loops"] == [] and again["constraint_ids"] == [anchor_id]


@pytest.mark.parametrize("era", ERA_NAMES)
def test_a_tool_error_exits_with_code_5_and_the_server_still_answers_the_next_run(
    inspector_factory: Any, era: str
) -> None:
    inspector = inspector_factory(era)

    run = inspector.call("vlk_revoke_future", {"timeline_id": 424242})
    assert run.exit_code == EXIT_TOOL_ERROR, run.describe()
    assert run.result["isError"] is True
    assert "No FUTURE constraint found with id #424242" in run.result["content"][0]["text"]
    assert run.error_envelope["code"] == "tool_is_error"

    empty_lesson = {"target_timeline_ids": [1], "learning": "", "raw_log_excerpt": "boom"}
    run = inspector.call("vlk_time_travel", empty_lesson)
    assert run.exit_code == EXIT_TOOL_ERROR, run.describe()
    assert "'learning' is required" in run.result["content"][0]["text"]

    run = inspector.call("vlk_no_such_tool")
    assert run.exit_code == EXIT_TOOL_ERROR, run.describe()
    assert run.error_envelope["code"] == "tool_not_found"

    _, summary = inspector.call_ok("vlk_summarize_session")
    assert (summary["total"], summary["future"]) == (0, 0), "failed calls must not have stored anything"
