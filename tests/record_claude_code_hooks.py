"""Record the hook events of the real Claude Code CLI into tests/data/claude-code-hooks/ (run by hand).

    .venv/bin/python tests/record_claude_code_hooks.py

A hook that dumps its stdin is installed for every event vlk-memact uses; a scripted model makes the
CLI run a failing and a succeeding Bash command, a failing and a succeeding Edit, a Read and a Write,
then the session is resumed and compacted. (An Edit whose old_string is missing is refused by input
validation, which fires no hook: there is no fixture for it.) Each event is stored as the CLI sent it, with the
temporary paths and ids replaced by stable placeholders, so the fixtures read the same on every run.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from claude_code_harness import run_claude  # noqa: E402
from scripted_anthropic import ScriptedModel, ToolUse  # noqa: E402

OUT = Path(__file__).resolve().parent / "data" / "claude-code-hooks"
EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure")
DUMP = ("import json, os, sys, time; d = sys.argv[1]; e = json.load(sys.stdin); "
        "open(os.path.join(d, '%.6f-%s.json' % (time.time(), e['hook_event_name'])), 'w').write(json.dumps(e))")


def dump_settings(directory: Path) -> dict:
    handler = {"type": "command", "command": sys.executable, "args": ["-c", DUMP, str(directory)], "timeout": 10}
    hooks = {}
    for event in EVENTS:
        group: dict = {"hooks": [handler]}
        if event not in ("UserPromptSubmit",):
            group = {"matcher": "*" if event != "SessionStart" else "startup|resume|clear|compact", **group}
        hooks[event] = [group]
    return {"hooks": hooks}


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="vlk-record-"))
    project, home, dumps = work / "project", work / "home", work / "dumps"
    for folder in (project, home, dumps):
        folder.mkdir()
    (project / "notes.txt").write_text("alpha\nbeta\n")
    script = [
        ToolUse("Bash", {"command": "echo 'Error: Cannot find module express' >&2; exit 1", "description": "Run tests"},
                id="toolu_rec_bash_fail"),
        ToolUse("Bash", {"command": "echo ok", "description": "Echo"}, id="toolu_rec_bash_ok"),
        ToolUse("Read", {"file_path": str(project / "notes.txt")}, id="toolu_rec_read"),
        ToolUse("Read", {"file_path": str(project / "missing.txt")}, id="toolu_rec_read_fail"),
        ToolUse("Edit", {"file_path": str(project / "notes.txt"), "old_string": "gamma", "new_string": "delta"},
                id="toolu_rec_edit_fail"),
        ToolUse("Edit", {"file_path": str(project / "notes.txt"), "old_string": "beta", "new_string": "gamma"},
                id="toolu_rec_edit_ok"),
        ToolUse("Write", {"file_path": str(project / "new.txt"), "content": "hello\n"}, id="toolu_rec_write"),
        "Recorded.",
    ]
    tools = ["Bash", "Read", "Edit", "Write"]
    with ScriptedModel(script) as model:
        first = run_claude("Record the events.", cwd=project, model=model, settings=dump_settings(dumps),
                           allowed_tools=tools, home=home)
    assert first.returncode == 0, first.describe()
    with ScriptedModel(["Resumed."]) as model:
        resumed = run_claude("Go on.", cwd=project, model=model, settings=dump_settings(dumps), allowed_tools=tools,
                             home=home, extra_args=["--resume", first.session_id])
    assert resumed.returncode == 0, resumed.describe()
    with ScriptedModel(lambda request: "Summary of the session.") as model:
        compacted = run_claude("/compact", cwd=project, model=model, settings=dump_settings(dumps),
                               allowed_tools=tools, home=home, extra_args=["--resume", first.session_id])
    print("compact run:", compacted.returncode, compacted.result[:200], file=sys.stderr)

    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.json"):
        old.unlink()
    names: dict[str, int] = {}
    session_ids: dict[str, str] = {}
    for path in sorted(dumps.glob("*.json")):
        event = json.loads(path.read_text())
        text = json.dumps(event, indent=2, sort_keys=True)
        text = re.sub(r"/projects/[^/\"]*-project/", "/projects/-work-project/", text)  # the encoded project dir
        text = text.replace(str(project), "/work/project").replace(str(home), "/home/user")
        for sid in re.findall(r'"session_id": "([0-9a-f-]{36})"', text):
            session_ids.setdefault(sid, f"00000000-0000-4000-8000-{len(session_ids) + 1:012d}")
        for sid, stable in session_ids.items():
            text = text.replace(sid, stable)
        text = re.sub(r'"prompt_id": "[0-9a-f-]{36}"', '"prompt_id": "11111111-1111-4111-8111-111111111111"', text)
        text = re.sub(r'"duration_ms": \d+', '"duration_ms": 12', text)
        event = json.loads(text)
        detail = event.get("tool_use_id", "").removeprefix("toolu_rec_") or event.get("source") or ""
        stem = event["hook_event_name"] + (f"-{detail}" if detail else "")
        names[stem] = names.get(stem, 0) + 1
        if names[stem] > 1:
            stem += f"-{names[stem]}"
        (OUT / f"{stem}.json").write_text(json.dumps(event, indent=2, sort_keys=True) + "\n")
        print("recorded", stem, file=sys.stderr)


if __name__ == "__main__":
    main()
