"""Sections 4 and 5: latency and memory of the server against database size, and records per second."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness.database import (
    ACTIVE_PROJECT,
    ACTIVE_SESSION,
    COMMON_QUERY,
    Databases,
    engine_settings,
    sqlite_url,
)
from harness.mcp_servers import connect, find_pid, rss_mb, timed_call, vlk_params
from harness.paths import ROOT
from harness.stats import summary
from harness.texts import PoolText, TextSource

from perf_sections.modes import Mode, say
from vlk_memact import Memory


async def bench_growth(dbs: Databases, mode: Mode, work: Path, pool: list[PoolText], seed: int) -> dict[str, Any]:
    """The server on each file: latency of fetch_context over MCP, resident memory, bytes per slot."""
    out: dict[str, Any] = {}
    errlog = work / "growth-servers.log"
    rng = random.Random(seed + 4)
    texts = TextSource(pool, rng, "growth")
    for n in mode.sizes:
        db = dbs.copy(n, "growth")
        meta = dbs.meta[n]
        tag = f"growth-{n}"
        async with connect(vlk_params(db, tag), errlog) as vlk:
            pid = find_pid(tag)
            after_start = rss_mb(pid)
            fetch: list[float] = []
            for i in range(3 + max(5, mode.mcp_iterations // 3)):
                t = await timed_call(vlk, "vlk_fetch_context", {"session_id": ACTIVE_SESSION})
                if i >= 3:
                    fetch.append(t)
                await timed_call(vlk, "vlk_search_memory", {"query": COMMON_QUERY, "session_id": ACTIVE_SESSION})
                await timed_call(vlk, "vlk_get_history", {"session_id": ACTIVE_SESSION, "limit": 500})
                await timed_call(vlk, "vlk_record_state", {"raw_log": texts.next()[0], "session_id": "growth"})
            memory = rss_mb(pid)
        out[str(n)] = {
            "slots": meta["slots"],
            "file_bytes": meta["file_bytes"],
            "bytes_per_slot": meta["bytes_per_slot"],
            "mcp_fetch_context": summary(fetch),
            "rss_after_start_mb": after_start["rss_mb"],
            "rss_mb": memory["rss_mb"],
            "peak_rss_mb": memory["peak_rss_mb"],
        }
        say(f"  growth {n:>9,}: {meta['bytes_per_slot']:.0f} B/slot, MCP fetch {summary(fetch)['median_ms']:.2f} ms,"
            f" RSS {memory['rss_mb']:.1f} MB (peak {memory['peak_rss_mb']:.1f})")
        db.unlink(missing_ok=True)
    return out



async def bench_throughput(dbs: Databases, mode: Mode, work: Path, pool: list[PoolText], seed: int) -> dict[str, Any]:
    n = 10**4
    out: dict[str, Any] = {"database_slots": n, "seconds": mode.throughput_seconds}
    rng = random.Random(seed + 5)
    texts = TextSource(pool, rng, "tp")
    # One client, in process.
    db = dbs.copy(n, "throughput")
    with Memory(sqlite_url(db), settings=engine_settings(), project=ACTIVE_PROJECT) as memory:
        count = 0
        started = time.perf_counter()
        while time.perf_counter() - started < mode.throughput_seconds:
            memory.record_state(raw_log=texts.next()[0], session_id="tp-engine")
            count += 1
        elapsed = time.perf_counter() - started
    out["engine_one_process"] = {"records": count, "records_per_s": count / elapsed}
    # One MCP client, through one server.
    async with connect(vlk_params(db, "tp-mcp"), work / "throughput-servers.log") as vlk:
        for _ in range(3):
            await timed_call(vlk, "vlk_record_state", {"raw_log": texts.next()[0], "session_id": "tp-mcp"})
        count = 0
        started = time.perf_counter()
        while time.perf_counter() - started < mode.throughput_seconds:
            await timed_call(vlk, "vlk_record_state", {"raw_log": texts.next()[0], "session_id": "tp-mcp"})
            count += 1
        elapsed = time.perf_counter() - started
    out["mcp_one_client"] = {"records": count, "records_per_s": count / elapsed}
    # N writer processes on one file, one session each.
    texts_file = work / "writer-texts.json"
    texts_file.write_text(json.dumps([p.text for p in pool[:200]]))
    start_at = time.time() + 3.0  # time for every process to import and open the file
    procs = [
        subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "perf_writer.py"), sqlite_url(db), ACTIVE_PROJECT, f"tp-w{i}",
             str(mode.throughput_seconds), str(start_at), str(texts_file)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in range(mode.writers)
    ]
    reports = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=120 + mode.throughput_seconds)
        if proc.returncode != 0:
            raise RuntimeError(f"writer failed: {stderr[-2000:]}")
        reports.append(json.loads(stdout.strip().splitlines()[-1]))
    records = sum(r["records"] for r in reports)
    window = max(r["seconds"] for r in reports)
    out["writers"] = {
        "processes": mode.writers,
        "records": records,
        "errors": sum(r["errors"] for r in reports),
        "records_per_s": records / window,
        "per_process_records_per_s": [round(r["records"] / r["seconds"], 1) for r in reports],
    }
    say(f"  throughput: engine {out['engine_one_process']['records_per_s']:.0f}/s, MCP client "
        f"{out['mcp_one_client']['records_per_s']:.0f}/s, {mode.writers} processes "
        f"{out['writers']['records_per_s']:.0f}/s ({out['writers']['errors']} errors)")
    db.unlink(missing_ok=True)
    return out

