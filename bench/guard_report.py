"""bench/guard.py's figures: totals per rule and split, and the Markdown report (bench/results/guard.md)."""

from __future__ import annotations

import statistics
from typing import Any

from guard_result import Result
from trajectories import SOURCES

SPLITS = ("tune", "held-out")


def totals(results: list[Result]) -> dict[str, Any]:
    denials = [d for r in results for d in r.denials]
    verdicts = {v: sum(d.verdict == v for d in denials) for v in ("identical", "different", "succeeded")}
    steps = sum(r.steps for r in results)
    failed = sum(r.failed_calls for r in results)
    truth = sum(len(r.truth) for r in results)
    stopped = sum(d.in_truth for d in denials)
    any_change = sum(len(r.truth_any_change) for r in results)
    stopped_any = sum(d.step in set(r.truth_any_change) for r in results for d in r.denials)
    largest = max(results, key=lambda r: r.largest_injected, default=None)
    ms = [m for r in results for v in r.handle_ms.values() for m in v]
    return {
        "trajectories": len(results),
        "steps": steps,
        "tool_calls": sum(r.tool_calls for r in results),
        "failed_calls": failed,
        "denials": len(denials),
        **verdicts,
        "precision": round(verdicts["identical"] / len(denials), 4) if denials else None,
        "harm": round(verdicts["succeeded"] / len(denials), 4) if denials else None,
        "steps_saved": verdicts["identical"],
        "output_chars_not_shown": sum(d.output_chars for d in denials if d.verdict == "identical"),
        "deny_reason_chars": sum(d.reason_chars for d in denials),
        "saved_of_steps": round(verdicts["identical"] / steps, 4) if steps else None,
        "saved_of_failed": round(verdicts["identical"] / failed, 4) if failed else None,
        "loop_repeats": truth,
        "loop_repeats_stopped": stopped,
        "recall": round(stopped / truth, 4) if truth else None,
        "loop_repeats_any_change": any_change,
        "loop_repeats_any_change_stopped": stopped_any,
        "warnings": sum(r.warnings for r in results),
        "post_injections": sum(r.post_injections for r in results),
        "session_injections": sum(r.session_injections for r in results),
        "injected_chars": sum(r.injected_chars for r in results),
        "largest_injected": largest.largest_injected if largest else 0,
        "largest_injected_where": f"{largest.name} ({largest.largest_injected_event})" if largest else "",
        "malformed_outputs": sum(len(r.malformed_outputs) for r in results),
        "handle_ms_median": round(statistics.median(ms), 2) if ms else None,
        "handle_ms_p95": round(statistics.quantiles(ms, n=20)[-1], 2) if len(ms) >= 20 else None,
    }


def table(results: list[Result], rules: list[str]) -> dict[str, Any]:
    """rule -> part ('tune', 'held-out', 'all') -> source ('swe-agent', 'mini-swe-agent', 'all') -> totals."""
    figures: dict[str, Any] = {}
    for rule in rules:
        figures[rule] = {}
        for split in (*SPLITS, "all"):
            figures[rule][split] = {}
            for source in (*SOURCES, "all"):
                group = [
                    r
                    for r in results
                    if r.rule == rule and split in ("all", r.split) and source in ("all", r.source)
                ]
                figures[rule][split][source] = totals(group)
    return figures


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


TARGETS = {"precision": 0.98, "harm": 0.005, "recall": 0.90}


def target_lines(figures: dict[str, Any], rule: str) -> list[str]:
    """The issue's targets, checked on the held-out half: overall, and harm per agent on its own."""
    t = figures[rule]["held-out"]["all"]

    def verdict(ok: bool | None) -> str:
        return "n/a" if ok is None else ("pass" if ok else "FAIL")

    lines = [
        "| target (held-out half) | measured | result |",
        "| --- | --- | --- |",
        f"| precision >= {TARGETS['precision']} | {_pct(t['precision'])} ({t['identical']}/{t['denials']}) | "
        f"{verdict(None if t['precision'] is None else t['precision'] >= TARGETS['precision'])} |",
        f"| harm <= {TARGETS['harm']:.1%} of denials | {_pct(t['harm'])} ({t['succeeded']}/{t['denials']}) | "
        f"{verdict(None if t['harm'] is None else t['harm'] <= TARGETS['harm'])} |",
    ]
    for source in SOURCES:
        a = figures[rule]["held-out"][source]
        allowed = max(1, int(0.01 * a["denials"]))
        lines.append(f"| {source}: denied calls that then succeeded <= max(1, 1% of its {a['denials']} denials) = "
                     f"{allowed} | {a['succeeded']} | {verdict(a['succeeded'] <= allowed)} |")
    lines.append(
        f"| loop repeats stopped >= {TARGETS['recall']:.0%} | {_pct(t['recall'])} "
        f"({t['loop_repeats_stopped']}/{t['loop_repeats']}) | "
        f"{verdict(None if t['recall'] is None else t['recall'] >= TARGETS['recall'])} |")
    return lines


def figures_table(rules: list[str], figures: dict[str, Any]) -> list[str]:
    lines = [
        "| rule | part | source | trajectories | steps | denials | identical error | failed differently | "
        "succeeded (harm) | precision | harm | steps saved | loop repeats stopped | warnings | "
        "other injections | largest injected text |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: "
        "| ---: |",
    ]
    for rule in rules:
        for split in ("held-out", "tune", "all"):
            for source in (*SOURCES, "all"):
                t = figures[rule][split][source]
                lines.append(
                    f"| {rule} | {split} | {source} | {t['trajectories']} | {t['steps']} | {t['denials']} | "
                    f"{t['identical']} | {t['different']} | {t['succeeded']} | {_pct(t['precision'])} | "
                    f"{_pct(t['harm'])} | {t['steps_saved']} ({_pct(t['saved_of_steps'])} of steps, "
                    f"{_pct(t['saved_of_failed'])} of failed calls) | "
                    f"{t['loop_repeats_stopped']}/{t['loop_repeats']}"
                    f" | {t['warnings']} | {t['post_injections'] + t['session_injections']} | "
                    f"{t['largest_injected']} chars |"
                )
    return lines


def wrong_denials(results: list[Result]) -> list[str]:
    wrong = [(r, d) for r in results for d in r.denials if d.verdict != "identical"]
    lines = [] if wrong else ["None."]
    for r, d in wrong:
        first = d.command.strip().splitlines()[0][:100] if d.command.strip() else ""
        lines.append(f"- {r.rule}, {r.split}: {r.source}/{r.name} step {d.step}: `{first}` -> {d.verdict}")
    return lines


def report(runs: dict[int, tuple[list[Result], dict[str, Any]]], rules: list[str], command: str,
           rule_notes: dict[str, str]) -> str:
    """runs: loop threshold -> (results, figures); the first is the main run, any other a stress run."""
    (threshold, (results, figures)), *stress = runs.items()
    product = "shipped" if "shipped" in rules else rules[-1]
    literal = "any looped call" if "any looped call" in rules else rules[0]
    lines = [
        "# The guard on real agent runs",
        "",
        f"`{command}`: every trajectory of `../shared/data/trajectories-dev` replayed as one fresh Claude "
        "Code session through `vlk_memact.hosts.claude_code.adapter.handle` (the function behind "
        "`vlk-memact hook claude-code`): a PreToolUse for a Bash call with the step's action as `command` "
        "(SWE-agent's own viewer and search commands as the Read, Grep or Glob call they stand for, and its "
        "multi-line `edit` as the heredoc its shell runs: bench/swe_agent.py) before each step, then the real outcome (PostToolUseFailure with `Exit code N` + the output, or "
        "PostToolUse with the output as `stdout`), fed even when the guard denied the call. Default "
        f"settings (loop threshold {threshold}, `VLK_HOOK_GUARD=deny`).",
        "",
        "Rules, side by side in the same run: " + "; ".join(f"**{r}**: {rule_notes[r]}" for r in rules) + ".",
        "",
        "Rule choices were made on the **tune** half and are reported on the **held-out** half (per source, "
        "the ceil(n/2) trajectories with the smallest sha256 of their instance id are the tune half).",
        "",
        *(
            [f"Targets, rule **{literal}**:", "", *target_lines(figures, literal), ""]
            if literal != product
            else []
        ),
        f"Targets, rule **{product}** (the product):",
        "",
        *target_lines(figures, product),
        "",
        *figures_table(rules, figures),
        "",
        "Every denial that was not an identical repeat:",
        "",
        *wrong_denials(results),
        "",
        f"With the **{product}** rule the model read {figures[product]['all']['all']['deny_reason_chars']} "
        f"characters of deny reasons instead of {figures[product]['all']['all']['output_chars_not_shown']} "
        "characters of repeated error output (all trajectories).",
        "",
        "Identical repeats after a loop counting those where something changed in between (an edit or a "
        "script that succeeded, which no guard can know to be useless): "
        f"{figures[product]['all']['all']['loop_repeats_any_change']}, of which the **{product}** rule "
        f"stopped {figures[product]['all']['all']['loop_repeats_any_change_stopped']} (all trajectories).",
    ]
    for stress_threshold, (stress_results, stress_figures) in stress:
        lines += [
            "",
            f"## Stress: loop threshold {stress_threshold}",
            "",
            f"The same replay with `VLK_LOOP_THRESHOLD={stress_threshold}` (loops form sooner, so the guard "
            "speaks sooner and more often; the recall denominator uses the same threshold).",
            "",
            *figures_table(rules, stress_figures),
            "",
            "Every denial that was not an identical repeat:",
            "",
            *wrong_denials(stress_results),
        ]
    lines += [
        "",
        "## Definitions",
        "",
        "- **Steps**: every action/observation pair of the trajectory; a step whose message held several "
        "actions (a format error) is sent as a failed Bash call of its first action with the harness's "
        "message as the error; a step with no action sends no tool event.",
        '- **Denial**: PreToolUse answered with `permissionDecision: "deny"`. It is judged by the real '
        "step: **identical error** (correct), **failed differently**, or **succeeded** (harm). "
        "Precision = identical / denials; harm = succeeded / denials; steps saved = identical.",
        "- **Identical error**: the observation equals that of the most recent earlier failure of the same "
        "call (as the product keys it, indentation kept; else whitespace runs collapsed) after unifying line endings, dropping trailing whitespace and "
        "masking memory addresses, durations, clock times, ISO dates and random temporary names "
        "and the line number bash gives an error of the harness's session script "
        "and the line number bash gives an error of the harness's session script (`bench/guard_truth.py`, `error_key`). Nothing else is masked.",
        "- **Loop repeats** (the recall denominator, from the trajectories alone, not from the guard): a "
        "step that runs the same command (trailing whitespace aside) as the latest earlier step with that "
        "command, which failed; fails with the identical error; after that command had itself already failed "
        "with that error at least as often as the loop threshold since it last worked (issue 20); and every "
        "step in between failed, ran "
        "nothing, or is read-only by the benchmark's own plain-text test (`changes_nothing`). "
        "Recall = those denied / all.",
        "- **Steps saved**: denied steps that really failed again identically, also as a share of all steps "
        "and of all failed tool calls.",
        "- **Warnings**: PreToolUse allowed with `additionalContext`. **Other injections**: "
        "additionalContext of PostToolUse, PostToolUseFailure, SessionStart and UserPromptSubmit. "
        "**Largest injected text**: the longest additionalContext or deny reason, in characters.",
        "- SWE-agent observations have no exit code: a failure (recognised from the text, "
        "bench/trajectories.py) is sent as `Exit code 1`; a mini-swe-agent timeout as `Exit code 124`.",
        "",
        "Benchmark machine: 2 cores shared with other jobs; timings are in-process and only informative: "
        + "; ".join(
            f"{rule}: handle() median {figures[rule]['all']['all']['handle_ms_median']} ms, "
            f"p95 {figures[rule]['all']['all']['handle_ms_p95']} ms"
            for rule in rules
        )
        + ".",
    ]
    return "\n".join(lines) + "\n"
