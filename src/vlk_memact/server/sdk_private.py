"""The one place that reaches into the MCP SDK's private parts: a registered tool's output schema.

Why: the SDK publishes the pydantic schema of a tool's return type, and its client checks every result
against it one sub-schema at a time (bench/results/profile.md, section 3); schemas.light_output_schema
keeps the contract and drops the per-element parts. The SDK has no public way to give a tool its output
schema, so this module sets it on the registered tools. It is pinned: tests/test_sdk_private.py fails
when the installed SDK leaves the versions it was checked against or no longer publishes the schema set
here, and a test finds any other private SDK attribute anywhere in the package.
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
