"""End to end with the real Codex CLI (pinned in tests/codex) and a scripted model on loopback.

Each test installs the hooks with the real `vlk-memact install codex` into a temporary CODEX_HOME, runs
`codex exec` headless in a temporary git project, and reads what the model was sent
(tests/scripted_openai.py). Codex runs untrusted hooks only with `--dangerously-bypass-hook-trust`; one
test trusts them with `install codex --trust` instead, and one shows doctor reporting them untrusted.
Needs `npm ci --prefix tests/codex` (CI fails without it, a dev machine skips).

Codex is started as few times as the assertions allow: the module shares one scripted model, and the loop
session (`loop`, module-scoped) is both the loop test's session and the earlier session whose lesson the
next session starts with; the module's tests run on one xdist worker (xdist_group).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from codex_harness import missing_cli, shell, thread_id, workspace
from host_harness import Loop, Workspace, failing_command, git_project, requires_cli
from scripted_openai import ScriptedOpenAI, host_fixtures, text

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900), pytest.mark.xdist_group("codex_cli")]
_cli_present = requires_cli(missing_cli)


api, ws, loop = host_fixtures(workspace, shell, thread_id)


def test_a_loop_is_announced_to_the_model_and_the_fourth_unchanged_repeat_is_denied(loop: Loop):
    turns = loop.turns
    first = turns[1].since_last_call()
    assert "nonexistent-vlk-e2e-dir" in first and "vlk-memact:" not in first
    # Captured with the exit code the rollout holds (PostToolUse itself carries none).
    history = loop.history
    assert any((s.get("raw_log") or "").startswith("Exit code 2\n") for s in history), history
    assert "now live 2 times" in turns[2].since_last_call()
    third = turns[3].since_last_call()
    assert "vlk-memact:" in third and "same error 3 times" in third
    fourth = turns[4].since_last_call()
    assert "Command blocked by PreToolUse hook: vlk-memact: not run." in fourth
    assert loop.runs.count("ran") == 3


def test_with_a_change_in_between_the_repeat_runs_with_a_warning(ws: Workspace, tmp_path: Path):
    marker = tmp_path / "runs.txt"
    cmd = failing_command(marker)
    ws.run("build it", shell(cmd), shell(cmd), shell(cmd), shell(f"echo changed > {ws.project}/fix.txt"),
           shell(cmd), text("stopped."))
    assert marker.read_text(encoding="utf-8").count("ran") == 4  # it ran
    after_repeat = ws.last[5].since_last_call()
    assert "Command blocked" not in after_repeat
    assert "something has changed since it last failed" in after_repeat


def test_a_success_is_never_recorded_as_a_failure(ws: Workspace):
    # Output that reads like an error, from commands that exit 0; and a grep that finds nothing (exit 1).
    result = ws.run("check", shell("echo 'Error: not really'; echo 'Traceback (most recent call last):'"),
                    shell("grep -q no-such-text /etc/hostname || echo none found"), text("ok."))
    history = json.loads(ws.vlk("history", "--limit", "50", "--session", thread_id(result) or "").stdout)
    assert history == []


def test_a_new_session_hears_the_loop_at_its_failure_and_another_project_sees_nothing(loop: Loop):
    ws, tmp_path = loop.ws, loop.root  # after the loop session: one session's loop, no broken environment
    ws.run("start again", shell("ls /nonexistent-vlk-e2e-dir"), text("ok."))
    assert "vlk-memact:" not in ws.last[0].system()  # nothing at the start (issue 34): it waits for its failure
    told = [r.text() for r in ws.last[1:] if "failed the same way in session" in r.text()]
    assert told and "not resolved there" in told[0], [r.text()[-600:] for r in ws.last]
    other = git_project(tmp_path / "other")
    ws.run("elsewhere", shell("ls /nonexistent-vlk-e2e-dir"), text("ok."), cwd=other)
    assert all("vlk-memact:" not in r.text() for r in ws.last)


def test_untrusted_hooks_are_reported_by_doctor_and_trusted_ones_run_without_the_bypass(ws: Workspace):
    doctor = ws.vlk("doctor", "--json")
    report = json.loads(doctor.stdout)
    trust = [c for c in report["checks"] if c["name"] == "codex hooks trusted"]
    assert trust and not trust[0]["ok"] and "would skip 4 of the 4" in trust[0]["detail"], trust
    # Without trust and without the bypass flag, Codex skips our hooks silently.
    cmd = "ls /nonexistent-vlk-e2e-dir"
    ws.run("go", shell(cmd), shell(cmd), shell(cmd), text("stop."), args=())
    assert all("vlk-memact:" not in r.text() for r in ws.last)
    trusted = ws.vlk("install", "codex", "--trust")
    assert trusted.returncode == 0, trusted.stdout + trusted.stderr
    assert "config.toml: added the trust of the 4 vlk-memact hooks (Codex's own hashes)." in trusted.stdout
    report = json.loads(ws.vlk("doctor", "--json").stdout)
    assert [c["ok"] for c in report["checks"] if c["name"] == "codex hooks trusted"] == [True]
    ws.run("go", shell(cmd), shell(cmd), shell(cmd), text("stop."), args=())
    assert "vlk-memact:" in ws.last[3].since_last_call()


def test_install_is_idempotent_and_uninstall_restores_the_users_hooks(tmp_path: Path, api: ScriptedOpenAI):
    home = tmp_path / "home"
    seen = tmp_path / "theirs.jsonl"
    theirs = tmp_path / "theirs.sh"
    theirs.write_text(f"#!/bin/sh\ncat >> {seen}\necho >> {seen}\n", encoding="utf-8")
    theirs.chmod(0o755)
    hooks = home / ".codex" / "hooks.json"
    hooks.parent.mkdir(parents=True)
    hooks.write_text(json.dumps({"hooks": {"PostToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": str(theirs), "timeout": 5}]}]}}, indent=2) + "\n", encoding="utf-8")
    original = json.loads(hooks.read_text(encoding="utf-8"))
    w = workspace(tmp_path, api)
    assert w.vlk("install", "codex").returncode == 0
    assert "Nothing changed: vlk-memact was already installed for Codex CLI." in w.vlk("install", "codex").stdout
    cmd = "ls /nonexistent-vlk-e2e-dir"
    w.run("go", shell(cmd), shell(cmd), shell(cmd), text("stop."))
    assert "vlk-memact:" in w.last[3].since_last_call()
    assert seen.read_text(encoding="utf-8").count('"PostToolUse"') == 3  # theirs ran beside ours
    assert w.vlk("uninstall", "codex").returncode == 0
    assert json.loads(hooks.read_text(encoding="utf-8")) == original
    w.run("go again", shell(cmd), shell(cmd), shell(cmd), shell(cmd), text("stop."))
    assert all("vlk-memact:" not in r.text() for r in w.last)
    assert seen.read_text(encoding="utf-8").count('"PostToolUse"') == 7
