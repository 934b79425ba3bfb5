"""How long bench/perf.py runs: the sizes, iterations and time caps of its full and quick modes."""

from __future__ import annotations

from dataclasses import dataclass

from harness.log import speaker

say = speaker("perf")


@dataclass(frozen=True)
class Mode:
    name: str
    sizes: tuple[int, ...]
    official_sizes: tuple[int, ...]
    iterations: int  # engine samples per operation and size
    cap_seconds: float  # ... or fewer, when an operation has run this long (both sides together)
    mcp_iterations: int
    official_iterations: int
    official_cap_seconds: float
    official_call_timeout: float
    throughput_seconds: float
    writers: int
    pool: int


FULL = Mode("full", (10**3, 10**4, 10**5, 10**6), (10**3, 10**4, 10**5), 200, 5.0, 150, 15, 25.0, 60.0, 5.0, 8, 4000)
QUICK = Mode("quick", (10**3, 10**4), (10**3,), 12, 1.0, 12, 3, 6.0, 30.0, 1.0, 8, 600)
