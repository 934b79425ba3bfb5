"""PostgreSQL restarted, stopped and unreachable under two HTTP replicas, on a private instance this test starts.

Four clients (two per replica) record without pause while the server is restarted twice (once
`-m immediate`, a crash with WAL replay; once `-m fast`) and then stopped for longer than the
replicas' lock wait. Every call either succeeds or returns an isError naming the server that says
to call again; every acknowledged write is in the database afterwards; and each replica, never
restarted, serves again once the server is back.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from http_harness import free_port, wait_for_port
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from private_postgres import PrivatePostgres, private_postgres

from vlk_memact import Memory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TOKEN = "restart-token-0123456789abcdef"
LOCK_WAIT_MS = 4000
RETRYABLE = ("Cannot reach the PostgreSQL server at ", "The connection to the PostgreSQL server at ")


def start_replica(url: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DATABASE_URL": url, "VLK_PROJECT": "restart-project", "VLK_LOG_LEVEL": "WARNING",
           "VLK_AUTH_TOKENS": f"{TOKEN}=team", "VLK_LOCK_WAIT_MS": str(LOCK_WAIT_MS)}
    return subprocess.Popen(
        [sys.executable, "-m", "vlk_memact", "serve", "--transport", "streamable-http", "--port", str(port)],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log.open("wb"),
    )


class Ledger:
    def __init__(self) -> None:
        self.acknowledged: list[int] = []
        self.errors: list[tuple[float, str]] = []
        self.successes: list[float] = []  # when each success came back


async def hammer(url: str, client: int, ledger: Ledger, stop: anyio.Event, server: str) -> None:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as session:
            n = 0
            while not stop.is_set():
                n += 1
                result = await session.call_tool(
                    "vlk_record_state", {"raw_log": f"client {client} write {n} observed", "session_id": "shared"})
                text = result.content[0].text  # type: ignore[union-attr]
                if result.is_error:
                    message = text.removeprefix("Error executing tool vlk_record_state: ")
                    assert message.startswith(RETRYABLE) and server in message, message
                    assert "call again" in message or "reconnects by itself" in message, message
                    ledger.errors.append((time.monotonic(), message))
                    await anyio.sleep(0.2)
                else:
                    ledger.acknowledged.append(result.structured_content["timeline_id"])  # type: ignore[index]
                    ledger.successes.append(time.monotonic())
                await anyio.sleep(0.05)


def test_replicas_survive_postgres_restarts_and_an_outage_without_losing_an_acknowledged_write(
    tmp_path: Path,
) -> None:
    with private_postgres() as pg:
        run_scenario(pg, tmp_path)


def run_scenario(pg: PrivatePostgres, tmp_path: Path) -> None:
    server = f"127.0.0.1:{pg.port}"
    ports = [free_port(), free_port()]
    replicas = [start_replica(pg.url, port, tmp_path / f"replica{i}.log") for i, port in enumerate(ports)]
    ledger = Ledger()
    marks: dict[str, float] = {}
    restarts: list[tuple[float, float]] = []
    try:
        for proc, port in zip(replicas, ports, strict=True):
            wait_for_port(port, proc)

        async def main() -> None:
            stop = anyio.Event()
            async with anyio.create_task_group() as tg:
                for i in range(4):
                    tg.start_soon(hammer, f"http://127.0.0.1:{ports[i % 2]}/mcp", i, ledger, stop, server)
                for mode in ("immediate", "fast"):  # a crash with WAL replay, then a clean restart
                    await anyio.sleep(1.5)
                    begun = time.monotonic()
                    await anyio.to_thread.run_sync(pg.restart, mode)
                    restarts.append((begun, time.monotonic()))
                await anyio.sleep(1.5)
                marks["down"] = time.monotonic()
                await anyio.to_thread.run_sync(lambda: pg.stop("fast"))
                await anyio.sleep(LOCK_WAIT_MS / 1000 * 2.5)  # longer than any call waits
                await anyio.to_thread.run_sync(pg.start)
                marks["up"] = time.monotonic()
                await anyio.sleep(LOCK_WAIT_MS / 1000 * 3)
                stop.set()

        anyio.run(main)
        assert all(proc.poll() is None for proc in replicas), "a replica died"
    finally:
        for proc in replicas:
            proc.terminate()
        for proc in replicas:
            proc.wait(timeout=30)

    outage = [t for t, _ in ledger.errors if marks["down"] <= t]
    assert outage, "no call failed while the server was down for longer than the lock wait"
    # A call may fail only while the server was away (in flight at a restart, or during the outage), and
    # only with one of the retryable messages (hammer() checks each one).
    grace = LOCK_WAIT_MS / 1000 + 5
    windows = [*restarts, (marks["down"], marks["up"])]
    stray = [(t, m) for t, m in ledger.errors if not any(a <= t <= b + grace for a, b in windows)]
    assert not stray, ("a call failed although the server was up", stray[:5])
    recovered = [t for t in ledger.successes if t > marks["up"]]
    print(f"acknowledged {len(ledger.acknowledged)} writes; {len(ledger.errors)} retryable errors "
          f"({len(outage)} during the {marks['up'] - marks['down']:.1f} s outage); first success "
          f"{min(recovered, default=float('nan')) - marks['up']:.2f} s after the server was back")
    assert len(recovered) >= 8, "the replicas did not serve again after the outage"
    assert len(ledger.acknowledged) == len(set(ledger.acknowledged))
    import psycopg

    with psycopg.connect(pg.url) as conn:
        stored = {row[0] for row in conn.execute(
            "SELECT id FROM agent_timeline WHERE tenant = 'team' AND session_id = 'shared'")}
    missing = set(ledger.acknowledged) - stored
    assert not missing, f"{len(missing)} acknowledged writes are missing: {sorted(missing)[:10]}"
    with Memory(pg.url, project="restart-project", tenant="team") as memory:  # and it reads back as a whole
        assert memory.summarize_session(session_id="shared").total == len(stored)


def test_an_unreachable_server_at_start_up_is_one_clear_line_naming_host_and_port_without_the_password(
    tmp_path: Path,
) -> None:
    port = free_port()  # nothing listens there
    url = f"postgresql://vlk:s3cret-pass-word@127.0.0.1:{port}/vlk"
    for command in (["serve"], ["serve", "--transport", "streamable-http", "--port", str(free_port())],
                    ["record", "x"]):
        env = {**os.environ, "DATABASE_URL": url}
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "vlk_memact", *command], env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=60)
        assert time.monotonic() - started < 30
        assert done.returncode == 1 and done.stdout == ""
        last = done.stderr.splitlines()[-1]
        assert last.startswith(f"Error: vlk-memact could not open PostgreSQL database at 127.0.0.1:{port}: "), last
        assert "Connection refused" in last and "fix the host and port in DATABASE_URL" in last
        assert "s3cret-pass-word" not in done.stderr and "Traceback" not in done.stderr


def test_doctor_names_an_unreachable_server_and_fails(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "DATABASE_URL": f"postgresql://vlk:s3cret-pass-word@127.0.0.1:{port}/vlk"}
    done = subprocess.run([sys.executable, "-m", "vlk_memact", "doctor"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert f"ok   configuration: DATABASE_URL: PostgreSQL postgresql://vlk:***@127.0.0.1:{port}/vlk (from " \
           "DATABASE_URL)" in lines
    assert any(line.startswith(f"FAIL database: server reachable: cannot reach 127.0.0.1:{port} (") for line in lines)
    assert "s3cret-pass-word" not in done.stdout + done.stderr


def test_a_read_only_postgres_refuses_writes_serves_reads_and_recovers_and_doctor_uses_amcheck(
    tmp_path: Path,
) -> None:
    """default_transaction_read_only on the database (what a standby or an operator's freeze looks like)."""
    import psycopg

    from vlk_memact.core.errors import ReadOnlyDatabase

    with private_postgres() as pg:
        with psycopg.connect(pg.url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION amcheck")
        with Memory(pg.url, project="ro-project") as memory:
            first = memory.record_state(raw_log="observed before the freeze").timeline_id
            env = {**os.environ, "DATABASE_URL": pg.url, "HOME": str(tmp_path)}
            done = subprocess.run([sys.executable, "-m", "vlk_memact", "doctor"], env=env, cwd=tmp_path,
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stdout
            assert "indexes checked with amcheck" in done.stdout

            with psycopg.connect(pg.url, autocommit=True) as conn:
                conn.execute("ALTER DATABASE postgres SET default_transaction_read_only = on")
                conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             "WHERE datname = 'postgres' AND pid <> pg_backend_pid()")  # sessions start anew
            with pytest.raises(ReadOnlyDatabase) as caught:
                memory.record_state(raw_log="observed during the freeze")
            assert str(caught.value).startswith(f"The PostgreSQL server at 127.0.0.1:{pg.port} accepts only reads")
            assert "so nothing of this call was saved; point DATABASE_URL at the primary" in str(caught.value)
            assert [s.id for s in memory.get_history(session_id="default").slots] == [first]  # reads work
            done = subprocess.run([sys.executable, "-m", "vlk_memact", "doctor"], env=env, cwd=tmp_path,
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 1
            assert "FAIL database: permissions: default_transaction_read_only is on: every write fails" in done.stdout

            with psycopg.connect(pg.url, autocommit=True) as conn:
                conn.execute("SET default_transaction_read_only = off")  # this session started read-only too
                conn.execute("ALTER DATABASE postgres SET default_transaction_read_only = off")
            # The refused write replaced the pool's sessions (started read-only): the first write now succeeds.
            second = memory.record_state(raw_log="observed after the freeze").timeline_id
            assert {s.id for s in memory.get_history(session_id="default").slots} == {first, second}
