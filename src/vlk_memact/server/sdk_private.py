"""The one place that reaches into the MCP SDK's private parts: a registered tool's output schema, and the
low-level server that runs an MCPServer on streams (serve_stdio, below).

Why: the SDK publishes the pydantic schema of a tool's return type, and its client checks every result
against it one sub-schema at a time (bench/results/profile.md, section 3); schemas.light_output_schema
keeps the contract and drops the per-element parts. The SDK has no public way to give a tool its output
schema, so this module sets it on the registered tools. MCPServer runs stdio only on the streams the SDK
opens itself (threads), and its stdio transport takes other streams (server/stdio_pipes.py) only through
the low-level server it holds. It is pinned: tests/test_sdk_private.py fails when the installed SDK leaves
the versions it was checked against or no longer publishes the schema set here, and a test finds any other
private SDK attribute anywhere in the package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CHECKED_SDK_VERSIONS = ("2.3",)  # mcp major.minor this module was read against


def replace_output_schemas(server: Any, transform: Callable[[dict[str, Any] | None], dict[str, Any] | None]) -> int:
    """Give every registered tool transform(its output schema); the number of tools changed."""
    tools = server._tool_manager.list_tools()  # noqa: SLF001 - see the module's docstring
    for tool in tools:
        tool.fn_metadata.output_schema = transform(tool.fn_metadata.output_schema)
    return len(tools)


async def serve_stdio(server: Any, stdin: Any, stdout: Any) -> None:
    """What MCPServer.run("stdio") does, over the given streams (server/stdio_pipes.py; None: the SDK's own):
    the SDK has no public way to run an MCPServer on streams it did not open."""
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server  # noqa: SLF001 - see the module's docstring
    async with stdio_server(stdin, stdout) as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
