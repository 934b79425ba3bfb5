"""The machine a benchmark ran on, for its report (figures from a shared machine are noisy)."""

from __future__ import annotations

import contextlib
import os
import platform
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from harness.mcp_servers import node_binary


def machine() -> dict[str, Any]:
    cpu = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    node = None
    if node_binary():
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            node = subprocess.run([node_binary(), "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    import mcp

    try:
        from importlib.metadata import version

        mcp_version = version("mcp")
    except Exception:  # noqa: BLE001
        mcp_version = getattr(mcp, "__version__", "?")
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": mem,
        "load_average_at_start": os.getloadavg(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "mcp_sdk": mcp_version,
        "node": node,
    }

