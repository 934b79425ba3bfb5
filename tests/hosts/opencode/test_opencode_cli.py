"""End to end with the real OpenCode CLI (pinned in tests/opencode) and a scripted model on loopback.

Each test installs the plugin with the real `vlk-memact install opencode` into a temporary git project,
runs `opencode run` headless there, and reads what the model was sent (tests/scripted_openai.py). Needs
`npm ci --prefix tests/opencode` (CI fails without it, a dev machine skips); nothing is downloaded at test
time (tests/opencode_harness.py: seed_plugin_sdk).

OpenCode is started as few times as the assertions allow: the module shares one scripted model, and the
loop session (`loop`, module-scoped) is both the loop test's session and the earlier session whose lesson
the next session starts with; the module's tests run on one xdist worker (xdist_group).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from host_harness import Loop, Workspace, failing_command, git_project, requires_cli
from opencode_harness import missing_cli, session_id, shell, workspace
from scripted_openai import ScriptedOpenAI, call, host_fixtures, text

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900), pytest.mark.xdist_group("opencode_cli")]
_cli_present = requires_cli(missing_cli)


api, ws, loop = host_fixtures(workspace, shell, session_id)


def test_a_loop_is_announced_to_the_model_and_the_fourth_unchanged_repeat_is_blocked(loop: Loop):
    turns = loop.turns
    # The first failure is captured (with its exit code), and nothing is said about it.
    first = turns[1].since_last_call()
    assert "nonexistent-vlk-e2e-dir" in first and "vlk-memact:" not in first
    history = loop.history
    assert any("Exit code 2" in (s.get("raw_log") or "") for s in history), history
    assert "now live 2 times" in turns[2].since_last_call()
    # The third: the loop text reaches the model with the tool result.
    third = turns[3].since_last_call()
    assert "vlk-memact:" in third and "same error 3 times" in third
    # The fourth identical call, nothing changed: thrown before it ran; the model reads the reason.
    fourth = turns[4].since_last_call()
    assert "vlk-memact: not run." in fourth
    assert loop.runs.count("ran") == 3


def test_a_tool_call_that_throws_is_captured_and_the_loop_note_reaches_the_next_request(ws: Workspace):
    read = call("read", filePath=str(ws.project / "missing.txt"))
    result = ws.run("read it", read, read, read, read, text("stopped."))
    turns = ws.last
    history = json.loads(ws.vlk("history", "--limit", "50", "--session", session_id(result) or "").stdout)
    assert len(history) >= 3, history
    assert all("File not found" in json.dumps(s) for s in history), history
    assert "vlk-memact:" not in turns[1].text()
    assert "now live 2 times" in turns[2].system()  # the note rides the next request's system prompt
    assert "same error 3 times" in turns[3].system() and "now live 2 times" not in turns[3].system()  # once each
    assert "vlk-memact: not run." in turns[4].since_last_call()  # the fourth read was thrown before it ran


def test_with_an_edit_in_between_the_repeat_runs_with_a_warning(ws: Workspace, tmp_path: Path):
    marker = tmp_path / "runs.txt"
    cmd = failing_command(marker)
    ws.run("build it", shell(cmd), shell(cmd), shell(cmd),
           call("write", filePath=str(ws.project / "fix.txt"), content="changed\n"),
           shell(cmd), text("stopped."))
    assert marker.read_text(encoding="utf-8").count("ran") == 4  # it ran
    after_repeat = ws.last[5].since_last_call()
    assert "not run." not in after_repeat
    assert "something has changed since it last failed" in after_repeat


def test_a_new_session_hears_the_loop_at_its_failure_and_another_project_sees_nothing(loop: Loop):
    ws, tmp_path = loop.ws, loop.root  # after the loop session: one session's loop, no broken environment
    ws.run("start again", shell("ls /nonexistent-vlk-e2e-dir"), text("ok."))
    assert "vlk-memact:" not in ws.last[0].system()  # nothing at the start (issue 34): it waits for its failure
    told = [r.text() for r in ws.last[1:] if "failed the same way in session" in r.text()]
    assert told and "not resolved there" in told[0], [r.text()[-600:] for r in ws.last]
    other = git_project(tmp_path / "other")
    ws.vlk("install", "opencode", cwd=other)
    ws.run("elsewhere", shell("ls /nonexistent-vlk-e2e-dir"), text("ok."), cwd=other)
    assert all("vlk-memact:" not in r.text() for r in ws.last)


def test_a_continued_session_gets_its_live_errors_back_and_a_second_copy_stays_silent(ws: Workspace):
    user = ws.vlk("install", "opencode", "--scope", "user")  # now in both scopes: one copy answers
    assert user.returncode == 0, user.stderr
    first = ws.run("build it", shell("ls /nonexistent-vlk-e2e-dir"), text("stopped."))
    history = json.loads(ws.vlk("history", "--limit", "50", "--session", session_id(first) or "").stdout)
    assert len(history) == 1, history
    ws.run("go on", text("ok."), args=("--continue",))
    system = ws.last[0].system()
    assert "nonexistent-vlk-e2e-dir" in system
    assert system.count("vlk-memact: this session's memory so far") == 1  # two copies would say it twice


def test_install_is_idempotent_and_uninstall_leaves_other_plugins_running(tmp_path: Path, api: ScriptedOpenAI):
    project = git_project(tmp_path / "project")
    plugins = project / ".opencode" / "plugins"
    plugins.mkdir(parents=True)
    seen = tmp_path / "theirs.txt"
    theirs = plugins / "theirs.js"
    theirs.write_text(
        'import { appendFileSync } from "node:fs";\n'
        'export const Theirs = async () => ({ "tool.execute.after": async () => { '
        f'appendFileSync({json.dumps(str(seen))}, "after\\n"); }} }});\n', encoding="utf-8")
    original = theirs.read_text(encoding="utf-8")
    w = workspace(tmp_path, api, project)
    assert w.vlk("install", "opencode").returncode == 0
    again = w.vlk("install", "opencode")
    assert again.returncode == 0 and "Nothing changed: vlk-memact was already installed for OpenCode." in again.stdout
    cmd = "ls /nonexistent-vlk-e2e-dir"
    w.run("go", shell(cmd), shell(cmd), shell(cmd), text("stop."))
    assert "vlk-memact:" in w.last[3].since_last_call()
    assert seen.read_text(encoding="utf-8").count("after") == 3  # their plugin ran beside ours
    done = w.vlk("uninstall", "opencode")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in plugins.iterdir()) == ["theirs.js"]
    assert theirs.read_text(encoding="utf-8") == original
    w.run("go again", shell(cmd), shell(cmd), shell(cmd), shell(cmd), text("stop."))
    assert all("vlk-memact:" not in r.text() for r in w.last)  # ours is gone
    assert seen.read_text(encoding="utf-8").count("after") == 7  # theirs still runs
