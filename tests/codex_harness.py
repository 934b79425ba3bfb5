"""The real Codex CLI (pinned in tests/codex) headless against a scripted model on loopback.

`run_codex` starts `codex exec --json` with an isolated HOME and CODEX_HOME whose config.toml declares
one model provider (`wire_api = "responses"`, base URL = the scripted server of tests/scripted_openai.py),
no approvals and no sandbox (the hooks, not the sandbox, are under test). Codex's shell tool is
`exec_command` with `{cmd}`; its hooks see it as `Bash` with `{command}`.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from host_harness import Workspace, clean_env, git_project, json_events, run_headless
from scripted_openai import MODEL, Reply, ScriptedOpenAI, call

ROOT = Path(__file__).resolve().parent.parent
CLI_DIR = ROOT / "tests" / "codex"
CODEX = CLI_DIR / "node_modules" / "@openai" / "codex" / "bin" / "codex.js"
INSTALL = "npm ci --prefix tests/codex"
BYPASS_TRUST = "--dangerously-bypass-hook-trust"


def shell(command: str) -> Reply:
    """A scripted reply: the model calls Codex's exec_command."""
    return call("exec_command", cmd=command)


def missing_cli() -> str | None:
    if not CODEX.exists():
        return f"the pinned Codex CLI is not installed ({CODEX} missing); run `{INSTALL}`"
    return None


def write_config(home: Path, base_url: str, extra: str = "") -> Path:
    """$CODEX_HOME/config.toml: the scripted provider, never ask, no sandbox."""
    path = home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'''model = "{MODEL}"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.fake]
name = "scripted"
base_url = "{base_url}"
wire_api = "responses"
env_key = "FAKE_API_KEY"
{extra}''', encoding="utf-8")
    return path


def workspace(tmp_path: Path, api: ScriptedOpenAI) -> Workspace:
    """A CODEX_HOME whose config.toml points at `api`, and a git project; vlk-memact not installed yet."""
    home = tmp_path / "home"
    write_config(home, api.base_url)
    return Workspace("codex", home, git_project(tmp_path / "project"), tmp_path / "vlk.db", api, run_codex,
                     {"CODEX_HOME": str(home / ".codex"), "VLK_CODEX_BIN": str(CODEX)})


def cli_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    return clean_env(home, extra, CODEX_HOME=str(home / ".codex"), FAKE_API_KEY="test-key-not-checked")


def run_codex(
    prompt: str,
    *,
    home: Path,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    args: Iterable[str] = (BYPASS_TRUST,),
    timeout: float = 240,
) -> subprocess.CompletedProcess[str]:
    """`codex exec --json PROMPT` headless in `cwd`, with HOME=`home` (write_config first)."""
    assert CODEX.exists(), missing_cli()
    command = [str(CODEX), "exec", "--json", "--skip-git-repo-check", *args, prompt]
    return run_headless(command, cwd=cwd, env=cli_env(home, env), timeout=timeout)


def thread_id(result: subprocess.CompletedProcess[str]) -> str | None:
    """The session id (Codex's thread id, the hooks' session_id)."""
    for event in json_events(result):
        if event.get("type") == "thread.started":
            return event.get("thread_id")
    return None
