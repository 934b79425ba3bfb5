"""The real OpenCode CLI (pinned in tests/opencode) headless against a scripted model on loopback.

`run_opencode` starts `opencode run --format json` with an isolated HOME and XDG folders, a global
`opencode.json` that declares one provider (`@ai-sdk/openai-compatible`, base URL = the scripted
server of tests/scripted_openai.py) and allows bash, and every switch that keeps OpenCode from
reaching the network for itself (models list, updates, LSP downloads, sharing).

On its start OpenCode installs `@opencode-ai/plugin` into each config folder (`~/.config/opencode`, each
`.opencode`) with its built-in npm, unless the folder's node_modules and package-lock.json already hold
it: ~6 s and 128 MB written per fresh workspace. `seed_plugin_sdk` gives each folder that package as the
pinned one of tests/opencode (the same version, installed by `npm ci --prefix tests/opencode`), so a run
starts without installing anything. What it still fetches goes through npm's cache under
tests/opencode/.cache (ignored by git): once per checkout, not once per test.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from host_harness import Workspace, clean_env, git_project, json_events, run_headless
from scripted_openai import MODEL, Reply, ScriptedOpenAI, call

ROOT = Path(__file__).resolve().parent.parent
CLI_DIR = ROOT / "tests" / "opencode"
OPENCODE = CLI_DIR / "node_modules" / "opencode-linux-x64" / "bin" / "opencode"
PLUGIN_TYPES = CLI_DIR / "node_modules" / "@opencode-ai" / "plugin" / "dist" / "index.d.ts"
CACHE = CLI_DIR / ".cache"
INSTALL = "npm ci --prefix tests/opencode"
PROVIDER = "fake"


def shell(command: str, description: str = "run it") -> Reply:
    """A scripted reply: the model calls OpenCode's bash tool."""
    return call("bash", command=command, description=description)


def missing_cli() -> str | None:
    """Why the pinned CLI cannot run here, or None."""
    if not OPENCODE.exists():
        return f"the pinned OpenCode CLI is not installed ({OPENCODE} missing); run `{INSTALL}`"
    return None


def write_config(home: Path, base_url: str, extra: Mapping[str, Any] | None = None) -> Path:
    """The user's opencode.json: the scripted provider, bash allowed, nothing automatic."""
    config: dict[str, Any] = {
        "$schema": "https://opencode.ai/config.json",
        "model": f"{PROVIDER}/{MODEL}",
        "small_model": f"{PROVIDER}/{MODEL}",
        "autoupdate": False,
        "share": "disabled",
        "permission": {"bash": "allow", "edit": "allow", "read": "allow", "external_directory": "allow"},
        "provider": {PROVIDER: {
            "npm": "@ai-sdk/openai-compatible",
            "name": "scripted",
            "options": {"baseURL": base_url, "apiKey": "test-key-not-checked"},
            "models": {MODEL: {"name": MODEL, "tool_call": True, "limit": {"context": 100000, "output": 4096}}},
        }},
    }
    config.update(extra or {})
    path = home / ".config" / "opencode" / "opencode.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return path


def workspace(tmp_path: Path, api: ScriptedOpenAI, project: Path | None = None) -> Workspace:
    """A HOME whose opencode.json points at `api`, and a git project; vlk-memact not installed yet."""
    home = tmp_path / "home"
    write_config(home, api.base_url)
    return Workspace("opencode", home, project or git_project(tmp_path / "project"), tmp_path / "vlk.db", api,
                     run_opencode, {"XDG_CONFIG_HOME": str(home / ".config")})


def cli_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment: temporary HOME and XDG folders, OpenCode's network switches off."""
    CACHE.mkdir(parents=True, exist_ok=True)
    return clean_env(
        home, extra,
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_CACHE_HOME=str(CACHE),
        npm_config_cache=str(CACHE / "npm"),  # what OpenCode installs comes from npm once per checkout
        OPENCODE_DISABLE_MODELS_FETCH="1",
        OPENCODE_DISABLE_AUTOUPDATE="1",
        OPENCODE_DISABLE_LSP_DOWNLOAD="1",
        OPENCODE_DISABLE_SHARE="1",
        OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
    )


PLUGIN_SDK = "@opencode-ai/plugin"
PINNED_SDK = json.loads((CLI_DIR / "package.json").read_text(encoding="utf-8"))["dependencies"][PLUGIN_SDK]


def seed_plugin_sdk(folder: Path) -> None:
    """Give an OpenCode config folder the plugin SDK it would install on start, as OpenCode checks it:
    node_modules present, and every dependency of package.json (and the SDK) in package-lock.json. A folder
    with a node_modules or other dependencies of its own is left to OpenCode."""
    package, lock, modules = folder / "package.json", folder / "package-lock.json", folder / "node_modules"
    if not folder.is_dir() or modules.exists() or modules.is_symlink():
        return
    wanted = {PLUGIN_SDK: PINNED_SDK}
    if package.exists() and json.loads(package.read_text(encoding="utf-8")).get("dependencies") != wanted:
        return
    package.write_text(json.dumps({"dependencies": wanted}, indent=2) + "\n", encoding="utf-8")
    lock.write_text(json.dumps({"name": folder.name, "lockfileVersion": 3, "requires": True,
                                "packages": {"": {"dependencies": wanted}}}, indent=2) + "\n", encoding="utf-8")
    modules.symlink_to(CLI_DIR / "node_modules", target_is_directory=True)


def run_opencode(
    prompt: str,
    *,
    home: Path,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    args: Iterable[str] = (),
    timeout: float = 240,
) -> subprocess.CompletedProcess[str]:
    """`opencode run --format json PROMPT` headless in `cwd`, with HOME=`home` (write_config first)."""
    assert OPENCODE.exists(), missing_cli()
    for folder in (home / ".config" / "opencode", cwd / ".opencode"):
        seed_plugin_sdk(folder)
    command = [str(OPENCODE), "run", "--format", "json", "-m", f"{PROVIDER}/{MODEL}", *args, prompt]
    return run_headless(command, cwd=cwd, env=cli_env(home, env), timeout=timeout)


def session_id(result: subprocess.CompletedProcess[str]) -> str | None:
    """The session the run used (every event names it)."""
    for event in json_events(result):
        sid = event.get("sessionID") or (event.get("part") or {}).get("sessionID")
        if isinstance(sid, str):
            return sid
    return None
