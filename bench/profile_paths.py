"""Where the time goes on the three measured paths (issue 25): the hook process, an MCP call, an engine record.

    .venv/bin/python bench/profile_paths.py            # about 2 minutes; writes bench/results/profile.md

1. The hook process (`vlk-memact hook claude-code`, warm server up): `python -X importtime` of the hook,
   module by module (median of the runs), beside `python -c pass`; CPU time (user + sys) of the floor, of
   the floor plus one import, of interpreter flags, and of the hook, interleaved.
2. The warm server's work per event: the round trip of warm.ask, and cProfile of runner.answer_event
   (the in-process code path the server runs) for PreToolUse and PostToolUseFailure on a 10^4-slot file.
3. An MCP call over stdio: what the SDK client's output-schema check costs per result (the published schema
   against pydantic's full schema of the same dataclass, and the no-op tool's), and vlk_record_state with
   the engine call stubbed out, beside the real tool and the no-op tool (all interleaved).
4. The engine's record_state: cProfile (bench/perf.py's profile_engine).
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import contextlib
import cProfile
import io
import json
import os
import pstats
import random
import resource
import shutil
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

import hooks  # noqa: E402
import perf  # noqa: E402

RESULTS = ROOT / "bench" / "results"
SLOTS = 10**4
STUB_SERVER = """
import os, sys
from vlk_memact import Memory, Settings
from vlk_memact.server import build_server
from vlk_memact.server.stdio_pipes import serve_stdio
memory = Memory(os.environ["DATABASE_URL"], settings=Settings.from_env({"VLK_LOG_LEVEL": "WARNING"}),
                project=os.environ["VLK_PROJECT"])
first = memory.record_state(raw_log="a stub's only record", session_id="stub")
memory.record_state = lambda **_: first  # everything but the engine's work
serve_stdio(build_server(memory, inline=True))  # as `vlk-memact` serves stdio
"""


def say(*parts: object) -> None:
    print("[profile]", *parts, file=sys.stderr, flush=True)


def cpu_ms(args: list[str], data: bytes, env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, input=data, env=env, capture_output=True, check=True, timeout=60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1e3


def top(profiler: cProfile.Profile, sort: str, lines: int, restrict: str = "") -> str:
    buffer = io.StringIO()
    stats = pstats.Stats(profiler, stream=buffer).sort_stats(sort)
    if restrict:
        stats.print_stats(restrict, lines)
    else:
        stats.print_stats(lines)
    text = buffer.getvalue()
    return text[text.index("   ncalls"):].rstrip() if "   ncalls" in text else text.strip()


# ------------------------------------------------------------------------------------------ 1. hook


def hook_process(db: Path, pool: list[Any], runs: int) -> dict[str, Any]:
    env = hooks.child_env(db)
    (db.parent / "home").mkdir(exist_ok=True)
    events = hooks.Events(pool, 5)
    hook = [str(hooks.VLK), "hook", "claude-code"]
    py = sys.executable

    def event() -> bytes:
        return json.dumps(events.next("PreToolUse (no history)")).encode()

    for _ in range(3):
        hooks.timed(hook, event(), env)
    time.sleep(1.0)
    # -X importtime: self time per module, median over the runs.
    selves: dict[str, list[int]] = {}
    floor_modules: set[str] = set()
    for run in range(runs):
        for args, into_floor in (([py, "-X", "importtime", "-c", "pass"], True),
                                 ([py, "-X", "importtime", *hook], False)):
            done = subprocess.run(args, input=b"" if into_floor else event(), env=env, capture_output=True,
                                  timeout=60)
            for line in done.stderr.decode().splitlines():
                if not line.startswith("import time:") or "self [us]" in line:
                    continue
                self_us, _, name = line.removeprefix("import time:").split("|")
                module = name.strip()
                if into_floor:
                    floor_modules.add(module)
                else:
                    selves.setdefault(module, []).append(int(self_us))
    beyond = {m: statistics.median(v) for m, v in selves.items() if m not in floor_modules}
    # CPU time, interleaved.
    variants = {
        "floor: python -c pass": ([py, "-c", "pass"], b""),
        "python -I -c pass": ([py, "-I", "-c", "pass"], b""),
        "python -s -E -c pass": ([py, "-s", "-E", "-c", "pass"], b""),
        "python -S -c pass (no site: no venv packages)": ([py, "-S", "-c", "pass"], b""),
        "python -c 'import re' (what a generated console script imports first)": ([py, "-c", "import re"], b""),
        "python -c 'import _socket'": ([py, "-c", "import _socket"], b""),
        "python -c 'import json' (json imports re)": ([py, "-c", "import json"], b""),
        "python -c 'import os; os._exit(0)' (no interpreter teardown: how the warm hook exits)": (
            [py, "-c", "import os; os._exit(0)"], b""),
        "the hook's imports (hosts/shared/warm.py)": ([py, "-c", "import vlk_memact.hosts.shared.warm"], b""),
        "the in-process hook's imports (runner, claude_code)": (
            [py, "-c", "import vlk_memact.hosts.shared.runner, vlk_memact.hosts.claude_code.adapter"], b""),
        "vlk-memact hook claude-code (PreToolUse, warm)": (hook, None),
    }
    cpu: dict[str, list[float]] = {k: [] for k in variants}
    rng = random.Random(3)
    for _ in range(runs):
        order = list(variants)
        rng.shuffle(order)
        for name in order:
            args, data = variants[name]
            cpu[name].append(cpu_ms(args, event() if data is None else data, env))
    floor = statistics.median(cpu["floor: python -c pass"])
    return {
        "importtime_beyond_floor_us": dict(sorted(beyond.items(), key=lambda kv: -kv[1])),
        "cpu_ms": {k: round(statistics.median(v), 2) for k, v in cpu.items()},
        "cpu_ratio": {k: round(statistics.median(v) / floor, 3) for k, v in cpu.items()},
        "runs": runs,
    }


# ---------------------------------------------------------------------------------- 2. warm server


def server_work(db: Path, pool: list[Any], calls: int) -> dict[str, Any]:
    from vlk_memact.config import Settings
    from vlk_memact.engine import Memory
    from vlk_memact.hosts.claude_code import adapter as claude_code
    from vlk_memact.hosts.shared import runner, warm

    env = {**hooks.child_env(db), "VLK_HOOK_SERVER_IDLE_SECONDS": "20"}
    (db.parent / "home").mkdir(exist_ok=True)
    memories: dict[Any, Memory] = {}

    class Kept:
        def __init__(self, memory: Memory) -> None:
            self.memory = memory

        def __enter__(self) -> Memory:
            return self.memory

        def __exit__(self, *_: object) -> None:
            return None

    def opener(settings: Settings, cwd: str | None, _light: bool) -> Kept:
        target = runner.hook_target(settings, cwd)  # (settings, project, checkout), as the warm server keys them
        if target not in memories:
            memories[target] = Memory(settings=target[0], project=target[1], identity=target[2])
        return Kept(memories[target])

    events = hooks.Events(pool, 9)
    clean = "PostToolUse (Bash), in a session where nothing failed"

    def event(kind: str) -> bytes:
        if kind == clean:  # fix memory's success path: nothing to write, so no commit and no fsync
            return json.dumps({**events.next("PostToolUse (Bash)"), "session_id": "nothing-failed"}).encode()
        return json.dumps(events.next(kind)).encode()

    wal = Path(str(db) + "-wal")
    out: dict[str, Any] = {}
    for kind in ("PreToolUse (no history)", "PostToolUseFailure", clean):
        for _ in range(5):
            runner.answer_event(claude_code.handle, event(kind), Settings.from_env(env), opener=opener)
        wal_before = wal.stat().st_size if wal.exists() else 0
        profiler = cProfile.Profile()
        times = []
        for _ in range(calls):
            raw = event(kind)
            started = time.perf_counter()
            profiler.enable()
            _, _, problem = runner.answer_event(claude_code.handle, raw, Settings.from_env(env), opener=opener)
            profiler.disable()
            times.append(time.perf_counter() - started)
            if problem:
                raise RuntimeError(problem)
        out[kind] = {"median_ms_profiled": round(statistics.median(times) * 1e3, 3),
                     "events": calls, "wal_bytes_written": (wal.stat().st_size if wal.exists() else 0) - wal_before,
                     "profile": top(profiler, "cumulative", 28)}
    for memory in memories.values():
        memory.close()
    # The round trip through a real warm server (the client half in this process).
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        hooks.timed([str(hooks.VLK), "hook", "claude-code"], json.dumps(events.next("PreToolUse (no history)")).encode(),
                    env)
        time.sleep(1.0)
        trips = []
        for _ in range(calls):
            raw = json.dumps(events.next("PreToolUse (no history)")).encode()
            started = time.perf_counter()
            reply = warm.ask("claude-code", [], raw)
            trips.append(time.perf_counter() - started)
            if reply is None or reply.get("problem"):
                raise RuntimeError(f"no warm server: {reply}")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    out["warm.ask round trip, PreToolUse"] = {"median_ms": round(statistics.median(trips) * 1e3, 3)}
    return out


# ---------------------------------------------------------------------------------------------- 3. MCP


def validation_costs(db: Path, pool: list[Any]) -> dict[str, Any]:
    """µs per result of the SDK client's check (a compiled jsonschema validator and best_match, as
    mcp.client.session does), for the published schema and for pydantic's full schema of the same type."""
    from jsonschema import exceptions as schema_errors
    from jsonschema.validators import validator_for
    from pydantic import TypeAdapter
    from referencing import Registry

    from vlk_memact import Memory, Settings
    from vlk_memact.core import render, results
    from vlk_memact.server import build_server

    def check_us(schema: dict[str, Any], data: Any, n: int = 2000) -> float:
        validator = validator_for(schema)(schema, registry=Registry())
        for _ in range(50):
            schema_errors.best_match(validator.iter_errors(data))
        started = time.perf_counter()
        for _ in range(n):
            error = schema_errors.best_match(validator.iter_errors(data))
        if error is not None:
            raise RuntimeError(f"the result does not match its schema: {error}")
        return round((time.perf_counter() - started) / n * 1e6, 1)

    texts = perf.TextSource(pool, random.Random(4), "validate")
    with Memory(perf.sqlite_url(db), settings=Settings.from_env({"VLK_LOG_LEVEL": "WARNING"}),
                project=perf.ACTIVE_PROJECT) as memory:
        tools = {t.name: t for t in build_server(memory)._tool_manager.list_tools()}  # noqa: SLF001
        data = {"vlk_record_state": results.record_view(memory.record_state(raw_log=texts.next()[0], session_id="v")),
                "vlk_fetch_context": render.context_view(memory.fetch_context(session_id=perf.ACTIVE_SESSION))}
    out: dict[str, Any] = {}
    for name, value in data.items():
        meta = tools[name].fn_metadata
        full = TypeAdapter(meta.output_model).json_schema()
        out[name] = {"published schema (us)": check_us(meta.output_schema, value),
                     "full schema (us)": check_us(full, value),
                     "result bytes": len(json.dumps(value))}
    noop = {"properties": {"result": {"title": "Result", "type": "string"}}, "required": ["result"],
            "title": "noopOutput", "type": "object"}
    out["noop"] = {"published schema (us)": check_us(noop, {"result": "ok"})}
    return out


async def _stub_comparison(db: Path, pool: list[Any], work: Path, runs: int) -> dict[str, Any]:
    from mcp import StdioServerParameters

    stub_file = work / "stub_server.py"
    stub_file.write_text(STUB_SERVER)
    real = perf.vlk_params(db, "profile-real")
    stub = StdioServerParameters(command=sys.executable, args=[str(stub_file)],
                                 env={**real.env, "VLK_PERF_TAG": "profile-stub"}, cwd=real.cwd)
    texts = perf.TextSource(pool, random.Random(6), "stub")
    errlog = work / "stub-servers.log"
    samples: dict[str, list[float]] = {"no-op tool": [], "no-op tool, vlk-memact's stdio transport": [],
                                       "vlk_record_state, engine stubbed": [], "vlk_record_state": []}
    async with perf.connect(perf.noop_params("profile-noop"), errlog) as noop, \
            perf.connect(perf.noop_params("profile-noop-pipes", pipes=True), errlog) as noop_pipes, \
            perf.connect(stub, errlog) as stubbed, perf.connect(real, errlog) as full:
        clients = {"no-op tool": (noop, "noop"), "no-op tool, vlk-memact's stdio transport": (noop_pipes, "noop"),
                   "vlk_record_state, engine stubbed": (stubbed, "vlk_record_state"),
                   "vlk_record_state": (full, "vlk_record_state")}
        rng = random.Random(8)
        for i in range(10 + runs):
            order = list(clients)
            rng.shuffle(order)
            for name in order:
                client, tool = clients[name]
                args = {} if tool == "noop" else {"raw_log": texts.next()[0], "session_id": "mcp-rec"}
                elapsed = await perf.timed_call(client, tool, args)
                if i >= 10:
                    samples[name].append(elapsed)
    floor = statistics.median(samples["no-op tool"])
    return {k: {"median_ms": round(statistics.median(v) * 1e3, 3), "ratio": round(statistics.median(v) / floor, 3)}
            for k, v in samples.items()}


# --------------------------------------------------------------------------------------------- report


def markdown(report: dict[str, Any]) -> str:
    hook, server, mcp = report["hook"], report["server"], report["mcp"]
    lines = ["# Where the time goes (`bench/profile_paths.py`)", "",
             f"{report['when']}; {report['machine']}; load {report['load']}. Figures are medians; the machine "
             "is shared (2 cores), so read proportions, not absolute times.", "",
             "## 1. The hook process", "",
             "CPU time (user + sys) of each process, interleaved, and its ratio to the floor:", "",
             "| process | CPU ms | / floor |", "| --- | ---: | ---: |"]
    for name, value in hook["cpu_ms"].items():
        lines.append(f"| {name} | {value} | {hook['cpu_ratio'][name]:.2f} |")
    cpu = hook["cpu_ms"]
    floor = cpu["floor: python -c pass"]
    hook_cpu = cpu["vlk-memact hook claude-code (PreToolUse, warm)"]
    re_cost = cpu["python -c 'import re' (what a generated console script imports first)"] - floor
    teardown = floor - cpu["python -c 'import os; os._exit(0)' (no interpreter teardown: how the warm hook exits)"]
    lines += ["", f"Reading: the hook process costs {hook_cpu - floor:+.1f} ms of CPU over the floor "
              f"({hook_cpu / floor:.2f}x), the warm server's answer included (it runs in another process: the "
              "wall time adds its work and one round trip, section 2). A generated console script's `import re` "
              f"alone would add {re_cost:+.1f} ms; the `vlk-memact` command is a plain script for that reason. "
              "Interpreter flags: `-I` and `-s -E` change nothing measurable in a venv (the user site is one "
              "stat); `-S` skips `site`, which is the venv's packages and `.pth` files (an editable install "
              "lives there), so it is not safe, and installers drop flags from a script's `#!python` line "
              "anyway. The interpreter's teardown (module clean-up, garbage collection) costs the floor "
              f"{teardown:.1f} ms: the warm hook flushes its answer and leaves by `os._exit` (warm.leave), so its "
              "figure can sit below the floor's. What is left beyond the floor is finding and loading the "
              "package's three small modules and `_socket`, listed next; the in-process fallback imports the "
              "engine (the last rows above).", ""]
    lines += ["", "Modules the hook imports beyond `python -c pass` (`-X importtime`, self time, median us):", "",
              "| module | us |", "| --- | ---: |"]
    for name, value in hook["importtime_beyond_floor_us"].items():
        lines.append(f"| {name} | {value:.0f} |")
    lines += ["", "## 2. The warm server's work per event", "",
              f"warm.ask round trip for a PreToolUse (connect, send, the server's answer, reply): "
              f"{server['warm.ask round trip, PreToolUse']['median_ms']} ms.", ""]
    for kind in ("PreToolUse (no history)", "PostToolUseFailure",
                 "PostToolUse (Bash), in a session where nothing failed"):
        lines += [f"### {kind}: {server[kind]['median_ms_profiled']} ms per event under cProfile", "",
                  f"Bytes the {server[kind]['events']} events added to the WAL: "
                  f"{server[kind]['wal_bytes_written']} (a commit that writes nothing needs no fsync; a WAL "
                  "checkpoint can make it negative).", "", "```", server[kind]["profile"], "```", ""]
    lines += ["Reading: a PreToolUse is a few reads (the guard's facts), and so is a success in a session where "
              "nothing failed (no write, so no commit to wait for); a PostToolUseFailure is one transaction "
              "(runner.answer_event runs the handler in `Memory.one_transaction`, issue 37): the capture, the "
              "record (redaction, fingerprint), `Memory.intercept_loops` for the loop check (the pipeline of "
              "fetch_context without rendering the context, which the hook never reads) and the fix-memory "
              "lookup join it, and its one durable commit (the `commit` rows: one fsync per event, where each "
              "write used to commit and fsync on its own) is most of its time on a busy disk.", ""]
    lines += ["## 3. An MCP call", "", "The SDK client's output-schema check, us per result:", "",
              "| tool | published schema | pydantic's full schema of the same type | result bytes |",
              "| --- | ---: | ---: | ---: |"]
    for name, value in mcp["validation"].items():
        lines.append(f"| {name} | {value['published schema (us)']} | {value.get('full schema (us)', '-')} | "
                     f"{value.get('result bytes', '-')} |")
    lines += ["", "vlk_record_state over stdio with the engine call stubbed out (everything else of the tool: "
              "arguments, result, schema check, transport), interleaved with the real tool and the no-op tool (as "
              "the SDK serves it, and served by vlk-memact's stdio transport, server/stdio_pipes.py):", "",
              "| call | median ms | / no-op |", "| --- | ---: | ---: |"]
    for name, value in mcp["stub"].items():
        lines.append(f"| {name} | {value['median_ms']} | {value['ratio']:.2f} |")
    lines += ["", "Reading: with the per-element schemas gone, the client's check costs each tool about one "
              "sub-schema per field; the two no-ops differ by the transport's thread hand-offs (a line read, a "
              "write and a flush each); the stubbed tool, on vlk-memact's transport, shows what the protocol path "
              "of vlk_record_state costs beyond its no-op (arguments, a larger result, the check), and the real "
              "tool adds the engine's record, mostly its durable commit (section 4).", ""]
    lines += ["", "## 4. The engine's record_state (cProfile, tottime)", "", "```", report["engine"], "```", "",
              "Reading: `execute` is SQLite's own time, mostly the COMMIT's fsync (synchronous=FULL, WAL); the "
              "Python work (redaction, fingerprint, rows) is the rest.", ""]
    return "\n".join(lines)


def main() -> int:
    # A parser for --help alone: without it, `--help` would run the whole profile and overwrite its results.
    argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog="PROFILE_RUNS=N sets the runs (30)").parse_args()
    runs = int(os.environ.get("PROFILE_RUNS", "30"))
    compileall.compile_dir(str(ROOT / "src" / "vlk_memact"), quiet=1)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    observations, source = perf.load_observations()
    pool = perf.make_pool(observations, 600, random.Random(25))
    work = Path(tempfile.mkdtemp(prefix="vlk-bench-profile-"))
    try:
        dbs = perf.Databases(work, None, pool, 25, f"{source}:{len(pool)}")
        report: dict[str, Any] = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                  "load": ", ".join(f"{x:.2f}" for x in os.getloadavg()),
                                  "machine": f"{os.cpu_count()} cores, Python {sys.version.split()[0]}"}
        say("the hook process ...")
        db = dbs.copy(SLOTS, "hook")
        hooks.add_host_calls(db)
        report["hook"] = hook_process(db, pool, runs)
        say("the warm server's work ...")
        report["server"] = server_work(dbs.copy(SLOTS, "server"), pool, 100)
        say("an MCP call ...")
        report["mcp"] = {"validation": validation_costs(dbs.copy(SLOTS, "validate"), pool),
                         "stub": asyncio.run(_stub_comparison(dbs.copy(SLOTS, "stub"), pool, work, 5 * runs))}
        say("the engine's record ...")
        report["engine"] = perf.profile_engine(dbs.copy(SLOTS, "engine"), pool, 300, 25)["record_state"].strip()
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(work)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "profile.json").write_text(json.dumps(report, indent=2) + "\n")
    (RESULTS / "profile.md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
