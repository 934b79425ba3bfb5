"""The MCP SDK's private parts are used in one module, server/sdk_private.py, pinned here: these tests fail
when the SDK changes under it (another version, or the schema it sets no longer published), and when any
other module of the package reaches into the SDK's private attributes."""

from __future__ import annotations

import asyncio
import re
from importlib.metadata import version
from pathlib import Path

from vlk_memact import Memory, Settings
from vlk_memact.server import build_server, sdk_private
from vlk_memact.server.schemas import light_output_schema

PACKAGE = Path(sdk_private.__file__).resolve().parent.parent
PRIVATE = re.compile(r"_tool_manager|_lowlevel_server|\.fn_metadata\b|\.is_async\b|\btool\.fn\b")


def test_the_installed_sdk_is_one_the_adapter_was_checked_against() -> None:
    major_minor = ".".join(version("mcp").split(".")[:2])
    assert major_minor in sdk_private.CHECKED_SDK_VERSIONS, (
        f"mcp {version('mcp')}: read server/sdk_private.py against it, then add {major_minor} to "
        "CHECKED_SDK_VERSIONS")


def _published(inline: bool, tmp_path: Path) -> dict[str, dict]:
    memory = Memory(settings=Settings.from_env({"DATABASE_URL": f"sqlite:///{tmp_path / 'vlk.db'}"}))
    try:
        server = build_server(memory, inline=inline)
        return {t.name: t.output_schema for t in asyncio.run(server.list_tools())}
    finally:
        memory.close()


def test_the_published_output_schemas_are_the_light_ones(tmp_path: Path) -> None:
    for inline in (False, True):
        published = _published(inline, tmp_path)
        assert len(published) == 7
        for name, schema in published.items():
            assert schema is not None and schema == light_output_schema(schema), name  # already light
            assert "$defs" not in schema, name  # pydantic's full schema of a result type has $defs


def test_stdio_tools_run_in_place_through_the_public_decorator(tmp_path: Path) -> None:
    memory = Memory(settings=Settings.from_env({"DATABASE_URL": f"sqlite:///{tmp_path / 'vlk.db'}"}))
    try:
        server = build_server(memory, inline=True)
        result = asyncio.run(server.call_tool("vlk_record_state", {"raw_log": "KeyError: 'x'", "session_id": "s"}))
        assert "KeyError" in str(result)
    finally:
        memory.close()


def test_no_other_module_touches_a_private_sdk_attribute() -> None:
    users = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if PRIVATE.search(p.read_text()))
    assert users == ["server/sdk_private.py"]
