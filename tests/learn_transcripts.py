"""Claude Code session files written the way the CLI writes them (entries of type user / assistant with
sessionId, cwd, timestamp, uuid and tool_use / tool_result blocks), for the tests of `vlk-memact learn` that
need many sessions or odd ones; the real CLI's own files are read in tests/test_learn_claude_code_cli.py."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


@dataclass
class Transcript:
    """One session file being written, entry by entry, a second apart."""

    cwd: str
    session_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    at: datetime = START
    lines: list[dict[str, Any]] = field(default_factory=list)
    calls: int = 0

    def _entry(self, kind: str, content: Any, **extra: Any) -> dict[str, Any]:
        self.at += timedelta(seconds=1)
        entry = {"type": kind, "sessionId": self.session_id, "cwd": self.cwd, "uuid": str(uuid.uuid4()),
                 "timestamp": self.at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z", "version": "2.1.42",
                 "isSidechain": False, "message": {"role": kind, "content": content}, **extra}
        self.lines.append(entry)
        return entry

    def prompt(self, text: str) -> None:
        self._entry("user", text)

    def call(self, name: str, tool_input: dict[str, Any], result: str, error: bool = False, **extra: Any) -> str:
        """A tool call and its result; returns its tool_use_id."""
        self.calls += 1
        use_id = f"toolu_{self.session_id[:8]}_{self.calls:04d}"
        self._entry("assistant", [{"type": "tool_use", "id": use_id, "name": name, "input": tool_input}], **extra)
        self._entry("user", [{"type": "tool_result", "tool_use_id": use_id, "content": result, "is_error": error}],
                    **extra)
        return use_id

    def bash(self, command: str, output: str, code: int = 0) -> str:
        return self.call("Bash", {"command": command}, f"Exit code {code}\n{output}" if code else output, code != 0)

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.session_id}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines), encoding="utf-8")
        return path


def fixing_session(cwd: str, start: datetime, number: int, calls: int = 12) -> Transcript:
    """A session that fails on a missing module three times (a loop), installs it, passes; plus other calls."""
    t = Transcript(cwd, at=start)
    t.prompt(f"task {number}: make the tests pass")
    module = f"mod{number % 5}"
    for _ in range(3):
        t.bash("pytest -q", f"E   ModuleNotFoundError: No module named '{module}'", 1)
    t.bash(f"pip install {module}", f"Successfully installed {module}")
    t.bash("pytest -q", "3 passed")
    for n in range(calls):
        t.call("Read", {"file_path": f"{cwd}/src/file{n}.py"}, "x = 1\n")
    return t


def sessions(folder: Path, cwd: str, count: int, calls: int = 12) -> list[Path]:
    """count fixing sessions of one project, an hour apart, written into folder."""
    return [fixing_session(cwd, START + timedelta(hours=n), n, calls).write(folder) for n in range(count)]
