"""Performance of vlk-memact, side by side with its floors and with the official memory server.

    .venv/bin/python bench/perf.py            # the full run (10^3 .. 10^6 slots), about 10-15 minutes
    .venv/bin/python bench/perf.py --quick    # 10^3 and 10^4 only, few iterations: a CI smoke run

Sections, all measured in the same run:
 1. Engine, in process: median and p99 of each `Memory` method on databases of 10^3 .. 10^6 slots,
    beside its floor, the same rows written and read with raw `sqlite3` statements under the same
    durability settings (WAL, synchronous=FULL, BEGIN IMMEDIATE), as a ratio engine / floor.
 2. MCP over stdio, with the official SDK client: each tool against a no-op tool served by the same
    SDK (the protocol floor), as a ratio.
 3. The official reference server `@modelcontextprotocol/server-memory` (npm, pinned in bench/node),
    doing equivalent work through the same client, with 10^3 .. 10^5 items stored.
 4. Growth: latency and resident memory of the server against database size; bytes on disk per slot.
 5. Throughput: records per second of one client, and of 8 concurrent writer processes on one file.

Large databases are bulk-inserted with sqlite3 into a file whose schema `Memory` created, with the
rows the engine writes (content hashes, uids, fingerprints of the current algorithm, constraint keys
and links), spread over many sessions and projects, mostly archived (PAST), from real agent output
(shared/data/trajectories-dev when present). The active session is then written through `Memory`:
tens of PRESENT slots and a few visible constraints.

The sections are bench/perf_sections/ (one module each, and the report); what other benchmarks share with
this one (the builder, the texts, the floors, the MCP servers, statistics) is bench/harness/.

Figures go to bench/results/perf.json and perf.md (perf-quick.* for --quick). Targets are reported
as pass/fail; the exit status is 0 unless --strict is given and a target fails.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

# Names marked F401 are here for bench/goals.py and bench/profile_paths.py, which read them as perf.NAME;
# new code imports them from harness.
from harness.database import ACTIVE_PROJECT, ACTIVE_SESSION, Databases, engine_settings, sqlite_url  # noqa: E402, F401
from harness.floor import Floor  # noqa: E402, F401
from harness.machine import machine  # noqa: E402
from harness.mcp_servers import (  # noqa: E402, F401
    OFFICIAL_PACKAGE,
    connect,
    noop_params,
    official_available,
    official_params,
    official_version,
    timed_call,
    vlk_params,
    write_official_file,
)
from harness.paths import RESULTS  # noqa: E402
from harness.stats import measure_pair  # noqa: E402, F401
from harness.texts import TextSource, load_observations, make_pool  # noqa: E402, F401
from perf_sections.engine import bench_engine, profile_engine  # noqa: E402
from perf_sections.modes import FULL, QUICK, Mode, say  # noqa: E402
from perf_sections.official import bench_official  # noqa: E402
from perf_sections.protocol import bench_mcp  # noqa: E402
from perf_sections.report import evaluate_targets, markdown  # noqa: E402
from perf_sections.scale import bench_growth, bench_throughput  # noqa: E402

from vlk_memact import Memory  # noqa: E402, F401


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10^3 and 10^4 only, few iterations (CI smoke run)")
    parser.add_argument("--sizes", help="comma-separated database sizes, overriding the mode's (e.g. 1000,100000)")
    parser.add_argument("--sections", default="engine,mcp,official,growth,throughput",
                        help="comma-separated subset of: engine,mcp,official,growth,throughput,profile")
    parser.add_argument("--cache", type=Path, help="keep the built databases in this folder and reuse them")
    parser.add_argument("--out", type=Path, help="results folder (default bench/results)")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target fails")
    args = parser.parse_args(argv)

    mode = QUICK if args.quick else FULL
    if args.sizes:
        sizes = tuple(int(float(s)) for s in args.sizes.split(","))
        mode = Mode(**{**mode.__dict__, "sizes": sizes,
                       "official_sizes": tuple(s for s in mode.official_sizes if s in sizes)})
    sections = set(args.sections.split(","))
    out_dir = args.out or RESULTS
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = "perf-quick" if args.quick else "perf"
    started_wall = datetime.now(UTC)
    started = time.perf_counter()
    import anyio

    observations, source = load_observations()
    pool_rng = random.Random(args.seed)
    pool = make_pool(observations, mode.pool, pool_rng)
    pool_tag = f"{source}|{len(observations)}|{mode.pool}|{args.seed}"
    results: dict[str, Any] = {
        "mode": mode.name,
        "command": "python bench/perf.py" + (" --quick" if args.quick else "") + (
            f" --sizes {args.sizes}" if args.sizes else ""),
        "started": started_wall.strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "texts": f"{len(observations):,} tool outputs from {source}; pool of {len(pool):,} texts of 200-2000 "
                 "characters (log-uniform)",
        "notes": [],
    }
    work = Path(tempfile.mkdtemp(prefix="vlk-perf-"))
    dbs = Databases(work, args.cache, pool, args.seed, pool_tag)
    try:
        for n in mode.sizes:
            dbs.pristine(n)
        results["databases"] = {str(n): dbs.meta[n] for n in mode.sizes}

        if "engine" in sections:
            say("section 1: engine vs raw sqlite3 floor")
            results["engine"] = {}
            for n in mode.sizes:
                db = dbs.copy(n, "engine")
                results["engine"][str(n)] = bench_engine(db, n, pool, mode, args.seed)
                db.unlink(missing_ok=True)
        if "profile" in sections:
            say("profile: cProfile of the engine at the largest size")
            db = dbs.copy(max(mode.sizes), "profile")
            results["profile"] = {"slots": max(mode.sizes),
                                  **profile_engine(db, pool, 50 if args.quick else 300, args.seed)}
            (out_dir / f"{stem}-profile.txt").write_text(
                "\n\n".join(f"==== {k} ====\n{v}" for k, v in results["profile"].items() if k != "slots"))
            db.unlink(missing_ok=True)
        if "mcp" in sections:
            say("section 2: MCP vs the SDK's no-op tool")
            n = 10**4 if 10**4 in mode.sizes else min(mode.sizes)
            db = dbs.copy(n, "mcp")
            results["mcp"] = {"database_slots": dbs.meta[n]["slots"], **anyio.run(bench_mcp, db, pool, mode, work,
                                                                                 args.seed)}
            db.unlink(missing_ok=True)
        if "official" in sections:
            say("section 3: the official memory server")
            results["official"] = anyio.run(bench_official, dbs, mode, work, pool, args.seed)
            if "skipped" in results["official"]:
                results["notes"].append(f"Section 3 skipped: {results['official']['skipped']}.")
        if "growth" in sections:
            say("section 4: growth")
            results["growth"] = anyio.run(bench_growth, dbs, mode, work, pool, args.seed)
        if "throughput" in sections:
            say("section 5: throughput")
            results["throughput"] = anyio.run(bench_throughput, dbs, mode, work, pool, args.seed)
    except BaseException:
        # Keep what the servers wrote on stderr: an "Error executing tool" result only says which tool failed.
        logs = out_dir / f"{stem}-server-logs"
        logs.mkdir(exist_ok=True)
        for log in work.glob("*.log"):
            shutil.copyfile(log, logs / log.name)
        say(f"failed; the servers' stderr is in {logs}")
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)

    results["seconds"] = time.perf_counter() - started
    results["targets"] = evaluate_targets(results, mode)
    if args.quick:
        results["notes"].append("Quick mode: few samples, no timing assertions; figures are indicative only.")
    (out_dir / f"{stem}.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    text = markdown(results)
    (out_dir / f"{stem}.md").write_text(text)
    print(text)
    failed = [t for t in results["targets"] if t["result"] == "FAIL"]
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    sys.exit(main())
