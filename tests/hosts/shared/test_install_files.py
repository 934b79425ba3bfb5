"""What the four hosts' installs share (issue 36): one rule for where a project install goes, backups in the user
data directory that a later install never overwrites, an uninstall that leaves a fresh repository as it was, one
wording for every host, and a missing `codex` said before anything is written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vlk_memact.core.errors import InvalidInput
from vlk_memact.hosts.shared import install_files

HOSTS = ("claude-code", "gemini", "opencode", "codex")
PROJECT_SCOPE = {"claude-code": "project", "gemini": "project", "opencode": "project"}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo,
                          capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def user(tmp_path: Path) -> dict[str, str]:
    """A throwaway user: home, data directory, Codex home; no `codex` (nor any host) on PATH."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VLK_", "CODEX_", "XDG_", "DATABASE_URL"))}
    env.update(HOME=str(home), XDG_DATA_HOME=str(tmp_path / "data"), CODEX_HOME=str(home / ".codex"),
               VLK_HOOK_SERVER="0", PATH=f"{Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin")
    return env


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A fresh repository with one commit, and a subfolder to run the commands from."""
    root = tmp_path / "repo"
    (root / "src" / "pkg").mkdir(parents=True)
    git(root, "init", "-q")
    (root / "README").write_text("hello\n")
    git(root, "add", "README")
    git(root, "commit", "-q", "-m", "first")
    return root


def vlk(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vlk_memact", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_project_install_then_uninstall_leaves_git_status_clean_for_every_project_host(
        repo: Path, user: dict[str, str]) -> None:
    below = repo / "src" / "pkg"
    for host, scope in PROJECT_SCOPE.items():
        done = vlk(user, below, "install", host, "--scope", scope)
        assert done.returncode == 0, done.stderr
        assert f"{repo}/." in done.stdout and str(below) not in done.stdout  # the git root, not the current folder
    status = git(repo, "status", "--porcelain", "--untracked-files=all")
    assert sorted(line[3:] for line in status.splitlines()) == [
        ".claude/settings.json", ".gemini/settings.json", ".mcp.json", ".opencode/plugins/vlk-memact.js"]
    for host, scope in PROJECT_SCOPE.items():
        done = vlk(user, below, "uninstall", host, "--scope", scope)
        assert done.returncode == 0 and "the file was removed: nothing else was in it" in done.stdout, done.stdout
    assert git(repo, "status", "--porcelain", "--untracked-files=all", "--ignored") == ""
    assert sorted(p.name for p in repo.iterdir()) == [".git", "README", "src"]
    # The default scope of Claude Code (local) too: its folder goes with its file.
    assert vlk(user, repo, "install", "claude-code").returncode == 0
    assert vlk(user, repo, "uninstall", "claude-code").returncode == 0
    assert git(repo, "status", "--porcelain", "--untracked-files=all", "--ignored") == ""


def test_every_host_reports_in_the_same_words(repo: Path, user: dict[str, str]) -> None:
    """install, install again, uninstall, uninstall again: one line per file, then where things stand."""
    shapes = set()
    for host in HOSTS:
        scope = ["--scope", PROJECT_SCOPE[host]] if host in PROJECT_SCOPE else []
        runs = [vlk(user, repo, verb, host, *scope) for verb in ("install", "install", "uninstall", "uninstall")]
        outs = [r.stdout for r in runs]
        assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
        assert outs[0].splitlines()[0].split(": ", 1)[1].startswith("added the ")
        assert re.search(r": already installed, nothing to change\.$", outs[1].splitlines()[0])
        assert outs[2].splitlines()[0].split(": ", 1)[1].startswith("removed the ")
        name = install_files.HOST_NAMES[host]
        # An install ends with the past sessions of the project it found (issue 32): the status line is before it.
        assert all(o.splitlines()[-1].startswith("No past ") for o in outs[:2])
        outs[:2] = [o.rsplit("\n", 2)[0] + "\n" for o in outs[:2]]
        assert [o.splitlines()[-1] for o in outs] == [
            f"vlk-memact is installed for {name}.", f"Nothing changed: vlk-memact was already installed for {name}.",
            f"vlk-memact is uninstalled from {name}.", f"Nothing changed: vlk-memact was not installed for {name}."]
        shapes.add(tuple(o.splitlines()[-1].replace(name, "HOST") for o in outs))
        assert ": changed:" not in "".join(outs) and "nothing to install" not in "".join(outs)  # the old words
    assert len(shapes) == 1


def test_backups_go_to_the_user_data_directory_and_a_later_install_never_overwrites_one(
        repo: Path, user: dict[str, str]) -> None:
    settings = repo / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"theme":   "dark"}\n')  # the user's own formatting
    assert vlk(user, repo, "install", "gemini", "--scope", "project").returncode == 0
    assert vlk(user, repo, "uninstall", "gemini", "--scope", "project").returncode == 0
    assert settings.read_text() == '{"theme":   "dark"}\n'  # byte for byte, as it was
    settings.write_text('{"theme": "light"}\n')
    assert vlk(user, repo, "install", "gemini", "--scope", "project").returncode == 0
    folder = Path(user["XDG_DATA_HOME"]) / "vlk-memact" / "backups" / "gemini"
    kept = sorted(p.read_text() for p in folder.iterdir())
    assert '{"theme":   "dark"}\n' in kept and '{"theme": "light"}\n' in kept and len(kept) == 3  # none replaced
    assert sorted(p.name for p in settings.parent.iterdir()) == ["settings.json"]  # nothing beside it


def test_backup_names_never_collide(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    path = tmp_path / "settings.json"
    copies = []
    for n in range(3):  # within one second
        path.write_text(str(n))
        copies.append(install_files.backup(path, "claude-code"))
    assert len(set(copies)) == 3 and [c.read_text() for c in copies] == ["0", "1", "2"]


def test_where_a_project_install_goes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "a" / "b").mkdir(parents=True)
    assert install_files.project_folder(repo / "a" / "b", tmp_path / "home") == repo.resolve()
    assert capsys.readouterr().err == ""
    loose = tmp_path / "loose"
    loose.mkdir()
    assert install_files.project_folder(loose, tmp_path / "home") == loose.resolve()
    assert "is in no git repository: the project files go into this folder" in capsys.readouterr().err
    home = tmp_path / "home"
    home.mkdir()
    with pytest.raises(InvalidInput, match="is your home folder, not a project.*--scope user. Nothing was written"):
        install_files.project_folder(home, home)


def test_outside_a_repository_every_project_host_says_so(tmp_path: Path, user: dict[str, str]) -> None:
    loose = tmp_path / "loose"
    loose.mkdir()
    for host, scope in PROJECT_SCOPE.items():
        done = vlk(user, loose, "install", host, "--scope", scope)
        assert done.returncode == 0 and "is in no git repository" in done.stderr, (host, done.stderr)
        refused = vlk(user, Path(user["HOME"]), "install", host, "--scope", scope)
        assert refused.returncode == 1 and "is your home folder, not a project" in refused.stderr, host


def test_a_missing_codex_is_said_and_trust_refused_before_anything_is_written(
        repo: Path, user: dict[str, str]) -> None:
    for args in (["--dry-run", "--trust"], ["--trust"]):
        done = vlk(user, repo, "install", "codex", *args)
        assert done.returncode == 1 and done.stdout == ""
        assert "Error: the `codex` command is not on PATH" in done.stderr and "Nothing was written." in done.stderr
        assert not Path(user["CODEX_HOME"]).exists()
    dry = vlk(user, repo, "install", "codex", "--dry-run")
    assert dry.returncode == 0 and "would add the SessionStart, UserPromptSubmit, PreToolUse and PostToolUse" in dry.stdout
    assert "`codex` (Codex CLI) is not on PATH" in dry.stderr and not Path(user["CODEX_HOME"]).exists()
