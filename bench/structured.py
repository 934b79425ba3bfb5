"""What vlk_fetch_context costs the model in each form, over real agent trajectories.

    .venv/bin/python bench/structured.py            # every trajectory of trajectories-dev
    .venv/bin/python bench/structured.py --quick    # a few trajectories

Hosts that show the model the text block (most) pay for the context text; hosts that show
structuredContent (Claude Code) pay for its compact JSON: the same text JSON-escaped plus the pipeline
report. Side by side at every fetch of the replay (the same recording as bench/replay.py, budget 4000):
the text, the structured result, and the report alone (what Claude Code showed before issue 15: the
ids without the context). Both forms must stay within max_tokens. Figures go to
bench/results/structured.json and bench/results/structured.md (`-quick` suffix for --quick).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from replay import load  # noqa: E402

from vlk_memact import Memory, Settings  # noqa: E402
from vlk_memact.core.render import context_view, estimate_tokens, structured_json  # noqa: E402

RESULTS = ROOT / "bench" / "results"


def measure(quick: bool) -> dict[str, object]:
    trajectories = load(3 if quick else None)
    text_tokens: list[int] = []
    structured_tokens: list[int] = []
    report_tokens: list[int] = []
    over_budget = 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        with Memory(f"sqlite:///{tmp}/bench.db", settings=Settings(), project="bench") as memory:
            for n, trajectory in enumerate(trajectories):
                session = f"t{n}"
                for step in trajectory.steps:
                    if step.failed and step.observation:
                        memory.record_state(raw_log=step.observation, session_id=session)
                    context = memory.fetch_context(session_id=session)
                    view = context_view(context)
                    report = {k: v for k, v in view.items() if k != "context"}
                    text_tokens.append(estimate_tokens(context.text))
                    structured_tokens.append(estimate_tokens(structured_json(view)))
                    report_tokens.append(estimate_tokens(structured_json(report)))
                    over_budget += max(text_tokens[-1], structured_tokens[-1]) > context.max_tokens

    def summary(values: list[int]) -> dict[str, float]:
        ordered = sorted(values)
        return {"median": statistics.median(ordered), "p95": ordered[int(0.95 * (len(ordered) - 1))],
                "max": ordered[-1], "total": sum(ordered)}

    ratios = sorted(s / t for s, t in zip(structured_tokens, text_tokens, strict=True))
    return {
        "trajectories": len(trajectories),
        "fetches": len(text_tokens),
        "max_tokens": Settings().context_max_tokens,
        "text_tokens": summary(text_tokens),
        "structured_tokens": summary(structured_tokens),
        "report_only_tokens": summary(report_tokens),
        "structured_over_text": {"median": statistics.median(ratios), "p95": ratios[int(0.95 * (len(ratios) - 1))],
                                 "total": sum(structured_tokens) / sum(text_tokens)},
        "fetches_over_budget": over_budget,
        "seconds": round(time.perf_counter() - started, 1),
        "estimator": "ceil(characters / 3.8), the project's single estimator",
    }


def report(result: dict[str, object]) -> str:
    rows = [("text block (what most hosts show)", result["text_tokens"]),
            ("structuredContent as compact JSON (what Claude Code shows)", result["structured_tokens"]),
            ("the report alone (Claude Code before issue 15: no context)", result["report_only_tokens"])]
    ratio = result["structured_over_text"]
    lines = [
        "# vlk_fetch_context: the text form and the structured form, side by side",
        "",
        f"{result['fetches']} fetches over {result['trajectories']} real trajectories (trajectories-dev), "
        f"budget {result['max_tokens']} tokens; {result['estimator']}. "
        "Command: `.venv/bin/python bench/structured.py`.",
        "",
        "| form | median | p95 | max | total |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, s in rows:
        lines.append(f"| {name} | {s['median']:.0f} | {s['p95']:.0f} | {s['max']:.0f} | {s['total']:.0f} |")
    lines += [
        "",
        f"Structured / text: median {ratio['median']:.2f}, p95 {ratio['p95']:.2f}, "
        f"over all fetches {ratio['total']:.2f}. "
        f"Fetches where either form exceeded max_tokens: {result['fetches_over_budget']}. "
        f"Run time {result['seconds']} s (a shared 2-core machine: noisy).",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few trajectories only")
    args = parser.parse_args()
    result = measure(args.quick)
    suffix = "-quick" if args.quick else ""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"structured{suffix}.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / f"structured{suffix}.md").write_text(report(result))
    print(report(result))
    return 0 if result["fetches_over_budget"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
