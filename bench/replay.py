"""Replay real agent trajectories through the library API and measure what the memory layer saves.

    .venv/bin/python bench/replay.py            # both formats, per trajectory and in total
    .venv/bin/python bench/replay.py --quick    # a few trajectories, for CI smoke runs

Every failed observation is recorded as a PRESENT slot and the context is fetched at every step
(default budget). The baseline keeps every failure in context, rendered the same way. A
cross-session mode replays the trajectories of one repository as consecutive sessions of one
project and counts lessons from an earlier session that fire in a later one.
Figures go to bench/results/replay.json and bench/results/replay.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from vlk_memact import Memory, Settings  # noqa: E402
from vlk_memact.core.model import Origin, Slot, TemporalState  # noqa: E402
from vlk_memact.core.render import CONTEXT_HEADER, estimate_tokens, present_lines  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from trajectories import Trajectory, load  # noqa: E402  (shared with bench/guard.py)

RESULTS = ROOT / "bench" / "results"


@dataclass
class Outcome:
    name: str
    source: str
    steps: int = 0
    failures: int = 0
    context_tokens: int = 0
    baseline_tokens: int = 0
    largest_context: int = 0
    over_budget: int = 0
    loops: int = 0
    near_duplicate_loops: int = 0  # loops whose copies are not all the same text (method "fingerprint")
    constraints: int = 0
    recalls: int = 0
    identical_runs: int = 0
    identical_runs_intercepted: int = 0
    cross_session_recalls: int = 0
    seconds: float = 0.0
    examples: list[str] = field(default_factory=list)


def baseline_tokens(failures: list[str]) -> int:
    """Every failure kept in context, rendered the way vlk renders a PRESENT slot."""
    lines = "".join(
        present_lines(Slot(id=i + 1, session_id="s", sequence_order=i + 1, temporal_state=TemporalState.PRESENT,
                           origin=Origin.RECORD, created_at="", raw_log=text))
        for i, text in enumerate(failures)
    )
    return estimate_tokens(CONTEXT_HEADER + lines)


def replay(memory: Memory, trajectory: Trajectory, session: str, learned_before: set[str]) -> Outcome:
    """Record each failure, fetch the context at every step."""
    out = Outcome(trajectory.name, trajectory.source)
    started = time.perf_counter()
    recorded: list[str] = []
    ids_by_text: dict[str, list[int]] = defaultdict(list)
    for step in trajectory.steps:
        out.steps += 1
        if step.failed and step.observation:
            result = memory.record_state(raw_log=step.observation, session_id=session)
            recorded.append(step.observation.strip())
            ids_by_text[recorded[-1]].append(result.timeline_id)
            out.failures += 1
            out.recalls += len(result.recalled)
            for recall in result.recalled:
                if recall.learned_in_session in learned_before:
                    out.cross_session_recalls += 1
                    if len(out.examples) < 2:
                        out.examples.append(
                            f"{session}: recorded `{step.observation.splitlines()[0][:100]}` -> recalled "
                            f"[id:{recall.constraint_id}] from session {recall.learned_in_session}: "
                            f"{recall.lesson[:160]}"
                        )
        context = memory.fetch_context(session_id=session)
        out.loops += len(context.loops)
        out.near_duplicate_loops += sum(loop.method != "exact" for loop in context.loops)
        out.constraints += len(context.loops) + len(context.merges)
        out.context_tokens += context.tokens
        out.largest_context = max(out.largest_context, context.tokens)
        out.over_budget += context.tokens > context.max_tokens
        out.baseline_tokens += baseline_tokens(recorded)
    history = {s.id: s for s in memory.get_history(limit=500, session_id=session).slots}
    for text, ids in ids_by_text.items():
        if len(ids) >= 3:
            # Intercepted: a loop archived copies of it, and fewer than three copies are left active at the end.
            out.identical_runs += 1
            states = [history[i] for i in ids if i in history]
            looped = sum(s.retired_reason == "loop" for s in states)
            active = sum(s.temporal_state == "PRESENT" for s in states)
            out.identical_runs_intercepted += looped >= 1 and active < 3
    out.seconds = time.perf_counter() - started
    return out


def run(quick: bool) -> dict[str, object]:
    trajectories = load(3 if quick else None)
    settings = Settings()
    per_session: list[Outcome] = []
    with tempfile.TemporaryDirectory() as tmp:
        # Within-trajectory: every trajectory in its own project, so nothing carries over.
        with Memory(f"sqlite:///{tmp}/within.db", settings=settings, project="replay") as memory:
            for t in trajectories:
                memory.project = f"within:{t.name}"
                per_session.append(replay(memory, t, t.name, set()))
        # Cross-session: trajectories of one repository are consecutive sessions of one project.
        cross: list[Outcome] = []
        by_project: dict[str, list[Trajectory]] = defaultdict(list)
        for t in trajectories:
            by_project[f"{t.source}:{t.project}"].append(t)
        with Memory(f"sqlite:///{tmp}/cross.db", settings=settings, project="replay") as memory:
            for project, group in sorted(by_project.items()):
                memory.project = project
                earlier: set[str] = set()
                for t in group:
                    cross.append(replay(memory, t, t.name, set(earlier)))
                    earlier.add(t.name)
    return {"within": per_session, "cross": cross, "projects": by_project}


def totals(outcomes: list[Outcome]) -> dict[str, float]:
    keys = ["steps", "failures", "context_tokens", "baseline_tokens", "loops", "near_duplicate_loops",
            "constraints", "recalls",
            "identical_runs", "identical_runs_intercepted", "over_budget", "cross_session_recalls"]
    total: dict[str, float] = {k: sum(getattr(o, k) for o in outcomes) for k in keys}
    total["largest_context"] = max((o.largest_context for o in outcomes), default=0)
    base = total["baseline_tokens"]
    total["reduction"] = round(1 - total["context_tokens"] / base, 4) if base else 0.0
    return total


def report(result: dict[str, object]) -> str:
    within: list[Outcome] = result["within"]  # type: ignore[assignment]
    cross: list[Outcome] = result["cross"]  # type: ignore[assignment]
    lines = ["# Replay of real agent trajectories", "",
             "`.venv/bin/python bench/replay.py` — tokens are estimated as characters / 3.8; the baseline keeps "
             "every failure in context; the context is fetched at every step with the default budget.", ""]
    lines += ["| source | trajectories | steps | failures | tokens in context | baseline | reduction | loops | "
              "near-duplicate loops | constraints | recalls | identical runs (>=3) intercepted | largest context | "
              "over budget |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for source in ("swe-agent", "mini-swe-agent", "all"):
        group = [o for o in within if source in ("all", o.source)]
        t = totals(group)
        lines.append(
            f"| {source} | {len(group)} | {t['steps']:.0f} | {t['failures']:.0f} | {t['context_tokens']:.0f} | "
            f"{t['baseline_tokens']:.0f} | {t['reduction']:.1%} | {t['loops']:.0f} | "
            f"{t['near_duplicate_loops']:.0f} | {t['constraints']:.0f} | "
            f"{t['recalls']:.0f} | {t['identical_runs_intercepted']:.0f}/{t['identical_runs']:.0f} | "
            f"{t['largest_context']:.0f} | {t['over_budget']:.0f} |"
        )
    c = totals(cross)
    lines += ["", "## Cross-session mode", "",
              f"Trajectories of one repository replayed as consecutive sessions of one project: "
              f"{c['cross_session_recalls']:.0f} recalls of a lesson learned in an earlier session "
              f"({c['recalls']:.0f} recalls in all).", ""]
    for o in cross:
        for example in o.examples:
            lines.append(f"- {example}")
    lines += ["", "## Per trajectory (within-trajectory mode)", "",
              "| trajectory | source | steps | failures | tokens | baseline | loops | recalls | largest |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for o in within:
        lines.append(f"| {o.name} | {o.source} | {o.steps} | {o.failures} | {o.context_tokens} | "
                     f"{o.baseline_tokens} | {o.loops} | {o.recalls} | {o.largest_context} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three trajectories of each format")
    args = parser.parse_args()
    result = run(args.quick)
    within: list[Outcome] = result["within"]  # type: ignore[assignment]
    cross: list[Outcome] = result["cross"]  # type: ignore[assignment]
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {
        "within": {source: totals([o for o in within if source in ("all", o.source)])
                   for source in ("swe-agent", "mini-swe-agent", "all")},
        "cross": totals(cross),
        "cross_examples": [e for o in cross for e in o.examples],
        "trajectories": [o.__dict__ for o in within],
    }
    suffix = "-quick" if args.quick else ""
    (RESULTS / f"replay{suffix}.json").write_text(json.dumps(payload, indent=2))
    text = report(result)
    (RESULTS / f"replay{suffix}.md").write_text(text)
    print(text.split("## Per trajectory")[0])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
