"""Hook latency as a host sees it: one process per event, spawn to exit, beside `python3 -c pass` and a no-op hook.

What bench/hooks_gemini.py and bench/hooks_hosts.py share: their options, the interleaved sampling, the
targets of issue 11 and the report's latency table. Each of them brings its events and its CLI scenario.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.database import ACTIVE_PROJECT, Databases, sqlite_url
from harness.paths import RESULTS
from harness.stats import median_p95
from harness.texts import PoolText, load_observations, make_pool

VLK = str(Path(sys.executable).with_name("vlk-memact"))
FLOOR = [sys.executable, "-c", "pass"]
NOOP = [sys.executable, "-c", "import json, sys; json.load(sys.stdin)"]
NOOP_CASE = "no-op hook (reads the event)"
TARGETS = {"tool_median_ms": 60.0, "tool_p95_ms": 150.0, "session_start_p95_ms": 300.0}
LOOP_TEXT = "Error: Cannot find module 'express'\nRequire stack:\n- /srv/app/server.js"
TOOL_CASES = ("(never failed)", "(looping", "(new failure)", "(success)")

Case = Callable[[], tuple[list[str], str]]  # -> (command, the event on stdin)


def timed(command: list[str], stdin: str, env: dict[str, str]) -> tuple[float, str]:
    """Seconds from spawn to exit of one process, and what it printed; a failing process is an error."""
    start = time.perf_counter()
    done = subprocess.run(command, input=stdin, env=env, capture_output=True, text=True, timeout=60)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{command} exited {done.returncode}: {done.stderr[-500:]}")
    return elapsed, done.stdout


def hook_env(db: Path) -> dict[str, str]:
    """The environment a host gives its hook: PATH, a HOME beside the database, the database and project."""
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(db.parent), "DATABASE_URL": sqlite_url(db),
            "VLK_PROJECT": ACTIVE_PROJECT}


def sample(cases: dict[str, Case], iterations: int, env: dict[str, str]) -> dict[str, dict[str, float]]:
    """Each case `iterations` times, interleaved (load changes hit every case alike), as ratios to the no-op."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(2):  # warm the page cache, the interpreter's files and the warm hook server
        for make in cases.values():
            timed(*make(), env)
    for _ in range(iterations):
        for name, make in cases.items():
            samples[name].append(timed(*make(), env)[0])
    result = {name: median_p95(values) for name, values in samples.items()}
    floor = result[NOOP_CASE]["median_ms"]
    for row in result.values():
        row["x_noop_median"] = round(row["median_ms"] / floor, 2) if floor else math.nan
    return result


def parser(description: str) -> argparse.ArgumentParser:
    """The options both hook benchmarks take (a benchmark adds its own)."""
    found = argparse.ArgumentParser(description=description)
    found.add_argument("--quick", action="store_true", help="10^3 only, few iterations, no CLI runs")
    found.add_argument("--sizes", help="comma-separated database sizes (default 1000,100000)")
    found.add_argument("--iterations", type=int, help="samples per event and size (default 40; quick 8)")
    found.add_argument("--cache", type=Path, default=RESULTS / "tmp", help="where built databases are kept")
    found.add_argument("--seed", type=int, default=20261201)
    return found


def measure(args: argparse.Namespace, command: str, label: str, measure_one: Callable[..., dict[str, Any]],
            say: Callable[..., None], measured: bool = True) -> dict[str, Any]:
    """The report: the machine, then `measure_one(db, iterations, pool, rng)` on a copy of each size's file."""
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else ([1000] if args.quick else [1000, 100_000])
    iterations = args.iterations or (8 if args.quick else 40)
    rng = random.Random(args.seed)
    observations, source = load_observations()
    pool: list[PoolText] = make_pool(observations, 600 if args.quick else 4000, rng)
    report: dict[str, Any] = {
        "command": command,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_avg_at_start": os.getloadavg()},
        "data": source, "iterations": iterations, "sizes": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        dbs = Databases(Path(tmp), args.cache, pool, args.seed, source)
        for n in sizes if measured else []:
            db = dbs.copy(n, f"hooks-{label}")
            say(f"{label}, {n:,} slots: {iterations} samples per event ...")
            report["sizes"][str(n)] = measure_one(db, iterations, pool, rng)
    if report["sizes"]:
        report["targets"] = targets(report["sizes"])
    return report


def targets(sizes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Issue 11's targets at the largest size: tool events median <= 60 ms, p95 <= 150 ms; session start p95."""
    at = max(sizes, key=int)
    biggest = sizes[at]
    tool_events = [e for e in biggest if not e.startswith("peer") and any(c in e for c in TOOL_CASES)]
    start = next(e for e in biggest if e.endswith("(new session)"))
    return {
        "at_slots": int(at),
        "tool_median_ms": all(biggest[e]["median_ms"] <= TARGETS["tool_median_ms"] for e in tool_events),
        "tool_p95_ms": all(biggest[e]["p95_ms"] <= TARGETS["tool_p95_ms"] for e in tool_events),
        "session_start_p95_ms": biggest[start]["p95_ms"] <= TARGETS["session_start_p95_ms"],
    }


def latency_lines(report: dict[str, Any], title: str, start_name: str) -> list[str]:
    """The report's head, one row per event (median / p95 and the ratio to the no-op, per size), the targets."""
    lines = [f"# `{title}` ({report['command']})", "",
             f"{report['machine']['cpus']} CPUs, Python {report['machine']['python']}; load average "
             f"{report['machine']['load_avg_at_start'][0]:.1f} at start, {report['load_avg_at_end'][0]:.1f} at end "
             "(a shared machine: figures are noisy). Each sample is one hook process, spawn to exit; "
             f"{report['iterations']} samples per event and size, interleaved. Data: {report['data']}.", ""]
    sizes = list(report["sizes"])
    if not sizes:
        return lines
    lines.append("| event | " + " | ".join(f"{int(n):,} slots: median / p95 ms (x no-op)" for n in sizes) + " |")
    lines.append("| --- |" + " --- |" * len(sizes))
    for event in report["sizes"][sizes[0]]:
        cells = [f"{report['sizes'][n][event]['median_ms']:.1f} / {report['sizes'][n][event]['p95_ms']:.1f} "
                 f"({report['sizes'][n][event]['x_noop_median']:.2f})" for n in sizes]
        lines.append(f"| {event} | " + " | ".join(cells) + " |")
    t = report["targets"]
    lines += ["", f"Targets at {t['at_slots']:,} slots: tool events median <= 60 ms: "
              f"{'pass' if t['tool_median_ms'] else 'FAIL'}; p95 <= 150 ms: {'pass' if t['tool_p95_ms'] else 'FAIL'}; "
              f"{start_name} p95 <= 300 ms: {'pass' if t['session_start_p95_ms'] else 'FAIL'}."]
    return lines


def write_report(name: str, report: dict[str, Any], markdown: Callable[[dict[str, Any]], str]) -> None:
    """bench/results/NAME.json and .md, and the Markdown on stdout."""
    report["load_avg_at_end"] = os.getloadavg()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    text = markdown(report)
    (RESULTS / f"{name}.md").write_text(text, encoding="utf-8")
    print(text)
