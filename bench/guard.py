"""Replay real agent runs as Claude Code hook events through the hook's own handler, and judge the guard.

    .venv/bin/python bench/guard.py              # every trajectory of trajectories-dev, both formats
    .venv/bin/python bench/guard.py --quick      # two trajectories of each format (smoke run)
    .venv/bin/python bench/guard.py --only NAME  # named trajectories (repeatable)
    .venv/bin/python bench/guard.py --part tune  # only the half rules are chosen on

The full run also replays everything at loop threshold 2 (--stress-threshold; 0 skips it).

Every trajectory is one fresh Claude Code session on its own database (bench/claude_events.py): each
event goes through `vlk_memact.hosts.claude_code.adapter.handle(event, memory)`, the function behind
`vlk-memact hook claude-code`. The real outcome of every step is fed even when the guard denied it,
so each denial is judged against what really happened next (bench/guard_truth.py). Rules are
replayed side by side: the product's default and every variant named in RULES.

Rule choices are made on the *tune* half of the trajectories and reported on the *held-out* half:
per source, the ceil(n/2) trajectories with the smallest sha256(instance_id) are the tune half.
Figures go to bench/results/guard.json and bench/results/guard.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from claude_events import session_start, step_events, user_prompt  # noqa: E402
from guard_report import report, table  # noqa: E402
from guard_result import Denial, Result  # noqa: E402
from guard_truth import LOOP_THRESHOLD, judge_denial, loop_repeats  # noqa: E402
from trajectories import SOURCES, Trajectory, load  # noqa: E402

from vlk_memact import Memory, Settings  # noqa: E402
from vlk_memact.hosts.claude_code import adapter as claude_code  # noqa: E402
from vlk_memact.hosts.shared import guard

RESULTS = ROOT / "bench" / "results"
Handler = Callable[[dict[str, Any], Memory], "dict[str, Any] | None"]


# ---- the split ----


def split_of(trajectories: list[Trajectory]) -> dict[str, str]:
    """instance_id -> 'tune' or 'held-out', stratified per source by sha256 of the instance id."""
    split: dict[str, str] = {}
    for source in SOURCES:
        names = sorted(
            (t.name for t in trajectories if t.source == source),
            key=lambda n: hashlib.sha256(n.encode()).hexdigest(),
        )
        half = (len(names) + 1) // 2
        for rank, name in enumerate(names):
            split[name] = "tune" if rank < half else "held-out"
    return split


def fixed_split() -> dict[str, str]:
    """The split over every trajectory of the data set, so a partial run (--quick) keeps each one's half."""
    return split_of(load())


# ---- rules ----
# The product's rule is whatever vlk_memact/hosts/shared/guard.py decides ("shipped"). The other rules put back
# one or both of the two predicates of issue 11 taken literally (as first shipped, commit 4142f20): every
# successful shell command is a change, and every whitespace run of the input is collapsed.


_decide = guard.decide


def _any_looped_call(mode: str, key: str, looped: bool, since: Any, **_: Any) -> str:
    """The rule before issue 20: a call whose failure was archived into any loop with an active anchor is
    denied when nothing changed, however often it failed itself and whatever its error said."""
    return _decide(mode, key, looped, since)


@contextmanager
def _patched(**predicates: Callable[..., Any]) -> Iterator[None]:
    saved = {name: getattr(guard, name) for name in predicates}
    try:
        for name, function in predicates.items():
            setattr(guard, name, function)
        yield
    finally:
        for name, function in saved.items():
            setattr(guard, name, function)


RULES: dict[str, Callable[[], Any]] = {
    "any looped call": lambda: _patched(decide=_any_looped_call),
    "shipped": lambda: _patched(),
}
RULE_NOTES = {
    "any looped call": "before issue 20: a call is denied when one of its failures was archived into a loop "
    "(whoever formed it) and nothing changed since",
    "shipped": "the product now (hosts/shared/guard.py, issue 20): only a call that itself failed >= 3 times with one "
    "error fingerprint, a specific error, nothing state-changing since (unknown tools, waits, fetches, "
    "package managers, a read of the file a failed edit was about all count as changes); else one warning",
}


# ---- one trajectory ----


def _check(output: dict[str, Any] | None, event: str) -> list[str]:
    problems: list[str] = []
    if output is None:
        return problems
    if not isinstance(output, dict):
        return [f"{event}: output is {type(output).__name__}, not an object"]
    try:
        json.dumps(output)
    except (TypeError, ValueError) as exc:
        problems.append(f"{event}: output is not JSON-serialisable: {exc}")
    specific = output.get("hookSpecificOutput")
    if specific is not None and (not isinstance(specific, dict) or specific.get("hookEventName") != event):
        problems.append(f"{event}: hookSpecificOutput must name hookEventName {event!r}: {specific!r:.200}")
    if event != "PreToolUse" and isinstance(specific, dict) and "permissionDecision" in specific:
        problems.append(f"{event}: permissionDecision outside PreToolUse")
    for text in _injected(output):
        if not text.startswith("vlk-memact:"):
            problems.append(f"{event}: injected text does not begin with 'vlk-memact:': {text[:80]!r}")
    return problems


def _specific(output: dict[str, Any] | None) -> dict[str, Any]:
    specific = output.get("hookSpecificOutput") if isinstance(output, dict) else None
    return specific if isinstance(specific, dict) else {}


def _injected(output: dict[str, Any] | None) -> list[str]:
    """The texts of one output that reach the model: additionalContext, and the reason of a deny."""
    specific = _specific(output)
    texts = []
    if isinstance(specific.get("additionalContext"), str) and specific["additionalContext"]:
        texts.append(specific["additionalContext"])
    if specific.get("permissionDecision") == "deny" and isinstance(
        specific.get("permissionDecisionReason"), str
    ):
        texts.append(specific["permissionDecisionReason"])
    return texts


def replay(
    trajectory: Trajectory,
    split: str,
    rule: str,
    handle: Handler,
    database_url: str,
    threshold: int = LOOP_THRESHOLD,
) -> Result:
    """Feed one trajectory's events to the handler on a fresh database; collect decisions and texts."""
    out = Result(trajectory.name, trajectory.source, split, rule, steps=len(trajectory.steps))
    out.truth = sorted(loop_repeats(trajectory, threshold=threshold))
    out.truth_any_change = sorted(
        loop_repeats(trajectory, require_nothing_changed=False, threshold=threshold)
    )
    started = time.perf_counter()
    # The defaults, whatever the caller's environment says, but for the loop threshold asked for.
    settings = dataclasses.replace(Settings.from_env({}), loop_threshold=threshold)
    with Memory(
        database_url, settings=settings, project=f"guard-replay/{trajectory.source}/{trajectory.name}"
    ) as memory:

        def send(event: dict[str, Any]) -> dict[str, Any] | None:
            name = event["hook_event_name"]
            t0 = time.perf_counter()
            output = handle(event, memory)
            out.handle_ms.setdefault(name, []).append((time.perf_counter() - t0) * 1000)
            out.malformed_outputs += _check(output, name)
            for text in _injected(output):
                out.injected_chars += len(text)
                if len(text) > out.largest_injected:
                    out.largest_injected, out.largest_injected_event = len(text), name
            return output

        for event in (session_start(trajectory), user_prompt(trajectory)):
            out.session_injections += bool(_specific(send(event)).get("additionalContext"))
        truth = set(out.truth)
        for se in step_events(trajectory):
            out.tool_calls += 1
            out.failed_calls += se.step.failed
            decision = _specific(send(se.pre))
            if decision.get("permissionDecision") == "deny":
                reason = decision.get("permissionDecisionReason")
                out.denials.append(
                    Denial(
                        se.index,
                        se.step.command or "",
                        judge_denial(trajectory.steps, se.index),
                        se.index in truth,
                        len(reason) if isinstance(reason, str) else 0,
                        len(se.step.observation),
                    )
                )
            elif decision.get("additionalContext"):
                out.warnings += 1
            # What really happened, fed whatever the guard said.
            out.post_injections += bool(_specific(send(se.post)).get("additionalContext"))
    out.seconds = time.perf_counter() - started
    return out


def run(
    trajectories: list[Trajectory], split: dict[str, str], rules: list[str], threshold: int = LOOP_THRESHOLD
) -> list[Result]:
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="vlk-guard-") as tmp:
        for rule in rules:
            with RULES[rule]():
                for number, t in enumerate(trajectories):
                    url = f"sqlite:///{tmp}/{rule}-{number}.db"
                    results.append(replay(t, split[t.name], rule, claude_code.handle, url, threshold))
                    print(f"{rule}: {t.source}/{t.name}: {len(results[-1].denials)} denials", file=sys.stderr)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two trajectories of each format, no stress run")
    parser.add_argument("--only", action="append", metavar="NAME", help="replay only this instance id")
    parser.add_argument(
        "--part",
        choices=("tune", "held-out", "all"),
        default="all",
        help="replay only one half (choose rules with --part tune, never looking at held-out)",
    )
    parser.add_argument(
        "--rule", action="append", choices=list(RULES), help="replay only this rule (repeatable)"
    )
    parser.add_argument(
        "--stress-threshold",
        type=int,
        default=2,
        help="also replay with this VLK_LOOP_THRESHOLD (0: no stress run)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="directory for guard.json and guard.md")
    args = parser.parse_args()
    split = fixed_split()
    trajectories = load(2 if args.quick else None, set(args.only) if args.only else None)
    trajectories = [t for t in trajectories if args.part in ("all", split[t.name])]
    rules = [r for r in RULES if not args.rule or r in args.rule]
    thresholds = [LOOP_THRESHOLD] + (
        [args.stress_threshold] if args.stress_threshold and not args.quick else []
    )
    runs: dict[int, tuple[list[Result], dict[str, Any]]] = {}
    for threshold in thresholds:
        results = run(trajectories, split, rules, threshold)
        runs[threshold] = (results, table(results, rules))
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "-quick" if args.quick or args.only or args.part != "all" else ""
    main_results, main_figures = runs[LOOP_THRESHOLD]
    payload = {
        "rules": {rule: RULE_NOTES[rule] for rule in rules},
        "split": {
            "tune": sorted(n for n, p in split.items() if p == "tune"),
            "held-out": sorted(n for n, p in split.items() if p == "held-out"),
        },
        "loop_threshold": LOOP_THRESHOLD,
        "figures": main_figures,
        "stress": {str(t): figures for t, (_, figures) in runs.items() if t != LOOP_THRESHOLD},
        "trajectories": [asdict(r) | {"handle_ms": None} for r in main_results],
    }
    (args.out / f"guard{suffix}.json").write_text(json.dumps(payload, indent=2))
    command = " ".join([".venv/bin/python bench/guard.py", *sys.argv[1:]])
    text = report(runs, rules, command, RULE_NOTES)
    (args.out / f"guard{suffix}.md").write_text(text)
    print(text.split("| rule | part")[0])
    malformed = sum(len(r.malformed_outputs) for results, _ in runs.values() for r in results)
    for results, _ in runs.values():
        for r in results:
            for problem in r.malformed_outputs[:5]:
                print(f"malformed output: {r.name}: {problem}", file=sys.stderr)
    return 1 if malformed else 0


if __name__ == "__main__":
    raise SystemExit(main())
