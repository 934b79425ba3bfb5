"""Every npm lockfile of the project installs with `npm ci` on npm 10 and npm 11.

npm 11 rejects a lockfile entry without a version ("npm error Invalid Version:"), which npm 10
used to write for optional packages of other platforms; one such entry stopped CI before any test
ran. The installs themselves run in `.ci/run`; this test names the offending entry at once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOCKFILES = sorted(p for p in ROOT.glob("**/package-lock.json") if "node_modules" not in p.parts)


def test_the_project_has_its_lockfiles() -> None:
    assert {p.parent.relative_to(ROOT).as_posix() for p in LOCKFILES} >= {
        "tests/node", "tests/conformance", "bench/node", "tests/opencode", "tests/codex"}


@pytest.mark.parametrize("lockfile", LOCKFILES, ids=lambda p: p.parent.relative_to(ROOT).as_posix())
def test_every_locked_package_has_a_version_and_an_integrity(lockfile: Path) -> None:
    lock = json.loads(lockfile.read_text(encoding="utf-8"))
    assert lock.get("lockfileVersion") == 3, "regenerate with npm 11: npm install --package-lock-only"
    broken = [
        name
        for name, entry in lock["packages"].items()
        if name and not entry.get("link") and not (entry.get("version") and entry.get("integrity"))
    ]
    assert not broken, f"{lockfile}: entries npm ci cannot install (regenerate the lockfile): {broken}"
