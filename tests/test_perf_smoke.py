"""bench/perf.py --quick runs end to end and writes its figures (no timing is asserted).

The official memory server (section 3) needs `npm ci --prefix bench/node`; without it the run
skips that section, says so, and still succeeds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PERF = ROOT / "bench" / "perf.py"
OFFICIAL = ROOT / "bench" / "node" / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_perf_quick_runs_and_writes_its_results(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(PERF), "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=290,
    )
    assert run.returncode == 0, f"perf.py --quick exited {run.returncode}\n{run.stderr[-4000:]}"
    report = tmp_path / "perf-quick.md"
    figures = tmp_path / "perf-quick.json"
    assert report.is_file() and figures.is_file()
    results = json.loads(figures.read_text())
    assert results["mode"] == "quick"
    for section in ("engine", "mcp", "official", "growth", "throughput", "targets"):
        assert section in results, f"no {section} section in {figures}"
    for size in ("1000", "10000"):
        assert results["engine"][size]["record_state"]["engine"]["n"] > 0
        assert results["engine"][size]["fetch_context"]["floor"]["n"] > 0
    assert results["engine"]["10000"]["fetch_context (loop)"]["loops_intercepted"] > 0
    assert results["mcp"]["vlk_record_state"]["tool"]["n"] > 0
    assert results["throughput"]["writers"]["records"] > 0
    text = report.read_text()
    assert "## Targets" in text and "## 1. Engine" in text and run.stdout.strip().startswith("# vlk-memact performance")
    if OFFICIAL.exists():
        assert "skipped" not in results["official"], results["official"]
        assert results["official"]["sizes"]["1000"]["write"]["official"]["n"] > 0
    else:
        assert "skipped" in results["official"]
        assert "npm ci --prefix bench/node" in text


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_goal_figures_run_and_write_one_table(tmp_path: Path) -> None:
    """bench/goals.py, every figure with a few samples: each side measured, one table (no timing asserted)."""
    names = ["hooks", "mcp", "engine", *(["official"] if OFFICIAL.exists() else [])]
    for name in names:
        run = subprocess.run([sys.executable, str(ROOT / "bench" / "goals.py"), name, "--runs", "3", "--out",
                              str(tmp_path)], cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=290)
        assert run.returncode == 0, run.stderr[-3000:]
        report = json.loads((tmp_path / f"goals-{name}.json").read_text())
        for figure in report["figures"].values():
            side = figure["side"]
            other = figure.get("floor") or figure["peer"]
            assert side["n"] == other["n"] == 3 and side["median_ms"] > 0 and other["median_ms"] > 0
    table = (tmp_path / "goals.md").read_text()
    assert all(f"`goals.py {name}`" in table for name in names)
