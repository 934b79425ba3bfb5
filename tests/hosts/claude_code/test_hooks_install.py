"""`vlk-memact install|uninstall claude-code` on Claude Code's files: merging, idempotence, backups, exact removal,
the plugin exclusion, what `installations()` reports; and the plugin shipped at the repository root."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from vlk_memact import InvalidInput
from vlk_memact.hosts.claude_code import install

ROOT = Path(__file__).resolve().parents[3]
THEIR_HOOK = {"type": "command", "command": "/usr/local/bin/lint-on-save", "timeout": 30}


@pytest.fixture
def where(tmp_path: Path) -> tuple[Path, Path]:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    return project, home


def backups_of(path: Path) -> list[Path]:
    """The backups install made of path: in the user data directory (tests/conftest.py gives it its own)."""
    folder = Path(os.environ["XDG_DATA_HOME"]) / "vlk-memact" / "backups" / "claude-code"
    flat = str(path.resolve()).strip(os.sep).replace(os.sep, "_")
    return sorted(folder.glob(f"*-{flat}"))


def read(path: Path) -> Any:
    return json.loads(path.read_text())


def write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))


def test_install_writes_every_hook_in_exec_form_with_timeouts_and_the_server(where: tuple[Path, Path]) -> None:
    project, home = where
    install.apply(install.plan_install("local", project, home))
    settings = read(project / ".claude" / "settings.local.json")
    assert set(settings["hooks"]) == set(install.HOOK_EVENTS)
    command, prefix = install.executable()
    for event, groups in settings["hooks"].items():
        [group] = groups
        assert group.get("matcher") == install.HOOK_EVENTS[event]
        assert group["hooks"] == [{"type": "command", "command": command, "args": [*prefix, "hook", "claude-code"],
                                   "timeout": install.HOOK_TIMEOUT_SECONDS}]
    server = read(home / ".claude.json")["projects"][str(project)]["mcpServers"]["vlk-memact"]
    assert server["command"] == command and server["args"] == [*prefix, "serve"]
    assert server["env"] == {install.MARKER: install.MARKER_VALUE}


@pytest.mark.parametrize(("scope", "settings_file", "mcp_file"), [
    ("project", "project/.claude/settings.json", "project/.mcp.json"),
    ("user", "home/.claude/settings.json", "home/.claude.json"),
    ("local", "project/.claude/settings.local.json", "home/.claude.json"),
])
def test_each_scope_writes_its_files(where: tuple[Path, Path], scope: str, settings_file: str, mcp_file: str) -> None:
    project, home = where
    changes = install.plan_install(scope, project, home)
    base = project.parent
    assert {c.path for c in changes} == {base / settings_file, base / mcp_file}


def test_install_merges_is_idempotent_keeps_a_backup_and_uninstall_restores_exactly(where: tuple[Path, Path]) -> None:
    project, home = where
    settings = project / ".claude" / "settings.local.json"
    original = {"model": "opus", "hooks": {"PostToolUse": [{"matcher": "Edit|Write", "hooks": [THEIR_HOOK]}],
                                           "Stop": [{"hooks": [THEIR_HOOK]}]}}
    write(settings, original)
    claude_json = {"theme": "dark", "projects": {str(project): {"allowedTools": [], "mcpServers": {
        "github": {"command": "gh-mcp"}}}}}
    write(home / ".claude.json", claude_json)

    install.apply(install.plan_install("local", project, home))
    merged = read(settings)
    assert merged["model"] == "opus" and merged["hooks"]["Stop"] == original["hooks"]["Stop"]
    assert merged["hooks"]["PostToolUse"][0] == original["hooks"]["PostToolUse"][0]
    assert len(merged["hooks"]["PostToolUse"]) == 2
    backups = backups_of(settings)
    assert len(backups) == 1 and read(backups[0]) == original
    assert sorted(settings.parent.iterdir()) == [settings]  # no backup beside the file, in the repository
    assert read(home / ".claude.json")["projects"][str(project)]["mcpServers"]["github"] == {"command": "gh-mcp"}

    assert install.plan_install("local", project, home) == []  # idempotent: nothing to change, no new backup
    install.apply(install.plan_install("local", project, home))
    assert len(backups_of(settings)) == 1

    install.apply(install.plan_uninstall(install.SCOPES, project, home))
    assert read(settings) == original
    assert read(home / ".claude.json") == claude_json
    assert install.plan_uninstall(install.SCOPES, project, home) == []


def test_uninstall_keeps_a_handler_sharing_our_group_and_a_server_entry_we_did_not_write(
    where: tuple[Path, Path]
) -> None:
    project, home = where
    install.apply(install.plan_install("project", project, home))
    settings = project / ".claude" / "settings.json"
    data = read(settings)
    data["hooks"]["PreToolUse"][0]["hooks"].append(THEIR_HOOK)  # the user added theirs to our group
    write(settings, data)
    mcp = project / ".mcp.json"
    write(mcp, {"mcpServers": {"vlk-memact": {"command": "vlk-memact", "env": {"DATABASE_URL": "sqlite:///x"}}}})
    notes = install.plan_install("project", project, home)
    assert any("kept your own MCP server entry" in n for c in notes for n in c.notes)
    install.apply(install.plan_uninstall(("project",), project, home))
    assert read(settings) == {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [THEIR_HOOK]}]}}
    assert read(mcp)["mcpServers"]["vlk-memact"]["env"] == {"DATABASE_URL": "sqlite:///x"}


def test_a_reinstall_keeps_what_the_user_added_to_our_server_entry(where: tuple[Path, Path]) -> None:
    project, home = where
    install.apply(install.plan_install("user", project, home))
    data = read(home / ".claude.json")
    data["mcpServers"]["vlk-memact"]["env"]["DATABASE_URL"] = "postgresql://team@db/vlk"
    data["mcpServers"]["vlk-memact"]["args"] = ["old"]
    write(home / ".claude.json", data)
    install.apply(install.plan_install("user", project, home))
    entry = read(home / ".claude.json")["mcpServers"]["vlk-memact"]
    assert entry["env"]["DATABASE_URL"] == "postgresql://team@db/vlk" and entry["args"][-1] == "serve"


def test_a_settings_file_that_is_not_json_is_refused_untouched(where: tuple[Path, Path]) -> None:
    project, home = where
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text("{ not json")
    with pytest.raises(InvalidInput, match="not readable JSON"):
        install.plan_install("local", project, home)
    assert settings.read_text() == "{ not json"


def test_install_refuses_when_the_plugin_is_installed(where: tuple[Path, Path]) -> None:
    project, home = where
    # The file as `claude plugin install vlk-memact@vlk-memact` writes it (Claude Code 2.1.328).
    write(home / ".claude" / "plugins" / "installed_plugins.json", {"version": 2, "plugins": {
        "vlk-memact@vlk-memact": [{"scope": "user", "installPath": str(home / "cache"), "version": "0.1.0"}]}})
    with pytest.raises(InvalidInput, match="plugin is installed"):
        install.plan_install("local", project, home)


def test_install_refuses_when_the_plugin_is_enabled_in_a_settings_file(where: tuple[Path, Path]) -> None:
    project, home = where
    write(project / ".claude" / "settings.json", {"enabledPlugins": {"vlk-memact@team-tools": True}})
    with pytest.raises(InvalidInput, match="plugin is installed"):
        install.plan_install("user", project, home)


def test_installations_lists_hooks_servers_and_plugins_with_their_commands(where: tuple[Path, Path]) -> None:
    project, home = where
    assert install.installations(project, home) == []
    install.apply(install.plan_install("project", project, home))
    found = install.installations(project, home)
    assert sorted(i.name for i in found if i.kind == "hook") == sorted(install.HOOK_EVENTS)
    assert [(i.kind, i.scope, i.name) for i in found if i.kind == "mcp"] == [("mcp", "project", "vlk-memact")]
    assert all(i.executable_exists for i in found)
    write(project / ".claude" / "settings.local.json",
          {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "/gone/vlk-memact",
                                               "args": ["hook", "claude-code"]}]}]}})
    stale = [i for i in install.installations(project, home) if i.scope == "local"]
    assert [(i.kind, i.executable_exists) for i in stale] == [("hook", False)]


def test_doubled_names_settings_hooks_beside_the_plugin_and_different_handlers(where: tuple[Path, Path]) -> None:
    project, home = where
    install.apply(install.plan_install("local", project, home))
    assert install.doubled(install.installations(project, home)) == []
    write(home / ".claude" / "settings.json", {"hooks": {"PreToolUse": [{"hooks": [
        {"type": "command", "command": "/old/venv/bin/vlk-memact", "args": ["hook", "claude-code"]}]}]}})
    write(project / ".claude" / "settings.json", {"enabledPlugins": {"vlk-memact@vlk-memact": True}})
    problems = install.doubled(install.installations(project, home))
    assert len(problems) == 2
    assert "plugin" in problems[0] and problems[1].startswith("PreToolUse runs 2 different vlk-memact hooks")


def test_the_cli_dry_run_writes_nothing(where: tuple[Path, Path]) -> None:
    project, home = where
    done = subprocess.run([sys.executable, "-m", "vlk_memact", "install", "claude-code", "--dry-run"], cwd=project,
                          env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "settings.local.json: would add the SessionStart, UserPromptSubmit, PreToolUse" in done.stdout
    assert done.stdout.endswith("Dry run: nothing was written.\n")
    assert "is in no git repository" in done.stderr  # the project folder is no repository: said, not silent
    assert not (project / ".claude").exists() and not (home / ".claude.json").exists()
    refused = subprocess.run([sys.executable, "-m", "vlk_memact", "uninstall", "claude-code"], cwd=project,
                             env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                             timeout=60)
    assert refused.returncode == 0 and "Nothing changed: vlk-memact was not installed for Claude Code." in refused.stdout


# ---- the plugin at the repository root ----


def test_the_plugin_files_run_the_same_hooks_as_install() -> None:
    manifest = read(ROOT / ".claude-plugin" / "plugin.json")
    marketplace = read(ROOT / ".claude-plugin" / "marketplace.json")
    assert manifest["name"] == install.PLUGIN_NAME
    [entry] = marketplace["plugins"]
    assert entry["name"] == manifest["name"] and entry["source"] == "./"
    assert marketplace["owner"]["name"]
    hooks = read(ROOT / "hooks" / "hooks.json")["hooks"]
    assert set(hooks) == set(install.HOOK_EVENTS)
    for event, [group] in hooks.items():
        assert group.get("matcher") == install.HOOK_EVENTS[event]
        assert group["hooks"] == [{"type": "command", "command": "vlk-memact",
                                   "args": ["hook", "claude-code", "--from-plugin"],
                                   "timeout": install.HOOK_TIMEOUT_SECONDS}]
    servers = read(ROOT / ".mcp.json")["mcpServers"]
    assert servers == {"vlk-memact": {"type": "stdio", "command": "vlk-memact", "args": ["serve"]}}
