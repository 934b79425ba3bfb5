"""Where the benchmarks read their data and write their figures."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SHARED = Path(os.environ.get("VLK_SHARED_DIR", ROOT.parent / "shared"))
DATA = SHARED / "data" / "trajectories-dev"
RESULTS = ROOT / "bench" / "results"
NODE_DIR = ROOT / "bench" / "node"
