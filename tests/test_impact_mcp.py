"""`vlk-memact impact` for a host without hooks: the MCP tools over stdio (the official SDK's client against
`python -m vlk_memact`), on a database where another host's hooks fixed the same errors (fix memory).

Session A (MCP) records three errors and archives each with a lesson; session H (Claude Code hooks, in
process) fixes them; session B (MCP) fetches its context (the lessons carried), records the errors again
(each recalls its lesson and tells its fix), and archives them. The report counts what was said and what
followed; whether the agent ran a fix's steps cannot be seen without hooks, and it says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from impact_scenario import ARG_ERROR, ENV_ERROR, KEY_ERROR, run_session_a
from mcp_clients import SERVER_ARGS, SERVER_COMMAND, server_env

from vlk_memact import Memory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180), pytest.mark.xdist_group("impact_mcp")]

PROJECT = "mcp-project"
VLK = str(Path(sys.executable).with_name("vlk-memact"))
LESSONS = {ENV_ERROR: "copy .env.example to .env before running check_env.sh",
           KEY_ERROR: "settings.toml needs 'timeout = 30' under [app]",
           ARG_ERROR: "tool.py takes --mode fast or quick, never slow"}


async def _session(db: Path, errlog: Path, session: str, fetch_first: bool) -> list[str]:
    params = StdioServerParameters(command=SERVER_COMMAND, args=SERVER_ARGS,
                                   env=server_env(db, VLK_PROJECT=PROJECT))
    notices = []
    with errlog.open("a") as err:
        async with Client(stdio_client(params, errlog=err), mode="legacy", read_timeout_seconds=60) as client:
            if fetch_first:
                result = await client.call_tool("vlk_fetch_context", {"session_id": session})
                notices.append("".join(getattr(b, "text", "") for b in result.content))
            for error, lesson in LESSONS.items():
                recorded = await client.call_tool("vlk_record_state", {"raw_log": error, "session_id": session})
                assert not recorded.is_error
                data = recorded.structured_content or {}
                notices.append(data.get("notice", ""))
                travelled = await client.call_tool("vlk_time_travel", {
                    "target_timeline_ids": [data["timeline_id"]], "learning": lesson,
                    "raw_log_excerpt": error.splitlines()[-1], "session_id": session, "scope": "project"})
                assert not travelled.is_error, travelled.content
    return notices


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("impact-mcp")
    db, errlog = root / "vlk.db", root / "server.log"
    anyio.run(_session, db, errlog, "mcp-a", False)
    with Memory(f"sqlite:///{db}", project=PROJECT) as memory:
        run_session_a(memory, "hooks-h")  # another host, with hooks: its fixes go to fix memory
    notices = anyio.run(_session, db, errlog, "mcp-b", True)
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}"}
    out = subprocess.run([VLK, "impact", "--project", PROJECT, "--json"], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    readable = subprocess.run([VLK, "impact", "--project", PROJECT], env=env, capture_output=True, text=True,
                              timeout=60)
    assert "Traceback" not in errlog.read_text()
    return {"json": json.loads(out.stdout), "text": readable.stdout, "notices": notices, "db": db}


def test_session_b_was_told_the_lessons_and_the_fixes(report: dict[str, Any]) -> None:
    context, *records = report["notices"]
    assert all(lesson in context for lesson in LESSONS.values()), context
    assert all("Fixed in an earlier session" in n and "Seen before" in n for n in records), records


def test_impact_counts_what_the_mcp_tools_said_and_what_followed(report: dict[str, Any]) -> None:
    data = report["json"]
    b = [d for d in data["days"] if "mcp-b" in d["sessions"]]
    assert b, data["days"]
    recalled = data["lessons_recalled"]
    assert recalled["total"] >= 3 and recalled["resolved"] >= 3, recalled  # archived by the agent after it
    told = data["fixes_told"]
    assert told["total"] >= 3 and told["resolved"] >= 3, told
    assert told["not_observable"] >= 3  # no hooks: the steps it ran are not seen
    carried = data["carried_facts"]
    assert carried["told"] >= 3 and 3 <= carried["met_again"] <= carried["told"], carried
    assert data["chars_injected"] > 0 and data["denials"]["total"] == 0
    assert data["sessions"] == 2  # the MCP session B and the hooks' session H (A was told nothing)


def test_the_readable_report_says_the_steps_are_not_seen(report: dict[str, Any]) -> None:
    assert "through the MCP tools, whose calls are not seen" in report["text"], report["text"]
    assert "cp .env.example .env" in report["text"]
