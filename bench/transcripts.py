"""Replay real Claude Code session transcripts through the hook's own handler, one database per project.

    .venv/bin/python bench/transcripts.py                 # every project of claude-code-sessions
    .venv/bin/python bench/transcripts.py --label main    # name the run in the results (e.g. a baseline)
    .venv/bin/python bench/transcripts.py --no-write      # print the figures, write nothing

What a real user's sessions would have heard from vlk-memact. The transcripts (the native
`~/.claude/projects/<project>/<session>.jsonl` format, ../shared/data/claude-code-sessions) are read
per project by the reader `vlk-memact learn` uses (vlk_memact/learn/claude_code.py: copies of one session merged
by entry uuid and tool_use_id, as napoli-matcha stores a session again at each checkpoint; a subagent's calls in
its parent session, whose hooks they fire), and sessions replayed in time order on one database per project: SessionStart
(startup), a UserPromptSubmit per typed prompt, and for every tool_use a PreToolUse followed by what really
happened. *Every* error result is sent as PostToolUseFailure, whatever its kind: the transcripts come from
older CLIs, and sending a permission refusal, an input check, a sibling cancellation or an interrupt as a
failure is the hardest case for the classifier (hosts/shared/failures.py), which must keep them all out.

Checked per project: denied calls that then succeeded (the transcript says what the call really did),
handler exceptions, injected texts quoting a non-failure, later sessions starting with the in-session
"change approach" order, and characters injected per session.
Figures go to bench/results/transcripts.json and bench/results/transcripts.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if os.environ.get("VLK_BENCH_SRC"):  # measure another checkout's code (the baseline on main)
    sys.path.insert(0, os.environ["VLK_BENCH_SRC"])
else:
    sys.path.insert(0, str(ROOT / "src"))

from vlk_memact import Memory, Settings  # noqa: E402
from vlk_memact.hosts.claude_code import adapter as claude_code  # noqa: E402
from vlk_memact.hosts.shared.session_stores import session_files  # noqa: E402
from vlk_memact.learn import claude_code as reader  # noqa: E402
from vlk_memact.learn.events import Session as ReadSession  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
import carried  # noqa: E402
from fixes import error_line_error  # noqa: E402

SHARED = Path(os.environ.get("VLK_SHARED_DIR", ROOT.parent / "shared"))
DATA = SHARED / "data" / "claude-code-sessions"
RESULTS = ROOT / "bench" / "results"

# What a non-failure looks like when it is quoted: none of these may reach the model in an injected text.
NON_FAILURE_MARKS = {
    "permission refusal": ("doesn't want to proceed", "STOP what you are doing", "was rejected", "was blocked"),
    "sibling cancellation": ("Sibling tool call errored",),
    "input check": ("<tool_use_error>", "File has not been read yet", "String to replace not found",
                    "to replace, but replace_all is false", "No changes to make", "File has been modified since read",
                    "exceeds maximum allowed tokens"),
    "interrupt": ("Request interrupted", "interrupted by user"),
}
ORDER_MARKS = ("CURRENT STRATEGY EXHAUSTED", "change approach", "SYSTEM ANCHOR")
# The rules of session start and of the failure note were chosen on TUNE; the other projects are held out.
TUNE = frozenset({"vsla"})


@dataclass
class Call:
    tool_use_id: str
    name: str
    input: Any
    cwd: str
    result: str | None = None
    is_error: bool = False


@dataclass
class Session:
    session_id: str
    started: str
    cwd: str
    items: list[tuple[str, str, Any]] = field(default_factory=list)  # (timestamp, "prompt"|"call", payload)


def load_project(directory: Path) -> list[Session]:
    """The project's sessions in time order, read by learn's Claude Code reader (vlk_memact.learn.claude_code:
    copies merged by entry uuid and tool_use_id, a subagent's calls in its parent session, damaged lines
    skipped); a call repeated in another session's file counts once."""
    groups: dict[str, list[Any]] = {}
    for path in session_files("claude-code", directory):
        for source in reader.sources(path):
            groups.setdefault(source.session_id, []).append(source)
    sessions, seen = [], set()
    for session_id, sources in groups.items():
        first = min(sources, key=lambda s: s.started)
        read = ReadSession("claude-code", session_id, first.cwd)
        session = Session(session_id, first.started.isoformat(), first.cwd or "/")
        for item in reader.items(sources, read):
            stamp = item.at.isoformat()
            if item.kind == "prompt":
                session.items.append((stamp, "prompt", item.text))
            elif item.call is not None and item.call.tool_use_id not in seen:
                seen.add(item.call.tool_use_id)
                cwd = item.call.called.get("cwd") if isinstance(item.call.called.get("cwd"), str) else session.cwd
                session.items.append((item.call.called_at.isoformat(), "call", Call(
                    item.call.tool_use_id, item.call.name, item.call.input, cwd or "/", item.call.text,
                    item.call.is_error)))
        session.items.sort(key=lambda entry: entry[0])
        if session.items:
            sessions.append(session)
    return sorted(sessions, key=lambda s: s.started)


@dataclass
class SessionFigures:
    session_id: str
    calls: int = 0
    errors: int = 0
    denials: int = 0
    denied_then_succeeded: int = 0
    warnings: int = 0
    injected_chars: int = 0
    start_text: str = ""
    quoted_non_failures: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)


def _common(session: Session, event: str, cwd: str) -> dict[str, Any]:
    return {"session_id": session.session_id, "cwd": cwd, "hook_event_name": event,
            "transcript_path": f"/home/user/.claude/projects/x/{session.session_id}.jsonl",
            "permission_mode": "default"}


def _injected(output: Any) -> list[str]:
    specific = output.get("hookSpecificOutput") if isinstance(output, dict) else None
    if not isinstance(specific, dict):
        return []
    texts = [specific.get("additionalContext"), specific.get("permissionDecisionReason")]
    return [t for t in texts if isinstance(t, str) and t]


def _is_non_failure(text: str) -> bool:
    return any(m in text for marks in NON_FAILURE_MARKS.values() for m in marks)


def replay_project(sessions: list[Session], database_url: str, project: str,
                   split: carried.Split | None = None) -> list[SessionFigures]:
    settings = Settings.from_env({})
    figures: list[SessionFigures] = []
    split = split if split is not None else carried.Split()
    ledger = carried.Ledger(error_line_error)
    with Memory(database_url, settings=settings, project=f"transcripts/{project}") as memory:
        for session in sessions:
            fig = SessionFigures(session.session_id)
            figures.append(fig)
            pending: dict[str, list[str]] = {}  # call -> identities of its failures since it last succeeded
            resolved: set[str] = set()

            def send(event: dict[str, Any], fig: SessionFigures = fig) -> dict[str, Any] | None:
                try:
                    output = claude_code.handle(event, memory)
                except Exception:  # noqa: BLE001 - counted: the acceptance asks for none
                    fig.exceptions.append(traceback.format_exc(limit=3))
                    return None
                for text in _injected(output):
                    fig.injected_chars += len(text)
                    for kind, marks in NON_FAILURE_MARKS.items():
                        if any(m in text for m in marks):
                            fig.quoted_non_failures.append(f"{kind}: {text[:300]}")
                return output

            start = send(_common(session, "SessionStart", session.cwd) | {"source": "startup"})
            fig.start_text = "\n".join(_injected(start))
            ledger.start(split, fig.start_text)
            for _stamp, kind, payload in session.items:
                if kind == "prompt":
                    send(_common(session, "UserPromptSubmit", session.cwd) | {"prompt": payload})
                    continue
                call: Call = payload
                fig.calls += 1
                base = _common(session, "PreToolUse", call.cwd) | {
                    "tool_name": call.name, "tool_input": call.input, "tool_use_id": call.tool_use_id}
                out = send(base)
                specific = (out or {}).get("hookSpecificOutput") or {}
                if specific.get("permissionDecision") == "deny":
                    fig.denials += 1
                    fig.denied_then_succeeded += call.result is not None and not call.is_error
                elif specific.get("additionalContext"):
                    fig.warnings += 1
                if call.result is None:
                    continue  # the session ended before the call returned
                same = json.dumps([call.name, call.input], sort_keys=True, default=str)
                if call.is_error:
                    fig.errors += 1
                    said = send(base | {"hook_event_name": "PostToolUseFailure", "error": call.result,
                                        "is_interrupt": False})
                    if not _is_non_failure(call.result):
                        ledger.failure(split, call.result, "\n".join(_injected(said)))
                        pending.setdefault(same, []).append(error_line_error(call.result))
                else:
                    send(base | {"hook_event_name": "PostToolUse", "tool_response": call.result})
                    resolved.update(pending.pop(same, []))
            split.injected_chars += fig.injected_chars
            ledger.end(split, carried.fact_errors(memory, session.session_id))
            ledger.resolved_earlier |= resolved
    return figures


def summarise(project: str, figures: list[SessionFigures]) -> dict[str, Any]:
    later = figures[1:]
    return {
        "project": project,
        "sessions": len(figures),
        "tool_calls": sum(f.calls for f in figures),
        "error_results": sum(f.errors for f in figures),
        "denials": sum(f.denials for f in figures),
        "denied_then_succeeded": sum(f.denied_then_succeeded for f in figures),
        "warnings": sum(f.warnings for f in figures),
        "handler_exceptions": sum(len(f.exceptions) for f in figures),
        "injected_texts_quoting_non_failures": sum(len(f.quoted_non_failures) for f in figures),
        "later_sessions_starting_with_an_order": sum(any(m in f.start_text for m in ORDER_MARKS) for f in later),
        "later_sessions_with_start_text": sum(bool(f.start_text) for f in later),
        "injected_chars": sum(f.injected_chars for f in figures),
        "mean_injected_chars_per_session": round(sum(f.injected_chars for f in figures) / len(figures), 1)
        if figures else 0,
        "examples_quoting_non_failures": [q for f in figures for q in f.quoted_non_failures][:5],
        "examples_exceptions": [e for f in figures for e in f.exceptions][:3],
        "example_start_texts": [f.start_text[:600] for f in later if f.start_text][:3],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="this branch")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    projects = sorted(p for p in DATA.iterdir() if p.is_dir()) if DATA.is_dir() else []
    if not projects:
        print(f"no transcripts under {DATA}", file=sys.stderr)
        return 2
    rows = []
    splits = {"tune": carried.Split(), "held-out": carried.Split()}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vlk-transcripts-") as tmp:
        for directory in projects:
            sessions = load_project(directory)
            split = splits["tune" if directory.name in TUNE else "held-out"]
            figures = replay_project(sessions, f"sqlite:///{tmp}/{directory.name}.db", directory.name, split)
            rows.append(summarise(directory.name, figures))
            print(f"{directory.name}: {json.dumps({k: v for k, v in rows[-1].items() if not k.startswith('ex')})}",
                  file=sys.stderr)
    report = {"label": args.label, "command": "python bench/transcripts.py", "seconds": round(
        time.perf_counter() - started, 1), "projects": rows,
        "carried": {name: split.as_dict() for name, split in splits.items()}}
    print(json.dumps(report, indent=2))
    if not args.no_write:
        write(report)
    return 0


def write(report: dict[str, Any]) -> None:
    path = RESULTS / "transcripts.json"
    runs = json.loads(path.read_text()) if path.exists() else {}
    runs[report["label"]] = report
    path.write_text(json.dumps(runs, indent=2) + "\n")
    lines = ["# Real Claude Code transcripts through the hooks", "",
             "Command: `.venv/bin/python bench/transcripts.py` (the baseline: `VLK_BENCH_SRC=/work/main/src "
             ".venv/bin/python bench/transcripts.py --label main`). Every error result is sent as "
             "PostToolUseFailure (the hardest case for the failure classifier); see the module docstring.", ""]
    columns = ["sessions", "tool_calls", "error_results", "denials", "denied_then_succeeded", "warnings",
               "handler_exceptions", "injected_texts_quoting_non_failures", "later_sessions_starting_with_an_order",
               "later_sessions_with_start_text", "injected_chars", "mean_injected_chars_per_session"]
    lines.append("| run | project | " + " | ".join(c.replace("_", " ") for c in columns) + " |")
    lines.append("| --- | --- |" + " ---: |" * len(columns))
    for label, run in runs.items():
        for row in run["projects"]:
            lines.append(f"| {label} | {row['project']} | " + " | ".join(str(row[c]) for c in columns) + " |")
    lines += carried_table(runs)
    for label, run in runs.items():
        lines += ["", f"## {label}: examples", ""]
        for row in run["projects"]:
            for key in ("examples_quoting_non_failures", "examples_exceptions", "example_start_texts"):
                for example in row[key]:
                    lines.append(f"- {row['project']}, {key.replace('_', ' ')}: `{' '.join(example.split())[:400]}`")
    (RESULTS / "transcripts.md").write_text("\n".join(lines) + "\n")


CARRIED_COLUMNS = ("sessions", "sessions_with_start_text", "mean_start_chars_per_session",
                   "mean_injected_chars_per_session", "facts_told", "facts_met_again", "recurrences",
                   "recurrences_answered", "recurrences_fixed_before", "fixes_told_on_them")


def carried_table(runs: dict[str, Any]) -> list[str]:
    """Session start and the failure note per run, held-out projects apart from the tune one (bench/carried.py)."""
    lines = ["", "## Session start and the failure note (bench/carried.py)", "",
             f"Tune: {', '.join(sorted(TUNE))} (the rules were chosen on it); held-out: the other projects. Goals: "
             "start text <= 200 characters per session on average, everything injected <= 400, recurrences "
             "answered and fixes told on them not fewer than main.", "",
             "| run | split | " + " | ".join(c.replace("_", " ") for c in CARRIED_COLUMNS) + " |",
             "| --- | --- |" + " ---: |" * len(CARRIED_COLUMNS)]
    for label, run in runs.items():
        for name in ("held-out", "tune"):
            row = run.get("carried", {}).get(name)
            if row:
                lines.append(f"| {label} | {name} | " + " | ".join(str(row[c]) for c in CARRIED_COLUMNS) + " |")
    for label, run in runs.items():
        for name in ("held-out", "tune"):
            for example in run.get("carried", {}).get(name, {}).get("unanswered_examples", [])[:4]:
                lines.append(f"- {label}, {name}, a recurrence nothing was said at: `{example}`")
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
