"""An in-process Claude Code scenario for the impact tests: session A fixes three errors, session B meets them,
is told each fix, applies it and resolves the error, and has an unchanged failing call denied and changes it.
Events as tests/hook_events.py builds them, answered by hosts.claude_code.handle."""

from __future__ import annotations

from typing import Any

from hook_events import bash, failure, pre, session_start, success

from vlk_memact.hosts.claude_code import adapter as claude_code

ENV_ERROR = "Exit code 1\nerror: .env is missing (copy .env.example)"
KEY_ERROR = "Exit code 1\nconfig error: required key 'timeout' missing in settings.toml"
ARG_ERROR = ("Exit code 2\nusage: tool.py [-h] --mode {fast,quick}\n"
             "tool.py: error: argument --mode: invalid choice: 'slow' (choose from 'fast', 'quick')")
# A missing tool: a broken environment, the kind of loop a new session is told of before it meets it (issue 34).
DEPLOY_ERROR = "Exit code 127\ndeploy.sh: 2: deployctl: not found"
EDIT = {"file_path": "/work/project/settings.toml", "old_string": "[app]", "new_string": "[app]\ntimeout = 30"}


def said(answer: dict[str, Any] | None) -> str:
    inner = (answer or {}).get("hookSpecificOutput", {})
    return str(inner.get("additionalContext") or inner.get("permissionDecisionReason") or "")


def run_session_a(memory: Any, session: str = "A") -> None:
    h = claude_code.handle
    h(session_start(session=session), memory)
    for _ in range(3):  # a loop: carried to the next session as a fact
        h(failure("Bash", bash("sh deploy.sh"), DEPLOY_ERROR, session), memory)
    h(failure("Bash", bash("sh check_env.sh"), ENV_ERROR, session), memory)
    h(success("Bash", bash("touch .env.local"), session=session), memory)  # a wrong first attempt
    h(success("Bash", bash("cp .env.example .env"), session=session), memory)
    h(success("Bash", bash("sh check_env.sh"), session=session), memory)
    h(failure("Bash", bash("python3 app.py"), KEY_ERROR, session), memory)
    h(success("Bash", bash("echo trying"), session=session), memory)
    h(success("Edit", EDIT, session=session), memory)
    h(success("Bash", bash("python3 app.py"), session=session), memory)
    h(failure("Bash", bash("python3 tool.py --mode slow"), ARG_ERROR, session), memory)
    h(failure("Bash", bash("python3 tool.py --mode slow"), ARG_ERROR, session), memory)
    h(success("Bash", bash("python3 tool.py --mode quick"), session=session), memory)


def run_session_b(memory: Any, session: str = "B") -> dict[str, str]:
    """Session B; what the hooks said after each event that matters."""
    h = claude_code.handle
    out = {"start": said(h(session_start(session=session), memory))}
    out["env"] = said(h(failure("Bash", bash("sh check_env.sh"), ENV_ERROR, session), memory))
    h(success("Bash", bash("cp .env.example .env"), session=session), memory)
    h(success("Bash", bash("sh check_env.sh"), session=session), memory)
    out["key"] = said(h(failure("Bash", bash("python3 app.py"), KEY_ERROR, session), memory))
    h(success("Edit", EDIT, session=session), memory)
    h(success("Bash", bash("python3 app.py"), session=session), memory)
    out["arg"] = said(h(failure("Bash", bash("python3 tool.py --mode slow"), ARG_ERROR, session), memory))
    h(success("Bash", bash("python3 tool.py --mode quick"), session=session), memory)
    for n in range(3):
        h(pre("Bash", bash("sh deploy.sh"), session), memory)
        out[f"deploy{n}"] = said(h(failure("Bash", bash("sh deploy.sh"), DEPLOY_ERROR, session), memory))
    out["denied"] = said(h(pre("Bash", bash("sh deploy.sh"), session), memory))
    h(pre("Bash", bash("sh deploy.sh --dry-run"), session), memory)
    h(success("Bash", bash("sh deploy.sh --dry-run"), session=session), memory)
    return out
