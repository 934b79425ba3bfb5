"""What the Claude Code hooks cost: a process per event, side by side with its floors, and what they inject.

    .venv/bin/python bench/hooks.py            # 10^3 and 10^5 stored slots, then scenario (a) in the real CLI
    .venv/bin/python bench/hooks.py --quick    # 10^3 and 10^4, few runs, no CLI: a smoke run

1. Latency of `vlk-memact hook claude-code` per event, as the host runs it (a fresh process reading one
   event on stdin), on SQLite files of 10^3 and 10^5 slots (bench/perf.py's builder: real agent output,
   many sessions and projects, mostly archived, plus one host call per recorded slot). In the same run,
   interleaved run by run so that machine load hits every column alike: the floor `python -c pass`
   (the same interpreter) and a no-op hook (`python -c` that parses the event and prints nothing).
   Bytecode is compiled first and PYTHONDONTWRITEBYTECODE removed: an installed package has its .pyc.
2. Scenario (a) of the end-to-end tests in the real Claude Code CLI (tests/claude_code_harness.py):
   three identical failing commands then a fourth; the characters vlk-memact injected, and the
   estimated tokens of every request the model received, with the hooks installed and without.

Figures go to bench/results/hooks.json and hooks.md (hooks-quick.* for --quick).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from harness.database import ACTIVE_PROJECT, ACTIVE_SESSION, Databases  # noqa: E402
from harness.log import speaker  # noqa: E402
from harness.stats import median_p95  # noqa: E402
from harness.texts import load_observations, make_pool  # noqa: E402

RESULTS = ROOT / "bench" / "results"
VLK = Path(sys.executable).with_name("vlk-memact")
PROJECT = ACTIVE_PROJECT
SESSION = ACTIVE_SESSION
TARGETS = {  # event -> (median ms, p95 ms) at 10^5 slots (issue #9)
    "PostToolUseFailure": (60.0, 150.0),
    "PreToolUse": (60.0, 150.0),
    "SessionStart": (None, 300.0),
}
NOOP_HOOK = "import json, sys; json.load(sys.stdin)"
LOOPED = "npm test -- --grep checkout"


say = speaker("hooks")


def stats(samples: list[float]) -> dict[str, float]:
    return median_p95(samples, digits=1)


def base(event: str, session: str = SESSION) -> dict[str, Any]:
    return {"session_id": session, "transcript_path": f"/tmp/{session}.jsonl", "cwd": str(ROOT),
            "permission_mode": "default", "hook_event_name": event}


def add_host_calls(path: Path) -> int:
    """One host call per recorded slot, as a file that hooks wrote all along would hold."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    conn.execute(
        "INSERT INTO host_calls (tenant, project, session_id, tool_use_id, call_key, outcome, changes_state, slot_id) "
        "SELECT tenant, project, session_id, 'toolu_bulk_' || id, substr(fingerprint_keys, 1, 32), 'failure', 0, id "
        "FROM agent_timeline WHERE origin = 'record'"
    )
    conn.execute("COMMIT")
    count = conn.execute("SELECT COUNT(*) FROM host_calls").fetchone()[0]
    conn.close()
    return int(count)


class Events:
    """A fresh event of each kind for every run (new tool_use_ids, new error texts)."""

    def __init__(self, pool: list[Any], seed: int) -> None:
        self.pool = pool
        self.rng = random.Random(seed)
        self.n = 0

    def next(self, kind: str) -> dict[str, Any]:
        self.n += 1
        tid = f"toolu_bench_{self.n:08d}"
        if kind == "SessionStart (new session)":
            return {**base("SessionStart", f"fresh-{self.n}"), "source": "startup"}
        if kind == "SessionStart (compact)":
            return {**base("SessionStart"), "source": "compact"}
        if kind == "UserPromptSubmit":
            return {**base("UserPromptSubmit"), "prompt": "go on"}
        if kind == "PreToolUse (no history)":
            return {**base("PreToolUse"), "tool_name": "Bash", "tool_use_id": tid,
                    "tool_input": {"command": f"pytest tests/test_{self.n}.py -x", "description": "Run tests"}}
        if kind == "PreToolUse (denied)":
            return {**base("PreToolUse", "looping"), "tool_name": "Bash", "tool_use_id": tid,
                    "tool_input": {"command": LOOPED}}
        if kind == "PostToolUse (Read)":
            return {**base("PostToolUse"), "tool_name": "Read", "tool_use_id": tid,
                    "tool_input": {"file_path": f"/repo/src/m{self.n}.py"}, "tool_response": {"type": "text"}}
        if kind == "PostToolUse (Bash)":
            return {**base("PostToolUse"), "tool_name": "Bash", "tool_use_id": tid,
                    "tool_input": {"command": f"ls src/{self.n}"},
                    "tool_response": {"stdout": "a.py", "stderr": "", "interrupted": False, "isImage": False}}
        if kind == "PostToolUseFailure":
            item = self.pool[self.rng.randrange(len(self.pool))]
            return {**base("PostToolUseFailure", f"failing-{self.n % 50}"), "tool_name": "Bash", "tool_use_id": tid,
                    "tool_input": {"command": f"python run_{self.n}.py"}, "is_interrupt": False,
                    "error": f"Exit code 1\n{item.text[-1500:]}"}
        raise ValueError(kind)


KINDS = ["SessionStart (new session)", "SessionStart (compact)", "UserPromptSubmit", "PreToolUse (no history)",
         "PreToolUse (denied)", "PostToolUse (Read)", "PostToolUse (Bash)", "PostToolUseFailure"]
COLD = " [in process]"  # VLK_HOOK_SERVER=0: every hook imports and opens everything itself
COLD_KINDS = ["SessionStart (new session)", "PreToolUse (no history)", "PostToolUseFailure"]
TARGET_OF = {"PostToolUseFailure": "PostToolUseFailure", "PreToolUse (no history)": "PreToolUse",
             "PreToolUse (denied)": "PreToolUse", "SessionStart (new session)": "SessionStart",
             "SessionStart (compact)": "SessionStart"}


def child_env(db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"DATABASE_URL": f"sqlite:///{db}", "VLK_PROJECT": PROJECT, "VLK_LOG_LEVEL": "WARNING",
                "HOME": str(db.parent / "home"), "VLK_HOOK_SERVER_IDLE_SECONDS": "30"})
    return env


def timed(args: list[str], data: bytes, env: dict[str, str]) -> tuple[float, bytes]:
    started = time.perf_counter()
    done = subprocess.run(args, input=data, env=env, capture_output=True, timeout=60)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or done.stderr:
        raise RuntimeError(f"{args} failed: {done.returncode} {done.stderr[-500:]!r}")
    return elapsed, done.stdout


def prepare_loop(db: Path, env: dict[str, str]) -> None:
    """A session where LOOPED failed three times: every 'denied' PreToolUse below is a real denial."""
    for n in range(3):
        event = {**base("PostToolUseFailure", "looping"), "tool_name": "Bash", "tool_use_id": f"toolu_loop_{n}",
                 "tool_input": {"command": LOOPED}, "is_interrupt": False,
                 "error": "Exit code 1\nError: Cannot find module 'express'\nRequire stack:\n- /repo/test/checkout.js"}
        timed([str(VLK), "hook", "claude-code"], json.dumps(event).encode(), env)
    probe = {**base("PreToolUse", "looping"), "tool_name": "Bash", "tool_use_id": "toolu_probe",
             "tool_input": {"command": LOOPED}}
    _, out = timed([str(VLK), "hook", "claude-code"], json.dumps(probe).encode(), env)
    if b'"deny"' not in out:
        raise RuntimeError(f"the looping call is not denied: {out!r}")


def bench_latency(size: int, dbs: Databases, runs: int, work: Path, seed: int) -> dict[str, Any]:
    db = dbs.copy(size, "hooks")
    host_calls = add_host_calls(db)
    env = child_env(db)
    cold_env = {**env, "VLK_HOOK_SERVER": "0"}
    (db.parent / "home").mkdir(exist_ok=True)
    prepare_loop(db, env)
    events = Events(dbs.pool, seed)
    all_kinds = [*KINDS, *(k + COLD for k in COLD_KINDS)]
    samples: dict[str, list[float]] = {k: [] for k in ["floor: python -c pass", "no-op hook", *all_kinds]}
    answered: dict[str, int] = {k: 0 for k in all_kinds}
    floor = [sys.executable, "-c", "pass"]
    noop = [sys.executable, "-c", NOOP_HOOK]
    hook = [str(VLK), "hook", "claude-code"]
    for _ in range(2):  # warm the file cache and the interpreter's pages
        timed(floor, b"", env)
        timed(hook, json.dumps(events.next("PreToolUse (no history)")).encode(), env)
    for run in range(runs):
        order = ["floor: python -c pass", "no-op hook", *all_kinds]
        random.Random(seed + run).shuffle(order)
        for kind in order:
            if kind.startswith("floor"):
                elapsed, _ = timed(floor, b"", env)
            elif kind == "no-op hook":
                elapsed, _ = timed(noop, json.dumps(events.next("PreToolUse (no history)")).encode(), env)
            elif kind.endswith(COLD):
                elapsed, out = timed(hook, json.dumps(events.next(kind.removesuffix(COLD))).encode(), cold_env)
                answered[kind] += bool(out)
            else:
                elapsed, out = timed(hook, json.dumps(events.next(kind)).encode(), env)
                answered[kind] += bool(out)
            samples[kind].append(elapsed)
    slots = sqlite3.connect(db).execute("SELECT COUNT(*) FROM agent_timeline").fetchone()[0]
    result = {"slots": slots, "host_calls": host_calls, "runs": runs,
              "events": {k: {**stats(v), **({"answered": answered[k]} if k in answered else {})}
                         for k, v in samples.items()}}
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    return result


def strings(value: Any) -> list[str]:
    """Every string inside a JSON value (message contents, tool results, system messages)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def scenario_a(work: Path) -> dict[str, Any]:
    """Scenario (a) in the real CLI, with the hooks installed and without; what the model received."""
    from claude_code_harness import claude_code_problem, run_claude
    from scripted_anthropic import ScriptedModel, ToolUse, estimate_tokens

    from vlk_memact.hosts.claude_code import install

    problem = claude_code_problem()
    if problem:
        return {"skipped": problem}
    failing = "echo run >> runs.log; echo \"Error: Cannot find module 'express'\" >&2; exit 1"
    out: dict[str, Any] = {}
    for label in ("without hooks", "with hooks"):
        project, home = work / f"scenario-{label.replace(' ', '-')}", work / f"home-{label.replace(' ', '-')}"
        (project / ".git").mkdir(parents=True)
        home.mkdir()
        if label == "with hooks":
            install.apply(install.plan_install("local", project, home, with_server=False))
        calls = [ToolUse("Bash", {"command": failing, "description": "Run the tests"}) for _ in range(4)]
        with ScriptedModel([*calls, "Stopped."]) as model:
            run = run_claude("Run the tests.", cwd=project, model=model, home=home,
                             env={"DATABASE_URL": f"sqlite:///{work / 'scenario.db'}"})
        if run.returncode != 0:
            raise RuntimeError(run.describe())
        main = model.main_requests
        injected = [text[text.index("vlk-memact:"):] for text in strings(main[-1].messages) if "vlk-memact:" in text]
        runs_log = project / "runs.log"
        out[label] = {
            "requests": len(main),
            "request_tokens": [estimate_tokens(r.body) for r in main],
            "total_request_tokens": sum(estimate_tokens(r.body) for r in main),
            "last_request_tokens": estimate_tokens(main[-1].body),
            "commands_run": len(runs_log.read_text().splitlines()) if runs_log.exists() else 0,
            "injected_texts": len(injected),
            "injected_chars": sum(len(t) for t in injected),
            "injected": injected,
        }
    out["token_estimate"] = "ceil(characters of the JSON request body / 4), the harness's estimate"
    return out


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# Hook latency and injection (`bench/hooks.py`{' --quick' if report['quick'] else ''})", "",
             f"Machine: {report['machine']}. Load while measuring: {report['load']} (2 cores shared with other "
             "test runs: figures are noisy; the floor and the no-op hook ran interleaved with every event, "
             "run by run).",
             "", "Each figure is a fresh process reading one event on stdin, as Claude Code runs a hook; the hook "
             "answers through the warm hook server (hosts/shared/warm.py) unless marked [in process] (VLK_HOOK_SERVER=0). "
             "Wall time includes the server's work.", ""]
    sizes = list(report["latency"])
    header = ("| event | " + " | ".join(f"{s} slots median / p95 ms" for s in sizes)
              + " | minus floor (largest, median) |")
    lines += [header, "|" + " --- |" * (len(sizes) + 2)]
    largest = report["latency"][sizes[-1]]["events"]
    floor = largest["floor: python -c pass"]["median_ms"]
    for kind in ["floor: python -c pass", "no-op hook", *KINDS, *(k + COLD for k in COLD_KINDS)]:
        found = [report["latency"][s]["events"][kind] for s in sizes]
        cells = [f"{f['median_ms']} / {f['p95_ms']}" for f in found]
        lines.append(f"| {kind} | " + " | ".join(cells) + f" | {largest[kind]['median_ms'] - floor:+.1f} |")
    lines += ["", "| target (at the largest size) | measured | result |", "| --- | --- | --- |"]
    for row in report["targets"]:
        lines.append(f"| {row['target']} | {row['measured']} | {row['result']} |")
    scenario = report.get("scenario_a")
    if scenario and "skipped" not in scenario:
        w, wo = scenario["with hooks"], scenario["without hooks"]
        lines += ["", "## Scenario (a) in the real Claude Code CLI", "",
                  "| | requests | commands run | tokens of all requests | tokens of the last request "
                  "| injected texts | injected characters |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
                  f"| without hooks | {wo['requests']} | {wo['commands_run']} | {wo['total_request_tokens']} | "
                  f"{wo['last_request_tokens']} | 0 | 0 |",
                  f"| with hooks | {w['requests']} | {w['commands_run']} | {w['total_request_tokens']} | "
                  f"{w['last_request_tokens']} | {w['injected_texts']} | {w['injected_chars']} |", "",
                  f"Tokens: {scenario['token_estimate']}. What was injected, in order:", "", "```"]
        lines += [*w["injected"], "```"]
    elif scenario:
        lines += ["", f"Scenario (a): skipped ({scenario['skipped']})"]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10^3 and 10^4, few runs, no CLI scenario")
    parser.add_argument("--runs", type=int, help="runs per event and size (default 40, quick 8)")
    parser.add_argument("--cache", type=Path, help="keep built databases here between runs")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    sizes = (10**3, 10**4) if args.quick else (10**3, 10**5)
    runs = args.runs or (8 if args.quick else 40)
    compileall.compile_dir(str(ROOT / "src" / "vlk_memact"), quiet=1)
    observations, source = load_observations()
    pool = make_pool(observations, 600 if args.quick else 2000, random.Random(args.seed))
    work = Path(tempfile.mkdtemp(prefix="vlk-bench-hooks-"))
    try:
        dbs = Databases(work, args.cache, pool, args.seed, f"{source}:{len(pool)}")
        latency = {}
        for size in sizes:
            say(f"latency at {size:,} slots, {runs} runs of each event ...")
            latency[str(size)] = bench_latency(size, dbs, runs, work, args.seed)
        scenario = None if args.quick else scenario_a(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    largest = latency[str(sizes[-1])]["events"]
    targets = []
    for kind, target in TARGET_OF.items():
        median_target, p95_target = TARGETS[target]
        got = largest[kind]
        ok = (median_target is None or got["median_ms"] <= median_target) and got["p95_ms"] <= p95_target
        wanted = (f"median <= {median_target:.0f} ms, " if median_target else "") + f"p95 <= {p95_target:.0f} ms"
        targets.append({"target": f"{kind}: {wanted}", "measured": f"{got['median_ms']} / {got['p95_ms']} ms",
                        "result": "pass" if ok else "FAIL"})
    report = {
        "quick": args.quick,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
                   f"SQLite {sqlite3.sqlite_version}",
        "load": "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg()),
        "text_source": source,
        "latency": latency,
        "targets": targets,
        "scenario_a": scenario,
        "databases": {str(k): v for k, v in dbs.meta.items()},
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = "hooks-quick" if args.quick else "hooks"
    (RESULTS / f"{name}.json").write_text(json.dumps(report, indent=2) + "\n")
    (RESULTS / f"{name}.md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
