"""The readers of `vlk-memact learn` on what other versions of the hosts write: Claude Code's other line types,
missing fields, old in-file sidechains and compactions; Codex's older command records; Gemini CLI's older
chat documents and rewritten messages; OpenCode's older JSON storage; where each host's store is; the
progress lines without a terminal. Pure file reading: the real CLIs' own files are in test_learn_*_cli.py."""

from __future__ import annotations

import io
import json
import re
from datetime import timedelta
from pathlib import Path

from learn_transcripts import Transcript

from vlk_memact.cli.learn import BarProgress
from vlk_memact.hosts.shared import session_stores
from vlk_memact.learn import claude_code, codex, gemini, opencode


def names(session) -> list[str]:  # noqa: ANN001
    return [e.payload["hook_event_name"] for e in session.events]


def test_learn_claude_code_reads_old_sidechains_compactions_and_lines_missing_fields(tmp_path: Path) -> None:
    t = Transcript("/nowhere/app")
    t.prompt("go")
    t.bash("make", "make: *** [all] Error 2", 2)
    t.lines.append({"type": "summary", "summary": "Fixing the build", "leafUuid": "x"})
    t.at += timedelta(seconds=1)
    t.lines.append({"type": "system", "subtype": "compact_boundary", "sessionId": t.session_id,
                    "timestamp": t.at.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "uuid": "b1"})
    t.lines.append({"type": "file-history-snapshot", "snapshot": {}})
    t.call("Grep", {"pattern": "x"}, "nothing", isSidechain=True, agentId="agent-7")
    for line in t.lines[-2:]:
        del line["cwd"], line["uuid"]  # a version that wrote neither
    path = t.write(tmp_path)
    [source] = claude_code.sources(path)
    assert (source.session_id, source.cwd) == (t.session_id, "/nowhere/app")
    session = claude_code.read([source])
    assert names(session) == ["UserPromptSubmit", "PreToolUse", "PostToolUseFailure", "SessionStart",
                              "PreToolUse", "PostToolUse"]
    assert session.events[3].payload["source"] == "compact"
    assert session.events[4].payload["agent_id"] == "agent-7" and session.events[4].payload["cwd"] == "/nowhere/app"
    assert not session.skipped


def test_learn_claude_code_fires_what_the_host_fires_for_each_kind_of_error(tmp_path: Path) -> None:
    t = Transcript("/nowhere/app")
    t.call("Edit", {"file_path": "a"}, "<tool_use_error>File has not been read yet.</tool_use_error>", True)
    t.call("Bash", {"command": "ls"}, "Permission to use Bash has been denied because Claude Code is running in don't ask mode.", True)
    t.call("Bash", {"command": "make"}, "Exit code 2\nmake: *** [all] Error 2", True)
    session = claude_code.read(claude_code.sources(t.write(tmp_path)))
    assert names(session) == ["PreToolUse", "PreToolUse", "PostToolUseFailure"]
    assert [e.completes for e in session.events] == [True, False, True]


def test_learn_codex_reads_older_command_end_records(tmp_path: Path) -> None:
    records = [
        {"timestamp": "2026-01-05T10:00:00Z", "type": "session_meta", "payload": {"id": "s-1", "cwd": "/nowhere/c"}},
        {"timestamp": "2026-01-05T10:00:01Z", "type": "event_msg", "payload": {"type": "user_message",
                                                                              "message": "build"}},
        {"timestamp": "2026-01-05T10:00:02Z", "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "call_id": "c1",
            "arguments": json.dumps({"command": ["bash", "-lc", "cargo build"]})}},
        {"timestamp": "2026-01-05T10:00:03Z", "type": "event_msg", "payload": {
            "type": "exec_command_end", "call_id": "c1", "exit_code": 101, "stderr": "error[E0432]"}},
        {"timestamp": "2026-01-05T10:00:03Z", "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": "c1", "output": "error[E0432]"}},
        "not json",
    ]
    path = tmp_path / "rollout-2026-01-05T10-00-00-s-1.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n")
    assert session_stores.guess_host(path) == "codex"
    session = codex.read(codex.sources(path))
    assert names(session) == ["UserPromptSubmit", "PreToolUse", "PostToolUse"]
    post = session.events[-1]
    assert post.payload["tool_name"] == "Bash" and post.payload["tool_input"] == {"command": "cargo build"}
    assert post.options["outcome"].exit_code == 101 and post.failed_call == "c1"
    assert session.skipped == {"damaged or half-written line": 1}


def test_learn_gemini_reads_an_older_chat_document_and_the_last_record_of_a_message(tmp_path: Path) -> None:
    chats = tmp_path / ".gemini" / "tmp" / "app" / "chats"
    chats.mkdir(parents=True)
    (chats.parent / ".project_root").write_text("/nowhere/g\n")
    call = {"id": "run_1", "name": "run_shell_command", "args": {"command": "npm test"}, "status": "success",
            "timestamp": "2026-02-01T08:00:02Z", "result": [{"functionResponse": {"response": {
                "output": "Output: Error: Cannot find module 'x'\nExit Code: 1"}}}]}
    doc = {"sessionId": "g-1", "projectHash": "h", "startTime": "2026-02-01T08:00:00Z", "messages": [
        {"id": "u1", "type": "user", "timestamp": "2026-02-01T08:00:01Z", "content": [{"text": "test it"}]},
        {"id": "m1", "type": "gemini", "timestamp": "2026-02-01T08:00:01Z", "content": ""},
        {"id": "m1", "type": "gemini", "timestamp": "2026-02-01T08:00:01Z", "content": "", "toolCalls": [call]}]}
    path = chats / "session-2026-02-01T08-00-g1.json"
    path.write_text(json.dumps(doc))
    [source] = gemini.sources(path)
    assert (source.session_id, source.cwd) == ("g-1", "/nowhere/g")
    session = gemini.read([source])
    assert names(session) == ["BeforeAgent", "BeforeTool", "AfterTool"]
    assert session.events[-1].failed_call is not None  # Exit Code 1: hosts.gemini_events says it failed


def test_learn_opencode_reads_the_older_json_storage(tmp_path: Path) -> None:
    storage = tmp_path / "opencode" / "storage"
    session = {"id": "ses_1", "directory": "/nowhere/o", "time": {"created": 1767000000000}}
    (storage / "session" / "proj").mkdir(parents=True)
    (storage / "session" / "proj" / "ses_1.json").write_text(json.dumps(session))
    for n, (role, parts) in enumerate([("user", [{"type": "text", "text": "go"}]), ("assistant", [
            {"type": "tool", "tool": "bash", "callID": "c1", "state": {
                "status": "completed", "input": {"command": "make"}, "output": "Error 2",
                "metadata": {"exit": 2, "output": "make: *** Error 2"}, "time": {"start": 1767000001000,
                                                                                "end": 1767000002000}}},
            {"type": "tool", "tool": "read", "callID": "c2", "state": {"status": "running", "input": {}}}])]):
        (storage / "message" / "ses_1").mkdir(parents=True, exist_ok=True)
        (storage / "message" / "ses_1" / f"msg_{n}.json").write_text(json.dumps(
            {"id": f"msg_{n}", "role": role, "time": {"created": 1767000000000 + n}}))
        (storage / "part" / f"msg_{n}").mkdir(parents=True)
        for k, part in enumerate(parts):
            (storage / "part" / f"msg_{n}" / f"prt_{k}.json").write_text(json.dumps(part))
    [path] = session_stores.session_files("opencode", tmp_path / "opencode")
    read = opencode.read(opencode.sources(path))
    assert names(read) == ["tool.execute.before", "tool.execute.after"] and read.open_calls == 1
    assert read.events[-1].payload["metadata"] == {"exit": 2, "output": "make: *** Error 2"}


def test_learn_finds_each_host_s_store_where_its_environment_says() -> None:
    env = {"HOME": "/home/u", "CLAUDE_CONFIG_DIR": "/cfg/claude", "CODEX_HOME": "/cfg/codex",
           "GEMINI_CLI_HOME": "/cfg/g", "XDG_DATA_HOME": "/data"}
    assert [str(session_stores.store_root(h, env)) for h in session_stores.HOSTS] == [
        "/cfg/claude/projects", "/cfg/codex/sessions", "/cfg/g/.gemini/tmp", "/data/opencode"]
    assert str(session_stores.store_root("claude-code", {"HOME": "/home/u"})) == "/home/u/.claude/projects"


def test_learn_counts_a_project_s_past_claude_code_sessions(tmp_path: Path) -> None:
    project = tmp_path / "app"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    root = tmp_path / ".claude" / "projects"
    for cwd in (project / "src", tmp_path / "other"):  # started in a folder of the project, and elsewhere
        t = Transcript(str(cwd))
        t.prompt("hello")
        t.write(root / re.sub(r"[^A-Za-z0-9]", "-", str(cwd)))
    env = {"HOME": str(tmp_path)}
    assert session_stores.past_sessions("claude-code", project, env) == 1
    assert "Found 1 past Claude Code session" in session_stores.learn_note("claude-code", project, env)
    assert "No past Codex CLI sessions" in session_stores.learn_note("codex", project, env)


def test_learn_progress_without_a_terminal_is_a_line_per_1000_calls() -> None:
    out = io.StringIO()
    progress = BarProgress(out)
    progress.start(3)
    for _ in range(2500):
        progress.call()
    progress.session(2500)
    progress.close()
    assert out.getvalue().splitlines() == ["learn: 1000 calls learned (0 of 3 sessions done)",
                                           "learn: 2000 calls learned (0 of 3 sessions done)"]
