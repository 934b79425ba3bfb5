"""Two HTTP server processes (replicas) on one PostgreSQL database: concurrent writes and fetches, exact counts."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from http_harness import free_port, start_server, wait_for_port
from vlk_memact import Memory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TOKEN = "replica-token-0123456789abcdef"
WORDS = ["amber", "birch", "cedar", "dune", "ember", "fjord", "grove", "heath", "inlet", "jade"]
PER_CLIENT = 40


def word(n: int) -> str:
    return WORDS[n % 10] + WORDS[(n // 10) % 10] + WORDS[(n // 100) % 10]


async def hammer(url: str, client_index: int, acknowledged: list[int]) -> None:
    """Record distinct errors (and a looping one) into one shared session, fetching the context as it goes."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            for n in range(PER_CLIENT):
                # Distinct errors differ by an anchor (a code): plain words varying where the rest agrees
                # are one error with a parameter to fingerprint.group.
                raw = ("Error: upstream is down" if n % 8 == 0 else
                       f"Error: {word(client_index * 100 + n).upper()}_UPSTREAM refused the request")
                result = await client.call_tool("vlk_record_state", {"raw_log": raw, "session_id": "shared"})
                assert not result.is_error, result.content
                acknowledged.append(result.structured_content["timeline_id"])
                if n % 5 == 4:
                    fetched = await client.call_tool("vlk_fetch_context", {"session_id": "shared"})
                    assert not fetched.is_error, fetched.content


def test_two_replicas_on_one_postgres_lose_nothing(postgres_url: str, tmp_path: Path) -> None:
    ports = [free_port(), free_port()]
    servers = [start_server(postgres_url, f"{TOKEN}=team", port, tmp_path / f"s{i}.log")
               for i, port in enumerate(ports)]
    acknowledged: list[int] = []
    try:
        for proc, port in zip(servers, ports):
            wait_for_port(port, proc)

        async def main() -> None:
            async with anyio.create_task_group() as tg:
                for i in range(4):  # two clients per replica
                    tg.start_soon(hammer, f"http://127.0.0.1:{ports[i % 2]}/mcp", i, acknowledged)

        anyio.run(main)
    finally:
        for proc in servers:
            proc.terminate()
        for proc in servers:
            proc.wait(timeout=20)
    assert len(acknowledged) == len(set(acknowledged)) == 4 * PER_CLIENT
    with Memory(postgres_url, project="http-project", tenant="team") as m:
        slots = m.get_history(limit=500, session_id="shared").slots
        records = {s.id for s in slots if s.origin == "record"}
        assert records == set(acknowledged)  # every acknowledged write, and nothing else
        orders = sorted(s.sequence_order for s in slots)
        assert orders == list(range(1, len(orders) + 1))  # unique and gap-free across both replicas
        anchors = [s for s in slots if s.origin == "anchor" and s.temporal_state == "FUTURE"]
        assert len(anchors) == 1  # the looping error has one active anchor, not one per replica
        looped = [s for s in slots if s.retired_reason == "loop"]
        assert all(s.retired_by is not None for s in looped)
        assert m.fetch_context(session_id="shared").text.count("[SYSTEM ANCHOR]") == 1
