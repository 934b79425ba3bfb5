"""Every results file the project names (pyproject.toml, README, docs, the package, the benchmarks) exists:
a renamed report left `bench/results/hooks-profile.md` named and missing (issue 37)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMED = re.compile(r"bench/results/[A-Za-z0-9_.-]+\.(?:md|json)")


def test_every_named_results_file_exists() -> None:
    sources = [ROOT / "pyproject.toml", ROOT / "README.md", *(ROOT / "docs").glob("*.md"),
               *(ROOT / "src").rglob("*.py"), *(ROOT / "bench").glob("*.py")]
    named = {(m, str(p.relative_to(ROOT))) for p in sources for m in NAMED.findall(p.read_text())}
    missing = sorted((m, where) for m, where in named if "NAME" not in m and not (ROOT / m).exists())
    assert missing == []
