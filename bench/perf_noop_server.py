"""The protocol floor for bench/perf.py: one no-op tool served over stdio by the same SDK as vlk-memact.

    python bench/perf_noop_server.py            # the SDK's own stdio transport (worker threads)
    python bench/perf_noop_server.py --pipes    # vlk-memact's (server/stdio_pipes.py): the event loop's pipes

`MCPServer` with the same options the vlk server uses (subscriptions off, a version, instructions), a
sync `def` tool (so it takes the same worker-thread path as the vlk tools) returning a short string.
"""

from __future__ import annotations

import sys

from mcp.server import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer(
    "perf-noop",
    version="0.0.0",
    instructions="A no-op tool: the round-trip floor of the MCP SDK over stdio.",
    subscriptions=False,
    log_level="WARNING",
)


@server.tool(
    title="No-op",
    annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                open_world_hint=False),
)
def noop() -> str:
    """Do nothing and return 'ok'."""
    return "ok"


if __name__ == "__main__":
    if "--pipes" in sys.argv:  # served as vlk-memact serves stdio (its transport's floor, bench/goals.py mcp)
        from vlk_memact.server.stdio_pipes import serve_stdio

        serve_stdio(server)
    else:
        server.run()
