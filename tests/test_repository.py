"""A project is its repository (repository.py), read from git's own files; texts name the repository's files
relative to its root (core/portable.py); a hook's event and answer are made portable in one place (runner)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from vlk_memact.config import detect_project
from vlk_memact.core.portable import relative, relative_value
from vlk_memact.hosts.shared.runner import checkout_roots
from vlk_memact.repository import identify, normalise_remote

FORMS = ["https://git.example.com/acme/app.git", "git@git.example.com:acme/app.git", "ssh://git@git.example.com/acme/app",
         "ssh://git@Git.Example.com:2222/acme/app.git/", "https://bob:s3cret@git.example.com/acme/app",
         "git://git.example.com/acme/app.git", "git.example.com:acme/app"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def repo(path: Path, *remotes: tuple[str, str]) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    for name, url in remotes:
        git(path, "remote", "add", name, url)
    return path


@pytest.mark.parametrize("url", FORMS)
def test_every_form_of_one_remote_is_one_project(url: str) -> None:
    assert normalise_remote(url) == "git.example.com/acme/app"


def test_other_repositories_and_local_remotes_stay_apart() -> None:
    assert normalise_remote("git@git.example.com:acme/other.git") == "git.example.com/acme/other"
    assert normalise_remote("git@elsewhere.org:acme/app.git") == "elsewhere.org/acme/app"
    assert normalise_remote("/srv/git/app.git") == normalise_remote("file:///srv/git/app.git") == "/srv/git/app"
    assert normalise_remote("  ") is None


def test_origin_is_the_key_else_the_first_remote(tmp_path: Path) -> None:
    both = repo(tmp_path / "both", ("upstream", "https://h/acme/up.git"), ("origin", "git@h:me/fork.git"))
    first = repo(tmp_path / "first", ("upstream", "https://h/acme/up.git"), ("mine", "git@h:me/fork.git"))
    (both / "deep").mkdir()
    found = identify(both / "deep")
    assert (found.key, found.root, found.path_key) == ("h/me/fork", str(both), str(both))
    assert "origin" in found.why and "git@h:me/fork.git" in found.why
    assert identify(first).key == "h/acme/up"


def test_the_password_of_a_remote_is_never_shown(tmp_path: Path) -> None:
    found = identify(repo(tmp_path / "r", ("origin", "https://bob:s3cret@h/acme/app.git")))
    assert found.key == "h/acme/app" and "s3cret" not in found.why and "s3cret" not in (found.remote or "")


def test_without_a_remote_the_path_as_before_and_outside_default(tmp_path: Path) -> None:
    plain = repo(tmp_path / "plain")
    (plain / "src").mkdir()
    found = identify(plain / "src")
    assert (found.key, found.root, found.path_key) == (str(plain), str(plain), None)
    assert "no remote" in found.why and detect_project(plain / "src") == str(plain)
    outside = tmp_path / "nowhere"
    outside.mkdir()
    assert identify(outside).key in ("default", str(Path("/").resolve()))


def test_a_worktree_shares_its_repository_and_has_its_own_root(tmp_path: Path) -> None:
    main = repo(tmp_path / "main", ("origin", "git@h:acme/app.git"))
    (main / "f").write_text("x")
    git(main, "add", "f")
    subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "f"], cwd=main, check=True)
    git(main, "worktree", "add", "-q", str(tmp_path / "wt"))
    found = identify(tmp_path / "wt")
    assert (found.key, found.root, found.path_key) == ("h/acme/app", str(tmp_path / "wt"), str(main))
    git(main, "remote", "remove", "origin")
    assert identify(tmp_path / "wt").key == str(main)  # no remote: the main checkout's path, as before


def test_a_submodule_reads_its_own_config(tmp_path: Path) -> None:
    outer = repo(tmp_path / "outer", ("origin", "git@h:acme/outer.git"))
    gitdir = outer / ".git" / "modules" / "lib"
    gitdir.mkdir(parents=True)
    (gitdir / "config").write_text('[core]\n\tbare = false\n[remote "origin"]\n\turl = git@h:acme/lib.git\n'
                                   '\tfetch = +refs/heads/*:refs/remotes/origin/*\n')
    (outer / "lib").mkdir()
    (outer / "lib" / ".git").write_text("gitdir: ../.git/modules/lib\n")
    assert identify(outer / "lib").key == "h/acme/lib"


def test_an_unreadable_git_file_falls_back_to_the_path(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / ".git").write_bytes(b"gitdir: \xff\xfe/nowhere\n")
    assert identify(tmp_path / "r").key == str(tmp_path / "r")


def test_paths_inside_the_repository_become_relative_and_others_stay() -> None:
    roots = ("/home/a/app",)
    assert relative('File "/home/a/app/src/x.py", line 3', roots) == 'File "src/x.py", line 3'
    assert relative("cd /home/a/app && make", roots) == "cd . && make"
    assert relative("/home/a/app2/x /y/home/a/app/x /usr/lib/python3/x.py", roots) == \
        "/home/a/app2/x /y/home/a/app/x /usr/lib/python3/x.py"
    assert relative("edit /home/a/app/config.json", ()) == "edit /home/a/app/config.json"
    event = {"cwd": "/home/a/app", "tool_input": {"file_path": "/home/a/app/config.json"}, "n": 1,
             "list": ["/home/a/app/a", None]}
    assert relative_value(event, roots) == {"cwd": "/home/a/app", "tool_input": {"file_path": "config.json"}, "n": 1,
                                            "list": ["a", None]}


def test_a_hook_knows_the_root_as_resolved_and_as_spelled_through_a_symlink(tmp_path: Path) -> None:
    real = repo(tmp_path / "real")
    (real / "src").mkdir()
    os.symlink(real, tmp_path / "link")
    assert checkout_roots(str(tmp_path / "link" / "src")) == (str(real), str(tmp_path / "link"))
    assert checkout_roots(str(real)) == (str(real),)
    assert checkout_roots(None) == ()
