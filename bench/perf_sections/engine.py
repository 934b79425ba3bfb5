"""Section 1: each `Memory` method in process beside its raw-sqlite3 floor, and where the engine spends its time."""

from __future__ import annotations

import cProfile
import io
import pstats
import random
from pathlib import Path
from typing import Any

from harness.database import ACTIVE_PROJECT, ACTIVE_SESSION, COMMON_QUERY, NEEDLE, engine_settings, sqlite_url
from harness.floor import Floor
from harness.stats import Step, measure_pair, ratio, summary
from harness.texts import LESSONS, PoolText, TextSource, loop_text

from perf_sections.modes import Mode, say
from vlk_memact import Memory


def bench_engine(path: Path, n: int, pool: list[PoolText], mode: Mode, seed: int) -> dict[str, Any]:
    """Section 1 on one file: each engine operation beside its raw-sqlite3 floor."""
    rng = random.Random(seed * 7 + n)
    texts = TextSource(pool, rng, "bench")
    memory = Memory(sqlite_url(path), settings=engine_settings(), project=ACTIVE_PROJECT)
    floor = Floor(path)
    out: dict[str, Any] = {}
    it, cap = mode.iterations, mode.cap_seconds

    def record_pair(result_key: str, engine: Step, floor_step: Step, **kw: Any) -> None:
        e, f = measure_pair(engine, floor_step, it, cap, **kw)
        se, sf = summary(e), summary(f)
        out[result_key] = {"engine": se, "floor": sf, "ratio_median": ratio(se["median_ms"], sf["median_ms"]),
                           "ratio_p99": ratio(se["p99_ms"], sf["p99_ms"])}
        say(f"  {n:>9,} {result_key:<24} engine {se['median_ms']:8.3f} ms (p99 {se['p99_ms']:8.3f})   "
            f"floor {sf['median_ms']:8.3f} ms   x{out[result_key]['ratio_median']:.2f}")

    try:
        record_pair(
            "fetch_context",
            (None, lambda _: memory.fetch_context(session_id=ACTIVE_SESSION)),
            (None, lambda _: floor.context_rows(ACTIVE_SESSION)),
        )
        record_pair(
            "search_memory (20 hits)",
            (None, lambda _: memory.search_memory(query=COMMON_QUERY, session_id=ACTIVE_SESSION)),
            (None, lambda _: floor.search(ACTIVE_SESSION, COMMON_QUERY)),
        )
        record_pair(
            "search_memory (rare)",
            (None, lambda _: memory.search_memory(query=NEEDLE, session_id=ACTIVE_SESSION)),
            (None, lambda _: floor.search(ACTIVE_SESSION, NEEDLE)),
        )
        record_pair(
            "get_history",
            (None, lambda _: memory.get_history(session_id=ACTIVE_SESSION)),
            (None, lambda _: floor.history(ACTIVE_SESSION)),
        )
        record_pair(
            "record_state",
            (lambda: texts.next()[0], lambda text: memory.record_state(raw_log=text, session_id="rec-engine")),
            (texts.next, lambda pair: floor.record("rec-floor", pair[0], pair[1])),
        )

        def tt_engine_setup() -> list[int]:
            return [memory.record_state(raw_log=texts.next()[0], session_id="tt-engine").timeline_id for _ in range(2)]

        def tt_floor_setup() -> list[int]:
            return [floor.record("tt-floor", *texts.next()) for _ in range(2)]

        record_pair(
            "time_travel",
            (tt_engine_setup, lambda ids: memory.time_travel(
                target_timeline_ids=ids, learning=LESSONS[2], raw_log_excerpt="django.core.exceptions."
                "ImproperlyConfigured: Requested setting INSTALLED_APPS", session_id="tt-engine", scope="session")),
            (tt_floor_setup, lambda ids: floor.time_travel("tt-floor", ids, LESSONS[2], "ImproperlyConfigured")),
        )
        counter = iter(range(10**9))
        intercepted: list[int] = []

        def loop_setup() -> None:
            for _ in range(3):
                memory.record_state(raw_log=loop_text(next(counter)), session_id=ACTIVE_SESSION)

        def loop_fetch(_: Any) -> None:
            intercepted.append(len(memory.fetch_context(session_id=ACTIVE_SESSION).loops))

        record_pair(
            "fetch_context (loop)",
            (loop_setup, loop_fetch),
            (None, lambda _: floor.context_rows(ACTIVE_SESSION)),
            floor_between=True,
        )
        out["fetch_context (loop)"]["loops_intercepted"] = sum(intercepted)
        out["fetch_context (loop)"]["fetches"] = len(intercepted)
    finally:
        floor.close()
        memory.close()
    return out


def profile_engine(path: Path, pool: list[PoolText], calls: int, seed: int) -> dict[str, str]:
    """cProfile of record_state and fetch_context on one file: where the engine spends its time."""
    rng = random.Random(seed)
    texts = TextSource(pool, rng, "profile")
    reports = {}
    with Memory(sqlite_url(path), settings=engine_settings(), project=ACTIVE_PROJECT) as memory:
        for name, action in (
            ("record_state", lambda: memory.record_state(raw_log=texts.next()[0], session_id="profile")),
            ("fetch_context", lambda: memory.fetch_context(session_id=ACTIVE_SESSION)),
            ("search_memory", lambda: memory.search_memory(query=NEEDLE, session_id=ACTIVE_SESSION)),
        ):
            for _ in range(3):
                action()
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(calls):
                action()
            profiler.disable()
            buffer = io.StringIO()
            pstats.Stats(profiler, stream=buffer).sort_stats("tottime").print_stats(18)
            reports[name] = buffer.getvalue()
    return reports

