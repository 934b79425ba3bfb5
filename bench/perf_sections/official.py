"""Section 3: the official reference server `@modelcontextprotocol/server-memory` doing equivalent work."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.database import ACTIVE_SESSION, NEEDLE, Databases
from harness.mcp_servers import (
    OFFICIAL_PACKAGE,
    connect,
    find_pid,
    official_available,
    official_params,
    official_version,
    rss_mb,
    timed_call,
    vlk_params,
    write_official_file,
)
from harness.stats import ratio, summary
from harness.texts import PoolText, TextSource

from perf_sections.modes import Mode, say


async def bench_official(dbs: Databases, mode: Mode, work: Path, pool: list[PoolText], seed: int) -> dict[str, Any]:
    import anyio

    ok, why = official_available()
    if not ok:
        say(f"  skipping the official server: {why}")
        return {"skipped": why}
    out: dict[str, Any] = {"package": f"{OFFICIAL_PACKAGE}@{official_version()}", "sizes": {}}
    errlog = work / "official-servers.log"
    rng = random.Random(seed + 3)
    texts = TextSource(pool, rng, "cmp")
    for n in mode.official_sizes:
        db = dbs.copy(n, "official-vlk")
        memory_file = work / f"memory-{n}.jsonl"
        stored = write_official_file(db, memory_file)
        say(f"  official server at {n:,}: {stored['observations']:,} observations in {stored['entities']:,} "
            f"entities, {stored['file_bytes'] / 1e6:.1f} MB")
        size: dict[str, Any] = {"stored": stored}
        tag_v, tag_o = f"cmp-vlk-{n}", f"cmp-official-{n}"
        async with connect(vlk_params(db, tag_v), errlog) as vlk, \
                connect(official_params(memory_file, tag_o), errlog) as official:
            pairs: list[tuple[str, str, Callable[[], dict[str, Any]], str, Callable[[], dict[str, Any]]]] = [
                ("write", "vlk_record_state", lambda: {"raw_log": texts.next()[0], "session_id": "cmp-rec"},
                 "add_observations",
                 lambda: {"observations": [{"entityName": "cmp-rec", "contents": [texts.next()[0]]}]}),
                ("search", "vlk_search_memory", lambda: {"query": NEEDLE, "session_id": ACTIVE_SESSION},
                 "search_nodes", lambda: {"query": NEEDLE}),
                ("read one session", "vlk_get_history", lambda: {"session_id": ACTIVE_SESSION, "limit": 500},
                 "open_nodes", lambda: {"names": [ACTIVE_SESSION]}),
                # Last: a read_graph too slow for the time limit leaves this client unusable.
                ("read active memory", "vlk_fetch_context", lambda: {"session_id": ACTIVE_SESSION},
                 "read_graph", lambda: {}),
            ]
            for label, vtool, vargs, otool, oargs in pairs:
                vs: list[float] = []
                os_: list[float] = []
                started = time.perf_counter()
                timed_out = False
                for i in range(1 + mode.official_iterations):
                    tv = await timed_call(vlk, vtool, vargs())
                    try:
                        with anyio.fail_after(mode.official_call_timeout):
                            to = await timed_call(official, otool, oargs())
                    except TimeoutError:
                        timed_out, to = True, mode.official_call_timeout  # a lower bound
                        vs.append(tv)
                        os_.append(to)
                        break
                    if i >= 1 or to > mode.official_cap_seconds / 2:
                        # (a call that slow is measured once: its warm-up is its sample)
                        vs.append(tv)
                        os_.append(to)
                        if to > mode.official_cap_seconds / 2 or (
                                len(vs) >= 3 and time.perf_counter() - started > mode.official_cap_seconds):
                            break
                sv, so = summary(vs), summary(os_)
                size[label] = {"vlk_tool": vtool, "official_tool": otool, "vlk": sv, "official": so,
                               "speedup_median": ratio(so["median_ms"], sv["median_ms"]), "timed_out": timed_out}
                say(f"  {n:>7,} {label:<20} vlk {vtool:<18} {sv['median_ms']:9.2f} ms   official {otool:<16} "
                    f"{'>' if timed_out else ''}{so['median_ms']:9.2f} ms   {size[label]['speedup_median']:.1f}x faster")
                if timed_out:
                    size["note"] = (f"{otool} did not answer within {mode.official_call_timeout:.0f} s (the whole graph "
                                    f"is {stored['file_bytes'] / 1e6:.0f} MB, sent twice: text and structuredContent); "
                                    "its time is a lower bound and the server was stopped there")
                    break
            size["vlk_server"] = rss_mb(find_pid(tag_v))
            size["official_server"] = rss_mb(find_pid(tag_o))
        out["sizes"][str(n)] = size
    return out

