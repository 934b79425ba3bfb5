"""The warm server never closes a Memory a request is using, drops a client that connects and says nothing,
and answers with a bounded number of workers (issue 37)."""

from __future__ import annotations

import json
import marshal
import os
import socket
import threading
import time
from pathlib import Path

import pytest
from hook_events import bash, failure, pre

from vlk_memact import Memory, Settings
from vlk_memact.hosts.shared import warm, warm_server
from vlk_memact.hosts.shared.warm_pool import MemoryPool

pytestmark = pytest.mark.timeout(60)


class FakeMemory:
    def __init__(self, key: object) -> None:
        self.key, self.closed = key, 0

    def close(self) -> None:
        self.closed += 1


def test_an_evicted_memory_is_closed_only_when_its_last_user_is_done() -> None:
    pool = MemoryPool(FakeMemory, size=1)
    first = pool.lease("a")
    with first as a:
        again = pool.lease("a")  # a second request on the same project
        with pool.lease("b") as b:  # evicts "a" while both still use it
            assert a.closed == 0 and b.closed == 0 and len(pool) == 1
        with again as same:
            assert same is a and a.closed == 0
        assert a.closed == 0  # the first request still holds it
    assert a.closed == 1  # closed once, when the last lease ended
    with pool.lease("a") as fresh:
        assert fresh is not a and b.closed == 1  # a new one for "a"; "b" was idle when evicted: closed then
    pool.close()
    assert fresh.closed == 1


def test_closing_the_pool_waits_for_the_requests_in_flight() -> None:
    pool = MemoryPool(FakeMemory)
    lease = pool.lease("a")
    memory = lease.__enter__()
    pool.close()
    assert memory.closed == 0
    lease.__exit__(None, None, None)
    assert memory.closed == 1


def test_a_real_memory_keeps_working_while_another_thread_evicts_it(tmp_path: Path) -> None:
    settings = Settings.from_env({"DATABASE_URL": f"sqlite:///{tmp_path / 'vlk.db'}"})
    opened: list[Memory] = []

    def open_memory(key: object) -> Memory:
        opened.append(Memory(settings=settings, project=str(key)))
        return opened[-1]

    pool = MemoryPool(open_memory, size=1)
    in_use, evicted = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def request() -> None:
        try:
            with pool.lease("p1") as memory:
                memory.record_state(raw_log="Error: first", session_id="s")
                in_use.set()
                assert evicted.wait(10)
                memory.record_state(raw_log="Error: after the eviction", session_id="s")  # still open
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    worker = threading.Thread(target=request)
    worker.start()
    assert in_use.wait(10)
    with pool.lease("p2") as other:  # the cache is full: p1 is evicted while the request uses it
        other.record_state(raw_log="Error: other", session_id="s")
    evicted.set()
    worker.join(20)
    assert errors == []
    pool.close()
    check = Memory(settings=settings, project="p1")
    try:
        assert check.fetch_context(session_id="s").text.count("after the eviction") == 1
    finally:
        check.close()


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "DATABASE_URL": f"sqlite:///{tmp_path / 'vlk.db'}", "VLK_PROJECT": "p",
           "VLK_HOOK_DEADLINE_MS": "600", "VLK_HOOK_SERVER_IDLE_SECONDS": "60", "PATH": os.environ["PATH"]}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(warm_server, "MAX_WORKERS", 2)
    monkeypatch.setattr(warm_server, "_code_stamp", lambda: "same")
    path = str(tmp_path / "hooks.sock")
    thread = threading.Thread(target=warm_server.serve, args=(path,), daemon=True)
    thread.start()
    for _ in range(200):
        if os.path.exists(path):
            break
        time.sleep(0.02)
    yield path, env
    monkeypatch.setattr(warm_server, "_code_stamp", lambda: "changed")
    thread.join(10)


def _ask(path: str, env: dict[str, str], event: dict) -> dict:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(10)
    conn.connect(path)
    conn.sendall(marshal.dumps({"v": warm.PROTOCOL, "host": "claude-code", "flags": [], "env": env,
                                "event": json.dumps(event).encode()}))
    conn.shutdown(socket.SHUT_WR)
    with conn:
        return marshal.loads(warm._receive(conn, warm.MAX_REPLY_BYTES))


def test_silent_clients_are_dropped_and_do_not_hold_the_workers(server: tuple[str, dict]) -> None:
    path, env = server
    silent = []
    for _ in range(3):  # more silent clients than workers (2)
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
        silent.append(conn)
    started = time.monotonic()
    reply = _ask(path, env, failure("Bash", bash("pytest"), "Exit code 1\nE   KeyError: 'x'"))
    assert reply["event_name"] == "PostToolUseFailure" and not reply.get("line")
    assert time.monotonic() - started < 5  # waited for the silent ones' deadline (0.6 s each), not forever
    for conn in silent:
        conn.settimeout(5)
        assert conn.recv(1) == b""  # the server closed it: no answer for a request never sent
        conn.close()
    answers = []
    threads = [threading.Thread(target=lambda: answers.append(_ask(path, env, pre("Bash", bash("ls")))))
               for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert len(answers) == 6 and all(a["event_name"] == "PreToolUse" for a in answers)
