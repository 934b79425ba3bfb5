"""Samples and their summaries: interleaved pairs (a side and its floor), medians, percentiles, ratios."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any


def summary(samples: list[float]) -> dict[str, float]:
    """Median and p99 (nearest rank) in milliseconds."""
    if not samples:
        return {"n": 0, "median_ms": math.nan, "p99_ms": math.nan, "mean_ms": math.nan}
    ordered = sorted(samples)
    n = len(ordered)
    mid = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    p99 = ordered[max(0, math.ceil(0.99 * n) - 1)]
    return {"n": n, "median_ms": mid * 1e3, "p99_ms": p99 * 1e3, "mean_ms": sum(ordered) / n * 1e3}


def ratio(a: float, b: float) -> float:
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


def fmt(value: float, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def median_p95(samples: list[float], digits: int = 2) -> dict[str, float]:
    """Median, p95 (nearest rank) and maximum in milliseconds, rounded: the hook benchmarks' summary."""
    ordered = sorted(samples)
    n = len(ordered)
    median = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    p95 = ordered[max(0, math.ceil(0.95 * n) - 1)]
    return {"n": n, "median_ms": round(median * 1e3, digits), "p95_ms": round(p95 * 1e3, digits),
            "max_ms": round(ordered[-1] * 1e3, digits)}


Step = tuple[Callable[[], Any] | None, Callable[[Any], Any]]  # (setup, timed action on the setup's value)


def measure_pair(engine: Step, floor: Step, iterations: int, cap: float, warmup: int = 3,
                 floor_between: bool = False) -> tuple[list[float], list[float]]:
    """Interleaved samples of both sides (alternating who goes first, so drift and load hit both).

    floor_between: run the engine's setup, then the floor, then the engine (the floor reads the rows the
    engine is about to process, e.g. a loop about to be intercepted).
    """
    engine_samples: list[float] = []
    floor_samples: list[float] = []

    def run(step: Step, into: list[float] | None) -> None:
        setup, action = step
        arg = setup() if setup else None
        t0 = time.perf_counter()
        action(arg)
        if into is not None:
            into.append(time.perf_counter() - t0)

    def timed(step: Step, into: list[float] | None, arg: Any) -> None:
        t0 = time.perf_counter()
        step[1](arg)
        if into is not None:
            into.append(time.perf_counter() - t0)

    started = time.perf_counter()
    for i in range(warmup + iterations):
        keep = i >= warmup
        if floor_between:
            arg = engine[0]() if engine[0] else None
            run(floor, floor_samples if keep else None)
            timed(engine, engine_samples if keep else None, arg)
        elif i % 2:
            run(engine, engine_samples if keep else None)
            run(floor, floor_samples if keep else None)
        else:
            run(floor, floor_samples if keep else None)
            run(engine, engine_samples if keep else None)
        if keep and len(engine_samples) >= 10 and time.perf_counter() - started > cap:
            break
    return engine_samples, floor_samples

