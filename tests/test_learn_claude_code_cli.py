"""`vlk-memact learn` on Claude Code's own session files, written by the real CLI (pinned in tests/claude-code)
against a scripted model: a first session, without vlk-memact, fails and fixes an error (and meets one of
Claude Code's input checks); `learn` reads the files it left; a later session with the hooks installed is
told the fix right after the error comes back. One CLI start per session, shared by the tests below.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_code_harness import require_claude_code, run_claude
from learn_scenario import BUILD, ERROR, learned, shared_tests
from scripted_anthropic import ModelRequest, ScriptedModel, ToolUse

from vlk_memact import Memory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.xdist_group("test_learn_claude_code_cli")]

VLK = str(Path(sys.executable).with_name("vlk-memact"))


def vlk(home: Path, db: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "DATABASE_URL": f"sqlite:///{db}"}
    return subprocess.run([VLK, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def hook_texts(model: ScriptedModel, tool_id: str) -> str:
    """What the CLI sent after the result of tool_id (hook context rides right after the tool result)."""
    for request in model.main_requests:
        if any(r.tool_use_id == tool_id for r in request.tool_results()):
            return _after_last_turn(request)
    raise AssertionError(f"no request carried the result of {tool_id}")


def _after_last_turn(request: ModelRequest) -> str:
    messages = request.messages
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    return "\n".join(json.dumps(m.get("content"), ensure_ascii=False) for m in messages[last + 1:])


@pytest.fixture(scope="module")
def lived(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    require_claude_code()
    root = tmp_path_factory.mktemp("learn-claude")
    home, db, project = root / "home", root / "vlk.db", root / "app"
    (project / ".git").mkdir(parents=True)
    home.mkdir()
    (project / "notes.txt").write_text("old\n")
    first = [ToolUse("Bash", {"command": BUILD, "description": "Build"}, id="toolu_build_1"),
             ToolUse("Edit", {"file_path": str(project / "notes.txt"), "old_string": "not there",
                              "new_string": "new"}, id="toolu_input_check"),
             ToolUse("Write", {"file_path": str(project / "config.ok"), "content": "ok\n"}, id="toolu_setup"),
             ToolUse("Bash", {"command": BUILD, "description": "Build"}, id="toolu_build_2"),
             "Built."]
    with ScriptedModel(first) as model:
        run = run_claude("Build it.", cwd=project, model=model, home=home,
                         allowed_tools=["Bash", "Edit", "Write"], env={"DATABASE_URL": f"sqlite:///{db}"})
    assert run.returncode == 0, run.describe()
    learned = vlk(home, db, project, "learn", "--json")
    again = vlk(home, db, project, "learn", "--json")
    (project / "config.ok").unlink()
    installed = vlk(home, db, project, "install", "claude-code", "--no-mcp")
    with ScriptedModel([ToolUse("Bash", {"command": BUILD, "description": "Build"}, id="toolu_later"),
                        "Noted."]) as later_model:
        later = run_claude("Build it again.", cwd=project, model=later_model, home=home, allowed_tools=["Bash"],
                           env={"DATABASE_URL": f"sqlite:///{db}", "VLK_HOOK_SERVER_IDLE_SECONDS": "10"})
    assert later.returncode == 0, later.describe()
    after_live = vlk(home, db, project, "learn", "--json")
    return {"home": home, "db": db, "project": project, "first": run, "learned": learned, "again": again,
            "later_text": hook_texts(later_model, "toolu_later"), "install": installed, "after_live": after_live}


def test_learn_claude_code_reads_the_session_files_the_cli_wrote(lived: dict[str, Any]) -> None:
    files = list((lived["home"] / ".claude" / "projects").rglob("*.jsonl"))
    assert any(p.stem == lived["first"].session_id for p in files), files
    report = learned(lived["learned"])
    assert report["sessions_learned"] == 1 and report["calls"] == 3  # the input check fired no hook event
    assert report["failures"] == 1 and report["fixes"] == 1 and report["skipped"] == {}


def test_learn_claude_code_stores_the_failure_at_its_own_time_and_not_the_input_check(lived: dict[str, Any]) -> None:
    with Memory(f"sqlite:///{lived['db']}", project=str(lived["project"])) as memory:
        slots = memory.get_history(session_id=lived["first"].session_id).slots
    assert [s.raw_log for s in slots] == [f"Exit code 1\n{ERROR}"]  # not the Edit Claude Code refused itself
    # Stamped with the moment the transcript says the failing result came back, not when learn ran.
    [transcript] = (lived["home"] / ".claude" / "projects").rglob(f"{lived['first'].session_id}.jsonl")
    entries = [json.loads(line) for line in transcript.read_text().splitlines()]
    [returned] = [e["timestamp"] for e in entries if e.get("type") == "user" and "toolu_build_1" in json.dumps(e)]
    assert slots[0].created_at == returned[:19].replace("T", " ")


globals().update(shared_tests("claude-code"))
