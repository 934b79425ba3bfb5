"""`vlk-memact learn` on Claude Code session files, on both stores: the same memory the hooks build, none of
the host's refusals, secrets redacted, damaged lines counted, sessions that grew, copies, calls the live
hooks captured, subagents, --since, and a run interrupted (Ctrl-C, kill) resuming where it stopped."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from learn_transcripts import START, Transcript, fixing_session, sessions

from vlk_memact import Memory, Settings
from vlk_memact.engine.fix_memory import fix_line, list_fixes
from vlk_memact.hosts.claude_code import adapter as claude_code
from vlk_memact.learn import claude_code as reader
from vlk_memact.learn.driver import Options, Progress, learn

CWD = "/nowhere/app"  # not on this machine: the project is the directory as recorded


def learn_folder(memory: Memory, folder: Path, **options: Any):  # noqa: ANN201
    return learn(memory, Options(paths=(folder,), host="claude-code", **options))


def state(memory: Memory, project: str = CWD) -> tuple[list[tuple[str, str, str]], list[str]]:
    """What the project's memory holds: (session, state, log) of every slot, and every fix's line."""
    mine = memory.for_project(project)
    with mine.store.read() as tx:
        found = {s for f in tx.fixes(mine.tenant, project, None, 1000) for s in [f.session_id]}
        sessions_ = [o.session_id for o in tx.sessions(mine.tenant, project, 1000)] + sorted(found)
    slots = sorted({(s.session_id, s.temporal_state, s.raw_log or s.learning_summary or "")
                    for sid in set(sessions_) for s in mine.get_history(session_id=sid, limit=1000).slots})
    return slots, sorted(fix_line(f) for f in list_fixes(mine, limit=1000))


def test_learn_gives_the_memory_replaying_the_events_through_the_hook_gives(tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    files = sessions(folder, CWD, 6)
    settings = Settings.from_env({})
    with Memory(f"sqlite:///{tmp_path / 'learned.db'}", settings=settings, project=CWD) as learned:
        report = learn_folder(learned, folder)
        got = state(learned)
    with Memory(f"sqlite:///{tmp_path / 'live.db'}", settings=settings, project=CWD) as live:
        for path in files:
            session = reader.read(reader.sources(path))
            claude_code.handle(reader.start_event(session, "startup"), live)
            for event in session.events:
                claude_code.handle(event.payload, live)
        want = state(live)
    assert got == want and len(want[1]) == 6
    assert report.total("sessions") == 6 and report.total("failures") == 18 and report.total("fixes") == 6
    assert report.total("loops") == 6


def test_learn_stamps_what_it_stores_with_the_session_s_own_times(memory: Memory, tmp_path: Path) -> None:
    t = fixing_session(CWD, START, 1)
    t.write(tmp_path)
    learn_folder(memory, tmp_path)
    mine = memory.for_project(CWD)
    slots = mine.get_history(session_id=t.session_id, limit=100).slots
    assert {s.created_at[:13] for s in slots} == {"2026-11-02 09"}
    assert {f.created_at[:13] for f in list_fixes(mine)} == {"2026-11-02 09"}


def test_learn_stores_none_of_the_host_s_refusals(memory: Memory, tmp_path: Path) -> None:
    t = Transcript(CWD)
    for _ in range(3):
        t.call("Edit", {"file_path": "a.py", "old_string": "x", "new_string": "y"},
               "<tool_use_error>String to replace not found in file.\nString: x</tool_use_error>", True)
        t.call("Bash", {"command": "make"}, "<tool_use_error>Sibling tool call errored</tool_use_error>", True)
        t.call("Bash", {"command": "rm -rf build"}, "The user doesn't want to proceed with this tool use. The tool "
               "use was rejected (eg. if it was a file edit, the new_string was NOT written to the file).", True)
        t.call("Bash", {"command": "sleep 100"}, "[Request interrupted by user for tool use]", True)
        t.call("Write", {"file_path": "b.py", "content": ""}, "File has not been read yet. Read it first before "
               "writing to it.", True)
    t.write(tmp_path)
    report = learn_folder(memory, tmp_path)
    assert report.total("failures") == 0 and report.total("loops") == 0
    assert memory.for_project(CWD).get_history(session_id=t.session_id).slots == []


def test_learn_redacts_secrets_in_a_failing_result(memory: Memory, tmp_path: Path) -> None:
    t = Transcript(CWD)
    key = "AKIA" + "Q3EGZ7XKWT4JH2MB"
    t.bash("aws s3 ls", f"An error occurred (InvalidAccessKeyId): key {key} is not valid", 255)
    t.write(tmp_path)
    assert learn_folder(memory, tmp_path).total("failures") == 1
    [slot] = memory.for_project(CWD).get_history(session_id=t.session_id).slots
    assert key not in (slot.raw_log or "") and key not in (slot.tool_payload or "")


def test_learn_counts_damaged_and_half_written_lines_and_learns_the_rest(memory: Memory, tmp_path: Path) -> None:
    t = fixing_session(CWD, START, 1)
    path = t.write(tmp_path)
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(3, "{not json at all\n")
    lines.insert(5, "[1, 2, 3]\n")
    path.write_text("".join(lines) + lines[-1][: len(lines[-1]) // 2])  # the session being written right now
    report = learn_folder(memory, tmp_path)
    assert report.skipped == {"damaged or half-written line": 2, "line that is not a JSON object": 1}
    assert report.total("failures") == 3 and report.total("fixes") == 1


def test_learn_a_session_that_grew_adds_only_its_new_calls(memory: Memory, tmp_path: Path) -> None:
    t = fixing_session(CWD, START, 1, calls=2)
    t.write(tmp_path)
    first = learn_folder(memory, tmp_path)
    t.prompt("and the linter")  # resumed later: the same file grows
    for _ in range(2):
        t.bash("ruff check .", "E501 line too long (120 > 110)", 1)
    t.write(tmp_path)
    second = learn_folder(memory, tmp_path)
    assert (first.total("calls"), second.total("calls")) == (7, 2)
    assert (second.total("sessions"), second.total("failures")) == (1, 2)
    logs = [s.raw_log for s in memory.for_project(CWD).get_history(session_id=t.session_id, limit=100).slots]
    assert sum("ModuleNotFoundError" in (log or "") for log in logs) == 3  # nothing learned twice
    assert learn_folder(memory, tmp_path).total("calls") == 0


def test_learn_copies_of_a_session_and_calls_the_live_hooks_captured_count_once(memory: Memory, tmp_path: Path) -> None:
    t = fixing_session(CWD, START, 1, calls=2)
    path = t.write(tmp_path / "a")
    (tmp_path / "b").mkdir()
    shutil.copy(path, tmp_path / "b" / "checkpoint-copy.jsonl")  # another file, the same session's lines
    live = reader.read(reader.sources(path))
    mine = memory.for_project(CWD)
    for event in live.events[:4]:  # the hooks were installed for the first calls
        claude_code.handle(event.payload, mine)
    report = learn_folder(memory, tmp_path)
    assert report.total("failures") == 2  # the third failure; the first two the hooks had stored
    logs = [s.raw_log for s in mine.get_history(session_id=t.session_id, limit=100).slots]
    assert sum("ModuleNotFoundError" in (log or "") for log in logs) == 3


def test_learn_feeds_a_subagent_s_calls_to_its_parent_session(memory: Memory, tmp_path: Path) -> None:
    t = Transcript(CWD)
    t.prompt("investigate")
    t.call("Task", {"prompt": "look"}, "done")
    sub = Transcript(CWD, session_id=t.session_id, at=t.at, calls=100)
    sub.bash("cargo build", "error[E0432]: unresolved import `foo`", 101)
    t.write(tmp_path)
    folder = tmp_path / t.session_id / "subagents"
    folder.mkdir(parents=True)
    (folder / "agent-a1.jsonl").write_text("".join(json.dumps(line | {"isSidechain": True, "agentId": "a1"}) + "\n"
                                                   for line in sub.lines))
    report = learn_folder(memory, tmp_path)
    assert report.total("sessions") == 1 and report.total("failures") == 1
    [slot] = memory.for_project(CWD).get_history(session_id=t.session_id).slots
    assert "E0432" in (slot.raw_log or "")


def test_learn_since_leaves_older_sessions_alone(memory: Memory, tmp_path: Path) -> None:
    sessions(tmp_path, CWD, 3)
    report = learn_folder(memory, tmp_path, since=START + timedelta(hours=1))
    assert report.total("sessions") == 2 and report.before_since == 1


class StopAfter(Progress):
    """Ctrl-C after n calls."""

    def __init__(self, n: int) -> None:
        self.left = n

    def call(self) -> None:
        self.left -= 1
        if self.left == 0:
            raise KeyboardInterrupt


def test_learn_interrupted_resumes_where_it_stopped(memory: Memory, tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    sessions(folder, CWD, 8)
    with pytest.raises(KeyboardInterrupt):
        learn(memory, Options(paths=(folder,), host="claude-code"), StopAfter(40))
    with Memory(store=memory.store, settings=memory.settings, project=CWD) as fresh:  # after a rollback: new caches
        rest = learn(fresh, Options(paths=(folder,), host="claude-code"))
        got = state(fresh)
    with Memory(f"sqlite:///{tmp_path / 'straight.db'}", settings=memory.settings, project=CWD) as straight:
        whole = learn(straight, Options(paths=(folder,), host="claude-code"))
        want = state(straight)
    assert 0 < rest.total("calls") < whole.total("calls")
    assert [s[1:] for s in got[0]] == [s[1:] for s in want[0]] and got[1] == want[1]


KILLER = """
import os, signal, sys
from pathlib import Path
from vlk_memact import Memory, Settings
from vlk_memact.learn.driver import Options, Progress, learn

class Kill(Progress):
    seen = 0
    def call(self):
        self.seen += 1
        if self.seen == int(sys.argv[3]):
            os.kill(os.getpid(), signal.SIGKILL)

with Memory(sys.argv[1], settings=Settings.from_env({})) as memory:
    learn(memory, Options(paths=(Path(sys.argv[2]),), host="claude-code"), Kill())
"""


def test_learn_killed_midway_loses_and_doubles_nothing(tmp_path: Path) -> None:
    folder, url = tmp_path / "projects", f"sqlite:///{tmp_path / 'vlk.db'}"
    sessions(folder, CWD, 8)
    killed = subprocess.run([sys.executable, "-c", KILLER, url, str(folder), "70"], capture_output=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with Memory(url, settings=Settings.from_env({}), project=CWD) as memory:
        learn(memory, Options(paths=(folder,), host="claude-code"))
        got = state(memory)
    with Memory(f"sqlite:///{tmp_path / 'straight.db'}", settings=Settings.from_env({}), project=CWD) as straight:
        learn(straight, Options(paths=(folder,), host="claude-code"))
        want = state(straight)
    assert [s[1:] for s in got[0]] == [s[1:] for s in want[0]] and got[1] == want[1]


def test_learn_dry_run_writes_nothing(tmp_path: Path) -> None:
    folder, db = tmp_path / "projects", tmp_path / "vlk.db"
    sessions(folder, CWD, 2)
    vlk = str(Path(sys.executable).with_name("vlk-memact"))
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "DATABASE_URL": f"sqlite:///{db}"}
    dry = subprocess.run([vlk, "learn", str(folder), "--dry-run", "--json"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["failures"] == 6 and not db.exists()  # not even created
    real = subprocess.run([vlk, "learn", str(folder)], env=env, capture_output=True, text=True, timeout=120)
    assert real.returncode == 0 and "Learned 2 sessions" in real.stdout, real.stderr
    before = db.read_bytes()
    sessions(tmp_path / "more", CWD, 1)
    again = subprocess.run([vlk, "learn", str(tmp_path / "more"), str(folder), "--dry-run", "--json"], env=env,
                           capture_output=True, text=True, timeout=120)
    assert json.loads(again.stdout)["sessions_learned"] == 1  # what a real run would add: the new session only
    # The database is as it was; a SQLite reader of a WAL file may leave its shared-memory index, never a frame.
    assert db.read_bytes() == before and not (tmp_path / "vlk.db-wal").read_bytes()


def test_learn_project_puts_every_session_under_one_key(memory: Memory, tmp_path: Path) -> None:
    sessions(tmp_path, CWD, 2)
    report = learn_folder(memory, tmp_path, project="one-key")
    assert list(report.projects) == ["one-key"] and report.total("fixes") == 2
    assert len(list_fixes(memory.for_project("one-key"))) == 2 and list_fixes(memory.for_project(CWD)) == []


def test_learn_a_folder_of_several_hosts_files_gives_each_to_its_reader(memory: Memory, tmp_path: Path) -> None:
    fixing_session(CWD, START, 1, calls=0).write(tmp_path)
    rollout = [{"timestamp": "2026-11-03T10:00:00Z", "type": "session_meta", "payload": {"id": "c-1", "cwd": CWD}},
               {"timestamp": "2026-11-03T10:00:01Z", "type": "response_item", "payload": {
                   "type": "function_call", "name": "exec_command", "call_id": "call_1",
                   "arguments": json.dumps({"cmd": "make"})}},
               {"timestamp": "2026-11-03T10:00:02Z", "type": "event_msg", "payload": {
                   "type": "item_completed", "item": {"type": "CommandExecution", "id": "call_1", "exit_code": 2,
                                                      "aggregated_output": "make: *** [all] Error 2"}}},
               {"timestamp": "2026-11-03T10:00:02Z", "type": "response_item", "payload": {
                   "type": "function_call_output", "call_id": "call_1", "output": "make: *** [all] Error 2"}}]
    (tmp_path / "rollout-2026-11-03T10-00-00-c-1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rollout))
    report = learn(memory, Options(paths=(tmp_path,)))
    assert report.total("sessions") == 2 and report.total("failures") == 4 and report.skipped == {}
    [slot] = memory.for_project(CWD).get_history(session_id="c-1").slots
    assert slot.raw_log == "Exit code 2\nmake: *** [all] Error 2"


def test_learn_names_the_repository_s_files_relative_to_its_root(memory: Memory, tmp_path: Path) -> None:
    """As the live hooks (issue 35): a session of a checkout on this machine is stored under its repository's
    key, its files named relative to the root; a path outside the repository stays."""
    root = tmp_path / "checkout"
    (root / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", "git@h:acme/app.git"], check=True)
    t = Transcript(str(root / "src"))
    t.bash(f"python3 {root}/src/app.py", f'File "{root}/src/app.py", line 3\nImportError: /usr/lib/x.so', 1)
    t.write(tmp_path / "projects")
    assert learn_folder(memory, tmp_path / "projects").total("failures") == 1
    [slot] = memory.for_project("h/acme/app").get_history(session_id=t.session_id).slots
    assert str(root) not in (slot.raw_log or "") + (slot.tool_payload or "")
    assert 'File "src/app.py", line 3' in (slot.raw_log or "") and "/usr/lib/x.so" in (slot.raw_log or "")
