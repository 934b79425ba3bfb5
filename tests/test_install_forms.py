"""The README's ways to run the server without `pip install .`, run as a new user would run them.

The package is not on a public index, so the forms that work are the ones that point uv at the
checkout or at a git URL: `uvx --from PATH vlk-memact` and `uvx --from git+URL vlk-memact`. Each is
started here exactly as an MCP host would start it (the SDK's stdio client), with a cache of its own
so that nothing a previous run built is reused: uv resolves the dependencies from PyPI and builds
the project from this checkout.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from mcp_clients import TOOL_NAMES, database_url

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[1]


def uvx() -> str:
    """The uvx next to this interpreter (the `test` extra installs uv), else the one on PATH."""
    beside = Path(sys.executable).with_name("uvx")
    found = str(beside) if beside.exists() else shutil.which("uvx")
    if found is None:
        message = "uvx is not installed (pip install uv; the `test` extra has it)"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI is set, so this fails instead of skipping)")
        pytest.skip(message)
    return found


@pytest.fixture(scope="module")
def uv_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("uv-cache")


def source_forms() -> list[object]:
    forms = [pytest.param(str(ROOT), id="checkout-path")]
    if (ROOT / ".git").exists():
        forms.append(pytest.param(f"git+file://{ROOT}", id="git-url"))
    return forms


@pytest.mark.anyio
@pytest.mark.parametrize("source", source_forms())
async def test_uvx_from_the_source_serves_the_seven_tools(source: str, uv_cache: Path, tmp_path: Path) -> None:
    env = dict(os.environ)  # the machine's network settings (certificates, proxies) as a host passes them
    for name in ("DATABASE_URL", "VLK_PROJECT", "VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT"):
        env.pop(name, None)
    env |= {
        "HOME": str(tmp_path),
        "UV_CACHE_DIR": str(uv_cache),
        "UV_PYTHON_DOWNLOADS": "never",  # use this machine's Python, never fetch one
        "DATABASE_URL": database_url(tmp_path / "vlk.db"),
        "VLK_LOG_LEVEL": "WARNING",
    }
    params = StdioServerParameters(command=uvx(), args=["--from", source, "vlk-memact"], env=env, cwd=str(tmp_path))
    with (tmp_path / "stderr.txt").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy", read_timeout_seconds=300) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == TOOL_NAMES
            recorded = await client.call_tool("vlk_record_state", {"raw_log": "TypeError: x is not a function"})
            assert not recorded.is_error
            context = await client.call_tool("vlk_fetch_context", {})
            assert "TypeError: x is not a function" in "".join(getattr(b, "text", "") for b in context.content)
    assert (tmp_path / "vlk.db").exists()  # the database the host asked for, not the user's default
