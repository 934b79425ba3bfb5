"""Section 2: each vlk tool over MCP stdio against the SDK's no-op tool (the protocol floor)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.database import ACTIVE_SESSION, COMMON_QUERY
from harness.mcp_servers import connect, find_pid, noop_params, rss_mb, timed_call, vlk_params
from harness.stats import ratio, summary
from harness.texts import LESSONS, PoolText, TextSource

from perf_sections.modes import Mode, say


async def bench_mcp(path: Path, pool: list[PoolText], mode: Mode, work: Path, seed: int) -> dict[str, Any]:
    """Each vlk tool against the SDK's no-op tool, interleaved, through one client session each."""
    rng = random.Random(seed + 2)
    texts = TextSource(pool, rng, "mcp")
    errlog = work / "mcp-servers.log"
    out: dict[str, Any] = {}
    async with connect(vlk_params(path, "mcp-vlk"), errlog) as vlk, connect(noop_params("mcp-noop"), errlog) as noop:
        out["protocol_version"] = vlk.protocol_version
        # Fresh ids for the tools that need them.
        async def tt_ids(session: str) -> list[int]:
            ids = []
            for _ in range(2):
                r = await vlk.call_tool("vlk_record_state", {"raw_log": texts.next()[0], "session_id": session})
                ids.append(r.structured_content["timeline_id"])
            return ids

        async def revoke_target() -> int:
            ids = await tt_ids("mcp-revoke")
            r = await vlk.call_tool("vlk_time_travel", {
                "target_timeline_ids": ids, "learning": LESSONS[3], "raw_log_excerpt": "ImportError: numpy",
                "session_id": "mcp-revoke", "scope": "session"})
            return r.structured_content["constraint_id"]

        tools: list[tuple[str, Callable[[], Any]]] = [
            ("vlk_fetch_context", lambda: _const({"session_id": ACTIVE_SESSION})),
            ("vlk_search_memory", lambda: _const({"query": COMMON_QUERY, "session_id": ACTIVE_SESSION})),
            ("vlk_get_history", lambda: _const({"session_id": ACTIVE_SESSION})),
            ("vlk_summarize_session", lambda: _const({"session_id": ACTIVE_SESSION})),
            ("vlk_record_state", lambda: _const({"raw_log": texts.next()[0], "session_id": "mcp-rec"})),
            ("vlk_time_travel", lambda: _tt_args(tt_ids)),
            ("vlk_revoke_future", lambda: _revoke_args(revoke_target)),
        ]
        for _ in range(5):
            await timed_call(noop, "noop", {})
        for tool, make_args in tools:
            tool_samples: list[float] = []
            noop_samples: list[float] = []
            started = time.perf_counter()
            for i in range(3 + mode.mcp_iterations):
                args = await make_args()
                if i % 2:
                    t_tool = await timed_call(vlk, tool, args)
                    t_noop = await timed_call(noop, "noop", {})
                else:
                    t_noop = await timed_call(noop, "noop", {})
                    t_tool = await timed_call(vlk, tool, args)
                if i >= 3:
                    tool_samples.append(t_tool)
                    noop_samples.append(t_noop)
                    if len(tool_samples) >= 10 and time.perf_counter() - started > mode.cap_seconds:
                        break
            st, sn = summary(tool_samples), summary(noop_samples)
            out[tool] = {"tool": st, "noop": sn, "ratio_median": ratio(st["median_ms"], sn["median_ms"]),
                         "ratio_p99": ratio(st["p99_ms"], sn["p99_ms"])}
            say(f"  MCP {tool:<22} {st['median_ms']:8.3f} ms (p99 {st['p99_ms']:8.3f})   noop "
                f"{sn['median_ms']:7.3f} ms   x{out[tool]['ratio_median']:.2f}")
        out["server"] = rss_mb(find_pid("mcp-vlk"))
        out["noop_server"] = rss_mb(find_pid("mcp-noop"))
    return out


async def _const(args: dict[str, Any]) -> dict[str, Any]:
    return args


async def _tt_args(tt_ids: Callable[[str], Any]) -> dict[str, Any]:
    return {"target_timeline_ids": await tt_ids("mcp-tt"), "learning": LESSONS[5],
            "raw_log_excerpt": "django.db.utils.OperationalError: no such table", "session_id": "mcp-tt",
            "scope": "session"}


async def _revoke_args(target: Callable[[], Any]) -> dict[str, Any]:
    return {"timeline_id": await target(), "session_id": "mcp-revoke"}

