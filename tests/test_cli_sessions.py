"""The command line finds what the hooks recorded (issue 36): read commands default to the project's latest
session and say which on stderr, `sessions` lists them with their host, `search` covers the project; the host
is stored with a session on both stores; the global options work before or after any command."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import hook_events as ev
import pytest
from conftest import PROJECT
from test_hooks_store import sqlite_at_version

from vlk_memact import Memory
from vlk_memact.cli import main
from vlk_memact.cli.parser import GlobalSubcommands, build_parser
from vlk_memact.hosts.claude_code import adapter as claude_code
from vlk_memact.hosts.gemini import adapter as gemini
from vlk_memact.hosts.opencode import adapter as opencode

EXPRESS = "Exit code 1\nnode:internal/modules/cjs/loader:1228\n  throw err;\n\nError: Cannot find module 'express'"


def hooks_fail(memory: Memory, session: str, command: str = "node app.js", times: int = 1) -> None:
    """What Claude Code's hooks do for a failing Bash call: a session start, then PreToolUse and the failure."""
    claude_code.handle(ev.session_start(session=session), memory)
    ev.run_failing(claude_code.handle, memory, command, EXPRESS, times, session=session)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def _no_host_session(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("VLK_HOST_SESSION_ID", "CLAUDE_CODE_SESSION_ID", "VLK_PROJECT", "DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)


def test_the_host_of_a_session_is_stored_and_listed_on_both_stores(memory: Memory) -> None:
    hooks_fail(memory, "cc-1")
    memory.record_state(raw_log="by hand", session_id="typed")  # no hook wrote it: the MCP tools or the CLI
    [typed, hooked] = memory.list_sessions()
    assert (typed.session_id, typed.host) == ("typed", None)
    assert (hooked.session_id, hooked.host, hooked.present) == ("cc-1", "claude-code", 1)
    assert memory.latest_session() == typed


def test_each_host_names_itself_and_a_capture_without_a_session_start_still_does(memory: Memory) -> None:
    ev.run_failing(claude_code.handle, memory, "make", EXPRESS, 1, session="no-start")  # installed mid-session
    gemini.handle({"session_id": "gem", "hook_event_name": "SessionStart", "cwd": "/work/project",
                   "source": "startup", "timestamp": "2026-01-01T00:00:00Z", "transcript_path": ""}, memory)
    opencode.handle({"hook_event_name": "session.start", "session_id": "oc", "cwd": "/work/project"}, memory)
    key = memory._key
    with memory.store.read() as tx:
        assert tx.session_host(key("no-start")) == "claude-code"
        assert tx.session_host(key("gem")) == "gemini"
        assert tx.session_host(key("oc")) == "opencode"
        assert tx.session_host(key("never")) is None


def test_summary_history_and_context_read_the_latest_session_and_say_which(
        database_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with Memory(database_url, project=PROJECT) as memory:
        hooks_fail(memory, "older")
        hooks_fail(memory, "newest", times=2)
    at = ("--database-url", database_url, "--project", PROJECT)
    code, out, err = run(capsys, *at, "summary")
    assert code == 0 and out.startswith("Session 'newest': 2 total timeline slots | 2 PRESENT")
    assert err.startswith("vlk-memact: session 'newest' (the latest of project 'test-project': claude-code, last "
                          "written ")
    code, out, err = run(capsys, *at, "history")
    assert {s["session_id"] for s in json.loads(out)} == {"newest"}  # stdout stays JSON; the note is on stderr
    assert "session 'newest'" in err
    code, out, err = run(capsys, *at, "summary", "--session", "older")
    assert out.startswith("Session 'older': 1 total") and err == ""  # named: nothing to say
    code, out, _ = run(capsys, *at, "summary", "--all")
    assert out.startswith("All projects: 2 session(s) in 1 project(s) | 3 total timeline slots | 3 PRESENT")


def test_the_hosts_own_session_comes_first_when_the_cli_runs_under_it(
        database_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(database_url, project=PROJECT) as memory:
        hooks_fail(memory, "mine")
        hooks_fail(memory, "someone-else")
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "mine")  # the agent's own Bash tool runs the command
    _, out, err = run(capsys, "--database-url", database_url, "--project", PROJECT, "summary")
    assert out.startswith("Session 'mine'") and "the session of the host this runs under" in err


def test_with_nothing_recorded_the_default_session_is_used_and_said(
        database_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--database-url", database_url, "--project", PROJECT, "summary")
    assert code == 0 and out.startswith("Session 'default': 0 total")
    assert "nothing is recorded in project 'test-project' yet" in err


def test_sessions_lists_the_projects_sessions_with_host_start_and_counts(
        database_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with Memory(database_url, project=PROJECT) as memory:
        hooks_fail(memory, "cc-1", times=3)
        memory.fetch_context(session_id="cc-1")
    with Memory(database_url, project="elsewhere") as other:
        other.record_state(raw_log="TypeError: x", session_id="typed")
    at = ("--database-url", database_url, "--project", PROJECT)
    code, out, err = run(capsys, *at, "sessions")
    header, row = out.splitlines()
    assert header.split() == ["SESSION", "HOST", "STARTED", "(UTC)", "LAST", "(UTC)", "PRESENT", "PAST", "FUTURE",
                              "LOOPS"]
    cells = row.split()
    assert cells[:2] == ["cc-1", "claude-code"] and cells[-4:] == ["0", "3", "1", "1"]
    assert "sessions of project 'test-project'" in err
    code, out, _ = run(capsys, *at, "sessions", "--all", "--json")
    listed = json.loads(out)
    assert [(s["session"], s["project"], s["host"]) for s in listed] == [
        ("typed", "elsewhere", None), ("cc-1", PROJECT, "claude-code")]
    assert listed[1]["past"] == 3 and listed[1]["loops"] == 1 and listed[1]["started"] <= listed[1]["last"]
    code, out, err = run(capsys, "--database-url", database_url, "--project", "empty", "sessions")
    assert (code, out) == (0, "") and "no session is recorded in project 'empty' yet" in err


def test_search_covers_every_session_of_the_project_by_default(
        database_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with Memory(database_url, project=PROJECT) as memory:
        hooks_fail(memory, "a")
        hooks_fail(memory, "b")
    with Memory(database_url, project="elsewhere") as other:
        other.record_state(raw_log="express is missing here too", session_id="c")
    at = ("--database-url", database_url, "--project", PROJECT)
    _, out, err = run(capsys, *at, "search", "express")
    assert sorted(s["session_id"] for s in json.loads(out)) == ["a", "b"] and err == ""
    _, out, _ = run(capsys, *at, "search", "express", "--session", "a")
    assert [s["session_id"] for s in json.loads(out)] == ["a"]
    _, out, _ = run(capsys, *at, "search", "express", "--all")
    assert sorted(s["session_id"] for s in json.loads(out)) == ["a", "b", "c"]
    _, out, _ = run(capsys, *at, "history", "--all", "--limit", "10")
    assert {s["session_id"] for s in json.loads(out)} == {"a", "b", "c"}


def test_global_options_are_taken_before_or_after_any_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path}/vlk.db"
    assert run(capsys, "record", "boom", "--database-url", url, "--project", "p", "--session", "s")[0] == 0
    for argv in (["--database-url", url, "--project", "p", "summary"], ["summary", "--database-url", url, "--project", "p"],
                 ["--database-url", url, "summary", "--project", "p"]):
        code, out, _ = run(capsys, *argv)
        assert code == 0 and out.startswith("Session 's': 1 total"), argv
    code, out, _ = run(capsys, "doctor", "--database-url", url)
    assert f"SQLite {url} (from --database-url)" in out


def test_every_command_shows_the_global_options_in_its_help_and_a_new_one_gets_them_for_free() -> None:
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name, sub in commands.items():
        text = sub.format_help()
        if name == "hook":  # the host runs it with the environment install wrote: no options of its own
            assert "--database-url" not in text
            continue
        assert "global options (before or after the command)" in text and "--database-url URL" in text, name
    action = next(a for a in parser._actions if isinstance(a, GlobalSubcommands))
    later = action.add_parser("a-new-command", help="what another issue adds")  # e.g. a command added by another module
    assert later.parse_args(["--project", "x", "-v"]) == argparse.Namespace(project="x", verbose=1)


def test_version_and_the_help_of_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.startswith("vlk-memact ")
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name, sub in commands.items():
        for action in sub._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"
    assert "stdio: the host starts this process" in commands["serve"].format_help()
    assert "the file or directory the error is about" in commands["record"].format_help()
    assert "(default: 50)" in commands["history"].format_help() and "(default: 20)" in commands["search"].format_help()
    travel = " ".join(commands["time-travel"].format_help().split())
    assert "the lesson, as the model should read it next time" in travel and "PROSPECTIVE: a rule for" in travel


def test_an_upgraded_sqlite_database_keeps_its_sessions_and_learns_hosts_from_now_on(tmp_path: Path) -> None:
    path = tmp_path / "v7.db"
    conn = sqlite_at_version(path, 7)
    conn.execute("INSERT INTO host_sessions (tenant, project, session_id) VALUES ('local', 'p', 'old')")
    conn.close()
    with Memory(f"sqlite:///{path}", project="p") as memory:
        with memory.store.read() as tx:
            assert tx.session_host(memory._key("old")) is None
        hooks_fail(memory, "new")
        assert memory.latest_session().host == "claude-code"  # type: ignore[union-attr]
