"""Turn a recorded agent trajectory into the hook events Claude Code would send for it.

One fresh Claude Code session per trajectory: SessionStart (startup), UserPromptSubmit with the task,
then for every step that ran a command a PreToolUse for a Bash call with the step's action as
`command` (SWE-agent's own viewer and search commands as Read, Grep or Glob: bench/swe_agent.py),
followed by what really happened: PostToolUseFailure (error = "Exit code N\\n" + output)
when the step failed, else PostToolUse (tool_response.stdout = output). The keys are those of the
payloads recorded from the real CLI (tests/data/claude-code-hooks) but `duration_ms` (the trajectories
have no timings) and the optional `description` of a Bash call. A step whose message held several
actions (a format error) ran nothing in the original run; it is sent as a failed Bash call of its first
action with the harness's message as the error (issue 20: such messages are failures many different calls
share, the hardest case for the guard). A step with no action at all produces no tool event.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import swe_agent
from trajectories import Step, Trajectory

# SWE-agent has no exit codes: a failure recognised from its text is reported as exit 1, like a
# shell command that failed; a command killed by the harness's timeout as 124 (timeout(1)'s code).
FAILED_WITHOUT_CODE = 1
TIMEOUT_CODE = 124
PERMISSION_MODE = "default"  # what `claude -p --allowedTools Bash` runs with
EFFORT = {"level": "medium"}  # the CLI's default effort, sent on tool events (tests/data/claude-code-hooks)
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class StepEvents:
    """The two tool events of one step: the call before it runs, and its real outcome."""

    index: int  # position of the step in the trajectory
    step: Step
    pre: dict[str, Any]
    post: dict[str, Any]


def session_id_of(trajectory: Trajectory) -> str:
    """A stable UUID per trajectory, shaped like Claude Code's session ids."""
    return str(
        uuid.uuid5(uuid.NAMESPACE_URL, f"vlk-memact/guard-replay/{trajectory.source}/{trajectory.name}")
    )


def transcript_path(session_id: str, cwd: str) -> str:
    """Where Claude Code keeps the transcript: ~/.claude/projects/<cwd with non-alphanumerics as '-'>/."""
    return f"/root/.claude/projects/{re.sub(r'[^A-Za-z0-9]', '-', cwd)}/{session_id}.jsonl"


def tool_use_id(session_id: str, index: int) -> str:
    """A stable id shaped like the API's (`toolu_01` + 22 base62 characters)."""
    number = int.from_bytes(hashlib.sha256(f"{session_id}/{index}".encode()).digest()[:17], "big")
    chars = []
    for _ in range(22):
        number, digit = divmod(number, 62)
        chars.append(_BASE62[digit])
    return "toolu_01" + "".join(chars)


def exit_code_of(step: Step) -> int:
    if step.exit_code is not None and step.exit_code != 0:
        return step.exit_code
    return TIMEOUT_CODE if step.kind == "timeout" else FAILED_WITHOUT_CODE


def _common(session_id: str, cwd: str, event: str) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "transcript_path": transcript_path(session_id, cwd),
        "cwd": cwd,
        "permission_mode": PERMISSION_MODE,
        "hook_event_name": event,
    }


def prompt_id_of(trajectory: Trajectory) -> str:
    """`claude -p` has one prompt: every event after it carries its id."""
    return str(
        uuid.uuid5(
            uuid.NAMESPACE_URL, f"vlk-memact/guard-replay/{trajectory.source}/{trajectory.name}/prompt"
        )
    )


def session_start(trajectory: Trajectory) -> dict[str, Any]:
    session = session_id_of(trajectory)
    cwd = trajectory.steps[0].cwd if trajectory.steps else "/"
    event = _common(session, cwd, "SessionStart")
    del event["permission_mode"]  # Claude Code sends none on SessionStart
    event["source"] = "startup"
    return event


def user_prompt(trajectory: Trajectory) -> dict[str, Any]:
    session = session_id_of(trajectory)
    cwd = trajectory.steps[0].cwd if trajectory.steps else "/"
    event = _common(session, cwd, "UserPromptSubmit")
    event["prompt"] = trajectory.task
    event["prompt_id"] = prompt_id_of(trajectory)
    return event


def step_events(trajectory: Trajectory) -> Iterator[StepEvents]:
    """PreToolUse and the real outcome's event for every step that ran a command."""
    session = session_id_of(trajectory)
    turn = {"prompt_id": prompt_id_of(trajectory), "effort": EFFORT}
    for index, step in enumerate(trajectory.steps):
        if step.command is None:
            continue
        tool, tool_input = swe_agent.tool_call(step.command) if trajectory.source == "swe-agent" else \
            ("Bash", {"command": step.command})
        call = turn | {"tool_name": tool, "tool_input": tool_input,
                       "tool_use_id": tool_use_id(session, index)}
        pre = _common(session, step.cwd, "PreToolUse") | call
        if step.failed:
            post = _common(session, step.cwd, "PostToolUseFailure") | call | {
                "error": f"Exit code {exit_code_of(step)}\n{step.observation}",
                "is_interrupt": False,
            }
        else:
            post = _common(session, step.cwd, "PostToolUse") | call | {
                "tool_response": {
                    "stdout": step.observation,
                    "stderr": "",
                    "interrupted": False,
                    "isImage": False,
                    "noOutputExpected": False,
                },
            }
        yield StepEvents(index, step, pre, post)
