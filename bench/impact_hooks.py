"""What recording interventions (issue 33) costs a hook: the same events with VLK_IMPACT=1 and VLK_IMPACT=0.

    .venv/bin/python bench/impact_hooks.py            # 60 runs per case and mode
    .venv/bin/python bench/impact_hooks.py --quick    # 8 runs: a smoke run

The events that record something (a session start carrying a fact, a denied call, a failure told its fix),
and one that records nothing in either mode (a call with no history), on a database where tests/impact_scenario's
session A left a loop and three fixes. Two measures, each interleaved run by run (recording on, recording off,
the floor) so that machine load hits every column alike:

1. a hook process per event, spawn to exit, as the host runs it: through the warm hook server (the default; it
   answers first and writes the interventions after) and with VLK_HOOK_SERVER=0 (everything in the process),
   beside the floor `python -c pass`;
2. the handler alone in this process (hosts.claude_code.handle on an open Memory): the added milliseconds of the
   write itself.

Figures go to bench/results/impact-hooks.json and .md, with the load (`uptime`) before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from harness.hook_latency import write_report  # noqa: E402
from harness.machine import machine  # noqa: E402
from hook_events import bash, failure, pre, session_start  # noqa: E402
from impact_scenario import DEPLOY_ERROR, ENV_ERROR, run_session_a  # noqa: E402

from vlk_memact import Memory  # noqa: E402
from vlk_memact.config import Settings  # noqa: E402
from vlk_memact.hosts.claude_code import adapter as claude_code  # noqa: E402

VLK = str(Path(sys.executable).with_name("vlk-memact"))
PROJECT = "/work/project"
CASES = ["SessionStart (a fact carried)", "PreToolUse (denied)", "PostToolUseFailure (fix told)",
         "PreToolUse (no history: records nothing)"]


class Events:
    """A fresh event per run: new sessions for a start and a told fix, the looping session for a denial."""

    def __init__(self) -> None:
        self.n = 0

    def next(self, case: str) -> dict[str, Any]:
        self.n += 1
        if case.startswith("SessionStart"):
            return session_start(session=f"start-{self.n}")
        if case == "PreToolUse (denied)":
            return pre("Bash", bash("sh deploy.sh"), "looping", f"toolu_deny_{self.n}")
        if case.startswith("PostToolUseFailure"):
            return failure("Bash", bash("sh check_env.sh"), ENV_ERROR, f"told-{self.n}", f"toolu_told_{self.n}")
        return pre("Bash", bash(f"pytest tests/test_{self.n}.py"), "quiet", f"toolu_quiet_{self.n}")


def prepare(db: Path) -> None:
    with Memory(f"sqlite:///{db}", project=PROJECT) as memory:
        run_session_a(memory)
        for n in range(3):
            claude_code.handle(failure("Bash", bash("sh deploy.sh"), DEPLOY_ERROR, "looping", f"toolu_loop_{n}"), memory)
        probe = claude_code.handle(pre("Bash", bash("sh deploy.sh"), "looping", "toolu_probe"), memory)
        assert probe and probe["hookSpecificOutput"]["permissionDecision"] == "deny", probe


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    return {"n": len(ordered), "median_ms": round(statistics.median(ordered) * 1e3, 2),
            "p95_ms": round(p95 * 1e3, 2)}


def processes(db: Path, runs: int, seed: int, warm: bool) -> dict[str, Any]:
    base = {"PATH": os.environ.get("PATH", ""), "HOME": str(db.parent), "DATABASE_URL": f"sqlite:///{db}",
            "VLK_PROJECT": PROJECT, "VLK_HOOK_SERVER": "1" if warm else "0", "VLK_LOG_LEVEL": "WARNING",
            "VLK_HOOK_SERVER_IDLE_SECONDS": "20"}
    envs = {"on": {**base, "VLK_IMPACT": "1"}, "off": {**base, "VLK_IMPACT": "0"}}
    events = Events()
    samples: dict[str, list[float]] = {"floor: python -c pass": []}
    answered: dict[str, int] = {}
    for case in CASES:
        for mode in envs:
            samples[f"{case} [{mode}]"] = []
    order = list(samples)
    rng = random.Random(seed)
    for run in range(runs + 2):
        rng.shuffle(order)
        for name in order:
            if name.startswith("floor"):
                command, data, env = [sys.executable, "-c", "pass"], b"", base
            else:
                case, mode = name[:-1].rsplit(" [", 1)
                command, env = [VLK, "hook", "claude-code"], envs[mode]
                data = json.dumps(events.next(case)).encode()
            started = time.perf_counter()
            done = subprocess.run(command, input=data, env=env, capture_output=True, timeout=60)
            elapsed = time.perf_counter() - started
            if done.returncode != 0 or done.stderr:
                raise RuntimeError(f"{name}: {done.returncode} {done.stderr[-400:]!r}")
            if run >= 2:  # the first two rounds warm the page cache
                samples[name].append(elapsed)
                answered[name] = answered.get(name, 0) + bool(done.stdout)
    return {"events": {k: {**stats(v), "answered": answered.get(k)} for k, v in samples.items()}}


def handlers(db: Path, runs: int, seed: int) -> dict[str, Any]:
    samples: dict[str, list[float]] = {f"{c} [{m}]": [] for c in CASES for m in ("on", "off")}
    memories = {m: Memory(f"sqlite:///{db}", project=PROJECT, settings=replace(Settings(), impact=m == "on"))
                for m in ("on", "off")}
    events = Events()
    order = list(samples)
    rng = random.Random(seed)
    try:
        for run in range(runs + 5):
            rng.shuffle(order)
            for name in order:
                case, mode = name[:-1].rsplit(" [", 1)
                event = events.next(case)
                started = time.perf_counter()
                claude_code.handle(event, memories[mode])
                if run >= 5:
                    samples[name].append(time.perf_counter() - started)
    finally:
        for memory in memories.values():
            memory.close()
    return {"events": {k: stats(v) for k, v in samples.items()}}


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def markdown(report: dict[str, Any]) -> str:
    lines = ["# What recording interventions costs a hook (`bench/impact_hooks.py`"
             f"{' --quick' if report['quick'] else ''})", "",
             f"Machine: {report['machine']['cpu']}, {report['machine']['cores']} cores. Load before: "
             f"`{report['load_before']}`; after: `{report['load_after']}` (2 cores shared with other engineers' test "
             "runs: figures are noisy; every column ran interleaved with the others, run by run; "
             f"{report['runs']} runs per column)."]
    floors = []
    for key, title in (("warm", "through the warm hook server (the default)"),
                       ("processes", "in its own process (VLK_HOOK_SERVER=0)")):
        lines += ["", f"## A hook process per event, spawn to exit, {title}", "",
                  "| event | recording on: median / p95 ms | off: median / p95 ms | on / off (median) | "
                  "on / floor (median) |", "|---|---|---|---|---|"]
        events = report[key]["events"]
        floor = events["floor: python -c pass"]["median_ms"]
        floors.append(floor)
        for case in CASES:
            on, off = events[f"{case} [on]"], events[f"{case} [off]"]
            lines.append(f"| {case} | {on['median_ms']} / {on['p95_ms']} | {off['median_ms']} / {off['p95_ms']} | "
                         f"{on['median_ms'] / off['median_ms']:.3f} | {on['median_ms'] / floor:.2f} |")
        lines += ["", f"Floor `python -c pass` in the same run: median {floor} ms."]
    lines += ["", "## The handler alone, in process (an open Memory): the write itself, which a hook in its own "
              "process pays and the warm server pays after it has answered", "",
              "| event | on: median / p95 ms | off: median / p95 ms | added (median, ms) | on / off |",
              "|---|---|---|---|---|"]
    events = report["handlers"]["events"]
    for case in CASES:
        on, off = events[f"{case} [on]"], events[f"{case} [off]"]
        lines.append(f"| {case} | {on['median_ms']} / {on['p95_ms']} | {off['median_ms']} / {off['p95_ms']} | "
                     f"{on['median_ms'] - off['median_ms']:+.2f} | {on['median_ms'] / off['median_ms']:.3f} |")
    lines += ["", "Recording is one small write transaction (SQLite: synchronous=FULL, a sync per commit), only "
              "when a text is emitted; an event that says "
              "nothing records nothing (last row)."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--runs", type=int)
    parser.add_argument("--seed", type=int, default=33)
    args = parser.parse_args()
    runs = args.runs or (8 if args.quick else 60)
    report: dict[str, Any] = {"quick": args.quick, "runs": runs, "machine": machine(), "load_before": uptime()}
    with tempfile.TemporaryDirectory(prefix="vlk-impact-bench-") as work:
        db = Path(work) / "bench.db"
        prepare(db)
        report["processes"] = processes(db, runs, args.seed, warm=False)
        report["warm"] = processes(db, runs, args.seed + 1, warm=True)
        report["handlers"] = handlers(db, runs * 5, args.seed)
    report["load_after"] = uptime()
    write_report("impact-hooks-quick" if args.quick else "impact-hooks", report, markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
