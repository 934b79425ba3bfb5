"""Learning from history against replaying it through the hooks, on real Claude Code transcripts, per project.

    .venv/bin/python bench/learn.py               # every project of ../shared/data/claude-code-sessions
    .venv/bin/python bench/learn.py --no-write    # print the figures, write nothing
    .venv/bin/python bench/learn.py --data DIR    # other projects: DIR/<project>/*.jsonl[.gz]

Per project, its sessions (read by learn's own reader: copies merged, subagents in their parent) in the
order they started, split in two halves:
1. the first half learned from its files (`learn`, in process) into database L, and the same half replayed
   through the live hook handler (hosts.claude_code.handle, event by event, each write its own transaction,
   stamped now, as the hooks would have run) into database H: failures stored and fixes compared (within 5%);
2. the second half replayed through the hooks on L and on H: what the model is told at its failures (a fix
   from an earlier session; any earlier session's fix or lesson) and at session start, compared (at failures
   >= 95% of H's figure, session-start text within 10%);
3. a second learn on L changes nothing; none of the host's refusals (permission refusal, sibling cancellation,
   input check, interrupt) is stored; no secret of a failing result is stored (two planted into a copy of a
   real failing result do not reach the database file); beside L and H, the failures stored when every error
   result is sent as a failure (bench/transcripts.py's replay: the classifier alone, no model of the host);
4. time: learn in process against the hook replay in process (median of 3, interleaved), and the
   `vlk-memact learn` command (its process start included).
Figures go to bench/results/learn.json and bench/results/learn.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from vlk_memact import Memory, Settings  # noqa: E402
from vlk_memact.core.redact import redact  # noqa: E402
from vlk_memact.hosts.claude_code import adapter as claude_code  # noqa: E402
from vlk_memact.hosts.shared import failures
from vlk_memact.hosts.shared.session_stores import open_text, project_of, session_files  # noqa: E402
from vlk_memact.learn import claude_code as reader  # noqa: E402
from vlk_memact.learn.driver import Options, learn  # noqa: E402
from vlk_memact.learn.events import Session  # noqa: E402

SHARED = Path(os.environ.get("VLK_SHARED_DIR", ROOT.parent / "shared"))
DATA = SHARED / "data" / "claude-code-sessions"
RESULTS = ROOT / "bench" / "results"
VLK = str(Path(sys.executable).with_name("vlk-memact"))
FIX_TOLD = "fixed in an earlier session by"
EARLIER = ("fixed in an earlier session", "learned in session '")
REPEATS = 3


def project_sessions(directory: Path) -> list[list[Any]]:
    """The project's sessions, each as its sources, in the order they started."""
    groups: dict[str, list[Any]] = {}
    for path in session_files("claude-code", directory):
        for source in reader.sources(path):
            groups.setdefault(source.session_id, []).append(source)
    return sorted(groups.values(), key=lambda sources: min(s.started for s in sources))


def hook_replay(memory: Memory, halves: list[list[Any]], figures: dict[str, int] | None = None) -> None:
    """Each session's events through the live hook handler, in order, as the hooks would have run them."""
    for sources in halves:
        session = reader.read(sources)
        mine = memory.for_project(project_of(session.cwd))
        events = [reader.start_event(session, "startup"), *(e.payload for e in session.events)]
        for payload in events:
            answer = claude_code.handle(payload, mine)
            if figures is not None:
                _count(figures, payload, answer)


def _count(figures: dict[str, int], payload: dict[str, Any], answer: Any) -> None:
    specific = answer.get("hookSpecificOutput") if isinstance(answer, dict) else None
    text = specific.get("additionalContext") if isinstance(specific, dict) else None
    text = text if isinstance(text, str) else ""
    name = payload["hook_event_name"]
    if name == "PostToolUseFailure":
        figures["failure_events"] += 1
        figures["fix_told"] += FIX_TOLD in text
        figures["earlier_told"] += any(m in text for m in EARLIER)
    elif name == "SessionStart" and payload.get("source") == "startup":
        figures["sessions"] += 1
        figures["start_chars"] += len(text)
        figures["sessions_with_start_text"] += bool(text)


def memory_figures(memory: Memory, projects: set[str]) -> dict[str, int]:
    """What the memory holds for these projects: failures (slots recorded by a hook), loops, fixes."""
    found = {"failures": 0, "loops": 0, "fixes": 0, "refusals_stored": 0, "secrets_stored": 0}
    for project in projects:
        mine = memory.for_project(project)
        with mine.reading() as tx:
            overviews = tx.sessions(mine.tenant, project, 10_000)
            fixes = tx.fixes(mine.tenant, project, None, 100_000)
        found["fixes"] += sum(f.kind == "fix" for f in fixes)
        for overview in overviews:
            for slot in mine.get_history(session_id=overview.session_id, limit=100_000).slots:
                if slot.origin == "anchor":
                    found["loops"] += 1
                if slot.origin != "record":
                    continue
                found["failures"] += 1
                found["refusals_stored"] += failures.non_failure(slot.raw_log) is not None
                found["secrets_stored"] += bool(redact((slot.raw_log or "") + (slot.tool_payload or "")).kinds)
    return found


def transcript_figures(halves: list[list[Any]]) -> dict[str, int]:
    """What the first half's files hold: error results by kind, and failing results holding a secret."""
    found = {"error_results": 0, "refusals_in_files": 0, "failing_results_with_secrets": 0}
    for sources in halves:
        for item in reader.items(sources, Session("claude-code", sources[0].session_id, sources[0].cwd)):
            if item.call is None or not item.call.is_error:
                continue
            found["error_results"] += 1
            found["refusals_in_files"] += failures.non_failure(item.call.text) is not None
            found["failing_results_with_secrets"] += bool(redact(item.call.text).kinds)
    return found


PLANTED = ("AKIA" + "Q3EGZ7XKWT4JH2MB", "ghp_" + "8fT2kq9ZLw3mXv7Rb1Nc5Ps0Yd4Hj6Ge2Ua9")


def planted_secret_stored(first: list[list[Any]], tmp: Path) -> bool | None:
    """Copies of the first half's files with two secrets appended to their first real failing result: learned,
    does any byte of either reach the database? (None: the half has no failing result to plant them in.)"""
    folder = tmp / "planted"
    folder.mkdir(exist_ok=True)
    planted = False
    for n, source in enumerate(s for sources in first for s in sources):
        with open_text(source.locator) as handle:
            lines = handle.read().splitlines()
        for i, line in enumerate(lines):
            if planted or '"is_error": true' not in line.replace('"is_error":true', '"is_error": true'):
                continue
            entry = json.loads(line)
            for block in entry["message"]["content"]:
                if isinstance(block, dict) and block.get("is_error") and isinstance(block.get("content"), str) \
                        and failures.non_failure(block["content"]) is None:
                    block["content"] += f"\nAWS_ACCESS_KEY_ID={PLANTED[0]} token {PLANTED[1]}"
                    planted = True
            lines[i] = json.dumps(entry)
        (folder / f"{n}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if not planted:
        return None
    url = _fresh(tmp, "planted")
    with Memory(url, settings=Settings.from_env({})) as memory:
        learn(memory, Options(paths=(folder,), host="claude-code"))
    stored = b"".join(p.read_bytes() for p in tmp.glob("planted.db*"))
    return any(secret.encode() in stored for secret in PLANTED)


def every_error_replay(directory: Path, first: list[list[Any]], tmp: Path) -> int:
    """Failures stored when every error result of the first half is sent as a failure (bench/transcripts.py's
    replay): the failure classifier alone keeps the host's refusals out, with no model of the host's events."""
    import transcripts

    wanted = {sources[0].session_id for sources in first}
    sessions = [s for s in transcripts.load_project(directory) if s.session_id in wanted]
    url = _fresh(tmp, "every")
    transcripts.replay_project(sessions, url, directory.name)
    with Memory(url, settings=Settings.from_env({}), project=f"transcripts/{directory.name}") as memory:
        return memory_figures(memory, {f"transcripts/{directory.name}"})["failures"]


def _fresh(tmp: Path, name: str) -> str:
    for path in tmp.glob(f"{name}.db*"):
        path.unlink()
    return f"sqlite:///{tmp / name}.db"


def timed(action: Any) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def run_project(directory: Path, tmp: Path) -> dict[str, Any]:
    settings = Settings.from_env({})
    sessions = project_sessions(directory)
    half = len(sessions) // 2
    first, second = sessions[:half], sessions[half:]
    files = sorted({str(s.locator) for sources in first for s in sources})
    options = Options(paths=tuple(Path(f) for f in files), host="claude-code")
    row: dict[str, Any] = {"project": directory.name, "sessions": len(sessions), "first_half": len(first),
                           "second_half": len(second)}
    learn_times, hook_times = [], []
    for _ in range(REPEATS):  # interleaved: a busy moment of the machine hits both
        with Memory(_fresh(tmp, "learned"), settings=settings) as learned:
            learn_times.append(timed(lambda m=learned: learn(m, options)))
        with Memory(_fresh(tmp, "hooks"), settings=settings) as hooks:
            hook_times.append(timed(lambda m=hooks: hook_replay(m, first)))
    url = _fresh(tmp, "cli")
    env = {**os.environ, "DATABASE_URL": url, "HOME": str(tmp)}
    started = time.perf_counter()
    cli = subprocess.run([VLK, "learn", "--host", "claude-code", "--json", *files], env=env, capture_output=True,
                         text=True, timeout=600)
    row["seconds_learn_command"] = round(time.perf_counter() - started, 3)
    assert cli.returncode == 0, cli.stderr
    row["seconds_learn_in_process"] = round(statistics.median(learn_times), 3)
    row["seconds_hooks_in_process"] = round(statistics.median(hook_times), 3)
    with Memory(_fresh(tmp, "learned"), settings=settings) as learned, \
            Memory(_fresh(tmp, "hooks"), settings=settings) as hooks:
        report = learn(learned, options)
        hook_replay(hooks, first)
        projects = set(report.projects)
        row["learned"] = {"sessions": report.total("sessions"), "calls": report.total("calls"),
                          "failures": report.total("failures"), "loops": report.total("loops"),
                          "fixes": report.total("fixes"), "skipped": dict(report.skipped),
                          "handler_errors": report.handler_errors}
        row["memory_learned"] = memory_figures(learned, projects)
        row["memory_hooks"] = memory_figures(hooks, projects)
        again = learn(learned, options)
        row["second_learn"] = {"sessions": again.total("sessions"), "calls": again.total("calls"),
                               "unchanged_sources": again.unchanged}
        row["memory_after_second_learn_equal"] = memory_figures(learned, projects) == row["memory_learned"]
        row["files"] = transcript_figures(first)
        row["failures_every_error_as_failure"] = every_error_replay(directory, first, tmp)
        row["planted_secret_stored"] = planted_secret_stored(first, tmp)
        told_learned = {k: 0 for k in ("failure_events", "fix_told", "earlier_told", "sessions", "start_chars",
                                       "sessions_with_start_text")}
        told_hooks = dict(told_learned)
        hook_replay(learned, second, told_learned)
        hook_replay(hooks, second, told_hooks)
        row["second_half_told_learned"], row["second_half_told_hooks"] = told_learned, told_hooks
    return row


def ratio(a: int | float, b: int | float) -> float | None:
    return round(a / b, 3) if b else None


def verdicts(row: dict[str, Any]) -> dict[str, Any]:
    """The issue's bars, each with the figures it rests on."""
    ml, mh = row["memory_learned"], row["memory_hooks"]
    tl, th = row["second_half_told_learned"], row["second_half_told_hooks"]

    def within(a: int, b: int, share: float) -> bool:
        return abs(a - b) <= share * max(a, b) if max(a, b) else True

    return {
        "failures_within_5%": within(ml["failures"], mh["failures"], 0.05),
        "fixes_within_5%": within(ml["fixes"], mh["fixes"], 0.05),
        "fix_told_at_failures_ratio": ratio(tl["fix_told"], th["fix_told"]),
        "earlier_told_at_failures_ratio": ratio(tl["earlier_told"], th["earlier_told"]),
        "told_at_failures_>=95%": all(tl[k] >= 0.95 * th[k] for k in ("fix_told", "earlier_told")),
        "start_text_ratio": ratio(tl["start_chars"], th["start_chars"]),
        "start_text_within_10%": within(tl["start_chars"], th["start_chars"], 0.10),
        "second_learn_changes_nothing": row["second_learn"]["sessions"] == 0
        and row["memory_after_second_learn_equal"],
        "no_refusal_stored": ml["refusals_stored"] == 0,
        "no_secret_stored": ml["secrets_stored"] == 0 and row["planted_secret_stored"] is False,
        "learn_not_slower_than_hooks": row["seconds_learn_in_process"] <= row["seconds_hooks_in_process"],
        "command_within_hooks_plus_1s": row["seconds_learn_command"] <= row["seconds_hooks_in_process"] + 1.0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="a folder of projects (default: %(default)s)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    projects = sorted(p for p in args.data.iterdir() if p.is_dir()) if args.data.is_dir() else []
    if not projects:
        print(f"no transcripts under {args.data}", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory(prefix="vlk-learn-bench-") as tmp:
        for directory in projects:
            row = run_project(directory, Path(tmp))
            row["verdicts"] = verdicts(row)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    report = {"command": "python bench/learn.py", "data": str(args.data), "projects": rows}
    if not args.no_write:
        write(report)
    print(json.dumps(report, indent=2))
    return 0


def write(report: dict[str, Any]) -> None:
    (RESULTS / "learn.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = ["# Learning from history: `learn` against the hooks, on real Claude Code transcripts", "",
             "Command: `.venv/bin/python bench/learn.py` (data: `../shared/data/claude-code-sessions`). Per project, "
             "the first half of its sessions is learned from the files (L) and replayed through the live hook "
             "handler (H); the second half is then replayed through the hooks on each. See the module docstring.",
             "", "| figure | " + " | ".join(r["project"] for r in report["projects"]) + " |",
             "| --- |" + " ---: |" * len(report["projects"])]

    def line(label: str, get: Any) -> None:
        lines.append(f"| {label} | " + " | ".join(str(get(r)) for r in report["projects"]) + " |")

    line("sessions (first half / second half)", lambda r: f"{r['first_half']} / {r['second_half']}")
    line("first half: error results in the files (of them host refusals)",
         lambda r: f"{r['files']['error_results']} ({r['files']['refusals_in_files']})")
    line("failures stored: learned / hooks", lambda r: f"{r['memory_learned']['failures']} / "
         f"{r['memory_hooks']['failures']}")
    line("failures stored when every error result is sent as a failure (classifier alone)",
         lambda r: r["failures_every_error_as_failure"])
    line("loops: learned / hooks", lambda r: f"{r['memory_learned']['loops']} / {r['memory_hooks']['loops']}")
    line("fixes: learned / hooks", lambda r: f"{r['memory_learned']['fixes']} / {r['memory_hooks']['fixes']}")
    line("second half, failures: told a fix of an earlier session, L / H",
         lambda r: f"{r['second_half_told_learned']['fix_told']} / {r['second_half_told_hooks']['fix_told']} "
         f"(of {r['second_half_told_hooks']['failure_events']})")
    line("second half, failures: told anything of an earlier session, L / H",
         lambda r: f"{r['second_half_told_learned']['earlier_told']} / {r['second_half_told_hooks']['earlier_told']}")
    line("second half, session-start text characters, L / H",
         lambda r: f"{r['second_half_told_learned']['start_chars']} / {r['second_half_told_hooks']['start_chars']}")
    line("second learn: sessions learned (sources unchanged)",
         lambda r: f"{r['second_learn']['sessions']} ({r['second_learn']['unchanged_sources']})")
    line("host refusals stored / secrets stored (failing results with a secret in the files)",
         lambda r: f"{r['memory_learned']['refusals_stored']} / {r['memory_learned']['secrets_stored']} "
         f"({r['files']['failing_results_with_secrets']})")
    line("planted secrets (an AWS key, a GitHub token) in a real failing result: reach the database",
         lambda r: r["planted_secret_stored"])
    line("seconds: learn in process / hooks in process (median of 3)",
         lambda r: f"{r['seconds_learn_in_process']} / {r['seconds_hooks_in_process']}")
    line("seconds: `vlk-memact learn` command, process start included", lambda r: r["seconds_learn_command"])
    lines += ["", "## The bars", "", "| bar | " + " | ".join(r["project"] for r in report["projects"]) + " |",
              "| --- |" + " --- |" * len(report["projects"])]
    for key in report["projects"][0]["verdicts"]:
        lines.append(f"| {key} | " + " | ".join(str(r["verdicts"][key]) for r in report["projects"]) + " |")
    (RESULTS / "learn.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
