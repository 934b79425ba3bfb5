"""End to end with the real Gemini CLI (pinned in tests/gemini-cli) and a scripted model on loopback.

Each test installs the hooks with the real `vlk-memact install gemini` into a temporary HOME, runs
`gemini -p` headless in a temporary git project, and reads what the model was sent. Needs
`npm ci --prefix tests/gemini-cli` and Node >= 20 (CI fails without them, a dev machine skips).

The CLI is started as few times as the assertions allow: the module shares one scripted model, and the loop
session (`loop`, module-scoped) is both the loop test's session and the earlier session whose lesson the
next session starts with; the module's tests run on one xdist worker (xdist_group).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from gemini_harness import ScriptedGemini, call, missing_cli, run_gemini, shell, text, write_settings
from host_harness import Loop, Workspace, failing_command, git_project, requires_cli, run_loop

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.xdist_group("gemini_cli")]
_cli_present = requires_cli(missing_cli)


class GeminiWorkspace(Workspace):
    def history(self) -> list[dict]:
        out = self.vlk("history", "--limit", "500", "--session", self.session())
        return json.loads(out.stdout)

    def session(self) -> str:
        chats = sorted((self.home / ".gemini" / "tmp").rglob("session-*.json*"), key=lambda p: p.stat().st_mtime)
        assert chats, "no Gemini CLI session was recorded"
        name = chats[-1].name
        # session-<date>-<first 8 hex of the id>.jsonl: the full id is in the file's first record
        first = chats[-1].read_text(encoding="utf-8").splitlines()[0]
        sid = json.loads(first).get("sessionId")
        assert sid, f"no sessionId in {name}"
        return sid


def gemini_workspace(tmp_path: Path, api: ScriptedGemini) -> GeminiWorkspace:
    """A git project, and the HOME (settings written first) where `gemini` runs against `api`."""
    return GeminiWorkspace("gemini", tmp_path / "home", git_project(tmp_path / "project"), tmp_path / "vlk.db",
                           api, functools.partial(run_gemini, base_url=api.base_url))


@pytest.fixture(scope="module")
def api() -> Iterator[ScriptedGemini]:
    """One scripted model for the module's sessions, which run one after another."""
    with ScriptedGemini() as server:
        yield server


@pytest.fixture
def ws(tmp_path: Path, api: ScriptedGemini) -> GeminiWorkspace:
    write_settings(tmp_path / "home")
    return gemini_workspace(tmp_path, api).installed()


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory, api: ScriptedGemini) -> Loop:
    """The loop session, then the model's own vlk_fetch_context in the same session."""
    root = tmp_path_factory.mktemp("loop")
    write_settings(root / "home")
    return run_loop(gemini_workspace(root, api).installed(), root, shell, text("stopped."),
                    call("mcp_vlk-memact_vlk_fetch_context"))


def test_three_failures_announce_the_loop_and_the_fourth_unchanged_repeat_is_denied(loop: Loop):
    turns = loop.turns
    # The first failure is ordinary: nothing injected. (Turn i+1 carries the result of call i.)
    assert "vlk-memact:" not in turns[1].last_parts_text()
    assert "now live 2 times" in turns[2].last_parts_text()  # the same error live again
    # The third: the model's next request carries the loop text, next to the tool result.
    third = turns[3].last_parts_text()
    assert "vlk-memact:" in third and "Exit Code: 2" in third
    assert "loop" in third.lower()
    # The fourth identical call, nothing changed: denied, never run; the model reads the anchor as its result.
    fourth = turns[4].last_parts_text()
    assert "Tool execution blocked: vlk-memact:" in fourth
    assert loop.runs.count("ran") == 3
    # The model's own vlk_fetch_context (no session_id given) sees the hook-recorded slots of its session.
    fetched = turns[5].last_parts_text()
    assert "[SYSTEM ANCHOR]" in fetched and "nonexistent-vlk-e2e-dir" in fetched


def test_with_an_edit_in_between_the_repeat_runs_with_the_warning(ws: GeminiWorkspace, tmp_path: Path):
    marker = tmp_path / "runs.txt"
    cmd = failing_command(marker)
    ws.run("build it", shell(cmd), shell(cmd), shell(cmd),
           call("write_file", file_path=str(ws.project / "fix.txt"), content="changed\n"),
           shell(cmd), text("stopped."))
    turns = ws.last
    assert marker.read_text(encoding="utf-8").count("ran") == 4  # it ran
    after_repeat = turns[5].last_parts_text()
    assert "Tool execution blocked" not in after_repeat
    assert "vlk-memact:" in after_repeat  # the anchor went along with the result


def test_a_success_of_the_same_call_retires_its_live_failures(ws: GeminiWorkspace):
    target = ws.project / "config.txt"
    cmd = f"cat {target}"
    ws.run("read the config", shell(cmd), shell(cmd),
           call("write_file", file_path=str(target), content="ok\n"), shell(cmd), text("done."))
    slots = [s for s in ws.history() if "config.txt" in (s.get("raw_log") or "")]
    assert len(slots) == 2
    assert all(s["temporal_state"] == "PAST" and s["retired_reason"] == "resolved" for s in slots), slots
    context = ws.vlk("context", "--session", ws.session()).stdout
    assert "config.txt" not in context  # the stale error left the context


def test_a_new_session_in_the_same_project_hears_the_loop_at_its_failure_and_another_project_does_not(loop: Loop):
    ws, tmp_path = loop.ws, loop.root  # after the loop session: one session's loop, no broken environment
    ws.run("start again", shell("ls /nonexistent-vlk-e2e-dir"), text("ok."))
    assert "vlk-memact:" not in ws.last[0].text()  # nothing at the start (issue 34): it waits for its failure
    told = [r.text() for r in ws.last[1:] if "failed the same way in session" in r.text()]
    assert told and "not resolved there" in told[0], [r.text()[-600:] for r in ws.last]
    other = git_project(tmp_path / "other")
    ws.run("elsewhere", text("ok."), cwd=other)
    assert "vlk-memact:" not in ws.last[0].text()


def test_a_resumed_session_starts_with_its_own_live_errors(ws: GeminiWorkspace):
    ws.run("build it", shell("ls /nonexistent-vlk-e2e-dir"), text("stopped."))
    ws.run("go on", text("ok."), args=("--resume", "latest"))
    first = ws.last[0].text()
    assert "vlk-memact: this session's memory so far" in first and "nonexistent-vlk-e2e-dir" in first


def test_a_broken_database_url_leaves_the_session_working_and_the_problem_in_the_hook_log(ws: GeminiWorkspace):
    broken = ws.vlk("--database-url", "bogus://nowhere", "install", "gemini")
    assert broken.returncode == 0, broken.stderr
    result = ws.run("build it", shell("ls /nonexistent-vlk-e2e-dir"), shell("ls /nonexistent-vlk-e2e-dir"),
                    text("finished."))
    assert "finished." in result.stdout
    assert all("vlk-memact:" not in r.text() for r in ws.last)
    log = ws.home / ".local" / "share" / "vlk-memact" / "hooks.log"
    lines = log.read_text(encoding="utf-8").splitlines()
    assert any("hook gemini" in line and "DATABASE_URL" in line for line in lines), lines[-5:]


def test_install_and_uninstall_round_trip_with_the_cli_keeps_the_users_own_hook(tmp_path: Path, api: ScriptedGemini):
    home = tmp_path / "home"
    dump = tmp_path / "theirs.jsonl"
    theirs = tmp_path / "theirs.sh"
    theirs.write_text(f'#!/bin/sh\ncat >> {dump}\necho >> {dump}\n', encoding="utf-8")
    theirs.chmod(0o755)
    user_hooks = {"AfterTool": [{"matcher": "run_shell_command", "hooks": [{"type": "command", "command": str(theirs),
                                                                          "name": "theirs"}]}]}
    settings = write_settings(home, {"hooks": user_hooks, "ui": {"theme": "GitHub"}})
    original = json.loads(settings.read_text(encoding="utf-8"))
    w = gemini_workspace(tmp_path, api)
    assert w.vlk("install", "gemini").returncode == 0
    assert w.vlk("install", "gemini").stdout.count("already installed, nothing to change.") == 1  # idempotent
    cmd = "ls /nonexistent-vlk-e2e-dir"
    w.run("go", shell(cmd), shell(cmd), shell(cmd), text("stop."))
    assert "vlk-memact:" in w.last[3].last_parts_text()
    assert dump.read_text(encoding="utf-8").count('"AfterTool"') == 3  # their hook ran beside ours
    done = w.vlk("uninstall", "gemini")
    assert done.returncode == 0, done.stderr
    assert json.loads(settings.read_text(encoding="utf-8")) == original
    w.run("go again", shell(cmd), shell(cmd), shell(cmd), shell(cmd), text("stop."))
    assert all("vlk-memact:" not in r.text() for r in w.last)  # ours is gone (no lesson, no loop text)
    assert dump.read_text(encoding="utf-8").count('"AfterTool"') == 7  # theirs still runs
