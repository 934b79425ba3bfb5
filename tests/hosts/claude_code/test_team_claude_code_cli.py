"""Memory for a team (issue 35) inside the real Claude Code CLI on PostgreSQL: one repository is one project on
every machine.

Alice and Bob each have their own HOME and their own checkout of one repository, at different paths, its
remote spelled `https://git.example.com/acme/app.git` in Alice's and `git@git.example.com:acme/app.git` in
Bob's (Bob cloned Alice's commit). Alice installs vlk-memact for the project (`install claude-code --scope
project`) and commits the files. Session A, in Alice's checkout, fixes three errors; session B, in Bob's, is
told each fix right after the error recurs, with the files named relative to the repository; a session in a
third repository (same HOME, same database, same errors) hears nothing; Alice's checkout moved elsewhere is
still told. The committed files name no path of the machine that installed them, and no hook fails.
Four CLI starts for the whole module (one module-scoped scenario).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from claude_code_harness import require_claude_code, run_claude
from conftest import fresh_postgres_schema, require_postgres
from scripted_anthropic import ScriptedModel, ToolUse
from test_hooks_e2e import hook_texts, request_after

from vlk_memact import Memory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.xdist_group("test_team_claude_code_cli")]

REMOTE_A = "https://git.example.com/acme/app.git"
REMOTE_B = "git@git.example.com:acme/app.git"
KEY = "git.example.com/acme/app"
FILES = {
    ".env.example": "API_URL=http://localhost\n",
    "check_env.sh": 'test -f .env || { echo "error: .env is missing (copy .env.example)" >&2; exit 1; }\necho env ok\n',
    "config/settings.toml": "[app]\nname = 'demo'\n",
    # The error names the file by its absolute path, as real tools do: stored relative, it is one error in
    # every checkout.
    "app.py": ("import os, sys\npath = os.path.abspath('config/settings.toml')\ntext = open(path).read()\n"
               "if 'timeout' not in text:\n    sys.exit(f\"config error: required key 'timeout' missing in {path}\")\n"
               "print('app ok')\n"),
    "tool.py": ("import argparse\np = argparse.ArgumentParser(prog='tool.py')\n"
                "p.add_argument('--mode', choices=['fast', 'quick'], required=True)\nprint(p.parse_args().mode)\n"),
}
TOOLS = ["Bash", "Read", "Edit"]


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com",
                               "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.com"})
    return done.stdout


def vlk(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The vlk-memact command as the user runs it: found on PATH, in their HOME."""
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8"}
    return subprocess.run(["vlk-memact", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def bash(command: str, name: str) -> ToolUse:
    return ToolUse("Bash", {"command": command, "description": name}, id=f"toolu_{name}")


def recurring(tag: str) -> dict[str, ToolUse]:
    """The three errors session A fixed, met again."""
    return {"env": bash("sh check_env.sh", f"{tag}_env"), "key": bash("python3 app.py", f"{tag}_key"),
            "arg": bash("python3 tool.py --mode slow", f"{tag}_arg")}


def told(model: ScriptedModel, calls: dict[str, ToolUse]) -> dict[str, str]:
    return {name: "\n".join(hook_texts(request_after(model, call.id))) for name, call in calls.items()}


def session(prompt: str, script: list[Any], cwd: Path, home: Path, url: str) -> tuple[Any, ScriptedModel]:
    env = {"DATABASE_URL": url, "VLK_HOOK_SERVER_IDLE_SECONDS": "10"}
    with ScriptedModel([*script, "Done."]) as model:
        run = run_claude(prompt, cwd=cwd, model=model, env=env, home=home, allowed_tools=TOOLS)
    assert run.returncode == 0 and not run.is_error, run.describe()
    model.assert_done()
    return run, model


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    require_claude_code()
    require_postgres()
    root = tmp_path_factory.mktemp("team")
    alice_home, bob_home = root / "alice-home", root / "bob-home"
    alice_home.mkdir()
    bob_home.mkdir()
    alice = root / "alice" / "src" / "app"
    alice.mkdir(parents=True)
    git(alice, "init", "-q")
    for name, text in FILES.items():
        (alice / name).parent.mkdir(parents=True, exist_ok=True)
        (alice / name).write_text(text)
    git(alice, "remote", "add", "origin", REMOTE_A)
    installed = vlk(alice, alice_home, "install", "claude-code", "--scope", "project")
    assert installed.returncode == 0, installed.stderr
    git(alice, "add", "-A")
    git(alice, "commit", "-qm", "app, with vlk-memact for the team")
    bob = root / "bob" / "work" / "checkout-of-app"
    bob.parent.mkdir(parents=True)
    git(bob.parent, "clone", "-q", str(alice), bob.name)
    git(bob, "remote", "set-url", "origin", REMOTE_B)
    other = root / "bob" / "work" / "other"
    other.mkdir()
    git(other, "init", "-q")
    for name, text in FILES.items():
        (other / name).parent.mkdir(parents=True, exist_ok=True)
        (other / name).write_text(text)
    git(other, "remote", "add", "origin", "https://git.example.com/acme/other.git")
    assert vlk(other, bob_home, "install", "claude-code", "--scope", "project").returncode == 0

    with fresh_postgres_schema() as (url, _):
        settings = str(alice / "config" / "settings.toml")
        a = [
            bash("sh check_env.sh", "a_env_fail"),
            bash("cp .env.example .env", "a_cp"),
            bash("sh check_env.sh", "a_env_pass"),
            bash("python3 app.py", "a_key_fail"),
            ToolUse("Edit", {"file_path": settings, "old_string": "[app]", "new_string": "[app]\ntimeout = 30"},
                    id="toolu_a_edit"),
            bash("python3 app.py", "a_key_pass"),
            bash("python3 tool.py --mode slow", "a_arg_fail"),
            bash("python3 tool.py --mode quick", "a_arg_pass"),
        ]
        run_a, model_a = session("Get the app running.", a, alice, alice_home, url)
        b = recurring("b")
        _, model_b = session("Get the app running.", list(b.values()), bob, bob_home, url)
        c = recurring("c")
        _, model_c = session("Get the app running.", list(c.values()), other, bob_home, url)
        # Alice's checkout moved (and put back as committed): still the same project.
        moved = root / "elsewhere" / "renamed-app"
        moved.parent.mkdir()
        shutil.move(str(alice), moved)
        git(moved, "checkout", "-q", "--", ".")
        (moved / ".env").unlink()
        d = recurring("d")
        _, model_d = session("Get the app running.", list(d.values()), moved, alice_home, url)
        yield {"root": root, "url": url, "alice": alice, "bob": bob, "moved": moved, "homes": (alice_home, bob_home),
               "installed": installed, "a": (run_a, model_a), "b": told(model_b, b), "c": told(model_c, c),
               "d": told(model_d, d), "doctor": vlk(bob, bob_home, "doctor")}


def test_session_a_fixed_three_errors_under_the_repository_key(team: dict[str, Any]) -> None:
    run_a, model = team["a"]
    for failed in ("a_env_fail", "a_key_fail", "a_arg_fail"):
        assert model.tool_result(f"toolu_{failed}").is_error, failed
    with Memory(team["url"], project=KEY) as memory, memory.store.read() as tx:
        fixes = tx.fixes(memory.tenant, memory.project, run_a.session_id, 10)
    assert sorted(f.passed for f in fixes) == ["python3 app.py", "python3 tool.py --mode quick", "sh check_env.sh"]
    stored = "\n".join(f"{f.error}\n{f.failed}\n{f.passed}\n" + "\n".join(s.summary or "" for s in f.steps)
                       for f in fixes)
    assert str(team["alice"]) not in stored and "config/settings.toml" in stored, stored


def test_bob_is_told_alices_fixes_with_paths_relative_to_the_repository(team: dict[str, Any]) -> None:
    said = team["b"]
    assert "vlk-memact: fixed in an earlier session by: cp .env.example .env (then sh check_env.sh passed)" in \
        said["env"], said["env"]
    assert "Edit config/settings.toml: +'timeout = 30' (then python3 app.py passed)" in said["key"], said["key"]
    assert "the changed call python3 tool.py --mode quick (it passed)" in said["arg"], said["arg"]
    every = "\n".join(said.values())
    assert str(team["alice"]) not in every and str(team["root"]) not in every, every


def test_a_third_repository_hears_nothing(team: dict[str, Any]) -> None:
    assert all("fixed" not in text for text in team["c"].values()), team["c"]


def test_the_moved_checkout_is_still_told(team: dict[str, Any]) -> None:
    said = team["d"]
    assert "cp .env.example .env" in said["env"] and "Edit config/settings.toml" in said["key"], said
    assert str(team["alice"]) not in "\n".join(said.values())


def test_the_committed_files_name_no_path_of_the_machine_that_installed_them(team: dict[str, Any]) -> None:
    committed = git(team["bob"], "ls-files")
    assert ".claude/settings.json" in committed and ".mcp.json" in committed, committed
    text = "".join((team["bob"] / name).read_text() for name in (".claude/settings.json", ".mcp.json"))
    machine = [str(team["root"]), str(Path(sys.executable).parent), sys.prefix, str(Path.home())]
    assert not [p for p in machine if p in text], text
    assert '"command": "vlk-memact"' in text
    assert not list(team["bob"].rglob("*.bak*")) and "backup" not in committed  # backups stay in the data dir


def test_no_hook_failed_and_doctor_says_which_key_and_why(team: dict[str, Any]) -> None:
    for home in team["homes"]:
        log = home / ".local" / "share" / "vlk-memact" / "hooks.log"
        assert not log.exists() or log.read_text().strip() == "", log.read_text()
    doctor = team["doctor"].stdout
    assert f"project: {KEY} (the remote 'origin' ({REMOTE_B}) of the git repository at {team['bob']})" in doctor, \
        doctor
