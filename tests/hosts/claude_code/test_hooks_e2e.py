"""The hooks inside the real Claude Code CLI (pinned in tests/claude-code), installed by `vlk-memact install`,
driven by a scripted model on loopback: what the model receives, what runs, what is stored.

(a) three identical failing commands: the next request carries the loop text; the fourth is denied and
does not run; (b) after a successful Edit it runs, with the warning; (c) a success retires the live
failures; (d) a new session of the project starts with the lesson, another project's does not; (e) a
broken DATABASE_URL: the session completes, the hook log names the problem; (f) with the MCP server
installed too, the model's vlk_fetch_context sees the hooks' slots of the same session; (g) install and
uninstall round trip on settings that already hold other hooks; (h) the host's own refusals (input checks,
permission refusals, a parallel call beside a failing one) never reach PostToolUseFailure in the real CLI
and are never recorded, looped or carried; (i) nor does a user's interrupt of a running command (SIGINT):
the CLI ends the session with no failure event.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from claude_code_harness import require_claude_code, run_claude
from scripted_anthropic import ModelRequest, ScriptedModel, ToolUse, tool_search

from record_claude_code_hooks import DUMP, dump_settings

from vlk_memact import Memory
from vlk_memact.hosts.claude_code import install

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ERROR_LINE = "Error: Cannot find module 'express'"
FAILING = f"echo run >> runs.log; echo \"{ERROR_LINE}\" >&2; exit 1"
VLK = str(Path(sys.executable).with_name("vlk-memact"))


def make_project(root: Path, name: str) -> Path:
    """A folder that is its own git repository (the project is the git root), with a file to edit."""
    folder = root / name
    (folder / ".git").mkdir(parents=True)
    (folder / "package.json").write_text('{"name": "app"}\n')
    return folder


def install_into(project: Path, home: Path, mcp: bool = False) -> None:
    install.apply(install.plan_install("local", project, home, with_server=mcp))


def runs(project: Path) -> int:
    log = project / "runs.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def request_after(model: ScriptedModel, tool_id: str) -> ModelRequest:
    for request in model.main_requests:
        if any(r.tool_use_id == tool_id for r in request.tool_results()):
            return request
    raise AssertionError(f"no request carried the result of {tool_id}")


def hook_texts(request: ModelRequest) -> list[str]:
    """The vlk-memact texts the CLI added after the model's last turn (it sends hook context as a message of
    role "system" right after the tool result)."""
    messages = request.messages
    last_turn = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    text = "\n".join(json.dumps(m.get("content"), ensure_ascii=False) for m in messages[last_turn + 1 :])
    return ["vlk-memact:" + part.split("\\n")[0] for part in text.split("vlk-memact:")[1:]]


def env_for(db: Path, **extra: str) -> dict[str, str]:
    # The warm hook server a run starts (hosts/shared/warm.py) goes away soon after the test.
    return {"DATABASE_URL": f"sqlite:///{db}", "VLK_HOOK_SERVER_IDLE_SECONDS": "10", **extra}


def fail_call(n: int) -> ToolUse:
    return ToolUse("Bash", {"command": FAILING, "description": "Run the tests"}, id=f"toolu_fail_{n}")


@pytest.fixture
def setup(tmp_path: Path) -> dict[str, Any]:
    require_claude_code()
    home = tmp_path / "home"
    home.mkdir()
    return {"home": home, "db": tmp_path / "vlk.db", "root": tmp_path}


def test_a_loop_is_announced_the_unchanged_fourth_call_denied_and_a_new_session_starts_with_it(setup: dict) -> None:
    home, db = setup["home"], setup["db"]
    project, other = make_project(setup["root"], "app"), make_project(setup["root"], "other")
    install_into(project, home)
    install_into(other, home)
    calls = [fail_call(n) for n in range(4)]
    with ScriptedModel([*calls, "Stopped retrying."]) as model:
        run = run_claude("Run the tests.", cwd=project, model=model, env=env_for(db), home=home)
    assert run.returncode == 0 and not run.is_error, run.describe()
    model.assert_done()
    # (a) the third failure's result comes back with the loop text; the fourth call never ran
    loop = hook_texts(request_after(model, calls[2].id))
    assert any("failed with the same error 3 times" in t and "loop anchor" in t for t in loop), loop
    second = hook_texts(request_after(model, calls[1].id))
    assert any("live 2 times" in t for t in second) and not any("loop anchor" in t for t in second), second
    denied = model.tool_result(calls[3].id)
    assert denied.is_error and "vlk-memact: not run" in denied.text, denied.text
    assert runs(project) == 3
    with Memory(f"sqlite:///{db}", project=str(project)) as memory:
        slots = memory.get_history(session_id=run.session_id).slots
    assert [s.origin for s in slots].count("anchor") == 1 and sum(s.origin == "record" for s in slots) == 3

    # (d) a new session of the same project starts with the lesson in its first request ...
    with ScriptedModel(["Noted."]) as model:
        again = run_claude("What do we know?", cwd=project, model=model, env=env_for(db), home=home)
    assert again.returncode == 0, again.describe()
    first = model.main_requests[0].text()
    assert "vlk-memact: what happened in earlier sessions of this project" in first and ERROR_LINE in first
    assert "failed 3 times" in first and "not resolved there" in first
    assert "CURRENT STRATEGY EXHAUSTED" not in first and "change approach" not in first  # facts, not orders
    # ... and another project's session does not
    with ScriptedModel(["Noted."]) as model:
        elsewhere = run_claude("What do we know?", cwd=other, model=model, env=env_for(db), home=home)
    assert elsewhere.returncode == 0, elsewhere.describe()
    assert "vlk-memact:" not in model.main_requests[0].text()


def test_the_hosts_refusals_are_never_failures_loops_or_lessons(setup: dict) -> None:
    """Claude Code's input checks (an Edit whose old_string is not in the file, an unknown tool), permission refusals (a
    tool not allowed in -p mode, a settings deny rule) and a parallel call beside a failing one, each three
    times: nothing of them is recorded, no loop forms, nothing is said, and a new session hears nothing."""
    home, db = setup["home"], setup["db"]
    project = make_project(setup["root"], "app")
    install_into(project, home)
    (project / "notes.txt").write_text("old\n")
    unread = [ToolUse("Edit", {"file_path": str(project / "notes.txt"), "old_string": "not in the file",
                               "new_string": "new"}, id=f"toolu_unread_{n}") for n in range(3)]
    unknown = [ToolUse("Frobnicate", {"x": 1}, id=f"toolu_unknown_{n}") for n in range(3)]
    not_allowed = [ToolUse("Write", {"file_path": str(project / "out.txt"), "content": "x"}, id=f"toolu_write_{n}")
                   for n in range(3)]
    denied = [ToolUse("Bash", {"command": "rm -f notes.txt"}, id=f"toolu_rm_{n}") for n in range(3)]
    parallel = [[fail_call(10 + n), ToolUse("Bash", {"command": "echo side >> side.log"}, id=f"toolu_side_{n}")]
                for n in range(1)]
    dumps = setup["root"] / "dumps"  # what the CLI itself sends to hooks, beside vlk-memact's
    dumps.mkdir()
    settings = {"permissions": {"deny": ["Bash(rm:*)"]}, **dump_settings(dumps)}
    with ScriptedModel([*unread, *unknown, *not_allowed, *denied, *parallel, "Done."]) as model:
        run = run_claude("Tidy up.", cwd=project, model=model, env=env_for(db), home=home, settings=settings,
                         allowed_tools=["Bash", "Edit"])
    assert run.returncode == 0, run.describe()
    model.assert_done()
    for call in [*unread, *unknown, *not_allowed, *denied]:
        result = model.tool_result(call.id)
        assert result.is_error, (call.name, result.text)  # the CLI refused it ...
        said = hook_texts(request_after(model, call.id))
        assert said == [], (call.name, result.text, said)  # ... and vlk-memact said nothing about it
    assert (project / "notes.txt").exists() and not (project / "out.txt").exists()
    # What Claude Code 2.1.328 itself does: none of these reaches PostToolUseFailure (input checks fire no
    # per-call hook; a refused call fires PreToolUse at most); only the real failure does.
    events = [json.loads(f.read_text()) for f in sorted(dumps.iterdir())]
    failed = {e.get("tool_use_id") for e in events if e["hook_event_name"] == "PostToolUseFailure"}
    assert failed == {parallel[0][0].id}, failed
    with Memory(f"sqlite:///{db}", project=str(project)) as memory:
        slots = memory.get_history(session_id=run.session_id).slots
    # Only the real failure of the parallel turn is recorded: no refusal, no loop, no anchor.
    assert [s.origin for s in slots] == ["record"], [(s.origin, s.raw_log) for s in slots]
    assert ERROR_LINE in (slots[0].raw_log or "")
    with ScriptedModel(["Noted."]) as model:
        again = run_claude("What do we know?", cwd=project, model=model, env=env_for(db), home=home)
    assert again.returncode == 0, again.describe()
    assert "vlk-memact:" not in model.main_requests[0].text()


def interrupt_when_started(marker: Path, group: bool) -> Any:
    """Send SIGINT once the command has started (it touches `marker` first), as a user's Ctrl-C would: to the CLI's
    whole process group (a terminal's foreground group) or to the `claude` process alone (`kill -INT`)."""
    def interrupt(process: subprocess.Popen[str]) -> None:
        deadline = time.monotonic() + 120  # generous: a loaded 2-core machine starts the CLI slowly
        while not marker.exists():
            assert process.poll() is None, f"claude exited {process.returncode} before the command started"
            assert time.monotonic() < deadline, "the command did not start within 120 s"
            time.sleep(0.1)
        time.sleep(0.5)  # the command is in its sleep
        if group:
            os.killpg(process.pid, signal.SIGINT)
        else:
            os.kill(process.pid, signal.SIGINT)
    return interrupt


def record_hook_exits(project: Path, exits: Path) -> None:
    """Wrap each installed vlk-memact hook so its exit status is written to `exits` (stdin and stdout pass through)."""
    path = project / ".claude" / "settings.local.json"
    settings = json.loads(path.read_text())
    script = '"$0" "$@"; s=$?; echo "$s" >> ' + str(exits) + '; exit $s'
    for groups in settings["hooks"].values():
        for group in groups:
            for hook in group["hooks"]:
                if hook.get("command") == VLK:
                    hook["args"] = ["-c", script, hook["command"], *hook["args"]]
                    hook["command"] = "/bin/sh"
    path.write_text(json.dumps(settings, indent=2))


def test_an_interrupt_is_never_a_failure_loop_or_lesson(setup: dict) -> None:
    """A user interrupts a running Bash command (SIGINT), in three sessions. What Claude Code 2.1.328 does: the
    command is killed, the session ends at once (exit 0, `is_error` with `terminal_reason: aborted_tools`), the model
    is not asked again, and no PostToolUse or PostToolUseFailure fires (so no `is_interrupt` either): PreToolUse,
    then SessionEnd. vlk-memact's hooks exit 0, log nothing, record nothing, and a new session hears nothing."""
    home, db = setup["home"], setup["db"]
    project = make_project(setup["root"], "app")
    install_into(project, home)
    exits = setup["root"] / "exits.log"
    record_hook_exits(project, exits)
    dumps = setup["root"] / "dumps"  # what the CLI itself sends to hooks, beside vlk-memact's
    dumps.mkdir()
    recorder = dump_settings(dumps)
    handler = recorder["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    assert handler["args"][1] == DUMP
    for event in ("PostToolBatch", "Stop", "StopFailure", "SessionEnd"):
        recorder["hooks"][event] = [{"hooks": [handler]}]
    sessions = []
    for n, group in enumerate([True, False, True]):
        marker = project / f"started_{n}"
        call = ToolUse("Bash", {"command": f"touch started_{n}; sleep 60; echo done > done_{n}",
                                "description": "Wait for the build"}, id=f"toolu_sleep_{n}")
        with ScriptedModel([call]) as model:
            run = run_claude("Wait for the build.", cwd=project, model=model, env=env_for(db), home=home,
                             settings=recorder, timeout=240, while_running=interrupt_when_started(marker, group))
        model.assert_done()
        assert run.returncode == 0 and isinstance(run.json, dict) and run.json["is_error"], run.describe()
        assert (run.json["subtype"], run.json["terminal_reason"]) == ("error_during_execution", "aborted_tools")
        assert len(model.main_requests) == 1  # the model is not asked again: the session is over
        assert marker.exists() and not (project / f"done_{n}").exists()  # the command started and was killed
        events = [json.loads(f.read_text()) for f in dumps.iterdir()]
        mine = [e for e in events if e["session_id"] == run.session_id]
        assert sorted(e["hook_event_name"] for e in mine) == sorted(
            ["SessionStart", "UserPromptSubmit", "PreToolUse", "SessionEnd"]), [e["hook_event_name"] for e in mine]
        assert [e["tool_use_id"] for e in mine if e["hook_event_name"] == "PreToolUse"] == [call.id]
        sessions.append(run.session_id)
    assert len(set(sessions)) == 3
    # vlk-memact ran on every event it is installed for (SessionStart, UserPromptSubmit, PreToolUse), exited 0 each
    # time and logged nothing
    assert exits.read_text().split() == ["0"] * 9, exits.read_text()
    log = home / ".local" / "share" / "vlk-memact" / "hooks.log"
    assert not log.exists() or log.read_text() == "", log.read_text()
    with Memory(f"sqlite:///{db}", project=str(project)) as memory:
        for session in sessions:
            slots = memory.get_history(session_id=session).slots
            assert slots == [], [(s.origin, s.raw_log) for s in slots]
    with ScriptedModel(["Noted."]) as model:
        again = run_claude("What do we know?", cwd=project, model=model, env=env_for(db), home=home)
    assert again.returncode == 0, again.describe()
    first = model.main_requests[0].text()
    assert "vlk-memact:" not in first and "sleep 60" not in first


def test_after_a_successful_edit_the_identical_call_runs_with_the_warning(setup: dict) -> None:
    home, db = setup["home"], setup["db"]
    project = make_project(setup["root"], "app")
    install_into(project, home)
    calls = [fail_call(n) for n in range(4)]
    read = ToolUse("Read", {"file_path": str(project / "package.json")}, id="toolu_read")
    edit = ToolUse("Edit", {"file_path": str(project / "package.json"), "old_string": '"app"',
                            "new_string": '"app", "dependencies": {"express": "^4"}'}, id="toolu_edit")
    with ScriptedModel([*calls[:3], read, edit, calls[3], "Still failing."]) as model:
        run = run_claude("Run the tests.", cwd=project, model=model, env=env_for(db), home=home,
                         allowed_tools=["Bash", "Read", "Edit"])
    assert run.returncode == 0, run.describe()
    model.assert_done()
    assert not model.tool_result(edit.id).is_error
    assert runs(project) == 4  # (b) it ran
    fourth = model.tool_result(calls[3].id)
    assert "Exit code 1" in fourth.text
    warning = hook_texts(request_after(model, calls[3].id))
    assert any("identical to a call whose failures formed a loop" in t and "something has changed" in t
               for t in warning), warning


def test_a_success_of_the_same_command_retires_its_live_failures(setup: dict) -> None:
    home, db = setup["home"], setup["db"]
    project = make_project(setup["root"], "app")
    install_into(project, home)
    check = "test -f built.flag || { echo 'build missing: run make' >&2; exit 2; }"
    calls = [ToolUse("Bash", {"command": check}, id=f"toolu_check_{n}") for n in range(3)]
    build = ToolUse("Bash", {"command": "touch built.flag"}, id="toolu_build")
    with ScriptedModel([calls[0], calls[1], build, calls[2], "Built."]) as model:
        run = run_claude("Check the build.", cwd=project, model=model, env=env_for(db), home=home)
    assert run.returncode == 0, run.describe()
    assert not model.tool_result(calls[2].id).is_error
    with Memory(f"sqlite:///{db}", project=str(project)) as memory:  # (c)
        slots = memory.get_history(session_id=run.session_id).slots
        assert sorted(s.retired_reason or "" for s in slots) == ["resolved", "resolved"]
        assert "build missing" not in memory.fetch_context(session_id=run.session_id).text


def test_a_broken_database_url_never_breaks_the_session_and_the_hook_log_says_why(setup: dict) -> None:
    home = setup["home"]
    project = make_project(setup["root"], "app")
    install_into(project, home)
    calls = [fail_call(n) for n in range(4)]
    broken = env_for(setup["root"] / "no" / "such" / "dir" / "vlk.db")
    broken["DATABASE_URL"] += "?mode=ro"
    with ScriptedModel([*calls, "Done anyway."]) as model:
        run = run_claude("Run the tests.", cwd=project, model=model, env=broken, home=home)
    assert run.returncode == 0 and run.result == "Done anyway.", run.describe()  # (e)
    model.assert_done()
    assert runs(project) == 4  # nothing was guarded, nothing failed because of the hooks
    assert all("vlk-memact" not in r.text() for r in model.main_requests)
    log = (home / ".local" / "share" / "vlk-memact" / "hooks.log").read_text()
    assert "could not open SQLite database" in log and "PostToolUseFailure" in log and "PreToolUse" in log


def test_the_models_own_fetch_context_sees_what_the_hooks_recorded_in_the_same_session(setup: dict) -> None:
    home, db = setup["home"], setup["db"]
    project = make_project(setup["root"], "app")
    install_into(project, home, mcp=True)  # (f) the MCP server entry, installed beside the hooks
    fetch = "mcp__vlk-memact__vlk_fetch_context"
    record = "mcp__vlk-memact__vlk_record_state"
    call = fail_call(0)
    load = tool_search(fetch, record)
    get = ToolUse(fetch, {"max_tokens": 800}, id="toolu_fetch")
    again = ToolUse(record, {"raw_log": ERROR_LINE}, id="toolu_record")  # the model records it too
    with ScriptedModel([call, load, get, again, "Seen."]) as model:
        run = run_claude("Run the tests.", cwd=project, model=model, env=env_for(db), home=home,
                         allowed_tools=["Bash", "mcp__vlk-memact"])
    assert run.returncode == 0, run.describe()
    model.assert_done()
    seen = model.tool_result(get.id)
    assert not seen.is_error and ERROR_LINE in seen.text and run.session_id in seen.text
    recorded = model.tool_result(again.id)
    assert "recorded this same error moments ago" in recorded.text, recorded.text
    with Memory(f"sqlite:///{db}", project=str(project)) as memory:
        slots = memory.get_history(session_id=run.session_id).slots
    assert [s.origin for s in slots] == ["record"]  # one occurrence, in the host's session


def test_install_and_uninstall_round_trip_beside_other_hooks(setup: dict) -> None:
    home, db = setup["home"], setup["db"]
    project = make_project(setup["root"], "app")
    theirs = project / "theirs.log"
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    original = {
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": f"echo their-hook >> {theirs}", "timeout": 5}]}]},
    }
    settings.write_text(json.dumps(original, indent=2))
    def cli(*args: str) -> str:
        done = subprocess.run([VLK, *args], cwd=project, env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    cli("install", "claude-code")  # (g) default scope: local
    assert "\nNothing changed: vlk-memact was already installed for Claude Code.\nNo past Claude Code sessions" in cli(
        "install", "claude-code")
    merged = json.loads(settings.read_text())
    assert merged["permissions"] == original["permissions"]
    assert original["hooks"]["PostToolUse"][0] in merged["hooks"]["PostToolUse"]
    assert sorted(project.joinpath(".claude").iterdir()) == [settings]  # the backup is in the user data directory
    assert list((home / ".local" / "share" / "vlk-memact" / "backups" / "claude-code").glob("*settings.local.json"))
    with ScriptedModel([fail_call(0), ToolUse("Bash", {"command": "true"}), "ok"]) as model:
        run = run_claude("Go.", cwd=project, model=model, env=env_for(db), home=home)
    assert run.returncode == 0, run.describe()
    assert theirs.read_text().count("their-hook") == 1  # theirs ran ...
    with Memory(f"sqlite:///{db}", project=str(project)) as memory:  # ... and ours did
        assert len(memory.get_history(session_id=run.session_id).slots) == 1

    cli("uninstall", "claude-code")
    assert json.loads(settings.read_text()) == original
    assert "vlk-memact" not in json.dumps(json.loads((home / ".claude.json").read_text()))
    with ScriptedModel([fail_call(1), ToolUse("Bash", {"command": "true"}), "ok"]) as model:
        after = run_claude("Go.", cwd=project, model=model, env=env_for(db), home=home)
    assert after.returncode == 0, after.describe()
    assert theirs.read_text().count("their-hook") == 2
    with Memory(f"sqlite:///{db}", project=str(project)) as memory:
        assert memory.get_history(session_id=after.session_id).slots == []


# ---- the plugin shipped at the repository root ----

ROOT = Path(__file__).resolve().parents[3]
PLUGIN_TOOL = "mcp__plugin_vlk-memact_vlk-memact__vlk_fetch_context"


def plugin_env(db: Path) -> dict[str, str]:
    """The plugin runs `vlk-memact` from PATH, as a user's pipx install provides it."""
    from claude_code_harness import NODE22_BIN

    path = f"{Path(sys.executable).parent}:{NODE22_BIN}:/usr/local/bin:/usr/bin:/bin"
    return {**env_for(db), "PATH": path}


def test_the_repository_is_a_valid_plugin_marketplace(setup: dict) -> None:
    from claude_code_harness import NODE22_BIN, claude_command

    done = subprocess.run([*claude_command(), "plugin", "validate", str(ROOT)], capture_output=True, text=True,
                          timeout=120, env={"HOME": str(setup["home"]), "PATH": f"{NODE22_BIN}:/usr/bin:/bin",
                                            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"})
    assert done.returncode == 0 and "Validation passed" in done.stdout, done.stdout + done.stderr
    assert 'PreToolUse * command vlk-memact ["hook","claude-code","--from-plugin"]' in done.stdout


def test_the_plugin_records_guards_and_serves_the_same_session(setup: dict) -> None:
    home, db = setup["home"], setup["db"]
    project = make_project(setup["root"], "app")
    calls = [fail_call(n) for n in range(4)]
    get = ToolUse(PLUGIN_TOOL, {}, id="toolu_fetch")
    with ScriptedModel([*calls, tool_search(PLUGIN_TOOL), get, "ok"]) as model:
        run = run_claude("Run the tests.", cwd=project, model=model, env=plugin_env(db), home=home,
                         allowed_tools=["Bash", "mcp__plugin_vlk-memact_vlk-memact"],
                         extra_args=["--plugin-dir", str(ROOT)])
    assert run.returncode == 0, run.describe()
    model.assert_done()
    assert runs(project) == 3 and "vlk-memact: not run" in model.tool_result(calls[3].id).text
    seen = model.tool_result(get.id)
    assert not seen.is_error and run.session_id in seen.text and "anchor" in seen.text.lower()


def test_the_plugin_beside_settings_hooks_stays_silent_and_nothing_is_recorded_twice(setup: dict) -> None:
    home, db = setup["home"], setup["db"]
    project = make_project(setup["root"], "app")
    install_into(project, home)
    with ScriptedModel([fail_call(0), "ok"]) as model:
        run = run_claude("Run the tests.", cwd=project, model=model, env=plugin_env(db), home=home,
                         extra_args=["--plugin-dir", str(ROOT)])
    assert run.returncode == 0, run.describe()
    with Memory(f"sqlite:///{db}", project=str(project)) as memory:
        assert len(memory.get_history(session_id=run.session_id).slots) == 1
    log = (home / ".local" / "share" / "vlk-memact" / "hooks.log").read_text()
    assert "installed twice" in log


def test_installed_from_a_subfolder_the_hooks_go_to_the_git_root_and_run_from_anywhere_in_it(setup: dict) -> None:
    """One rule for a project install (issue 36): the git root, whatever folder `install` runs in; Claude Code
    finds them there when started in a subfolder too."""
    home, db = setup["home"], setup["db"]
    project = make_project(setup["root"], "app")
    below = project / "src" / "pkg"
    below.mkdir(parents=True)
    done = subprocess.run([VLK, "install", "claude-code"], cwd=below, env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and f"{project}/.claude/settings.local.json: added the" in done.stdout, done.stderr
    assert not (below / ".claude").exists()
    with ScriptedModel([fail_call(0), "ok"]) as model:
        run = run_claude("Go.", cwd=below, model=model, env=env_for(db), home=home)
    assert run.returncode == 0, run.describe()
    with Memory(f"sqlite:///{db}", project=str(project)) as memory:
        assert len(memory.get_history(session_id=run.session_id).slots) == 1
