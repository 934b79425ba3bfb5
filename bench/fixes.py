"""Replay real agent runs, a repository's runs as successive sessions of one project, and judge fix memory.

    .venv/bin/python bench/fixes.py                      # every trajectory of trajectories-dev
    .venv/bin/python bench/fixes.py --src /work/main/src --baseline   # today's injected characters (main)
    .venv/bin/python bench/fixes.py --quick              # four repositories (smoke run)

Every trajectory becomes one Claude Code session (bench/claude_events.py); the runs of one repository
(instance id without its trailing number) are replayed in instance-number order into one database and
one project, so a later run is a later session of the same project. Every event goes through
`vlk_memact.hosts.claude_code.adapter.handle(event, memory)`, the function behind `vlk-memact hook claude-code`.

Truth, from the trajectories alone: in a session, a failure is resolved when an identical later command
succeeds; its last fix step is the last successful command that is not read-only and not the call
itself between the error's last failure and that success (nothing there: passed on retry, no case).
A later session of the project hitting the same error (its text with numbers and paths masked) is a
case; it is recalled when the text injected right after that failure holds the first 30 characters
of the first line of the last fix step of the latest earlier session that resolved it. Errors met in
at most two repositories (and not generic syntax, lint or harness messages) are "specific".
Precision: of the steps named in injected fixes, the share that ran after a failure of the same error
(fingerprint) in their session, not before it. Characters: all text injected per session.

Rules are chosen on the repositories whose sha256(name) falls in the *tune* half and reported on the
*held-out* half. Figures go to bench/results/fixes.json and bench/results/fixes.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
COMMAND = "bench/fixes.py"
carried: Any = None  # bench/carried.py, imported by main()
PREFIX_CHARS = 30  # a shell command is recognised by the first 30 characters of its first line
SPECIFIC_REPOS = 2
_GENERIC = re.compile(
    r"SyntaxError|IndentationError|syntax error|Your proposed edit has introduced|\bE\d{3}\b|flake8|"
    r"^Traceback \(most recent call last\):\s*$|No file open|Usage: |usage: ", re.MULTILINE)
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\w.\-~]*/)+[\w.\-]*")
_NUMBER = re.compile(r"0x[0-9a-fA-F]+|\d+(?:\.\d+)*")
_RULE = re.compile(r"([=\-*_#~])\1{2,}")


def normalised_error(text: str) -> str:
    """The error with paths and numbers masked and white space folded: what 'the same failure' means."""
    text = _NUMBER.sub("<n>", _PATH.sub("<path>", text))
    text = _RULE.sub(r"\1\1\1", text)  # a banner's width (==== 1 failed ====) is the terminal's, not the error's
    return " ".join(text.split())[:2000]


def last_line_error(text: str) -> str:
    """The looser identity: the last non-empty line of the output, masked (where most errors say what broke)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return normalised_error(lines[-1]) if lines else ""


# An exception or a tool's error line first; a line merely mentioning "error" only when there is none.
_ERROR_LINE = re.compile(r"^\s*[\w.]*(?:Error|Exception|Failure|Exit)\b[:(]|\berror(?:\[\w+\])?:|fatal:|"
                         r"command not found|No such file|not found|Errno|FAILED|Permission denied")
_WEAK_ERROR_LINE = re.compile(r"error|exception|fail|cannot|invalid", re.IGNORECASE)


def error_line_error(text: str) -> str:
    """The middle identity: the last line that reads as an error (else the last line), masked."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    errors = ([line for line in lines if _ERROR_LINE.search(line)]
              or [line for line in lines if _WEAK_ERROR_LINE.search(line)] or lines)
    return normalised_error(errors[-1]) if lines else ""


IDENTITIES = {"full text": normalised_error, "error line": error_line_error, "last line": last_line_error}


def first_line(command: str) -> str:
    lines = [line.strip() for line in command.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def recognised(step: str, text: str) -> bool:
    return first_line(step)[:PREFIX_CHARS] in text


@dataclasses.dataclass
class Case:
    identity: str
    project: str
    session: str
    error: str
    fix_step: str
    source_session: str
    specific: bool
    recalled: bool = False


@dataclasses.dataclass
class Totals:
    sessions: int = 0
    injected_chars: int = 0
    fix_texts: int = 0
    fix_chars: int = 0
    named_steps: int = 0
    named_correct: int = 0
    handle_seconds: float = 0.0
    errors: int = 0  # handle raised
    probe_steps: int = 0  # steps named at a failure (once per failure and step)
    probe_ran_before: int = 0  # of them, ran in that session before its error first failed there, fixing it nowhere
    probe_wrong: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    wrong: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # named steps judged wrong (first 30)
    carried: Any = None  # bench/carried.py's Split: start text and the failure note


def split_of(project: str) -> str:
    return "tune" if int(hashlib.sha256(project.encode()).hexdigest(), 16) % 2 == 0 else "held-out"


def instance_number(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def texts_of(output: dict[str, Any] | None) -> list[str]:
    if not output:
        return []
    specific = output.get("hookSpecificOutput") or {}
    return [t for t in (specific.get("additionalContext"), specific.get("permissionDecisionReason"))
            if isinstance(t, str) and t]


def _command(step: Any) -> str | None:
    """The command a step's tool event carries (a format error's first action too, since issue 20)."""
    return getattr(step, "command", step.action)


def resolutions(steps: list[Any], is_read_only: Any, identity: Any = normalised_error) -> list[tuple[int, str, str]]:
    """(index of the resolving success, normalised error, last fix step) of a session's resolved failures."""
    found = []
    pending: dict[str, list[tuple[int, str]]] = defaultdict(list)  # action -> failures (index, error) since success
    for index, step in enumerate(steps):
        if _command(step) is None:
            continue
        action = " ".join(_command(step).split())
        if step.failed:
            pending[action].append((index, identity(step.observation)))
            continue
        failures = pending.pop(action, [])
        last_of: dict[str, int] = {}
        for at, error in failures:
            last_of[error] = at
        for error, at in last_of.items():
            between = [s for s in steps[at + 1:index] if _command(s) is not None and not s.failed
                       and " ".join(_command(s).split()) != action and not is_read_only(_command(s))]
            if between and error:
                found.append((index, error, _command(between[-1])))
    return found


def replay_project(project: str, trajectories: list[Any], memory_factory: Any, handle: Any,
                   claude_events: Any, specific: dict[str, set[str]], is_read_only: Any, fingerprint: Any,
                   totals: Totals, cases: list[Case]) -> None:
    trajectories = sorted(trajectories, key=lambda t: (instance_number(t.name), t.source, t.name))
    # identity -> error -> (session, last fix step), latest session wins
    resolved: dict[str, dict[str, tuple[str, str]]] = {name: {} for name in IDENTITIES}
    use_ids: dict[str, tuple[int, int]] = {}  # tool_use_id -> (trajectory number, step index)
    truth_steps: dict[str, set[str]] = defaultdict(set)  # error (error line) -> first lines of steps that fixed it
    ledger = carried.Ledger(error_line_error)
    with memory_factory(project) as memory:
        for number, trajectory in enumerate(trajectories):
            totals.sessions += 1
            session = claude_events.session_id_of(trajectory)
            hit: set[tuple[str, str]] = set()
            first_failed: dict[str, int] = {}  # error (error line) -> index of its first failure in this session

            def send(event: dict[str, Any]) -> list[str]:
                started = time.perf_counter()
                try:
                    output = handle(event, memory)
                except Exception as exc:  # noqa: BLE001 - counted: the hook must never raise
                    print(f"handle raised on {event['hook_event_name']}: {exc!r}", file=sys.stderr)
                    totals.errors += 1
                    output = None
                totals.handle_seconds += time.perf_counter() - started
                said = texts_of(output)
                totals.injected_chars += sum(len(t) for t in said)
                return said

            ledger.start(totals.carried, "\n".join(send(claude_events.session_start(trajectory))))
            send(claude_events.user_prompt(trajectory))
            for se in claude_events.step_events(trajectory):
                use_ids[se.post["tool_use_id"]] = (number, se.index)
                send(se.pre)
                said = "\n".join(send(se.post))
                if not se.step.failed:
                    continue
                ledger.failure(totals.carried, se.step.observation, said)
                first_failed.setdefault(error_line_error(se.step.observation), se.index)
                fix_lines = [line for line in said.splitlines() if "fixed in" in line or "fixed by:" in line]
                if fix_lines:
                    judge_probe(fix_lines, trajectory, first_failed[error_line_error(se.step.observation)],
                                truth_steps[error_line_error(se.step.observation)], totals)
                    totals.fix_texts += 1
                    totals.fix_chars += sum(len(line) for line in fix_lines)
                    judge_named(memory, session, fix_lines, fingerprint(se.post["error"]),
                                trajectories, use_ids, fingerprint, totals, claude_events)
                for name, identity in IDENTITIES.items():
                    error = identity(se.step.observation)
                    if error in resolved[name] and (name, error) not in hit:
                        hit.add((name, error))
                        source, step = resolved[name][error]
                        cases.append(Case(name, project, trajectory.name, error[:200], first_line(step)[:80], source,
                                          error in specific[name], recognised(step, "\n".join(fix_lines))))
            for name, identity in IDENTITIES.items():
                for _, error, step in resolutions(trajectory.steps, is_read_only, identity):
                    resolved[name][error] = (trajectory.name, step)
                    if name == "error line":
                        truth_steps[error].add(first_line(step)[:PREFIX_CHARS])
                        ledger.resolved_earlier.add(error)
            totals.carried.injected_chars = totals.injected_chars
            ledger.end(totals.carried, carried.fact_errors(memory, session))


def judge_probe(fix_lines: list[str], trajectory: Any, first_failure: int, fixed_it: set[str], totals: Totals) -> None:
    """Issue 34's precision, judged where the fix is told: a named step that already ran in this session before
    its error first failed here (a re-run of a reproduction script, a test run, an install already done) cannot be
    what fixes it, unless the same step fixed that error in an earlier session (the bench's truth)."""
    ran = {first_line(_command(s))[:PREFIX_CHARS] for s in trajectory.steps[:first_failure] if _command(s)}
    for line in fix_lines:
        body = line.split(" by: ", 1)[-1]
        steps = [part.strip() for part in body.rsplit(" (then ", 1)[0].split("; ") if part.strip()]
        if body.startswith("the changed call "):
            steps = [body[len("the changed call "):].rsplit(" (it passed)", 1)[0]]
        for step in steps:
            totals.probe_steps += 1
            head = step[:PREFIX_CHARS]
            if head in ran and head not in fixed_it:
                totals.probe_ran_before += 1
                if len(totals.probe_wrong) < 30:
                    totals.probe_wrong.append({"session": trajectory.name, "step": step[:100]})


def judge_named(memory: Any, session: str, fix_lines: list[str], fp: Any, trajectories: list[Any],
                use_ids: dict[str, tuple[int, int]], fingerprint: Any, totals: Totals, claude_events: Any) -> None:
    """Each step of the fixes just told: did it run after a failure of the same error in its session?"""
    from vlk_memact.engine.fix_memory import match_keys  # noqa: PLC0415 - absent from a baseline without fix memory

    key = memory.session_key(session)
    with memory.reading() as tx:
        told = [i for i in tx.injected(key) if i.startswith("f:")]
        found = {f"f:{f.id}": f for f in tx.fixes_matching(key, fp.keys, 50)}
    text = "\n".join(fix_lines)
    for item in told:
        fix = found.get(item)
        if fix is None:
            continue
        for step in fix.steps:
            if step.summary[:PREFIX_CHARS] not in text and first_line(step.summary)[:PREFIX_CHARS] not in text:
                continue
            if step.tool_use_id in judged_seen:
                continue
            judged_seen.add(step.tool_use_id)
            totals.named_steps += 1
            where = use_ids.get(step.tool_use_id or "")
            if where is None:
                continue
            trajectory = trajectories[where[0]]
            wanted = set(fix.fingerprint_keys)
            before = trajectory.steps[: where[1]]
            ran = trajectory.steps[where[1]]
            # The failure as the hook recorded it (its error text, exit code included), keys as fix memory
            # matches them.
            after_failure = any(s.failed and _command(s) is not None and wanted.intersection(match_keys(
                fingerprint(f"Exit code {claude_events.exit_code_of(s)}\n{s.observation}").keys)) for s in before)
            if after_failure and (not ran.failed):
                totals.named_correct += 1
            elif len(totals.wrong) < 30:
                totals.wrong.append({"session": trajectory.name, "step": where[1], "summary": step.summary[:80],
                                     "failed": ran.failed, "keys": list(fix.fingerprint_keys)[:2],
                                     "fix_session": fix.session_id, "told_in": session})


judged_seen: set[str | None] = set()


def figures(cases: list[Case], totals: Totals) -> dict[str, Any]:
    def rate(part: list[Case]) -> dict[str, Any]:
        hits = sum(c.recalled for c in part)
        return {"cases": len(part), "recalled": hits, "recall": round(hits / len(part), 3) if part else None}

    return {
        "sessions": totals.sessions,
        "mean_injected_chars_per_session": round(totals.injected_chars / max(totals.sessions, 1), 1),
        "fix_texts": totals.fix_texts,
        "fix_chars": totals.fix_chars,
        "named_steps": totals.named_steps,
        "named_after_the_failure": totals.named_correct,
        "precision": round(totals.named_correct / totals.named_steps, 3) if totals.named_steps else None,
        **{f"{name}: specific": rate([c for c in cases if c.specific and c.identity == name]) for name in IDENTITIES},
        **{f"{name}: all": rate([c for c in cases if c.identity == name]) for name in IDENTITIES},
        "probe_steps": totals.probe_steps,
        "probe_ran_before": totals.probe_ran_before,
        "probe_precision": round(1 - totals.probe_ran_before / totals.probe_steps, 3) if totals.probe_steps else None,
        "probe_wrong": totals.probe_wrong,
        "carried": totals.carried.as_dict(),
        "handle_seconds": round(totals.handle_seconds, 1),
        "handle_errors": totals.errors,
        "wrong_named": totals.wrong,
    }


def write_md(result: dict[str, Any], baseline: dict[str, Any] | None, path: Path) -> None:
    """bench/results/fixes.md: the held-out figures against the targets, then the tune half."""
    lines = ["# Fix memory on real agent runs (`bench/fixes.py`)", "",
             f"Command: `{result['command']}` ({result['trajectories']} trajectories of "
             f"{result['repositories']} repositories, {result['seconds']} s). "
             "Baseline (\"main\"): main before issue 34 (0e77150), the same bench on main's sources: `git archive "
             "0e77150 src | tar -x -C /tmp/base && .venv/bin/python bench/fixes.py --src /tmp/base/src --baseline` "
             "(bench/results/fixes-baseline.json), run beside this branch's on the same machine. Issue 34 (session "
             "start, the failure note, which steps are named) added the rows on precision at the failure told, "
             "session start and recurrences (bench/carried.py: the bench's own identity of an error, its error line, "
             "never the memory's fingerprint).", "",
             "Each repository's runs are successive sessions of one project, replayed in instance-number order "
             "through `vlk_memact.hosts.claude_code.adapter.handle`. Split: " + result["split"] + "; rules were chosen "
             "on the tune half.", ""]
    for split in ("held-out", "tune"):
        f = result[split]
        base = baseline[split]["mean_injected_chars_per_session"] if baseline else None
        ratio = round(f["mean_injected_chars_per_session"] / base, 3) if base else None
        lines += [f"## {split} ({f['sessions']} sessions)", "", "| figure | measured | target |", "| --- | --- | --- |"]
        for name in IDENTITIES:
            spec = f[f"{name}: specific"]
            every = f[f"{name}: all"]
            bs = baseline[split][f"{name}: specific"] if baseline else None
            be = baseline[split][f"{name}: all"] if baseline else None
            lines.append(f"| recall, specific errors, same error = {name} | {spec['recalled']}/{spec['cases']} = "
                         f"{spec['recall']}" + (f" (main: {bs['recalled']}/{bs['cases']})" if bs else "") + " | >= 0.80 |")
            lines.append(f"| recall, every error, same error = {name} | {every['recalled']}/{every['cases']} = "
                         f"{every['recall']}" + (f" (main: {be['recalled']}/{be['cases']})" if be else "") + " | - |")
        lines.append(f"| precision: named steps that ran after the failure | {f['named_after_the_failure']}/"
                     f"{f['named_steps']} = {f['precision']} | >= 0.95 |")
        if "probe_steps" in f:
            b = baseline[split] if baseline and "probe_steps" in baseline[split] else None
            lines.append(f"| precision at the failure told (issue 34): named steps not already run in that session "
                         f"before its error first failed there, unless they fixed it elsewhere | "
                         f"{f['probe_steps'] - f['probe_ran_before']}/{f['probe_steps']} = {f['probe_precision']}"
                         + (f" (main: {b['probe_precision']})" if b else "") + " | >= 0.95 |")
        c = f.get("carried")
        if c:
            b = baseline[split].get("carried") if baseline else None
            def vs(name: str, c: dict = c, b: dict | None = b) -> str:
                return f"{c[name]}" + (f" (main: {b[name]})" if b else "")
            lines.append(f"| session start: mean characters per session | {vs('mean_start_chars_per_session')} | <= 200 |")
            lines.append(f"| session start: facts told / met again in that session | {vs('facts_told')} / "
                         f"{vs('facts_met_again')} | - |")
            lines.append(f"| recurrences of an earlier session's error (error line): answered at their first failure | "
                         f"{vs('recurrences_answered')} of {vs('recurrences')} | not fewer than main |")
            lines.append(f"| of those an earlier session resolved: fix told | {vs('fixes_told_on_them')} of "
                         f"{vs('recurrences_fixed_before')} | not fewer than main |")
        lines.append(f"| mean characters injected per session | {f['mean_injected_chars_per_session']} "
                     f"(main: {base}; ratio {ratio}) | <= 1.25x main |")
        lines.append(f"| fix texts injected / their characters | {f['fix_texts']} / {f['fix_chars']} | - |")
        lines.append(f"| hook errors | {f['handle_errors']} | 0 |")
        if baseline:
            lines.append(f"| time in handle(), all events (the two runs at different machine loads: no speed "
                         f"comparison) | {f['handle_seconds']} s (main: {baseline[split]['handle_seconds']} s) | - |")
        lines.append("")
    lines += [
        "Identities of \"the same failure\": *full text* is the whole output with numbers and paths masked "
        "(strict); *error line* its last line that reads as an error; *last line* its last line (loose: "
        "test-runner banners such as `tests finished: <n> passed, <n> failed` or Sphinx's "
        "`Please also report this...` make unrelated failures \"the same\"; most misses of the looser "
        "identities are such lines, listed in fixes.json). Specific = met in at most two repositories and "
        "not a syntax, lint or usage message. A case is recalled when the text injected right after the "
        "failure holds the first 30 characters of the first line of the last fix step.", ""]
    path.write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src", default=str(ROOT / "src"), help="the vlk_memact sources to replay (default: ours)")
    parser.add_argument("--baseline", action="store_true", help="write bench/results/fixes-baseline.json")
    parser.add_argument("--quick", action="store_true", help="four repositories")
    parser.add_argument("--out", default=None, help="where to write the JSON figures")
    parser.add_argument("--render", action="store_true", help="only write fixes.md from the JSON files")
    args = parser.parse_args(argv)
    if args.render:
        base_path = RESULTS / "fixes-baseline.json"
        write_md(json.loads((RESULTS / "fixes.json").read_text()),
                 json.loads(base_path.read_text()) if base_path.exists() else None, RESULTS / "fixes.md")
        return 0
    sys.path.insert(0, args.src)
    sys.path.insert(1, str(ROOT / "bench"))
    global carried  # noqa: PLW0603 - bench/carried.py, importable once bench/ is on the path
    import carried  # noqa: PLC0415
    import claude_events  # noqa: PLC0415
    from trajectories import load  # noqa: PLC0415

    from vlk_memact import Memory, Settings  # noqa: PLC0415
    from vlk_memact.fingerprint import fingerprint  # noqa: PLC0415
    from vlk_memact.hosts.claude_code.adapter import handle  # noqa: PLC0415
    from vlk_memact.hosts.shared.read_only import is_read_only  # noqa: PLC0415

    trajectories = load()
    by_project: dict[str, list[Any]] = defaultdict(list)
    for t in trajectories:
        by_project[t.project].append(t)
    specific: dict[str, set[str]] = {}
    for name, identity in IDENTITIES.items():
        repos: dict[str, set[str]] = defaultdict(set)
        for t in trajectories:
            for s in t.steps:
                if s.failed and _command(s) is not None:
                    repos[identity(s.observation)].add(t.project)
        specific[name] = {e for e, projects in repos.items()
                          if len(projects) <= SPECIFIC_REPOS and e and not _GENERIC.search(e)}
    projects = sorted(by_project)
    if args.quick:
        projects = [p for p in projects if len(by_project[p]) >= 3][:4]
    settings = Settings.from_env({})
    started = time.perf_counter()
    per_split: dict[str, tuple[list[Case], Totals]] = {s: ([], Totals(carried=carried.Split()))
                                                       for s in ("tune", "held-out")}
    with tempfile.TemporaryDirectory() as folder:
        for n, project in enumerate(projects):
            cases, totals = per_split[split_of(project)]
            url = f"sqlite:///{folder}/{n}.db"
            replay_project(project, by_project[project],
                           lambda p, url=url: Memory(url, settings=settings, project=f"fix-replay/{p}"),
                           handle, claude_events, specific, is_read_only, fingerprint, totals, cases)
            print(f"{n + 1}/{len(projects)} {project}: {len(by_project[project])} sessions", file=sys.stderr)
    result = {
        "command": f".venv/bin/python {COMMAND}" + (" --quick" if args.quick else ""),
        "src": args.src,
        "seconds": round(time.perf_counter() - started, 1),
        "trajectories": sum(len(by_project[p]) for p in projects),
        "repositories": len(projects),
        "split": "repositories by sha256(name) parity: even = tune, odd = held-out",
        **{split: figures(*per_split[split]) for split in per_split},
        "missed_held_out_specific": [dataclasses.asdict(c) for c in per_split["held-out"][0]
                                     if c.specific and not c.recalled][:30],
        "missed_tune_specific": [dataclasses.asdict(c) for c in per_split["tune"][0]
                                 if c.specific and not c.recalled][:30],
    }
    out = Path(args.out) if args.out else RESULTS / ("fixes-baseline.json" if args.baseline else "fixes.json")
    out.write_text(json.dumps(result, indent=1) + "\n")
    if not args.baseline and args.out is None and not args.quick:
        base_path = RESULTS / "fixes-baseline.json"
        baseline = json.loads(base_path.read_text()) if base_path.exists() else None
        write_md(result, baseline, RESULTS / "fixes.md")
    print(json.dumps({k: v for k, v in result.items() if not k.startswith("missed")}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
