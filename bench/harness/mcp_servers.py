"""MCP servers over stdio for the benchmarks: vlk-memact, the SDK's no-op tool (the protocol floor), and the
official reference server `@modelcontextprotocol/server-memory` (npm, pinned in bench/node)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from harness.database import ACTIVE_PROJECT, ACTIVE_SESSION, sqlite_url
from harness.paths import NODE_DIR, ROOT

OFFICIAL_PACKAGE = "@modelcontextprotocol/server-memory"
OFFICIAL_ENTRY = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"


def node_binary() -> str | None:
    return shutil.which("node")


def official_available() -> tuple[bool, str]:
    if not node_binary():
        return False, "node is not installed"
    if not OFFICIAL_ENTRY.exists():
        return False, f"{OFFICIAL_PACKAGE} is not installed (run: npm ci --prefix bench/node)"
    return True, ""


def official_version() -> str:
    try:
        return json.loads((OFFICIAL_ENTRY.parent.parent / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return "?"


def server_env(tag: str, **extra: str) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONPATH": str(ROOT / "src"),
        "VLK_PERF_TAG": tag,
    }
    env.update(extra)
    return env


def vlk_params(path: Path, tag: str):  # type: ignore[no-untyped-def]
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable, args=["-m", "vlk_memact"],
        env=server_env(tag, DATABASE_URL=sqlite_url(path), VLK_PROJECT=ACTIVE_PROJECT), cwd=str(path.parent),
    )


def noop_params(tag: str, pipes: bool = False):  # type: ignore[no-untyped-def]
    """The SDK's no-op tool over the SDK's stdio transport, or (pipes) over vlk-memact's."""
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, env=server_env(tag),
                                 args=[str(ROOT / "bench" / "perf_noop_server.py"), *(["--pipes"] if pipes else [])])


def official_params(memory_file: Path, tag: str):  # type: ignore[no-untyped-def]
    from mcp import StdioServerParameters

    return StdioServerParameters(command=node_binary() or "node", args=[str(OFFICIAL_ENTRY)],
                                 env=server_env(tag, MEMORY_FILE_PATH=str(memory_file)), cwd=str(memory_file.parent))


@contextlib.asynccontextmanager
async def connect(params: Any, errlog: Path):  # type: ignore[no-untyped-def]
    from mcp import Client
    from mcp.client.stdio import stdio_client

    with open(errlog, "a", encoding="utf-8") as log:
        async with Client(stdio_client(params, errlog=log), read_timeout_seconds=600) as client:
            yield client


def find_pid(tag: str) -> int | None:
    """The server child started with VLK_PERF_TAG=tag (the SDK's client does not expose its pid)."""
    needle = f"VLK_PERF_TAG={tag}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                return int(entry.name)
        except OSError:
            continue
    return None


def rss_mb(pid: int | None) -> dict[str, float]:
    """Resident memory now (VmRSS) and at its peak (VmHWM), in MB."""
    found = {"rss_mb": math.nan, "peak_rss_mb": math.nan}
    if pid is None:
        return found
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                found["rss_mb"] = int(line.split()[1]) / 1024
            elif line.startswith("VmHWM:"):
                found["peak_rss_mb"] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return found


async def timed_call(client: Any, tool: str, args: dict[str, Any]) -> float:
    t0 = time.perf_counter()
    result = await client.call_tool(tool, args)
    elapsed = time.perf_counter() - t0
    if result.is_error:
        text = result.content[0].text if result.content else ""
        raise RuntimeError(f"{tool} failed: {text[:300]}")
    return elapsed



def write_official_file(db: Path, target: Path) -> dict[str, Any]:
    """The same logs as the vlk file, as the official server stores them: one entity per session
    (named after it), one observation per recorded log (format: its loadGraph/saveGraph, JSONL)."""
    conn = sqlite3.connect(db)
    entities: dict[str, list[str]] = {}
    for session, raw in conn.execute(
        "SELECT t.session_id, c.raw_log FROM agent_timeline t JOIN memory_contents c ON c.id = t.content_id "
        "WHERE t.project = ? OR t.session_id != ? ORDER BY t.id", (ACTIVE_PROJECT, ACTIVE_SESSION)
    ):
        entities.setdefault(session, []).append(raw)
    conn.close()
    entities.setdefault("cmp-rec", [])
    items = sum(len(v) for v in entities.values())
    with open(target, "w", encoding="utf-8") as f:
        f.write("\n".join(
            json.dumps({"type": "entity", "name": name, "entityType": "session", "observations": observations})
            for name, observations in entities.items()
        ))
    return {"entities": len(entities), "observations": items, "file_bytes": target.stat().st_size}

