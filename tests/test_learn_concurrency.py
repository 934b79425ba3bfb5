"""`vlk-memact learn` while live hooks write to the same database, on both stores: the hooks (another process,
answering each event as `vlk-memact hook claude-code` does, with the hook's short lock wait) lose no event and
time out on none, and what learn learned is what it learns alone: nothing lost, nothing doubled."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from learn_transcripts import sessions
from test_learn import CWD, state

from vlk_memact import Memory, Settings
from vlk_memact.learn.driver import Options, learn

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

LIVE_EVENTS = 120
WRITER = """
import json, sys, time
from pathlib import Path
from vlk_memact import Settings
from vlk_memact.hosts.claude_code import adapter as claude_code
from vlk_memact.hosts.shared import runner

url, ready, count = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
settings = Settings.from_env({"DATABASE_URL": url, "VLK_PROJECT": "live-project"})
problems = []
ready.write_text("ready")
for n in range(count):
    event = {"session_id": f"live-{n % 4}", "cwd": "/nowhere/live", "hook_event_name": "PostToolUseFailure",
             "tool_name": "Bash", "tool_input": {"command": f"make target{n}"}, "tool_use_id": f"toolu_live_{n}",
             "error": f"Exit code 2\\nmake: *** No rule to make target 'target{n}'. Stop.", "is_interrupt": False}
    _, _, problem = runner.answer_event(claude_code.handle, json.dumps(event).encode(), settings)
    if problem:
        problems.append(problem)
    time.sleep(0.005)
print(json.dumps(problems))
"""


def test_learn_while_live_hooks_write_loses_and_doubles_nothing(database_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    sessions(folder, CWD, 40, calls=30)
    ready = tmp_path / "ready"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, database_url, str(ready), str(LIVE_EVENTS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    settings = Settings.from_env({})
    with Memory(database_url, settings=settings, project=CWD) as memory:
        report = learn(memory, Options(paths=(folder,), host="claude-code"))
        out, err = writer.communicate(timeout=240)
        assert writer.returncode == 0, err
        assert json.loads(out) == []  # no hook gave up waiting for learn's lock
        got = state(memory)
        live = memory.for_project("live-project")
        stored = [s for n in range(4) for s in live.get_history(session_id=f"live-{n}", limit=1000).slots
                  if s.origin == "record"]
    assert len(stored) == LIVE_EVENTS and len({s.raw_log for s in stored}) == LIVE_EVENTS
    with Memory(f"sqlite:///{tmp_path / 'alone.db'}", settings=settings, project=CWD) as alone:
        learn(alone, Options(paths=(folder,), host="claude-code"))
        want = state(alone)
    assert report.total("sessions") == 40
    assert [s[1:] for s in got[0]] == [s[1:] for s in want[0]] and got[1] == want[1]
