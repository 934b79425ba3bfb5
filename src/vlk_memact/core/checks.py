"""One diagnostic check of `vlk-memact doctor`: what was looked at, whether it passed, and the fix if not."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Check:
    """A named check; `fix` says what to do when it failed (None when it passed)."""

    group: str  # "database", "configuration" or "hosts"
    name: str
    ok: bool
    detail: str
    fix: str | None = None


def passed(group: str, name: str, detail: str) -> Check:
    return Check(group, name, True, detail)


def failed(group: str, name: str, detail: str, fix: str) -> Check:
    return Check(group, name, False, detail, fix)
