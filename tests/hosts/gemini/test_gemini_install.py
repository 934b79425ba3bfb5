"""`vlk-memact install gemini` / `uninstall gemini` on settings files that already hold other hooks and settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vlk_memact.core.errors import InvalidInput
from vlk_memact.hosts.gemini import install as gi
from vlk_memact.hosts.shared.install_files import file_line

COMMAND = ["/opt/vlk env/bin/vlk-memact", "hook", "gemini"]

# A user's settings: their own hooks on two of our events and one other, an MCP server, other settings.
THEIRS: dict[str, Any] = {
    "ui": {"theme": "GitHub"},
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "hooks": {
        "BeforeTool": [
            {"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "./audit.sh", "name": "audit"}]}
        ],
        "AfterTool": [
            {"matcher": "write_file|replace", "sequential": True,
             "hooks": [{"type": "command", "command": "npx prettier --write", "timeout": 30000}]}
        ],
        "AfterAgent": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
    "mcpServers": {"github": {"command": "github-mcp", "args": ["stdio"], "env": {"X": "1"}}},
}


@pytest.fixture
def settings_file(tmp_path: Path) -> Path:
    path = tmp_path / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(THEIRS, indent=4) + "\n", encoding="utf-8")
    return path


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _ours(settings: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [h for g in settings["hooks"].get(event, []) for h in g["hooks"] if h.get("name") == gi.HOOK_NAME]


def test_install_adds_our_four_hooks_and_server_and_keeps_everything_else(settings_file: Path):
    before = settings_file.read_text(encoding="utf-8")
    plan = gi.install(settings_file, command=COMMAND)
    assert plan.changed
    assert plan.added == [f"hooks.{e}" for e in gi.EVENTS] + ["mcpServers.vlk-memact"]
    after = _load(settings_file)
    for event in gi.EVENTS:
        [hook] = _ours(after, event)
        assert hook == {
            "type": "command", "name": "vlk-memact", "command": "'/opt/vlk env/bin/vlk-memact' hook gemini",
            "timeout": gi.TIMEOUT_MS, "description": hook["description"],
        }
    tool_groups = [g for g in after["hooks"]["BeforeTool"] if _ours({"hooks": {"x": [g]}}, "x")]
    assert tool_groups[0]["matcher"] == ".*"
    assert after["mcpServers"]["vlk-memact"] == {"command": "/opt/vlk env/bin/vlk-memact", "args": ["serve"]}
    # Theirs, untouched and in place.
    assert after["ui"] == THEIRS["ui"] and after["security"] == THEIRS["security"]
    assert after["hooks"]["BeforeTool"][0] == THEIRS["hooks"]["BeforeTool"][0]
    assert after["hooks"]["AfterTool"][0] == THEIRS["hooks"]["AfterTool"][0]
    assert after["hooks"]["AfterAgent"] == THEIRS["hooks"]["AfterAgent"]
    assert after["mcpServers"]["github"] == THEIRS["mcpServers"]["github"]
    # The previous file, byte for byte, in the user data directory (never beside the file, in the repository).
    assert plan.backup is not None and plan.backup.parent.name == "gemini"
    assert plan.backup.parent.parent.name == "backups" and settings_file.parent not in plan.backup.parents
    assert plan.backup.read_text(encoding="utf-8") == before
    assert list(settings_file.parent.iterdir()) == [settings_file]


def test_a_second_install_changes_nothing(settings_file: Path):
    gi.install(settings_file, command=COMMAND)
    once = settings_file.read_text(encoding="utf-8")
    plan = gi.install(settings_file, command=COMMAND)
    assert not plan.changed and plan.added == []
    assert settings_file.read_text(encoding="utf-8") == once


def test_uninstall_removes_exactly_what_install_added(settings_file: Path):
    gi.install(settings_file, command=COMMAND)
    plan = gi.uninstall(settings_file)
    assert plan.changed
    assert sorted(plan.removed) == sorted([f"hooks.{e}" for e in gi.EVENTS] + ["mcpServers.vlk-memact"])
    assert _load(settings_file) == THEIRS
    assert not gi.uninstall(settings_file).changed  # and a second uninstall finds nothing


def test_install_then_uninstall_on_a_missing_file_leaves_no_file_behind(tmp_path: Path):
    path = tmp_path / "home" / ".gemini" / "settings.json"
    plan = gi.install(path, command=COMMAND)
    assert plan.changed and plan.backup is None and plan.created  # nothing to back up
    assert set(_load(path)) == {"hooks", "mcpServers"}
    assert gi.uninstall(path).deleted
    assert not path.exists() and not path.parent.exists()  # not `{}`, and the .gemini folder it made is gone


def test_dry_run_shows_the_result_and_writes_nothing(settings_file: Path):
    before = settings_file.read_text(encoding="utf-8")
    plan = gi.install(settings_file, dry_run=True, command=COMMAND)
    assert plan.changed and plan.backup is None
    assert _ours(json.loads(plan.text), "AfterTool")
    assert settings_file.read_text(encoding="utf-8") == before
    assert list(settings_file.parent.iterdir()) == [settings_file]
    assert file_line(gi.report_of(plan), "install", dry_run=True).startswith(f"{settings_file}: would add the "
                                                                           "SessionStart, BeforeAgent")


def test_an_older_entry_of_ours_is_replaced_not_duplicated(settings_file: Path):
    gi.install(settings_file, command=["/old/venv/bin/vlk-memact", "hook", "gemini"])
    plan = gi.install(settings_file, command=COMMAND)
    assert plan.changed
    after = _load(settings_file)
    for event in gi.EVENTS:
        [hook] = _ours(after, event)
        assert hook["command"].startswith("'/opt/vlk env/bin/vlk-memact'")
    assert after["hooks"]["BeforeTool"][0] == THEIRS["hooks"]["BeforeTool"][0]


def test_a_server_entry_written_by_hand_is_left_alone(settings_file: Path):
    mine = {"command": "vlk-memact", "env": {"DATABASE_URL": "sqlite:///srv/vlk.db"}}
    data = _load(settings_file)
    data["mcpServers"]["vlk-memact"] = mine
    settings_file.write_text(json.dumps(data), encoding="utf-8")
    plan = gi.install(settings_file, command=COMMAND)
    assert "mcpServers.vlk-memact" not in plan.added
    gi.uninstall(settings_file)
    after = _load(settings_file)
    assert after["mcpServers"]["vlk-memact"] == mine
    assert "vlk-memact" not in json.dumps(after["hooks"])


def test_a_database_url_given_to_install_reaches_the_hooks_and_the_server(settings_file: Path):
    # Gemini CLI drops DATABASE_URL from a hook's environment when it redacts variables; a hook's own
    # env is applied after that.
    gi.install(settings_file, command=COMMAND, env={"DATABASE_URL": "sqlite:///srv/vlk.db"})
    after = _load(settings_file)
    assert _ours(after, "AfterTool")[0]["env"] == {"DATABASE_URL": "sqlite:///srv/vlk.db"}
    assert after["mcpServers"]["vlk-memact"]["env"] == {"DATABASE_URL": "sqlite:///srv/vlk.db"}
    gi.uninstall(settings_file)
    assert _load(settings_file) == THEIRS


@pytest.mark.parametrize(
    "content",
    ['{\n  // my comment\n  "ui": {}\n}\n', "[1, 2]", '{"hooks": []}', '{"hooks": {"AfterTool": {}}}',
     '{"mcpServers": "x"}'],
)
def test_a_file_install_cannot_rewrite_faithfully_is_refused_and_left_as_it_was(tmp_path: Path, content: str):
    path = tmp_path / "settings.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidInput) as caught:
        gi.install(path, command=COMMAND)
    assert str(path) in str(caught.value)
    assert path.read_text(encoding="utf-8") == content


def test_scopes_name_the_users_file_and_the_projects_git_root(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "pkg").mkdir(parents=True)
    assert gi.settings_path("user", home=tmp_path / "h") == tmp_path / "h" / ".gemini" / "settings.json"
    assert gi.settings_path("project", cwd=repo / "src" / "pkg") == repo.resolve() / ".gemini" / "settings.json"
    with pytest.raises(InvalidInput):
        gi.settings_path("local")


def test_install_says_when_the_file_keeps_hooks_from_running_and_leaves_that_setting_alone(tmp_path: Path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"hooksConfig": {"enabled": False, "disabled": ["vlk-memact"]}}), encoding="utf-8")
    plan = gi.install(path, command=COMMAND)
    notes = gi.report_of(plan).notes
    assert "hooksConfig.enabled is false" in notes[0] and "hooksConfig.disabled lists 'vlk-memact'" in notes[1]
    assert _load(path)["hooksConfig"] == {"enabled": False, "disabled": ["vlk-memact"]}
    assert "hooksConfig.enabled is false" in gi.report_of(gi.install(path, command=COMMAND)).notes[0]
