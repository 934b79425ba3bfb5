"""The warm server keeps a folder's checkout between events (runner._checkout, issue 37), and never serves a stale
one where it matters: a remote added (the project changes) or a repository made in the folder is seen at the next
event; anything else at the latest after CHECKOUT_SECONDS."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from vlk_memact.hosts.shared import runner


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(autouse=True)
def empty_cache() -> None:
    runner._checkouts.clear()  # noqa: SLF001 - the cache is the subject


def test_the_checkout_is_read_once_while_nothing_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git(tmp_path, "init", "-q")
    calls: list[object] = []
    real = runner.identify
    monkeypatch.setattr(runner, "identify", lambda path: calls.append(path) or real(path))
    first = runner._checkout(str(tmp_path))  # noqa: SLF001
    assert runner._checkout(str(tmp_path)) is first and len(calls) == 1  # noqa: SLF001


def test_a_remote_added_changes_the_project_at_the_next_event(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    before = runner._checkout(str(tmp_path))  # noqa: SLF001
    time.sleep(0.01)  # a later modification time of .git/config
    git(tmp_path, "remote", "add", "origin", "git@github.com:acme/shop.git")
    after = runner._checkout(str(tmp_path))  # noqa: SLF001
    assert before.key != after.key and after.key == "github.com/acme/shop"


def test_a_repository_made_in_the_folder_is_seen_at_the_next_event(tmp_path: Path) -> None:
    outside = runner._checkout(str(tmp_path))  # noqa: SLF001
    git(tmp_path, "init", "-q")
    inside = runner._checkout(str(tmp_path))  # noqa: SLF001
    assert outside.root is None and inside.root == str(tmp_path.resolve())


def test_anything_else_is_read_again_after_the_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git(tmp_path, "init", "-q")
    calls: list[object] = []
    real = runner.identify
    monkeypatch.setattr(runner, "identify", lambda path: calls.append(path) or real(path))
    runner._checkout(str(tmp_path))  # noqa: SLF001
    monkeypatch.setattr(runner, "CHECKOUT_SECONDS", 0.0)
    runner._checkouts.clear()  # noqa: SLF001
    runner._checkout(str(tmp_path))  # noqa: SLF001
    runner._checkout(str(tmp_path))  # noqa: SLF001
    assert len(calls) == 3
