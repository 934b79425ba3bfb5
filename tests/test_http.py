"""Streamable HTTP: bearer authentication, tenant isolation for every tool, Origin checks, Inspector over HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from http_harness import free_port, start_server, wait_for_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

ALPHA = "alpha-token-0123456789abcdef"
BETA = "beta-token-0123456789abcdefgh"
INSPECTOR = Path(__file__).parent / "node" / "node_modules" / ".bin" / "mcp-inspector"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    proc = start_server(f"sqlite:///{tmp_path}/http.db", f"{ALPHA}=alpha,{BETA}=beta", port, tmp_path / "err.log")
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
        assert out == b"", "the HTTP server printed to stdout"


@asynccontextmanager
async def client(url: str, token: str, mode: str = "auto") -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as c:
            yield c


async def call(c: Client, tool: str, **args: Any) -> tuple[str, dict[str, Any], bool]:
    result = await c.call_tool(tool, args)
    return result.content[0].text, result.structured_content or {}, bool(result.is_error)


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def test_requests_without_a_valid_token_get_401(server: str) -> None:
    assert httpx2.post(server, json=INIT, headers=HEADERS).status_code == 401
    bad = httpx2.post(server, json=INIT, headers={**HEADERS, "authorization": "Bearer wrong-token-0123456789"})
    assert bad.status_code == 401 and "Bearer" in bad.headers["www-authenticate"]
    ok = httpx2.post(server, json=INIT, headers={**HEADERS, "authorization": f"Bearer {ALPHA}"})
    assert ok.status_code == 200 and ok.json()["result"]["serverInfo"]["name"] == "Vlk MemAct"


def test_a_foreign_origin_gets_403_and_a_foreign_host_is_refused(server: str) -> None:
    auth = {**HEADERS, "authorization": f"Bearer {ALPHA}"}
    assert httpx2.post(server, json=INIT, headers={**auth, "origin": "http://evil.example"}).status_code == 403
    assert httpx2.post(server, json=INIT, headers={**auth, "host": "evil.example"}).status_code in (403, 421)
    assert httpx2.post(server, json=INIT, headers={**auth, "origin": "http://127.0.0.1"}).status_code == 200


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_tools_work_over_http_in_both_eras(server: str, mode: str) -> None:
    async with client(server, ALPHA, mode) as c:
        assert len((await c.list_tools()).tools) == 7
        for _ in range(3):
            _, data, error = await call(c, "vlk_record_state", raw_log="Error 503: upstream timed out",
                                        session_id=f"s-{mode}")
            assert not error
        text, data, _ = await call(c, "vlk_fetch_context", session_id=f"s-{mode}")
        assert "[SYSTEM ANCHOR]" in text and data["loops"][0]["occurrences"] == 3


@pytest.mark.anyio
async def test_one_tenant_never_sees_another_tenants_memory(server: str) -> None:
    raw = "ModuleNotFoundError: No module named 'secret_alpha_module'"
    async with client(server, ALPHA) as a:
        _, rec, _ = await call(a, "vlk_record_state", raw_log=raw, session_id="shared-name")
        _, lesson, _ = await call(a, "vlk_time_travel", target_timeline_ids=[rec["timeline_id"]],
                                  learning="alpha lesson: install secret_alpha_module", raw_log_excerpt=raw,
                                  session_id="shared-name", scope="global")
        _, rec2, _ = await call(a, "vlk_record_state", raw_log="alpha live error", session_id="shared-name")
    async with client(server, BETA) as b:
        text, data, _ = await call(b, "vlk_fetch_context", session_id="shared-name")
        assert "alpha" not in text and data["constraint_ids"] == [] and data["present_ids"] == []
        text, data, _ = await call(b, "vlk_get_history", session_id="shared-name")
        assert json.loads(text) == [] and data["slots"] == []
        _, data, _ = await call(b, "vlk_search_memory", query="alpha", session_id="shared-name")
        assert data["slots"] == []
        _, data, _ = await call(b, "vlk_summarize_session", session_id="shared-name")
        assert (data["total"], data["visible_constraints"]) == (0, 0)
        text, _, error = await call(b, "vlk_revoke_future", timeline_id=lesson["constraint_id"],
                                    session_id="shared-name")
        assert error and f"#{lesson['constraint_id']}" in text
        text, _, error = await call(b, "vlk_time_travel", target_timeline_ids=[rec2["timeline_id"]],
                                    learning="steal", raw_log_excerpt="x", session_id="shared-name")
        assert error
        _, data, _ = await call(b, "vlk_record_state", raw_log=raw, session_id="shared-name")
        assert data["recalled"] == [] and data["content_id"] != rec["content_id"]
    async with client(server, ALPHA) as a:  # alpha's memory is intact
        _, data, _ = await call(a, "vlk_fetch_context", session_id="other-session")
        assert lesson["constraint_id"] in data["constraint_ids"]
        _, data, _ = await call(a, "vlk_summarize_session", session_id="shared-name")
        assert data["present"] == 1


def test_binding_beyond_loopback_without_authentication_is_refused(tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path}/x.db"}
    env.pop("VLK_AUTH_TOKENS", None)
    done = subprocess.run([sys.executable, "-m", "vlk_memact", "serve", "--transport", "streamable-http",
                           "--host", "0.0.0.0", "--port", str(free_port())], env=env, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 1
    assert "refusing to serve on 0.0.0.0 without authentication" in done.stderr and done.stdout == ""


def test_short_tokens_are_rejected_at_startup(tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path}/x.db", "VLK_AUTH_TOKENS": "short=alpha"}
    done = subprocess.run([sys.executable, "-m", "vlk_memact", "serve", "--transport", "streamable-http",
                           "--port", str(free_port())], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "shorter than 16 characters" in done.stderr


def test_the_inspector_cli_talks_to_the_http_server(server: str) -> None:
    if not INSPECTOR.exists():
        if os.environ.get("CI"):
            pytest.fail("run `npm ci --prefix tests/node` first")
        pytest.skip("the MCP Inspector is not installed (npm ci --prefix tests/node)")
    env = {**os.environ, "MCP_INSPECTOR_SECRET_STORE": "memory"}
    base = [str(INSPECTOR), "--cli", server, "--transport", "http", "--header", f"Authorization: Bearer {ALPHA}"]
    listed = subprocess.run([*base, "--method", "tools/list", "--format", "json"], capture_output=True, text=True,
                            timeout=60, env=env)
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)["result"]["tools"]) == 7
    called = subprocess.run([*base, "--method", "tools/call", "--tool-name", "vlk_summarize_session",
                             "--format", "json"], capture_output=True, text=True, timeout=60, env=env)
    assert called.returncode == 0, called.stderr
    assert "http-project" in called.stdout
    denied = subprocess.run([str(INSPECTOR), "--cli", server, "--transport", "http", "--method", "tools/list",
                             "--format", "json"], capture_output=True, text=True, timeout=60, env=env)
    assert denied.returncode != 0
