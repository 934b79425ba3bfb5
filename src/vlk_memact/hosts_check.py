"""Host-integration checks of `vlk-memact doctor` (filled in from the hosts package once it lands)."""

from __future__ import annotations

from .checks import Check


def host_checks() -> list[Check]:
    return []
