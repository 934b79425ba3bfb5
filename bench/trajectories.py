"""Parse the two formats of trajectories-dev (see ../shared/data/README.md) into one list of steps.

Shared by bench/replay.py (memory replay) and bench/guard.py (hook replay), so both benchmarks read
the same steps, the same failures and the same actions.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("VLK_SHARED_DIR", ROOT.parent / "shared"))
DATA = SHARED / "data" / "trajectories-dev"
SOURCES = ("swe-agent", "mini-swe-agent")

# SWE-agent appends its own prompt to every observation; it is harness chrome, not tool output.
_SWE_FOOTER = re.compile(r"\n*\(Open file: [^\n]*\)\n\(Current directory: ([^\n]*)\)\n?bash-\$\s*$")
_SWE_FAILURE = re.compile(
    r"Traceback \(most recent call last\)|^\w*(?:Error|Exception): |command not found"
    r"|No such file or directory|Your proposed edit has introduced new syntax error|syntax error|not found"
    r"|^usage: |Usage: |Error: |FAILED|fatal: |E\d{3} |^EXECUTION TIMED OUT",
    re.MULTILINE,
)
_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
_MINI_BASH = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
_RETURNCODE = re.compile(r"<returncode>(-?\d+)</returncode>")
_MINI_TIMEOUT = re.compile(r"timed out and has been killed")
MINI_SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
MINI_CWD = "/testbed"  # mini-swe-agent runs every command in the SWE-bench image's /testbed


@dataclass(frozen=True)
class Step:
    """One agent action and what the environment answered.

    kind: "ran" (an exit code or, for SWE-agent, an observation), "timeout" (killed by the harness),
    "submitted" (mini-swe-agent's submit command, whose answer is the diff) or "format_error" (the
    agent's message held no single action, so no tool ran: `action` is None).
    """

    action: str | None
    observation: str
    failed: bool
    exit_code: int | None
    kind: str
    cwd: str
    attempted: str | None = None  # a format error's first action: the harness refused to run it

    @property
    def command(self) -> str | None:
        """What the agent asked to run: the action, or the refused action of a format error."""
        return self.action if self.action is not None else self.attempted


@dataclass(frozen=True)
class Trajectory:
    name: str
    project: str
    source: str
    steps: list[Step]
    task: str = ""  # the first user message: the task as the agent was given it


def project_of(instance_id: str) -> str:
    return instance_id.rsplit("-", 1)[0]


_SWE_EDIT_DONE = "File updated. Please review the changes"
_SWE_EDIT_REFUSED = re.compile(r"Your proposed edit has introduced new syntax error|Your changes have NOT been applied")


def _swe_file_view(text: str) -> bool:
    """SWE-agent's file viewer output (open, goto, scroll, a successful edit): the text is the file's content, so
    an "Error:" in the code shown is no failure of the command."""
    if _SWE_EDIT_REFUSED.search(text):
        return False
    return text.startswith("[File: ") or _SWE_EDIT_DONE in text


def _swe_steps(turns: list[dict[str, object]]) -> list[Step]:
    """An `ai` turn's action is its last fenced block; the next `user` turn is the observation."""
    steps: list[Step] = []
    cwd = "/"
    for before, turn in zip(turns, turns[1:], strict=False):
        if before.get("role") == "ai" and turn.get("role") == "user":
            raw = str(turn.get("text") or "")
            blocks = _FENCE.findall(str(before.get("text") or ""))
            text = _SWE_FOOTER.sub("", raw).strip()
            failed = bool(text) and bool(_SWE_FAILURE.search(text)) and not _swe_file_view(text)
            action = blocks[-1].strip() if blocks else None
            steps.append(Step(action, text, failed, None, "ran" if action else "format_error", cwd))
        if turn.get("role") == "user":
            footer = _SWE_FOOTER.search(str(turn.get("text") or ""))
            if footer:
                cwd = footer.group(1).strip() or cwd  # the directory the next command runs in
    return steps


def _mini_steps(messages: list[dict[str, object]]) -> list[Step]:
    """An assistant message holds one ```bash block; the next user message is the observation."""
    steps: list[Step] = []
    for before, message in zip(messages, messages[1:], strict=False):
        if before.get("role") != "assistant" or message.get("role") != "user":
            continue
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content)
        blocks = _MINI_BASH.findall(str(before.get("content") or ""))
        action = blocks[0].strip() if len(blocks) == 1 else None
        code = _RETURNCODE.search(text)
        output = re.sub(r"</?output>|<returncode>-?\d+</returncode>", "", text).strip()
        if action is not None and code:
            exit_code = int(code.group(1))
            steps.append(Step(action, output, exit_code != 0, exit_code, "ran", MINI_CWD))
        elif action is not None and _MINI_TIMEOUT.search(text):
            steps.append(Step(action, output, True, None, "timeout", MINI_CWD))
        elif action is not None and MINI_SUBMIT in action:
            steps.append(Step(action, output, False, 0, "submitted", MINI_CWD))
        else:
            # A format error: the harness ran nothing and answered with its rules (the same message whatever the
            # actions were: many different calls share it).
            steps.append(Step(None, output, True, None, "format_error", MINI_CWD,
                              blocks[0].strip() if blocks else None))
    return steps


def load(limit: int | None = None, names: set[str] | None = None) -> list[Trajectory]:
    """Both formats of trajectories-dev, SWE-agent first; `limit` per format, `names` by instance id."""
    found: list[Trajectory] = []
    for source, pattern, parse, key in (
        ("swe-agent", "*.json.gz", _swe_steps, "trajectory"),
        ("mini-swe-agent", "*.json.gz", _mini_steps, "messages"),
    ):
        paths = sorted((DATA / source).glob(pattern))
        taken = 0
        for path in paths:
            if limit is not None and taken >= limit:
                break
            data = json.load(gzip.open(path))
            name = str(data["instance_id"])
            if names is not None and name not in names:
                continue
            taken += 1
            turns = data[key]
            task = next(
                (str(t.get("content") or t.get("text") or "") for t in turns if t.get("role") == "user"), ""
            )
            found.append(Trajectory(name, project_of(name), source, parse(turns), task))
    return found
