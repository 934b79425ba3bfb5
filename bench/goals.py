"""The performance goals of issue 25, one command per figure, each side by side with its floor or peer.

    .venv/bin/python bench/goals.py hooks      # hook process vs `python -c pass` (PreToolUse, PostToolUseFailure)
    .venv/bin/python bench/goals.py mcp        # vlk_record_state, vlk_fetch_context vs the SDK's no-op tool
    .venv/bin/python bench/goals.py official   # writes vs @modelcontextprotocol/server-memory
    .venv/bin/python bench/goals.py engine     # Memory.record_state vs raw sqlite3, same durability
    .venv/bin/python bench/goals.py all        # the four, one after the other

Every figure is a ratio of two sides measured interleaved in the same run (the machine is shared: absolute
times drift, ratios much less), on the 10^4-slot file of bench/perf.py's builder. Each command writes
bench/results/goals-NAME.json; bench/results/goals.md is rebuilt from all of them, one table.
--runs sets the samples per side (defaults below); --cache reuses built files between commands.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import json
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import hooks  # noqa: E402  (the hook events and the process runner)
import perf  # noqa: E402  (the database builder, the floors, the MCP helpers)

RESULTS = ROOT / "bench" / "results"
SLOTS = 10**4
POOL = 2000
DEFAULT_RUNS = {"hooks": 150, "mcp": 400, "official": 30, "engine": 400}

RECORD = "MCP vlk_record_state"
RECORD_SAME_TRANSPORT = "MCP vlk_record_state, no-op on the same transport"
# figure -> (goal text, test of the measured ratios; None: a figure reported for information)
GOALS: dict[str, tuple[str, Callable[[dict[str, Any]], bool] | None]] = {
    "hook PostToolUseFailure": ("median <= 1.3x the floor, p95 <= 2x the floor's p95",
                                lambda r: r["ratio_median"] <= 1.3 and r["ratio_p95"] <= 2.0),
    "hook PreToolUse": ("median <= 1.3x the floor, p95 <= 2x the floor's p95",
                        lambda r: r["ratio_median"] <= 1.3 and r["ratio_p95"] <= 2.0),
    "MCP vlk_record_state": ("median <= 1.8x the no-op tool", lambda r: r["ratio_median"] <= 1.8),
    "MCP vlk_record_state, no-op on the same transport": (
        "none: information (the record's own share, both over vlk-memact's stdio transport)", None),
    "MCP vlk_fetch_context": ("median <= 1.5x the no-op tool", lambda r: r["ratio_median"] <= 1.5),
    "MCP vlk_fetch_context after a write": ("median <= 1.5x the no-op tool",
                                            lambda r: r["ratio_median"] <= 1.5),
    "writes vs the official memory server": (">= 10x faster (median)", lambda r: r["speedup_median"] >= 10),
    "engine record vs raw sqlite3": ("median <= 2.5x the floor", lambda r: r["ratio_median"] <= 2.5),
}


def say(*parts: object) -> None:
    print("[goals]", *parts, file=sys.stderr, flush=True)


def quantiles(samples: list[float]) -> dict[str, float]:
    """Median, p95 and p99 (nearest rank), in milliseconds."""
    ordered = sorted(samples)
    n = len(ordered)

    def rank(q: float) -> float:
        return ordered[max(0, min(n - 1, -(-int(q * n * 1000) // 1000) - 1))] * 1e3

    mid = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    return {"n": n, "median_ms": round(mid * 1e3, 3), "p95_ms": round(rank(0.95), 3), "p99_ms": round(rank(0.99), 3)}


def pair(side: list[float], floor: list[float]) -> dict[str, Any]:
    s, f = quantiles(side), quantiles(floor)
    return {"side": s, "floor": f, "ratio_median": round(s["median_ms"] / f["median_ms"], 3),
            "ratio_p95": round(s["p95_ms"] / f["p95_ms"], 3)}


class Setup:
    """The text pool and the built 10^4 file, shared by the commands of one invocation."""

    def __init__(self, work: Path, cache: Path | None, seed: int) -> None:
        observations, self.source = perf.load_observations()
        self.pool = perf.make_pool(observations, POOL, random.Random(seed))
        self.dbs = perf.Databases(work, cache, self.pool, seed, f"{self.source}:{len(self.pool)}")
        self.work = work
        self.seed = seed


# ------------------------------------------------------------------------------------------ hooks

HOOK_EVENTS = {"hook PreToolUse": "PreToolUse (no history)", "hook PostToolUseFailure": "PostToolUseFailure"}


def bench_hooks(setup: Setup, runs: int) -> dict[str, Any]:
    """`vlk-memact hook claude-code` (warm server up, as after the first event of a session) and the floor
    `python -c pass` of the same interpreter, each a fresh process, interleaved in a shuffled order."""
    compileall.compile_dir(str(ROOT / "src" / "vlk_memact"), quiet=1)
    db = setup.dbs.copy(SLOTS, "goals-hooks")
    hooks.add_host_calls(db)
    env = hooks.child_env(db)
    (db.parent / "home").mkdir(exist_ok=True)
    hooks.prepare_loop(db, env)
    events = hooks.Events(setup.pool, setup.seed)
    floor = [sys.executable, "-c", "pass"]
    command = [str(hooks.VLK), "hook", "claude-code"]
    for _ in range(5):  # the file cache, the interpreter's pages, the warm server
        hooks.timed(floor, b"", env)
        hooks.timed(command, json.dumps(events.next("PreToolUse (no history)")).encode(), env)
    samples: dict[str, list[float]] = {"floor": [], **{k: [] for k in HOOK_EVENTS}}
    rng = random.Random(setup.seed)
    for _ in range(runs):
        order = list(samples)
        rng.shuffle(order)
        for kind in order:
            if kind == "floor":
                samples[kind].append(hooks.timed(floor, b"", env)[0])
            else:
                samples[kind].append(hooks.timed(command, json.dumps(events.next(HOOK_EVENTS[kind])).encode(), env)[0])
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    figures = {k: pair(samples[k], samples["floor"]) for k in HOOK_EVENTS}
    for name, f in figures.items():
        say(f"  {name:<26} {f['side']['median_ms']:7.2f} ms (p95 {f['side']['p95_ms']:7.2f})  floor "
            f"{f['floor']['median_ms']:7.2f} ms (p95 {f['floor']['p95_ms']:7.2f})  x{f['ratio_median']:.2f}")
    return {"figures": figures, "floor": "python -c pass (the venv's interpreter)", "runs": runs,
            "command": "vlk-memact hook claude-code, warm hook server up"}


# -------------------------------------------------------------------------------------------- MCP


async def _bench_mcp(setup: Setup, runs: int) -> dict[str, Any]:
    db = setup.dbs.copy(SLOTS, "goals-mcp")
    texts = perf.TextSource(setup.pool, random.Random(setup.seed + 2), "mcp")
    errlog = setup.work / "mcp-servers.log"
    tools: dict[str, Callable[[], dict[str, Any]]] = {
        "MCP vlk_record_state": lambda: {"raw_log": texts.next()[0], "session_id": "mcp-rec"},
        "MCP vlk_fetch_context": lambda: {"session_id": perf.ACTIVE_SESSION},
        # The model's usual step: a record, then a fetch. The record (untimed) commits, so the fetch cannot
        # reuse the last result (engine/context_cache.py) and runs the whole pipeline and rendering.
        "MCP vlk_fetch_context after a write": lambda: {"session_id": "mcp-fetch"},
    }
    before: dict[str, Callable[[], dict[str, Any]]] = {
        "MCP vlk_fetch_context after a write": lambda: {"raw_log": texts.next()[0], "session_id": "mcp-fetch"},
    }
    figures: dict[str, Any] = {}
    async with perf.connect(perf.vlk_params(db, "goals-vlk"), errlog) as vlk, \
            perf.connect(perf.noop_params("goals-noop"), errlog) as noop, \
            perf.connect(perf.noop_params("goals-noop-pipes", pipes=True), errlog) as noop_pipes:
        for _ in range(10):
            await perf.timed_call(noop, "noop", {})
            await perf.timed_call(noop_pipes, "noop", {})
            for name, args in tools.items():
                await perf.timed_call(vlk, _tool(name), args())
        for name, args in tools.items():
            tool = _tool(name)
            side: list[float] = []
            floor: list[float] = []
            same_transport: list[float] = []  # the record only: its floor on vlk-memact's own stdio transport
            for i in range(runs):
                arguments = args()
                if name in before:
                    await perf.timed_call(vlk, "vlk_record_state", before[name]())
                calls = [("side", vlk, tool, arguments), ("floor", noop, "noop", {})]
                if name == RECORD:
                    calls.append(("same", noop_pipes, "noop", {}))
                for kind, client, called, called_with in (calls if i % 2 else calls[::-1]):
                    elapsed = await perf.timed_call(client, called, called_with)
                    {"side": side, "floor": floor, "same": same_transport}[kind].append(elapsed)
            figures[name] = pair(side, floor)
            if same_transport:
                figures[RECORD_SAME_TRANSPORT] = pair(side, same_transport)
            for shown in (name, RECORD_SAME_TRANSPORT) if same_transport else (name,):
                f = figures[shown]
                say(f"  {shown:<26} {f['side']['median_ms']:7.3f} ms  no-op {f['floor']['median_ms']:7.3f} ms  "
                    f"x{f['ratio_median']:.2f}")
        protocol = vlk.protocol_version
    return {"figures": figures, "floor": "the SDK's no-op tool (bench/perf_noop_server.py), same client; for "
            f"'{RECORD_SAME_TRANSPORT}', the same no-op served by vlk-memact's stdio transport (--pipes)",
            "runs": runs, "protocol_version": protocol, "transport": "stdio, one mcp.Client session per server"}


def _tool(figure: str) -> str:
    """The tool a figure calls: "MCP vlk_fetch_context after a write" -> vlk_fetch_context."""
    return figure.removeprefix("MCP ").split(" ", 1)[0]


def bench_mcp(setup: Setup, runs: int) -> dict[str, Any]:
    return asyncio.run(_bench_mcp(setup, runs))


# ----------------------------------------------------------------------------------- the official server


async def _bench_official(setup: Setup, runs: int) -> dict[str, Any]:
    ok, why = perf.official_available()
    if not ok:
        raise SystemExit(f"the official server is needed: {why}")
    db = setup.dbs.copy(SLOTS, "goals-official")
    memory_file = setup.work / "memory.jsonl"
    stored = perf.write_official_file(db, memory_file)
    texts = perf.TextSource(setup.pool, random.Random(setup.seed + 3), "cmp")
    errlog = setup.work / "official-servers.log"
    side: list[float] = []
    peer: list[float] = []
    async with perf.connect(perf.vlk_params(db, "goals-cmp-vlk"), errlog) as vlk, \
            perf.connect(perf.official_params(memory_file, "goals-cmp-official"), errlog) as official:
        for i in range(2 + runs):
            vargs = {"raw_log": texts.next()[0], "session_id": "cmp-rec"}
            oargs = {"observations": [{"entityName": "cmp-rec", "contents": [texts.next()[0]]}]}
            if i % 2:
                tv = await perf.timed_call(vlk, "vlk_record_state", vargs)
                to = await perf.timed_call(official, "add_observations", oargs)
            else:
                to = await perf.timed_call(official, "add_observations", oargs)
                tv = await perf.timed_call(vlk, "vlk_record_state", vargs)
            if i >= 2:
                side.append(tv)
                peer.append(to)
    s, o = quantiles(side), quantiles(peer)
    figure = {"side": s, "peer": o, "speedup_median": round(o["median_ms"] / s["median_ms"], 2)}
    say(f"  writes: vlk_record_state {s['median_ms']:.2f} ms, add_observations {o['median_ms']:.2f} ms: "
        f"{figure['speedup_median']:.1f}x")
    return {"figures": {"writes vs the official memory server": figure}, "runs": runs, "stored": stored,
            "peer": f"{perf.OFFICIAL_PACKAGE}@{perf.official_version()} (add_observations), same client"}


def bench_official(setup: Setup, runs: int) -> dict[str, Any]:
    return asyncio.run(_bench_official(setup, runs))


# ------------------------------------------------------------------------------------------ engine


def bench_engine(setup: Setup, runs: int) -> dict[str, Any]:
    """Memory.record_state against perf.Floor.record (BEGIN IMMEDIATE, two INSERTs, COMMIT), in process, both
    with WAL and synchronous=FULL (the engine's only durability mode: every record is on disk when it returns)."""
    db = setup.dbs.copy(SLOTS, "goals-engine")
    texts = perf.TextSource(setup.pool, random.Random(setup.seed * 7), "bench")
    memory = perf.Memory(perf.sqlite_url(db), settings=perf.engine_settings(), project=perf.ACTIVE_PROJECT)
    floor = perf.Floor(db)
    try:
        engine_samples, floor_samples = perf.measure_pair(
            (lambda: texts.next()[0], lambda text: memory.record_state(raw_log=text, session_id="rec-engine")),
            (texts.next, lambda p: floor.record("rec-floor", p[0], p[1])),
            runs, cap=1e9, warmup=10)
    finally:
        floor.close()
        memory.close()
    label = "engine record vs raw sqlite3"
    figures = {label: pair(engine_samples, floor_samples)}
    f = figures[label]
    say(f"  {label:<30} {f['side']['median_ms']:.3f} ms  floor {f['floor']['median_ms']:.3f} ms  "
        f"x{f['ratio_median']:.2f}")
    return {"figures": figures, "runs": runs, "floor": "raw sqlite3 with the engine's PRAGMAs (WAL, "
            "synchronous=FULL): BEGIN IMMEDIATE, INSERT content, INSERT slot, COMMIT (bench/perf.py Floor)"}


# --------------------------------------------------------------------------------------- reporting

COMMANDS: dict[str, Callable[[Setup, int], dict[str, Any]]] = {
    "hooks": bench_hooks, "mcp": bench_mcp, "official": bench_official, "engine": bench_engine}


def cell(name: str, figure: dict[str, Any]) -> tuple[str, str]:
    if "speedup_median" in figure:
        return (f"{figure['side']['median_ms']:.2f} ms vs {figure['peer']['median_ms']:.2f} ms",
                f"**{figure['speedup_median']:.1f}x faster**")
    side, floor = figure["side"], figure["floor"]
    measured = f"{side['median_ms']:.2f} ms vs {floor['median_ms']:.2f} ms"
    ratios = f"**{figure['ratio_median']:.2f}x**"
    if name.startswith("hook"):
        measured += f" (p95 {side['p95_ms']:.1f} vs {floor['p95_ms']:.1f})"
        ratios += f" (p95 {figure['ratio_p95']:.2f}x)"
    return measured, ratios


def table() -> str:
    lines = ["# Issue 25 goals (`bench/goals.py`)", "",
             "Each row is one command (`python bench/goals.py NAME`); both sides were measured interleaved in "
             "the same run, on a file of 10^4 slots. The machine has 2 cores shared with other work: read the "
             "ratios.", "",
             "| figure | command | measured (median, side vs floor or peer) | ratio | goal | result | when, load |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    against = []
    for name in COMMANDS:
        path = RESULTS / f"goals-{name}.json"
        if not path.exists():
            continue
        report = json.loads(path.read_text())
        against.append(f"{name}: {report.get('floor') or report.get('peer')}")
        for figure_name, figure in report["figures"].items():
            goal, test = GOALS[figure_name]
            measured, ratios = cell(figure_name, figure)
            result = "-" if test is None else "pass" if test(figure) else "FAIL"
            lines.append(f"| {figure_name} | `goals.py {name}` | {measured} | {ratios} | {goal} | "
                         f"{result} | {report['when']}, {report['load']} |")
    lines += ["", "Floors and peers: " + "; ".join(against) + "."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", choices=[*COMMANDS, "all", "table"])
    parser.add_argument("--runs", type=int, help="samples per side (default: hooks 150, mcp 400, official 30, "
                        "engine 400)")
    parser.add_argument("--cache", type=Path, help="keep the built 10^4 file here between commands")
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--out", type=Path, help="results folder (default bench/results)")
    args = parser.parse_args(argv)
    global RESULTS
    RESULTS = args.out or RESULTS
    names = list(COMMANDS) if args.name == "all" else [] if args.name == "table" else [args.name]
    work = Path(tempfile.mkdtemp(prefix="vlk-bench-goals-"))
    try:
        setup = Setup(work, args.cache, args.seed) if names else None
        for name in names:
            load = "load " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
            say(f"{name} ({load}) ...")
            started = time.time()
            assert setup is not None
            report = COMMANDS[name](setup, args.runs or DEFAULT_RUNS[name])
            report.update({"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)), "load": load,
                           "seconds": round(time.time() - started, 1), "slots": SLOTS,
                           "machine": f"{os.cpu_count()} cores, Python {sys.version.split()[0]}, "
                                      f"SQLite {sqlite3.sqlite_version}"})
            RESULTS.mkdir(parents=True, exist_ok=True)
            (RESULTS / f"goals-{name}.json").write_text(json.dumps(report, indent=2) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = table()
    (RESULTS / "goals.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
