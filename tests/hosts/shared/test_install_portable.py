"""A project install is committed for the team (issue 35): its files run `vlk-memact` from PATH in any checkout,
name no path of the machine that wrote them, and say so when `vlk-memact` is not on PATH (install and doctor)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from test_install_files import PROJECT_SCOPE, git, repo, user, vlk  # noqa: F401 - fixtures

FILES = (".claude/settings.json", ".mcp.json", ".gemini/settings.json", ".opencode/plugins/vlk-memact.js")


def machine_paths(env: dict[str, str], repo: Path) -> list[str]:
    return [str(repo), env["HOME"], env["XDG_DATA_HOME"], sys.prefix, str(Path(sys.executable).parent),
            sys.executable]


def test_project_files_run_vlk_memact_from_path_and_name_no_path_of_this_machine(
        repo: Path, user: dict[str, str]) -> None:  # noqa: F811
    env = {**user, "DATABASE_URL": "postgresql://alice:s3cret@db.internal/vlk"}
    for host, scope in PROJECT_SCOPE.items():
        done = vlk(env, repo, "install", host, "--scope", scope)
        assert done.returncode == 0, done.stderr
        assert "`vlk-memact` is not on PATH" not in done.stdout + done.stderr  # it is, in this user's PATH
    text = {name: (repo / name).read_text() for name in FILES}
    leaked = [(name, p) for name, t in text.items() for p in machine_paths(env, repo) if p in t]
    assert leaked == []
    assert "s3cret" not in "".join(text.values()) and "db.internal" not in "".join(text.values())
    hooks = json.loads(text[".claude/settings.json"])["hooks"]
    assert {h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]} == {"vlk-memact"}
    assert json.loads(text[".mcp.json"])["mcpServers"]["vlk-memact"]["command"] == "vlk-memact"
    gemini = json.loads(text[".gemini/settings.json"])
    assert {h["command"] for groups in gemini["hooks"].values() for g in groups for h in g["hooks"]} == \
        {"vlk-memact hook gemini"}
    assert gemini["mcpServers"]["vlk-memact"]["command"] == "vlk-memact"
    assert '["vlk-memact"]' in text[".opencode/plugins/vlk-memact.js"]
    # A teammate's clone at another path: the same files, and doctor finds every command.
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "vlk-memact for the team")
    clone = repo.parent / "teammate" / "app"
    clone.parent.mkdir()
    git(clone.parent, "clone", "-q", str(repo), "app")
    doctor = vlk(user, clone, "doctor")
    assert "FAIL" not in doctor.stdout.replace("FAIL hosts: gemini", ""), doctor.stdout  # gemini is not on PATH
    assert "claude-code command: vlk-memact serve exists" in doctor.stdout


def test_without_vlk_memact_on_path_install_and_doctor_say_so(repo: Path, user: dict[str, str]) -> None:  # noqa: F811
    bare = {**user, "PATH": f"/usr/bin{os.pathsep}/bin"}  # run through `python -m`: vlk-memact is not on PATH
    done = vlk(bare, repo, "install", "claude-code", "--scope", "project")
    assert done.returncode == 0 and "`vlk-memact` is not on PATH here" in done.stdout, done.stdout
    assert vlk(bare, repo, "install", "opencode").stdout.count("not on PATH here") == 1
    doctor = vlk(bare, repo, "doctor").stdout
    assert "FAIL hosts: claude-code command: vlk-memact is not on PATH" in doctor, doctor
    assert "fix: put vlk-memact on PATH" in doctor
    assert "runs vlk-memact from PATH (the same in every checkout), and it is not on PATH" in doctor
    # A user-scope install keeps this environment's own command: it needs no PATH.
    assert vlk(bare, repo, "install", "claude-code", "--scope", "user").stdout.count("not on PATH here") == 0
