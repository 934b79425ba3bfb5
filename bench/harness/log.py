"""Progress lines on stderr: stdout carries a benchmark's report."""

from __future__ import annotations

import sys
from collections.abc import Callable


def speaker(tag: str) -> Callable[..., None]:
    """A print to stderr behind `[tag]`, flushed at once (a long run shows where it is)."""

    def say(*parts: object) -> None:
        print(f"[{tag}]", *parts, file=sys.stderr, flush=True)

    return say
